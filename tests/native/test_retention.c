// Native retention tests: the parallel, recurrent and chunked forms against the naive double
// reference and against each other (chunks that divide n and chunks that do not, n = 1), the
// non-causal form, the decays' schedule, the backward (q, k, v and each head's decay) against
// central differences, a backward with a 10% error that the check must catch, the decoding
// state, and the errors.
#include "../../src/attention/retention.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <math.h>
#include <string.h>

typedef struct {
    size_t n, d, dv, heads, chunk;
    int causal;
} case_t;

static const case_t CASES[] = {
    {1, 4, 4, 1, 0, 1},   {13, 8, 8, 2, 4, 1},   {40, 16, 8, 4, 7, 1}, {64, 8, 8, 2, 16, 1}, {100, 8, 12, 2, 0, 1},
    {130, 8, 8, 1, 64, 1}, {20, 8, 8, 2, 0, 0},  {70, 8, 4, 2, 0, 0},  {1, 4, 4, 1, 0, 0},
};

static double loss(const float *q, const float *k, const float *v, const float *r, const aw_retention_desc *ds,
                   float *out) {
    retention_forward(out, NULL, q, k, v, ds);
    double s = 0.0;
    for (size_t i = 0; i < ds->n * ds->dv; i++) s += (double)out[i] * r[i];
    return s;
}

// The relative error of the backward's gradients (q, k, v, gamma) against central differences;
// `skew` multiplies the analytic dq first (1.1: a 10% error the check must catch).
static double grad_error(const case_t *c, const float *q0, const float *k0, const float *v0, const float *r,
                         float *gamma, float skew) {
    const size_t n = c->n, d = c->d, dv = c->dv, h = c->heads;
    float *q = malloc(n * d * 4), *k = malloc(n * d * 4), *v = malloc(n * dv * 4), *tmp = malloc(n * dv * 4);
    float *dq = calloc(n * d, 4), *dk = calloc(n * d, 4), *dv_ = calloc(n * dv, 4), dg[8] = {0};
    memcpy(q, q0, n * d * 4), memcpy(k, k0, n * d * 4), memcpy(v, v0, n * dv * 4);
    const aw_retention_desc ds = {n, d, dv, h, gamma, c->causal, 1.0f / sqrtf((float)(d / h)), AW_RETENTION_PARALLEL, 0};
    CHECK(retention_backward(dq, dk, dv_, dg, r, q, k, v, &ds) == AW_OK, "backward");
    for (size_t i = 0; i < n * d; i++) dq[i] *= skew;
    float *xs[4] = {q, k, v, gamma}, *gs[4] = {dq, dk, dv_, dg};
    const size_t lens[4] = {n * d, n * d, n * dv, h};
    double worst = 0.0; // the worst tensor's relative error, so a 10% error in one tensor shows
    for (int t = 0; t < 4; t++) {
        double num2 = 0.0, diff2 = 0.0;
        for (size_t i = 0; i < lens[t]; i++) {
            const float keep = xs[t][i], eps = t == 3 ? 1e-3f : 1e-2f;
            xs[t][i] = keep + eps;
            const double lp = loss(q, k, v, r, &ds, tmp);
            xs[t][i] = keep - eps;
            const double num = (lp - loss(q, k, v, r, &ds, tmp)) / (2.0 * eps);
            xs[t][i] = keep;
            num2 += num * num, diff2 += (num - gs[t][i]) * (num - gs[t][i]);
        }
        if (num2 > 1e-12) worst = fmax(worst, sqrt(diff2 / num2));
    }
    free(q), free(k), free(v), free(tmp), free(dq), free(dk), free(dv_);
    return worst;
}

