// api_gated.c: decay-gated linear attention and the delta rule with their gates and write
// strengths given as inputs, for the wrapper (wasm/gated.js): each form checked against a
// reference without a model (in the model the gates come from the token's input).
#include "api.h"

#include "../attention/delta_rule.h"
#include "../attention/gated_linear.h"
#include "../attention/gla.h"
#include "../kernels/size.h"

// chunk is an option of the chunked mode: in [1, AW_CHUNK_MAX], as the forms' chunk option.
static int check_chunk(const char *what, int32_t chunk) {
    if (chunk < 1 || chunk > AW_CHUNK_MAX)
        return aw_fail(AW_ERR_ARG, "%s: chunk must be an integer in [1, %d], got %d", what, AW_CHUNK_MAX, (int)chunk);
    return AW_OK;
}

// out (n, dv); weights (heads, n, n) or NULL; g (n, heads): the log of each head's gate at each
// position (<= 0). mode: 0 parallel, 1 recurrent, 2 chunked (chunk >= 1).
AW_API int aw_gated_linear(float *out, float *weights, const float *q, const float *k, const float *v, const float *g,
                           int32_t n, int32_t d, int32_t dv, int32_t heads, float scale, int32_t mode, int32_t chunk) {
    aw_clear_error();
    if (n <= 0 || d <= 0 || dv <= 0 || heads <= 0) return aw_fail(AW_ERR_ARG, "gatedLinearAttention: sizes must be positive");
    if (check_chunk("gatedLinearAttention", chunk)) return AW_ERR_ARG;
    const aw_gated_desc ds = {.n = (size_t)n, .d = (size_t)d, .dv = (size_t)dv, .heads = (size_t)heads, .scale = scale,
                              .mode = mode, .chunk = (size_t)chunk};
    return api_done(gated_linear_forward(out, weights, q, k, v, g, &ds));
}

// out (n, dv); weights (heads, n, n) or NULL; beta (n, heads) the write strengths; a the decays:
// (n, heads) (Gated DeltaNet; channel_gates 0), (n, d) (KDA, a decay per key channel;
// channel_gates 1) or NULL (DeltaNet). mode: 0 recurrent, 1 chunked (chunk >= 1).
AW_API int aw_delta_rule(float *out, float *weights, const float *q, const float *k, const float *v, const float *beta,
                         const float *a, int32_t channel_gates, int32_t n, int32_t d, int32_t dv, int32_t heads,
                         float scale, int32_t mode, int32_t chunk) {
    aw_clear_error();
    if (n <= 0 || d <= 0 || dv <= 0 || heads <= 0) return aw_fail(AW_ERR_ARG, "deltaRule: sizes must be positive");
    if (check_chunk("deltaRule", chunk)) return AW_ERR_ARG;
    const aw_delta_desc ds = {.n = (size_t)n, .d = (size_t)d, .dv = (size_t)dv, .heads = (size_t)heads, .scale = scale,
                              .mode = mode, .chunk = (size_t)chunk, .channel_gates = channel_gates != 0};
    return api_done(delta_rule_forward(out, weights, q, k, v, beta, a, &ds));
}

// GLA: out (n, dv); weights (heads, n, n) or NULL; g (n, d): the log of each key channel's gate at
// each position (<= 0). mode: 0 parallel, 1 recurrent, 2 chunked (chunk >= 1).
AW_API int aw_gla(float *out, float *weights, const float *q, const float *k, const float *v, const float *g, int32_t n,
                  int32_t d, int32_t dv, int32_t heads, float scale, int32_t mode, int32_t chunk) {
    aw_clear_error();
    if (n <= 0 || d <= 0 || dv <= 0 || heads <= 0) return aw_fail(AW_ERR_ARG, "gla: sizes must be positive");
    if (check_chunk("gla", chunk)) return AW_ERR_ARG;
    const aw_gla_desc ds = {.n = (size_t)n, .d = (size_t)d, .dv = (size_t)dv, .heads = (size_t)heads, .scale = scale,
                            .mode = mode, .chunk = (size_t)chunk};
    return api_done(gla_forward(out, weights, q, k, v, g, &ds));
}
