// retention.h: retention, linear attention with a decay (RetNet, Sun et al. 2023;
// docs/attention-forms.md section 4). Per head h with decay gamma_h in (0, 1]:
//   parallel:  O = (Q K^T * scale ⊙ D) V,  D_ij = gamma^(i - j) for j <= i, 0 above (causal),
//              D_ij = gamma^|i - j| for the non-causal (encoder) form
//   recurrent: S_i = gamma S_{i-1} + k_i^T v_i,  o_i = scale q_i S_i          (causal)
//   chunked:   per chunk of c positions, the inner part in parallel form plus the decayed state
//              of every earlier chunk: o_i += gamma^(i - t0 + 1) scale q_i S_{t0-1}
// The three causal forms compute the same numbers (to float32 rounding); there is no softmax and
// no normaliser (RetNet puts a group norm after the heads; the model's LayerNorm plays that part
// here). Retention is self-attention: q, k and v have the same n rows.
//
// Shapes (row-major): q, k (n, d), v (n, dv), out (n, dv), weights (heads, n, n): the decayed
// scores scale q_i . k_j D_ij (not probabilities: rows do not sum to 1). Heads split the columns.
#ifndef AW_RETENTION_H
#define AW_RETENTION_H

#include <stddef.h>

enum aw_retention_mode { AW_RETENTION_PARALLEL = 0, AW_RETENTION_RECURRENT = 1, AW_RETENTION_CHUNKED = 2 };
enum { AW_RETENTION_CHUNK = 64 }; // the chunked form's default chunk

typedef struct {
    size_t n, d, dv, heads; // d % heads == 0, dv % heads == 0
    const float *gamma;     // (heads) decays in (0, 1]
    int causal;             // 1: j <= i (all three modes); 0: gamma^|i - j| over every key (parallel)
    float scale;            // usually 1 / sqrt(d / heads)
    int mode;               // enum aw_retention_mode; read only when causal
    size_t chunk;           // the chunked form's chunk (0: AW_RETENTION_CHUNK)
} aw_retention_desc;

// RetNet's fixed schedule: gamma_h = 1 - 2^(-5 - h), h = 0 .. heads - 1 (1/32 of a decay for the
// first head, 1/64 for the next: later heads remember further back).
void retention_default_gammas(float *gamma, size_t heads);
// Sizes > 0, heads divide d and dv, gammas finite in (0, 1], a known mode. AW_ERR_ARG with a message.
int retention_check(const aw_retention_desc *ds);
// Dispatches on causal and mode; weights (heads, n, n) or NULL.
int retention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                      const aw_retention_desc *ds);
// Naive reference: every q_i . k_j gamma^|i-j| from its definition, in double.
int retention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                          const aw_retention_desc *ds);
// Backward (any mode): ACCUMULATES (+=) dq (n, d), dk (n, d), dv (n, dv) and, when dgamma is not
// NULL, d loss / d gamma_h into dgamma (heads). Blocks of query rows in parallel form: O(n^2 d)
// time, O(64 n) scratch of its own.
int retention_backward(float *dq, float *dk, float *dv, float *dgamma, const float *dout, const float *q,
                       const float *k, const float *v, const aw_retention_desc *ds);

// Generation's constant-size state: per head S (dh, dvh), heads * dh * dvh floats (zero at the
// start). One step adds (k, v) at the next position and writes that position's output row (dv).
size_t retention_state_floats(size_t d, size_t dv, size_t heads);
int retention_step(float *out, float *state, const float *q, const float *k, const float *v, size_t d, size_t dv,
                   size_t heads, const float *gamma, float scale);

#endif
