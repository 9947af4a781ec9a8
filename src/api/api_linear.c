// api_linear.c: linear attention and its decoding state, for the wrapper (wasm/linear.js).
#include "api.h"

#include "../attention/linear_attention.h"

// out (n, dv); weights (heads, n, m) or NULL. feature: 0 elu+1, 1 relu, 2 efficient, 3 taylor.
// mode (causal only): 0 parallel, 1 recurrent. path: 0 = fast, 1 = naive reference.
AW_API int aw_linear_attention(float *out, float *weights, const float *q, const float *k, const float *v,
                               int32_t n, int32_t m, int32_t d, int32_t dv, int32_t heads, int32_t feature,
                               int32_t causal, int32_t mode, int32_t path) {
    if (n <= 0 || m <= 0 || d <= 0 || dv <= 0 || heads <= 0) return AW_ERR_ARG;
    aw_linear_attention_desc desc = {(size_t)n, (size_t)m, (size_t)d, (size_t)dv, (size_t)heads,
                                     feature, causal != 0, mode};
    if (path == 1) return linear_attention_forward_ref(out, weights, q, k, v, &desc);
    return linear_attention_forward(out, weights, q, k, v, &desc);
}

// A decoding state (heads x (S, z)); NULL (0) for a bad argument, efficient, or no memory.
AW_API aw_linear_state *aw_linear_state_create(int32_t d, int32_t dv, int32_t heads, int32_t feature) {
    if (d <= 0 || dv <= 0 || heads <= 0) return NULL;
    return linear_state_create((size_t)d, (size_t)dv, (size_t)heads, feature);
}

// out (dv) = the next causal output row after adding k (d), v (dv); q (d).
AW_API int aw_linear_state_step(float *out, aw_linear_state *state, const float *q, const float *k, const float *v) {
    return linear_state_step(out, state, q, k, v);
}

AW_API int aw_linear_state_reset(aw_linear_state *state) {
    if (!state) return AW_ERR_ARG;
    linear_state_reset(state);
    return AW_OK;
}

// Steps taken since create or reset.
AW_API int32_t aw_linear_state_position(const aw_linear_state *state) {
    return (int32_t)linear_state_position(state);
}

AW_API void aw_linear_state_destroy(aw_linear_state *state) { linear_state_destroy(state); }
