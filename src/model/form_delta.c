// form_delta.c: DeltaNet, Gated DeltaNet and Kimi Delta Attention (docs/attention-forms.md section
// 4c) as registry rows.
// The write strength beta_t = sigmoid(x_t w_h + b_h) per head comes from the token's input through
// a learned projection (beta.weight (heads, C), beta.bias (heads), as nn.Linear(C, heads)); Gated
// DeltaNet adds a decay a_t = 1 / (1 + e^(x_t g_h + c_h)) the same way (gate.weight, gate.bias),
// started from fast to slow forgetting as the gated form. KDA (Kimi Linear) gives the decay per key
// channel, as Kimi Linear parameterises it (Mamba-2's dt and A): z_t = x_t W_g^T + dt_bias (C
// values: gate.weight (C, C), gate.bias (C)) and alpha_t,c = exp(-exp(A_log_h) softplus(z_t,c)) with
// one A_log per head (gate.a_log (H)); Kimi Linear makes W_g low-rank (C -> dh -> C): here
// attentionOptions.gateRank r > 0 does (gate.down (r, C), gate.up (C, r)), 0 (the default) keeps
// it full-rank (C, C). The forward runs the mode the options say
// (the chunked WY form by default, or the recurrence: the same numbers); the backward and
// generation run the recurrence (src/attention/delta_rule.c). Causal only.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/delta_rule.h"
#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = {"recurrent", "chunked", NULL};
#define DELTA_OPTIONS                                                                                  \
    {"mode", AW_OPTION_CHOICE, 0, 0, MODES, "chunked", "delta_mode",                                      \
     "how the forward runs: the recurrence, or chunks by the WY form (the same numbers)"},                \
        {"chunk", AW_OPTION_INT, 1, 4096, NULL, "16", "delta_chunk", "the chunked form's chunk length"}
static const aw_form_option OPTIONS[] = {DELTA_OPTIONS};
// KDA's: the delta forms' two, and the rank of its decay gate's projection
static const aw_form_option KDA_OPTIONS[] = {
    DELTA_OPTIONS,
    {"gateRank", AW_OPTION_INT, 0, 4096, NULL, "0", "kda_gate_rank",
     "the rank of the decay gate's projection, C -> rank -> C (Kimi Linear: the head width); 0: full rank, one (C, C) matrix"},
};

typedef struct {
    int mode;
    size_t chunk;
    size_t rank; // KDA: the gate projection's rank (0: full, (C, C))
} delta_own;

static int gated(const aw_attn_form *f) { return f->form->variant >= 1; }
static int kda(const aw_attn_form *f) { return f->form->variant == 2; }
// the decay's width per position: one per head, or one per key channel (KDA)
static size_t gate_width(const aw_attn_form *f) { return kda(f) ? f->C : f->H; }
static size_t rank_of(const aw_attn_form *f) { return kda(f) ? ((const delta_own *)f->own)->rank : 0; }
// the gate projection's weights: (gw, C), or KDA's low-rank pair down (r, C) and up (C, r)
static size_t gate_w_floats(const aw_attn_form *f) { return rank_of(f) ? 2 * rank_of(f) * f->C : gate_width(f) * f->C; }
// beta (H, C) + (H), then the gate's weights + its bias (gw), then KDA's A_log (H)
static size_t gate_off(const aw_attn_form *f) { return f->H * f->C + f->H; }
static size_t gate_bias_off(const aw_attn_form *f) { return gate_off(f) + gate_w_floats(f); }
static size_t a_log_off(const aw_attn_form *f) { return gate_bias_off(f) + gate_width(f); }
static size_t n_params(const aw_attn_form *f) {
    return gated(f) ? a_log_off(f) + (kda(f) ? f->H : 0) : gate_off(f);
}


