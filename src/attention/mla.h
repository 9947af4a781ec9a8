// mla.h: multi-head latent attention (MLA; DeepSeek-AI 2024, DeepSeek-V2, arXiv:2405.04434 section
// 2.1; docs/attention-forms.md section 4d). Keys and values come from one low-rank latent per token,
// and a narrow rotary key is shared by the heads; x (T, C) is the sublayer input, heads split C:
//   c   = x W_DKV^T                   (T, R)      the latent, R = kvRank (what generation caches)
//   k^C = c W_UK^T,  v = c W_UV^T     (T, C)      per head a block of C / H columns
//   k^R = RoPE(x W_KR^T)              (T, P)      P = ropeDim, one rotary key for every head (cached)
//   q^C = x W_Q^T (C), or c_Q W_UQ^T with c_Q = x W_DQ^T (T, Qr) when qRank Qr > 0
//   q^R = RoPE_h(x W_QR^T or c_Q W_QR^T)  (T, H P)  each head's own rotary query
//   score_hij = (q^C_hi . k^C_hj + q^R_hi . k^R_j) / sqrt(C / H + P),  A = softmax(score + mask)
//   o_hi = sum_j A_hij v_hj
// RoPE turns the adjacent pairs (2r, 2r + 1) of a P-wide row at position p by p 10000^(-2r / P).
// The absorbed path (what inference runs) never forms k^C or v: per head it folds W_UK into the
// query, qa_hi = q^C_hi W_UK,h (R), scores qa_hi . c_j + q^R_hi . k^R_j, averages the latents,
// l_hi = sum_j A_hij c_j, and applies W_UV,h last: o_hi = l_hi W_UV,h^T. The same logits, and only
// c and k^R (R + P floats per token) are cached. Weights are stored as nn.Linear keeps them (out, in).
#ifndef AW_MLA_H
#define AW_MLA_H

#include <stddef.h>

enum aw_mla_path { AW_MLA_PLAIN = 0, AW_MLA_ABSORBED = 1 };

typedef struct {
    size_t T;     // positions (self-attention: as many keys as queries)
    size_t C, H;  // width and heads (C % H == 0)
    size_t R;     // kvRank, >= 1
    size_t P;     // ropeDim, even (0: no rotary part)
    size_t Qr;    // qRank (0: full-rank queries, W_Q)
    int causal;
    int path;     // enum aw_mla_path (the forward's; the backward is the plain path's gradient)
} aw_mla_desc;

// The parameters, one contiguous block in this order (mla_param_floats floats in all).
typedef struct {
    float *w_dkv; // (R, C)
    float *w_uk;  // (C, R)
    float *w_uv;  // (C, R)
    float *w_kr;  // (P, C)
    float *w_dq;  // (Qr, C), NULL when Qr == 0
    float *w_q;   // (C, Qr) W_UQ, or (C, C) W_Q when Qr == 0
    float *w_qr;  // (H P, Qr or C)
} aw_mla_weights;

size_t mla_param_floats(const aw_mla_desc *ds); // AW_SIZE_INVALID on overflow
void mla_weights_at(aw_mla_weights *w, float *base, const aw_mla_desc *ds);

// out (T, C); weights (H, T, T) or NULL; work mla_forward_work_floats(ds) floats.
size_t mla_forward_work_floats(const aw_mla_desc *ds);
int mla_forward(float *out, float *weights, float *work, const float *x, const aw_mla_weights *w,
                const aw_mla_desc *ds);
// The plain path's gradient: ACCUMULATES dx (T, C) and the parameter gradients g (same layout as w)
// from dout (T, C); recomputes the forward in work (mla_backward_work_floats(ds) floats).
size_t mla_backward_work_floats(const aw_mla_desc *ds);
int mla_backward(float *dx, const aw_mla_weights *g, float *work, const float *dout, const float *x,
                 const aw_mla_weights *w, const aw_mla_desc *ds);

// Generation on the absorbed path: the cache holds c (L, R) then k^R (L, P); scratch follows.
// One step at position pos adds this token's latent and rotary key and writes its output (C).
size_t mla_step_floats(const aw_mla_desc *ds, size_t L);
size_t mla_cache_floats_per_token(const aw_mla_desc *ds); // R + P
int mla_step(float *out, float *state, size_t L, const float *x, const aw_mla_weights *w, const aw_mla_desc *ds,
             size_t pos);

#endif
