// Native local (sliding-window) attention tests: the fast path against the naive double
// reference (causal and centred, heads, m != n, windows from 1 to beyond n), and the backward
// against central differences of a random projection of the output.
#include "../../src/attention/local_attention.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <math.h>
#include <string.h>

typedef struct {
    size_t n, m, d, dv, heads, window;
    int causal;
    size_t stride;
} case_t;

static const case_t CASES[] = {
    {1, 1, 4, 4, 1, 1, 1, 0},  {13, 13, 8, 8, 2, 4, 1, 0},   {13, 13, 8, 8, 2, 4, 0, 0},   {30, 30, 16, 8, 4, 1, 1, 0},
    {9, 20, 8, 8, 1, 5, 1, 0}, {20, 9, 8, 12, 2, 6, 0, 0}, {40, 40, 8, 8, 1, 100, 1, 0}, {40, 40, 8, 8, 1, 100, 0, 0},
    {30, 30, 8, 8, 2, 3, 1, 4}, {30, 30, 8, 8, 2, 3, 0, 5}, {25, 40, 8, 4, 1, 2, 0, 3}, {1, 1, 4, 4, 1, 1, 1, 1},
};

// L = sum(out * r) for a fixed random r: its gradient through the backward is dout = r.
static double loss(const float *q, const float *k, const float *v, const float *r, const aw_local_attention_desc *ds,
                   float *out) {
    local_attention_forward(out, NULL, q, k, v, ds);
    double s = 0.0;
    for (size_t i = 0; i < ds->n * ds->dv; i++) s += (double)out[i] * r[i];
    return s;
}

int main(void) {
    double worst_fwd = 0.0, worst_grad = 0.0;
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const case_t *c = &CASES[ci];
        const size_t n = c->n, m = c->m, d = c->d, dv = c->dv, h = c->heads;
        float *q = malloc(n * d * 4), *k = malloc(m * d * 4), *v = malloc(m * dv * 4), *r = malloc(n * dv * 4);
        float *o1 = malloc(n * dv * 4), *o2 = malloc(n * dv * 4), *w1 = malloc(h * n * m * 4), *w2 = malloc(h * n * m * 4);
        float *dq = calloc(n * d, 4), *dk = calloc(m * d, 4), *dv_ = calloc(m * dv, 4), *tmp = malloc(n * dv * 4);
        fill_uniform(q, n * d, 11 + ci), fill_uniform(k, m * d, 22 + ci), fill_uniform(v, m * dv, 33 + ci);
        fill_uniform(r, n * dv, 44 + ci);
        const aw_local_attention_desc ds = {n, m, d, dv, h, c->window, c->causal, 1.0f / sqrtf((float)(d / h)), c->stride, 0};
        CHECK(local_attention_forward(o1, w1, q, k, v, &ds) == AW_OK, "forward");
        CHECK(local_attention_forward_ref(o2, w2, q, k, v, &ds) == AW_OK, "reference");
        worst_fwd = fmax(worst_fwd, fmax(max_err(o1, o2, n * dv), max_err(w1, w2, h * n * m)));
        CHECK(local_attention_backward(dq, dk, dv_, r, q, k, v, &ds) == AW_OK, "backward");
        // central differences, step 1e-2, over every entry of q, k and v
        float *xs[3] = {q, k, v}, *gs[3] = {dq, dk, dv_};
        const size_t lens[3] = {n * d, m * d, m * dv};
        double num2 = 0.0, diff2 = 0.0;
        for (int t = 0; t < 3; t++)
            for (size_t i = 0; i < lens[t]; i++) {
                const float keep = xs[t][i];
                xs[t][i] = keep + 1e-2f;
                const double lp = loss(q, k, v, r, &ds, tmp);
                xs[t][i] = keep - 1e-2f;
                const double num = (lp - loss(q, k, v, r, &ds, tmp)) / 2e-2;
                xs[t][i] = keep;
                num2 += num * num, diff2 += (num - gs[t][i]) * (num - gs[t][i]);
            }
        worst_grad = fmax(worst_grad, sqrt(diff2) / fmax(sqrt(num2), 1e-12));
        free(q), free(k), free(v), free(r), free(o1), free(o2), free(w1), free(w2), free(dq), free(dk), free(dv_), free(tmp);
    }
    REPORT("local and strided attention fast vs ref (12 cases: causal, centred, heads, m != n)", worst_fwd, TOL_ATTENTION);
    REPORT("grad check: local and strided attention (q, k, v)", worst_grad, TOL_GRAD_CHECK);
    aw_local_attention_desc bad = {4, 4, 4, 4, 1, 0, 1, 0.5f, 0, 0};
    float x[16] = {0};
    CHECK(local_attention_forward(x, NULL, x, x, x, &bad) == AW_ERR_ARG && strstr(aw_error_message(), "window"),
          "window 0 is refused with a message");
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
