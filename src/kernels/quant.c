// quant.c: the weight formats of quant.h and their integer dot products, per build:
//   scalar    plain C (and the reference every build keeps: *_row_ref)
//   SIMD128   both operands widened to i16, i32x4.dot_i16x8_s; four rows at once, whose sums are
//             scaled lane by lane in the reference's order
//   relaxed   i16x8.relaxed_dot_i8x16_i7x16_s with its second operand in [0, 127] (quant.h)
// A group's integer sum is exact in every build, so the three agree bit for bit.
#include "quant.h"

#include "parallel.h"
#include "simd.h"
#include "size.h"
#include "status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if AW_SIMD && defined(__wasm_simd128__)
#define QSIMD 1
#else
#define QSIMD 0 // the scalar build and the native (SSE2) test builds: the plain-C kernels
#endif

// ---- q8_0 -----------------------------------------------------------------------------------

static size_t q8_row_bytes(size_t n) { return n; }

// s = max|x| / 127, q = round(x / s) (runq.c's quantize; s = 0 gives q = 0). The vector builds
// quantize four values at once with the same IEEE operations: roundf as trunc, then one step away
// from zero when the dropped part is at least 1/2 (exact: |x / s| < 2^23), the same clamps; so
// every build writes the same integers (and the activations, quantized every call, cost less).
static void q8_quantize_row(uint8_t *q, float *s, const float *x, size_t n, size_t G) {
    int8_t *qi = (int8_t *)q;
    for (size_t g = 0; g < n / G; g++) {
        const float *xg = x + g * G;
        float amax = 0.0f;
        size_t i = 0;
#if QSIMD
        v128_t vmax = wasm_f32x4_splat(0.0f);
        for (; i + 4 <= G; i += 4) { // a > max ? a : max, lane by lane: a NaN is passed over, as below
            const v128_t a = wasm_f32x4_abs(wasm_v128_load(xg + i));
            vmax = wasm_v128_bitselect(a, vmax, wasm_f32x4_gt(a, vmax));
        }
        float lanes[4];
        wasm_v128_store(lanes, vmax);
        for (int l = 0; l < 4; l++) amax = lanes[l] > amax ? lanes[l] : amax;
#endif
        for (; i < G; i++) amax = fabsf(xg[i]) > amax ? fabsf(xg[i]) : amax;
        const float scale = amax / 127.0f;
        s[g] = scale;
        i = 0;
#if QSIMD
        if (scale > 0.0f) {
            const v128_t sc = wasm_f32x4_splat(scale), half = wasm_f32x4_splat(0.5f), one = wasm_f32x4_splat(1.0f);
            const v128_t hi = wasm_f32x4_splat(127.0f), lo = wasm_f32x4_splat(-127.0f), sign = wasm_i32x4_splat((int32_t)0x80000000u);
            for (; i + 16 <= G; i += 16) {
                v128_t r[4];
                for (int k = 0; k < 4; k++) {
                    const v128_t v = wasm_f32x4_div(wasm_v128_load(xg + i + 4 * k), sc), t = wasm_f32x4_trunc(v);
                    const v128_t away = wasm_f32x4_ge(wasm_f32x4_abs(wasm_f32x4_sub(v, t)), half);
                    v128_t u = wasm_f32x4_add(t, wasm_v128_and(away, wasm_v128_or(one, wasm_v128_and(v, sign))));
                    u = wasm_v128_bitselect(u, hi, wasm_f32x4_lt(u, hi)); // NaN lands on 127, as below
                    u = wasm_v128_bitselect(u, lo, wasm_f32x4_gt(u, lo));
                    r[k] = wasm_i32x4_trunc_sat_f32x4(u);
                }
                wasm_v128_store(qi + g * G + i, wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(r[0], r[1]),
                                                                         wasm_i16x8_narrow_i32x4(r[2], r[3])));
            }
        }
#endif
        for (; i < G; i++) {
            float v = scale > 0.0f ? roundf(xg[i] / scale) : 0.0f;
            v = v < 127.0f ? v : 127.0f; // |x| <= amax keeps it in range; NaN lands here too
            v = v > -127.0f ? v : -127.0f;
            qi[g * G + i] = (int8_t)v;
        }
    }
}

static void q8_dequantize_row(float *out, const uint8_t *q, const float *s, size_t n, size_t G) {
    const int8_t *qi = (const int8_t *)q;
    for (size_t i = 0; i < n; i++) out[i] = (float)qi[i] * s[i / G];
}

