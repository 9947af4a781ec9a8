// kernels.h: the numeric building blocks every attention form and the model share.
// Conventions: outputs first, then inputs, then sizes; row-major; leading dimensions
// (ld*) in elements; sizes and offsets in size_t. Each fast kernel has a naive `_ref`
// twin that the tests compare against.
#ifndef AW_KERNELS_H
#define AW_KERNELS_H

#include <stddef.h>
#include <stdint.h>

// ---- matmul ---------------------------------------------------------------------
// C (M x N) = A (M x K) B (K x N), or C += ... when accumulate != 0.
void aw_matmul_nn(float *c, const float *a, const float *b, size_t M, size_t N, size_t K,
                  size_t lda, size_t ldb, size_t ldc, int accumulate);
// C (M x N) = A (M x K) B^T, B stored (N x K).
void aw_matmul_nt(float *c, const float *a, const float *b, size_t M, size_t N, size_t K,
                  size_t lda, size_t ldb, size_t ldc, int accumulate);
// C (M x N) = A^T B, A stored (K x M), B (K x N).
void aw_matmul_tn(float *c, const float *a, const float *b, size_t M, size_t N, size_t K,
                  size_t lda, size_t ldb, size_t ldc, int accumulate);
// The same two with B in BF16 (uint16: the top half of a float32), widened in registers: the same
// bits as aw_matmul_nn / _nt given B's values in float32, in every build and at every thread count.
void aw_matmul_nn_bf16(float *c, const float *a, const uint16_t *b, size_t M, size_t N, size_t K,
                       size_t lda, size_t ldb, size_t ldc, int accumulate);
void aw_matmul_nt_bf16(float *c, const float *a, const uint16_t *b, size_t M, size_t N, size_t K,
                       size_t lda, size_t ldb, size_t ldc, int accumulate);
// The kernel variant (matmul.c): 0 measured, 1 unpacked, 2 packed; the same bits, different speed.
// Sets it when v is 0..2; returns the variant in use.
int aw_matmul_set_variant(int v);
void aw_matmul_nn_ref(float *c, const float *a, const float *b, size_t M, size_t N, size_t K,
                      size_t lda, size_t ldb, size_t ldc, int accumulate);
void aw_matmul_nt_ref(float *c, const float *a, const float *b, size_t M, size_t N, size_t K,
                      size_t lda, size_t ldb, size_t ldc, int accumulate);
void aw_matmul_tn_ref(float *c, const float *a, const float *b, size_t M, size_t N, size_t K,
                      size_t lda, size_t ldb, size_t ldc, int accumulate);

// ---- exp and softmax ------------------------------------------------------------
// y = exp(x) elementwise (Cephes-style range reduction + degree-6 polynomial,
// max relative error ~2e-7); x < -87.3 (including -inf) gives exactly 0.
void aw_exp(float *y, const float *x, size_t n);
float aw_expf(float x); // the same approximation, one value at a time
// y = exp(x - shift); returns sum(y). The softmax inner loop.
float aw_exp_shift_sum(float *y, const float *x, float shift, size_t n);
float aw_max_value(const float *x, size_t n); // -inf for n == 0
// In-place row softmax over `rows` rows of `cols` (stride ld). -inf entries are masked;
// a row that is all -inf becomes all zero.
void aw_softmax_rows(float *x, size_t rows, size_t cols, size_t ld);
void aw_softmax_rows_ref(float *x, size_t rows, size_t cols, size_t ld); // libm expf

// ---- elementwise / reductions ---------------------------------------------------
void aw_scale(float *y, const float *x, float s, size_t n);   // y = s x
void aw_axpy(float *y, float a, const float *x, size_t n);    // y += a x
float aw_dot(const float *a, const float *b, size_t n);       // a . b
float aw_sum(const float *x, size_t n);                       // sum x
size_t aw_find_nonfinite(const float *x, size_t n);          // index of the first NaN/inf, n if none
void aw_transpose(float *dst, const float *src, size_t rows, size_t cols, size_t ld_src,
                  size_t ld_dst); // dst (cols x rows) = src (rows x cols)^T

#endif
