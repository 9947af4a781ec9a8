// fuzz_attention.c: the attention entry points of the C ABI (src/api: softmax, local, linear and
// its decoding state, the Synthesizer layer) on shapes, flags and values decoded from the input,
// sizes kept small so each run is fast, values including zeros, 1e20 and 3e38. Invariants: a call
// that returns AW_OK gives finite outputs, and weights rows that sum to 1 or are all zero; a
// failure has a message.
#include "fuzz_common.h"

#include "../../src/attention/linear_attention.h"
#include "../../src/attention/synthesizer.h"

int aw_softmax_attention(float *out, float *weights, const float *q, const float *k, const float *v,
                         const uint8_t *key_mask, int32_t n, int32_t m, int32_t d, int32_t dv, int32_t heads,
                         int32_t causal, float scale, int32_t path);
int aw_local_attention(float *out, float *weights, const float *q, const float *k, const float *v, int32_t n,
                       int32_t m, int32_t d, int32_t dv, int32_t heads, int32_t window, int32_t stride, int32_t causal,
                       float scale, int32_t path);
int aw_linear_attention(float *out, float *weights, const float *q, const float *k, const float *v, int32_t n,
                        int32_t m, int32_t d, int32_t dv, int32_t heads, int32_t feature, int32_t causal, int32_t mode,
                        int32_t path);
aw_linear_state *aw_linear_state_create(int32_t d, int32_t dv, int32_t heads, int32_t feature);
int aw_linear_state_step(float *out, aw_linear_state *state, const float *q, const float *k, const float *v);
void aw_linear_state_destroy(aw_linear_state *state);
int aw_synth_create(aw_synthesizer **out, int32_t variant, int32_t d, int32_t max_len, int32_t heads, uint32_t seed,
                    int32_t trainable, int32_t a, int32_t b, int32_t k, const int32_t *components, int32_t n_components);
int aw_synth_forward(aw_synthesizer *s, float *out, float *weights, const float *x, const float *v, const float *q,
                     const float *k, int32_t n, int32_t dv, int32_t dqk, int32_t causal, int32_t path);
void aw_synth_destroy(aw_synthesizer *s);
int aw_retention(float *out, float *weights, const float *q, const float *k, const float *v, const float *gamma,
                 int32_t n, int32_t d, int32_t dv, int32_t heads, int32_t causal, float scale, int32_t mode, int32_t chunk,
                 int32_t path);
int aw_linformer(float *out, float *weights, const float *q, const float *kk, const float *v, const float *E,
                 const float *F, int32_t n, int32_t d, int32_t dv, int32_t heads, int32_t k, int32_t L, int32_t causal,
                 float scale, int32_t path);

// The shapes of one call, decoded first (the values follow).
typedef struct {
    int family, causal, path, weights, feature, mode, variant;
    int32_t n, m, d, dv, heads, window;
    float scale;
} call;

