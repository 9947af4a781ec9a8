// synthesizer.h: Synthesizer attention (docs/attention-forms.md section 3). The logits B (n, n) are
// not token-to-token dot products but are synthesized: from each token alone (Dense), from a
// learned table (Random), from factorized versions of both, or a learned mixture of these and
// plain dot-product logits. Then A = softmax(B + causal mask) row-wise and O = A V.
//
// A layer fixes its maximum length L (max_len) when created; n > L is an error and n < L uses
// the top-left n x n block of B (the first n columns of W2, the first n rows of R, ...).
//
// Heads. Every head has its own logits parameters (a leading `heads` axis on every tensor).
//   - Dense and Factorized Dense heads all read the FULL row of X (n, d): head h computes
//     relu(X W1[h] + b1[h]) W2[h] + b2[h]. X is not split into column blocks, so d need not be
//     divisible by heads.
//   - V (n, dv) is split into `heads` column blocks of dv / heads; head h mixes block h, and the
//     outputs are concatenated along columns (as in softmax attention).
//   - The mixture's 'dot' component splits Q, K (n, dqk) into column blocks of dqk / heads and
//     uses scale 1 / sqrt(dqk / heads).
//   - A mixture has one set of mixing logits per head: alpha_logits (heads, C).
//
// Parameters live in ONE allocation (params, n_params floats) carved by a size table (tensors[]):
// each named tensor is (offset, size) into it. Gradients (grads) have the same layout. Per variant,
// with L = max_len, h = heads:
//   dense              W1 (h, d, d), b1 (h, d), W2 (h, d, L), b2 (h, L)
//                      B = relu(X W1 + b1) W2 + b2, first n columns
//   random             R (h, L, L)                     B = R[:n, :n]
//   factorized-dense   W1a (h, d, d), b1a (h, d), W2a (h, d, a), W1b (h, d, d), b1b (h, d), W2b (h, d, b)
//                      Ba = relu(X W1a + b1a) W2a (n, a), Bb = relu(X W1b + b1b) W2b (n, b), a * b = L,
//                      B[i, j] = Ba[i, j / b] * Bb[i, j % b] (Ba repeated element by element, Bb tiled)
//   factorized-random  R1 (h, L, k), R2 (h, L, k)      B = R1[:n] R2[:n]^T
//   mixture            each component's tensors in the order of `components`, then alphaLogits (h, C);
//                      B = sum_c alpha_c B_c, alpha = softmax(alphaLogits[h]); 'dot': B = Q K^T s
// Tensor names (as the JS wrapper shows them): W1, b1, W2, b2, R, W1a, ..., R1, R2, and for a mixture
// "<component>.<name>" (e.g. "dense.W1", "random.R") plus "alphaLogits".
//
// Init (deterministic from seed, splitmix64 in C, so every build gives the same numbers): weights
// W* ~ U(-s, s) with s = sqrt(6 / (fan_in + fan_out)) (Xavier uniform), biases 0, R ~ U(-1, 1),
// R1, R2 ~ U(-t, t) with t = (3 / k)^(1/4) (so R1 R2^T has the variance of U(-1, 1)), alphaLogits 0.
// Each tensor draws from its own stream (seed, component kind, tensor index): a component starts
// with the same numbers alone or inside a mixture.
//
// Threads (threaded build, src/kernels/parallel.h): the forward, the backward and a generation
// step (when it has >= 2^16 multiply-adds, e.g. a dense kind's hidden layer) run one item per head;
// dx, the one gradient every head adds to, gets heads 1..h-1 through per-head buffers summed in
// head order afterwards. Results are the same bits at any thread count and in every build.
//
// Training use (no JS needed): synthesizer_create -> synthesizer_forward (saves the activations the
// backward needs inside the layer) -> synthesizer_backward (accumulates += into grads, dx, dv, dq, dk)
// -> update params yourself -> synthesizer_zero_grad -> ... -> synthesizer_destroy.
#ifndef AW_SYNTHESIZER_H
#define AW_SYNTHESIZER_H

#include <stddef.h>
#include <stdint.h>

enum aw_synth_variant {
    AW_SYNTH_DENSE = 0,
    AW_SYNTH_RANDOM = 1,
    AW_SYNTH_FACTORIZED_DENSE = 2,
    AW_SYNTH_FACTORIZED_RANDOM = 3,
    AW_SYNTH_MIXTURE = 4,
    AW_SYNTH_DOT = 5 // plain scaled Q K^T logits; only as a mixture component
};

enum { AW_SYNTH_MAX_COMPONENTS = 5, AW_SYNTH_MAX_TENSORS = 16 };

typedef struct {
    int variant;         // enum aw_synth_variant (not AW_SYNTH_DOT)
    size_t d;            // width of X (dense forms)
    size_t max_len;      // L: the longest sequence the layer accepts
    size_t heads;        // h >= 1
    uint32_t seed;       // init stream
    int trainable;       // random forms: 0 = R, R1, R2 stay fixed (backward leaves their grads alone)
    size_t a, b;         // factorized-dense: a * b == max_len
    size_t k;            // factorized-random: rank of R1 R2^T
    size_t n_components; // mixture: 1 .. AW_SYNTH_MAX_COMPONENTS distinct kinds
    int components[AW_SYNTH_MAX_COMPONENTS]; // mixture: each a variant other than mixture, or AW_SYNTH_DOT
} aw_synthesizer_config;

