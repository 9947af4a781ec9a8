// gated_linear.h: decay-gated linear attention (Mamba-2's SSD with a scalar gate per head and
// token, "simple GLA"; Dao & Gu 2024, arXiv:2405.21060; Yang et al. 2023, arXiv:2312.06635;
// docs/attention-forms.md section 4c). Per head, with a data-dependent gate a_t in (0, 1]
// given as its logarithm g_t = log a_t <= 0:
//   recurrent: S_t = a_t S_{t-1} + k_t^T v_t,  o_t = scale q_t S_t       (S: dh x dvh, row state)
//   parallel:  O = ((Q K^T scale) ⊙ D) V,  D_ij = exp(c_i - c_j) for j <= i, 0 above,
//              c_t = g_1 + ... + g_t  (retention is the case of a constant gate)
//   chunked:   per chunk of c positions, the inner part in parallel form plus the carried state,
//              o_i += scale exp(c_i - c_{t0-1}) q_i S_{t0-1}; the state moves on as
//              S_end = exp(c_end - c_{t0-1}) S_{t0-1} + sum_j exp(c_end - c_j) k_j^T v_j.
// Every decay factor is exp of a difference of log-cumsums that is <= 0, computed as that
// difference: a long product of small gates underflows to 0, never to a NaN or an overflow.
// Causal only (a gate runs forward in time). Shapes as retention.h: q, k (n, d), v (n, dv),
// g (n, heads), out (n, dv), weights (heads, n, n) = the signed scores (Q K^T scale) ⊙ D.
#ifndef AW_GATED_LINEAR_H
#define AW_GATED_LINEAR_H

#include <stddef.h>

enum aw_gated_mode { AW_GATED_PARALLEL = 0, AW_GATED_RECURRENT = 1, AW_GATED_CHUNKED = 2 };

typedef struct {
    size_t n, d, dv, heads; // d % heads == 0, dv % heads == 0
    float scale;            // usually 1 / sqrt(d / heads)
    int mode;               // enum aw_gated_mode
    size_t chunk;           // the chunked form's chunk (>= 1)
} aw_gated_desc;

// out (n, dv); weights (heads, n, n) or NULL (built from the parallel form whatever the mode).
int gated_linear_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                         const float *g, const aw_gated_desc *ds);
// Backward of any mode (the parallel form's gradient): ACCUMULATES dq, dk, dv and dg (n, heads).
// work: gated_linear_work_floats(n) floats.
size_t gated_linear_work_floats(size_t n);
int gated_linear_backward(float *dq, float *dk, float *dv, float *dg, float *work, const float *dout, const float *q,
                          const float *k, const float *v, const float *g, const aw_gated_desc *ds);
// Generation: state S per head (heads * dh * dvh floats, zero at the start); one step with this
// position's gates g (heads) writes its output row (dv).
size_t gated_linear_state_floats(size_t d, size_t dv, size_t heads);
void gated_linear_step(float *out, float *state, const float *q, const float *k, const float *v, const float *g,
                       size_t d, size_t dv, size_t heads, float scale);

#endif