// the row's value: sum_g ((float)isum_g * ws[g]) * xs[g], g ascending (the order every build keeps)
static float q8_row_ref(const uint8_t *q, const float *ws, const aw_qact *x) {
    const int8_t *w = (const int8_t *)q;
    const size_t G = x->G;
    float val = 0.0f;
    for (size_t g = 0; g < x->K / G; g++) {
        int32_t s = 0;
        for (size_t i = g * G; i < (g + 1) * G; i++) s += (int32_t)w[i] * (int32_t)x->q[i];
        val += ((float)s * ws[g]) * x->s[g];
    }
    return val;
}

// ---- q4_0 -----------------------------------------------------------------------------------

static size_t q4_row_bytes(size_t n) { return n / 2; }

// ggml's quantize_row_q4_0_ref: d = m / -8 (m: the value of largest magnitude), u = min(15, (int)(x / d + 8.5))
static void q4_quantize_row(uint8_t *q, float *s, const float *x, size_t n, size_t G) {
    const size_t half = G / 2;
    for (size_t g = 0; g < n / G; g++) {
        const float *xg = x + g * G;
        float amax = 0.0f, max = 0.0f;
        for (size_t i = 0; i < G; i++)
            if (amax < fabsf(xg[i])) amax = fabsf(xg[i]), max = xg[i];
        const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        s[g] = d;
        for (size_t i = 0; i < half; i++) {
            const float x0 = xg[i] * id + 8.5f, x1 = xg[i + half] * id + 8.5f;
            const int u0 = x0 >= 15.0f ? 15 : x0 > 0.0f ? (int)x0 : 0, u1 = x1 >= 15.0f ? 15 : x1 > 0.0f ? (int)x1 : 0;
            q[g * half + i] = (uint8_t)(u0 | (u1 << 4));
        }
    }
}

static void q4_dequantize_row(float *out, const uint8_t *q, const float *s, size_t n, size_t G) {
    const size_t half = G / 2;
    for (size_t g = 0; g < n / G; g++)
        for (size_t i = 0; i < half; i++) {
            const uint8_t b = q[g * half + i];
            out[g * G + i] = (float)((int)(b & 15) - 8) * s[g];
            out[g * G + i + half] = (float)((int)(b >> 4) - 8) * s[g];
        }
}

static float q4_row_ref(const uint8_t *q, const float *ws, const aw_qact *x) {
    const size_t G = x->G, half = G / 2;
    float val = 0.0f;
    for (size_t g = 0; g < x->K / G; g++) {
        const int8_t *xg = x->q + g * G;
        const uint8_t *b = q + g * half;
        int32_t s = 0;
        for (size_t i = 0; i < half; i++)
            s += ((int32_t)(b[i] & 15) - 8) * xg[i] + ((int32_t)(b[i] >> 4) - 8) * xg[i + half];
        val += ((float)s * ws[g]) * x->s[g];
    }
    return val;
}

// ---- the vector kernels ---------------------------------------------------------------------
//
// Four rows of W at once against one activation: each load of x serves four rows, and at each
// group's end the four rows' integer sums sit in one vector, lane r for row r, so the float scaling
// val_r += ((float)isum_r * sw_r) * sx_g runs lane by lane in the reference's order (no lane
// extraction). Rows past a multiple of four run one at a time through the same steps.
// A step adds one row's 16 (q8_0) or 32 (q4_0) products to four i32 partials:
//   SIMD128  both operands widened to i16 (x once, in aw_qact.q16), then i32x4.dot_i16x8_s;
//   relaxed  q8_0: x split into its positive and negative parts (aw_qact.pos, neg, each in
//            [0, 127]) and w x = dot(w, pos) - dot(w, neg) through i16x8.relaxed_dot_i8x16_i7x16_s
//            (each i16 lane is w0 x0 + w1 x1, at most 2 * 128 * 127 in size: exact);
//            q4_0: the nibbles in [0, 15] as the [0, 127] operand, x as the signed one.
//            (clang-19's fused i32x4.relaxed_dot_i8x16_i7x16_add_s, 0xfd 0x113, is refused by V8 in
//            Chromium 156 and Node 20: "not enough arguments on the stack"; the i16x8 form runs in both.)

#if QSIMD
static inline int32_t hsum_i32(v128_t a) {
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 1, 0, 3, 2));
    return wasm_i32x4_extract_lane(a, 0);
}

