// form_gated.c: the two gated forms of linear attention (docs/attention-forms.md section 4c) as
// registry rows, which differ only in the width of their gate. Each gate comes from the token's
// input through a learned projection: z = x W^T + b, log a = -softplus(z), so a = 1 / (1 + e^z) in
// (0, 1), and the running state forgets by a before each new key-value pair is added.
//   gated: decay-gated linear attention (Mamba-2's SSD with a scalar gate, "simple GLA"): one gate
//          per head, W (heads, C) as nn.Linear(C, heads) keeps it; kernel gated_linear.c.
//   gla:   GLA, a gate per key channel of every head, W (C, C) as nn.Linear(C, C); kernel gla.c.
// The bias starts the gates from fast to slow forgetting (a from 0.5 to 0.97: across the heads for
// gated, as Mamba-2 spreads its decays; across each head's channels for gla), W as nn.Linear
// initialises it. Training runs the mode the options say (chunked by default) and the parallel
// form's gradient; generation keeps the constant-size state S per head. Causal only: a gate runs
// forward in time.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/gated_linear.h"
#include "../attention/gla.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = {"parallel", "recurrent", "chunked", NULL};
static const aw_form_option GATED_OPTIONS[] = {
    {"mode", AW_OPTION_CHOICE, 0, 0, MODES, "chunked", "gated_mode",
     "how the forward runs: the parallel form, the recurrence, or chunks (the same numbers)"},
    {"chunk", AW_OPTION_INT, 1, 4096, NULL, "64", "gated_chunk", "the chunked form's chunk length"},
};
static const aw_form_option GLA_OPTIONS[] = {
    {"mode", AW_OPTION_CHOICE, 0, 0, MODES, "chunked", "gla_mode",
     "how the forward runs: the parallel form, the recurrence, or chunks (the same numbers)"},
    {"chunk", AW_OPTION_INT, 1, 4096, NULL, "16", "gla_chunk", "the chunked form's chunk length"},
};

typedef struct {
    int mode;
    size_t chunk;
} gated_own;

// The rows' variants: the width of the gate.
enum { GATE_PER_HEAD = 0, GATE_PER_CHANNEL = 1 };
static int per_channel(const aw_attn_form *f) { return f->form->variant == GATE_PER_CHANNEL; }

// The gates per token: H (gated) or C (gla).
static size_t gate_width(const aw_attn_form *f) { return per_channel(f) ? f->C : f->H; }

// -softplus(z) = -log(1 + e^z), computed without overflow
static float neg_softplus(float z) { return z > 0.0f ? -(z + log1pf(expf(-z))) : -log1pf(expf(z)); }

static int init(aw_attn_form *f, const aw_form_setup *su) {
    gated_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->mode = aw_option_word(f->form, su->opts, "mode");
    o->chunk = (size_t)aw_option_int(f->form, su->opts, "chunk");
    const size_t C = f->C, H = f->H, G = gate_width(f), n = aw_size_add(aw_size_mul(G, C), G);
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ (per_channel(f) ? 0x61Au : 0x6A7Eu));
    const float bound = 1.0f / sqrtf((float)C);
    for (size_t i = 0; i < G * C; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    // gate r of the spread starts at a = 1 - 2^(-1 - 4 r / (R - 1)) at z = b, from 0.5 to 0.97: the
    // spread is the heads (gated: R = H) or each head's channels (gla: R = C / H)
    const size_t R = per_channel(f) ? C / H : H;
    for (size_t i = 0; i < G; i++) {
        const size_t r = i % R;
        const double a = R > 1 ? 1.0 - pow(2.0, -1.0 - 4.0 * (double)r / (double)(R - 1)) : 0.9;
        f->params[G * C + i] = (float)log(1.0 / a - 1.0);
    }
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const size_t G = gate_width(f);
    if (cap >= 2) {
        memset(out, 0, 2 * sizeof *out);
        strcpy(out[0].name, "weight");
        out[0].size = G * f->C, out[0].dims[0] = G, out[0].dims[1] = f->C, out[0].rank = 2, out[0].trainable = 1;
        strcpy(out[1].name, "bias");
        out[1].size = G, out[1].dims[0] = G, out[1].rank = 1, out[1].trainable = 1, out[1].no_decay = 1;
    }
    return 2;
}

