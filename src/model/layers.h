// layers.h: the Transformer's ops as forward/backward pairs over flat float arrays, in the
// llm.c manner: outputs first, then inputs, then weights, then sizes; the forward saves what
// the backward needs; every backward accumulates (+=) into its gradient arguments. A NULL weight
// gradient (dw, dwte) skips the weights' gradients (and the bias's with it) and computes the input's
// alone: the activation-only backward of an inference-only model (transformer_backward.c).
// N is the number of rows (batch * positions), C the model width.
#ifndef AW_MODEL_LAYERS_H
#define AW_MODEL_LAYERS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

// The logistic function, for the GRU's gates and the forms' learned gates and decays.
static inline float aw_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

// ---- embedding + positional encoding ---------------------------------------------------
// out[b,t,:] = wte[tokens[b,t], :] + pos[t, :]; pos is the learned table or the sinusoid, or NULL
// (no positions added).
void embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *pos, size_t B, size_t T,
                       size_t C);
// dwte[tok] += dout; dpos[t] += dout (dpos NULL for the fixed sinusoid).
void embedding_backward(float *dwte, float *dpos, const float *dout, const int32_t *tokens, size_t B, size_t T,
                        size_t C);
// pe (L, C): PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C)).
void sinusoidal_encoding(float *pe, size_t L, size_t C);

// ---- LayerNorm ----------------------------------------------------------------------------
// out = (x - mean) * rstd * w + b per row; saves mean (N) and rstd (N).
void layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                       size_t N, size_t C, float eps);
void layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                        const float *mean, const float *rstd, size_t N, size_t C);

// ---- linear -------------------------------------------------------------------------------
// out (N, OC) = x (N, IC) W (IC, OC) + b (OC); b may be NULL.
void linear_forward(float *out, const float *x, const float *w, const float *b, size_t N, size_t IC, size_t OC);
// The same with w in BF16 (uint16, the same (IC, OC) layout): the bits linear_forward gives for w widened.
void linear_forward_bf16(float *out, const float *x, const uint16_t *w, const float *b, size_t N, size_t IC, size_t OC);
void linear_forward_ref(float *out, const float *x, const float *w, const float *b, size_t N, size_t IC,
                        size_t OC);
// dx += dout W^T; dw += x^T dout; db += column sums of dout. dx or db may be NULL; dw NULL: dx only.
void linear_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w, size_t N,
                     size_t IC, size_t OC);

// ---- ReLU, residual -----------------------------------------------------------------------
void relu_forward(float *out, const float *x, size_t n);                   // out = max(x, 0)
void relu_backward(float *dx, const float *dout, const float *x, size_t n); // dx += dout * (x > 0)
// GELU, tanh form (GPT-2's gelu_new): out = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
void gelu_forward(float *out, const float *x, size_t n);
// dx += dout * (0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 0.044715 x^2))
void gelu_backward(float *dx, const float *dout, const float *x, size_t n);
void residual_add(float *y, const float *x, size_t n);                     // y += x
void zero_floats(float *y, size_t n);                                      // y = 0

// ---- softmax cross-entropy ------------------------------------------------------------------
// probs (N, V) = softmax(logits); losses[r] = -log probs[r, targets[r]] for targets[r] >= 0,
// 0 for ignored rows (targets[r] < 0). Returns the mean loss over the counted rows, and the
// count of rows and of rows whose argmax equals the target through *count and *correct.
double crossentropy_forward(float *probs, float *losses, const float *logits, const int32_t *targets, size_t N,
                            size_t V, size_t *count, size_t *correct);
// dlogits = (probs - onehot(target)) * dloss for counted rows (dloss = 1 / count for a mean).
void crossentropy_backward(float *dlogits, const float *probs, const int32_t *targets, float dloss, size_t N,
                           size_t V);

// ---- optimizer ------------------------------------------------------------------------------
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} aw_adamw_config;
// One AdamW step over n parameters: m, v moments; t is the 1-based step count; decay applies
// only where decay_mask (n) is 1 (matrices, not biases, norms or embeddings), or everywhere
// when decay_mask is NULL.
void adamw_update(float *params, float *m, float *v, const float *grads, const uint8_t *decay_mask, size_t n,
                  const aw_adamw_config *cfg, long t);
// Scales grads so their global L2 norm is at most max_norm (max_norm <= 0: no clipping).
// Returns the norm before clipping.
double clip_grad_norm(float *grads, size_t n, double max_norm);

// ---- the llama-style block (llama_layers.c) ----------------------------------------------------
// RMSNorm: out = x s w, s = (mean(x^2) + eps)^(-1/2) per row; saves s (N).
void rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C, float eps);
void rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                      size_t N, size_t C);
// SwiGLU's gate: out = silu(h) u elementwise (n values), and its backward (+= into dh, du).
void swiglu_forward(float *out, const float *h, const float *u, size_t n);
void swiglu_backward(float *dh, float *du, const float *dout, const float *h, const float *u, size_t n);
// Rotary positions, llama2.c's and Meta's pairing: within each head of hd columns the adjacent
// pair (2i, 2i+1) turns by the angle p theta^(-2i/hd). cs, sn (L, hd/2): the table.
// llama3: NULL, or Llama 3.1's frequency scaling {factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings} (transformers' _compute_llama3_parameters).
void rope_table(float *cs, float *sn, size_t L, size_t hd, double theta, const double *llama3);
// Rotates rows (B, T, C) in place, row t of each sequence at position pos0 + t; inverse: by
// minus the angle (the backward: a rotation's transpose is its inverse).
void rope_apply(float *x, const float *cs, const float *sn, size_t B, size_t T, size_t pos0, size_t C, size_t hd,
                int inverse);
// Grouped-query attention: KH key/value heads serve H query heads, head h reads K/V head
// h / (H / KH). kv_expand: (N, KH hd) -> (N, H hd); kv_reduce: dkv (N, KH hd) = the sums over
// each group of dout (N, H hd) (overwrites dkv).
void kv_expand(float *out, const float *kv, size_t N, size_t H, size_t KH, size_t hd);
void kv_reduce(float *dkv, const float *dout, size_t N, size_t H, size_t KH, size_t hd);
// kv_take: kv_expand's inverse on its output: (N, H hd) -> (N, KH hd), each group's first copy.
void kv_take(float *kv, const float *x, size_t N, size_t H, size_t KH, size_t hd);
// The classifier tied to the embedding: logits (N, V) = x (N, C) wte^T (+ b); its backward (+=).
void tied_forward(float *logits, const float *x, const float *wte, const float *b, size_t N, size_t C, size_t V);
// The same with a BF16 copy of wte (V, C): the bits tied_forward gives for it widened.
void tied_forward_bf16(float *logits, const float *x, const uint16_t *wte, const float *b, size_t N, size_t C, size_t V);
void tied_backward(float *dx, float *dwte, float *db, const float *dlogits, const float *x, const float *wte, size_t N,
                   size_t C, size_t V);

#endif
