// Native TopK SAE tests (src/sae/sae.c) under ASan + UBSan: training on rows made of a few of 24
// ground-truth directions lowers the FVU, keeps every decoder row a unit vector and fires k latents
// per row; batches of growing and shrinking size reuse the work buffers; encode's order; the
// refusals (k > d_sae, a size past size_t, NaN rows, rows all equal) leave the SAE usable.
#include "../../src/kernels/status.h"
#include "../../src/sae/sae.h"
#include "test.h"

#include <string.h>

enum { D = 16, S = 64, K = 4, TRUE_DIRS = 24 };

// rows = sum of 2 of the ground-truth directions with weights in [0.5, 1.5), plus an offset
static void make_rows(float *x, size_t B, const float *dirs, uint32_t seed) {
    uint32_t s = seed;
    for (size_t b = 0; b < B; b++) {
        for (size_t i = 0; i < D; i++) x[b * D + i] = 0.3f;
        for (int t = 0; t < 2; t++) {
            s ^= s << 13, s ^= s >> 17, s ^= s << 5;
            const size_t j = s % TRUE_DIRS;
            const float w = 0.5f + (float)(s >> 8) / 16777216.0f;
            for (size_t i = 0; i < D; i++) x[b * D + i] += w * dirs[j * D + i];
        }
    }
}

int main(void) {
    aw_sae sae;
    aw_sae_config cfg = {.d_in = D, .d_sae = S, .k = K, .aux_k = 8, .dead_tokens = 256, .aux_coef = 1.0f / 32};
    CHECK(sae_init(&sae, &cfg, 7) == AW_OK, "init: %s", aw_error_message());
    float dirs[TRUE_DIRS * D];
    fill_uniform(dirs, TRUE_DIRS * D, 3);
    static float x[512 * D];
    aw_sae_stats st, first = {0};
    const size_t sizes[] = {64, 512, 100, 2, 300};
    for (int step = 0; step < 200; step++) {
        const size_t B = sizes[step % 5];
        make_rows(x, B, dirs, 11 + (uint32_t)step);
        aw_clear_error();
        CHECK(sae_train_step(&sae, x, B, 1e-2f, &st) == AW_OK, "step %d: %s", step, aw_error_message());
        if (step == 0) first = st;
        CHECK(st.l0 <= K, "l0 %g", st.l0);
    }
    printf("sae: fvu %.4f at the first step, %.4f at the last; l0 %.2f, dead %g\n", first.fvu, st.fvu, st.l0, st.dead);
    CHECK(st.fvu < 0.5 * first.fvu, "training lowers the FVU: %g -> %g", first.fvu, st.fvu);
    double worst = 0.0;
    for (size_t j = 0; j < S; j++) {
        double ss = 0.0;
        for (size_t i = 0; i < D; i++) ss += (double)sae.w_dec[j * D + i] * sae.w_dec[j * D + i];
        if (fabs(sqrt(ss) - 1.0) > worst) worst = fabs(sqrt(ss) - 1.0);
    }
    REPORT("sae: decoder rows' |norm - 1|", worst, TOL_SAE_UNIT_NORM);
    // encode: descending values, distinct latents
    int32_t idx[8 * K];
    float val[8 * K];
    make_rows(x, 8, dirs, 99);
    CHECK(sae_encode(&sae, x, 8, idx, val) == AW_OK, "encode");
    for (size_t b = 0; b < 8; b++)
        for (size_t t = 1; t < K; t++) {
            CHECK(val[b * K + t] <= val[b * K + t - 1], "row %zu not in descending order", b);
            CHECK(idx[b * K + t] != idx[b * K + t - 1] || val[b * K + t] == 0.0f, "row %zu repeats a latent", b);
        }
    // refusals leave it usable
    float keep = sae.w_enc[5];
    x[3] = NAN;
    aw_clear_error();
    CHECK(sae_train_step(&sae, x, 8, 1e-2f, &st) == AW_ERR_NONFINITE, "NaN row accepted");
    CHECK(strstr(aw_error_message(), "acts[3]") != NULL, "message: %s", aw_error_message());
    for (size_t i = 0; i < 2 * D; i++) x[i] = 1.0f;
    aw_clear_error();
    CHECK(sae_train_step(&sae, x, 2, 1e-2f, &st) == AW_ERR_ARG, "equal rows accepted");
    CHECK(sae.w_enc[5] == keep, "a refused step changed the parameters");
    make_rows(x, 8, dirs, 5);
    aw_clear_error();
    CHECK(sae_train_step(&sae, x, 8, 1e-2f, &st) == AW_OK, "usable after refusals: %s", aw_error_message());
    sae_free(&sae);

    aw_sae bad;
    aw_sae_config big = cfg;
    big.k = S + 1;
    aw_clear_error();
    CHECK(sae_init(&bad, &big, 1) == AW_ERR_ARG, "k > d_sae accepted");
    big = cfg;
    big.d_in = big.d_sae = (size_t)1 << (sizeof(size_t) * 4); // the product is 2^(bits of size_t)
    aw_clear_error();
    CHECK(sae_init(&bad, &big, 1) == AW_ERR_NOMEM, "a size past size_t accepted");
    CHECK(strstr(aw_error_message(), "too large") != NULL, "message: %s", aw_error_message());
    sae_free(&bad);
    return test_failures != 0;
}
