// Native tests of matmul's packing paths against the naive reference: the pre-packed B of
// src/kernels/matmul_packed.h (B packed from its own layout and from a stored transpose, whole
// and as a slice of rows, as the streaming attention path uses it), and the packed-A path of
// aw_matmul_* (taken for TN when M K >= 128^2 and for any layout when M K > 512^2), with = and +=.
#include "../../src/kernels/kernels.h"
#include "../../src/kernels/matmul_packed.h"
#include "test.h"

#include <string.h>

// Shapes large enough to take the packed-A path, with row and column edges (M % 4, N % 8).
static void test_packed_a(void) {
    const size_t shapes[][3] = {{130, 70, 200}, {129, 13, 300}, {522, 37, 520}, {40, 9, 600}};
    double worst[3] = {0, 0, 0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *a = malloc(M * K * sizeof(float)), *b = malloc(K * N * sizeof(float));
        float *c = malloc(M * N * sizeof(float)), *r = malloc(M * N * sizeof(float));
        fill_uniform(a, M * K, 50 + (uint32_t)s), fill_uniform(b, K * N, 500 + (uint32_t)s);
        for (int acc = 0; acc < 2; acc++) {
            fill_uniform(c, M * N, 9), fill_uniform(r, M * N, 9);
            aw_matmul_tn(c, a, b, M, N, K, M, N, N, acc), aw_matmul_tn_ref(r, a, b, M, N, K, M, N, N, acc); // a (K, M)
            double e = max_err(c, r, M * N); worst[0] = e > worst[0] ? e : worst[0];
            fill_uniform(c, M * N, 9), fill_uniform(r, M * N, 9);
            aw_matmul_nn(c, a, b, M, N, K, K, N, N, acc), aw_matmul_nn_ref(r, a, b, M, N, K, K, N, N, acc);
            e = max_err(c, r, M * N); worst[1] = e > worst[1] ? e : worst[1];
            fill_uniform(c, M * N, 9), fill_uniform(r, M * N, 9);
            aw_matmul_nt(c, a, b, M, N, K, K, K, N, acc), aw_matmul_nt_ref(r, a, b, M, N, K, K, K, N, acc); // b (N, K)
            e = max_err(c, r, M * N); worst[2] = e > worst[2] ? e : worst[2];
        }
        free(a), free(b), free(c), free(r);
    }
    REPORT("matmul TN packed-A path vs ref (4 shapes, = and +=)", worst[0], TOL_MATMUL);
    REPORT("matmul NN packed-A path vs ref", worst[1], TOL_MATMUL);
    REPORT("matmul NT packed-A path vs ref", worst[2], TOL_MATMUL);
}

int main(void) {
    test_packed_a();
    // (M, N, K, k0): C = A (M x K) times rows k0 .. k0+K of B, where B has R = k0 + K + 3 rows
    const size_t shapes[][4] = {{1, 1, 1, 0}, {3, 5, 7, 0}, {4, 8, 16, 8}, {17, 33, 9, 5}, {64, 64, 64, 0},
                                {37, 300, 70, 16}, {5, 9, 600, 40}, {64, 12, 256, 256}};
    double worst[2] = {0, 0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], k0 = shapes[s][3], R = k0 + K + 3;
        float *a = malloc(M * K * sizeof(float)), *b = malloc(R * N * sizeof(float)), *bt = malloc(N * R * sizeof(float));
        float *bp = malloc(aw_packed_b_floats(R, N) * sizeof(float));
        float *c = malloc(M * N * sizeof(float)), *r = malloc(M * N * sizeof(float));
        fill_uniform(a, M * K, 3 + (uint32_t)s), fill_uniform(b, R * N, 300 + (uint32_t)s);
        for (size_t k = 0; k < R; k++)
            for (size_t j = 0; j < N; j++) bt[j * R + k] = b[k * N + j]; // bt (N x R) = B^T
        for (int layout = 0; layout < 2; layout++) {
            if (layout == 0) aw_pack_b_panels(bp, b, R, N, N, 1);
            else aw_pack_b_panels(bp, bt, R, N, 1, R);
            for (int acc = 0; acc < 2; acc++) {
                fill_uniform(c, M * N, 9), fill_uniform(r, M * N, 9); // += starts from equal C
                aw_matmul_packed(c, a, bp + 8 * k0, M, N, K, K, 8 * R, N, acc);
                aw_matmul_nn_ref(r, a, b + k0 * N, M, N, K, K, N, N, acc);
                double e = max_err(c, r, M * N);
                worst[layout] = e > worst[layout] ? e : worst[layout];
            }
        }
        free(a), free(b), free(bt), free(bp), free(c), free(r);
    }
    REPORT("matmul packed B vs ref (8 shapes, slices, = and +=)", worst[0], TOL_MATMUL);
    REPORT("matmul packed B^T vs ref", worst[1], TOL_MATMUL);
    return test_failures != 0;
}
