// softmax_attention.h: scaled dot-product attention, O = softmax(Q K^T s + M) V per head.
// Shapes: q (n, d), k (m, d), v (m, dv), out (n, dv), weights (heads, n, m); heads split the
// columns of q, k, v into equal blocks. key_mask (m) is 1 = attend, 0 = never; NULL = all 1.
// causal: query i may use keys j <= i. A query with no allowed key gets a zero output row
// (and a zero weights row). Returns an aw_status.
#ifndef AW_SOFTMAX_ATTENTION_H
#define AW_SOFTMAX_ATTENTION_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t n, m, d, dv, heads; // sizes; d % heads == 0, dv % heads == 0
    int causal;                // 1: j <= i only
    float scale;               // logit scale, usually 1 / sqrt(d / heads)
    const uint8_t *key_mask;   // (m) or NULL
    const float *slopes;       // (heads) a score bias by distance: each logit of head h gets
                               // -slopes[h] |q_offset + i - j| added after the scale (a positional
                               // encoding's score_bias, e.g. ALiBi's, src/model/positional.h); NULL: none
    size_t q_offset;           // the position of query row 0 (for the bias; a decoding step's is m - 1)
    // 2025's switches (docs/attention-forms.md section 1b); all 0 / NULL: plain attention
    size_t window;             // > 0: query row i sees keys j > q_offset + i - window only (a sliding
                               // window: with causal, the last `window` keys); 0: every key
    float softcap;             // > 0: each scaled logit s becomes softcap tanh(s / softcap) before the bias
                               // and the mask (Gemma 2); 0: none
    const float *sinks;        // (heads) a learned logit per head: one more column of every row's softmax,
                               // with no value (gpt-oss); NULL: none
    float *dsinks;             // (heads) backward only: the sinks' gradients accumulate (+=) here, or NULL
} aw_softmax_attention_desc;

// The logit s (scaled, before bias and mask) soft-capped: c tanh(s / c), or s when c = 0.
static inline float aw_softcap(float s, float c) { return c > 0.0f ? c * tanhf(s / c) : s; }

// The score bias of head h for query row i and key j: -slopes[h] |distance| (0 without slopes).
static inline float aw_score_bias(const aw_softmax_attention_desc *ds, size_t h, size_t i, size_t j) {
    if (!ds->slopes) return 0.0f;
    const size_t qi = ds->q_offset + i;
    return -ds->slopes[h] * (float)(qi > j ? qi - j : j - qi);
}

// Dispatches: weights != NULL builds each head's n x m matrix into weights; weights == NULL
// runs the streaming path, which keeps O(n d + m d) memory whatever n and m are.
int softmax_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                              const aw_softmax_attention_desc *desc);
// Tiled online softmax (running max and sum per row, rescaling the partial output).
int softmax_attention_forward_streaming(float *out, const float *q, const float *k, const float *v,
                                        const aw_softmax_attention_desc *desc);
// Explicit per-head score matrix, row softmax, then A V.
int softmax_attention_forward_weights(float *out, float *weights, const float *q, const float *k,
                                      const float *v, const aw_softmax_attention_desc *desc);
// The streaming path that also writes each row's natural log-sum-exp of its scaled, masked
// logits into lse (heads, n) (-inf for a row with no allowed key): what the backward needs to
// recompute the probabilities block by block (softmax_attention_backward_flash).
int softmax_attention_forward_lse(float *out, float *lse, const float *q, const float *k, const float *v,
                                  const aw_softmax_attention_desc *desc);
// 1 when float32 could overflow on these inputs (the paths then compute in double).
int softmax_attention_may_overflow(const float *q, const float *k, const float *v, const aw_softmax_attention_desc *desc);
// Naive reference: every logit, softmax and sum in double. weights may be NULL.
int softmax_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                  const aw_softmax_attention_desc *desc);

#endif
