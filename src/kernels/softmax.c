// softmax.c: a vectorised exp and the row softmax built on it.
#include "kernels.h"
#include "simd.h"

#include <math.h>

// exp(x) = 2^n * exp(r), n = round(x log2 e), r = x - n ln 2 (ln 2 split in two for accuracy),
// exp(r) by the Cephes expf polynomial on |r| <= ln2 / 2. Inputs at or below EXP_LO give 0 (so a
// masked -inf logit contributes exactly nothing); inputs above EXP_HI are clamped so the
// result stays finite (softmax never feeds those: it subtracts the row max first).
#define EXP_LO (-87.0f)
#define EXP_HI (88.3f)
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

float aw_expf(float x) {
    if (!(x > EXP_LO)) return 0.0f; // also catches -inf
    if (x > EXP_HI) x = EXP_HI;
    float n = nearbyintf(x * LOG2E);
    float r = x - n * LN2_HI;
    r = r - n * LN2_LO;
    float p = ((((P0 * r + P1) * r + P2) * r + P3) * r + P4) * r + P5;
    p = p * r * r + r + 1.0f;
    union { uint32_t u; float f; } s;
    s.u = (uint32_t)((int32_t)n + 127) << 23;
    return p * s.f;
}

#if AW_SIMD
static inline aw_f32x4 exp4(aw_f32x4 x) {
    aw_f32x4 keep = aw_gt(x, aw_splat(EXP_LO)); // false for -inf (and NaN)
    x = aw_min(aw_max(x, aw_splat(EXP_LO)), aw_splat(EXP_HI));
    aw_f32x4 n = aw_round(aw_mul(x, aw_splat(LOG2E)));
    aw_f32x4 r = aw_sub(x, aw_mul(n, aw_splat(LN2_HI)));
    r = aw_sub(r, aw_mul(n, aw_splat(LN2_LO)));
    aw_f32x4 p = aw_madd(aw_splat(P1), aw_splat(P0), r);
    p = aw_madd(aw_splat(P2), p, r);
    p = aw_madd(aw_splat(P3), p, r);
    p = aw_madd(aw_splat(P4), p, r);
    p = aw_madd(aw_splat(P5), p, r);
    p = aw_add(aw_madd(r, p, aw_mul(r, r)), aw_splat(1.0f));
    aw_i32x4 e = aw_i32_shl(aw_i32_add(aw_cvt_i32(n), aw_i32_splat(127)), 23);
    aw_f32x4 y = aw_mul(p, aw_cast_f32(e));
    return aw_and(keep, y);
}
#endif

void aw_exp(float *y, const float *x, size_t n) {
    size_t i = 0;
#if AW_SIMD
    for (; i + 4 <= n; i += 4) aw_store(y + i, exp4(aw_load(x + i)));
#endif
    for (; i < n; i++) y[i] = aw_expf(x[i]);
}

float aw_exp_shift_sum(float *y, const float *x, float shift, size_t n) {
    size_t i = 0;
    float sum = 0.0f;
#if AW_SIMD
    aw_f32x4 vs = aw_splat(shift), acc = aw_splat(0.0f);
    for (; i + 4 <= n; i += 4) {
        aw_f32x4 e = exp4(aw_sub(aw_load(x + i), vs));
        aw_store(y + i, e);
        acc = aw_add(acc, e);
    }
    sum = aw_hsum(acc);
#endif
    for (; i < n; i++) {
        y[i] = aw_expf(x[i] - shift);
        sum += y[i];
    }
    return sum;
}

float aw_max_value(const float *x, size_t n) {
    size_t i = 0;
    float m = -INFINITY;
#if AW_SIMD
    if (n >= 4) {
        aw_f32x4 vm = aw_load(x);
        for (i = 4; i + 4 <= n; i += 4) vm = aw_max(vm, aw_load(x + i));
        m = aw_hmax(vm);
    }
#endif
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

void aw_softmax_rows(float *x, size_t rows, size_t cols, size_t ld) {
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        float mx = aw_max_value(row, cols);
        if (mx == -INFINITY) { // nothing allowed in this row
            for (size_t j = 0; j < cols; j++) row[j] = 0.0f;
            continue;
        }
        float sum = aw_exp_shift_sum(row, row, mx, cols);
        aw_scale(row, row, 1.0f / sum, cols); // sum >= 1: the max element contributes exp(0)
    }
}

void aw_softmax_rows_ref(float *x, size_t rows, size_t cols, size_t ld) {
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ld;
        float mx = -INFINITY;
        for (size_t j = 0; j < cols; j++) mx = row[j] > mx ? row[j] : mx;
        if (mx == -INFINITY) {
            for (size_t j = 0; j < cols; j++) row[j] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (size_t j = 0; j < cols; j++) sum += exp((double)row[j] - mx);
        for (size_t j = 0; j < cols; j++) row[j] = (float)(exp((double)row[j] - mx) / sum);
    }
}
