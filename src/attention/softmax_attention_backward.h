// softmax_attention_backward.h: the gradient of O = softmax(Q K^T s + M) V per head, with the
// same desc (sizes, causal, key_mask, scale) as the forward in softmax_attention.h.
#ifndef AW_SOFTMAX_ATTENTION_BACKWARD_H
#define AW_SOFTMAX_ATTENTION_BACKWARD_H

#include "softmax_attention.h"

// Accumulates (+=) dq (n, d), dk (m, d), dv (m, dv) from dout (n, dv), given the forward's
// probabilities weights (heads, n, m) (softmax_attention_forward_weights). Masked entries have
// probability 0 and so get no gradient. scratch: n * m floats. Returns an aw_status. It reads the
// window through the weights but not softcap or sinks' gradients: the flash and reference
// backwards below handle every switch of the desc.
int softmax_attention_backward(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                               const float *weights, const float *q, const float *k, const float *v,
                               const aw_softmax_attention_desc *desc);
// The same gradients without the probabilities: recomputed block by block from the forward's
// output out (n, dv) and log-sum-exp lse (heads, n) (softmax_attention_forward_lse), with
// scratch of softmax_attention_backward_flash_floats() floats whatever n and m are.
size_t softmax_attention_backward_flash_floats(void);
int softmax_attention_backward_flash(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                                     const float *out, const float *lse, const float *q, const float *k,
                                     const float *v, const aw_softmax_attention_desc *desc);
// Naive reference: recomputes the probabilities in double, no weights or scratch needed.
int softmax_attention_backward_ref(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                   const float *k, const float *v, const aw_softmax_attention_desc *desc);

#endif
