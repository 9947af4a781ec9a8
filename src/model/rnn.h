// rnn.h: the RNN baselines of "from RNN to Transformer": a GRU encoder-decoder (Cho et al. 2014)
// with a fixed context vector (arch "gru") and with Bahdanau et al. 2015's additive attention
// (arch "gru-attention"). One GRU layer each; hidden size C = d_model; the token embedding is the
// model's wte and the logits are s_i W_out + b_out, as for the Transformer.
//
// GRU (PyTorch's nn.GRU equations, gate order r, z, n; x W here, weights stored (3C, in) in
// checkpoints as weight_ih_l0 / weight_hh_l0):
//   r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)
//   z = sigmoid(x W_iz + b_iz + h W_hz + b_hz)
//   n = tanh(x W_in + b_in + r * (h W_hn + b_hn))
//   h' = (1 - z) * n + z * h
// Encoder: h_0 = 0, h_t = GRU(emb(x_t), h_{t-1}) for t = 1..S; c = h_S.
// Decoder: s_0 = c (no W_init: the decoder starts from the encoder's final state),
//   s_i = GRU([emb(y_{i-1}); c_i], s_{i-1}), logits_i = s_i W_out + b_out, i = 1..T, y_0 = the
//   separator 0. gru: c_i = c at every step (the fixed-size bottleneck). gru-attention:
//   e_ij = v . tanh(s_{i-1} W_a + h_j U_a + b_a), a_ij = softmax_j(e_ij), c_i = sum_j a_ij h_j.
//
// Buffers are time-major: row t * B + b is position t of sequence b.
#ifndef AW_MODEL_RNN_H
#define AW_MODEL_RNN_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    float *w_ih, *w_hh; // (IN, 3C), (C, 3C): columns r, z, n; stored (3C, IN), (3C, C)
    float *b_ih, *b_hh; // (3C) each
} aw_gru_weights;

typedef struct {
    float *W_a, *U_a; // (C, C) each (x W); stored (out, in)
    float *b_a, *v;   // (C) each
} aw_additive_attn_weights;

typedef struct {
    float *enc_x;                      // (S*B, C) source embeddings
    float *enc_gi, *enc_gh, *enc_gate; // (S*B, 3C): x W_ih + b_ih, h W_hh + b_hh, [r, z, n]
    float *enc_h;                      // ((S+1)*B, C): h_0 = 0, h_1..h_S
    float *dec_x;                      // (T*B, 2C): [emb(y_{i-1}); c_i]
    float *dec_gi, *dec_gh, *dec_gate; // (T*B, 3C)
    float *dec_s;                      // ((T+1)*B, C): s_0 = c, s_1..s_T
    float *uh;                         // (S*B, C) gru-attention: h_j U_a + b_a
    float *ws;                         // (T*B, C) s_{i-1} W_a
    float *tanh;                       // (T*B*S, C) tanh(s_{i-1} W_a + h_j U_a + b_a), row (i*B + b)*S + j
    float *att;                        // (T*B, S) a_ij, row i*B + b
} aw_rnn_acts;

// ---- one GRU step over a batch of B rows -------------------------------------------------------
// From gi = x W_ih + b_ih and gh = h_prev W_hh + b_hh (B, 3C): gate (B, 3C) = [r, z, n], h (B, C).
void gru_cell_forward(float *h, float *gate, const float *gi, const float *gh, const float *h_prev, size_t B,
                      size_t C);
// dgi, dgh (B, 3C) += the gradients of gi, gh; dh_prev += dh * z (the direct path only).
void gru_cell_backward(float *dgi, float *dgh, float *dh_prev, const float *dh, const float *gate, const float *gh,
                       const float *h_prev, size_t B, size_t C);
// The whole step: gi = x W_ih + b_ih (x: B rows of IN), gh, then the cell.
void gru_step_forward(float *h, float *gi, float *gh, float *gate, const float *x, const float *h_prev,
                      const aw_gru_weights *w, size_t B, size_t IN, size_t C);
