// sae.h: a TopK sparse autoencoder (Gao et al. 2024, "Scaling and evaluating sparse
// autoencoders"), a small model beside the Transformer, trained on activations that
// model.runWithCache streams (wasm/sae.js; docs/interpretability.md).
//
//   z  = TopK(ReLU(W_enc (x - b_pre) + b_enc))     (the k largest, the rest 0)
//   x^ = W_dec^T z + b_pre
//
// Loss (one batch of B rows; D = sum_b ||x_b - mean_b x||^2, the batch's own variance, a constant):
//   L     = sum_b ||x^_b - x_b||^2 / D                                  (normalised MSE = FVU)
//   L_aux = sum_b ||e^_b - (x_b - x^_b)||^2 / D,  e^_b = W_dec^T TopK_auxk(ReLU(pre_b) on dead latents)
//   loss  = L + aux_coef L_aux                                          (aux_coef 1/32 in the paper)
// A latent is dead when it has not fired (z > 0) for dead_tokens rows; the residual x - x^ in
// L_aux is held constant (no gradient through it), as in the paper.
//
// Training (sae_train_step): b_pre is set to the mean of the first batch; the decoder rows are
// unit vectors: the gradient's component along each row is removed before the Adam step and
// the rows are renormalised after it. Adam (src/model/optimizer.c's AdamW, no weight decay).
// Threads (src/kernels/parallel.h): the encoder product, the rows' TopK and decoding, and the
// backward by latents over a transposed list of the batch's chosen (row, latent) pairs; every cut is
// fixed by the sizes alone, so 1 or 2 threads give the same bits.
#ifndef AW_SAE_H
#define AW_SAE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t d_in;        // width of the activations
    size_t d_sae;       // latents
    size_t k;           // latents kept per row, 1 <= k <= d_sae
    size_t aux_k;       // dead latents that reconstruct the residual in L_aux, 0 <= aux_k <= d_sae (0: no AuxK)
    size_t dead_tokens; // rows without firing after which a latent counts as dead, >= 1
    float aux_coef;     // AuxK's coefficient, >= 0
} aw_sae_config;

// What one batch measured.
typedef struct {
    double loss;  // L + aux_coef L_aux
    double fvu;   // L: unexplained variance share
    double aux;   // L_aux (0 when no latent is dead)
    double l0;    // mean latents with z > 0 per row
    double dead;  // latents dead after this batch (since_fired >= dead_tokens)
} aw_sae_stats;

typedef struct aw_sae {
    aw_sae_config cfg;
    size_t n_params;       // d_sae d_in + d_sae + d_sae d_in + d_in
    float *mem;            // one allocation: params | grads | adam m | adam v (n_params each)
    float *params, *grads, *m, *v;
    float *w_enc;          // (d_sae, d_in) encoder rows         (params; grads at the same offset)
    float *b_enc;          // (d_sae)
    float *w_dec;          // (d_sae, d_in) decoder rows, unit norm
    float *b_pre;          // (d_in)
    uint32_t *since_fired; // (d_sae) rows since each latent last fired (saturates at UINT32_MAX)
    uint8_t *dead;         // (d_sae) 1 for a dead latent, for the batch being run
    long step;             // Adam steps taken
    int b_pre_set;         // 0 until the first training batch set b_pre to its mean
    // work for batches of up to cap rows (sae_reserve), one allocation
    size_t cap;
    void *work;
    float *xc;             // (cap, d_in) x - b_pre
    float *pre;            // (cap, d_sae) W_enc xc + b_enc
    float *g;              // (cap, d_in) dloss/dx^ (main)
    float *h;              // (cap, d_in) dloss/de^ (aux)
    int32_t *idx;          // (cap, k + aux_k) chosen latents: k main, then aux_k aux (-1: none)
    float *val;            // (cap, k + aux_k) their ReLU values
    float *dval;           // (cap, k + aux_k) dloss/dpre at them
    double *row_sums;      // (cap, 3) per row: ||e||^2, ||e^ - r||^2, count z > 0
    size_t *col_start;     // (d_sae + 1) the transposed pairs: latent j's pairs are
    uint32_t *col_pairs;   // (cap (k + aux_k)) col_pairs[col_start[j] .. col_start[j+1]), row-major pair indices
} aw_sae;

// Checks cfg and allocates; W_dec rows random unit vectors from seed, W_enc = W_dec, biases 0.
int sae_init(aw_sae *s, const aw_sae_config *cfg, uint64_t seed);
void sae_free(aw_sae *s);

// z for B rows: idx (B, k) the chosen latents (descending value, ties by lower index), val (B, k)
// their values (>= 0; 0 where fewer than k are positive).
int sae_encode(aw_sae *s, const float *x, size_t B, int32_t *idx, float *val);
// out (B, d_in) = z W_dec + b_pre, z dense (B, d_sae).
int sae_decode(aw_sae *s, const float *z, size_t B, float *out);
// The loss of x (B, d_in) and its gradient into s->grads (the decoder's already projected), with the
// dead latents of s->since_fired; changes neither the parameters nor the counters.
int sae_gradients(aw_sae *s, const float *x, size_t B, aw_sae_stats *st);
// One training step: b_pre from the first batch, sae_gradients, the counters, Adam with lr, the
// decoder rows renormalised. Refuses (and changes nothing) when the loss or a gradient is not finite.
int sae_train_step(aw_sae *s, const float *x, size_t B, float lr, aw_sae_stats *st);
// Sets the parameters (n_params floats, in the order of the params block); refuses non-finite values
// and decoder rows that are not unit vectors (|norm - 1| > 1e-3). Marks b_pre as set.
int sae_set_params(aw_sae *s, const float *p, size_t n);

#endif
