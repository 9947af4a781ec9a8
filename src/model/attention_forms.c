// attention_forms.c: the pluggable core of an attention sublayer. A sublayer projects its input
// to Q, K, V (transformer.c); the form turns them into the attention output, one sequence at a
// time. Softmax keeps its probabilities for the backward; linear attention recomputes what it
// needs; a synthesizer keeps only the last sequence's activations, so its backward re-runs the
// forward for the sequence first.
#include "transformer.h"

#include "../attention/softmax_attention.h"
#include "../attention/softmax_attention_backward.h"
#include "../kernels/status.h"

#include <math.h>
#include <string.h>

int attn_form_init(aw_attn_form *f, const aw_model_config *cfg, int causal, int self, uint32_t seed) {
    memset(f, 0, sizeof *f);
    // a synthesizer makes square position-to-position logits: it replaces self-attention only;
    // cross-attention over the encoder then stays softmax
    f->form = (cfg->attention == AW_FORM_SYNTHESIZER && !self) ? AW_FORM_SOFTMAX : cfg->attention;
    f->causal = causal;
    f->feature = cfg->feature;
    f->uses_qk = 1;
    if (f->form == AW_FORM_LINEAR && causal && cfg->feature == AW_LINEAR_EFFICIENT) return AW_ERR_ARG;
    if (f->form == AW_FORM_SYNTHESIZER) {
        aw_synthesizer_config sc = cfg->synth;
        sc.d = (size_t)cfg->d_model, sc.max_len = (size_t)cfg->max_len, sc.heads = (size_t)cfg->heads;
        sc.seed = seed;
        f->uses_qk = 0;
        if (sc.variant == AW_SYNTH_MIXTURE)
            for (size_t c = 0; c < sc.n_components; c++) f->uses_qk |= sc.components[c] == AW_SYNTH_DOT;
        return synthesizer_create(&f->synth, &sc);
    }
    return AW_OK;
}

void attn_form_free(aw_attn_form *f) {
    synthesizer_destroy(f->synth);
    f->synth = NULL;
}

static aw_softmax_attention_desc softmax_desc(const aw_attn_form *f, size_t T, size_t Tk, size_t C, size_t H) {
    return (aw_softmax_attention_desc){T, Tk, C, C, H, f->causal, 1.0f / sqrtf((float)(C / H)), NULL};
}

static aw_linear_attention_desc linear_desc(const aw_attn_form *f, size_t T, size_t Tk, size_t C, size_t H) {
    return (aw_linear_attention_desc){T, Tk, C, C, H, f->feature, f->causal, AW_LINEAR_PARALLEL};
}

int attn_form_forward(aw_attn_form *f, float *out, float *att, const float *x, const float *q, const float *k,
                      const float *v, size_t T, size_t Tk, size_t C, size_t H) {
    switch (f->form) {
    case AW_FORM_SOFTMAX: {
        aw_softmax_attention_desc ds = softmax_desc(f, T, Tk, C, H);
        return att ? softmax_attention_forward_weights(out, att, q, k, v, &ds)
                   : softmax_attention_forward(out, NULL, q, k, v, &ds);
    }
    case AW_FORM_LINEAR: {
        aw_linear_attention_desc ds = linear_desc(f, T, Tk, C, H);
        return linear_attention_forward(out, att, q, k, v, &ds);
    }
    case AW_FORM_SYNTHESIZER:
        if (T != Tk) return AW_ERR_ARG;
        return synthesizer_forward(f->synth, out, att, x, v, f->uses_qk ? q : NULL, f->uses_qk ? k : NULL, T, C,
                                   C, f->causal);
    default: return AW_ERR_ARG;
    }
}

int attn_form_backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *scratch,
                       const float *dout, const float *att, const float *x, const float *q, const float *k,
                       const float *v, size_t T, size_t Tk, size_t C, size_t H) {
    switch (f->form) {
    case AW_FORM_SOFTMAX: {
        aw_softmax_attention_desc ds = softmax_desc(f, T, Tk, C, H);
        return softmax_attention_backward(dq, dk, dv, scratch, dout, att, q, k, v, &ds);
    }
    case AW_FORM_LINEAR: {
        aw_linear_attention_desc ds = linear_desc(f, T, Tk, C, H);
        return linear_attention_backward(dq, dk, dv, dout, q, k, v, &ds);
    }
    case AW_FORM_SYNTHESIZER: {
        const float *qq = f->uses_qk ? q : NULL, *kk = f->uses_qk ? k : NULL;
        // the layer saved only the last sequence of the batch: redo this one's forward
        int st = synthesizer_forward(f->synth, scratch, NULL, x, v, qq, kk, T, C, C, f->causal);
        if (st) return st;
        return synthesizer_backward(f->synth, dx, dv, f->uses_qk ? dq : NULL, f->uses_qk ? dk : NULL, dout, x, v,
                                    qq, kk);
    }
    default: return AW_ERR_ARG;
    }
}
