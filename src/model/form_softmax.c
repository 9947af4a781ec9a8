// form_softmax.c: scaled dot-product attention as a registry row (docs/attention-forms.md
// section 1). The forward saves each row's log-sum-exp and its output, and the backward
// recomputes the probabilities block by block (FlashAttention-2): no (H, T, Tk) matrix is kept
// for training. Generation keeps a KV cache of the positions so far.
#include "forms.h"

#include "../attention/softmax_attention.h"
#include "../attention/softmax_attention_backward.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <string.h>

static aw_softmax_attention_desc desc(const aw_attn_form *f, size_t T, size_t Tk, int causal) {
    return (aw_softmax_attention_desc){T, Tk, f->C, f->C, f->H, causal, 1.0f / sqrtf((float)(f->C / f->H)), NULL,
                                       f->score_slopes, 0};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)f, (void)T, (void)Tk;
    return softmax_attention_backward_flash_floats(); // whatever T and Tk are
}

// saved: each row's log-sum-exp (H, T), then the output O (T, C): the backward recomputes the
// probabilities block by block from them (FlashAttention-2), so training memory grows like n.
static size_t saved_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    return aw_size_mul(T, f->H + f->C);
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)x;
    const aw_softmax_attention_desc ds = desc(f, T, Tk, f->causal);
    if (!saved) return softmax_attention_forward(out, att, q, k, v, &ds);
    float *lse = saved, *o = saved + f->H * T;
    int st = softmax_attention_forward_lse(out, lse, q, k, v, &ds);
    if (!st) memcpy(o, out, T * f->C * sizeof(float));
    if (!st && att) { // the weights for display too: the same rows, built explicitly (into o, then restored)
        st = softmax_attention_forward(o, att, q, k, v, &ds);
        memcpy(o, out, T * f->C * sizeof(float));
    }
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)x;
    const aw_softmax_attention_desc ds = desc(f, T, Tk, f->causal);
    return softmax_attention_backward_flash(dq, dk, dv, work, dout, saved + f->H * T, saved, q, k, v, &ds);
}

// state: the KV cache, keys (L, C) then values (L, C).
static size_t step_floats(const aw_attn_form *f, size_t L) { return aw_size_mul3(2, L, f->C); }

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q,
                const float *k, const float *v, size_t pos) {
    (void)x;
    const size_t C = f->C;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past the KV cache's %zu", pos, L);
    float *kc = state, *vc = state + L * C; // (L, C) each
    memcpy(kc + pos * C, k, C * sizeof(float));
    memcpy(vc + pos * C, v, C * sizeof(float));
    // the cache holds positions 0..pos only, so no causal mask is needed
    aw_softmax_attention_desc ds = desc(f, 1, pos + 1, 0);
    ds.q_offset = pos; // the score bias: the query is at position pos
    return softmax_attention_forward(out, NULL, q, kc, vc, &ds);
}

// The KV cache of positions 0..T-1 at once: the rows as step() stores them.
static void prefill(aw_attn_form *f, float *state, size_t L, const float *k, const float *v, size_t T) {
    memcpy(state, k, T * f->C * sizeof(float));
    memcpy(state + L * f->C, v, T * f->C * sizeof(float));
}

const aw_form AW_FORM_SOFTMAX_DESC = {
    .name = "softmax",
    .words = {
        .label = "Softmax (scaled dot-product)",
        .formula = "A = softmax(Q Kᵀ · s + M)\n"
            "s = 1/√d_head\n"
            "M = 0 where allowed, −∞ where masked\n"
            "    (causal: masked where j > i)\n"
            "O = A V\n"
            "\n"
            "Time O(n² d). Without weights the fast\n"
            "path streams over the keys (online\n"
            "softmax) and never stores A.",
        .summary = "Every query is compared with every key by a dot product, and a softmax turns the scores of a "
            "row into weights that sum to 1: each position reads a weighted average of the values. It is "
            "the most expressive form here (it can look a token up by its content, sharply), and it costs "
            "time n² in the sequence length: the choice when n is a few thousand or less.",
        .cost = "O(n² d)",
        .paper = "Attention Is All You Need. Vaswani et al., 2017.",
        .url = "https://arxiv.org/abs/1706.03762",
        .year = 2017,
        .signed_scores = 0,
    },
    .family = "softmax",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_CROSS | AW_FORM_SCORE_BIAS,
    .work_floats = work_floats,
    .saved_floats = saved_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
    .prefill = prefill,
};
