// quant.c: the weight formats of quant.h and their integer dot products, per build:
//   scalar    plain C (and the reference every build keeps: *_row_ref)
//   SIMD128   i16x8.extmul_low/high_i8x16_s, an i16 add, i32x4.extadd_pairwise_i16x8_s; four groups'
//             sums reduced at once and scaled lane by lane in the reference's order
//   relaxed   q4_0 through i16x8.relaxed_dot_i8x16_i7x16_s with its second operand in [0, 15] (quant.h)
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

#if QSIMD
static inline int32_t hsum_i32(v128_t a) {
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 1, 0, 3, 2));
    return wasm_i32x4_extract_lane(a, 0);
}

// [sum a, sum b, sum c, sum d]: four groups' sums at once (integers: any order is exact)
static inline v128_t hsum4(v128_t a, v128_t b, v128_t c, v128_t d) {
    const v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    const v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

// val + p0 + p1 + p2 + p3 with p = ((float)isum * ws) * xs lane by lane: the scalar order's products and sums
static inline float combine4(float val, v128_t isum, const float *ws, const float *xs) {
    const v128_t p = wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_v128_load(ws)), wasm_v128_load(xs));
    val += wasm_f32x4_extract_lane(p, 0);
    val += wasm_f32x4_extract_lane(p, 1);
    val += wasm_f32x4_extract_lane(p, 2);
    val += wasm_f32x4_extract_lane(p, 3);
    return val;
}

// One group's sum w x as four i32 partials. Products of two values in [-127, 127] fit i16, and two
// of them (at most 32258) too: i16x8.extmul_low/high, one i16 add, then a pairwise widening add.
static inline v128_t q8_group(const uint8_t *w, const int8_t *x, size_t G) {
    v128_t acc = wasm_i32x4_splat(0);
    for (size_t i = 0; i < G; i += 16) {
        const v128_t a = wasm_v128_load(w + i), b = wasm_v128_load(x + i);
        const v128_t s = wasm_i16x8_add(wasm_i16x8_extmul_low_i8x16(a, b), wasm_i16x8_extmul_high_i8x16(a, b));
        acc = wasm_i32x4_add(acc, wasm_i32x4_extadd_pairwise_i16x8(s));
    }
    return acc;
}

static float q8_row(const uint8_t *q, const float *ws, const aw_qact *x) {
    const size_t G = x->G, ng = x->K / G;
    float val = 0.0f;
    size_t g = 0;
    for (; g + 4 <= ng; g += 4) {
        const uint8_t *w = q + g * G;
        const int8_t *xq = x->q + g * G;
        const v128_t s = hsum4(q8_group(w, xq, G), q8_group(w + G, xq + G, G), q8_group(w + 2 * G, xq + 2 * G, G),
                               q8_group(w + 3 * G, xq + 3 * G, G));
        val = combine4(val, s, ws + g, x->s + g);
    }
    for (; g < ng; g++) val += ((float)hsum_i32(q8_group(q + g * G, x->q + g * G, G)) * ws[g]) * x->s[g];
    return val;
}

// One q4_0 group's sum u x (u the stored nibbles in [0, 15]; the -8 comes off as 8 sum x after) as
// four i32 partials: each i16 lane sums four products of at most 15 * 127, 7620 at most.
#if AW_RELAXED
// i16x8.relaxed_dot_i8x16_i7x16_s with the nibbles as its second operand (in [0, 15], so every engine
// agrees). (clang-19's fused i32x4.relaxed_dot_i8x16_i7x16_add_s, 0xfd 0x113, is refused by V8 in
// Chromium 156 and Node 20: "not enough arguments on the stack"; the i16x8 form runs in both.)
static inline v128_t q4_group(const uint8_t *b, const int8_t *x) {
    const v128_t v = wasm_v128_load(b), lo = wasm_v128_and(v, wasm_i8x16_splat(15)), hi = wasm_u8x16_shr(v, 4);
    const v128_t s = wasm_i16x8_add(wasm_i16x8_relaxed_dot_i8x16_i7x16(wasm_v128_load(x), lo),
                                    wasm_i16x8_relaxed_dot_i8x16_i7x16(wasm_v128_load(x + 16), hi));
    return wasm_i32x4_extadd_pairwise_i16x8(s);
}
#else
static inline v128_t q4_group(const uint8_t *b, const int8_t *x) {
    const v128_t v = wasm_v128_load(b), lo = wasm_v128_and(v, wasm_i8x16_splat(15)), hi = wasm_u8x16_shr(v, 4);
    const v128_t x0 = wasm_v128_load(x), x1 = wasm_v128_load(x + 16);
    const v128_t s = wasm_i16x8_add(wasm_i16x8_add(wasm_i16x8_extmul_low_i8x16(lo, x0), wasm_i16x8_extmul_high_i8x16(lo, x0)),
                                    wasm_i16x8_add(wasm_i16x8_extmul_low_i8x16(hi, x1), wasm_i16x8_extmul_high_i8x16(hi, x1)));
    return wasm_i32x4_extadd_pairwise_i16x8(s);
}
#endif

