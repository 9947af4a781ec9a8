// form_gla.c: GLA, gated linear attention with a gate per key channel (docs/attention-forms.md
// section 4c), as a registry row. Every key channel of every head gets its own gate from the
// token's input through a learned projection: z = x W^T + b (W: (C, C), as nn.Linear(C, C) keeps
// it), log alpha = -softplus(z), so alpha = 1 / (1 + e^z) in (0, 1) per channel. The bias starts the
// channels of each head from fast to slow forgetting (alpha from 0.5 to 0.97), W as nn.Linear
// initialises it. Training runs the mode the options say (chunked by default) and the parallel
// form's gradient; generation keeps the constant-size state S per head. Causal only.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/gla.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = {"parallel", "recurrent", "chunked", NULL};
static const aw_form_option OPTIONS[] = {
    {"mode", AW_OPTION_CHOICE, 0, 0, MODES, "chunked", "gla_mode",
     "how the forward runs: the parallel form, the recurrence, or chunks (the same numbers)"},
    {"chunk", AW_OPTION_INT, 1, 4096, NULL, "16", "gla_chunk", "the chunked form's chunk length"},
};

typedef struct {
    int mode;
    size_t chunk;
} gla_own;

// -softplus(z) = -log(1 + e^z), computed without overflow
static float neg_softplus(float z) { return z > 0.0f ? -(z + log1pf(expf(-z))) : -log1pf(expf(z)); }

static int init(aw_attn_form *f, const aw_form_setup *su) {
    gla_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->mode = aw_option_word(f->form, su->opts, "mode");
    o->chunk = (size_t)aw_option_int(f->form, su->opts, "chunk");
    const size_t C = f->C, H = f->H, dh = C / H, n = aw_size_add(aw_size_mul(C, C), C);
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0x61Au);
    const float bound = 1.0f / sqrtf((float)C);
    for (size_t i = 0; i < C * C; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    // the channels of each head start from fast to slow forgetting: alpha = 1 - 2^(-1 - 4 r / (dh - 1))
    for (size_t c = 0; c < C; c++) {
        const size_t r = c % dh;
        const double a = dh > 1 ? 1.0 - pow(2.0, -1.0 - 4.0 * (double)r / (double)(dh - 1)) : 0.9;
        f->params[C * C + c] = (float)log(1.0 / a - 1.0);
    }
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    if (cap >= 2) {
        memset(out, 0, 2 * sizeof *out);
        strcpy(out[0].name, "weight");
        out[0].size = f->C * f->C, out[0].dims[0] = f->C, out[0].dims[1] = f->C, out[0].rank = 2, out[0].trainable = 1;
        strcpy(out[1].name, "bias");
        out[1].size = f->C, out[1].dims[0] = f->C, out[1].rank = 1, out[1].trainable = 1, out[1].no_decay = 1;
    }
    return 2;
}

static void bind(aw_attn_form *f, float *params, float *grads) { attn_form_bind_params(f, params, grads, f->C * f->C + f->C); }

// z (T, C) = x W^T + b, and g = -softplus(z): one log-gate per key channel
static void gates(float *z, float *g, const aw_attn_form *f, const float *x, size_t T) {
    attn_form_project(z, x, f->params, f->params + f->C * f->C, T, f->C, f->C);
    for (size_t i = 0; i < T * f->C; i++) g[i] = neg_softplus(z[i]);
}

static aw_gla_desc desc(const aw_attn_form *f, size_t T) {
    const gla_own *o = f->own;
    return (aw_gla_desc){T, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)), o->mode, o->chunk};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const aw_gla_desc ds = desc(f, T);
    return aw_size_add(gla_work_floats(&ds), aw_size_mul3(3, T, f->C)); // + z, g, dg
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "GLA is self-attention only (%zu queries, %zu keys)", T, Tk);
    float *z = aw_alloc_floats(aw_size_mul3(2, T, f->C));
    if (!z) return aw_fail(AW_ERR_NOMEM, "GLA: out of memory for its gates");
    gates(z, z + T * f->C, f, x, T);
    const aw_gla_desc ds = desc(f, T);
    const int st = gla_forward(out, att, q, k, v, z + T * f->C, &ds);
    free(z);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)saved, (void)Tk;
    const size_t C = f->C;
    const aw_gla_desc ds = desc(f, T);
    float *z = work + gla_work_floats(&ds), *g = z + T * C, *dg = g + T * C;
    gates(z, g, f, x, T);
    memset(dg, 0, T * C * sizeof(float));
    const int st = gla_backward(dq, dk, dv, dg, work, dout, q, k, v, g, &ds);
    if (st) return st;
    for (size_t i = 0; i < T * C; i++) dg[i] *= -aw_sigmoidf(z[i]); // dz = dg dg/dz, g = -softplus(z)
    attn_form_project_backward(dx, f->grads, f->grads ? f->grads + C * C : NULL, dg, x, f->params, T, C, C);
    return AW_OK;
}

// state: S (dh, dvh) per head, whatever the length, then the step's gates (C) and z (C)
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    return aw_size_add(gla_state_floats(f->C, f->C, f->H), 2 * f->C);
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)L;
    const size_t S = gla_state_floats(f->C, f->C, f->H);
    if (pos == 0) memset(state, 0, S * sizeof(float));
    float *z = state + S, *g = z + f->C;
    gates(z, g, f, x, 1);
    gla_step(out, state, q, k, v, g, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)));
    return AW_OK;
}

const aw_form AW_FORM_GLA_DESC = {
    .name = "gla",
    .words = {
        .label = "GLA (a decay gate per channel)",
        .formula = "α_t = 1 / (1 + e^(x_t W + b))   (one per key channel)\n"
            "S_t = diag(α_t) S_{t−1} + k_tᵀ v_t\n"
            "o_t = s q_t S_t\n"
            "\n"
            "Parallel: A_ij = s Σ_r q_ir k_jr Π_{l=j+1..i} α_lr\n"
            "for j ≤ i; O = A V. The decay-gated form is\n"
            "the case of one gate for all channels.\n"
            "Time O(n c d) chunked; one d × d state\n"
            "per head in generation.\n"
            "Shown: |A_ij| (scores can be negative).",
        .summary = "Gated linear attention with a forget gate for every key channel: each row of the running "
            "state fades at its own rate, which the token chooses. Some channels can hold on to old context "
            "while others turn over quickly, where the decay-gated form forgets a whole head at once. It keeps "
            "the constant-size state and linear time of linear attention; its parallel, recurrent and chunked "
            "forms give the same numbers.",
        .cost = "O(n d²)",
        .paper = "Gated Linear Attention Transformers with Hardware-Efficient Training. Yang, Wang, Shen, Panda and "
            "Kim, 2023.",
        .url = "https://arxiv.org/abs/2312.06635",
        .year = 2023,
        .signed_scores = 1,
    },
    .family = "gla",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS,
    .options = OPTIONS,
    .n_options = 2,
    .init = init,
    .release = release,
    .param_group = "gla",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};
