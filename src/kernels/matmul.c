// matmul.c: C (+)= op(A) op(B) for the three layouts attention needs.
//
// One blocked driver serves all three: A is read through (row, col) strides, so NN and TN
// share the micro-kernel, and B is packed per (k-block x 8 columns) panel into a small
// stack buffer, which turns NN and NT into the same contiguous stream. The micro-kernel
// is a 4 x 8 register tile accumulated with mul + add and no k-unrolling: V8 gives wasm
// 15 XMM registers, and larger or k-unrolled tiles spill. It runs at ~90% of the SIMD128 peak
// in V8 (docs/bench.md). A is packed too (4-row micro-panels, once per k-block) only where
// that was measured to pay: the TN layout beyond L1 and any A beyond L2 (see gemm). Measured
// and not taken: packing A per 64-column block of B (~12% slower at 64..512), an extra row
// blocking of A for L2 (no change up to 1024^3), a 5 x 8 tile (~20% slower: spills).
// aw_matmul_packed (matmul_packed.h) takes a B packed once into the same panels, for callers
// that reuse B (the streaming attention path).
#include "kernels.h"
#include "matmul_packed.h"
#include "parallel.h"
#include "simd.h"
#include "size.h"

#include <stdlib.h>
#include <string.h>

enum { MR = 4, NR = 8, KC = 256 };

// Packs B(k0 .. k0+kc, j0 .. j0+nr) into bp (kc x NR), zero-padding columns nr .. NR.
// B element (k, j) lives at b[k * b_ks + j * b_js].
static void pack_b(float *bp, const float *b, size_t b_ks, size_t b_js, size_t k0, size_t kc,
                   size_t j0, size_t nr) {
    if (b_js == 1 && nr == NR) {
        for (size_t k = 0; k < kc; k++) memcpy(bp + k * NR, b + (k0 + k) * b_ks + j0, NR * sizeof(float));
        return;
    }
    for (size_t k = 0; k < kc; k++) {
        size_t j = 0;
        for (; j < nr; j++) bp[k * NR + j] = b[(k0 + k) * b_ks + (j0 + j) * b_js];
        for (; j < NR; j++) bp[k * NR + j] = 0.0f;
    }
}

// B as float32 (f) or as BF16 (h, the top halves of float32 values: loadHuggingFace's dtype 'bf16'),
// exactly one of them set. A BF16 B is widened while it is packed (pack_b16) or read (the GEMVs), so
// the products and their order are those of the float32 B holding the same values: the same bits.
typedef struct {
    const float *f;
    const uint16_t *h;
} bsrc;

static inline bsrc bsrc_at(bsrc b, size_t off) { return b.f ? (bsrc){b.f + off, NULL} : (bsrc){NULL, b.h + off}; }

// pack_b from BF16 values, widened: the same floats pack_b writes from their float32 copies.
static void pack_b16(float *bp, const uint16_t *b, size_t b_ks, size_t b_js, size_t k0, size_t kc, size_t j0,
                     size_t nr) {
#if AW_SIMD
    if (b_js == 1 && nr == NR) {
        for (size_t k = 0; k < kc; k++) {
            aw_f32x4 lo, hi;
            aw_load_bf16x8(b + (k0 + k) * b_ks + j0, &lo, &hi);
            aw_store(bp + k * NR, lo);
            aw_store(bp + k * NR + 4, hi);
        }
        return;
    }
#endif
    for (size_t k = 0; k < kc; k++) {
        size_t j = 0;
        for (; j < nr; j++) bp[k * NR + j] = aw_bf16(b[(k0 + k) * b_ks + (j0 + j) * b_js]);
        for (; j < NR; j++) bp[k * NR + j] = 0.0f;
    }
}

static inline void pack_bs(float *bp, bsrc b, size_t b_ks, size_t b_js, size_t k0, size_t kc, size_t j0, size_t nr) {
    if (b.h) pack_b16(bp, b.h, b_ks, b_js, k0, kc, j0, nr);
    else pack_b(bp, b.f, b_ks, b_js, k0, kc, j0, nr);
}

#if AW_SIMD
// Writes (or adds, when accumulate) a 4 x 8 register tile to c (row stride ldc).
static inline void store_tile_4x8(float *c, size_t ldc, aw_f32x4 c00, aw_f32x4 c01, aw_f32x4 c10, aw_f32x4 c11,
                                  aw_f32x4 c20, aw_f32x4 c21, aw_f32x4 c30, aw_f32x4 c31, int accumulate) {
    float *r0 = c, *r1 = c + ldc, *r2 = c + 2 * ldc, *r3 = c + 3 * ldc;
    if (accumulate) {
        c00 = aw_add(c00, aw_load(r0)); c01 = aw_add(c01, aw_load(r0 + 4));
        c10 = aw_add(c10, aw_load(r1)); c11 = aw_add(c11, aw_load(r1 + 4));
        c20 = aw_add(c20, aw_load(r2)); c21 = aw_add(c21, aw_load(r2 + 4));
        c30 = aw_add(c30, aw_load(r3)); c31 = aw_add(c31, aw_load(r3 + 4));
    }
    aw_store(r0, c00); aw_store(r0 + 4, c01);
    aw_store(r1, c10); aw_store(r1 + 4, c11);
    aw_store(r2, c20); aw_store(r2 + 4, c21);
    aw_store(r3, c30); aw_store(r3 + 4, c31);
}

