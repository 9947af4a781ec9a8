// Native DSA tests (src/attention/dsa.c): the keys each query reads (the weights' nonzeros) are the
// selection's and the saved indices', min(k, t + 1) of them, the same for every head; the backward
// of q, k, v with the sets fixed against central differences (the sets depend on x alone, so moving
// q, k, v cannot change them); the indexer loss' gradient in the warm-up against the differences of
// the loss the forward reports, with a 10% error the check must catch; step against the forward;
// what the forward saves is linear in T.
#include "../../src/attention/dsa.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <string.h>

enum { T = 11, C = 8, H = 2, J = 2, D = 3, K = 4 };

static double out_loss(const float *x, const float *q, const float *k, const float *v, const float *r,
                       const aw_dsa_weights *w, const aw_dsa_desc *ds, float *work, float *out, float *saved) {
    dsa_forward(out, NULL, saved, NULL, work, x, q, k, v, w, ds);
    double s = 0.0;
    for (size_t i = 0; i < T * C; i++) s += (double)out[i] * r[i];
    return s;
}

static double side_loss(const float *x, const float *q, const float *k, const float *v, const aw_dsa_weights *w,
                        const aw_dsa_desc *ds, float *work, float *out, float *saved) {
    double s = 0.0;
    dsa_forward(out, NULL, saved, &s, work, x, q, k, v, w, ds);
    return s;
}

// the worst relative error, over the tensors, of analytic against central differences of step h
static double fd_error(float **xs, float **gs, const size_t *lens, int n, double (*f)(void *), void *ctx, float h) {
    double worst = 0.0;
    for (int t = 0; t < n; t++) {
        double num2 = 0.0, diff2 = 0.0;
        for (size_t i = 0; i < lens[t]; i++) {
            const float keep = xs[t][i];
            xs[t][i] = keep + h;
            const double up = f(ctx);
            xs[t][i] = keep - h;
            const double num = (up - f(ctx)) / (2.0 * h);
            xs[t][i] = keep;
            num2 += num * num, diff2 += (num - gs[t][i]) * (num - gs[t][i]);
        }
        if (num2 > 1e-12) worst = fmax(worst, sqrt(diff2 / num2));
    }
    return worst;
}

typedef struct {
    float *x, *q, *k, *v, *r, *work, *out, *saved;
    aw_dsa_weights w;
    aw_dsa_desc ds;
} ctx_t;
static double f_out(void *p) { ctx_t *c = p; return out_loss(c->x, c->q, c->k, c->v, c->r, &c->w, &c->ds, c->work, c->out, c->saved); }
static double f_side(void *p) { ctx_t *c = p; return side_loss(c->x, c->q, c->k, c->v, &c->w, &c->ds, c->work, c->out, c->saved); }