static int init(aw_attn_form *f, const aw_form_setup *su) {
    delta_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->mode = aw_option_word(f->form, su->opts, "mode");
    o->chunk = (size_t)aw_option_int(f->form, su->opts, "chunk");
    o->rank = kda(f) ? (size_t)aw_option_int(f->form, su->opts, "gateRank") : 0;
    if (o->rank > f->C)
        return aw_fail(AW_ERR_ARG, "attentionOptions.gateRank (%zu) must be at most the width dModel (%zu); 0 is full rank",
                       o->rank, f->C);
    const size_t C = f->C, H = f->H, n = n_params(f);
    if (!(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0xDE17u);
    const float bound = 1.0f / sqrtf((float)C);
    for (size_t i = 0; i < n; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    if (o->rank) // the up projection (C, r) reads r inputs
        for (size_t i = 0; i < C * o->rank; i++) f->params[gate_off(f) + o->rank * C + i] *= sqrtf((float)C / (float)o->rank);
    for (size_t h = 0; h < H; h++) f->params[H * C + h] = 0.0f; // beta = 1/2
    if (gated(f)) // a_h = 1 - 2^(-1 - 4 h / (H - 1)) at the start, as the gated form
        for (size_t h = 0; h < H; h++) {
            const double a = H > 1 ? 1.0 - pow(2.0, -1.0 - 4.0 * (double)h / (double)(H - 1)) : 0.9;
            // Gated DeltaNet: 1 / (1 + e^c) = a; KDA (A_log = 0): exp(-softplus(c)) = 1 / (1 + e^c) = a
            // for every channel of head h
            const float c = (float)log(1.0 / a - 1.0);
            const size_t w = kda(f) ? C / H : 1;
            for (size_t i = 0; i < w; i++) f->params[gate_bias_off(f) + h * w + i] = c;
            if (kda(f)) f->params[a_log_off(f) + h] = 0.0f;
        }
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    // name, rows, columns (0: a vector), no weight decay
    const size_t C = f->C, H = f->H, G = gate_width(f), r = rank_of(f);
    const struct { const char *name; size_t rows, cols; int no_decay; } all[6] = {
        {"beta_weight", H, C, 0}, {"beta_bias", H, 0, 1},
        {r ? "gate_down" : "gate_weight", r ? r : G, C, 0}, {r ? "gate_up" : "gate_bias", r ? C : G, r, r == 0},
        {r ? "gate_bias" : "gate_a_log", r ? G : H, 0, 1}, {"gate_a_log", H, 0, 1},
    };
    const size_t count = !gated(f) ? 2 : !kda(f) ? 4 : r ? 6 : 5;
    for (size_t i = 0; i < count && i < cap; i++) {
        memset(&out[i], 0, sizeof out[i]);
        strcpy(out[i].name, all[i].name);
        out[i].size = all[i].cols ? all[i].rows * all[i].cols : all[i].rows;
        out[i].dims[0] = all[i].rows, out[i].dims[1] = all[i].cols;
        out[i].rank = all[i].cols ? 2 : 1, out[i].trainable = 1, out[i].no_decay = all[i].no_decay;
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

// softplus(z) = log(1 + e^z), without overflow
static float softplus(float z) { return z > 0.0f ? z + log1pf(expf(-z)) : log1pf(expf(z)); }

// The decays (T, gate_width) into a, from z (T, gate_width) (written): Gated DeltaNet's
// 1 / (1 + e^z), or KDA's exp(-exp(A_log_h) softplus(z_c)) for channel c of head h, with
// z = x W_g^T + b_g, or x W_down^T W_up^T + b_g at rank r (y (T, r) = x W_down^T: scratch).
static void decays(float *z, float *a, float *y, const aw_attn_form *f, const float *x, size_t T) {
    if (!kda(f)) {
        project(z, a, f, gate_off(f), x, T, 1);
        return;
    }
    const size_t C = f->C, dh = C / f->H, r = rank_of(f);
    const float *W = f->params + gate_off(f), *b = f->params + gate_bias_off(f);
    if (r) {
        aw_matmul_nt(y, x, W, T, r, C, C, C, r, 0);
        attn_form_project(z, y, W + r * C, b, T, r, C);
    } else
        attn_form_project(z, x, W, b, T, C, C);
    const float *a_log = f->params + a_log_off(f);
    for (size_t t = 0; t < T; t++)
        for (size_t c = 0; c < C; c++) a[t * C + c] = expf(-expf(a_log[c / dh]) * softplus(z[t * C + c]));
}

static aw_delta_desc desc(const aw_attn_form *f, size_t T) {
    const delta_own *o = f->own;
    return (aw_delta_desc){T, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)), o->mode, o->chunk, kda(f)};
}

// the recurrence's work, then z and beta (T, H), z and a (T, gate_width), dbeta (T, H), da
// (T, gate_width), and KDA's low-rank y and dy (T, rank)
static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const aw_delta_desc ds = desc(f, T);
    return aw_size_add(aw_size_add(delta_rule_work_floats(&ds), aw_size_mul3(3, T, aw_size_add(f->H, gate_width(f)))),
                       aw_size_mul3(2, T, rank_of(f)));
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"%s\" is self-attention only (%zu queries, %zu keys)", f->form->name, T, Tk);
    const size_t TH = T * f->H, TG = T * gate_width(f);
    float *z = aw_alloc_floats(aw_size_add(aw_size_mul(2, aw_size_add(TH, TG)), aw_size_mul(T, rank_of(f))));
    if (!z) return aw_fail(AW_ERR_NOMEM, "attention \"%s\": out of memory for its gates", f->form->name);
    float *beta = z + TH, *za = beta + TH, *a = za + TG, *y = a + TG;
    project(z, beta, f, 0, x, T, 0);
    if (gated(f)) decays(za, a, y, f, x, T);
    const aw_delta_desc ds = desc(f, T);
    const int st = delta_rule_forward(out, att, q, k, v, beta, gated(f) ? a : NULL, &ds);
    free(z);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)saved, (void)Tk;
    const size_t C = f->C, H = f->H, TH = T * H, G = gate_width(f), TG = T * G, off2 = gate_off(f);
    const aw_delta_desc ds = desc(f, T);
    float *z = work + delta_rule_work_floats(&ds), *beta = z + TH, *za = beta + TH, *a = za + TG, *db = a + TG, *dA = db + TH;
    float *y = dA + TG, *dy = y + T * rank_of(f);
    project(z, beta, f, 0, x, T, 0);
    if (gated(f)) decays(za, a, y, f, x, T);
    memset(db, 0, (TH + TG) * sizeof(float));
    const int st = delta_rule_backward(dq, dk, dv, db, dA, work, dout, q, k, v, beta, gated(f) ? a : NULL, &ds);
    if (st) return st;
    // through the sigmoids to z: beta' = beta (1 - beta); a = sigmoid(-z): a' = -a (1 - a)
    for (size_t i = 0; i < TH; i++) db[i] *= beta[i] * (1.0f - beta[i]);
    if (kda(f)) {
        // a = exp(-A softplus(z)), A = exp(A_log): da/dz = -a A sigmoid(z); da/dA_log = a log a
        const size_t dh = C / H;
        const float *a_log = f->params + a_log_off(f);
        float *g_a_log = f->grads ? f->grads + a_log_off(f) : NULL;
        for (size_t i = 0; i < TG; i++) {
            const size_t h = (i % C) / dh;
            const float ga = dA[i] * a[i];
            if (g_a_log) g_a_log[h] += ga * -expf(a_log[h]) * softplus(za[i]);
            dA[i] = -ga * expf(a_log[h]) * aw_sigmoidf(za[i]);
        }
    } else
        for (size_t i = 0; gated(f) && i < TH; i++) dA[i] *= -a[i] * (1.0f - a[i]);
    attn_form_project_backward(dx, f->grads ? f->grads : NULL, f->grads ? f->grads + H * C : NULL, db, x, f->params, T, C, H);
    const size_t r = rank_of(f), offb = gate_bias_off(f);
    if (gated(f) && r) { // z = y W_up^T + b, y = x W_down^T: dy = dz W_up, dx += dy W_down, dW_down += dy^T x
        memset(dy, 0, T * r * sizeof(float));
        attn_form_project_backward(dy, f->grads ? f->grads + off2 + r * C : NULL, f->grads ? f->grads + offb : NULL, dA, y,
                                   f->params + off2 + r * C, T, r, C);
        aw_matmul_nn(dx, dy, f->params + off2, T, C, r, r, C, C, 1);
        if (f->grads) aw_matmul_tn(f->grads + off2, dy, x, r, C, T, r, C, C, 1);
    } else if (gated(f))
        attn_form_project_backward(dx, f->grads ? f->grads + off2 : NULL, f->grads ? f->grads + offb : NULL, dA, x,
                                   f->params + off2, T, C, G);
    return AW_OK;
}