// [sum a, sum b, sum c, sum d]: four rows' sums at once (integers: any order is exact)
static inline v128_t hsum4(v128_t a, v128_t b, v128_t c, v128_t d) {
    const v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    const v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

// val + ((float)isum * sw) * sx, four rows' lanes at once (sw: each row's scale of this group)
static inline v128_t scale4(v128_t val, v128_t isum, v128_t sw, float sx) {
    return wasm_f32x4_add(val, wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), sw), wasm_f32x4_splat(sx)));
}

// x's values at i, loaded once for the four rows
typedef struct { v128_t a, b, c, d; } qx;

#if AW_RELAXED
static inline qx q8_x(const aw_qact *x, size_t i) {
    return (qx){wasm_v128_load(x->pos + i), wasm_v128_load(x->neg + i), wasm_i32x4_splat(0), wasm_i32x4_splat(0)};
}
static inline v128_t q8_step(v128_t acc, const uint8_t *w, qx v, v128_t ones) {
    const v128_t a = wasm_v128_load(w);
    const v128_t s = wasm_i16x8_sub(wasm_i16x8_relaxed_dot_i8x16_i7x16(a, v.a), wasm_i16x8_relaxed_dot_i8x16_i7x16(a, v.b));
    return wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(s, ones));
}
static inline qx q4_x(const aw_qact *x, size_t i) {
    return (qx){wasm_v128_load(x->q + i), wasm_v128_load(x->q + i + 16), wasm_i32x4_splat(0), wasm_i32x4_splat(0)};
}
static inline v128_t q4_step(v128_t acc, const uint8_t *b, qx v, v128_t ones) {
    const v128_t u = wasm_v128_load(b), lo = wasm_v128_and(u, wasm_i8x16_splat(15)), hi = wasm_u8x16_shr(u, 4);
    const v128_t s = wasm_i16x8_add(wasm_i16x8_relaxed_dot_i8x16_i7x16(v.a, lo), wasm_i16x8_relaxed_dot_i8x16_i7x16(v.b, hi));
    return wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(s, ones));
}
#else
static inline qx q8_x(const aw_qact *x, size_t i) {
    return (qx){wasm_v128_load(x->q16 + i), wasm_v128_load(x->q16 + i + 8), wasm_i32x4_splat(0), wasm_i32x4_splat(0)};
}
static inline v128_t q8_step(v128_t acc, const uint8_t *w, qx v, v128_t ones) {
    (void)ones;
    const v128_t a = wasm_v128_load(w);
    return wasm_i32x4_add(acc, wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(a), v.a),
                                              wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(a), v.b)));
}
static inline qx q4_x(const aw_qact *x, size_t i) {
    return (qx){wasm_v128_load(x->q16 + i), wasm_v128_load(x->q16 + i + 8), wasm_v128_load(x->q16 + i + 16),
                wasm_v128_load(x->q16 + i + 24)};
}
// bytes 0..7 widened hold values 0..7 (low nibbles) and 16..23 (high); bytes 8..15 values 8..15 and 24..31
static inline v128_t q4_step(v128_t acc, const uint8_t *b, qx v, v128_t ones) {
    (void)ones;
    const v128_t u = wasm_v128_load(b), m = wasm_i16x8_splat(15);
    const v128_t u0 = wasm_u16x8_extend_low_u8x16(u), u1 = wasm_u16x8_extend_high_u8x16(u);
    const v128_t s0 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_v128_and(u0, m), v.a), wasm_i32x4_dot_i16x8(wasm_v128_and(u1, m), v.b));
    const v128_t s1 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_shr(u0, 4), v.c), wasm_i32x4_dot_i16x8(wasm_u16x8_shr(u1, 4), v.d));
    return wasm_i32x4_add(acc, wasm_i32x4_add(s0, s1));
}
#endif

// rows q, q + rb, q + 2 rb, q + 3 rb (scales ws, ws + ss, ...) against x: lane r is row r's value
static v128_t q8_rows4(const uint8_t *q, size_t rb, const float *ws, size_t ss, const aw_qact *x) {
    const size_t G = x->G, ng = x->K / G;
    const v128_t ones = wasm_i16x8_splat(1);
    v128_t val = wasm_f32x4_splat(0.0f);
    for (size_t g = 0; g < ng; g++) {
        v128_t a0 = wasm_i32x4_splat(0), a1 = a0, a2 = a0, a3 = a0;
        const uint8_t *w = q + g * G;
        for (size_t i = 0; i < G; i += 16) {
            const qx v = q8_x(x, g * G + i);
            a0 = q8_step(a0, w + i, v, ones);
            a1 = q8_step(a1, w + rb + i, v, ones);
            a2 = q8_step(a2, w + 2 * rb + i, v, ones);
            a3 = q8_step(a3, w + 3 * rb + i, v, ones);
        }
        val = scale4(val, hsum4(a0, a1, a2, a3), wasm_f32x4_make(ws[g], ws[ss + g], ws[2 * ss + g], ws[3 * ss + g]), x->s[g]);
    }
    return val;
}