// c(4 x 8) (+)= a(4 x kc) bp(kc x 8); a element (r, k) at a[r * a_rs + k * a_ks].
static inline void kernel_4x8(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks,
                              const float *bp, size_t kc, int accumulate) {
    aw_f32x4 c00 = aw_splat(0), c01 = aw_splat(0), c10 = aw_splat(0), c11 = aw_splat(0);
    aw_f32x4 c20 = aw_splat(0), c21 = aw_splat(0), c30 = aw_splat(0), c31 = aw_splat(0);
    const float *a0 = a, *a1 = a + a_rs, *a2 = a + 2 * a_rs, *a3 = a + 3 * a_rs;
    for (size_t k = 0; k < kc; k++) {
        aw_f32x4 b0 = aw_load(bp + k * NR), b1 = aw_load(bp + k * NR + 4);
        size_t o = k * a_ks;
        aw_f32x4 x = aw_splat(a0[o]);
        c00 = aw_madd(c00, x, b0);
        c01 = aw_madd(c01, x, b1);
        x = aw_splat(a1[o]);
        c10 = aw_madd(c10, x, b0);
        c11 = aw_madd(c11, x, b1);
        x = aw_splat(a2[o]);
        c20 = aw_madd(c20, x, b0);
        c21 = aw_madd(c21, x, b1);
        x = aw_splat(a3[o]);
        c30 = aw_madd(c30, x, b0);
        c31 = aw_madd(c31, x, b1);
    }
    store_tile_4x8(c, ldc, c00, c01, c10, c11, c20, c21, c30, c31, accumulate);
}
#else
// Scalar build: a 4 x 4 tile (16 accumulators fit the register file), applied twice.
static inline void kernel_4x4_scalar(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks,
                                     const float *bp, size_t kc, int accumulate) {
    float s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
    float s20 = 0, s21 = 0, s22 = 0, s23 = 0, s30 = 0, s31 = 0, s32 = 0, s33 = 0;
    for (size_t k = 0; k < kc; k++) {
        const float *b = bp + k * NR;
        float b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
        size_t o = k * a_ks;
        float x = a[o];
        s00 += x * b0; s01 += x * b1; s02 += x * b2; s03 += x * b3;
        x = a[a_rs + o];
        s10 += x * b0; s11 += x * b1; s12 += x * b2; s13 += x * b3;
        x = a[2 * a_rs + o];
        s20 += x * b0; s21 += x * b1; s22 += x * b2; s23 += x * b3;
        x = a[3 * a_rs + o];
        s30 += x * b0; s31 += x * b1; s32 += x * b2; s33 += x * b3;
    }
    float s[4][4] = {{s00, s01, s02, s03}, {s10, s11, s12, s13}, {s20, s21, s22, s23}, {s30, s31, s32, s33}};
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 4; j++) c[r * ldc + j] = accumulate ? c[r * ldc + j] + s[r][j] : s[r][j];
}
static inline void kernel_4x8(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks,
                              const float *bp, size_t kc, int accumulate) {
    kernel_4x4_scalar(c, ldc, a, a_rs, a_ks, bp, kc, accumulate);
    // the right half reads columns 4..7 of the packed panel: shift bp by 4, same NR stride
    kernel_4x4_scalar(c + 4, ldc, a, a_rs, a_ks, bp + 4, kc, accumulate);
}
#endif