// state: the recurrence's (S per head and its scratch), then this step's z, beta (H each), z, a
// (gate_width each)
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    return aw_size_add(delta_rule_state_floats(f->C, f->C, f->H),
                       aw_size_add(aw_size_mul(2, aw_size_add(f->H, gate_width(f))), rank_of(f)));
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)L;
    const size_t S = delta_rule_state_floats(f->C, f->C, f->H), H = f->H;
    if (pos == 0) memset(state, 0, S * sizeof(float));
    float *z = state + S, *beta = z + H, *za = beta + H, *a = za + gate_width(f), *y = a + gate_width(f);
    project(z, beta, f, 0, x, 1, 0);
    if (gated(f)) decays(za, a, y, f, x, 1);
    delta_rule_step(out, state, q, k, v, beta, gated(f) ? a : NULL, kda(f), f->C, f->C, H, 1.0f / sqrtf((float)(f->C / H)));
    return AW_OK;
}

#define DELTA_FORM(NAME, VARIANT, OPTS, ...)                                                                       \
    {                                                                                                              \
        .name = NAME, .family = "delta", .cross = "softmax", .variant = VARIANT, .options = OPTS,                  \
        .n_options = sizeof OPTS / sizeof OPTS[0],                                                                 \
        .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS, .init = init,  \
        .release = release, .param_group = "delta", .tensors = tensors, .bind = bind, .work_floats = work_floats,  \
        .forward = forward, .backward = backward, .step_floats = step_floats, .step = step, .words = __VA_ARGS__   \
    }