int main(void) {
    double worst_fwd = 0.0, worst_forms = 0.0, worst_grad = 0.0, worst_step = 0.0, mutated = INFINITY;
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const case_t *c = &CASES[ci];
        const size_t n = c->n, d = c->d, dv = c->dv, h = c->heads;
        float *q = malloc(n * d * 4), *k = malloc(n * d * 4), *v = malloc(n * dv * 4), *r = malloc(n * dv * 4);
        float *o_ref = malloc(n * dv * 4), *o = malloc(n * dv * 4), *w1 = malloc(h * n * n * 4), *w2 = malloc(h * n * n * 4);
        float gamma[8];
        fill_uniform(q, n * d, 11 + ci), fill_uniform(k, n * d, 22 + ci), fill_uniform(v, n * dv, 33 + ci);
        fill_uniform(r, n * dv, 44 + ci);
        retention_default_gammas(gamma, h);
        if (ci % 3 == 2) gamma[0] = 0.5f; // a fast decay as well as the schedule's slow ones
        aw_retention_desc ds = {n, d, dv, h, gamma, c->causal, 1.0f / sqrtf((float)(d / h)), AW_RETENTION_PARALLEL, c->chunk};
        CHECK(retention_forward_ref(o_ref, w2, q, k, v, &ds) == AW_OK, "reference");
        CHECK(retention_forward(o, w1, q, k, v, &ds) == AW_OK, "parallel");
        worst_fwd = fmax(worst_fwd, fmax(max_err(o, o_ref, n * dv), max_err(w1, w2, h * n * n)));
        if (c->causal) {
            float *o_par = malloc(n * dv * 4);
            memcpy(o_par, o, n * dv * 4);
            for (int mode = AW_RETENTION_RECURRENT; mode <= AW_RETENTION_CHUNKED; mode++) {
                ds.mode = mode;
                CHECK(retention_forward(o, NULL, q, k, v, &ds) == AW_OK, "mode %d", mode);
                worst_fwd = fmax(worst_fwd, max_err(o, o_ref, n * dv));
                worst_forms = fmax(worst_forms, max_err(o, o_par, n * dv));
            }
            // the decoding state, one step at a time
            float *state = calloc(retention_state_floats(d, dv, h), 4);
            for (size_t i = 0; i < n; i++) {
                CHECK(retention_step(o + i * dv, state, q + i * d, k + i * d, v + i * dv, d, dv, h, gamma, ds.scale) == AW_OK,
                      "step");
            }
            worst_step = fmax(worst_step, max_err(o, o_par, n * dv));
            free(state), free(o_par);
        }
        if (n <= 40) {
            worst_grad = fmax(worst_grad, grad_error(c, q, k, v, r, gamma, 1.0f));
            if (n > 1) mutated = fmin(mutated, grad_error(c, q, k, v, r, gamma, 1.1f));
        }
        free(q), free(k), free(v), free(r), free(o_ref), free(o), free(w1), free(w2);
    }
    REPORT("retention fast (parallel, recurrent, chunked) vs ref (9 cases)", worst_fwd, TOL_ATTENTION);
    REPORT("retention: recurrent and chunked vs parallel, max diff", worst_forms, TOL_LINEAR_CAUSAL_FORMS);
    REPORT("retention: decoding steps vs parallel", worst_step, TOL_LINEAR_CAUSAL_FORMS);
    REPORT("grad check: retention (q, k, v, gamma)", worst_grad, TOL_GRAD_CHECK);
    printf("grad check with dq x 1.1: error %.3g (must exceed %.3g)\n", mutated, TOL_GRAD_CHECK);
    CHECK(mutated > TOL_GRAD_CHECK, "a 10%% error in dq must fail the gradient check");
    float g[4];
    retention_default_gammas(g, 4);
    CHECK(g[0] == 1.0f - 1.0f / 32 && g[1] == 1.0f - 1.0f / 64 && g[3] == 1.0f - 1.0f / 256, "RetNet's schedule");
    float x[16] = {0}, bad_g[1] = {1.5f};
    aw_retention_desc bad = {4, 4, 4, 1, bad_g, 1, 0.5f, 0, 0};
    CHECK(retention_forward(x, NULL, x, x, x, &bad) == AW_ERR_ARG && strstr(aw_error_message(), "gamma[0]"),
          "gamma 1.5 is refused by name: %s", aw_error_message());
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
