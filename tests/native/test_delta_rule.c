// Native delta-rule tests, under ASan + UBSan: DeltaNet, Gated DeltaNet (a decay per head) and
// KDA (a decay per key channel) by the recurrence and the chunked WY form against a double
// recurrence written from the equation S_t = (I - b k^^T k^) diag(alpha_t) S_{t-1} + b k^^T v_t
// (chunks 1 ... 64, dividing n and not, n = 1); the implied weights (O = A V); generation step by
// step; the backward (q, k, v, beta and the gates) against central differences, and a 10% error
// in each gradient that the check must catch.
#include "../../src/attention/delta_rule.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <math.h>
#include <string.h>

typedef struct {
    size_t n, d, dv, heads;
    int gates; // 0: none (DeltaNet), 1: per head (Gated DeltaNet), 2: per key channel (KDA)
    float glo, ghi;
} case_t;

static const case_t CASES[] = {
    {1, 4, 4, 1, 2, 0.5f, 1.0f},    {13, 8, 8, 2, 2, 0.3f, 0.95f}, {40, 16, 8, 4, 2, 1e-6f, 1e-3f},
    {70, 12, 12, 3, 2, 0.99f, 1.0f}, {37, 8, 16, 2, 1, 0.5f, 1.0f}, {29, 8, 8, 2, 0, 1.0f, 1.0f},
};

static size_t gate_len(const case_t *c) { return c->gates == 2 ? c->n * c->d : c->gates ? c->n * c->heads : 0; }

static float gate_of(const case_t *c, const float *a, size_t t, size_t hd, size_t r) {
    if (c->gates == 2) return a[t * c->d + hd * (c->d / c->heads) + r];
    return c->gates ? a[t * c->heads + hd] : 1.0f;
}

// The recurrence in double, from the equation (decay first, then the delta-rule write).
static void reference(double *out, const case_t *c, const float *q, const float *k, const float *v, const float *beta,
                      const float *a) {
    const size_t n = c->n, d = c->d, dv = c->dv, h = c->heads, dh = d / h, dvh = dv / h;
    double *S = calloc(dh * dvh, sizeof(double)), kh[64], u[64];
    for (size_t hd = 0; hd < h; hd++) {
        memset(S, 0, dh * dvh * sizeof(double));
        for (size_t t = 0; t < n; t++) {
            double s = 1e-6;
            for (size_t r = 0; r < dh; r++) s += (double)k[t * d + hd * dh + r] * k[t * d + hd * dh + r];
            for (size_t r = 0; r < dh; r++) kh[r] = k[t * d + hd * dh + r] / sqrt(s);
            for (size_t r = 0; r < dh; r++)
                for (size_t col = 0; col < dvh; col++) S[r * dvh + col] *= gate_of(c, a, t, hd, r);
            for (size_t col = 0; col < dvh; col++) {
                u[col] = 0.0;
                for (size_t r = 0; r < dh; r++) u[col] += kh[r] * S[r * dvh + col];
            }
            const double b = beta[t * h + hd];
            for (size_t r = 0; r < dh; r++)
                for (size_t col = 0; col < dvh; col++) S[r * dvh + col] += b * kh[r] * (v[t * dv + hd * dvh + col] - u[col]);
            for (size_t col = 0; col < dvh; col++) {
                double o = 0.0;
                for (size_t r = 0; r < dh; r++) o += (double)q[t * d + hd * dh + r] * S[r * dvh + col];
                out[t * dv + hd * dvh + col] = o / sqrt((double)dh);
            }
        }
    }
    free(S);
}

static aw_delta_desc desc_of(const case_t *c, int mode, size_t chunk) {
    return (aw_delta_desc){c->n, c->d, c->dv, c->heads, 1.0f / sqrtf((float)(c->d / c->heads)), mode, chunk, c->gates == 2};
}