// Edge tile: mr <= 4 rows, nr <= 8 columns (only those are written). With SIMD it uses the 4 x 8
// kernel's own multiply-add per element, so an element of C gets the same bits whether a full tile
// or an edge tile computes it: that is what keeps results independent of how threads split C when
// aw_madd is fused (the relaxed-SIMD build).
static void kernel_edge(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, const float *bp,
                        size_t kc, size_t mr, size_t nr, int accumulate) {
    float acc[MR][NR] __attribute__((aligned(16)));
#if AW_SIMD
    for (size_t r = 0; r < mr; r++) {
        aw_f32x4 s0 = aw_splat(0), s1 = aw_splat(0);
        for (size_t k = 0; k < kc; k++) {
            aw_f32x4 x = aw_splat(a[r * a_rs + k * a_ks]);
            s0 = aw_madd(s0, x, aw_load(bp + k * NR));
            s1 = aw_madd(s1, x, aw_load(bp + k * NR + 4));
        }
        aw_store(acc[r], s0);
        aw_store(acc[r] + 4, s1);
    }
#else
    memset(acc, 0, sizeof acc);
    for (size_t k = 0; k < kc; k++) {
        const float *b = bp + k * NR;
        for (size_t r = 0; r < mr; r++) {
            float x = a[r * a_rs + k * a_ks];
            for (size_t j = 0; j < NR; j++) acc[r][j] += x * b[j];
        }
    }
#endif
    for (size_t r = 0; r < mr; r++)
        for (size_t j = 0; j < nr; j++) c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

#if AW_SIMD
// c(4 x 8) (+)= A(4 x kc) bp(kc x 8) with A packed as (kc x 4): element (r, k) at ap[4 k + r].
static inline void kernel_4x8_pa(float *c, size_t ldc, const float *ap, const float *bp, size_t kc, int accumulate) {
    aw_f32x4 c00 = aw_splat(0), c01 = aw_splat(0), c10 = aw_splat(0), c11 = aw_splat(0);
    aw_f32x4 c20 = aw_splat(0), c21 = aw_splat(0), c30 = aw_splat(0), c31 = aw_splat(0);
    for (size_t k = 0; k < kc; k++, ap += MR, bp += NR) {
        aw_f32x4 b0 = aw_load(bp), b1 = aw_load(bp + 4);
        aw_f32x4 x = aw_splat(ap[0]);
        c00 = aw_madd(c00, x, b0);
        c01 = aw_madd(c01, x, b1);
        x = aw_splat(ap[1]);
        c10 = aw_madd(c10, x, b0);
        c11 = aw_madd(c11, x, b1);
        x = aw_splat(ap[2]);
        c20 = aw_madd(c20, x, b0);
        c21 = aw_madd(c21, x, b1);
        x = aw_splat(ap[3]);
        c30 = aw_madd(c30, x, b0);
        c31 = aw_madd(c31, x, b1);
    }
    store_tile_4x8(c, ldc, c00, c01, c10, c11, c20, c21, c30, c31, accumulate);
}

// Packs rows 0 .. M4 (a multiple of 4) of A(., k0 .. k0+kc) as M4 / 4 micro-panels of (kc x 4).
static void pack_a4(float *ap, const float *a, size_t a_rs, size_t a_ks, size_t M4, size_t k0, size_t kc) {
    for (size_t i = 0; i < M4; i += MR, ap += kc * MR) {
        const float *ai = a + i * a_rs + k0 * a_ks;
        for (size_t k = 0; k < kc; k++)
            for (size_t r = 0; r < MR; r++) ap[k * MR + r] = ai[r * a_rs + k * a_ks];
    }
}
#endif

// One 8-column panel of C for rows 0 .. M: full 4 x 8 tiles in registers, a last partial row
// group through the scalar edge kernel. nr < 8 columns (a zero-padded panel) go through a
// scratch tile so the vector kernel still does the work.
static void panel_rows(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, const float *bp, size_t kc,
                       size_t M, size_t nr, int acc) {
    size_t i0 = 0;
    if (nr == NR) {
        for (; i0 + MR <= M; i0 += MR) kernel_4x8(c + i0 * ldc, ldc, a + i0 * a_rs, a_rs, a_ks, bp, kc, acc);
    } else {
        float t[MR * NR] __attribute__((aligned(16)));
        for (; i0 + MR <= M; i0 += MR) {
            kernel_4x8(t, NR, a + i0 * a_rs, a_rs, a_ks, bp, kc, 0);
            float *ci = c + i0 * ldc;
            for (size_t r = 0; r < MR; r++)
                for (size_t j = 0; j < nr; j++) ci[r * ldc + j] = acc ? ci[r * ldc + j] + t[r * NR + j] : t[r * NR + j];
        }
    }
    if (i0 < M) kernel_edge(c + i0 * ldc, ldc, a + i0 * a_rs, a_rs, a_ks, bp, kc, M - i0, nr, acc);
}

// The driver: A element (i, k) at a[i * a_rs + k * a_ks], B element (k, j) at b[k * b_ks + j * b_js].
// Unpacked A: per 8-column panel of B and KC-deep block, pack the B panel (kc x 8, L1-resident)
// and sweep all rows. Packed A: per KC-deep block, pack A once, then the same sweep per B panel.
// Kernel variants, chosen per machine at load time by a short timed probe (wasm/index.js), the
// way FFTW plans: they differ only in where A is packed, never in the arithmetic (each element of
// C sums over k in the same order, in the same KC blocks), so every variant gives the same bits.
//   0 "measured": A packed where that was measured to pay on a Zen 5 host (the rule below)
//   1 "unpacked": A never packed (the 4 x 8 kernel reads A in place)
//   2 "packed":   A packed into 4-row micro-panels whenever it has 4 rows or more
static int pack_variant = 0;

int aw_matmul_set_variant(int v) {
    if (v >= 0 && v <= 2) pack_variant = v;
    return pack_variant;
}

static void gemm(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, bsrc b, size_t b_ks,
                 size_t b_js, size_t M, size_t N, size_t K, int accumulate) {
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (size_t i = 0; i < M; i++) memset(c + i * ldc, 0, N * sizeof(float));
        return;
    }
    float bp[KC * NR] __attribute__((aligned(16)));
    // A is packed into (kc x 4) micro-panels, once per k-block, when its rows are not contiguous
    // in k and A outgrows L1 (the TN layout: the unpacked kernel then reads 4 scattered floats
    // per k), or when A outgrows L2 (1 MiB here). Measured in V8: TN 48-50 -> 52-54 GFLOP/s at
    // 128..512, 29 -> 53 at 1024^3; NN 50 -> 51-53 at 1024^3. Smaller A stays unpacked: packing
    // cost ~5% there (TN 64^3) and gained nothing for NN up to 512^3.
    const size_t M4 = M / MR * MR;
    const int measured = (a_ks != 1 && M * K >= 128 * 128) || M * K > 512 * 512;
    const int pack_a = AW_SIMD && M4 > 0 && (pack_variant == 2 || (pack_variant == 0 && measured));
    float *ap = pack_a ? aw_alloc_floats(aw_size_mul(M4, K < KC ? K : KC)) : NULL; // NULL: unpacked path
    if (!ap) {
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            size_t nr = N - j0 < NR ? N - j0 : NR;
            for (size_t k0 = 0; k0 < K; k0 += KC) {
                size_t kc = K - k0 < KC ? K - k0 : KC;
                pack_bs(bp, b, b_ks, b_js, k0, kc, j0, nr);
                panel_rows(c + j0, ldc, a + k0 * a_ks, a_rs, a_ks, bp, kc, M, nr, accumulate || k0 > 0);
            }
        }
        return;
    }
