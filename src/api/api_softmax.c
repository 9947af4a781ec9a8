// api_softmax.c: softmax (scaled dot-product) attention for the wrapper.
#include "api.h"

#include "../attention/softmax_attention.h"

// out (n, dv); weights (heads, n, m) or NULL for the streaming path; key_mask (m) or NULL.
// path: 0 = fast (streaming or weights, by whether weights is given), 1 = naive reference.
AW_API int aw_softmax_attention(float *out, float *weights, const float *q, const float *k, const float *v,
                                const uint8_t *key_mask, int32_t n, int32_t m, int32_t d, int32_t dv,
                                int32_t heads, int32_t causal, float scale, int32_t path) {
    aw_clear_error();
    if (n <= 0 || m <= 0 || d <= 0 || dv <= 0 || heads <= 0 || d % heads || dv % heads)
        return aw_fail(AW_ERR_ARG, "softmax attention: sizes must be positive and heads must divide d and dv");
    aw_softmax_attention_desc desc = {(size_t)n, (size_t)m, (size_t)d, (size_t)dv, (size_t)heads,
                                      causal != 0, scale, key_mask, NULL, 0, 0, 0.0f, NULL, NULL};
    if (path == 1) {
        const int st = softmax_attention_forward_ref(out, weights, q, k, v, &desc);
        return st == AW_ERR_NOMEM ? aw_fail(st, "softmax attention: out of memory") : st;
    }
    return api_done(softmax_attention_forward(out, weights, q, k, v, &desc));
}