static void check_weights(const float *w, int32_t heads, int32_t n, int32_t m) {
    for (int32_t r = 0; r < heads * n; r++) {
        double s = 0.0;
        for (int32_t j = 0; j < m; j++) {
            FUZZ_ASSERT(w[(size_t)r * m + j] >= 0.0f, "a negative weight");
            s += w[(size_t)r * m + j];
        }
        FUZZ_ASSERT(s == 0.0 || fabs(s - 1.0) < 1e-3, "a weights row sums to %g", s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size};
    call c;
    c.family = take_u8(&in) % 7;
    c.heads = (int32_t)take_size(&in, 1, 4);
    c.n = (int32_t)take_size(&in, 1, 24), c.m = (int32_t)take_size(&in, 1, 24);
    // linear attention now and then at up to 768 positions: several 64-row chunks per head, so its
    // split into (head, segment) items and the kept chunk sums run (src/attention/linear_attention.c)
    if (c.family == 2 && take_u8(&in) % 4 == 0) c.n *= 32, c.m *= 32;
    c.d = c.heads * (int32_t)take_size(&in, 1, 8), c.dv = c.heads * (int32_t)take_size(&in, 1, 8);
    if (take_u8(&in) % 8 == 0) c.d += 1; // now and then heads do not divide d: an error
    c.causal = take_u8(&in) & 1, c.path = take_u8(&in) & 1, c.weights = take_u8(&in) & 1;
    c.feature = take_u8(&in) % 5, c.mode = take_u8(&in) % 3, c.variant = take_u8(&in) % 6;
    c.window = (int32_t)take_size(&in, 0, 30);
    const uint8_t sc = take_u8(&in);
    c.scale = sc == 0 ? 0.0f : sc == 1 ? 1e30f : sc == 2 ? -1.0f : 1.0f / sqrtf((float)(c.d / c.heads + 1));
    const size_t nq = (size_t)c.n * c.d, nk = (size_t)c.m * c.d, nv = (size_t)c.m * c.dv;
    float *q = malloc((nq + 1) * 4), *k = malloc((nk + 1) * 4), *v = malloc((nv + 1) * 4);
    float *out = malloc(((size_t)c.n * c.dv + 1) * 4), *w = malloc(((size_t)c.heads * c.n * c.m + 1) * 4);
    uint8_t *mask = malloc((size_t)c.m);
    fill(q, nq, &in), fill(k, nk, &in), fill(v, nv, &in);
    for (int32_t j = 0; j < c.m; j++) mask[j] = take_u8(&in) & 1;
    int st;
    aw_clear_error();
    switch (c.family) {
    case 0:
        st = aw_softmax_attention(out, c.weights ? w : NULL, q, k, v, (take_u8(&in) & 1) ? mask : NULL, c.n, c.m, c.d,
                                  c.dv, c.heads, c.causal, c.scale, c.path);
        FUZZ_STATUS(st);
        if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)c.n * c.dv), "softmax: non-finite output with AW_OK");
        if (st == AW_OK && c.weights) check_weights(w, c.heads, c.n, c.m);
        break;
    case 1:
        st = aw_local_attention(out, c.weights ? w : NULL, q, k, v, c.n, c.m, c.d, c.dv, c.heads, c.window,
                                (int32_t)take_size(&in, 0, 9) - 1, c.causal, c.scale, c.path); // stride -1 .. 8
        FUZZ_STATUS(st);
        if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)c.n * c.dv), "local: non-finite output with AW_OK");
        if (st == AW_OK && c.weights) check_weights(w, c.heads, c.n, c.m);
        break;
    case 2:
        st = aw_linear_attention(out, c.weights ? w : NULL, q, k, v, c.n, c.m, c.d, c.dv, c.heads, c.feature, c.causal,
                                 c.mode, c.path);
        FUZZ_STATUS(st);
        if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)c.n * c.dv), "linear: non-finite output with AW_OK");
        if (st == AW_OK && c.weights) check_weights(w, c.heads, c.n, c.m);
        break;
    case 5: { // retention: gammas from the input (some outside (0, 1]), n rows of q, k (d) and v (dv)
        const int32_t n = c.n < c.m ? c.n : c.m;
        float gamma[4];
        for (int h = 0; h < 4; h++) gamma[h] = (float)take_u8(&in) / 200.0f; // 0 .. 1.275
        st = aw_retention(out, c.weights ? w : NULL, q, k, v, (take_u8(&in) & 1) ? gamma : NULL, n, c.d, c.dv, c.heads,
                          c.causal, c.scale, c.mode - (take_u8(&in) == 9), (int32_t)take_size(&in, 0, 9), c.path);
        FUZZ_STATUS(st);
        if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)n * c.dv), "retention: non-finite output with AW_OK");
        if (st == AW_OK && c.weights) FUZZ_ASSERT(all_finite(w, (size_t)c.heads * n * n), "retention: non-finite weights");
        break;
    }
    case 6: { // Linformer: E, F (k, L) from the input, n rows; n > L and causal must be refused
        const int32_t n = c.n < c.m ? c.n : c.m, kp = (int32_t)take_size(&in, 1, 6), L = (int32_t)take_size(&in, 1, 24);
        float *E = malloc((size_t)kp * L * 4), *F = malloc((size_t)kp * L * 4);
        fill(E, (size_t)kp * L, &in), fill(F, (size_t)kp * L, &in);
        st = aw_linformer(out, c.weights ? w : NULL, q, k, v, E, F, n, c.d, c.dv, c.heads, kp, L, c.causal, c.scale,
                          c.path);
        FUZZ_STATUS(st);
        FUZZ_ASSERT(!(st == AW_OK && (c.causal || n > L)), "linformer: causal or n > L accepted");
        if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)n * c.dv), "linformer: non-finite output with AW_OK");
        free(E), free(F);
        break;
    }
    case 3: { // the decoding state: step through the sequence
        aw_linear_state *s = aw_linear_state_create(c.d, c.dv, c.heads, c.feature);
        FUZZ_ASSERT(s || aw_error_message()[0], "a state that could not be made says why");
        for (int32_t i = 0; s && i < c.n && i < c.m; i++) {
            st = aw_linear_state_step(out, s, q + (size_t)i * c.d, k + (size_t)i * c.d, v + (size_t)i * c.dv);
            if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)c.dv), "state step: non-finite output with AW_OK");
        }
        aw_linear_state_destroy(s);
        break;
    }
    default: { // a Synthesizer layer: x (n, d) in q, v (n, dv), q and k for a dot component
        const int32_t comps[2] = {(int32_t)(take_u8(&in) % 6), (int32_t)(take_u8(&in) % 6)};
        const int32_t ncomp = (int32_t)(take_u8(&in) % 3);
        const int32_t L = (int32_t)take_size(&in, 1, 24), a = (int32_t)take_size(&in, 0, 6), b = L / (a ? a : 1);
        aw_synthesizer *s = NULL;
        st = aw_synth_create(&s, c.variant, c.d, L, c.heads, take_u32(&in), take_u8(&in) & 1, a, b,
                             (int32_t)take_size(&in, 0, 5), comps, ncomp);
        FUZZ_STATUS(st);
        if (st == AW_OK) {
            const int32_t n = c.n < c.m ? c.n : c.m; // self-attention: n <= min(n, m) rows of every input
            st = aw_synth_forward(s, out, c.weights ? w : NULL, q, v, q, k, n, c.dv, c.d, c.causal, c.path);
            FUZZ_STATUS(st);
            if (st == AW_OK) FUZZ_ASSERT(all_finite(out, (size_t)n * c.dv), "synthesizer: non-finite output with AW_OK");
            if (st == AW_OK && c.weights) check_weights(w, c.heads, n, n);
        }
        aw_synth_destroy(s);
    }
    }
    free(q), free(k), free(v), free(out), free(w), free(mask);
    return 0;
}