static double loss(const case_t *c, const float *q, const float *k, const float *v, const float *beta, const float *a,
                   const float *r, float *out) {
    const aw_delta_desc ds = desc_of(c, AW_DELTA_RECURRENT, 1);
    delta_rule_forward(out, NULL, q, k, v, beta, c->gates ? a : NULL, &ds);
    double s = 0.0;
    for (size_t i = 0; i < c->n * c->dv; i++) s += (double)out[i] * r[i];
    return s;
}

// The worst tensor's relative error of the backward (q, k, v, beta, gates) against central
// differences; `skew` multiplies the analytic gradient of tensor `which` first (1.1: a 10% error).
static double grad_error(const case_t *c, const float *q0, const float *k0, const float *v0, const float *b0,
                         const float *a0, const float *r, int which, float skew) {
    const size_t n = c->n, d = c->d, dv = c->dv, h = c->heads, na = gate_len(c);
    float *q = malloc(n * d * 4), *k = malloc(n * d * 4), *v = malloc(n * dv * 4), *b = malloc(n * h * 4);
    float *a = malloc((na ? na : 1) * 4), *tmp = malloc(n * dv * 4);
    float *dq = calloc(n * d, 4), *dk = calloc(n * d, 4), *dvv = calloc(n * dv, 4), *db = calloc(n * h, 4);
    float *da = calloc(na ? na : 1, 4);
    memcpy(q, q0, n * d * 4), memcpy(k, k0, n * d * 4), memcpy(v, v0, n * dv * 4), memcpy(b, b0, n * h * 4);
    if (na) memcpy(a, a0, na * 4);
    const aw_delta_desc ds = desc_of(c, AW_DELTA_RECURRENT, 1);
    float *work = malloc(delta_rule_work_floats(&ds) * 4);
    CHECK(delta_rule_backward(dq, dk, dvv, db, da, work, r, q, k, v, b, c->gates ? a : NULL, &ds) == AW_OK, "backward");
    float *xs[5] = {q, k, v, b, a}, *gs[5] = {dq, dk, dvv, db, da};
    const size_t lens[5] = {n * d, n * d, n * dv, n * h, na};
    for (size_t i = 0; i < lens[which]; i++) gs[which][i] *= skew;
    double worst = 0.0;
    for (int t = 0; t < 5; t++) {
        double num2 = 0.0, diff2 = 0.0;
        for (size_t i = 0; i < lens[t]; i++) {
            const float keep = xs[t][i], eps = t >= 3 ? 1e-3f : 1e-2f;
            xs[t][i] = keep + eps;
            const double lp = loss(c, q, k, v, b, a, r, tmp);
            xs[t][i] = keep - eps;
            const double num = (lp - loss(c, q, k, v, b, a, r, tmp)) / (2.0 * eps);
            xs[t][i] = keep;
            num2 += num * num, diff2 += (num - gs[t][i]) * (num - gs[t][i]);
        }
        if (num2 > 1e-12) worst = fmax(worst, sqrt(diff2 / num2));
    }
    free(q), free(k), free(v), free(b), free(a), free(tmp), free(dq), free(dk), free(dvv), free(db), free(da), free(work);
    return worst;
}

