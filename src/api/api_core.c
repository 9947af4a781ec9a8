// api_core.c: build facts and the kernels, exported for tests and benchmarks.
#include "api.h"

#include "../kernels/kernels.h"
#include "../kernels/simd.h"

// 1 when this build's kernels use SIMD128, 0 for the scalar build.
AW_API int aw_simd_enabled(void) { return AW_SIMD; }

// c (M x N) = op(a) op(b). variant: 0 = NN, 1 = NT (b stored N x K), 2 = TN (a stored K x M).
// reference != 0 runs the naive double-accumulating twin. Dense leading dimensions.
AW_API int aw_matmul(float *c, const float *a, const float *b, int32_t M, int32_t N, int32_t K, int32_t variant,
                     int32_t reference) {
    if (M <= 0 || N <= 0 || K <= 0 || variant < 0 || variant > 2) return AW_ERR_ARG;
    size_t lda = variant == 2 ? (size_t)M : (size_t)K, ldb = variant == 1 ? (size_t)K : (size_t)N;
    typedef void (*mm)(float *, const float *, const float *, size_t, size_t, size_t, size_t, size_t, size_t, int);
    static const mm fast[3] = {aw_matmul_nn, aw_matmul_nt, aw_matmul_tn};
    static const mm ref[3] = {aw_matmul_nn_ref, aw_matmul_nt_ref, aw_matmul_tn_ref};
    (reference ? ref : fast)[variant](c, a, b, (size_t)M, (size_t)N, (size_t)K, lda, ldb, (size_t)N, 0);
    return AW_OK;
}

// In-place row softmax of x (rows x cols); reference != 0 uses libm exp in double.
AW_API int aw_softmax(float *x, int32_t rows, int32_t cols, int32_t reference) {
    if (rows <= 0 || cols <= 0) return AW_ERR_ARG;
    (reference ? aw_softmax_rows_ref : aw_softmax_rows)(x, (size_t)rows, (size_t)cols, (size_t)cols);
    return AW_OK;
}

// y = exp(x) with the vectorised approximation.
AW_API int aw_exp_vec(float *y, const float *x, int32_t n) {
    if (n <= 0) return AW_ERR_ARG;
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
