// linformer.h: Linformer (Wang et al. 2020; docs/attention-forms.md section 4). Keys and values
// are projected along the sequence to k rows by learned E, F (k, L), then softmax attention runs
// over those k rows:  O = softmax(Q (E K)^T * scale) (F V)  per head, E and F shared by the heads.
// A sequence of n <= L positions uses the first n columns of E and F (L is the longest sequence
// the projections were built for; n > L is an error naming L). Each projected row mixes every
// position, later ones included, so there is no causal form (LINFORMER_NO_CAUSAL says why).
// Cost O(n k d): linear in n for a fixed k.
//
// Shapes (row-major): q, kk (n, d), v (n, dv), out (n, dv), E, F (k, L); weights (heads, n, n):
// the implied attention over the n positions, P F[:, :n] with P = softmax(Q (E K)^T s) (heads, n, k)
// (the matrix that multiplies V; rows are mixtures, not probabilities).
#ifndef AW_LINFORMER_H
#define AW_LINFORMER_H

#include <stddef.h>

#define LINFORMER_NO_CAUSAL                                                                                          \
    "Linformer has no causal form: each of its k projected keys E K mixes every position, later ones included, so " \
    "a causal mask cannot be applied"

typedef struct {
    size_t n, d, dv, heads; // d % heads == 0, dv % heads == 0
    size_t k, L;            // projected rows, and the columns of E and F (n <= L)
    float scale;            // usually 1 / sqrt(d / heads)
} aw_linformer_desc;

int linformer_check(const aw_linformer_desc *ds);
int linformer_forward(float *out, float *weights, const float *q, const float *kk, const float *v, const float *E,
                      const float *F, const aw_linformer_desc *ds);
// Naive reference: the projections, logits and softmax in double. weights may be NULL.
int linformer_forward_ref(float *out, float *weights, const float *q, const float *kk, const float *v, const float *E,
                          const float *F, const aw_linformer_desc *ds);
// Accumulates (+=) dq, dk (n, d), dv (n, dv) and dE, dF (k, L) (first n columns) from dout;
// recomputes the forward. dE / dF may be NULL (fixed projections).
int linformer_backward(float *dq, float *dk, float *dv, float *dE, float *dF, const float *dout, const float *q,
                       const float *kk, const float *v, const float *E, const float *F, const aw_linformer_desc *ds);

#endif