static float q8_row(const uint8_t *q, const float *ws, const aw_qact *x) {
    const size_t G = x->G, ng = x->K / G;
    const v128_t ones = wasm_i16x8_splat(1);
    float val = 0.0f;
    for (size_t g = 0; g < ng; g++) {
        v128_t a = wasm_i32x4_splat(0);
        for (size_t i = 0; i < G; i += 16) a = q8_step(a, q + g * G + i, q8_x(x, g * G + i), ones);
        val += ((float)hsum_i32(a) * ws[g]) * x->s[g];
    }
    return val;
}

// q4_0: the groups' sums of u x, less 8 sum x (aw_qact.sum)
static v128_t q4_rows4(const uint8_t *q, size_t rb, const float *ws, size_t ss, const aw_qact *x) {
    const size_t ng = x->K / 32;
    const v128_t ones = wasm_i16x8_splat(1);
    v128_t val = wasm_f32x4_splat(0.0f);
    for (size_t g = 0; g < ng; g++) {
        const uint8_t *b = q + g * 16;
        const qx v = q4_x(x, g * 32);
        const v128_t z = wasm_i32x4_splat(0);
        const v128_t isum = wasm_i32x4_sub(hsum4(q4_step(z, b, v, ones), q4_step(z, b + rb, v, ones), q4_step(z, b + 2 * rb, v, ones),
                                                 q4_step(z, b + 3 * rb, v, ones)),
                                           wasm_i32x4_splat(8 * x->sum[g]));
        val = scale4(val, isum, wasm_f32x4_make(ws[g], ws[ss + g], ws[2 * ss + g], ws[3 * ss + g]), x->s[g]);
    }
    return val;
}

static float q4_row(const uint8_t *q, const float *ws, const aw_qact *x) {
    const size_t ng = x->K / 32;
    const v128_t ones = wasm_i16x8_splat(1);
    float val = 0.0f;
    for (size_t g = 0; g < ng; g++)
        val += ((float)(hsum_i32(q4_step(wasm_i32x4_splat(0), q + g * 16, q4_x(x, g * 32), ones)) - 8 * x->sum[g]) * ws[g]) * x->s[g];
    return val;
}

// the format's four-row kernel (0: none, rows one at a time)
static v128_t (*const ROWS4[AW_QF_COUNT])(const uint8_t *, size_t, const float *, size_t, const aw_qact *) = {0, q8_rows4, q4_rows4, 0};
#else
#define q8_row q8_row_ref
#define q4_row q4_row_ref
#endif

// ---- bf16 -----------------------------------------------------------------------------------

static size_t bf16_row_bytes(size_t n) { return aw_size_mul(n, 2); }

// round to nearest even into the top 16 bits (a BF16 file's values, widened, come back unchanged);
// a NaN stays a NaN (the loaders refuse them before this)
static void bf16_quantize_row(uint8_t *q, float *s, const float *x, size_t n, size_t G) {
    (void)s, (void)G;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], 4);
        const uint16_t h = (b & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((b >> 16) | 0x40u)
                                                            : (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
        memcpy(q + 2 * i, &h, 2);
    }
}

static void bf16_dequantize_row(float *out, const uint8_t *q, const float *s, size_t n, size_t G) {
    (void)s, (void)G;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, q + 2 * i, 2);
        out[i] = aw_bf16(h);
    }
}

const aw_qformat AW_QFORMATS[AW_QF_COUNT] = {
    {"fp32", 32, 0, AW_QF_NONE, 0, NULL, NULL, NULL, NULL, NULL},
    {"q8_0", 8, 0, AW_QF_Q8_0, 64, q8_row_bytes, q8_quantize_row, q8_dequantize_row, q8_row, q8_row_ref},
    {"q4_0", 4, 32, AW_QF_Q8_0, 32, q4_row_bytes, q4_quantize_row, q4_dequantize_row, q4_row, q4_row_ref},
    {"bf16", 16, 0, AW_QF_BF16, 0, bf16_row_bytes, bf16_quantize_row, bf16_dequantize_row, NULL, NULL},
};

