// Native tests of the quantized weights (src/kernels/quant.h, src/model/quantize.c) under ASan +
// UBSan, 64- and 32-bit: the layer's fast path against its plain-C path (bit for bit) and against a
// double reference over the same integers; a model quantized, run, and refused what it cannot do.
#include "../../src/kernels/quant.h"
#include "../../src/kernels/status.h"
#include "../../src/model/config.h"
#include "../../src/model/transformer.h"
#include "test.h"

#include <string.h>

static void test_layer(void) {
    const struct { int format; size_t G, N, IC, OC; } cases[] = {
        {AW_QF_Q8_0, 16, 1, 48, 5}, {AW_QF_Q8_0, 32, 3, 128, 70}, {AW_QF_Q8_0, 64, 2, 256, 130},
        {AW_QF_Q4_0, 32, 1, 32, 1}, {AW_QF_Q4_0, 32, 3, 160, 300},
    };
    double worst = 0.0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const aw_qformat *f = &AW_QFORMATS[cases[c].format];
        const size_t G = cases[c].G, N = cases[c].N, IC = cases[c].IC, OC = cases[c].OC, ng = IC / G, rb = f->row_bytes(IC);
        float *w = malloc(OC * IC * sizeof(float)), *x = malloc(N * IC * sizeof(float)), *b = malloc(OC * sizeof(float));
        float *y = malloc(N * OC * sizeof(float)), *r = malloc(N * OC * sizeof(float)), *deq = malloc(IC * sizeof(float));
        aw_qmat m = {cases[c].format, OC, IC, G, malloc(OC * rb), malloc(OC * ng * sizeof(float))};
        void *work = malloc(aw_qact_bytes(IC, G));
        fill_uniform(w, OC * IC, 3 + (uint32_t)c), fill_uniform(x, N * IC, 9 + (uint32_t)c), fill_uniform(b, OC, 5);
        for (size_t i = 0; i < G; i++) x[i] = 0.0f; // a zero group: scale 0
        for (size_t j = 0; j < OC; j++) f->quantize_row(m.q + j * rb, m.s + j * ng, w + j * IC, IC, G);
        aw_qlinear(y, x, &m, b, N, work);
        aw_qlinear_ref(r, x, &m, b, N, work);
        CHECK(memcmp(y, r, N * OC * sizeof(float)) == 0, "%s G%zu %zux%zu: the fast path differs from the plain-C path",
              f->name, G, IC, OC);
        // double reference: the weights' integers through dequantize_row (q s), the activations' own
        for (size_t n = 0; n < N; n++) {
            aw_qact a;
            aw_qact_init(&a, work, x + n * IC, IC, G);
            for (size_t i = 0; i < IC; i++) CHECK(a.q[i] >= -127 && a.q[i] <= 127, "activation %zu out of range", i);
            for (size_t j = 0; j < OC; j++) {
                f->dequantize_row(deq, m.q + j * rb, m.s + j * ng, IC, G);
                double s = b[j];
                for (size_t i = 0; i < IC; i++) s += (double)deq[i] * ((double)a.q[i] * a.s[i / G]);
                const float got = y[n * OC + j];
                const double e = fabs(got - s) / (1.0 + fabs(s));
                worst = e > worst ? e : worst;
            }
        }
        free(w), free(x), free(b), free(y), free(r), free(deq), free(m.q), free(m.s), free(work);
    }
    REPORT("quantized layer vs double reference (5 shapes)", worst, 1e-5);
}

static void test_model(void) {
    aw_model_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 20, c.d_model = 32, c.heads = 2, c.layers = 2, c.d_ff = 64, c.max_len = 16, c.seed = 7;
    c.form = aw_form_index(aw_form_find("softmax"));
    const int32_t prompt[] = {1, 5, 9, 3};
    for (int tie = 0; tie < 2; tie++)
        for (int format = AW_QF_Q8_0; format <= AW_QF_Q4_0; format++) {
            c.tie = tie;
            aw_model *m = NULL;
            CHECK(model_create_ex(&m, &c, 1) == AW_OK, "create: %s", aw_error_message());
            if (!m) return;
            float *want = malloc(4 * 20 * sizeof(float));
            model_reserve(m, 1, 4, 0);
            memcpy(m->tokens, prompt, sizeof prompt);
            for (int i = 0; i < 4; i++) m->targets[i] = -1;
            CHECK(model_forward(m, NULL) == AW_OK, "fp32 forward");
            memcpy(want, m->a.logits, 4 * 20 * sizeof(float));
            double bytes[4], after[4];
            model_weight_bytes(m, bytes);
            aw_clear_error();
            CHECK(model_quantize(m, "q5_1", 0) == AW_ERR_ARG && strstr(aw_error_message(), "format must be one of"),
                  "unknown format: %s", aw_error_message());
            aw_clear_error();
            CHECK(model_quantize(m, "q8_0", 24) == AW_ERR_ARG && strstr(aw_error_message(), "multiple of 16"), "group 24");
            aw_clear_error();
            CHECK(model_quantize(m, AW_QFORMATS[format].name, 0) == AW_OK, "quantize: %s", aw_error_message());
            model_weight_bytes(m, after);
            CHECK(after[0] == bytes[1] && after[1] < bytes[1] && after[2] == format, "weight bytes %g -> %g", bytes[1], after[1]);
            model_reserve(m, 1, 4, 0);
            memcpy(m->tokens, prompt, sizeof prompt);
            for (int i = 0; i < 4; i++) m->targets[i] = -1;
            CHECK(model_forward(m, NULL) == AW_OK, "quantized forward: %s", aw_error_message());
            const double e = max_err(m->a.logits, want, 4 * 20);
            printf("%s tie %d: logits within %.3g of float32 (weights %.0f -> %.0f bytes)\n", AW_QFORMATS[format].name, tie, e,
                   bytes[1], after[1]);
            CHECK(e < (format == AW_QF_Q8_0 ? 0.1 : 0.5), "%s: logits %g from float32", AW_QFORMATS[format].name, e);
            int32_t out[8], again[8];
            size_t n = 0, n2 = 0;
            CHECK(model_generate(m, out, &n, 8, prompt, 4, NULL, 0, 0.0f, 0, 1, -1, 1) == AW_OK && n == 8, "generate (cache)");
            CHECK(model_generate(m, again, &n2, 8, prompt, 4, NULL, 0, 0.0f, 0, 1, -1, 0) == AW_OK && n2 == 8, "generate (full)");
            CHECK(memcmp(out, again, sizeof out) == 0, "the KV cache and the full forward give the same greedy tokens");
            aw_clear_error();
            CHECK(model_backward(m) == AW_ERR_STATE && strstr(aw_error_message(), "quantized"), "backward refused: %s",
                  aw_error_message());
            aw_clear_error();
            CHECK(model_quantize(m, "q8_0", 0) == AW_ERR_STATE, "quantize twice");
            free(want);
            model_destroy(m);
        }
}

int main(void) {
    printf("quant (%s)\n", sizeof(size_t) == 4 ? "32-bit" : "64-bit");
    test_layer();
    test_model();
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