const aw_form AW_FORM_DELTA_DESC = DELTA_FORM("delta", 0, OPTIONS,
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

const aw_form AW_FORM_GATED_DELTA_DESC = DELTA_FORM("gated-delta", 1, OPTIONS,
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

const aw_form AW_FORM_KDA_DESC = DELTA_FORM("kda", 2, KDA_OPTIONS,
    {
        .label = "Kimi Delta Attention (KDA)",
        .formula = "k̂_t = k_t / |k_t|\n"
            "β_t = σ(x_t·w_h + b_h)\n"
            "z_t = x_t W_g + b_g  (per channel)\n"
            "α_t = exp(−e^(a_h) softplus(z_t))\n"
            "S′ = diag(α_t) S_{t−1}   (decay)\n"
            "S_t = S′ + β_t k̂_tᵀ (v_t − k̂_t S′)\n"
            "o_t = s q_t S_t\n"
            "\n"
            "Gated DeltaNet with one decay\n"
            "per key channel. Time O(n d²);\n"
            "one d × d state per head.\n"
            "Shown: |A_ij| with O = A V.",
        .summary = "Gated DeltaNet whose forgetting is finer: every key channel of the state fades at its own "
            "rate, chosen by the token (GLA's per-channel gate on the delta rule), so a head can keep some "
            "features for long and clear others at once. Kimi Linear interleaves three of these layers with "
            "one of MLA. Linear time and a constant-size state.",
        .cost = "O(n d²)",
        .paper = "Kimi Linear: An Expressive, Efficient Attention Architecture. Kimi Team, 2025.",
        .url = "https://arxiv.org/abs/2510.26692",
        .year = 2025,
        .signed_scores = 1,
    });