#if AW_SIMD
    for (size_t k0 = 0; k0 < K; k0 += KC) {
        const size_t kc = K - k0 < KC ? K - k0 : KC;
        const int acc = accumulate || k0 > 0;
        pack_a4(ap, a, a_rs, a_ks, M4, k0, kc);
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            const size_t nr = N - j0 < NR ? N - j0 : NR;
            pack_bs(bp, b, b_ks, b_js, k0, kc, j0, nr);
            if (nr == NR) {
                for (size_t i0 = 0; i0 < M4; i0 += MR)
                    kernel_4x8_pa(c + i0 * ldc + j0, ldc, ap + i0 * kc, bp, kc, acc);
                if (M4 < M) panel_rows(c + M4 * ldc + j0, ldc, a + M4 * a_rs + k0 * a_ks, a_rs, a_ks, bp, kc, M - M4, nr, acc);
            } else {
                panel_rows(c + j0, ldc, a + k0 * a_ks, a_rs, a_ks, bp, kc, M, nr, acc);
            }
        }
    }
#endif
    free(ap);
}

// ---- pre-packed B: pack once, multiply many times ------------------------------------------
size_t aw_packed_b_floats(size_t K, size_t N) {
    return aw_size_mul(aw_size_mul((N + NR - 1) / NR, NR), K); // SIZE_MAX when it does not fit
}

void aw_pack_b_block(float *bp, const float *b, size_t K, size_t N, size_t b_ks, size_t b_js, size_t k0, size_t k1,
                     size_t j0, size_t j1) {
    for (size_t p0 = j0; p0 < j1 && p0 < N; p0 += NR) {
        const size_t nr = N - p0 < NR ? N - p0 : NR;
        float *panel = bp + p0 * K; // (p0 / NR) * K * NR
        if (b_ks == 1) { // B^T layout: each column of B is contiguous in k
            for (size_t j = 0; j < nr; j++) {
                const float *col = b + (p0 + j) * b_js;
                for (size_t k = k0; k < k1; k++) panel[k * NR + j] = col[k];
            }
            for (size_t j = nr; j < NR; j++)
                for (size_t k = k0; k < k1; k++) panel[k * NR + j] = 0.0f;
        } else {
            pack_b(panel + k0 * NR, b, b_ks, b_js, k0, k1 - k0, p0, nr);
        }
    }
}

void aw_pack_b_panels(float *bp, const float *b, size_t K, size_t N, size_t b_ks, size_t b_js) {
    aw_pack_b_block(bp, b, K, N, b_ks, b_js, 0, K, 0, N);
}

