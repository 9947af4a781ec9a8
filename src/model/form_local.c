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
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t window, stride; // stride 0: local attention (the band only)
} local_own;

#define WINDOW                                                                                                     \
    {"window", AW_OPTION_INT, 1, 4096, NULL, "8", "window",                                                        \
     "the band's width w: a decoder sees the last w positions, an encoder w / 2 on each side"}
static const aw_form_option LOCAL_OPTIONS[] = {WINDOW};
static const aw_form_option STRIDED_OPTIONS[] = {
    WINDOW, {"stride", AW_OPTION_INT, 1, 4096, NULL, "8", "stride", "every stride-th key as well as the band"}};

static int init(aw_attn_form *f, const aw_form_setup *su) {
    local_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    o->window = (size_t)aw_option_int(f->form, su->opts, "window");
    o->stride = (size_t)aw_option_int(f->form, su->opts, "stride");
    f->own = o;
    return AW_OK;
}

static void release(aw_attn_form *f) { free(f->own); }

static aw_local_attention_desc desc(const aw_attn_form *f, size_t T, size_t Tk) {
    const local_own *o = f->own;
    return (aw_local_attention_desc){T, Tk, f->C, f->C, f->H, o->window, f->causal, 1.0f / sqrtf((float)(f->C / f->H)),
                                     o->stride, 0};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)f, (void)T, (void)Tk;
    return 0;
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)x, (void)saved;
    const aw_local_attention_desc ds = desc(f, T, Tk);
    return local_attention_forward(out, att, q, k, v, &ds);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)work, (void)saved, (void)x;
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
    .words = {
        .label = "Strided sparse (w = 4, every 3rd key)",
        .formula = "A = softmax(Q Kᵀ · s + M)\n"
            "M = 0 on the band (the last w keys)\n"
            "    and on every key j with |i − j| a\n"
            "    multiple of the stride, −∞ elsewhere\n"
            "O = A V     (here w = 4, stride 3)\n"
            "\n"
            "Time O(n (w + n/stride) d): the Sparse\n"
            "Transformer's local + strided pattern.",
        .summary = "The local band plus every s-th earlier key: one head looks near, and reaches far back in "
            "steps of s, so in two layers any position can reach any other. It is the Sparse Transformer's "
            "pattern for long sequences (images, music), where a full n² softmax is too costly and a band "
            "alone too short-sighted. With a fixed stride each row still has about n/s keys, so its time "
            "grows like n² / s.",
        .cost = "O(n (w + n/s) d)",
        .paper = "Generating Long Sequences with Sparse Transformers. Child et al., 2019.",
        .url = "https://arxiv.org/abs/1904.10509",
        .year = 2019,
        .signed_scores = 0,
    },
    .family = "local",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK,
    .options = STRIDED_OPTIONS,
    .n_options = 2,
    .init = init,
    .release = release,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};

const aw_form AW_FORM_LOCAL_DESC = {
    .name = "local",
    .words = {
        .label = "Local (sliding window, w = 4)",
        .formula = "A = softmax(Q Kᵀ · s + M_w)\n"
            "M_w = 0 inside the band, −∞ outside:\n"
            "  causal: i − w < j ≤ i  (last w keys)\n"
            "  centred: |i − j| ≤ w / 2\n"
            "O = A V        (here w = 4)\n"
            "\n"
            "Time O(n w d): linear in n for a\n"
            "fixed window (Longformer's local band).",
        .summary = "Softmax attention where each query sees only a band of nearby keys: the last w positions in a "
            "decoder, w / 2 on each side in an encoder. Time grows like n w instead of n², and much of "
            "what text needs is near; a key further away than the window is out of reach in one layer "
            "(stacked layers widen the view). Longformer and the Sparse Transformer combine such a band "
            "with a few global or strided positions.",
        .cost = "O(n w d)",
        .paper = "Longformer: The Long-Document Transformer. Beltagy et al., 2020.",
        .url = "https://arxiv.org/abs/2004.05150",
        .year = 2020,
        .signed_scores = 0,
    },
    .family = "local",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK,
    .options = LOCAL_OPTIONS,
    .n_options = 1,
    .init = init,
    .release = release,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};
