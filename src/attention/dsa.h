// dsa.h: DeepSeek Sparse Attention (DSA; DeepSeek-AI 2025, DeepSeek-V3.2-Exp; docs/attention-forms.md
// section 4f), causal self-attention over softmax. A lightning indexer scores every earlier key for
// each query from the sublayer input x (T, C):
//   q^I_tj = W_qI[j] x_t (D),  k^I_s = W_kI x_s (D),  w_tj = W_w[j] x_t      (j < J indexer heads)
//   I_ts   = sum_j w_tj ReLU(q^I_tj . k^I_s)                                  for s <= t
// and query t's heads attend, by softmax over q_t . k_s / sqrt(d), only to the top K keys of I_t.
// (ties to the lower index; all of them when t + 1 <= K; one set shared by every head).
// The indexer learns by its own loss, the KL divergence from the main attention (summed over the
// heads, L1-normalised) to softmax(I_t): over every s <= t in the dense warm-up, over the selected
// set in sparse training; its input is detached (no gradient reaches x, q or k from it).
// Weights are stored as nn.Linear keeps them (out, in), without biases.
#ifndef AW_DSA_H
#define AW_DSA_H

#include <stddef.h>

typedef struct {
    size_t T;          // positions (self-attention: as many keys as queries)
    size_t C, H;       // width and heads (each d = C / H wide)
    size_t J, D, K;    // indexer heads, indexer width, top-k
    int sparse;        // 1: each query reads its top K keys (sparse training); 0: every earlier key (warm-up)
    float side_weight; // the indexer loss' weight for this sequence (0: neither its value nor its gradient)
} aw_dsa_desc;

// The indexer's parameters, one contiguous block in this order (dsa_param_floats floats in all).
typedef struct {
    float *w_qi; // (J D, C)
    float *w_ki; // (D, C)
    float *w_w;  // (J, C)
} aw_dsa_weights;

size_t dsa_param_floats(const aw_dsa_desc *ds); // AW_SIZE_INVALID on overflow
void dsa_weights_at(aw_dsa_weights *w, float *base, const aw_dsa_desc *ds);

// min(K, T): the keys a query reads at most; the forward saves T of these rows of selected indices.
size_t dsa_kept(const aw_dsa_desc *ds);
size_t dsa_saved_floats(const aw_dsa_desc *ds);
size_t dsa_work_floats(const aw_dsa_desc *ds); // forward's and backward's scratch alike

// out (T, C); att (H, T, T) or NULL: the weights used (zeros outside each query's set); saved:
// dsa_saved_floats floats (each query's selected keys, ascending, as floats) or NULL; side_loss: adds
// side_weight times the mean over the T queries of the indexer's KL divergence (when side_weight > 0
// and saved is not NULL: a backward follows).
int dsa_forward(float *out, float *att, float *saved, double *side_loss, float *work, const float *x, const float *q,
                const float *k, const float *v, const aw_dsa_weights *w, const aw_dsa_desc *ds);
// ACCUMULATES dq, dk, dv (T, C) from dout with each query's set fixed (saved), and, when g is not NULL
// and side_weight > 0, the indexer loss' gradient into g (same layout as w); x gets no gradient.
int dsa_backward(float *dq, float *dk, float *dv, const aw_dsa_weights *g, float *work, const float *dout,
                 const float *saved, const float *x, const float *q, const float *k, const float *v,
                 const aw_dsa_weights *w, const aw_dsa_desc *ds);
// sel (H, T, T): 1 at the indexer's top K keys of each query (whatever the stage), else 0.
int dsa_selection(float *sel, float *work, const float *x, const aw_dsa_weights *w, const aw_dsa_desc *ds);

// Generation: the cache holds k, v (L, C) and k^I (L, D); scratch follows. One step at position pos
// adds this token's k, v and k^I and writes its output row (C), as the forward's row pos.
size_t dsa_step_floats(const aw_dsa_desc *ds, size_t L);
int dsa_step(float *out, float *state, size_t L, const float *x, const float *q, const float *k, const float *v,
             const aw_dsa_weights *w, const aw_dsa_desc *ds, size_t pos);

#endif
