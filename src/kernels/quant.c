// quant.c: the weight formats of quant.h and their integer dot products, per build:
//   scalar    plain C (and the reference every build keeps: *_dot_ref)
//   SIMD128   activations widened to i16 once per row of x, weights widened per 16 values, then
//             i32x4.dot_i16x8_s
//   relaxed   i16x8.relaxed_dot_i8x16_i7x16_s with its second operand in [0, 127] (quant.h says how)
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

// s = max|x| / 127, q = round(x / s) (runq.c's quantize; s = 0 gives q = 0)
static void q8_quantize_row(uint8_t *q, float *s, const float *x, size_t n, size_t G) {
    int8_t *qi = (int8_t *)q;
    for (size_t g = 0; g < n / G; g++) {
        const float *xg = x + g * G;
        float amax = 0.0f;
        for (size_t i = 0; i < G; i++) amax = fabsf(xg[i]) > amax ? fabsf(xg[i]) : amax;
        const float scale = amax / 127.0f;
        s[g] = scale;
        for (size_t i = 0; i < G; i++) {
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

static void q8_dot_ref(int32_t *isum, const uint8_t *q, const aw_qact *x) {
    const int8_t *w = (const int8_t *)q;
    const size_t G = x->G;
    for (size_t g = 0; g < x->K / G; g++) {
        int32_t s = 0;
        for (size_t i = g * G; i < (g + 1) * G; i++) s += (int32_t)w[i] * (int32_t)x->q[i];
        isum[g] = s;
    }
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

static void q4_dot_ref(int32_t *isum, const uint8_t *q, const aw_qact *x) {
    const size_t G = x->G, half = G / 2;
    for (size_t g = 0; g < x->K / G; g++) {
        const int8_t *xg = x->q + g * G;
        const uint8_t *b = q + g * half;
        int32_t s = 0;
        for (size_t i = 0; i < half; i++)
            s += ((int32_t)(b[i] & 15) - 8) * xg[i] + ((int32_t)(b[i] >> 4) - 8) * xg[i + half];
        isum[g] = s;
    }
}

// ---- the vector kernels ---------------------------------------------------------------------

#if QSIMD
static inline int32_t hsum_i32(v128_t a) {
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 1, 0, 3, 2));
    return wasm_i32x4_extract_lane(a, 0);
}

#if AW_RELAXED
// i16x8.relaxed_dot_i8x16_i7x16_s, then i32x4.extadd_pairwise_i16x8_s. (clang-19's fused
// i32x4.relaxed_dot_i8x16_i7x16_add_s encoding, 0xfd 0x113, is refused by V8 in Chromium 156 and
// Node 20: "not enough arguments on the stack"; the i16x8 form validates and runs in both.) Each
// i16 lane sums two products of |a| <= 127 and b in [0, 127]: at most 32258, so no engine saturates.
static inline v128_t rdot(v128_t acc, v128_t a, v128_t b7) {
    return wasm_i32x4_add(acc, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_relaxed_dot_i8x16_i7x16(a, b7)));
}

// sum w x = sum (w sign(x)) |x|: the second operand |x| in [0, 127]; w sign(x) = (w ^ neg) - neg
static void q8_dot(int32_t *isum, const uint8_t *q, const aw_qact *x) {
    const size_t G = x->G;
    for (size_t g = 0; g < x->K / G; g++) {
        v128_t acc = wasm_i32x4_splat(0);
        for (size_t i = g * G; i < (g + 1) * G; i += 16) {
            const v128_t w = wasm_v128_load(q + i), neg = wasm_v128_load(x->neg + i);
            acc = rdot(acc, wasm_i8x16_sub(wasm_v128_xor(w, neg), neg), wasm_v128_load(x->abs + i));
        }
        isum[g] = hsum_i32(acc);
    }
}

// sum (u - 8) x = sum x u - 8 sum x: the second operand u in [0, 15]
static void q4_dot(int32_t *isum, const uint8_t *q, const aw_qact *x) {
    const v128_t low = wasm_i8x16_splat(15);
    for (size_t g = 0; g < x->K / 32; g++) {
        const v128_t b = wasm_v128_load(q + g * 16);
        v128_t acc = rdot(wasm_i32x4_splat(0), wasm_v128_load(x->q + g * 32), wasm_v128_and(b, low));
        acc = rdot(acc, wasm_v128_load(x->q + g * 32 + 16), wasm_u8x16_shr(b, 4));
        isum[g] = hsum_i32(acc) - 8 * x->sum[g];
    }
}
#else
static void q8_dot(int32_t *isum, const uint8_t *q, const aw_qact *x) {
    const size_t G = x->G;
    for (size_t g = 0; g < x->K / G; g++) {
        v128_t acc = wasm_i32x4_splat(0);
        for (size_t i = g * G; i < (g + 1) * G; i += 16) {
            const v128_t w = wasm_v128_load(q + i);
            acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), wasm_v128_load(x->w16 + i)));
            acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), wasm_v128_load(x->w16 + i + 8)));
        }
        isum[g] = hsum_i32(acc);
    }
}

