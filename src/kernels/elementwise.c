// elementwise.c: small vector helpers and reductions (each with its scalar tail).
#include "kernels.h"
#include "simd.h"
#include "parallel.h"

void aw_scale(float *y, const float *x, float s, size_t n) {
    size_t i = 0;
#if AW_SIMD
    aw_f32x4 vs = aw_splat(s);
    for (; i + 4 <= n; i += 4) aw_store(y + i, aw_mul(aw_load(x + i), vs));
#endif
    for (; i < n; i++) y[i] = x[i] * s;
}

void aw_axpy(float *y, float a, const float *x, size_t n) {
    size_t i = 0;
#if AW_SIMD
    aw_f32x4 va = aw_splat(a);
    for (; i + 4 <= n; i += 4) aw_store(y + i, aw_madd(aw_load(y + i), va, aw_load(x + i)));
#endif
    for (; i < n; i++) y[i] += a * x[i];
}

float aw_dot(const float *a, const float *b, size_t n) {
    size_t i = 0;
    float s = 0.0f;
#if AW_SIMD
    aw_f32x4 acc0 = aw_splat(0.0f), acc1 = aw_splat(0.0f);
    for (; i + 8 <= n; i += 8) {
        acc0 = aw_madd(acc0, aw_load(a + i), aw_load(b + i));
        acc1 = aw_madd(acc1, aw_load(a + i + 4), aw_load(b + i + 4));
    }
    for (; i + 4 <= n; i += 4) acc0 = aw_madd(acc0, aw_load(a + i), aw_load(b + i));
    s = aw_hsum(aw_add(acc0, acc1));
#endif
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

float aw_sum(const float *x, size_t n) {
    size_t i = 0;
    float s = 0.0f;
#if AW_SIMD
    aw_f32x4 acc = aw_splat(0.0f);
    for (; i + 4 <= n; i += 4) acc = aw_add(acc, aw_load(x + i));
    s = aw_hsum(acc);
#endif
    for (; i < n; i++) s += x[i];
    return s;
}

// Blocked so both sides stay in cache for large matrices.
void aw_transpose(float *dst, const float *src, size_t rows, size_t cols, size_t ld_src, size_t ld_dst) {
    enum { TB = 32 };
    for (size_t i0 = 0; i0 < rows; i0 += TB)
        for (size_t j0 = 0; j0 < cols; j0 += TB) {
            size_t i1 = i0 + TB < rows ? i0 + TB : rows, j1 = j0 + TB < cols ? j0 + TB : cols;
            for (size_t i = i0; i < i1; i++)
                for (size_t j = j0; j < j1; j++) dst[j * ld_dst + i] = src[i * ld_src + j];
        }
}

// x * 0 is NaN exactly when x is NaN or +-inf, so one vector pass of adds decides; only a
// failing array is scanned again to find the first bad index.
static size_t find_nonfinite_serial(const float *x, size_t n) {
    size_t i = 0;
    float acc = 0.0f;
#if AW_SIMD
    aw_f32x4 zero = aw_splat(0.0f), a0 = zero, a1 = zero;
    for (; i + 8 <= n; i += 8) {
        a0 = aw_add(a0, aw_mul(aw_load(x + i), zero));
        a1 = aw_add(a1, aw_mul(aw_load(x + i + 4), zero));
    }
    acc = aw_hsum(aw_add(a0, a1));
#endif
    for (; i < n; i++) acc += x[i] * 0.0f;
    if (acc == 0.0f) return n;
    for (i = 0; i < n; i++)
        if (x[i] - x[i] != 0.0f) return i; // NaN - NaN and inf - inf are NaN
    return n;
}

// Threads (parallel.h): up to AW_PIECES pieces of at least 4 grains, each finding its own first
// bad index; the answer is the first piece's that has one.
typedef struct {
    const float *x;
    size_t n, piece, bad[AW_PIECES];
} scan_job;

static void scan_piece(void *ctx, size_t p) {
    scan_job *j = ctx;
    const size_t i0 = p * j->piece, len = j->n - i0 < j->piece ? j->n - i0 : j->piece;
    j->bad[p] = i0 + find_nonfinite_serial(j->x + i0, len);
}

size_t aw_find_nonfinite(const float *x, size_t n) {
    size_t piece;
    const size_t pieces = aw_pieces(n, 4 * AW_GRAIN, &piece);
    if (pieces <= 1) return find_nonfinite_serial(x, n);
    scan_job j = {.x = x, .n = n, .piece = piece};
    aw_parallel_for(pieces, scan_piece, &j);
    for (size_t p = 0; p < pieces; p++)
        if (j.bad[p] != (p + 1 < pieces ? (p + 1) * piece : n)) return j.bad[p];
    return n;
}
