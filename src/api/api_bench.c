// api_bench.c: copy-free entry points for bench/peers.bench.js. The public API copies its
// inputs into the wasm heap and the result out on every call; these run a kernel `reps`
// times on buffers already in wasm memory, so the benchmark can report kernel speed on its own
// beside the per-call cost a user sees.
#include "api.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../kernels/quant.h"
#include "../kernels/size.h"
#include "../kernels/simd.h"

#include <stdlib.h>
#include <string.h>

// reps times: c (M x N) = a (M x K) b (K x N) (variant 0), a b^T with b (N x K) (variant 1),
// or a^T b with a (K x M) (variant 2); 3 and 4: 0 and 1 with b in BF16 (uint16 values, read from b's
// address). Dense leading dimensions.
AW_API int aw_bench_matmul(float *c, const float *a, const float *b, int32_t M, int32_t N, int32_t K,
                           int32_t variant, int32_t reps) {
    if (M <= 0 || N <= 0 || K <= 0 || variant < 0 || variant > 4 || reps <= 0)
        return aw_fail(AW_ERR_ARG, "matmul bench: sizes and reps must be positive, variant 0 to 4");
    if (variant >= 3) { // BF16 b
        const uint16_t *h = (const uint16_t *)(const void *)b;
        for (int32_t r = 0; r < reps; r++) {
            if (variant == 3) aw_matmul_nn_bf16(c, a, h, (size_t)M, (size_t)N, (size_t)K, (size_t)K, (size_t)N, (size_t)N, 0);
            else aw_matmul_nt_bf16(c, a, h, (size_t)M, (size_t)N, (size_t)K, (size_t)K, (size_t)K, (size_t)N, 0);
        }
        return AW_OK;
    }
    size_t lda = variant == 2 ? (size_t)M : (size_t)K, ldb = variant == 1 ? (size_t)K : (size_t)N;
    typedef void (*mm)(float *, const float *, const float *, size_t, size_t, size_t, size_t, size_t, size_t, int);
    static const mm fast[3] = {aw_matmul_nn, aw_matmul_nt, aw_matmul_tn};
    for (int32_t r = 0; r < reps; r++) fast[variant](c, a, b, (size_t)M, (size_t)N, (size_t)K, lda, ldb, (size_t)N, 0);
    return AW_OK;
}

// The matmul kernel variant (src/kernels/matmul.c): sets it when v is 0, 1 or 2; returns the one in use.
AW_API int32_t aw_matmul_variant(int32_t v) { return aw_matmul_set_variant(v); }

// The build's own multiply-add peak, measured instead of assumed: 12 independent chains of
// acc = acc * m + c through aw_madd (mul + add in the SIMD128 build, one fused relaxed_madd in the
// relaxed one), iters steps each, 12 * 4 * 2 * iters flop. What one core can reach differs by CPU
// (Zen has separate multiply and add pipes, Intel cores share two ports between them) and by
// build; the benchmark reports the matmul kernel as a share of this. Returns the sum of lanes
// (so the work cannot be dropped); scalar builds return 0 at once.
AW_API float aw_bench_peak(int32_t iters) {
#if AW_SIMD
    const aw_f32x4 m = aw_splat(0.999f), c = aw_splat(0.001f);
    aw_f32x4 a0 = aw_splat(0.1f), a1 = aw_splat(0.2f), a2 = aw_splat(0.3f), a3 = aw_splat(0.4f);
    aw_f32x4 a4 = aw_splat(0.5f), a5 = aw_splat(0.6f), a6 = aw_splat(0.7f), a7 = aw_splat(0.8f);
    aw_f32x4 a8 = aw_splat(0.9f), a9 = aw_splat(1.1f), a10 = aw_splat(1.2f), a11 = aw_splat(1.3f);
    for (int32_t i = 0; i < iters; i++) {
        a0 = aw_madd(c, a0, m); a1 = aw_madd(c, a1, m); a2 = aw_madd(c, a2, m); a3 = aw_madd(c, a3, m);
        a4 = aw_madd(c, a4, m); a5 = aw_madd(c, a5, m); a6 = aw_madd(c, a6, m); a7 = aw_madd(c, a7, m);
        a8 = aw_madd(c, a8, m); a9 = aw_madd(c, a9, m); a10 = aw_madd(c, a10, m); a11 = aw_madd(c, a11, m);
    }
    aw_f32x4 s = aw_add(aw_add(aw_add(a0, a1), aw_add(a2, a3)), aw_add(aw_add(a4, a5), aw_add(a6, a7)));
    s = aw_add(s, aw_add(aw_add(a8, a9), aw_add(a10, a11)));
    return aw_hsum(s);
#else
    (void)iters;
    return 0.0f;
#endif
}