void aw_matmul_packed(float *c, const float *a, const float *bp, size_t M, size_t N, size_t K, size_t lda,
                      size_t panel_stride, size_t ldc, int accumulate) {
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (size_t i = 0; i < M; i++) memset(c + i * ldc, 0, N * sizeof(float));
        return;
    }
    for (size_t j0 = 0; j0 < N; j0 += NR) {
        const size_t nr = N - j0 < NR ? N - j0 : NR;
        const float *panel = bp + (j0 / NR) * panel_stride;
        for (size_t k0 = 0; k0 < K; k0 += KC) { // KC-deep slices keep the panel slice in L1
            const size_t kc = K - k0 < KC ? K - k0 : KC;
            panel_rows(c + j0, ldc, a + k0, lda, 1, panel + k0 * NR, kc, M, nr, accumulate || k0 > 0);
        }
    }
}

// Threads: blocks of RB rows of C, a partition fixed by the sizes alone (parallel.h), so every
// thread count computes each element the same way: a block's tiles start where the whole
// matrix's do (RB is a multiple of MR) and every element sums over k in the same order.
#ifdef AW_THREADS
enum { RB = 64, PAR_MIN_FLOPS = 1 << 18 };
typedef struct {
    float *c;
    size_t ldc, a_rs, a_ks, b_ks, b_js, M, N, K;
    const float *a;
    bsrc b;
    int accumulate;
} gemm_job;

static void gemm_block(void *ctx, size_t item) {
    const gemm_job *g = ctx;
    const size_t i0 = item * RB, rows = g->M - i0 < RB ? g->M - i0 : RB;
    gemm(g->c + i0 * g->ldc, g->ldc, g->a + i0 * g->a_rs, g->a_rs, g->a_ks, g->b, g->b_ks, g->b_js, rows, g->N, g->K,
         g->accumulate);
}

// Few rows, many columns (a weight gradient X^T dY: d_in x d_out, summed over the batch's rows):
// blocks of CB columns (whole 8-column panels, so each element is computed as in the whole product).
enum { CB = 16 };
static void gemm_cols(void *ctx, size_t item) {
    const gemm_job *g = ctx;
    const size_t j0 = item * CB, cols = g->N - j0 < CB ? g->N - j0 : CB;
    gemm(g->c + j0, g->ldc, g->a, g->a_rs, g->a_ks, bsrc_at(g->b, j0 * g->b_js), g->b_ks, g->b_js, g->M, cols, g->K,
         g->accumulate);
}
#endif

// ---- one row of A (generation's token at a time): y (N) (+)= x (K) op(B) --------------------------
// Decoding streams every weight once per token, so these read B front to back in long contiguous
// runs, the access the hardware prefetchers follow. Measured natively (gcc -O3, SSE; AMD EPYC
// family 25 model 17), kernels that read four rows of B at once (NT) or 32-column strips down the
// rows (NN) reached 6-7 GB/s; streaming whole rows reaches 12-14 GB/s, near one core's read
// bandwidth (about 22 GB/s there).
//   NT (B stored N x K): one dot product per row, 16 floats a step in four accumulators.
//   NN (B row-major K x N): y += x[k] B[k, :] along whole rows, k in order, one row a pass (four
//   for a B small enough to stay in cache).
// Threads: NT by blocks of rows. NN by pieces of rows of B, each summed into a partial vector of
// its own, the partials then added in piece order; B wider than GEMV_WIDE by blocks of columns
// instead (runs of hundreds of floats per row, still long enough to stream). Every cut is fixed by
// N and K alone (parallel.h), and matrices below GEMV_PAR multiply-adds take one piece, so any
// thread count gives the same bits.
enum {
    GEMV_PAR = 1 << 15,   // multiply-adds from which a call is cut for threads (a 288 x 288 projection is 82944)
    GEMV_PIECES = 8,      // NN pieces of rows at most (8: even shares for 2 and 4 threads)
    GEMV_PIECE_ROWS = 16, // and at least this many rows each
    GEMV_WIDE = 1024,     // NN wider than this: blocks of columns (the partials would not fit the stack)
    GEMV_BLOCKS = 64,     // NT row blocks and wide NN column blocks: at most this many (parallel.h's AW_PIECES)
    GEMV_STREAM = 1 << 16, // NN of this many floats or more: one row a pass (gemv_nn_rows)
};

// sum_k x[k] r[k]: 16 floats a step in four accumulators, then 4, then one at a time.
static inline float dot_row(const float *x, const float *r, size_t K) {
    size_t k = 0;
    float s = 0.0f;
#if AW_SIMD
    aw_f32x4 a0 = aw_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (; k + 16 <= K; k += 16) {
        a0 = aw_madd(a0, aw_load(x + k), aw_load(r + k));
        a1 = aw_madd(a1, aw_load(x + k + 4), aw_load(r + k + 4));
        a2 = aw_madd(a2, aw_load(x + k + 8), aw_load(r + k + 8));
        a3 = aw_madd(a3, aw_load(x + k + 12), aw_load(r + k + 12));
    }
    for (; k + 4 <= K; k += 4) a0 = aw_madd(a0, aw_load(x + k), aw_load(r + k));
    s = aw_hsum(aw_add(aw_add(a0, a1), aw_add(a2, a3)));
#endif
    for (; k < K; k++) s += x[k] * r[k];
    return s;
}

