// form_delta.c: DeltaNet and Gated DeltaNet (docs/attention-forms.md section 4c) as registry rows.
// The write strength beta_t = sigmoid(x_t w_h + b_h) per head comes from the token's input through
// a learned projection (beta.weight (heads, C), beta.bias (heads), as nn.Linear(C, heads)); Gated
// DeltaNet adds a decay a_t = 1 / (1 + e^(x_t g_h + c_h)) the same way (gate.weight, gate.bias),
// started from fast to slow forgetting as the gated form. The forward runs the mode the options say
// (the chunked WY form by default, or the recurrence: the same numbers); the backward and
// generation run the recurrence (src/attention/delta_rule.c). Causal only.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/delta_rule.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = {"recurrent", "chunked", NULL};
static const aw_form_option OPTIONS[] = {
    {"mode", AW_OPTION_CHOICE, 0, 0, MODES, "chunked", "delta_mode",
     "how the forward runs: the recurrence, or chunks by the WY form (the same numbers)"},
    {"chunk", AW_OPTION_INT, 1, 4096, NULL, "16", "delta_chunk", "the chunked form's chunk length"},
};

typedef struct {
    int mode;
    size_t chunk;
} delta_own;

static int gated(const aw_attn_form *f) { return f->form->variant == 1; }
static size_t n_params(const aw_attn_form *f) { return (size_t)(gated(f) ? 2 : 1) * (f->H * f->C + f->H); }


static int init(aw_attn_form *f, const aw_form_setup *su) {
    delta_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->mode = aw_option_word(f->form, su->opts, "mode");
    o->chunk = (size_t)aw_option_int(f->form, su->opts, "chunk");
    const size_t C = f->C, H = f->H, n = n_params(f);
    if (!(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0xDE17u);
    const float bound = 1.0f / sqrtf((float)C);
    for (size_t i = 0; i < n; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    for (size_t h = 0; h < H; h++) f->params[H * C + h] = 0.0f; // beta = 1/2
    if (gated(f)) // a_h = 1 - 2^(-1 - 4 h / (H - 1)) at the start, as the gated form
        for (size_t h = 0; h < H; h++) {
            const double a = H > 1 ? 1.0 - pow(2.0, -1.0 - 4.0 * (double)h / (double)(H - 1)) : 0.9;
            f->params[2 * H * C + H + h] = (float)log(1.0 / a - 1.0);
        }
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    static const char *const names[4] = {"beta_weight", "beta_bias", "gate_weight", "gate_bias"};
    const size_t count = gated(f) ? 4 : 2;
    for (size_t i = 0; i < count && i < cap; i++) {
        memset(&out[i], 0, sizeof out[i]);
        strcpy(out[i].name, names[i]);
        const int bias = i % 2 == 1;
        out[i].size = bias ? f->H : f->H * f->C, out[i].dims[0] = f->H, out[i].dims[1] = bias ? 0 : f->C;
        out[i].rank = bias ? 1 : 2, out[i].trainable = 1, out[i].no_decay = bias;
    }
    return count;
}

static void bind(aw_attn_form *f, float *params, float *grads) { attn_form_bind_params(f, params, grads, n_params(f)); }

// z (T, H) = x W^T + b for the projection at params + off; then beta = sigmoid(z) or
// a = 1 / (1 + e^z) into out.
static void project(float *z, float *out, const aw_attn_form *f, size_t off, const float *x, size_t T, int decay) {
    attn_form_project(z, x, f->params + off, f->params + off + f->H * f->C, T, f->C, f->H);
    for (size_t i = 0; i < T * f->H; i++) out[i] = decay ? aw_sigmoidf(-z[i]) : aw_sigmoidf(z[i]);
}

static aw_delta_desc desc(const aw_attn_form *f, size_t T) {
    const delta_own *o = f->own;
    return (aw_delta_desc){T, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)), o->mode, o->chunk};
}

// the recurrence's work, then z and beta, z and a, and their gradients: 6 (T, H) blocks
static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const aw_delta_desc ds = desc(f, T);
    return aw_size_add(delta_rule_work_floats(&ds), aw_size_mul3(6, T, f->H));
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"%s\" is self-attention only (%zu queries, %zu keys)", f->form->name, T, Tk);
    const size_t TH = T * f->H;
    float *z = aw_alloc_floats(aw_size_mul(4, TH));
    if (!z) return aw_fail(AW_ERR_NOMEM, "attention \"%s\": out of memory for its gates", f->form->name);
    float *beta = z + TH, *za = beta + TH, *a = za + TH;
    project(z, beta, f, 0, x, T, 0);
    if (gated(f)) project(za, a, f, f->H * f->C + f->H, x, T, 1);
    const aw_delta_desc ds = desc(f, T);
    const int st = delta_rule_forward(out, att, q, k, v, beta, gated(f) ? a : NULL, &ds);
    free(z);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)saved, (void)Tk;
    const size_t C = f->C, H = f->H, TH = T * H, off2 = H * C + H;
    const aw_delta_desc ds = desc(f, T);
    float *z = work + delta_rule_work_floats(&ds), *beta = z + TH, *za = beta + TH, *a = za + TH, *db = a + TH, *dA = db + TH;
    project(z, beta, f, 0, x, T, 0);
    if (gated(f)) project(za, a, f, off2, x, T, 1);
    memset(db, 0, 2 * TH * sizeof(float));
    const int st = delta_rule_backward(dq, dk, dv, db, dA, work, dout, q, k, v, beta, gated(f) ? a : NULL, &ds);
    if (st) return st;
    // through the sigmoids to z: beta' = beta (1 - beta); a = sigmoid(-z): a' = -a (1 - a)
    for (size_t i = 0; i < TH; i++) db[i] *= beta[i] * (1.0f - beta[i]);
    for (size_t i = 0; gated(f) && i < TH; i++) dA[i] *= -a[i] * (1.0f - a[i]);
    for (int g = 0; g < (gated(f) ? 2 : 1); g++) {
        const size_t off = g ? off2 : 0;
        attn_form_project_backward(dx, f->grads ? f->grads + off : NULL, f->grads ? f->grads + off + H * C : NULL,
                                   g ? dA : db, x, f->params + off, T, C, H);
    }
    return AW_OK;
}

