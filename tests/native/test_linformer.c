// Native Linformer tests: the fast path (projections + softmax attention) against the naive
// double reference (heads, k < n, k > n, n = 1, n = L), its implied weights, the backward
// (q, k, v, E, F) against central differences and with a 10% error the check must catch, and
// the errors (n > L names L; causal has no form).
#include "../../src/attention/linformer.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <math.h>
#include <string.h>

typedef struct {
    size_t n, d, dv, heads, k, L;
} case_t;

static const case_t CASES[] = {
    {1, 4, 4, 1, 2, 8}, {13, 8, 8, 2, 4, 16}, {16, 8, 12, 2, 8, 16}, {10, 16, 8, 4, 20, 32}, {50, 8, 8, 1, 6, 64},
};

static double loss(const float *q, const float *k, const float *v, const float *E, const float *F, const float *r,
                   const aw_linformer_desc *ds, float *out) {
    linformer_forward(out, NULL, q, k, v, E, F, ds);
    double s = 0.0;
    for (size_t i = 0; i < ds->n * ds->dv; i++) s += (double)out[i] * r[i];
    return s;
}

static double grad_error(const case_t *c, float *q, float *k, float *v, float *E, float *F, const float *r, float skew) {
    const size_t n = c->n, d = c->d, dv = c->dv, kl = c->k * c->L;
    float *tmp = malloc(n * dv * 4), *dq = calloc(n * d, 4), *dk = calloc(n * d, 4), *dv_ = calloc(n * dv, 4);
    float *dE = calloc(kl, 4), *dF = calloc(kl, 4);
    const aw_linformer_desc ds = {n, d, dv, c->heads, c->k, c->L, 1.0f / sqrtf((float)(d / c->heads))};
    CHECK(linformer_backward(dq, dk, dv_, dE, dF, r, q, k, v, E, F, &ds) == AW_OK, "backward");
    for (size_t i = 0; i < kl; i++) dE[i] *= skew;
    float *xs[5] = {q, k, v, E, F}, *gs[5] = {dq, dk, dv_, dE, dF};
    const size_t lens[5] = {n * d, n * d, n * dv, kl, kl};
    double worst = 0.0; // the worst tensor's relative error, so a 10% error in one tensor shows
    for (int t = 0; t < 5; t++) {
        double num2 = 0.0, diff2 = 0.0;
        for (size_t i = 0; i < lens[t]; i++) {
            const float keep = xs[t][i];
            xs[t][i] = keep + 1e-2f;
            const double lp = loss(q, k, v, E, F, r, &ds, tmp);
            xs[t][i] = keep - 1e-2f;
            const double num = (lp - loss(q, k, v, E, F, r, &ds, tmp)) / 2e-2;
            xs[t][i] = keep;
            num2 += num * num, diff2 += (num - gs[t][i]) * (num - gs[t][i]);
        }
        if (num2 > 1e-12) worst = fmax(worst, sqrt(diff2 / num2));
    }
    free(tmp), free(dq), free(dk), free(dv_), free(dE), free(dF);
    return worst;
}

int main(void) {
    double worst_fwd = 0.0, worst_grad = 0.0, mutated = INFINITY;
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const case_t *c = &CASES[ci];
        const size_t n = c->n, d = c->d, dv = c->dv, h = c->heads, kl = c->k * c->L;
        float *q = malloc(n * d * 4), *k = malloc(n * d * 4), *v = malloc(n * dv * 4), *r = malloc(n * dv * 4);
        float *E = malloc(kl * 4), *F = malloc(kl * 4);
        float *o1 = malloc(n * dv * 4), *o2 = malloc(n * dv * 4), *w1 = malloc(h * n * n * 4), *w2 = malloc(h * n * n * 4);
        fill_uniform(q, n * d, 11 + ci), fill_uniform(k, n * d, 22 + ci), fill_uniform(v, n * dv, 33 + ci);
        fill_uniform(r, n * dv, 44 + ci), fill_uniform(E, kl, 55 + ci), fill_uniform(F, kl, 66 + ci);
        const aw_linformer_desc ds = {n, d, dv, h, c->k, c->L, 1.0f / sqrtf((float)(d / h))};
        CHECK(linformer_forward(o1, w1, q, k, v, E, F, &ds) == AW_OK, "forward: %s", aw_error_message());
        CHECK(linformer_forward_ref(o2, w2, q, k, v, E, F, &ds) == AW_OK, "reference");
        worst_fwd = fmax(worst_fwd, fmax(max_err(o1, o2, n * dv), max_err(w1, w2, h * n * n)));
        if (n <= 16) {
            worst_grad = fmax(worst_grad, grad_error(c, q, k, v, E, F, r, 1.0f));
            if (n > 1) mutated = fmin(mutated, grad_error(c, q, k, v, E, F, r, 1.1f));
        }
        free(q), free(k), free(v), free(r), free(E), free(F), free(o1), free(o2), free(w1), free(w2);
    }
    REPORT("linformer fast vs ref (5 cases: heads, k < n, k > n, n = 1)", worst_fwd, TOL_ATTENTION);
    REPORT("grad check: linformer (q, k, v, E, F)", worst_grad, TOL_GRAD_CHECK);
    printf("grad check with dE x 1.1: error %.3g (must exceed %.3g)\n", mutated, TOL_GRAD_CHECK);
    CHECK(mutated > TOL_GRAD_CHECK, "a 10%% error in dE must fail the gradient check");
    float x[64] = {0};
    aw_linformer_desc bad = {9, 4, 4, 1, 2, 8, 0.5f};
    CHECK(linformer_forward(x, NULL, x, x, x, x, x, &bad) == AW_ERR_ARG && strstr(aw_error_message(), "maxLen = 8"),
          "n > L names L: %s", aw_error_message());
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