// dot_row with r in BF16: each value widened in registers (8 from one 16-byte load), then the same
// multiply-adds into the same accumulators in the same order.
static inline float dot_row16(const float *x, const uint16_t *r, size_t K) {
    size_t k = 0;
    float s = 0.0f;
#if AW_SIMD
    aw_f32x4 a0 = aw_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (; k + 16 <= K; k += 16) {
        aw_f32x4 r0, r1, r2, r3;
        aw_load_bf16x8(r + k, &r0, &r1);
        aw_load_bf16x8(r + k + 8, &r2, &r3);
        a0 = aw_madd(a0, aw_load(x + k), r0);
        a1 = aw_madd(a1, aw_load(x + k + 4), r1);
        a2 = aw_madd(a2, aw_load(x + k + 8), r2);
        a3 = aw_madd(a3, aw_load(x + k + 12), r3);
    }
    for (; k + 4 <= K; k += 4) a0 = aw_madd(a0, aw_load(x + k), aw_load_bf16x4(r + k));
    s = aw_hsum(aw_add(aw_add(a0, a1), aw_add(a2, a3)));
#endif
    for (; k < K; k++) s += x[k] * aw_bf16(r[k]);
    return s;
}

// y[j0 .. j1) (+)= B[j0 .. j1, :] x: rows j of B (ldb apart).
static void gemv_nt_rows(float *y, const float *x, bsrc b, size_t ldb, size_t K, size_t j0, size_t j1,
                         int accumulate) {
    for (size_t j = j0; j < j1; j++) {
        const float s = b.h ? dot_row16(x, b.h + j * ldb, K) : dot_row(x, b.f + j * ldb, K);
        y[j] = accumulate ? y[j] + s : s;
    }
}

// y (n) (+)= x[k0 .. k1) B[k0 .. k1, 0 .. n) with b at column 0 of row 0, rows ldb apart. Each y[j]
// takes one multiply-add per row in k order (vector lanes; the last n mod 4 columns in scalar),
// however many rows a pass takes, so a column's bits depend only on n mod 4 and the rows. Two
// orders, for where B lives:
//   stream (B of GEMV_STREAM floats or more, which decoding reads from memory): one row a pass, so
//     B is read as one sequential stream. Measured natively on the stories15M shape (AMD EPYC
//     family 25 model 17, one thread), four rows a pass (four short interleaved streams) ran at
//     about 9.5 GB/s and held decoding to 194 tok/s; one row a pass: 260 tok/s.
//   cached (smaller B, which stays in cache between tokens): four rows a pass, a quarter of the
//     loads and stores of y; one row a pass made a d = 64 model's generation 1.35-1.5x slower.
static void gemv_nn_rows(float *y, const float *x, const float *b, size_t ldb, size_t k0, size_t k1, size_t n,
                         int accumulate, int stream) {
    if (!accumulate) memset(y, 0, n * sizeof(float));
    size_t k = k0;
#if AW_SIMD
    const size_t n4 = n / 4 * 4;
    for (; !stream && k + 4 <= k1; k += 4) {
        const float *r0 = b + k * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
        const aw_f32x4 x0 = aw_splat(x[k]), x1 = aw_splat(x[k + 1]), x2 = aw_splat(x[k + 2]), x3 = aw_splat(x[k + 3]);
        for (size_t j = 0; j < n4; j += 4) {
            aw_f32x4 acc = aw_load(y + j);
            acc = aw_madd(acc, x0, aw_load(r0 + j));
            acc = aw_madd(acc, x1, aw_load(r1 + j));
            acc = aw_madd(acc, x2, aw_load(r2 + j));
            acc = aw_madd(acc, x3, aw_load(r3 + j));
            aw_store(y + j, acc);
        }
        for (size_t j = n4; j < n; j++) {
            float acc = y[j];
            acc += x[k] * r0[j], acc += x[k + 1] * r1[j], acc += x[k + 2] * r2[j], acc += x[k + 3] * r3[j];
            y[j] = acc;
        }
    }
    for (; k < k1; k++) {
        const float *r = b + k * ldb;
        const aw_f32x4 xk = aw_splat(x[k]);
        for (size_t j = 0; j < n4; j += 4) aw_store(y + j, aw_madd(aw_load(y + j), xk, aw_load(r + j)));
        for (size_t j = n4; j < n; j++) y[j] += x[k] * r[j];
    }
#else
    (void)stream;
    for (; k < k1; k++)
        for (size_t j = 0; j < n; j++) y[j] += x[k] * b[k * ldb + j];
#endif
}