static void bind(aw_attn_form *f, float *params, float *grads) {
    attn_form_bind_params(f, params, grads, gate_width(f) * f->C + gate_width(f));
}

// z (T, G) = x W^T + b, and g = -softplus(z)
static void gates(float *z, float *g, const aw_attn_form *f, const float *x, size_t T) {
    const size_t G = gate_width(f);
    attn_form_project(z, x, f->params, f->params + G * f->C, T, f->C, G);
    for (size_t i = 0; i < T * G; i++) g[i] = neg_softplus(z[i]);
}

static aw_gated_desc gated_desc(const aw_attn_form *f, size_t T) {
    const gated_own *o = f->own;
    return (aw_gated_desc){T, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)), o->mode, o->chunk};
}

static aw_gla_desc gla_desc(const aw_attn_form *f, size_t T) {
    const gated_own *o = f->own;
    return (aw_gla_desc){T, f->C, f->C, f->H, 1.0f / sqrtf((float)(f->C / f->H)), o->mode, o->chunk};
}

// the kernel's work for a backward over T
static size_t kernel_work_floats(const aw_attn_form *f, size_t T) {
    if (!per_channel(f)) return gated_linear_work_floats(T);
    const aw_gla_desc ds = gla_desc(f, T);
    return gla_work_floats(&ds);
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    return aw_size_add(kernel_work_floats(f, T), aw_size_mul3(3, T, gate_width(f))); // + z, g, dg
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved;
    const int gla = per_channel(f);
    const char *what = gla ? "GLA" : "gated linear attention";
    if (T != Tk) return aw_fail(AW_ERR_ARG, "%s is self-attention only (%zu queries, %zu keys)", what, T, Tk);
    const size_t G = gate_width(f);
    float *z = aw_alloc_floats(aw_size_mul3(2, T, G));
    if (!z) return aw_fail(AW_ERR_NOMEM, "%s: out of memory for its gates", what);
    gates(z, z + T * G, f, x, T);
    int st;
    if (gla) {
        const aw_gla_desc ds = gla_desc(f, T);
        st = gla_forward(out, att, q, k, v, z + T * G, &ds);
    } else {
        const aw_gated_desc ds = gated_desc(f, T);
        st = gated_linear_forward(out, att, q, k, v, z + T * G, &ds);
    }
    free(z);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)saved, (void)Tk;
    const size_t C = f->C, G = gate_width(f);
    float *z = work + kernel_work_floats(f, T), *g = z + T * G, *dg = g + T * G;
    gates(z, g, f, x, T);
    memset(dg, 0, T * G * sizeof(float));
    int st;
    if (per_channel(f)) {
        const aw_gla_desc ds = gla_desc(f, T);
        st = gla_backward(dq, dk, dv, dg, work, dout, q, k, v, g, &ds);
    } else {
        const aw_gated_desc ds = gated_desc(f, T);
        st = gated_linear_backward(dq, dk, dv, dg, work, dout, q, k, v, g, &ds);
    }
    if (st) return st;
    for (size_t i = 0; i < T * G; i++) dg[i] *= -aw_sigmoidf(z[i]); // dz = dg dg/dz, g = -softplus(z)
    attn_form_project_backward(dx, f->grads, f->grads ? f->grads + G * C : NULL, dg, x, f->params, T, C, G);
    return AW_OK;
}

// the state S (dh, dvh) per head, whatever the length
static size_t state_floats(const aw_attn_form *f) {
    return per_channel(f) ? gla_state_floats(f->C, f->C, f->H)
                                                     : gated_linear_state_floats(f->C, f->C, f->H);
}

// state: S, then the step's gates (G) and z (G)
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    return aw_size_add(state_floats(f), 2 * gate_width(f));
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)L;
    const size_t S = state_floats(f);
    if (pos == 0) memset(state, 0, S * sizeof(float));
    float *z = state + S, *g = z + gate_width(f);
    gates(z, g, f, x, 1);
    const float scale = 1.0f / sqrtf((float)(f->C / f->H));
    if (per_channel(f)) gla_step(out, state, q, k, v, g, f->C, f->C, f->H, scale);
    else gated_linear_step(out, state, q, k, v, g, f->C, f->C, f->H, scale);
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
    .variant = GATE_PER_HEAD,
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS,
    .options = GATED_OPTIONS,
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
    .variant = GATE_PER_CHANNEL,
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS,
    .options = GLA_OPTIONS,
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
