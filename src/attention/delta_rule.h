// delta_rule.h: linear attention whose state is overwritten, not only added to: DeltaNet (Schlag
// et al. 2021, arXiv:2102.11174; Yang et al. 2024, arXiv:2406.06484) and Gated DeltaNet (Yang,
// Kautz, Hatamizadeh 2024, arXiv:2412.06464); docs/attention-forms.md section 4c. Per head, row
// state S (dh x dvh), L2-normalised keys k^_t = k_t / sqrt(|k_t|^2 + 1e-6), a write strength
// beta_t in (0, 1) and, for Gated DeltaNet, a decay a_t in (0, 1] (NULL: 1):
//   u_t = k^_t S_{t-1}                    what the state holds at key k^_t
//   S_t = a_t (S_{t-1} - beta_t k^_t^T u_t) + beta_t k^_t^T v_t
//       = a_t S_{t-1} + beta_t k^_t^T (v_t - a_t u_t)
//   o_t = scale q_t S_t
// The write replaces (a fraction beta of) the value stored at k^_t by v_t. Causal only. The
// weights (heads, n, n) are the implied matrix A with O = A V per head (each S_t is linear in the
// values): A_tj = scale q_t . c_tj, c_tj = a_t (I - beta_t k^_t^T k^_t) c_(t-1)j, c_tt = beta_t k^_t.
#ifndef AW_DELTA_RULE_H
#define AW_DELTA_RULE_H

#include <stddef.h>

typedef struct {
    size_t n, d, dv, heads; // d % heads == 0, dv % heads == 0
    float scale;            // usually 1 / sqrt(d / heads)
} aw_delta_desc;

// beta, a: (n, heads); a NULL for DeltaNet. out (n, dv); weights (heads, n, n) or NULL.
int delta_rule_forward(float *out, float *weights, const float *q, const float *k, const float *v, const float *beta,
                       const float *a, const aw_delta_desc *ds);
// Backpropagation through the recurrence (the states kept in work): ACCUMULATES dq, dk, dv, and
// dbeta, da (n, heads; da ignored when a is NULL). work: delta_rule_work_floats(ds) floats.
size_t delta_rule_work_floats(const aw_delta_desc *ds);
int delta_rule_backward(float *dq, float *dk, float *dv, float *dbeta, float *da, float *work, const float *dout,
                        const float *q, const float *k, const float *v, const float *beta, const float *a,
                        const aw_delta_desc *ds);
// Generation: state S per head (heads * dh * dvh floats, zero at the start); beta, a (heads; a may
// be NULL) this position's; writes its output row (dv).
size_t delta_rule_state_floats(size_t d, size_t dv, size_t heads);
void delta_rule_step(float *out, float *state, const float *q, const float *k, const float *v, const float *beta,
                     const float *a, size_t d, size_t dv, size_t heads, float scale);

#endif