// state: the recurrence's (S per head and its scratch), then this step's z, beta, z, a (H each)
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    return aw_size_add(delta_rule_state_floats(f->C, f->C, f->H), 4 * f->H);
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)L;
    const size_t S = delta_rule_state_floats(f->C, f->C, f->H), H = f->H;
    if (pos == 0) memset(state, 0, S * sizeof(float));
    float *z = state + S, *beta = z + H, *za = beta + H, *a = za + H;
    project(z, beta, f, 0, x, 1, 0);
    if (gated(f)) project(za, a, f, H * f->C + H, x, 1, 1);
    delta_rule_step(out, state, q, k, v, beta, gated(f) ? a : NULL, f->C, f->C, H, 1.0f / sqrtf((float)(f->C / H)));
    return AW_OK;
}

#define DELTA_FORM(NAME, VARIANT, ...)                                                                             \
    {                                                                                                              \
        .name = NAME, .family = "delta", .cross = "softmax", .variant = VARIANT, .options = OPTIONS, .n_options = 2, \
        .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS, .init = init,  \
        .release = release, .param_group = "delta", .tensors = tensors, .bind = bind, .work_floats = work_floats,  \
        .forward = forward, .backward = backward, .step_floats = step_floats, .step = step, .words = __VA_ARGS__   \
    }

const aw_form AW_FORM_DELTA_DESC = DELTA_FORM("delta", 0,
    {
        .label = "DeltaNet (the delta rule)",
        .formula = "k̂_t = k_t / |k_t|,  β_t = σ(x_t·w_h + b_h)\n"
            "u_t = k̂_t S_{t−1}       (what k̂_t holds)\n"
            "S_t = S_{t−1} + β_t k̂_tᵀ (v_t − u_t)\n"
            "o_t = s q_t S_t\n"
            "\n"
            "The write replaces the value stored\n"
            "at k̂_t instead of adding to it.\n"
            "Time O(n d²), in chunks (WY form);\n"
            "one d × d state per head.\n"
            "Shown: |A_ij|, the implied matrix\n"
            "with O = A V.",
        .summary = "Linear attention whose state is overwritten: before writing a key's value, the state reads "
            "what it already holds at that key and writes only the difference, with a strength β the token "
            "chooses. Plain linear attention only adds, so old values pile up under a key; the delta rule "
            "replaces them, which is what lets a fixed-size state look a key up again (associative recall). "
            "It keeps linear time and a constant-size state for generation.",
        .cost = "O(n d²)",
        .paper = "Linear Transformers Are Secretly Fast Weight Programmers. Schlag, Irie and Schmidhuber, 2021.",
        .url = "https://arxiv.org/abs/2102.11174",
        .year = 2021,
        .signed_scores = 1,
    });

const aw_form AW_FORM_GATED_DELTA_DESC = DELTA_FORM("gated-delta", 1,
    {
        .label = "Gated DeltaNet (delta rule + decay gate)",
        .formula = "k̂_t = k_t / |k_t|,  β_t = σ(x_t·w_h + b_h)\n"
            "a_t = 1 / (1 + e^(x_t·g_h + c_h))\n"
            "u_t = k̂_t S_{t−1}\n"
            "S_t = a_t (S_{t−1} − β_t k̂_tᵀ u_t)\n"
            "      + β_t k̂_tᵀ v_t\n"
            "o_t = s q_t S_t\n"
            "\n"
            "Forget (a) and overwrite (β).\n"
            "Time O(n d²); one d × d state per head.\n"
            "Shown: |A_ij| with O = A V.",
        .summary = "The delta rule with a decay gate: the state first fades by a factor the token chooses, then "
            "the value at the token's key is overwritten. The gate clears old memories wholesale when the "
            "context changes; the delta rule edits one key's value precisely. It keeps linear time and a "
            "constant-size state.",
        .cost = "O(n d²)",
        .paper = "Gated Delta Networks: Improving Mamba2 with Delta Rule. Yang, Kautz and Hatamizadeh, 2024.",
        .url = "https://arxiv.org/abs/2412.06464",
        .year = 2024,
        .signed_scores = 1,
    });