// gemv_nn_rows with B in BF16: each element of y takes the same multiply-adds in the same order
// (the widened values are those of the float32 B); 8 columns a step where 8 remain, which is two of
// the float32 kernel's 4-column steps.
static void gemv_nn_rows16(float *y, const float *x, const uint16_t *b, size_t ldb, size_t k0, size_t k1, size_t n,
                           int accumulate, int stream) {
    if (!accumulate) memset(y, 0, n * sizeof(float));
    size_t k = k0;
#if AW_SIMD
    const size_t n4 = n / 4 * 4, n8 = n / 8 * 8;
    for (; !stream && k + 4 <= k1; k += 4) {
        const uint16_t *r0 = b + k * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
        const aw_f32x4 x0 = aw_splat(x[k]), x1 = aw_splat(x[k + 1]), x2 = aw_splat(x[k + 2]), x3 = aw_splat(x[k + 3]);
        for (size_t j = 0; j < n4; j += 4) {
            aw_f32x4 acc = aw_load(y + j);
            acc = aw_madd(acc, x0, aw_load_bf16x4(r0 + j));
            acc = aw_madd(acc, x1, aw_load_bf16x4(r1 + j));
            acc = aw_madd(acc, x2, aw_load_bf16x4(r2 + j));
            acc = aw_madd(acc, x3, aw_load_bf16x4(r3 + j));
            aw_store(y + j, acc);
        }
        for (size_t j = n4; j < n; j++) {
            float acc = y[j];
            acc += x[k] * aw_bf16(r0[j]), acc += x[k + 1] * aw_bf16(r1[j]), acc += x[k + 2] * aw_bf16(r2[j]),
                acc += x[k + 3] * aw_bf16(r3[j]);
            y[j] = acc;
        }
    }
    for (; k < k1; k++) {
        const uint16_t *r = b + k * ldb;
        const aw_f32x4 xk = aw_splat(x[k]);
        size_t j = 0;
        for (; j < n8; j += 8) {
            aw_f32x4 lo, hi;
            aw_load_bf16x8(r + j, &lo, &hi);
            aw_store(y + j, aw_madd(aw_load(y + j), xk, lo));
            aw_store(y + j + 4, aw_madd(aw_load(y + j + 4), xk, hi));
        }
        for (; j < n4; j += 4) aw_store(y + j, aw_madd(aw_load(y + j), xk, aw_load_bf16x4(r + j)));
        for (; j < n; j++) y[j] += x[k] * aw_bf16(r[j]);
    }
#else
    (void)stream;
    for (; k < k1; k++)
        for (size_t j = 0; j < n; j++) y[j] += x[k] * aw_bf16(b[k * ldb + j]);
#endif
}

static void gemv_nn_any(float *y, const float *x, bsrc b, size_t ldb, size_t k0, size_t k1, size_t n, int accumulate,
                        int stream) {
    if (b.h) gemv_nn_rows16(y, x, b.h, ldb, k0, k1, n, accumulate, stream);
    else gemv_nn_rows(y, x, b.f, ldb, k0, k1, n, accumulate, stream);
}

typedef struct {
    float *y, *part;  // part: ((pieces - 1) x N) the NN pieces' partial sums after the first
    const float *x;
    bsrc b;
    size_t ldb, N, K;
    size_t cut;       // rows of B per NN piece, or rows (NT) or columns (wide NN) per block
    int accumulate, stream;
} gemv_job;

static void gemv_nt_block(void *ctx, size_t item) {
    const gemv_job *g = ctx;
    const size_t j0 = item * g->cut, j1 = g->N - j0 < g->cut ? g->N : j0 + g->cut;
    gemv_nt_rows(g->y, g->x, g->b, g->ldb, g->K, j0, j1, g->accumulate);
}

static void gemv_nn_piece(void *ctx, size_t item) { // piece 0 sums into y itself (from y when accumulating)
    const gemv_job *g = ctx;
    const size_t k0 = item * g->cut, k1 = g->K - k0 < g->cut ? g->K : k0 + g->cut;
    if (item == 0) gemv_nn_any(g->y, g->x, g->b, g->ldb, k0, k1, g->N, g->accumulate, g->stream);
    else gemv_nn_any(g->part + (item - 1) * g->N, g->x, g->b, g->ldb, k0, k1, g->N, 0, g->stream);
}

static void gemv_nn_cols(void *ctx, size_t item) {
    const gemv_job *g = ctx;
    const size_t j0 = item * g->cut, n = g->N - j0 < g->cut ? g->N - j0 : g->cut;
    gemv_nn_any(g->y + j0, g->x, bsrc_at(g->b, j0), g->ldb, 0, g->K, n, g->accumulate, g->stream);
}