// Backward of gru_step_forward: dx (may be NULL) += .., dh_prev += .., g += ..; dgi, dgh: the
// gradients of gi, gh (B, 3C), accumulated.
void gru_step_backward(float *dx, float *dh_prev, aw_gru_weights *g, float *dgi, float *dgh, const float *dh,
                       const float *gate, const float *gh, const float *x, const float *h_prev,
                       const aw_gru_weights *w, size_t B, size_t IN, size_t C);

// ---- additive attention, one decoder step over B rows ------------------------------------------
// H (S*B, C) the encoder states h_1..h_S and UH (S*B, C) = H U_a + b_a, time-major; s_prev (B, C).
// Writes ws (B, C) = s_prev W_a, th (B*S, C) the tanh, att (B, S) and ctx row b at ctx + b * ldctx.
void additive_attention_forward(float *ctx, size_t ldctx, float *att, float *th, float *ws, const float *s_prev,
                                const float *H, const float *UH, const aw_additive_attn_weights *w, size_t B, size_t S,
                                size_t C);
// Accumulates ds_prev (B, C), dH and dUH (S*B, C), g->W_a and g->v from dctx (row b at dctx + b *
// lddctx). dws (B, C) and datt (B, S): the gradients of ws and att, overwritten.
void additive_attention_backward(float *ds_prev, float *dH, float *dUH, aw_additive_attn_weights *g, float *dws,
                                 float *datt, const float *dctx, size_t lddctx, const float *att, const float *th,
                                 const float *s_prev, const float *H, const aw_additive_attn_weights *w, size_t B,
                                 size_t S, size_t C);

// ---- the model ---------------------------------------------------------------------------------
// What the GRU archs read of a model: views into its arena (transformer.c fills them from its own
// tables), the sizes and the batch's tokens. rnn.c knows nothing else of the model.
typedef struct {
    float *wte, *w_out, *b_out; // (V, C), (C, V), (V)
    aw_gru_weights enc_gru, dec_gru;
    aw_additive_attn_weights attn; // gru-attention only
} aw_rnn_weights;

typedef struct {
    size_t B, T, S, C, V;
    int attention;                // 1: gru-attention (additive attention), 0: gru (fixed context)
    const int32_t *tokens, *src;  // (B, T) decoder inputs, (B, S) source
} aw_rnn_batch;

// Encoder and decoder over the batch; writes the decoder states s_1..s_T batch-major into x0
// (B*T, C), from which the caller computes the logits.
void rnn_forward(const aw_rnn_batch *bt, const aw_rnn_weights *w, aw_rnn_acts *a, float *x0);
// From dx0 (the gradient of x0): backprop through time, accumulating into g; d holds the
// activations' gradients (zeroed by the caller).
void rnn_backward(const aw_rnn_batch *bt, const aw_rnn_weights *w, aw_rnn_weights *g, const aw_rnn_acts *a,
                  aw_rnn_acts *d, const float *dx0);

// Incremental generation: the encoder once, then one decoder step per token from the state.
typedef struct {
    float *H, *UH;               // (S, C) the encoder states, and H U_a + b_a
    float *s, *s_new;            // (C) the decoder state before and after a step
    float *x, *gi, *gh, *gate;   // (2C), (3C) x 3
    float *ws, *tanh, *att;      // (C), (S, C), (S)
    size_t S, C, V;
    int attention;
    float *mem;
} aw_rnn_decode_state;
// Encodes src (ns tokens) with the same arithmetic as rnn_forward; s = c.
int rnn_decode_begin(aw_rnn_decode_state *st, const aw_rnn_weights *w, size_t C, size_t V, int attention,
                     const int32_t *src, size_t ns);
// Feeds token (the previous output) through one decoder step; logits (V) from the new state.
void rnn_decode_step(aw_rnn_decode_state *st, const aw_rnn_weights *w, int32_t token, float *logits);
void rnn_decode_end(aw_rnn_decode_state *st);

#endif
