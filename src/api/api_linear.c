// api_linear.c: linear attention and its decoding state, for the wrapper (wasm/linear.js).
#include "api.h"

#include "../attention/linear_attention.h"

// out (n, dv); weights (heads, n, m) or NULL. feature: 0 elu+1, 1 relu, 2 efficient, 3 taylor.
// mode (causal only): 0 parallel, 1 recurrent. path: 0 = fast, 1 = naive reference.
AW_API int aw_linear_attention(float *out, float *weights, const float *q, const float *k, const float *v,
                               int32_t n, int32_t m, int32_t d, int32_t dv, int32_t heads, int32_t feature,
                               int32_t causal, int32_t mode, int32_t path) {
    aw_clear_error();
    if (n <= 0 || m <= 0 || d <= 0 || dv <= 0 || heads <= 0)
        return aw_fail(AW_ERR_ARG, "linear attention: n, m, d, dv and heads must be positive");
    aw_linear_attention_desc desc = {(size_t)n, (size_t)m, (size_t)d, (size_t)dv, (size_t)heads,
                                     feature, causal != 0, mode};
    const int st = path == 1 ? linear_attention_forward_ref(out, weights, q, k, v, &desc)
                             : linear_attention_forward(out, weights, q, k, v, &desc);
    if (st == AW_ERR_NOMEM) // the sizes passed the wrapper's checks, but the workspace did not fit
        return aw_fail(st, "out of memory: the workspace (the state of d x dv / heads floats per head, plus chunk "
                           "buffers) does not fit; use a smaller d or dv");
    if (st == AW_ERR_NONFINITE)
        return aw_fail(st, "the result overflowed float32 (an Infinity appeared); scale q, k or v down");
    return api_done(st);
}

// A decoding state (heads x (S, z)); NULL (0) for a bad argument, efficient, or no memory.
AW_API aw_linear_state *aw_linear_state_create(int32_t d, int32_t dv, int32_t heads, int32_t feature) {
    aw_clear_error();
    if (d <= 0 || dv <= 0 || heads <= 0) return aw_fail(AW_ERR_ARG, "d, dv and heads must be positive"), NULL;
    const size_t bytes = linear_state_bytes((size_t)d, (size_t)dv, (size_t)heads, feature);
    if (bytes == 0) return aw_fail(AW_ERR_ARG, "heads must divide d and dv, and the feature map needs a causal form"), NULL;
    if (bytes == (size_t)-1)
        return aw_fail(AW_ERR_NOMEM, "the state needs heads x D x dv/heads floats (%.0f MiB), more than this build's "
                                     "address space; use a smaller d or dv",
                       (double)d * (double)dv / (double)heads * 4.0 / 1048576.0), NULL;
    aw_linear_state *st = linear_state_create((size_t)d, (size_t)dv, (size_t)heads, feature);
    if (!st) aw_fail(AW_ERR_NOMEM, "out of memory: the state needs %.1f MiB", (double)bytes / 1048576.0);
    return st;
}

// out (dv) = the next causal output row after adding k (d), v (dv); q (d).
AW_API int aw_linear_state_step(float *out, aw_linear_state *state, const float *q, const float *k, const float *v) {
    aw_clear_error();
    return api_done(linear_state_step(out, state, q, k, v));
}

AW_API int aw_linear_state_reset(aw_linear_state *state) {
    aw_clear_error();
    if (!state) return aw_fail(AW_ERR_ARG, "no state");
    linear_state_reset(state);
    return AW_OK;
}

// Steps taken since create or reset.
AW_API int32_t aw_linear_state_position(const aw_linear_state *state) {
    return (int32_t)linear_state_position(state);
}

AW_API void aw_linear_state_destroy(aw_linear_state *state) { linear_state_destroy(state); }
