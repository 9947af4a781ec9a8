// linear_attention.h: linear attention, O_i = sum_j sim(q_i, k_j) v_j / sum_j sim(q_i, k_j) with
// sim(q, k) = phi(q) . phi(k), so S = phi(K)^T V and z = sum_j phi(k_j) are formed once and the
// cost is linear in n (docs/attention-forms.md section 2).
//
// Shapes (row-major): q (n, d), k (m, d), v (m, dv), out (n, dv), weights (heads, n, m).
// Heads split the columns of q, k, v into equal blocks of dh = d / heads and dvh = dv / heads;
// each head runs on its block and writes its block of out's columns.
//
// Feature maps, per head (x is one row of the head's block, width dh):
//   ELU1       phi(x) = elu(x) + 1 (x + 1 for x > 0, exp(x) otherwise), width dh
//   RELU       phi(x) = max(x, 0), width dh
//   EFFICIENT  phi(q) = softmax of q over its dh features; phi(k_j) = column-wise softmax of K
//              over the m positions (so it depends on every key: no causal form, AW_ERR_ARG)
//   TAYLOR     sim(q, k) = 1 + qhat . khat, xhat = x / |x| (a zero vector has xhat = 0, so
//              sim = 1); written as the width dh + 1 feature phi(x) = [1, xhat]
// Causal (sequence mask): query i uses keys j <= i, also when m != n.
// A row whose denominator sum_j sim(q_i, k_j) is not > 0 (relu with no overlap, or nothing
// allowed) is an all-zero output row and an all-zero weights row: never NaN. An output that
// overflows to Infinity (inputs near FLT_MAX) gives AW_ERR_NONFINITE rather than a bad number.
#ifndef AW_LINEAR_ATTENTION_H
#define AW_LINEAR_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

enum aw_linear_feature { AW_LINEAR_ELU1 = 0, AW_LINEAR_RELU = 1, AW_LINEAR_EFFICIENT = 2, AW_LINEAR_TAYLOR = 3 };
enum aw_linear_mode { AW_LINEAR_PARALLEL = 0, AW_LINEAR_RECURRENT = 1 }; // causal forms only

typedef struct {
    size_t n, m, d, dv, heads; // sizes; d % heads == 0, dv % heads == 0
    int feature;               // enum aw_linear_feature
    int causal;                // 1: query i uses keys j <= i only
    int mode;                  // enum aw_linear_mode; read only when causal
} aw_linear_attention_desc;

// Checks desc (sizes > 0, heads divide d and dv, known feature and mode, no causal efficient).
int linear_attention_check(const aw_linear_attention_desc *desc);

// Dispatches on causal and mode. Non-causal: S and z per head, queries in chunks; memory
// O(chunk * d + d * dv), never n x m. weights != NULL also builds the implied attention matrix
// (heads, n, m) explicitly (rows sum to 1 or are zero); the output is the fast path's either way.
int linear_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                             const aw_linear_attention_desc *desc);
// Causal, parallel form: positions in chunks; per chunk, the prefix state (S, z) of all earlier
// chunks answers the inter-chunk part and a masked chunk x chunk similarity block the rest, both
// with the SIMD matmul kernels. Memory O(chunk * chunk + chunk * d + d * dv).
int linear_attention_forward_causal_parallel(float *out, const float *q, const float *k, const float *v,
                                             const aw_linear_attention_desc *desc);
// Causal, recurrent (RNN) form: S_i = S_{i-1} + phi(k_i)^T v_i, z_i = z_{i-1} + phi(k_i),
// O_i = phi(q_i) S_i / (phi(q_i) . z_i); the same steps as aw_linear_state.
int linear_attention_forward_causal_recurrent(float *out, const float *q, const float *k, const float *v,
                                              const aw_linear_attention_desc *desc);
// weights (heads, n, m) = sim(q_i, k_j) / sum_j sim(q_i, k_j) from phi(Q) phi(K)^T, masked when causal.
int linear_attention_weights(float *weights, const float *q, const float *k, const aw_linear_attention_desc *desc);
// Naive reference: every sim(q_i, k_j) from its definition, in double, normalised per row.
// weights may be NULL.
int linear_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                 const aw_linear_attention_desc *desc);

// Backward of linear_attention_forward (any feature map, causal or not; mode is ignored).
// Given dout (n, dv) = dL/dout, ACCUMULATES (+=) dL/dq into dq (n, d), dL/dk into dk (m, d) and
// dL/dv into dv_grad (m, dv). Recomputes the forward quantities it needs; O(n d dv) time and
// O((n + m) d) scratch. Rows whose denominator is zero pass no gradient; so do zero vectors
// under taylor (xhat defined as 0) and the kinks of relu (derivative 0 at 0).
int linear_attention_backward(float *dq, float *dk, float *dv_grad, const float *dout, const float *q,
                              const float *k, const float *v, const aw_linear_attention_desc *desc);

// ---- incremental decoding --------------------------------------------------------------
// Constant-size state of causal linear attention: per head S (D, dvh) and z (D), D the feature
// width. Each step adds one key/value pair and answers one query in O(d dv), whatever the
// position. One allocation; create returns NULL on a bad argument (or efficient) or no memory.
typedef struct aw_linear_state aw_linear_state;

aw_linear_state *linear_state_create(size_t d, size_t dv, size_t heads, int feature);
// The same state laid out in caller memory (aligned like malloc's) of linear_state_bytes bytes
// (0 for a bad argument, SIZE_MAX when it does not fit); free the memory, not the state.
size_t linear_state_bytes(size_t d, size_t dv, size_t heads, int feature);
aw_linear_state *linear_state_place(void *mem, size_t d, size_t dv, size_t heads, int feature);
// out (dv) = the causal output at the next position, after adding k (d), v (dv) to the state.
int linear_state_step(float *out, aw_linear_state *st, const float *q, const float *k, const float *v);
void linear_state_reset(aw_linear_state *st);
size_t linear_state_position(const aw_linear_state *st); // steps taken since create or reset
void linear_state_destroy(aw_linear_state *st);

#endif
