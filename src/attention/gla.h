// gla.h: gated linear attention with a gate per key channel (GLA; Yang, Wang, Shen, Panda, Kim
// 2023, arXiv:2312.06635; docs/attention-forms.md section 4c). Per head, row state S (dh x dvh),
// and a gate alpha_t in (0, 1]^dh for each key channel, given as its logarithm g_t = log alpha_t <= 0:
//   recurrent: S_t = diag(alpha_t) S_{t-1} + k_t^T v_t,   o_t = scale q_t S_t
//   parallel:  O = A V,  A_ij = scale sum_r q_ir k_jr exp(B_ir - B_jr) for j <= i, 0 above,
//              B_t = g_1 + ... + g_t per channel (the decay-gated form is the case of one gate for
//              every channel of a head)
//   chunked:   per chunk of c positions, with b the running log-gates inside it and S_0 before it,
//              o_i = scale ((q_i ⊙ exp(b_i)) S_0 + sum_{j <= i} (sum_r q_ir k_jr exp(b_ir - b_jr)) v_j),
//              S_end = diag(exp(b_end)) S_0 + sum_j (k_j ⊙ exp(b_end - b_j))^T v_j.
// Every decay factor is exp of a difference of running log-sums that is <= 0: long products of small
// gates underflow to 0, never to an overflow or a NaN (exp(B) and exp(-B) are never formed). Causal
// only. q, k (n, d), v (n, dv), g (n, d), out (n, dv), weights (heads, n, n) = the signed A.
#ifndef AW_GLA_H
#define AW_GLA_H

#include <stddef.h>

enum aw_gla_mode { AW_GLA_PARALLEL = 0, AW_GLA_RECURRENT = 1, AW_GLA_CHUNKED = 2 };

typedef struct {
    size_t n, d, dv, heads; // d % heads == 0, dv % heads == 0
    float scale;            // usually 1 / sqrt(d / heads)
    int mode;               // enum aw_gla_mode
    size_t chunk;           // the chunked form's chunk (>= 1)
} aw_gla_desc;

// out (n, dv); weights (heads, n, n) or NULL (the parallel form's A whatever the mode).
int gla_forward(float *out, float *weights, const float *q, const float *k, const float *v, const float *g,
                const aw_gla_desc *ds);
// Backward of every mode (the parallel form's gradient): ACCUMULATES dq, dk, dv and dg (n, d).
// work: gla_work_floats(ds) floats.
size_t gla_work_floats(const aw_gla_desc *ds);
int gla_backward(float *dq, float *dk, float *dv, float *dg, float *work, const float *dout, const float *q,
                 const float *k, const float *v, const float *g, const aw_gla_desc *ds);
// Generation: state S per head (d * dv / heads floats, zero at the start); one step with this
// position's log-gates g (d) writes its output row (dv).
size_t gla_state_floats(size_t d, size_t dv, size_t heads);
void gla_step(float *out, float *state, const float *q, const float *k, const float *v, const float *g, size_t d,
              size_t dv, size_t heads, float scale);

#endif
