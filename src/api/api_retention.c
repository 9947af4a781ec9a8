// api_retention.c: retention for the wrapper (wasm/retention.js).
#include "api.h"

#include "../attention/retention.h"
#include "../kernels/size.h"

#include <stdlib.h>

// out (n, dv); weights (heads, n, n) or NULL. gamma (heads) or NULL for RetNet's schedule.
// mode: 0 parallel, 1 recurrent, 2 chunked (causal only); chunk 0 = the default.
// path: 0 = fast, 1 = naive reference.
AW_API int aw_retention(float *out, float *weights, const float *q, const float *k, const float *v, const float *gamma,
                        int32_t n, int32_t d, int32_t dv, int32_t heads, int32_t causal, float scale, int32_t mode,
                        int32_t chunk, int32_t path) {
    aw_clear_error();
    if (n <= 0 || d <= 0 || dv <= 0 || heads <= 0) return aw_fail(AW_ERR_ARG, "retention: sizes must be positive");
    if (chunk < 0 || chunk > AW_CHUNK_MAX)
        return aw_fail(AW_ERR_ARG, "retention: chunk must be an integer in [1, %d], got %d", AW_CHUNK_MAX, (int)chunk);
    if (chunk != 0 && mode != 2)
        return aw_fail(AW_ERR_ARG, "retention: chunk = %d applies to mode 'chunked' only (mode is '%s')", (int)chunk,
                       mode == 0 ? "parallel" : mode == 1 ? "recurrent" : "unknown");
    float *own = NULL;
    if (!gamma) {
        if (!(own = aw_alloc_floats((size_t)heads))) return api_done(AW_ERR_NOMEM);
        retention_default_gammas(own, (size_t)heads);
    }
    const aw_retention_desc ds = {(size_t)n, (size_t)d, (size_t)dv, (size_t)heads, gamma ? gamma : own, causal != 0,
                                  scale, mode, (size_t)chunk};
    const int st = path == 1 ? retention_forward_ref(out, weights, q, k, v, &ds)
                             : retention_forward(out, weights, q, k, v, &ds);
    free(own);
    return api_done(st);
}

