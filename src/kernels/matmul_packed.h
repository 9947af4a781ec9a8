// matmul_packed.h: matmul against a B packed once and reused, for callers that multiply by
// the same matrix many times (the streaming attention path multiplies every query block by
// the same K^T and V). Implemented in matmul.c beside the other layouts; kernels.h keeps the
// general-purpose entry points.
#ifndef AW_MATMUL_PACKED_H
#define AW_MATMUL_PACKED_H

#include <stddef.h>

// Floats needed to pack a K x N matrix: ceil(N / 8) panels of (K x 8).
size_t aw_packed_b_floats(size_t K, size_t N);
// bp = B (K x N) as ceil(N / 8) column panels of (K x 8), row-major inside a panel, columns
// past N zero. B element (k, j) is read at b[k * b_ks + j * b_js]: (ldb, 1) for B itself,
// (1, ldb) to pack the transpose of a stored (N x K) matrix.
void aw_pack_b_panels(float *bp, const float *b, size_t K, size_t N, size_t b_ks, size_t b_js);
// The same layout, only rows k0 .. k1-1 of the panels that cover columns j0 .. j1-1 (j0 a multiple
// of 8): disjoint blocks can be packed at once (by threads) into one buffer.
void aw_pack_b_block(float *bp, const float *b, size_t K, size_t N, size_t b_ks, size_t b_js, size_t k0, size_t k1,
                     size_t j0, size_t j1);
// C (M x N) = A (M x K, row stride lda) B, or C += ... when accumulate != 0, where B is given
// by its panels: panel p (columns 8p .. 8p+7) starts at bp + p * panel_stride, row k of it at
// + 8 k. A slice of rows k0 .. k0+K of a packed matrix with R rows is (bp + 8 k0, stride 8 R).
void aw_matmul_packed(float *c, const float *a, const float *bp, size_t M, size_t N, size_t K, size_t lda,
                      size_t panel_stride, size_t ldc, int accumulate);

#endif
