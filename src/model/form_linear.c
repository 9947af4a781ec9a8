// form_linear.c: linear attention's four feature maps as registry rows (docs/attention-forms.md
// section 2). The backward recomputes what it needs (nothing is saved, so training stays O(n)
// in memory); generation keeps the constant-size recurrent state (S, z) per head.
#include "forms.h"

#include "../attention/linear_attention.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

static aw_linear_attention_desc desc(const aw_attn_form *f, size_t T, size_t Tk) {
    return (aw_linear_attention_desc){T, Tk, f->C, f->C, f->H, f->form->variant, f->causal, AW_LINEAR_PARALLEL};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)f, (void)T, (void)Tk;
    return 0; // linear_attention_backward plans its own O((T + Tk) d) workspace
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)x, (void)saved;
    const aw_linear_attention_desc ds = desc(f, T, Tk);
    return linear_attention_forward(out, att, q, k, v, &ds);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)work, (void)saved, (void)x;
    const aw_linear_attention_desc ds = desc(f, T, Tk);
    return linear_attention_backward(dq, dk, dv, dout, q, k, v, &ds);
}

// state: an aw_linear_state laid out in place, rounded up to whole 16-byte blocks
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    const size_t bytes = linear_state_bytes(f->C, f->C, f->H, f->form->variant);
    return bytes == 0 || bytes == (size_t)-1 ? (size_t)-1 : (bytes + 15) / 16 * 4;
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)x, (void)L;
    // position 0 starts a new sequence: lay out a fresh (zero) state
    aw_linear_state *st = pos == 0 ? linear_state_place(state, f->C, f->C, f->H, f->form->variant)
                                   : (aw_linear_state *)(void *)state;
    if (!st) return aw_fail(AW_ERR_ARG, "attention \"%s\" has no recurrent state", f->form->name);
    return linear_state_step(out, st, q, k, v);
}

#define LINEAR_FORM(NAME, FEATURE, FLAGS, ...)                                                                           \
    {                                                                                                              \
        .name = NAME, .family = "linear", .cross = NAME, .flags = (FLAGS) | AW_FORM_NONCAUSAL | AW_FORM_USES_QK |    \
                                                                  AW_FORM_CROSS,                                   \
        .variant = FEATURE, .work_floats = work_floats, .forward = forward, .backward = backward,                   \
        .step_floats = ((FLAGS) & AW_FORM_STEP) ? step_floats : NULL, .step = ((FLAGS) & AW_FORM_STEP) ? step : NULL, \
        .words = __VA_ARGS__                                                                                       \
    }

const aw_form AW_FORM_LINEAR_ELU1_DESC = LINEAR_FORM("linear:elu+1", AW_LINEAR_ELU1, AW_FORM_CAUSAL | AW_FORM_STEP,
    {
        .label = "Linear, φ = elu + 1",
        .formula = "φ(x) = elu(x) + 1\n"
            "     = x + 1 for x > 0, eˣ otherwise\n"
            "A_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j')\n"
            "\n"
            "O_i = φ(q_i) S / (φ(q_i)·z)\n"
            "S = Σ_j φ(k_j)ᵀ v_j    (d × dv)\n"
            "z = Σ_j φ(k_j)\n"
            "\n"
            "Time O(n d dv): linear in n. Causal:\n"
            "S_i, z_i are running sums (an RNN).",
        .summary = "Replaces the softmax of q·k by φ(q)·φ(k) with φ(x) = elu(x) + 1, so the sum over keys can be "
            "done once, before any query looks: time grows like n, and a causal model runs as an RNN with "
            "a fixed-size state. It wins for long sequences and streaming generation; its weights are "
            "flatter than softmax's, so exact lookups are harder.",
        .cost = "O(n d dv)",
        .paper = "Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention. Katharopoulos "
            "et al., 2020.",
        .url = "https://arxiv.org/abs/2006.16236",
        .year = 2020,
        .signed_scores = 0,
    });
const aw_form AW_FORM_LINEAR_RELU_DESC = LINEAR_FORM("linear:relu", AW_LINEAR_RELU, AW_FORM_CAUSAL | AW_FORM_STEP,
    {
        .label = "Linear, φ = relu",
        .formula = "φ(x) = max(x, 0)\n"
            "A_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j')\n"
            "\n"
            "O_i = φ(q_i) S / (φ(q_i)·z)\n"
            "S = Σ_j φ(k_j)ᵀ v_j    (d × dv)\n"
            "z = Σ_j φ(k_j)\n"
            "\n"
            "A row whose similarities are all zero\n"
            "stays all zero. Time O(n d dv).",
        .summary = "Linear attention with φ(x) = relu(x): the same linear time and constant-size state as elu + "
            "1, with a feature map that is exactly zero for negative inputs, so some pairs get no weight "
            "at all. Cheap and simple; it can leave a row with nothing to attend to (an all-zero row).",
        .cost = "O(n d dv)",
        .paper = "Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention. Katharopoulos "
            "et al., 2020.",
        .url = "https://arxiv.org/abs/2006.16236",
        .year = 2020,
        .signed_scores = 0,
    });
// efficient attention normalises K over every position, future ones included: no causal form
const aw_form AW_FORM_LINEAR_EFFICIENT_DESC = LINEAR_FORM("linear:efficient", AW_LINEAR_EFFICIENT, 0,
    {
        .label = "Linear, efficient attention",
        .formula = "A = softmax₂(Q) · softmax₁(K)ᵀ\n"
            "softmax₂: Q over its feature axis\n"
            "softmax₁: K over the positions\n"
            "\n"
            "O = softmax₂(Q) (softmax₁(K)ᵀ V)\n"
            "\n"
            "Rows sum to 1 by construction.\n"
            "No causal form. Time O(n d dv).",
        .summary = "Normalises queries over their features and keys over the positions, then computes "
            "softmax₁(K)ᵀ V first: linear time with no approximation of a kernel, and rows that sum to 1 "
            "by construction. It suits vision and encoders, where every position sees every other; it has "
            "no causal form, so it cannot drive a left-to-right language model.",
        .cost = "O(n d dv)",
        .paper = "Efficient Attention: Attention with Linear Complexities. Shen et al., 2018.",
        .url = "https://arxiv.org/abs/1812.01243",
        .year = 2018,
        .signed_scores = 0,
    });
const aw_form AW_FORM_LINEAR_TAYLOR_DESC = LINEAR_FORM("linear:taylor", AW_LINEAR_TAYLOR, AW_FORM_CAUSAL | AW_FORM_STEP,
    {
        .label = "Linear, Taylor (1 + q̂·k̂)",
        .formula = "sim(q, k) = 1 + q̂·k̂     (eˣ ≈ 1 + x)\n"
            "q̂ = q/|q|,  k̂ = k/|k|\n"
            "A_ij = sim(q_i, k_j) / Σ_j' sim(q_i, k_j')\n"
            "\n"
            "O_i = (Σ_j v_j + q̂_i S) / (m + q̂_i·Σ_j k̂_j)\n"
            "S = Σ_j k̂_jᵀ v_j\n"
            "\n"
            "Time O(n d dv): linear in n.",
        .summary = "Approximates exp(q·k) by its first-order Taylor term 1 + q̂·k̂ on unit vectors, which stays "
            "non-negative, so linear attention applies (the kernel view of Katharopoulos et al.). Linear "
            "in n like the other linear forms; its weights vary little across keys.",
        .cost = "O(n d dv)",
        .paper = "Linear attention: must attention have a softmax?. Su Jianlin, 2020.",
        .url = "https://kexue.fm/archives/7546",
        .year = 2020,
        .signed_scores = 0,
    });