// [0, n) in at most GEMV_BLOCKS blocks of a multiple of 4 and at least `least` (a multiple of 4)
// elements: returns the block length.
static size_t gemv_block(size_t n, size_t least) {
    size_t b = (n + GEMV_BLOCKS - 1) / GEMV_BLOCKS;
    b = (b + 3) / 4 * 4;
    return b < least ? least : b;
}

static void gemv(float *y, const float *x, bsrc b, size_t ldb, size_t N, size_t K, int nt, int accumulate) {
    gemv_job g = {.y = y, .x = x, .b = b, .ldb = ldb, .N = N, .K = K, .accumulate = accumulate,
                  .stream = (double)N * (double)K >= GEMV_STREAM};
    const int par = (double)N * (double)K >= GEMV_PAR;
    if (nt) {
        g.cut = par ? gemv_block(N, 4) : N;
        aw_parallel_for((N + g.cut - 1) / g.cut, gemv_nt_block, &g);
    } else if (N > GEMV_WIDE) {
        g.cut = par ? gemv_block(N, 256) : N;
        aw_parallel_for((N + g.cut - 1) / g.cut, gemv_nn_cols, &g);
    } else {
        float part[(GEMV_PIECES - 1) * GEMV_WIDE];
        size_t kp = (K + GEMV_PIECES - 1) / GEMV_PIECES;
        g.cut = !par ? K : kp < GEMV_PIECE_ROWS ? GEMV_PIECE_ROWS : kp;
        g.part = part;
        const size_t pieces = (K + g.cut - 1) / g.cut;
        aw_parallel_for(pieces, gemv_nn_piece, &g);
        for (size_t p = 1; p < pieces; p++) aw_axpy(y, 1.0f, part + (p - 1) * N, N); // in piece order
    }
}

static void gemm_par(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, bsrc b, size_t b_ks,
                     size_t b_js, size_t M, size_t N, size_t K, int accumulate) {
    if (M == 1 && a_ks == 1 && K > 0 && (b_js == 1 || b_ks == 1)) { // one row of A: stream B once
        gemv(c, a, b, b_js == 1 ? b_ks : b_js, N, K, b_js != 1, accumulate);
        return;
    }
#ifdef AW_THREADS
    if ((double)M * (double)N * (double)K >= PAR_MIN_FLOPS && (M > RB || N >= 2 * CB)) {
        gemm_job g = {c, ldc, a_rs, a_ks, b_ks, b_js, M, N, K, a, b, accumulate};
        if (M > RB) aw_parallel_for((M + RB - 1) / RB, gemm_block, &g);
        else aw_parallel_for((N + CB - 1) / CB, gemm_cols, &g);
        return;
    }
#endif
    gemm(c, ldc, a, a_rs, a_ks, b, b_ks, b_js, M, N, K, accumulate);
}

void aw_matmul_nn(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                  size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, lda, 1, (bsrc){b, NULL}, ldb, 1, M, N, K, accumulate);
}

void aw_matmul_nt(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                  size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, lda, 1, (bsrc){b, NULL}, 1, ldb, M, N, K, accumulate);
}

void aw_matmul_tn(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                  size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, 1, lda, (bsrc){b, NULL}, ldb, 1, M, N, K, accumulate);
}

void aw_matmul_nn_bf16(float *c, const float *a, const uint16_t *b, size_t M, size_t N, size_t K, size_t lda,
                       size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, lda, 1, (bsrc){NULL, b}, ldb, 1, M, N, K, accumulate);
}

void aw_matmul_nt_bf16(float *c, const float *a, const uint16_t *b, size_t M, size_t N, size_t K, size_t lda,
                       size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, lda, 1, (bsrc){NULL, b}, 1, ldb, M, N, K, accumulate);
}

// ---- naive references: one dot product per output, accumulated in double ------------
static void gemm_ref(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, const float *b,
                     size_t b_ks, size_t b_js, size_t M, size_t N, size_t K, int accumulate) {
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = accumulate ? c[i * ldc + j] : 0.0;
            for (size_t k = 0; k < K; k++) s += (double)a[i * a_rs + k * a_ks] * b[k * b_ks + j * b_js];
            c[i * ldc + j] = (float)s;
        }
}

void aw_matmul_nn_ref(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                      size_t ldb, size_t ldc, int accumulate) {
    gemm_ref(c, ldc, a, lda, 1, b, ldb, 1, M, N, K, accumulate);
}

void aw_matmul_nt_ref(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                      size_t ldb, size_t ldc, int accumulate) {
    gemm_ref(c, ldc, a, lda, 1, b, 1, ldb, M, N, K, accumulate);
}

void aw_matmul_tn_ref(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                      size_t ldb, size_t ldc, int accumulate) {
    gemm_ref(c, ldc, a, 1, lda, b, ldb, 1, M, N, K, accumulate);
}
