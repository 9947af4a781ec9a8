// Native softmax attention tests: streaming and weights paths against the naive reference,
// with heads, masks, cross-attention and extreme logits.
#include "../../src/attention/softmax_attention.h"
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
    // bad descriptors return AW_ERR_ARG, never crash
    float x[8] = {0};
    aw_softmax_attention_desc bad = {2, 2, 4, 4, 3, 0, 1.0f, NULL, NULL, 0, 0, 0.0f, NULL, NULL};
    CHECK(softmax_attention_forward_streaming(x, x, x, x, &bad) != AW_OK, "d %% heads != 0 must be rejected");
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
