// test_synthesizer.c: the Synthesizer layers natively (no JS): fast forward against the naive
// double reference, central finite differences against the backward for every variant (and the
// mixture with every component), init determinism, and the error statuses.
//
// Gradient check: loss = sum(out * G) for a fixed random G, so dL/dout = G. For every parameter
// and every input entry t: num = (loss(t + eps) - loss(t - eps)) / (2 eps), eps = 1e-3, forward in
// double (synthesizer_forward_ref, float32 outputs), loss summed in double. Error per tensor:
// max |num - ana| / max(1e-2, max |ana|), bound TOL_SYNTHESIZER_GRAD_FD (the analytic gradients come
// from the float32 fast forward and backward; the rest is O(eps^2) truncation and output rounding).
#include "../../src/attention/synthesizer.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <string.h>

enum { D = 6, L = 12, A = 3, B = 4, K = 3, H = 2, N = 10, DV = 6, DQK = 8 };

static const char *const NAMES[] = {"dense", "random", "factorized-dense", "factorized-random", "mixture"};

static aw_synthesizer_config config(int variant, uint32_t seed) {
    aw_synthesizer_config c = {variant, D, L, H, seed, 1, A, B, K, 0, {0}};
    if (variant == AW_SYNTH_MIXTURE) {
        int all[] = {AW_SYNTH_DENSE, AW_SYNTH_RANDOM, AW_SYNTH_FACTORIZED_DENSE, AW_SYNTH_FACTORIZED_RANDOM, AW_SYNTH_DOT};
        c.n_components = 5;
        memcpy(c.components, all, sizeof all);
    }
    return c;
}

// Inputs shared by a test: x (N, D), v (N, DV), q, k (N, DQK), G (N, DV).
static float X[N * D], V[N * DV], Q[N * DQK], KK[N * DQK], G[N * DV];

static double loss(aw_synthesizer *s, int causal, int *status) {
    float out[N * DV];
    // the double reference: its outputs are rounded once, so the loss is smooth to ~1e-7
    *status = synthesizer_forward_ref(s, out, NULL, X, V, Q, KK, N, DV, DQK, causal);
    double l = 0.0;
    for (size_t i = 0; i < N * DV; i++) l += (double)out[i] * G[i];
    return l;
}

