// nsa.h: Native Sparse Attention (NSA; Yuan et al. 2025, arXiv:2502.11089; docs/attention-forms.md
// section 4e), causal. Per head h, query t, head width d = C / H, scale s = 1 / sqrt(d), keys cut
// into blocks of bs positions (block b holds [b bs, (b + 1) bs)):
//   compressed: block b is visible once complete, (b + 1) bs - 1 <= t; its key and value are the
//               means of its keys and values, kb_b, vb_b; p_b = softmax_b(s q_t . kb_b) over the
//               visible blocks, o_cmp = sum_b p_b vb_b (0 when no block is visible)
//   selection:  the blocks read in full: block 0, the current block t / bs and the one before it,
//               plus the `top` other visible blocks of highest importance, the sum of p_b over the
//               heads of the K/V group (ties: the lower block); o_slc = softmax attention over the
//               selected blocks' keys j <= t
//   window:     o_win = softmax attention over the keys t - w < j <= t
//   out_t,h = g_cmp o_cmp + g_slc o_slc + g_win o_win, the gates g = sigmoid(x_t W^T + b) (3 per head,
//             3h + 0, 1, 2 as the form keeps them) given per row.
// No gradient flows through the choice of blocks (the paper's): the backward takes the forward's.
#ifndef AW_NSA_H
#define AW_NSA_H

#include <stddef.h>

typedef struct {
    size_t C, H;   // width and heads (C % H == 0)
    size_t group;  // heads per K/V group (H / kvHeads): they share their selected blocks
    size_t block;  // bs >= 1
    size_t top;    // the blocks selected by importance besides the forced ones
    size_t window; // w >= 1
    float scale;   // 1 / sqrt(C / H)
    int mean;      // 1: the blocks' keys and values are means (nsa_block_means), so the weights shown
                   // (att) are exact; 0: a learned compression (nsa_block_mlp), att leaves it out
} aw_nsa_desc;

// The learned compression (compress 'mlp'), shared by the heads, d = C / H: pe (bs, d) a position
// embedding within the block, wk1, wv1 (d, bs d) and wk2, wv2 (d, d) as nn.Linear keeps them (no
// biases). Block b's key of head h: kb = wk2 silu(wk1 concat_i(k_{b bs + i, h} + pe_i)), its value
// likewise from v with wv1, wv2 (silu(a) = a sigmoid(a): smooth, so finite differences cross no kink).
typedef struct {
    float *pe, *wk1, *wk2, *wv1, *wv2;
} aw_nsa_mlp;

// The learned compression's floats, and its weights at p in the order above.
size_t nsa_mlp_floats(const aw_nsa_desc *ds);
void nsa_mlp_at(aw_nsa_mlp *w, float *p, const aw_nsa_desc *ds);
// Scratch floats of nsa_block_mlp and nsa_block_mlp_backward.
size_t nsa_mlp_scratch_floats(const aw_nsa_desc *ds);
// kb, vb (nsa_blocks(T), C): every complete block's learned key and value from k, v (T, C).
void nsa_block_mlp(float *kb, float *vb, const float *k, const float *v, size_t T, const aw_nsa_mlp *w,
                   float *scratch, const aw_nsa_desc *ds);
// Its backward: dk, dv (T, C) and, when g is not NULL, the weights' gradients += from dkb, dvb.
void nsa_block_mlp_backward(float *dk, float *dv, const aw_nsa_mlp *g, const float *dkb, const float *dvb,
                            const float *k, const float *v, size_t T, const aw_nsa_mlp *w, float *scratch,
                            const aw_nsa_desc *ds);

// The selected blocks kept per head and query: the three forced ones and `top` more.
size_t nsa_max_selected(const aw_nsa_desc *ds);
// The complete blocks of a sequence of T positions.
size_t nsa_blocks(const aw_nsa_desc *ds, size_t T);

// kb, vb (nsa_blocks(T), C): the mean key and value of every complete block of k, v (T, C).
void nsa_block_means(float *kb, float *vb, const float *k, const float *v, size_t T, const aw_nsa_desc *ds);

// Scratch floats of one nsa_row call for sequences up to T.
size_t nsa_row_scratch_floats(const aw_nsa_desc *ds, size_t T);

// One query row t: out (C) from q_t (C), the keys and values so far k, v (>= t + 1 rows of C), the
// block means kb, vb (nsa_blocks(t + 1) rows) and the gates g (3H). Also writes, when not NULL:
// branch (3, C) the three branches' outputs o_cmp, o_slc, o_win before the gates; lse (H, 3) each
// branch's log-sum-exp of its scaled scores (-INFINITY: the branch read nothing); sel (H,
// nsa_max_selected) the selected blocks in ascending order, -1 after the last; att (H rows, row h at
// att + h att_stride, t + 1 columns) the effective weight of key j in out: g_cmp p_b(j) / bs (j in a
// visible block; mean blocks only) + g_slc p_slc(j) + g_win p_win(j). scratch: nsa_row_scratch_floats(t + 1).
void nsa_row(float *out, float *branch, float *lse, float *sel, float *att, size_t att_stride, const float *q_t,
             const float *k, const float *v, const float *kb, const float *vb, const float *g, size_t t,
             float *scratch, const aw_nsa_desc *ds);

// The gradient of row t given dout_t (C): accumulates dq_t (C), dk, dv (t + 1 rows of C), dkb, dvb
// (the block means') and dg (3H) from what nsa_row wrote (branch, lse, sel) for the same inputs.
void nsa_row_backward(float *dq_t, float *dk, float *dv, float *dkb, float *dvb, float *dg, const float *dout_t,
                      const float *branch, const float *lse, const float *sel, const float *q_t, const float *k,
                      const float *v, const float *kb, const float *vb, const float *g, size_t t,
                      const aw_nsa_desc *ds);

// The block means' backward: dk, dv (T, C) += dkb, dvb (nsa_blocks(T), C) / bs over each block.
void nsa_block_means_backward(float *dk, float *dv, const float *dkb, const float *dvb, size_t T,
                              const aw_nsa_desc *ds);

#endif