int main(void) {
    aw_dsa_desc ds = {T, C, H, J, D, K, 1, 0.0f};
    const size_t P = dsa_param_floats(&ds), W = dsa_work_floats(&ds), S = dsa_saved_floats(&ds);
    CHECK(S == T * K, "saved floats %zu, expected T k = %d", S, T * K);
    ds.T = 2 * T;
    CHECK(dsa_saved_floats(&ds) == 2 * S, "saved floats are linear in T");
    ds.T = T;
    float *params = malloc(P * 4), *x = malloc(T * C * 4), *q = malloc(T * C * 4), *k = malloc(T * C * 4), *v = malloc(T * C * 4);
    float *r = malloc(T * C * 4), *out = malloc(T * C * 4), *att = malloc(H * T * T * 4), *sel = malloc(H * T * T * 4);
    float *work = malloc(W * 4), *saved = malloc(S * 4), *dq = calloc(T * C, 4), *dk = calloc(T * C, 4), *dv = calloc(T * C, 4);
    float *grads = calloc(P, 4);
    fill_uniform(params, P, 3), fill_uniform(x, T * C, 4), fill_uniform(q, T * C, 5), fill_uniform(k, T * C, 6);
    fill_uniform(v, T * C, 7), fill_uniform(r, T * C, 8);
    aw_dsa_weights w, g;
    dsa_weights_at(&w, params, &ds), dsa_weights_at(&g, grads, &ds);

    // the keys read: the weights' nonzeros, the selection, the saved indices
    CHECK(dsa_forward(out, att, saved, NULL, work, x, q, k, v, &w, &ds) == AW_OK, "forward");
    CHECK(dsa_selection(sel, work, x, &w, &ds) == AW_OK, "selection");
    int agree = 1;
    for (size_t t = 0; t < T; t++) {
        const size_t want = t + 1 < K ? t + 1 : K;
        for (size_t h = 0; h < H; h++) {
            size_t count = 0, i = 0;
            for (size_t s = 0; s < T; s++) {
                const int read = att[(h * T + t) * T + s] > 0.0f, chosen = sel[(h * T + t) * T + s] == 1.0f;
                agree &= read == chosen && read == (sel[t * T + s] == 1.0f); // every head the same set
                if (read) agree &= (size_t)saved[t * K + i++] == s, count++;
            }
            agree &= count == want;
        }
    }
    CHECK(agree, "the weights' nonzeros, the selection and the saved indices disagree");

    // q, k, v with the sets fixed
    ctx_t c = {x, q, k, v, r, work, out, saved, w, ds};
    CHECK(dsa_backward(dq, dk, dv, NULL, work, r, saved, x, q, k, v, &w, &ds) == AW_OK, "backward");
    float *xs[3] = {q, k, v}, *gs[3] = {dq, dk, dv};
    const size_t lens[3] = {T * C, T * C, T * C};
    REPORT("dsa sparse: dq, dk, dv vs central differences", fd_error(xs, gs, lens, 3, f_out, &c, 1e-2f), 2e-3);

    // the warm-up's indexer loss: its gradient against the differences of the value forward reports
    ds.sparse = 0, ds.side_weight = 1.0f, c.ds = ds;
    memset(dq, 0, T * C * 4), memset(dk, 0, T * C * 4), memset(dv, 0, T * C * 4);
    dsa_forward(out, NULL, saved, NULL, work, x, q, k, v, &w, &ds);
    CHECK(dsa_backward(dq, dk, dv, &g, work, r, saved, x, q, k, v, &w, &ds) == AW_OK, "backward with the side loss");
    float *ws[3] = {w.w_qi, w.w_ki, w.w_w}, *wg[3] = {g.w_qi, g.w_ki, g.w_w};
    const size_t wl[3] = {J * D * C, D * C, J * C};
    // a smaller step: the indexer's ReLUs have kinks a step of 1e-2 can cross
    REPORT("dsa warm-up: the indexer loss' gradient vs differences", fd_error(ws, wg, wl, 3, f_side, &c, 1e-3f), 2e-3);
    for (size_t i = 0; i < D * C; i++) g.w_ki[i] *= 1.1f;
    CHECK(fd_error(ws, wg, wl, 3, f_side, &c, 1e-3f) > 2e-3, "a 10%% error in w_ki's gradient is caught");

    // step against the forward, both stages
    for (int sparse = 0; sparse < 2; sparse++) {
        ds.sparse = sparse, ds.side_weight = 0.0f;
        float *state = malloc(dsa_step_floats(&ds, T) * 4), *steps = malloc(T * C * 4);
        dsa_forward(out, NULL, NULL, NULL, work, x, q, k, v, &w, &ds);
        for (size_t t = 0; t < T; t++) dsa_step(steps + t * C, state, T, x + t * C, q + t * C, k + t * C, v + t * C, &w, &ds, t);
        REPORT(sparse ? "dsa sparse: step vs forward" : "dsa warm-up: step vs forward", max_err(steps, out, T * C), 0.0);
        CHECK(dsa_step(steps, state, T, x, q, k, v, &w, &ds, T) == AW_ERR_ARG, "a step past the cache is an error");
        free(state), free(steps);
    }
    free(params), free(x), free(q), free(k), free(v), free(r), free(out), free(att), free(sel), free(work), free(saved);
    free(dq), free(dk), free(dv), free(grads);
    return test_failures != 0;
}
