// Native softmax attention tests: streaming and weights paths against the naive reference,
// with heads, masks, cross-attention and extreme logits.
#include "../../src/attention/softmax_attention.h"
#include "../../src/attention/softmax_attention_backward.h"
#include "../../src/kernels/simd.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <string.h>

typedef struct { size_t n, m, d, dv, heads; int causal, masked; float logit_gain; int alibi; } case_t;

static const float SLOPES[4] = {0.5f, 0.25f, 0.125f, 0.0625f}; // ALiBi's 2^(-8h/H) for H = 4

static void run_case(const case_t *c, int idx) {
    size_t n = c->n, m = c->m, d = c->d, dv = c->dv, h = c->heads;
    float *q = malloc(n * d * 4), *k = malloc(m * d * 4), *v = malloc(m * dv * 4);
    float *o1 = malloc(n * dv * 4), *o2 = malloc(n * dv * 4), *o3 = malloc(n * dv * 4);
    float *w2 = malloc(h * n * m * 4), *w3 = malloc(h * n * m * 4);
    uint8_t *mask = malloc(m);
    fill_uniform(q, n * d, 1 + idx), fill_uniform(k, m * d, 2 + idx), fill_uniform(v, m * dv, 3 + idx);
    for (size_t i = 0; i < n * d; i++) q[i] *= c->logit_gain;
    for (size_t j = 0; j < m; j++) mask[j] = (j % 4) != 2;
    aw_softmax_attention_desc ds = {n, m, d, dv, h, c->causal, 1.0f / sqrtf((float)(d / h)), c->masked ? mask : NULL,
                                    c->alibi ? SLOPES : NULL, c->alibi > 1 ? (size_t)c->alibi : 0, 0, 0.0f, NULL, NULL};
    CHECK(softmax_attention_forward_streaming(o1, q, k, v, &ds) == AW_OK, "streaming status");
    CHECK(softmax_attention_forward_weights(o2, w2, q, k, v, &ds) == AW_OK, "weights status");
    CHECK(softmax_attention_forward_ref(o3, w3, q, k, v, &ds) == AW_OK, "ref status");
    char label[128];
    snprintf(label, sizeof label, "n%zu m%zu d%zu dv%zu h%zu c%d mask%d gain%g%s streaming", n, m, d, dv, h, c->causal,
             c->masked, c->logit_gain, c->alibi ? " alibi" : "");
    REPORT(label, max_err(o1, o3, n * dv), TOL_ATTENTION);
    snprintf(label, sizeof label, "  ... weights path output / weights");
    REPORT(label, fmax(max_err(o2, o3, n * dv), max_err(w2, w3, h * n * m)), TOL_ATTENTION);
    free(q), free(k), free(v), free(o1), free(o2), free(o3), free(w2), free(w3), free(mask);
}

// 2025's switches (window, softcap, sinks; docs/attention-forms.md section 1b): the streaming and
// weights forwards and the flash backward (with the sinks' gradient) against the double references.
typedef struct { size_t n, d, h, window; float softcap; int sinks, alibi; } switch_case;

