// api_linformer.c: Linformer for the wrapper (wasm/linformer.js).
#include "api.h"

#include "../attention/linformer.h"

// out (n, dv); weights (heads, n, n) (the implied attention P F) or NULL; E, F (k, L).
// causal != 0 is refused with the reason. path: 0 = fast, 1 = naive reference.
AW_API int aw_linformer(float *out, float *weights, const float *q, const float *kk, const float *v, const float *E,
                        const float *F, int32_t n, int32_t d, int32_t dv, int32_t heads, int32_t k, int32_t L,
                        int32_t causal, float scale, int32_t path) {
    aw_clear_error();
    if (causal) return aw_fail(AW_ERR_ARG, "linformer: causal: true is not possible: " LINFORMER_NO_CAUSAL);
    if (n <= 0 || d <= 0 || dv <= 0 || heads <= 0 || k <= 0 || L <= 0)
        return aw_fail(AW_ERR_ARG, "linformer: sizes must be positive");
    const aw_linformer_desc ds = {(size_t)n, (size_t)d, (size_t)dv, (size_t)heads, (size_t)k, (size_t)L, scale};
    return api_done(path == 1 ? linformer_forward_ref(out, weights, q, kk, v, E, F, &ds)
                              : linformer_forward(out, weights, q, kk, v, E, F, &ds));
}
