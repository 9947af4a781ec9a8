// Native kernel tests: matmul layouts, exp, row softmax against their references.
#include "../../src/kernels/kernels.h"
#include "../../src/kernels/simd.h"
#include "test.h"

#include <string.h>

static void test_matmul(void) {
    // M = 1: generation's matrix-vector products (matmul.c gemv): pieces of rows of B with partial
    // sums (288 x 288, 770 x 300), blocks of columns past 1024, one piece below 2^15 multiply-adds
    const size_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {4, 8, 16}, {17, 33, 9}, {64, 64, 64}, {37, 300, 70}, {5, 9, 600},
                                {1, 288, 288}, {1, 300, 770}, {1, 1100, 40}, {1, 37, 5}};
    double worst[3] = {0, 0, 0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *a = malloc(M * K * sizeof(float)), *b = malloc(K * N * sizeof(float));
        float *c = malloc(M * N * sizeof(float)), *r = malloc(M * N * sizeof(float));
        fill_uniform(a, M * K, 1 + (uint32_t)s), fill_uniform(b, K * N, 100 + (uint32_t)s);
        for (int acc = 0; acc < 2; acc++) {
            fill_uniform(c, M * N, 7), fill_uniform(r, M * N, 7); // accumulate starts from equal C
            aw_matmul_nn(c, a, b, M, N, K, K, N, N, acc), aw_matmul_nn_ref(r, a, b, M, N, K, K, N, N, acc);
            double e = max_err(c, r, M * N); worst[0] = e > worst[0] ? e : worst[0];
            fill_uniform(c, M * N, 7), fill_uniform(r, M * N, 7);
            aw_matmul_nt(c, a, b, M, N, K, K, K, N, acc), aw_matmul_nt_ref(r, a, b, M, N, K, K, K, N, acc); // b as (N, K)
            e = max_err(c, r, M * N); worst[1] = e > worst[1] ? e : worst[1];
            fill_uniform(c, M * N, 7), fill_uniform(r, M * N, 7);
            aw_matmul_tn(c, a, b, M, N, K, M, N, N, acc), aw_matmul_tn_ref(r, a, b, M, N, K, M, N, N, acc); // a as (K, M)
            e = max_err(c, r, M * N); worst[2] = e > worst[2] ? e : worst[2];
        }
        free(a), free(b), free(c), free(r);
    }
    REPORT("matmul NN vs ref (11 shapes, = and +=)", worst[0], TOL_MATMUL);
    REPORT("matmul NT vs ref", worst[1], TOL_MATMUL);
    REPORT("matmul TN vs ref", worst[2], TOL_MATMUL);
}

static void test_exp(void) {
    enum { N = 4001 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = -87.0f + 175.0f * (float)i / (N - 1);
    aw_exp(y, x, N);
    double worst = 0;
    for (int i = 1; i < N; i++) {
        double e = fabs(y[i] - exp((double)x[i])) / exp((double)x[i]);
        worst = e > worst ? e : worst;
    }
    REPORT("exp relative error on (-87, 88]", worst, TOL_EXP_REL);
    float edge[5] = {-INFINITY, -1e30f, -87.0f, 1e4f, 0.0f}, out[5];
    aw_exp(out, edge, 5);
    CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0, "exp of -inf, -1e30, -87 must be exactly 0");
    CHECK(isfinite(out[3]), "exp(1e4) must stay finite");
    CHECK(out[4] == 1.0f, "exp(0) must be 1, got %g", out[4]);
    CHECK(aw_expf(-INFINITY) == 0.0f && aw_expf(0.0f) == 1.0f, "scalar expf edges");
}

static void test_softmax(void) {
    enum { R = 9, C = 203 };
    static float x[R * C], r[R * C];
    fill_uniform(x, R * C, 5);
    for (int i = 0; i < R * C; i++) x[i] *= 30.0f;
    for (int i = 0; i < R * C; i += 7) x[i] = -INFINITY;
    for (int j = 0; j < C; j++) x[3 * C + j] = -INFINITY; // row 3 fully masked
    memcpy(r, x, sizeof x);
    aw_softmax_rows(x, R, C, C);
    aw_softmax_rows_ref(r, R, C, C);
    REPORT("softmax rows vs ref (masked entries)", max_err(x, r, R * C), TOL_SOFTMAX);
    int zero_row = 1;
    for (int j = 0; j < C; j++) zero_row &= x[3 * C + j] == 0.0f;
    CHECK(zero_row, "a fully masked row must be all zeros");
}

static void test_small_helpers(void) {
    float a[13], b[13], y[13];
    fill_uniform(a, 13, 3), fill_uniform(b, 13, 4);
    double dot = 0, sum = 0;
    for (int i = 0; i < 13; i++) dot += (double)a[i] * b[i], sum += a[i];
    REPORT("dot", fabs(aw_dot(a, b, 13) - dot), TOL_REDUCTION);
    REPORT("sum", fabs(aw_sum(a, 13) - sum), TOL_REDUCTION);
    memcpy(y, b, sizeof y);
    aw_axpy(y, 0.5f, a, 13);
    double e = 0;
    for (int i = 0; i < 13; i++) e = fmax(e, fabs(y[i] - (b[i] + 0.5 * a[i])));
    REPORT("axpy", e, TOL_REDUCTION);
    float t[13 * 3], back[13 * 3];
    fill_uniform(t, 39, 9);
    aw_transpose(back, t, 13, 3, 3, 13);
    int ok = 1;
    for (int i = 0; i < 13; i++)
        for (int j = 0; j < 3; j++) ok &= back[j * 13 + i] == t[i * 3 + j];
    CHECK(ok, "transpose");
    CHECK(aw_find_nonfinite(a, 13) == 13, "all finite: n");
    a[12] = NAN; // in the scalar tail
    CHECK(aw_find_nonfinite(a, 13) == 12, "NaN in the tail");
    a[3] = -INFINITY; // inside the first vector block
    CHECK(aw_find_nonfinite(a, 13) == 3, "-inf in a vector block");
}

int main(void) {
    printf("kernels (%s path)\n", AW_SIMD ? "SSE2 vector" : "scalar");
    test_matmul();
    test_exp();
    test_softmax();
    test_small_helpers();
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
