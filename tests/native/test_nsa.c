// test_nsa.c: NSA's selection under grouped-query attention, which only a model (not the standalone
// layer, which has no K/V heads) sets up: the heads of a K/V group read the same blocks, chosen by
// their importance summed over the group, while with one K/V head per head the same inputs let
// the heads choose apart. Runs the form's forward, backward and step under ASan + UBSan as well.
#include "../../src/model/form_layer.h"
#include "../../src/model/forms.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <string.h>

enum { T = 24, C = 16, H = 4 };

// The form with kv_heads K/V heads, blockSize 2, topBlocks 1 (the choice matters at T = 24).
static int setup(aw_attn_form *f, size_t kv_heads) {
    const aw_form *form = aw_form_find("nsa");
    aw_form_values v;
    memset(&v, 0, sizeof v);
    int st = aw_option_set(form, &v, (size_t)aw_option_find(form, "blockSize"), "2");
    if (!st) st = aw_option_set(form, &v, (size_t)aw_option_find(form, "topBlocks"), "1");
    if (!st) st = aw_option_finish(form, &v, T);
    const aw_form_setup su = {.C = C, .H = H, .L = T, .kv_heads = kv_heads, .causal = 1, .opts = &v, .seed = 7};
    return st ? st : attn_form_init(f, form, &su);
}

// 1 when heads a and b selected the same keys at every query
static int same_rows(const float *sel, size_t a, size_t b) {
    return memcmp(sel + a * T * T, sel + b * T * T, T * T * sizeof(float)) == 0;
}

int main(void) {
    static float q[T * C], k[T * C], v[T * C], x[T * C], sel[H * T * T], out[T * C];
    fill_uniform(q, T * C, 11), fill_uniform(k, T * C, 12), fill_uniform(v, T * C, 13), fill_uniform(x, T * C, 14);
    for (size_t i = 0; i < T * C; i++) q[i] *= 4.0f; // sharp block weights: the heads' choices differ
    aw_attn_form grouped, alone;
    CHECK(setup(&grouped, 2) == 0, "nsa with kv_heads 2: %s", aw_error_message());
    CHECK(setup(&alone, 4) == 0, "nsa with kv_heads 4: %s", aw_error_message());
    CHECK(grouped.form->selection(&grouped, sel, x, q, k, v, T, T) == 0, "selection: %s", aw_error_message());
    // groups {0, 1} and {2, 3}
    CHECK(same_rows(sel, 0, 1) && same_rows(sel, 2, 3), "the heads of a K/V group selected different keys");
    CHECK(alone.form->selection(&alone, sel, x, q, k, v, T, T) == 0, "selection: %s", aw_error_message());
    CHECK(!same_rows(sel, 0, 1) || !same_rows(sel, 2, 3), "one K/V head per head: the heads never chose apart "
                                                           "(the grouped check above would prove nothing)");
    // forward, backward and generation of the grouped form (memory checked by the sanitizers)
    const size_t ns = grouped.form->saved_floats(&grouped, T, T), nw = grouped.form->work_floats(&grouped, T, T);
    const size_t np = 3 * H * (C + 1);
    float *saved = calloc(ns, sizeof(float)), *work = calloc(nw, sizeof(float)), *grads = calloc(np, sizeof(float));
    float *params = calloc(np, sizeof(float));
    static float dq[T * C], dk[T * C], dv[T * C], dx[T * C], row[C];
    grouped.form->bind(&grouped, params, grads);
    CHECK(grouped.form->forward(&grouped, out, NULL, saved, x, q, k, v, T, T) == 0, "forward: %s", aw_error_message());
    CHECK(grouped.form->backward(&grouped, dx, dq, dk, dv, work, out, saved, x, q, k, v, T, T) == 0, "backward: %s",
          aw_error_message());
    float *state = calloc(grouped.form->step_floats(&grouped, T), sizeof(float));
    double err = 0.0;
    for (size_t t = 0; t < T; t++) {
        CHECK(grouped.form->step(&grouped, state, T, row, x + t * C, q + t * C, k + t * C, v + t * C, t) == 0, "step");
        const double e = max_err(row, out + t * C, C);
        if (e > err) err = e;
    }
    REPORT("nsa grouped: step vs forward", err, 1e-6);
    free(saved), free(work), free(grads), free(params), free(state);
    attn_form_free(&grouped), attn_form_free(&alone);
    return test_failures != 0;
}
