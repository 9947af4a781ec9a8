// form_linformer.c: Linformer (docs/attention-forms.md section 4) as a registry row. Each sublayer
// owns E and F (k, maxLen), trained with the model, shared by its heads. It has no causal form,
// so it serves an encoder-decoder's encoder (and any non-causal use); the decoder's
// self-attention and the cross-attention are softmax. The backward recomputes the forward.
#include "form_layer.h"
#include "forms.h"

#include "../attention/linformer.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const aw_form_option OPTIONS[] = {
    {"k", AW_OPTION_INT, 1, 4096, NULL, "8", "k", "the rows E and F project the n keys and values down to"}};

typedef struct {
    size_t k; // projected rows
} linformer_own;

#define KROWS(f) (((const linformer_own *)(f)->own)->k)

static int init(aw_attn_form *f, const aw_form_setup *su) {
    linformer_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->k = (size_t)aw_option_int(f->form, su->opts, "k");
    if (o->k == 0) return aw_fail(AW_ERR_ARG, "attentionOptions.k (Linformer's projected rows) must be at least 1");
    const size_t n = aw_size_mul3(2, o->k, f->L);
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    // as nn.Linear(maxLen, k) initialises its weight: uniform in +-1/sqrt(maxLen)
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0x11F0u);
    const float bound = 1.0f / sqrtf((float)f->L);
    for (size_t i = 0; i < n; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    static const char *const names[2] = {"E", "F"};
    for (size_t i = 0; i < 2 && i < cap; i++) {
        memset(&out[i], 0, sizeof out[i]);
        strcpy(out[i].name, names[i]);
        out[i].size = KROWS(f) * f->L, out[i].dims[0] = KROWS(f), out[i].dims[1] = f->L, out[i].rank = 2;
        out[i].trainable = 1;
    }
    return 2;
}

static void bind(aw_attn_form *f, float *params, float *grads) { attn_form_bind_params(f, params, grads, 2 * KROWS(f) * f->L); }

static aw_linformer_desc desc(const aw_attn_form *f, size_t T) {
    return (aw_linformer_desc){T, f->C, f->C, f->H, KROWS(f), f->L, 1.0f / sqrtf((float)(f->C / f->H))};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)f, (void)T, (void)Tk;
    return 0; // linformer_backward plans its own
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)x, (void)saved;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "linformer is self-attention only (%zu queries, %zu keys)", T, Tk);
    const aw_linformer_desc ds = desc(f, T);
    return linformer_forward(out, att, q, k, v, f->params, f->params + KROWS(f) * f->L, &ds);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)work, (void)saved, (void)x, (void)Tk;
    const aw_linformer_desc ds = desc(f, T);
    const size_t kl = KROWS(f) * f->L;
    return linformer_backward(dq, dk, dv, f->grads, f->grads ? f->grads + kl : NULL, dout, q, k, v, f->params,
                              f->params + kl, &ds);
}

const aw_form AW_FORM_LINFORMER_DESC = {
    .name = "linformer",
    .words = {
        .label = "Linformer (k = 8 projected rows)",
        .formula = "K' = E K,  V' = F V\n"
            "E, F: k × L learned  (here k = 8)\n"
            "A = softmax(Q K'ᵀ · s)     (n × k)\n"
            "O = A V'\n"
            "\n"
            "Shown: |A F|, the implied n × n matrix.\n"
            "Time O(n k d): linear in n. No causal\n"
            "form: each row of E K mixes every\n"
            "position, later ones included.",
        .summary = "Projects the n keys and values along the sequence to k rows with learned matrices E and F, "
            "then runs softmax attention over those k rows: time grows like n k. It fixes a longest length "
            "L when created, and because every projected row mixes all positions, later ones included, it "
            "has no causal form: it serves encoders (in a model, an encoder-decoder's encoder, whose "
            "decoder's self-attention is softmax).",
        .cost = "O(n k d)",
        .paper = "Linformer: Self-Attention with Linear Complexity. Wang et al., 2020.",
        .url = "https://arxiv.org/abs/2006.04768",
        .year = 2020,
        .signed_scores = 1,
    },
    .family = "linformer",
    .cross = "softmax",
    .decoder = "softmax",
    .why_not_causal = LINFORMER_NO_CAUSAL,
    .flags = AW_FORM_NONCAUSAL | AW_FORM_USES_QK | AW_FORM_PARAMS | AW_FORM_FIXED_LENGTH,
    .options = OPTIONS,
    .n_options = 1,
    .init = init,
    .release = release,
    .param_group = "linformer",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
};