// Memory bandwidth, the limit of decoding (which streams every weight once per token), for
// bench/generate.bench.js and the native tools/generate.c alike; the caller times the call.
// Sums [begin, end) of src: 16 floats a step in four accumulators (the read stream's loop).
static float read_sum(const float *src, size_t begin, size_t end) {
    size_t i = begin;
    float total = 0.0f;
#if AW_SIMD
    aw_f32x4 a0 = aw_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 16 <= end; i += 16) {
        a0 = aw_add(a0, aw_load(src + i)), a1 = aw_add(a1, aw_load(src + i + 4));
        a2 = aw_add(a2, aw_load(src + i + 8)), a3 = aw_add(a3, aw_load(src + i + 12));
    }
    total = aw_hsum(aw_add(aw_add(a0, a1), aw_add(a2, a3)));
#endif
    for (; i < end; i++) total += src[i];
    return total;
}

typedef struct {
    const float *src;
    size_t n, cut;
    float sums[AW_PIECES];
} read_job;

static void read_piece(void *ctx, size_t item) {
    read_job *j = ctx;
    const size_t begin = item * j->cut, end = j->n - begin < j->cut ? j->n : begin + j->cut;
    j->sums[item] = read_sum(j->src, begin, end);
}

// reps passes over n floats: mode 0 copies src to dst (memcpy), 1 reads src on the calling thread,
// 2 reads src in AW_PIECES pieces over the thread pool (every thread the library runs: the read
// bandwidth of all the cores a multi-threaded decoder can use). Returns a sum, so no pass is dropped.
AW_API float aw_bench_stream(float *dst, const float *src, int32_t n, int32_t mode, int32_t reps) {
    if (n <= 0 || reps <= 0 || mode < 0 || mode > 2) return 0.0f;
    const size_t len = (size_t)n;
    float total = 0.0f;
    for (int32_t r = 0; r < reps; r++) {
        if (mode == 0) {
            memcpy(dst, src, len * sizeof(float));
            total += dst[len / 2];
        } else if (mode == 1) {
            total += read_sum(src, 0, len);
        } else {
            read_job j = {.src = src, .n = len};
            const size_t pieces = aw_pieces(len, 1024, &j.cut);
            aw_parallel_for(pieces, read_piece, &j);
            for (size_t p = 0; p < pieces; p++) total += j.sums[p];
        }
    }
    return total;
}

// reps times y (rows) = W x for a quantized W (rows x cols, format "q8_0" | "q4_0", groups of
// `group`) made from a fixed pseudo-random fill, and x quantized once: the decoder's gemv on its own.
// The matrix stays in wasm memory for the next call of the same sizes; a null format frees it.
AW_API int aw_bench_qgemv(const char *format, int32_t rows, int32_t cols, int32_t group, int32_t reps, float *y) {
    static aw_qmat m;
    static void *work;
    static aw_qact x;
    if (!format) { // free the held matrix
        free(m.q), free(m.s), free(work);
        memset(&m, 0, sizeof m), work = NULL;
        return AW_OK;
    }
    const int f = aw_qformat_find(format);
    if (f == AW_QF_NONE || rows < 4 || cols < 1 || group < 1 || !aw_qgroup_valid(f, (size_t)group) || cols % group || reps < 0)
        return aw_fail(AW_ERR_ARG, "qgemv bench: format q8_0 or q4_0, rows >= 4, a group the format takes, cols a multiple of it");
    if (m.format != f || m.rows != (size_t)rows || m.cols != (size_t)cols || m.group != (size_t)group) {
        free(m.q), free(m.s), free(work);
        const size_t rb = AW_QFORMATS[f].row_bytes((size_t)cols), ng = (size_t)cols / (size_t)group;
        m = (aw_qmat){f, (size_t)rows, (size_t)cols, (size_t)group, aw_alloc(aw_size_mul((size_t)rows, rb), 1),
                      aw_alloc_floats(aw_size_mul((size_t)rows, ng))};
        work = aw_alloc(aw_qact_bytes((size_t)cols, (size_t)group), 1);
        float *row = aw_alloc_floats((size_t)cols);
        if (!m.q || !m.s || !work || !row) return free(row), aw_fail(AW_ERR_NOMEM, "qgemv bench: out of memory");
        uint32_t seed = 12345;
        for (size_t j = 0; j < (size_t)rows; j++) {
            for (size_t i = 0; i < (size_t)cols; i++) seed = seed * 1664525u + 1013904223u, row[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
            AW_QFORMATS[f].quantize_row(m.q + j * rb, m.s + j * ng, row, (size_t)cols, (size_t)group);
        }
        for (size_t i = 0; i < (size_t)cols; i++) seed = seed * 1664525u + 1013904223u, row[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        aw_qact_init(&x, work, row, (size_t)cols, (size_t)group);
        free(row);
    }
    for (int32_t r = 0; r < reps; r++) aw_qgemv(y, &m, &x, NULL);
    return AW_OK;
}