static void q4_dot(int32_t *isum, const uint8_t *q, const aw_qact *x) {
    const v128_t low = wasm_i8x16_splat(15), eight = wasm_i8x16_splat(8);
    for (size_t g = 0; g < x->K / 32; g++) {
        const v128_t b = wasm_v128_load(q + g * 16);
        const v128_t lo = wasm_i8x16_sub(wasm_v128_and(b, low), eight), hi = wasm_i8x16_sub(wasm_u8x16_shr(b, 4), eight);
        const int16_t *xs = x->w16 + g * 32;
        v128_t acc = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(lo), wasm_v128_load(xs));
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(lo), wasm_v128_load(xs + 8)));
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(hi), wasm_v128_load(xs + 16)));
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(hi), wasm_v128_load(xs + 24)));
        isum[g] = hsum_i32(acc);
    }
}
#endif
#else
#define q8_dot q8_dot_ref
#define q4_dot q4_dot_ref
#endif

const aw_qformat AW_QFORMATS[AW_QF_COUNT] = {
    {"fp32", 32, 0, AW_QF_NONE, 0, NULL, NULL, NULL, NULL, NULL},
    {"q8_0", 8, 0, AW_QF_Q8_0, 64, q8_row_bytes, q8_quantize_row, q8_dequantize_row, q8_dot, q8_dot_ref},
    {"q4_0", 4, 32, AW_QF_Q8_0, 32, q4_row_bytes, q4_quantize_row, q4_dequantize_row, q4_dot, q4_dot_ref},
};

int aw_qformat_find(const char *name) {
    for (int f = 1; f < AW_QF_COUNT; f++)
        if (strcmp(AW_QFORMATS[f].name, name) == 0) return f;
    return AW_QF_NONE;
}

size_t aw_qmat_bytes(int format, size_t rows, size_t cols, size_t group) {
    const aw_qformat *f = &AW_QFORMATS[format];
    return aw_size_add(aw_size_mul(rows, f->row_bytes(cols)), aw_size_mul3(rows, cols / group, sizeof(float)));
}

// ---- activations ----------------------------------------------------------------------------

// q (K, rounded up to 16) | w16 (2K) | abs (K) | neg (K) | s (4 K/G) | sum (4 K/G): 16-byte pieces
static size_t round16(size_t n) { return n == AW_SIZE_INVALID ? n : aw_size_add(n, 15) / 16 * 16; }

size_t aw_qact_bytes(size_t K, size_t G) {
    const size_t k = round16(K), groups = round16(aw_size_mul(K / G, 4));
    return aw_size_add(aw_size_mul(k, 5), aw_size_mul(groups, 2));
}

void aw_qact_init(aw_qact *a, void *mem, const float *x, size_t K, size_t G) {
    const size_t k = round16(K), groups = round16((K / G) * 4);
    uint8_t *p = mem;
    int8_t *q = (int8_t *)p;
    int16_t *w16 = (int16_t *)(p + k);
    uint8_t *abs = p + 3 * k;
    int8_t *neg = (int8_t *)(p + 4 * k);
    float *s = (float *)(p + 5 * k);
    int32_t *sum = (int32_t *)(p + 5 * k + groups);
    q8_quantize_row((uint8_t *)q, s, x, K, G);
    for (size_t g = 0; g < K / G; g++) {
        int32_t t = 0;
        for (size_t i = g * G; i < (g + 1) * G; i++) t += q[i];
        sum[g] = t;
    }
    for (size_t i = 0; i < K; i++) {
        w16[i] = q[i];
        abs[i] = (uint8_t)(q[i] < 0 ? -q[i] : q[i]);
        neg[i] = q[i] < 0 ? -1 : 0;
    }
    *a = (aw_qact){q, s, sum, w16, abs, neg, K, G};
}