typedef struct {
    char name[24];    // e.g. "W1", "dense.W1", "alphaLogits"
    size_t offset;    // into params / grads, in floats
    size_t size;      // floats: heads * rows * cols
    size_t rows, cols; // one head's shape; rows == 1 for a vector of cols
} aw_synth_tensor;

typedef struct {
    aw_synthesizer_config cfg;
    // the logits sources: one for a plain variant (its alpha is 1), C for a mixture
    size_t n_comp;
    int comp_kind[AW_SYNTH_MAX_COMPONENTS];
    size_t comp_tensor[AW_SYNTH_MAX_COMPONENTS]; // index of the component's first tensor in tensors[]
    size_t n_tensors;
    aw_synth_tensor tensors[AW_SYNTH_MAX_TENSORS];
    size_t alpha_tensor; // mixture: index of alphaLogits in tensors[]
    size_t n_params;     // floats in params (and in grads)
    float *params;       // (n_params): every tensor, carved by tensors[]
    float *grads;        // (n_params): same layout; backward accumulates here
    int owns_params;     // 1: params and grads are this layer's allocation; 0: bound to a caller's
    // saved by the last synthesizer_forward for synthesizer_backward:
    int has_forward;     // 1 after a successful (fast) forward
    size_t n, dv, dqk;   // sizes of that forward
    int causal;
    float *acts;         // one workspace carved per forward (below); grows, never shrinks
    size_t acts_cap;     // floats allocated in acts
    float *probs;        // (h, n, n): A = softmax(B + mask)
    float *comp_logits;  // mixture: (h, C, n, n), each component's B_c; NULL otherwise
    float *dense_h;      // dense: (h, n, d) relu(X W1 + b1)
    float *fd_ha;        // factorized-dense: (h, n, d) relu(X W1a + b1a)
    float *fd_hb;        // factorized-dense: (h, n, d) relu(X W1b + b1b)
    float *fd_ba;        // factorized-dense: (h, n, a) Ba
    float *fd_bb;        // factorized-dense: (h, n, b) Bb
    float *alphas;       // (h, C): the mixing weights used (all 1 for a plain variant)
} aw_synthesizer;

// Creates a layer: checks cfg, allocates params + grads (grads zeroed) and initialises params from
// cfg->seed. *out = NULL on failure. Returns AW_OK, AW_ERR_ARG (bad config) or AW_ERR_NOMEM.
int synthesizer_create(aw_synthesizer **out, const aw_synthesizer_config *cfg);
void synthesizer_destroy(aw_synthesizer *s); // NULL is fine

// out (n, dv) = per head h: softmax(B_h + mask) V[:, h block]. weights (h, n, n) or NULL.
// x (n, d): needed when a dense-kind component exists (else may be NULL). v (n, dv), dv % h == 0.
// q, k (n, dqk), dqk % h == 0: needed for a 'dot' component (else NULL, dqk ignored).
// n <= max_len. Saves probs and intermediates for synthesizer_backward. Returns AW_ERR_NONFINITE
// when a logit is NaN or infinite (parameters overwritten with huge or non-finite values).
int synthesizer_forward(aw_synthesizer *s, float *out, float *weights, const float *x, const float *v,
                        const float *q, const float *k, size_t n, size_t dv, size_t dqk, int causal);
// Naive reference of the same forward: explicit B per element in double, softmax in double
// (libm exp), A V in double. Touches no saved state (a backward after it is refused).
int synthesizer_forward_ref(const aw_synthesizer *s, float *out, float *weights, const float *x, const float *v,
                            const float *q, const float *k, size_t n, size_t dv, size_t dqk, int causal);
// Backward of the last synthesizer_forward: given dout (n, dv), ACCUMULATES (+=) into s->grads and
// into dx (n, d), dv (n, dv), dq (n, dqk), dk (n, dqk); pass the same x, v, q, k as that forward.
// dx may be NULL (then not computed) as may dv_out, dq, dk. Fixed random tensors get no gradient.
// Returns AW_ERR_STATE when no fast forward preceded it.
int synthesizer_backward(aw_synthesizer *s, float *dx, float *dv_out, float *dq, float *dk, const float *dout,
                         const float *x, const float *v, const float *q, const float *k);
void synthesizer_zero_grad(aw_synthesizer *s); // grads = 0
// One causal step for generation: out (dv) = the output at position pos, given this position's
// x_i (d) and q_i (dqk) and the cached keys kc (pos + 1, dqk) and values vc (pos + 1, dv) of
// positions 0..pos. The same numbers as row pos of a causal synthesizer_forward, in O(pos) per
// head instead of O(pos^2). scratch: synthesizer_step_floats(s) floats. Saves nothing.
size_t synthesizer_step_floats(const aw_synthesizer *s);
int synthesizer_step(const aw_synthesizer *s, float *out, float *scratch, const float *xi, const float *qi,
                     const float *kc, const float *vc, size_t pos, size_t dv, size_t dqk);
// Moves the parameters into caller memory (params and grads, n_params floats each, e.g. a
// model's arena): copies params there, zeroes grads, frees the layer's own block.
void synthesizer_bind(aw_synthesizer *s, float *params, float *grads);
// alphas (h, C) = softmax(alphaLogits) per head, from the current params (mixture only; else AW_ERR_STATE).
int synthesizer_alphas(const aw_synthesizer *s, float *alphas);
// Index of the tensor called `name` in s->tensors, or -1.
int synthesizer_tensor_index(const aw_synthesizer *s, const char *name);

#endif