static float q4_row(const uint8_t *q, const float *ws, const aw_qact *x) {
    const size_t ng = x->K / 32;
    float val = 0.0f;
    size_t g = 0;
    for (; g + 4 <= ng; g += 4) {
        const uint8_t *b = q + g * 16;
        const int8_t *xq = x->q + g * 32;
        v128_t s = hsum4(q4_group(b, xq), q4_group(b + 16, xq + 32), q4_group(b + 32, xq + 64), q4_group(b + 48, xq + 96));
        s = wasm_i32x4_sub(s, wasm_i32x4_shl(wasm_v128_load(x->sum + g), 3));
        val = combine4(val, s, ws + g, x->s + g);
    }
    for (; g < ng; g++)
        val += ((float)(hsum_i32(q4_group(q + g * 16, x->q + g * 32)) - 8 * x->sum[g]) * ws[g]) * x->s[g];
    return val;
}
#else
#define q8_row q8_row_ref
#define q4_row q4_row_ref
#endif

const aw_qformat AW_QFORMATS[AW_QF_COUNT] = {
    {"fp32", 32, 0, AW_QF_NONE, 0, NULL, NULL, NULL, NULL, NULL},
    {"q8_0", 8, 0, AW_QF_Q8_0, 64, q8_row_bytes, q8_quantize_row, q8_dequantize_row, q8_row, q8_row_ref},
    {"q4_0", 4, 32, AW_QF_Q8_0, 32, q4_row_bytes, q4_quantize_row, q4_dequantize_row, q4_row, q4_row_ref},
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

// q (K, rounded up to 16) | s (4 K/G, idem) | sum (4 K/G): 16-byte pieces
static size_t round16(size_t n) { return n == AW_SIZE_INVALID ? n : aw_size_add(n, 15) / 16 * 16; }

size_t aw_qact_bytes(size_t K, size_t G) {
    return aw_size_add(round16(K), aw_size_mul(round16(aw_size_mul(K / G, 4)), 2));
}

void aw_qact_init(aw_qact *a, void *mem, const float *x, size_t K, size_t G) {
    const size_t k = round16(K), groups = round16((K / G) * 4);
    uint8_t *p = mem;
    int8_t *q = (int8_t *)p;
    float *s = (float *)(p + k);
    int32_t *sum = (int32_t *)(p + k + groups);
    q8_quantize_row((uint8_t *)q, s, x, K, G);
    for (size_t g = 0; g < K / G; g++) {
        int32_t t = 0;
        for (size_t i = g * G; i < (g + 1) * G; i++) t += q[i];
        sum[g] = t;
    }
    *a = (aw_qact){q, s, sum, K, G};
}

// ---- the gemv -------------------------------------------------------------------------------

enum {
    QGEMV_PAR = 1 << 15, // multiply-adds from which a call is cut for threads (matmul.c's GEMV_PAR)
    QGEMV_BLOCKS = 64,   // at most this many blocks of rows (parallel.h's AW_PIECES)
};

typedef struct {
    float *y;          // (n, rows)
    const aw_qmat *w;
    const aw_qact *x;  // (n) activation rows
    const float *b;
    size_t n, cut;
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

static void qgemv_block(void *ctx, size_t item) {
    const qgemv_job *jb = ctx;
    const size_t j0 = item * jb->cut, j1 = jb->w->rows - j0 < jb->cut ? jb->w->rows : j0 + jb->cut;
    qgemv_rows(jb, j0, j1);
}

// Threads: blocks of a multiple of 4 rows of W, fixed by its sizes alone (parallel.h)
static void qgemv(float *y, const aw_qmat *w, const aw_qact *x, size_t n, const float *b, int ref) {
    const size_t N = w->rows;
    qgemv_job jb = {y, w, x, b, n, N, ref};
    if (!ref && (double)N * (double)w->cols >= QGEMV_PAR) {
        size_t cut = (N + QGEMV_BLOCKS - 1) / QGEMV_BLOCKS;
        jb.cut = (cut + 3) / 4 * 4;
    }
    if (ref) qgemv_rows(&jb, 0, N);
    else aw_parallel_for((N + jb.cut - 1) / jb.cut, qgemv_block, &jb);
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
