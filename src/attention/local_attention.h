// local_attention.h: local (sliding-window) attention, softmax attention restricted to a band of
// keys around each query, and strided sparse attention, the band plus every s-th key
// (docs/attention-forms.md section 4; Longformer's local band, the Sparse Transformer's local and
// strided patterns). Per head, for query i (at position q0 + i):
//   causal:  keys j with i - w < j <= i                 (the last w positions)
//   centred: keys j with |i - j| <= w / 2                (w / 2 on each side)
//   stride s > 0 adds every key j with |i - j| a multiple of s (causal: j <= i as well)
//   O_i = sum_j softmax_j(q_i . k_j * scale) v_j over those keys (j < m).
// Every query sees at least itself when i < m, so a row is all zero only when no key is in
// range (i >= m + w for causal rows of a cross-attention). Cost O(n w d), memory O(d): no n x m
// buffer exists unless the weights are asked for.
//
// Shapes as softmax_attention.h: q (n, d), k (m, d), v (m, dv), out (n, dv), weights (heads, n, m)
// zero outside the band; heads split the columns.
#ifndef AW_LOCAL_ATTENTION_H
#define AW_LOCAL_ATTENTION_H

#include <stddef.h>

typedef struct {
    size_t n, m, d, dv, heads; // d % heads == 0, dv % heads == 0
    size_t window;             // w >= 1
    int causal;                // 1: the last w positions; 0: centred, w / 2 on each side
    float scale;               // usually 1 / sqrt(d / heads)
    size_t stride;             // s: 0 = the band alone; s > 0 adds every s-th key
    size_t q0;                 // the position of query row 0 (generation: one row at position pos)
} aw_local_attention_desc;

// The band of query row i: keys [*lo, *hi) (empty when *lo >= *hi).
void local_attention_band(const aw_local_attention_desc *ds, size_t i, size_t *lo, size_t *hi);
// 1 when query row i may use key j (the band, or the strided pattern).
int local_attention_allowed(const aw_local_attention_desc *ds, size_t i, size_t j);
// Checks sizes; AW_OK or AW_ERR_ARG with a message.
int local_attention_check(const aw_local_attention_desc *ds);
// Fast path: per row, the band's logits, a stable softmax and the weighted sum of v.
int local_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                            const aw_local_attention_desc *ds);
// Naive reference: every logit over all m keys with the band as a mask, in double.
int local_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                const aw_local_attention_desc *ds);
// Backward: accumulates (+=) dq (n, d), dk (m, d), dv (m, dv) from dout (n, dv); recomputes each
// row's probabilities (O(n w d), no saved weights).
int local_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                             const float *v, const aw_local_attention_desc *ds);

#endif