// ---- the gemv -------------------------------------------------------------------------------

enum {
    QGEMV_PAR = 1 << 15, // multiply-adds from which a call is cut for threads (matmul.c's GEMV_PAR)
    QGEMV_BLOCKS = 64,   // at most this many blocks of rows (parallel.h's AW_PIECES)
    QGROUPS = 256,       // groups summed per pass of dot_groups over a row (the stack's isum)
};

typedef struct {
    float *y;
    const aw_qmat *w;
    const aw_qact *x;
    const float *b;
    size_t cut;
    int ref;
} qgemv_job;

// y[j] = b[j] + sum_g ((float)isum_g * sw_g) * sx_g, g ascending (the one order of every build)
static void qgemv_rows(const qgemv_job *jb, size_t j0, size_t j1) {
    const aw_qmat *w = jb->w;
    const aw_qformat *f = &AW_QFORMATS[w->format];
    const size_t G = w->group, ng = w->cols / G, rb = f->row_bytes(w->cols), gb = f->row_bytes(G);
    void (*dot)(int32_t *, const uint8_t *, const aw_qact *) = jb->ref ? f->dot_groups_ref : f->dot_groups;
    int32_t isum[QGROUPS];
    for (size_t j = j0; j < j1; j++) {
        const uint8_t *row = w->q + j * rb;
        const float *ws = w->s + j * ng, *xs = jb->x->s;
        float val = 0.0f;
        for (size_t g0 = 0; g0 < ng; g0 += QGROUPS) { // QGROUPS groups at a time: a sub-row's activation view
            const size_t n = ng - g0 < QGROUPS ? ng - g0 : QGROUPS;
            const aw_qact *x = jb->x;
            const size_t at = g0 * G;
            const aw_qact part = {x->q + at, x->s + g0, x->sum + g0, x->w16 + at, x->abs + at, x->neg + at, n * G, G};
            dot(isum, row + g0 * gb, &part);
            for (size_t g = 0; g < n; g++) val += ((float)isum[g] * ws[g0 + g]) * xs[g0 + g];
        }
        jb->y[j] = jb->b ? jb->b[j] + val : val;
    }
}

static void qgemv_block(void *ctx, size_t item) {
    const qgemv_job *jb = ctx;
    const size_t j0 = item * jb->cut, j1 = jb->w->rows - j0 < jb->cut ? jb->w->rows : j0 + jb->cut;
    qgemv_rows(jb, j0, j1);
}

static void qgemv(float *y, const aw_qmat *w, const aw_qact *x, const float *b, int ref) {
    const size_t N = w->rows;
    qgemv_job jb = {y, w, x, b, N, ref};
    if (!ref && (double)N * (double)w->cols >= QGEMV_PAR) { // blocks of a multiple of 4 rows, fixed by N
        size_t cut = (N + QGEMV_BLOCKS - 1) / QGEMV_BLOCKS;
        jb.cut = (cut + 3) / 4 * 4;
    }
    if (ref) qgemv_rows(&jb, 0, N);
    else aw_parallel_for((N + jb.cut - 1) / jb.cut, qgemv_block, &jb);
}

void aw_qgemv(float *y, const aw_qmat *w, const aw_qact *x, const float *b) { qgemv(y, w, x, b, 0); }

static void qlinear(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work, int ref) {
    aw_qact a;
    for (size_t r = 0; r < N; r++) {
        aw_qact_init(&a, work, x + r * w->cols, w->cols, w->group);
        qgemv(out + r * w->rows, w, &a, b, ref);
    }
}

void aw_qlinear(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work) {
    qlinear(out, x, w, b, N, work, 0);
}
void aw_qlinear_ref(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work) {
    qlinear(out, x, w, b, N, work, 1);
}