int aw_qgroup_valid(int format, size_t group) {
    if (format <= AW_QF_NONE || format >= AW_QF_COUNT || format == AW_QF_BF16) return 0;
    const size_t fixed = AW_QFORMATS[format].fixed_group;
    return group >= 16 && group <= AW_QGROUP_MAX && group % 16 == 0 && (!fixed || group == fixed);
}

int aw_qformat_find(const char *name) {
    for (int f = 1; f < AW_QF_COUNT; f++)
        if (strcmp(AW_QFORMATS[f].name, name) == 0) return f;
    return AW_QF_NONE;
}

size_t aw_qmat_bytes(int format, size_t rows, size_t cols, size_t group) {
    const aw_qformat *f = &AW_QFORMATS[format];
    if (format == AW_QF_BF16) return aw_size_mul(rows, f->row_bytes(cols));
    return aw_size_add(aw_size_mul(rows, f->row_bytes(cols)), aw_size_mul3(rows, cols / group, sizeof(float)));
}

// ---- activations ----------------------------------------------------------------------------

// q (K, rounded up to 16) | s (4 K/G, idem) | sum (4 K/G) | the vector kernels' copy of q (2 K): q16
// (SIMD128) or pos and neg (relaxed); 16-byte pieces
static size_t round16(size_t n) { return n == AW_SIZE_INVALID ? n : aw_size_add(n, 15) / 16 * 16; }

size_t aw_qact_bytes(size_t K, size_t G) {
    return aw_size_add(aw_size_mul(round16(K), 3), aw_size_mul(round16(aw_size_mul(K / G, 4)), 2));
}

void aw_qact_init(aw_qact *a, void *mem, const float *x, size_t K, size_t G) {
    const size_t k = round16(K), groups = round16((K / G) * 4);
    uint8_t *p = mem;
    int8_t *q = (int8_t *)p;
    float *s = (float *)(p + k);
    int32_t *sum = (int32_t *)(p + k + groups);
    uint8_t *extra = p + k + 2 * groups; // 2 k bytes
    q8_quantize_row((uint8_t *)q, s, x, K, G);
    for (size_t g = 0; g < K / G; g++) {
        int32_t t = 0;
        for (size_t i = g * G; i < (g + 1) * G; i++) t += q[i];
        sum[g] = t;
    }
    *a = (aw_qact){q, s, sum, NULL, NULL, NULL, K, G};
#if QSIMD && AW_RELAXED
    uint8_t *pos = extra, *neg = extra + k;
    for (size_t i = 0; i < K; i++) pos[i] = (uint8_t)(q[i] > 0 ? q[i] : 0), neg[i] = (uint8_t)(q[i] < 0 ? -q[i] : 0);
    a->pos = pos, a->neg = neg;
#elif QSIMD
    int16_t *q16 = (int16_t *)extra;
    for (size_t i = 0; i < K; i++) q16[i] = q[i];
    a->q16 = q16;
#else
    (void)extra;
#endif
}

// ---- the gemv -------------------------------------------------------------------------------

enum {
    QGEMV_PAR = 1 << 15, // multiply-adds from which a call is cut for threads (matmul.c's GEMV_PAR)
    QGEMV_BLOCKS = 64,   // at most this many items (parallel.h's AW_PIECES)
};

typedef struct {
    float *y;          // (n, rows)
    const aw_qmat *w;
    const aw_qact *x;  // (n) activation rows
    const float *b;
    size_t n, cut;
    size_t Q;          // > 0: the four-row kernel's quarters (rows t, t + Q, t + 2Q, t + 3Q together)
    int ref;
} qgemv_job;

// y[r, j] = b[j] + row j's value against activation r (the format's row_dot), for rows j0 .. j1 of W:
// each row of W read once for all n activations (a prompt's rows), while it is in L1
static void qgemv_rows(const qgemv_job *jb, size_t j0, size_t j1) {
    const aw_qmat *w = jb->w;
    const aw_qformat *f = &AW_QFORMATS[w->format];
    const size_t ng = w->cols / w->group, rb = f->row_bytes(w->cols);
    float (*row)(const uint8_t *, const float *, const aw_qact *) = jb->ref ? f->row_dot_ref : f->row_dot;
    for (size_t j = j0; j < j1; j++)
        for (size_t r = 0; r < jb->n; r++) {
            const float val = row(w->q + j * rb, w->s + j * ng, &jb->x[r]);
            jb->y[r * w->rows + j] = jb->b ? jb->b[j] + val : val;
        }
}

