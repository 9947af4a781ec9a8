// api_local.c: local (sliding-window) attention for the wrapper (wasm/local.js).
#include "api.h"

#include "../attention/local_attention.h"

// out (n, dv); weights (heads, n, m) or NULL. causal: the last `window` keys; else window / 2 on
// each side; stride > 0 adds every stride-th key. path: 0 = fast, 1 = naive reference.
AW_API int aw_local_attention(float *out, float *weights, const float *q, const float *k, const float *v, int32_t n,
                              int32_t m, int32_t d, int32_t dv, int32_t heads, int32_t window, int32_t stride,
                              int32_t causal, float scale, int32_t path) {
    aw_clear_error();
    if (n <= 0 || m <= 0 || d <= 0 || dv <= 0 || heads <= 0 || window <= 0 || stride < 0)
        return aw_fail(AW_ERR_ARG, "local attention: sizes and window must be positive, stride >= 0");
    const aw_local_attention_desc ds = {(size_t)n, (size_t)m, (size_t)d, (size_t)dv, (size_t)heads, (size_t)window,
                                        causal != 0, scale, (size_t)stride, 0};
    return api_done(path == 1 ? local_attention_forward_ref(out, weights, q, k, v, &ds)
                              : local_attention_forward(out, weights, q, k, v, &ds));
}
