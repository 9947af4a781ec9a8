// Native tests of the pre-packed matmul (src/kernels/matmul_packed.h) against the naive
// reference: B packed from its own layout and from a stored transpose, whole and as a slice
// of rows (how the streaming attention path uses it), with = and +=.
#include "../../src/kernels/kernels.h"
#include "../../src/kernels/matmul_packed.h"
#include "test.h"

#include <string.h>

int main(void) {
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
