// form_local.c: local (sliding-window) attention and strided sparse attention (the band plus
// every `stride`-th key) as registry rows (docs/attention-forms.md section 4). A decoder's
// self-attention sees the last `window` positions, an encoder's window / 2 on each side; cross-attention stays softmax (a band across two sequences of
// different lengths has no meaning). The backward recomputes each row's probabilities, and
// generation keeps a KV cache and attends with the same pattern, one query row at a time.
#include "forms.h"

#include "../attention/local_attention.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <string.h>

static aw_local_attention_desc desc(const aw_attn_form *f, size_t T, size_t Tk) {
    return (aw_local_attention_desc){T, Tk, f->C, f->C, f->H, f->window, f->causal, 1.0f / sqrtf((float)(f->C / f->H)),
                                     f->stride, 0};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)f, (void)T, (void)Tk;
    return 0;
}

static int forward(aw_attn_form *f, float *out, float *att, const float *x, const float *q, const float *k,
                   const float *v, size_t T, size_t Tk) {
    (void)x;
    const aw_local_attention_desc ds = desc(f, T, Tk);
    return local_attention_forward(out, att, q, k, v, &ds);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *att, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)work, (void)att, (void)x;
    const aw_local_attention_desc ds = desc(f, T, Tk);
    return local_attention_backward(dq, dk, dv, dout, q, k, v, &ds);
}

// state: the KV cache, keys (L, C) then values (L, C).
static size_t step_floats(const aw_attn_form *f, size_t L) { return aw_size_mul3(2, L, f->C); }

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)x;
    const size_t C = f->C;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past maxLen = %zu", pos, L);
    float *kc = state, *vc = state + L * C;
    memcpy(kc + pos * C, k, C * sizeof(float));
    memcpy(vc + pos * C, v, C * sizeof(float));
    // one query row at position pos over the keys so far: the same pattern as the full forward
    aw_local_attention_desc ds = desc(f, 1, pos + 1);
    ds.q0 = pos;
    return local_attention_forward(out, NULL, q, kc, vc, &ds);
}

const aw_form AW_FORM_STRIDED_DESC = {
    .name = "strided",
    .family = "local",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK,
    .options = AW_OPT_WINDOW | AW_OPT_STRIDE,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};

const aw_form AW_FORM_LOCAL_DESC = {
    .name = "local",
    .family = "local",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK,
    .options = AW_OPT_WINDOW,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};