static void run_switch_case(const switch_case *c, int idx) {
    const size_t n = c->n, d = c->d, h = c->h;
    float *q = malloc(n * d * 4), *k = malloc(n * d * 4), *v = malloc(n * d * 4), *g = malloc(n * d * 4);
    float *o1 = malloc(n * d * 4), *o2 = malloc(n * d * 4), *o3 = malloc(n * d * 4), *w2 = malloc(h * n * n * 4);
    float *lse = malloc(h * n * 4), *work = malloc(softmax_attention_backward_flash_floats() * 4);
    float *grads[2][3], sinks[4] = {0.5f, -1.0f, 2.0f, 0.0f}, dz[2][4] = {{0}};
    for (int r = 0; r < 2; r++)
        for (int t = 0; t < 3; t++) grads[r][t] = calloc(n * d, 4);
    fill_uniform(q, n * d, 11 + idx), fill_uniform(k, n * d, 12 + idx), fill_uniform(v, n * d, 13 + idx);
    fill_uniform(g, n * d, 14 + idx);
    for (size_t i = 0; i < n * d; i++) q[i] *= 3.0f; // logits of a few units, so the cap bites
    aw_softmax_attention_desc ds = {n, n, d, d, h, 1, 1.0f / sqrtf((float)(d / h)), NULL, c->alibi ? SLOPES : NULL, 0,
                                    c->window, c->softcap, c->sinks ? sinks : NULL, NULL};
    CHECK(softmax_attention_forward_lse(o1, lse, q, k, v, &ds) == AW_OK, "switches: streaming status");
    CHECK(softmax_attention_forward_weights(o2, w2, q, k, v, &ds) == AW_OK, "switches: weights status");
    CHECK(softmax_attention_forward_ref(o3, NULL, q, k, v, &ds) == AW_OK, "switches: ref status");
    char label[128];
    snprintf(label, sizeof label, "switches n%zu h%zu window%zu cap%g sinks%d alibi%d: streaming, weights", n, h, c->window,
             (double)c->softcap, c->sinks, c->alibi);
    REPORT(label, fmax(max_err(o1, o3, n * d), max_err(o2, o3, n * d)), TOL_ATTENTION);
    ds.dsinks = dz[0];
    CHECK(softmax_attention_backward_flash(grads[0][0], grads[0][1], grads[0][2], work, g, o1, lse, q, k, v, &ds) == AW_OK,
          "switches: flash backward status");
    ds.dsinks = dz[1];
    CHECK(softmax_attention_backward_ref(grads[1][0], grads[1][1], grads[1][2], g, q, k, v, &ds) == AW_OK,
          "switches: ref backward status");
    double e = max_err(dz[0], dz[1], h);
    for (int t = 0; t < 3; t++) e = fmax(e, max_err(grads[0][t], grads[1][t], n * d));
    REPORT("  ... flash backward dq, dk, dv, dsinks", e, TOL_ATTENTION);
    if (c->sinks) CHECK(dz[1][0] != 0.0f, "switches: the sinks get a gradient");
    free(q), free(k), free(v), free(g), free(o1), free(o2), free(o3), free(w2), free(lse), free(work);
    for (int r = 0; r < 2; r++)
        for (int t = 0; t < 3; t++) free(grads[r][t]);
}

int main(void) {
    printf("softmax attention (%s path)\n", AW_SIMD ? "SSE2 vector" : "scalar");
    const case_t cases[] = {
        {1, 1, 4, 4, 1, 0, 0, 1, 0},      {7, 7, 8, 8, 1, 1, 0, 1, 0},     {65, 65, 16, 16, 2, 1, 0, 1, 0},
        {130, 300, 32, 16, 4, 0, 1, 1, 0}, {300, 130, 32, 32, 2, 1, 1, 1, 0}, {200, 200, 64, 64, 1, 1, 0, 1, 0},
        {40, 40, 8, 8, 1, 0, 0, 3000, 0},  // logits in the thousands (up to ~1e4)
        {65, 300, 32, 16, 4, 1, 0, 1, 1}, {130, 130, 16, 16, 2, 0, 1, 1, 1}, // ALiBi, causal and both ways
        {1, 40, 16, 16, 4, 0, 0, 1, 39},  // ALiBi for one decoding query at position 39 (q_offset)
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], (int)i);
    const switch_case sw[] = {
        {70, 16, 2, 5, 0.0f, 0, 0},  {70, 16, 2, 0, 1.5f, 0, 0}, {70, 16, 4, 0, 0.0f, 1, 0},
        {300, 32, 4, 70, 2.0f, 1, 1}, {130, 16, 2, 1, 0.0f, 1, 0}, // window 1: each row sees itself (and the sink)
    };
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) run_switch_case(&sw[i], (int)i);
    // bad descriptors return AW_ERR_ARG, never crash
    float x[8] = {0};
    aw_softmax_attention_desc bad = {2, 2, 4, 4, 3, 0, 1.0f, NULL, NULL, 0, 0, 0.0f, NULL, NULL};
    CHECK(softmax_attention_forward_streaming(x, x, x, x, &bad) != AW_OK, "d %% heads != 0 must be rejected");
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