int main(void) {
    double worst_fwd = 0.0, worst_w = 0.0, worst_step = 0.0, worst_grad = 0.0, mutated = INFINITY;
    static const size_t CHUNKS[] = {1, 3, 7, 16, 64};
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const case_t *c = &CASES[ci];
        const size_t n = c->n, d = c->d, dv = c->dv, h = c->heads, dh = d / h, dvh = dv / h, na = gate_len(c);
        float *q = malloc(n * d * 4), *k = malloc(n * d * 4), *v = malloc(n * dv * 4), *r = malloc(n * dv * 4);
        float *beta = malloc(n * h * 4), *a = malloc((na ? na : 1) * 4), *o = malloc(n * dv * 4);
        float *w = malloc(h * n * n * 4), *ref32 = malloc(n * dv * 4);
        double *ref = malloc(n * dv * sizeof(double));
        fill_uniform(q, n * d, 11 + ci), fill_uniform(k, n * d, 22 + ci), fill_uniform(v, n * dv, 33 + ci);
        fill_uniform(r, n * dv, 44 + ci), fill_uniform(beta, n * h, 55 + ci);
        if (na) fill_uniform(a, na, 66 + ci);
        for (size_t i = 0; i < n * h; i++) beta[i] = 0.1f + 0.4f * (beta[i] + 1.0f); // (0.1, 0.9)
        for (size_t i = 0; i < na; i++) a[i] = c->glo + (c->ghi - c->glo) * 0.5f * (a[i] + 1.0f);
        reference(ref, c, q, k, v, beta, a);
        for (size_t i = 0; i < n * dv; i++) ref32[i] = (float)ref[i];
        aw_delta_desc ds = desc_of(c, AW_DELTA_RECURRENT, 1);
        CHECK(delta_rule_forward(o, w, q, k, v, beta, c->gates ? a : NULL, &ds) == AW_OK, "recurrent");
        worst_fwd = fmax(worst_fwd, max_err(o, ref32, n * dv));
        // O = A V per head from the implied weights
        for (size_t hd = 0; hd < h; hd++)
            for (size_t t = 0; t < n; t++)
                for (size_t col = 0; col < dvh; col++) {
                    double s = 0.0;
                    for (size_t j = 0; j < n; j++) s += (double)w[(hd * n + t) * n + j] * v[j * dv + hd * dvh + col];
                    worst_w = fmax(worst_w, fabs(s - ref[t * dv + hd * dvh + col]) / (1.0 + fabs(ref[t * dv + hd * dvh + col])));
                }
        for (size_t m = 0; m < sizeof CHUNKS / sizeof CHUNKS[0]; m++) {
            ds = desc_of(c, AW_DELTA_CHUNKED, CHUNKS[m]);
            CHECK(delta_rule_forward(o, m == 2 ? w : NULL, q, k, v, beta, c->gates ? a : NULL, &ds) == AW_OK, "chunk %zu",
                  CHUNKS[m]);
            worst_fwd = fmax(worst_fwd, max_err(o, ref32, n * dv));
        }
        float *state = calloc(delta_rule_state_floats(d, dv, h), 4);
        for (size_t t = 0; t < n; t++)
            delta_rule_step(o + t * dv, state, q + t * d, k + t * d, v + t * dv, beta + t * h,
                            c->gates == 2 ? a + t * d : c->gates ? a + t * h : NULL, c->gates == 2, d, dv, h,
                            1.0f / sqrtf((float)dh));
        worst_step = fmax(worst_step, max_err(o, ref32, n * dv));
        free(state);
        if (n <= 40) {
            worst_grad = fmax(worst_grad, grad_error(c, q, k, v, beta, a, r, 0, 1.0f));
            if (n > 1)
                for (int t = 0; t < (c->gates ? 5 : 4); t++) mutated = fmin(mutated, grad_error(c, q, k, v, beta, a, r, t, 1.1f));
        }
        free(q), free(k), free(v), free(r), free(beta), free(a), free(o), free(w), free(ref32), free(ref);
    }
    REPORT("delta rule (none / head / channel gates): recurrent, chunks 1-64 vs double", worst_fwd, TOL_DELTA_RULE);
    REPORT("delta rule: A V vs double", worst_w, TOL_DELTA_RULE);
    REPORT("delta rule: generation steps vs double", worst_step, TOL_DELTA_RULE);
    REPORT("grad check: delta rule (q, k, v, beta, gates)", worst_grad, TOL_GRAD_CHECK);
    printf("grad check with one tensor's gradient x 1.1: smallest error %.3g (must exceed %.3g)\n", mutated, TOL_GRAD_CHECK);
    CHECK(mutated > TOL_GRAD_CHECK, "a 10%% error in any gradient must fail the gradient check");
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