// Central differences over x[0 .. count) against ana; returns the normalised max error.
static double fd_check(aw_synthesizer *s, int causal, float *x, const float *ana, size_t count) {
    const float eps = 1e-3f;
    double worst = 0.0, scale = 1e-2;
    for (size_t i = 0; i < count; i++) scale = fabs(ana[i]) > scale ? fabs(ana[i]) : scale;
    for (size_t i = 0; i < count; i++) {
        const float keep = x[i];
        int st1, st2;
        x[i] = keep + eps;
        const double lp = loss(s, causal, &st1);
        x[i] = keep - eps;
        const double lm = loss(s, causal, &st2);
        x[i] = keep;
        CHECK(st1 == AW_OK && st2 == AW_OK, "forward failed in finite differences");
        const double num = (lp - lm) / (2.0 * eps), e = fabs(num - ana[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static void test_variant(int variant, int causal) {
    aw_synthesizer *s = NULL;
    aw_synthesizer_config cfg = config(variant, 7);
    CHECK(synthesizer_create(&s, &cfg) == AW_OK && s, "create %s", NAMES[variant]);
    if (!s) return;
    // move biases and mixing logits off their zero init so their gradients matter
    for (size_t t = 0; t < s->n_tensors; t++) {
        const aw_synth_tensor *ts = &s->tensors[t];
        const char *base = strrchr(ts->name, '.') ? strrchr(ts->name, '.') + 1 : ts->name;
        if (base[0] == 'b' || strcmp(base, "alphaLogits") == 0)
            fill_uniform(s->params + ts->offset, ts->size, 100 + (uint32_t)t);
    }
    char label[96];

    // fast forward vs naive reference
    float out[N * DV], out_ref[N * DV], w[H * N * N], w_ref[H * N * N];
    CHECK(synthesizer_forward(s, out, w, X, V, Q, KK, N, DV, DQK, causal) == AW_OK, "forward");
    CHECK(synthesizer_forward_ref(s, out_ref, w_ref, X, V, Q, KK, N, DV, DQK, causal) == AW_OK, "forward_ref");
    snprintf(label, sizeof label, "%s%s fast vs ref: output", NAMES[variant], causal ? " causal" : "");
    REPORT(label, max_err(out, out_ref, N * DV), TOL_SYNTHESIZER);
    snprintf(label, sizeof label, "%s%s fast vs ref: weights", NAMES[variant], causal ? " causal" : "");
    REPORT(label, max_err(w, w_ref, H * N * N), TOL_SYNTHESIZER);
    for (size_t hd = 0; hd < H; hd++)
        for (size_t i = 0; i < N; i++) {
            double sum = 0.0;
            for (size_t j = 0; j < N; j++) {
                sum += w[hd * N * N + i * N + j];
                if (causal && j > i) CHECK(w[hd * N * N + i * N + j] == 0.0f, "causal weight above diagonal");
            }
            CHECK(fabs(sum - 1.0) < 1e-5, "weights row %zu sums to %g", i, sum);
        }

    // analytic gradients
    float dx[N * D] = {0}, dv[N * DV] = {0}, dq[N * DQK] = {0}, dk[N * DQK] = {0};
    synthesizer_zero_grad(s);
    CHECK(synthesizer_forward(s, out, NULL, X, V, Q, KK, N, DV, DQK, causal) == AW_OK, "forward");
    CHECK(synthesizer_backward(s, dx, dv, dq, dk, G, X, V, Q, KK) == AW_OK, "backward");
    float *grads = malloc(s->n_params * sizeof(float));
    memcpy(grads, s->grads, s->n_params * sizeof(float));
    for (size_t t = 0; t < s->n_tensors; t++) {
        const aw_synth_tensor *ts = &s->tensors[t];
        snprintf(label, sizeof label, "%s%s grad %s", NAMES[variant], causal ? " causal" : "", ts->name);
        REPORT(label, fd_check(s, causal, s->params + ts->offset, grads + ts->offset, ts->size), TOL_SYNTHESIZER_GRAD_FD);
    }
    int uses_x = variant == AW_SYNTH_DENSE || variant == AW_SYNTH_FACTORIZED_DENSE || variant == AW_SYNTH_MIXTURE;
    if (uses_x) {
        snprintf(label, sizeof label, "%s%s grad x", NAMES[variant], causal ? " causal" : "");
        REPORT(label, fd_check(s, causal, X, dx, N * D), TOL_SYNTHESIZER_GRAD_FD);
    } else {
        float zero[N * D] = {0};
        CHECK(memcmp(dx, zero, sizeof zero) == 0, "%s: dx must stay untouched", NAMES[variant]);
    }
    snprintf(label, sizeof label, "%s%s grad v", NAMES[variant], causal ? " causal" : "");
    REPORT(label, fd_check(s, causal, V, dv, N * DV), TOL_SYNTHESIZER_GRAD_FD);
    if (variant == AW_SYNTH_MIXTURE) {
        snprintf(label, sizeof label, "%s%s grad q", NAMES[variant], causal ? " causal" : "");
        REPORT(label, fd_check(s, causal, Q, dq, N * DQK), TOL_SYNTHESIZER_GRAD_FD);
        snprintf(label, sizeof label, "%s%s grad k", NAMES[variant], causal ? " causal" : "");
        REPORT(label, fd_check(s, causal, KK, dk, N * DQK), TOL_SYNTHESIZER_GRAD_FD);
    }

    // backward accumulates: a second call doubles every gradient
    synthesizer_zero_grad(s);
    CHECK(synthesizer_forward(s, out, NULL, X, V, Q, KK, N, DV, DQK, causal) == AW_OK, "forward");
    CHECK(synthesizer_backward(s, NULL, NULL, NULL, NULL, G, X, V, Q, KK) == AW_OK, "backward 1");
    CHECK(synthesizer_backward(s, NULL, NULL, NULL, NULL, G, X, V, Q, KK) == AW_OK, "backward 2");
    double acc_err = 0.0;
    for (size_t i = 0; i < s->n_params; i++) {
        double e = fabs(s->grads[i] - 2.0 * grads[i]) / (1.0 + fabs(2.0 * grads[i]));
        if (!(e <= acc_err)) acc_err = e;
    }
    snprintf(label, sizeof label, "%s%s backward accumulates (+=)", NAMES[variant], causal ? " causal" : "");
    REPORT(label, acc_err, TOL_SYNTHESIZER);
    free(grads);
    synthesizer_destroy(s);
}

static void test_fixed_random(void) {
    for (int variant = AW_SYNTH_RANDOM; variant <= AW_SYNTH_FACTORIZED_RANDOM; variant += 2) {
        aw_synthesizer_config cfg = config(variant, 3);
        cfg.trainable = 0;
        aw_synthesizer *s = NULL;
        CHECK(synthesizer_create(&s, &cfg) == AW_OK, "create fixed");
        float out[N * DV], dv[N * DV] = {0};
        CHECK(synthesizer_forward(s, out, NULL, X, V, NULL, NULL, N, DV, 0, 0) == AW_OK, "forward fixed");
        CHECK(synthesizer_backward(s, NULL, dv, NULL, NULL, G, X, V, NULL, NULL) == AW_OK, "backward fixed");
        int zero = 1, dv_nonzero = 0;
        for (size_t i = 0; i < s->n_params; i++) zero &= s->grads[i] == 0.0f;
        for (size_t i = 0; i < N * DV; i++) dv_nonzero |= dv[i] != 0.0f;
        CHECK(zero, "%s with trainable = 0 must leave grads at 0", NAMES[variant]);
        CHECK(dv_nonzero, "%s with trainable = 0 still gives dv", NAMES[variant]);
        synthesizer_destroy(s);
    }
}

static void test_init_and_errors(void) {
    aw_synthesizer *s1 = NULL, *s2 = NULL, *s3 = NULL;
    aw_synthesizer_config c = config(AW_SYNTH_MIXTURE, 42);
    CHECK(synthesizer_create(&s1, &c) == AW_OK, "create");
    CHECK(synthesizer_create(&s2, &c) == AW_OK, "create");
    c.seed = 43;
    CHECK(synthesizer_create(&s3, &c) == AW_OK, "create");
    CHECK(memcmp(s1->params, s2->params, s1->n_params * sizeof(float)) == 0, "same seed, same params");
    CHECK(memcmp(s1->params, s3->params, s1->n_params * sizeof(float)) != 0, "other seed, other params");
    // Xavier bound on dense.W1 and U(-1, 1) on random.R, and a spread that fills them
    int iw = synthesizer_tensor_index(s1, "dense.W1"), ir = synthesizer_tensor_index(s1, "random.R");
    CHECK(iw >= 0 && ir >= 0, "tensor names");
    float bound = sqrtf(6.0f / (2 * D)), mx = 0.0f;
    for (size_t i = 0; i < s1->tensors[iw].size; i++) mx = fmaxf(mx, fabsf(s1->params[s1->tensors[iw].offset + i]));
    CHECK(mx <= bound && mx > 0.5f * bound, "dense.W1 max |w| %g vs Xavier bound %g", mx, bound);
    mx = 0.0f;
    for (size_t i = 0; i < s1->tensors[ir].size; i++) mx = fmaxf(mx, fabsf(s1->params[s1->tensors[ir].offset + i]));
    CHECK(mx <= 1.0f && mx > 0.9f, "random.R max |r| %g", mx);
    // the dense component starts with the same numbers alone as inside the mixture
    aw_synthesizer *sd = NULL;
    aw_synthesizer_config cd = config(AW_SYNTH_DENSE, 42);
    CHECK(synthesizer_create(&sd, &cd) == AW_OK, "create dense");
    CHECK(memcmp(sd->params, s1->params + s1->tensors[iw].offset, sd->tensors[0].size * sizeof(float)) == 0,
          "dense.W1 in a mixture equals W1 of a dense layer with the same seed");
    float alphas[H * 5];
    CHECK(synthesizer_alphas(s1, alphas) == AW_OK && fabsf(alphas[0] - 0.2f) < 1e-7f, "alphas start uniform");
    CHECK(synthesizer_alphas(sd, alphas) == AW_ERR_STATE, "alphas of a plain variant");

    float out[L * DV * 2] = {0}, big_v[(L + 1) * DV] = {0}, big_x[(L + 1) * D] = {0};
    CHECK(synthesizer_forward(sd, out, NULL, big_x, big_v, NULL, NULL, L + 1, DV, 0, 0) == AW_ERR_ARG, "n > max_len");
    CHECK(synthesizer_forward(sd, out, NULL, NULL, V, NULL, NULL, N, DV, 0, 0) == AW_ERR_ARG, "dense without x");
    CHECK(synthesizer_forward(sd, out, NULL, X, V, NULL, NULL, N, 5, 0, 0) == AW_ERR_ARG, "dv not divisible by heads");
    CHECK(synthesizer_backward(sd, NULL, NULL, NULL, NULL, G, X, V, NULL, NULL) == AW_ERR_STATE, "backward first");
    CHECK(synthesizer_forward(s1, out, NULL, X, V, NULL, NULL, N, DV, DQK, 0) == AW_ERR_ARG, "dot without q, k");
    sd->params[0] = NAN;
    CHECK(synthesizer_forward(sd, out, NULL, X, V, NULL, NULL, N, DV, 0, 0) == AW_ERR_NONFINITE, "NaN parameter");
    CHECK(synthesizer_forward_ref(sd, out, NULL, X, V, NULL, NULL, N, DV, 0, 0) == AW_ERR_NONFINITE, "NaN parameter (ref)");

    aw_synthesizer *bad = (aw_synthesizer *)1;
    aw_synthesizer_config cb = config(AW_SYNTH_FACTORIZED_DENSE, 0);
    cb.a = 5;
    CHECK(synthesizer_create(&bad, &cb) == AW_ERR_ARG && bad == NULL, "a * b != max_len");
    cb = config(AW_SYNTH_DOT, 0);
    CHECK(synthesizer_create(&bad, &cb) == AW_ERR_ARG, "dot alone is not a variant");
    cb = config(AW_SYNTH_MIXTURE, 0);
    cb.components[1] = AW_SYNTH_DENSE;
    CHECK(synthesizer_create(&bad, &cb) == AW_ERR_ARG, "duplicate component");
    cb = config(AW_SYNTH_FACTORIZED_RANDOM, 0);
    cb.k = 0;
    CHECK(synthesizer_create(&bad, &cb) == AW_ERR_ARG, "k = 0");
    cb = config(AW_SYNTH_RANDOM, 0);
    cb.max_len = (size_t)1 << 31;
    CHECK(synthesizer_create(&bad, &cb) == AW_ERR_NOMEM, "overflowing size"); // 2 L^2 > SIZE_MAX / 2
    synthesizer_destroy(s1), synthesizer_destroy(s2), synthesizer_destroy(s3), synthesizer_destroy(sd);
}

int main(void) {
    fill_uniform(X, N * D, 11);
    fill_uniform(V, N * DV, 12);
    fill_uniform(Q, N * DQK, 13);
    fill_uniform(KK, N * DQK, 14);
    fill_uniform(G, N * DV, 15);
    for (int variant = AW_SYNTH_DENSE; variant <= AW_SYNTH_MIXTURE; variant++)
        for (int causal = 0; causal <= 1; causal++) test_variant(variant, causal);
    test_fixed_random();
    test_init_and_errors();
    printf("%s (%d failures)\n", test_failures ? "FAILED" : "ok", test_failures);
    return test_failures != 0;
}
