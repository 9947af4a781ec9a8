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

static void gemm(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, const float *b, size_t b_ks,
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
                pack_b(bp, b, b_ks, b_js, k0, kc, j0, nr);
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
            pack_b(bp, b, b_ks, b_js, k0, kc, j0, nr);
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
    const float *a, *b;
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
    gemm(g->c + j0, g->ldc, g->a, g->a_rs, g->a_ks, g->b + j0 * g->b_js, g->b_ks, g->b_js, g->M, cols, g->K,
         g->accumulate);
}
#endif

// ---- one row of A (generation's token at a time): y (N) (+)= x (K) op(B) --------------------------
// Packing B would read it twice for one use, so these stream it once. NN (B row-major K x N):
// blocks of GB columns, each summing down the rows of B in k order; NT (B stored N x K): four dot
// products at a time over contiguous rows. Each output's sum has a fixed order whatever the
// threads, so any thread count gives the same bits.
enum { GB = 32 };

static void gemv_nn_cols(float *y, const float *x, const float *b, size_t ldb, size_t K, size_t j0, size_t j1,
                         int accumulate) {
    size_t j = j0;
#if AW_SIMD
    for (; j + GB <= j1; j += GB) {
        aw_f32x4 acc[GB / 4];
        for (int v = 0; v < GB / 4; v++) acc[v] = accumulate ? aw_load(y + j + 4 * v) : aw_splat(0.0f);
        for (size_t k = 0; k < K; k++) {
            const aw_f32x4 xk = aw_splat(x[k]);
            const float *row = b + k * ldb + j;
            for (int v = 0; v < GB / 4; v++) acc[v] = aw_madd(acc[v], xk, aw_load(row + 4 * v));
        }
        for (int v = 0; v < GB / 4; v++) aw_store(y + j + 4 * v, acc[v]);
    }
    for (; j + 4 <= j1; j += 4) {
        aw_f32x4 acc = accumulate ? aw_load(y + j) : aw_splat(0.0f);
        for (size_t k = 0; k < K; k++) acc = aw_madd(acc, aw_splat(x[k]), aw_load(b + k * ldb + j));
        aw_store(y + j, acc);
    }
#endif
    for (; j < j1; j++) {
        float acc = accumulate ? y[j] : 0.0f;
        for (size_t k = 0; k < K; k++) acc += x[k] * b[k * ldb + j];
        y[j] = acc;
    }
}

static void gemv_nt_rows(float *y, const float *x, const float *b, size_t ldb, size_t K, size_t j0, size_t j1,
                         int accumulate) {
    size_t j = j0;
#if AW_SIMD
    for (; j + 4 <= j1; j += 4) {
        const float *r0 = b + j * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
        aw_f32x4 a0 = aw_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
        size_t k = 0;
        for (; k + 4 <= K; k += 4) {
            const aw_f32x4 xv = aw_load(x + k);
            a0 = aw_madd(a0, xv, aw_load(r0 + k)), a1 = aw_madd(a1, xv, aw_load(r1 + k));
            a2 = aw_madd(a2, xv, aw_load(r2 + k)), a3 = aw_madd(a3, xv, aw_load(r3 + k));
        }
        float s[4] = {aw_hsum(a0), aw_hsum(a1), aw_hsum(a2), aw_hsum(a3)};
        for (; k < K; k++) s[0] += x[k] * r0[k], s[1] += x[k] * r1[k], s[2] += x[k] * r2[k], s[3] += x[k] * r3[k];
        for (int i = 0; i < 4; i++) y[j + i] = accumulate ? y[j + i] + s[i] : s[i];
    }
#endif
    for (; j < j1; j++) {
        float acc = 0.0f;
        for (size_t k = 0; k < K; k++) acc += x[k] * b[j * ldb + k];
        y[j] = accumulate ? y[j] + acc : acc;
    }
}

typedef struct {
    float *y;
    const float *x, *b;
    size_t ldb, N, K;
    int nt, accumulate;
} gemv_job;

enum { GEMV_ITEM = 64 }; // columns (NN) or rows of B (NT) per item: whole GB blocks

static void gemv_item(void *ctx, size_t item) {
    const gemv_job *g = ctx;
    const size_t j0 = item * GEMV_ITEM, j1 = g->N - j0 < GEMV_ITEM ? g->N : j0 + GEMV_ITEM;
    (g->nt ? gemv_nt_rows : gemv_nn_cols)(g->y, g->x, g->b, g->ldb, g->K, j0, j1, g->accumulate);
}

static void gemv(float *y, const float *x, const float *b, size_t ldb, size_t N, size_t K, int nt, int accumulate) {
    gemv_job g = {y, x, b, ldb, N, K, nt, accumulate};
    const size_t items = (N + GEMV_ITEM - 1) / GEMV_ITEM;
#ifdef AW_THREADS
    if ((double)N * (double)K >= 1 << 17 && items > 1) {
        aw_parallel_for(items, gemv_item, &g);
        return;
    }
#endif
    for (size_t i = 0; i < items; i++) gemv_item(&g, i);
}

static void gemm_par(float *c, size_t ldc, const float *a, size_t a_rs, size_t a_ks, const float *b, size_t b_ks,
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
    gemm_par(c, ldc, a, lda, 1, b, ldb, 1, M, N, K, accumulate);
}

void aw_matmul_nt(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                  size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, lda, 1, b, 1, ldb, M, N, K, accumulate);
}

void aw_matmul_tn(float *c, const float *a, const float *b, size_t M, size_t N, size_t K, size_t lda,
                  size_t ldb, size_t ldc, int accumulate) {
    gemm_par(c, ldc, a, 1, lda, b, ldb, 1, M, N, K, accumulate);
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
