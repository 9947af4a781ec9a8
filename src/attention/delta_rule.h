// delta_rule.h: linear attention whose state is overwritten, not only added to: DeltaNet (Schlag
// et al. 2021, arXiv:2102.11174; Yang et al. 2024, arXiv:2406.06484) and Gated DeltaNet (Yang,
// Kautz, Hatamizadeh 2024, arXiv:2412.06464); docs/attention-forms.md section 4c. Per head, row
// state S (dh x dvh), L2-normalised keys k^_t = k_t / sqrt(|k_t|^2 + 1e-6), a write strength
// beta_t in (0, 1) and, for Gated DeltaNet, a decay a_t in (0, 1] (NULL: 1):
//   u_t = k^_t S_{t-1}                    what the state holds at key k^_t
//   S_t = a_t (S_{t-1} - beta_t k^_t^T u_t) + beta_t k^_t^T v_t
//       = a_t S_{t-1} + beta_t k^_t^T (v_t - a_t u_t)
//   o_t = scale q_t S_t
// The write replaces (a fraction beta of) the value stored at k^_t by v_t. Causal only.
// Kimi Delta Attention (KDA; Kimi Team 2025, arXiv:2510.26692) gives the decay per key channel:
// alpha_t in (0, 1]^dh, each row r of the state fading by its own alpha_t,r before the write,
//   S_t = (I - beta_t k^_t^T k^_t) diag(alpha_t) S_{t-1} + beta_t k^_t^T v_t
// (channel_gates = 1, a (n, d)); with alpha_t = a_t 1 it is Gated DeltaNet. The
// weights (heads, n, n) are the implied matrix A with O = A V per head (each S_t is linear in the
// values): A_tj = scale q_t . c_tj, c_tj = a_t (I - beta_t k^_t^T k^_t) c_(t-1)j, c_tt = beta_t k^_t.
#ifndef AW_DELTA_RULE_H
#define AW_DELTA_RULE_H

#include <stddef.h>

// The chunked form (Yang et al. 2024's WY / UT representation, with Gated DeltaNet's decays):
// per chunk of c positions, with S_0 the state before it, b_t = log a_t0 + ... + log a_t the
// running log-decay inside the chunk (0 for DeltaNet) and u'_t = beta_t (v_t - a_t k^_t S_{t-1})
// the "pseudo-values", every state inside the chunk is
//   S_t = exp(b_t) S_0 + sum_{j <= t} exp(b_t - b_j) k^_j^T u'_j,
// so the u' solve one lower-triangular system, row by row (forward substitution):
//   u'_t = beta_t (v_t - exp(b_t) k^_t S_0 - sum_{j < t} exp(b_t - b_j) (k^_t . k^_j) u'_j)
// and then, with matrix products over the chunk,
//   o_t = scale (exp(b_t) q_t S_0 + sum_{j <= t} exp(b_t - b_j) (q_t . k^_j) u'_j)
//   S_end = exp(b_end) S_0 + sum_j exp(b_end - b_j) k^_j^T u'_j.
// Every decay factor is exp of a difference of running log-sums that is <= 0: a long product of
// small gates underflows to 0, never to an overflow or a NaN. The sequential work is one chunk
// after another; inside a chunk it is matrix products and a c x c triangular solve.
// With a decay per key channel (KDA) exp(b_t - b_j) becomes the diagonal D_tj = diag(alpha_(j+1)
// ... alpha_t), inside the dot products: (k^_t . k^_j) becomes sum_r k^_tr D_tj,r k^_jr, and the
// same for q_t; delta_rule.c (forward_chunked_channel) forms those c x c matrices pair by pair
// from running products of the gates (no exponent, so no overflow for any gates or chunk).
enum aw_delta_mode { AW_DELTA_RECURRENT = 0, AW_DELTA_CHUNKED = 1 };

typedef struct {
    size_t n, d, dv, heads; // d % heads == 0, dv % heads == 0
    float scale;            // usually 1 / sqrt(d / heads)
    int mode;               // enum aw_delta_mode (0: the recurrence)
    size_t chunk;           // the chunked form's chunk (>= 1)
    int channel_gates;      // 0: a is (n, heads), one decay per head (Gated DeltaNet); 1: a is
                            // (n, d), one per key channel (KDA)
} aw_delta_desc;

// beta: (n, heads); a: (n, heads), or (n, d) with channel_gates, or NULL for DeltaNet. out (n, dv); weights (heads, n, n) or NULL (built by
// the recurrence whatever the mode). The backward below is the recurrence's for every mode: the
// modes compute the same function, so they share one gradient.
int delta_rule_forward(float *out, float *weights, const float *q, const float *k, const float *v, const float *beta,
                       const float *a, const aw_delta_desc *ds);
// Backpropagation through the recurrence (the states kept in work): ACCUMULATES dq, dk, dv, and
// dbeta (n, heads) and da (a's shape; ignored when a is NULL). work: delta_rule_work_floats(ds) floats.
size_t delta_rule_work_floats(const aw_delta_desc *ds);
int delta_rule_backward(float *dq, float *dk, float *dv, float *dbeta, float *da, float *work, const float *dout,
                        const float *q, const float *k, const float *v, const float *beta, const float *a,
                        const aw_delta_desc *ds);
// Generation: state S per head (heads * dh * dvh floats, zero at the start); beta (heads) and a
// (heads, or d with channel_gates; may be NULL) this position's; writes its output row (dv).
size_t delta_rule_state_floats(size_t d, size_t dv, size_t heads);
void delta_rule_step(float *out, float *state, const float *q, const float *k, const float *v, const float *beta,
                     const float *a, int channel_gates, size_t d, size_t dv, size_t heads, float scale);

#endif
