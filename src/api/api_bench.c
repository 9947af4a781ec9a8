// api_bench.c: copy-free entry points for bench/peers.bench.js. The public API copies its
// inputs into the wasm heap and the result out on every call; these run a kernel `reps`
// times on buffers already in wasm memory, so the benchmark can report kernel speed on its own
// beside the per-call cost a user sees.
#include "api.h"

#include "../kernels/kernels.h"

// reps times: c (M x N) = a (M x K) b (K x N) (variant 0), a b^T with b (N x K) (variant 1),
// or a^T b with a (K x M) (variant 2). Dense leading dimensions.
AW_API int aw_bench_matmul(float *c, const float *a, const float *b, int32_t M, int32_t N, int32_t K,
                           int32_t variant, int32_t reps) {
    if (M <= 0 || N <= 0 || K <= 0 || variant < 0 || variant > 2 || reps <= 0)
        return aw_fail(AW_ERR_ARG, "matmul bench: sizes and reps must be positive, variant 0, 1 or 2");
    size_t lda = variant == 2 ? (size_t)M : (size_t)K, ldb = variant == 1 ? (size_t)K : (size_t)N;
    typedef void (*mm)(float *, const float *, const float *, size_t, size_t, size_t, size_t, size_t, size_t, int);
    static const mm fast[3] = {aw_matmul_nn, aw_matmul_nt, aw_matmul_tn};
    for (int32_t r = 0; r < reps; r++) fast[variant](c, a, b, (size_t)M, (size_t)N, (size_t)K, lda, ldb, (size_t)N, 0);
    return AW_OK;
}

// The matmul kernel variant (src/kernels/matmul.c): sets it when v is 0, 1 or 2; returns the one in use.
AW_API int32_t aw_matmul_variant(int32_t v) { return aw_matmul_set_variant(v); }
