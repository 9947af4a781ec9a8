// quant_model.c: a quantized model at run time (quantize.c makes one): model_linear multiplies by a
// matrix in float32 or in a quantized format, model_classifier the classifier, model_weight_bytes
// and model_qmat report them, quant_bind points the weights at them, quant_free frees them. Split from quantize.c so that the forward
// (transformer_forward.c) reads quantized matrices without depending on the code that makes them.
#include "quant_model.h"

#include "config.h"

#include "../kernels/size.h"
#include "../kernels/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void quant_free(aw_quant *q) {
    if (!q) return;
    free(q->mem);
    free(q->work);
    free(q);
}

void quant_bind(aw_model *m) {
    for (size_t i = 0; m->quant && i < m->quant->count; i++) *m->quant->slot[i] = &m->quant->mats[i];
}

int model_refuse_quantized(const aw_model *m, const char *what) {
    if (m->quant->format == AW_QF_BF16)
        return aw_fail(AW_ERR_STATE, "%s needs the float32 weights, and this model keeps its matrices in bf16 (loaded "
                                     "with dtype: 'bf16': 16-bit values, no float32 copies): load it again with "
                                     "dtype: 'fp32' for that", what);
    return aw_fail(AW_ERR_STATE, "%s needs the float32 weights, and this model was quantized to %s (its matrices are "
                                 "%d-bit integers with scales; their float32 copies were freed): load it again "
                                 "without quantize for that", what, AW_QFORMATS[m->quant->format].name,
                   AW_QFORMATS[m->quant->format].bits);
}

void model_linear(const aw_model *m, float *out, const float *x, const float *w, const aw_qmat *q, const float *b,
                  size_t N, size_t IC, size_t OC) {
    if (q && q->format == AW_QF_BF16) linear_forward_bf16(out, x, (const uint16_t *)q->q, b, N, IC, OC);
    else if (q) aw_qlinear(out, x, q, b, N, m->quant->work);
    else linear_forward(out, x, w, b, N, IC, OC);
}

void model_classifier(const aw_model *m, float *logits, const float *x, size_t N) {
    const size_t C = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab;
    const aw_qmat *q = m->w.q_out;
    if (q && q->format == AW_QF_BF16 && m->cfg.tie) tied_forward_bf16(logits, x, (const uint16_t *)q->q, m->w.b_out, N, C, V);
    else if (q && q->format == AW_QF_BF16) linear_forward_bf16(logits, x, (const uint16_t *)q->q, m->w.b_out, N, C, V);
    else if (q) aw_qlinear(logits, x, q, m->w.b_out, N, m->quant->work);
    else if (m->cfg.tie) tied_forward(logits, x, m->w.wte, m->w.b_out, N, C, V);
    else linear_forward(logits, x, m->w.w_out, m->w.b_out, N, C, V);
}

void model_weight_bytes(const aw_model *m, double *out) {
    const double arena = (double)m->n_params * sizeof(float);
    out[0] = m->quant ? m->quant->fp32_bytes : arena;
    out[1] = arena + (m->quant ? (double)m->quant->bytes : 0.0);
    out[2] = m->quant ? m->quant->format : AW_QF_NONE;
    out[3] = m->quant ? (double)m->quant->group : 0.0;
}

const char *model_qmat(aw_model *m, size_t i, aw_qmat **out) {
    if (!m->quant || i >= m->quant->count) return NULL;
    *out = &m->quant->mats[i];
    return m->quant->names[i];
}
