// api_core.c: build facts and the kernels, exported for tests and benchmarks.
#include "api.h"

#include "../kernels/kernels.h"
#include "../kernels/simd.h"
#include "../model/forms.h"

#include <malloc.h>

// 1 when this build's kernels use SIMD128, 0 for the scalar build.
AW_API int aw_simd_enabled(void) { return AW_SIMD; }
// 1 in the relaxed-SIMD builds (aw_madd is f32x4.relaxed_madd: src/kernels/simd.h)
AW_API int aw_relaxed_enabled(void) { return AW_RELAXED; }

// c (M x N) = op(a) op(b). variant: 0 = NN, 1 = NT (b stored N x K), 2 = TN (a stored K x M).
// reference != 0 runs the naive double-accumulating twin. Dense leading dimensions.
AW_API int aw_matmul(float *c, const float *a, const float *b, int32_t M, int32_t N, int32_t K, int32_t variant,
                     int32_t reference) {
    aw_clear_error();
    if (M <= 0 || N <= 0 || K <= 0 || variant < 0 || variant > 2)
        return aw_fail(AW_ERR_ARG, "matmul: M, N, K must be positive and variant 0, 1 or 2");
    size_t lda = variant == 2 ? (size_t)M : (size_t)K, ldb = variant == 1 ? (size_t)K : (size_t)N;
    typedef void (*mm)(float *, const float *, const float *, size_t, size_t, size_t, size_t, size_t, size_t, int);
    static const mm fast[3] = {aw_matmul_nn, aw_matmul_nt, aw_matmul_tn};
    static const mm ref[3] = {aw_matmul_nn_ref, aw_matmul_nt_ref, aw_matmul_tn_ref};
    (reference ? ref : fast)[variant](c, a, b, (size_t)M, (size_t)N, (size_t)K, lda, ldb, (size_t)N, 0);
    return AW_OK;
}

// In-place row softmax of x (rows x cols); reference != 0 uses libm exp in double.
AW_API int aw_softmax(float *x, int32_t rows, int32_t cols, int32_t reference) {
    aw_clear_error();
    if (rows <= 0 || cols <= 0) return aw_fail(AW_ERR_ARG, "softmax: rows and cols must be positive");
    (reference ? aw_softmax_rows_ref : aw_softmax_rows)(x, (size_t)rows, (size_t)cols, (size_t)cols);
    return AW_OK;
}

// y = exp(x) with the vectorised approximation.
AW_API int aw_exp_vec(float *y, const float *x, int32_t n) {
    aw_clear_error();
    if (n <= 0) return aw_fail(AW_ERR_ARG, "exp: n must be positive");
    aw_exp(y, x, (size_t)n);
    return AW_OK;
}

// Index of the first NaN or infinity in x (n floats), or -1 when all are finite. The wrapper
// runs it on inputs right after copying them in, before any computation.
AW_API int32_t aw_first_nonfinite(const float *x, int32_t n) {
    if (n <= 0) return -1;
    size_t i = aw_find_nonfinite(x, (size_t)n);
    return i == (size_t)n ? -1 : (int32_t)i;
}

// ---- errors ------------------------------------------------------------------------------------

// The message of the last failure (status.h), NUL-terminated; "" when none. The wrapper reads it
// in one place (Core.check) and throws it.
AW_API const char *aw_error(void) { return aw_error_message(); }
AW_API void aw_error_clear(void) { aw_clear_error(); }
AW_API int aw_error_code(void) { return aw_error_status(); }

// ---- the registry of attention forms (src/model/forms.h) ---------------------------------------
// The wrapper and the playground read the list of forms from the module they loaded.

// The registry as JSON into buf (cap bytes); returns the length it needs (call with cap 0 first).
AW_API int32_t aw_forms_json_write(char *buf, int32_t cap) {
    const size_t len = aw_forms_json(buf, cap > 0 ? (size_t)cap : 0);
    return len > 0x7fffffff ? -1 : (int32_t)len;
}

// ---- memory ------------------------------------------------------------------------------------

// Bytes the allocator has handed out and not had back: what live objects hold. Leak tests read
// this (the heap's size never shrinks, so it cannot show a leak).
AW_API double aw_heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    return (double)mallinfo2().uordblks;
#else
    struct mallinfo mi = mallinfo();
    return (double)(unsigned)mi.uordblks;
#endif
}
