// form_gated.c: decay-gated linear attention (Mamba-2's SSD with a scalar gate, "simple GLA";
// docs/attention-forms.md section 4c) as a registry row. Each head's gate comes from the token's
// input through a learned projection: z = x W^T + b (W: (heads, C), as nn.Linear(C, heads)
// keeps it), log a = -softplus(z), so a = 1 / (1 + e^z) in (0, 1). The bias starts the heads
// from fast to slow forgetting (a from 0.5 to 0.97), W as nn.Linear initialises it. Training runs the mode the
// options say (chunked by default) and the parallel form's gradient; generation keeps the
// constant-size state S per head. Causal only: a gate runs forward in time.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/gated_linear.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = {"parallel", "recurrent", "chunked", NULL};
static const aw_form_option OPTIONS[] = {
    {"mode", AW_OPTION_CHOICE, 0, 0, MODES, "chunked", "gated_mode",
     "how the forward runs: the parallel form, the recurrence, or chunks (the same numbers)"},
    {"chunk", AW_OPTION_INT, 1, 4096, NULL, "64", "gated_chunk", "the chunked form's chunk length"},
};

typedef struct {
    int mode;
    size_t chunk;
} gated_own;

// -softplus(z) = -log(1 + e^z), computed without overflow
static float neg_softplus(float z) { return z > 0.0f ? -(z + log1pf(expf(-z))) : -log1pf(expf(z)); }

static int init(aw_attn_form *f, const aw_form_setup *su) {
    gated_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->mode = aw_option_word(f->form, su->opts, "mode");
    o->chunk = (size_t)aw_option_int(f->form, su->opts, "chunk");
    const size_t C = f->C, H = f->H, n = aw_size_add(aw_size_mul(H, C), H);
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0x6A7Eu);
    const float bound = 1.0f / sqrtf((float)C);
    for (size_t i = 0; i < H * C; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    // the heads start from gates spread between fast and slow forgetting, as Mamba-2 spreads its
    // decays: a_h = 1 - 2^(-1 - 4 h / (H - 1)) at z = b, from 0.5 (head 0) to 0.97 (the last)
    for (size_t h = 0; h < H; h++) {
        const double a = H > 1 ? 1.0 - pow(2.0, -1.0 - 4.0 * (double)h / (double)(H - 1)) : 0.9;
        f->params[H * C + h] = (float)log(1.0 / a - 1.0);
    }
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    if (cap >= 2) {
        memset(out, 0, 2 * sizeof *out);
        strcpy(out[0].name, "weight");
        out[0].size = f->H * f->C, out[0].dims[0] = f->H, out[0].dims[1] = f->C, out[0].rank = 2, out[0].trainable = 1;
        strcpy(out[1].name, "bias");
        out[1].size = f->H, out[1].dims[0] = f->H, out[1].rank = 1, out[1].trainable = 1, out[1].no_decay = 1;
    }
    return 2;
}

static void bind(aw_attn_form *f, float *params, float *grads) { attn_form_bind_params(f, params, grads, f->H * f->C + f->H); }

// z (T, H) = x W^T + b, and g = -softplus(z)
static void gates(float *z, float *g, const aw_attn_form *f, const float *x, size_t T) {
    attn_form_project(z, x, f->params, f->params + f->H * f->C, T, f->C, f->H);
    for (size_t i = 0; i < T * f->H; i++) g[i] = neg_softplus(z[i]);
}

static aw_gated_desc desc(const aw_attn_form *f, size_t T) {
    const gated_own *o = f->own;
    return (aw_gated_desc){T, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)), o->mode, o->chunk};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    return aw_size_add(gated_linear_work_floats(T), aw_size_mul3(3, T, f->H)); // + z, g, dg
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "gated linear attention is self-attention only (%zu queries, %zu keys)", T, Tk);
    float *z = aw_alloc_floats(aw_size_mul3(2, T, f->H));
    if (!z) return aw_fail(AW_ERR_NOMEM, "gated linear attention: out of memory for its gates");
    gates(z, z + T * f->H, f, x, T);
    const aw_gated_desc ds = desc(f, T);
    const int st = gated_linear_forward(out, att, q, k, v, z + T * f->H, &ds);
    free(z);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)saved, (void)Tk;
    const size_t C = f->C, H = f->H;
    float *z = work + gated_linear_work_floats(T), *g = z + T * H, *dg = g + T * H;
    gates(z, g, f, x, T);
    memset(dg, 0, T * H * sizeof(float));
    const aw_gated_desc ds = desc(f, T);
    const int st = gated_linear_backward(dq, dk, dv, dg, work, dout, q, k, v, g, &ds);
    if (st) return st;
    for (size_t i = 0; i < T * H; i++) dg[i] *= -aw_sigmoidf(z[i]); // dz = dg dg/dz, g = -softplus(z)
    attn_form_project_backward(dx, f->grads, f->grads ? f->grads + H * C : NULL, dg, x, f->params, T, C, H);
    return AW_OK;
}

// state: S (dh, dvh) per head, whatever the length, then the step's gates (H) and z (H)
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    return aw_size_add(gated_linear_state_floats(f->C, f->C, f->H), 2 * f->H);
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)L;
    const size_t S = gated_linear_state_floats(f->C, f->C, f->H);
    if (pos == 0) memset(state, 0, S * sizeof(float));
    float *z = state + S, *g = z + f->H;
    gates(z, g, f, x, 1);
    gated_linear_step(out, state, q, k, v, g, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)));
    return AW_OK;
}

const aw_form AW_FORM_GATED_DESC = {
    .name = "gated",
    .words = {
        .label = "Gated linear attention (decay gate)",
        .formula = "a_t = 1 / (1 + e^(x_t·w_h + b_h))   (0 < a_t < 1)\n"
            "S_t = a_t S_{t−1} + k_tᵀ v_t\n"
            "o_t = s q_t S_t\n"
            "\n"
            "Parallel: A_ij = (q_i·k_j) s Π_{l=j+1..i} a_l\n"
            "for j ≤ i; O = A V. Retention is the\n"
            "case of a constant gate.\n"
            "Time O(n d²) chunked; one d × d state\n"
            "per head in generation.\n"
            "Shown: |A_ij| (scores can be negative).",
        .summary = "Linear attention whose running state forgets: before each new key-value pair is added, the "
            "state is multiplied by a gate between 0 and 1 that the token itself chooses, per head. A token "
            "can keep what came before (a gate near 1) or wipe it (near 0), which retention's fixed decay "
            "cannot. It keeps the constant-size state and linear time of linear attention; its parallel, "
            "recurrent and chunked forms give the same numbers.",
        .cost = "O(n d²)",
        .paper = "Transformers are SSMs: Generalized Models and Efficient Algorithms Through Structured State Space "
            "Duality. Dao and Gu, 2024.",
        .url = "https://arxiv.org/abs/2405.21060",
        .year = 2024,
        .signed_scores = 1,
    },
    .family = "gated",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS,
    .options = OPTIONS,
    .n_options = 2,
    .init = init,
    .release = release,
    .param_group = "gate",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};