#if QSIMD
// Rows t, t + Q, t + 2Q and t + 3Q for t in [t0, t1), through the four-row kernel: its four lanes
// read four quarters of W, so each lane streams forwards through one quarter and a thread that takes
// consecutive items continues the same four streams, which the hardware prefetcher follows. (Four
// adjacent rows made a new 3 KB stream every four rows: from memory that ran at 15 GB/s against
// 24 GB/s this way, and 17 GB/s one row at a time: `node bench/run.js qgemv`.)
static void qgemv_quarters(const qgemv_job *jb, size_t t0, size_t t1) {
    const aw_qmat *w = jb->w;
    const size_t ng = w->cols / w->group, rb = AW_QFORMATS[w->format].row_bytes(w->cols), Q = jb->Q;
    v128_t (*rows4)(const uint8_t *, size_t, const float *, size_t, const aw_qact *) = ROWS4[w->format];
    for (size_t t = t0; t < t1; t++)
        for (size_t r = 0; r < jb->n; r++) {
            float v[4];
            wasm_v128_store(v, rows4(w->q + t * rb, Q * rb, w->s + t * ng, Q * ng, &jb->x[r]));
            for (size_t l = 0; l < 4; l++) { // each lane is its row's value in the reference's order
                const size_t j = t + l * Q;
                jb->y[r * w->rows + j] = jb->b ? jb->b[j] + v[l] : v[l];
            }
        }
}
#endif

static void qgemv_block(void *ctx, size_t item) {
    const qgemv_job *jb = ctx;
    const size_t N = jb->Q ? jb->Q : jb->w->rows, t0 = item * jb->cut;
#if QSIMD
    if (jb->Q) { // the quarters' items, then one for the rows past 4Q
        if (t0 >= N) qgemv_rows(jb, 4 * jb->Q, jb->w->rows);
        else qgemv_quarters(jb, t0, N - t0 < jb->cut ? N : t0 + jb->cut);
        return;
    }
#endif
    qgemv_rows(jb, t0, N - t0 < jb->cut ? N : t0 + jb->cut);
}

// Threads: items of rows (or of the quarters' rows), cut by W's sizes alone (parallel.h); every
// row's value is the same whichever item or lane computes it.
static void qgemv(float *y, const aw_qmat *w, const aw_qact *x, size_t n, const float *b, int ref) {
    const size_t N = w->rows;
    qgemv_job jb = {y, w, x, b, n, 0, 0, ref};
    if (ref) {
        qgemv_rows(&jb, 0, N);
        return;
    }
#if QSIMD
    if (ROWS4[w->format] && N >= 4) jb.Q = N / 4;
#endif
    const size_t span = jb.Q ? jb.Q : N; // what the items cut
    jb.cut = (double)N * (double)w->cols >= QGEMV_PAR ? (span + QGEMV_BLOCKS - 1) / QGEMV_BLOCKS : span;
    const size_t items = (span + jb.cut - 1) / jb.cut + (jb.Q && 4 * jb.Q < N);
    aw_parallel_for(items, qgemv_block, &jb);
}

void aw_qgemv(float *y, const aw_qmat *w, const aw_qact *x, const float *b) { qgemv(y, w, x, 1, b, 0); }

enum { QBATCH = 32 }; // activation rows quantized and multiplied together (a prompt's), each in its own workspace

// N rows in batches of QBATCH when a workspace for them can be had (a prompt's batched forward: W is
// streamed once a batch), else one row at a time in `work`; either way every output gets the same bits.
static void qlinear(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work, int ref) {
    const size_t K = w->cols, bytes = aw_qact_bytes(K, w->group);
    aw_qact a[QBATCH];
    uint8_t *batch = N > 1 ? aw_alloc(aw_size_mul(N < QBATCH ? N : QBATCH, bytes), 1) : NULL;
    const size_t step = batch ? (N < QBATCH ? N : QBATCH) : 1;
    for (size_t r0 = 0; r0 < N; r0 += step) {
        const size_t n = N - r0 < step ? N - r0 : step;
        for (size_t r = 0; r < n; r++) aw_qact_init(&a[r], batch ? batch + r * bytes : work, x + (r0 + r) * K, K, w->group);
        qgemv(out + r0 * w->rows, w, a, n, b, ref);
    }
    free(batch);
}

void aw_qlinear(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work) {
    qlinear(out, x, w, b, N, work, 0);
}
void aw_qlinear_ref(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work) {
    qlinear(out, x, w, b, N, work, 1);
}
