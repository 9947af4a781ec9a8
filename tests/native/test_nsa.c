// test_nsa.c: NSA's selection under grouped-query attention, which only a model (not the standalone
// layer, which has no K/V heads) sets up: the heads of a K/V group read the same blocks, chosen by
// their importance summed over the group, while with one K/V head per head the same inputs let
// the heads choose apart. Runs the form's forward, backward and step under ASan + UBSan as well,
// with the blocks' means and with the learned compression.
#include "../../src/model/form_layer.h"
#include "../../src/model/forms.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <string.h>

enum { T = 24, C = 16, H = 4 };

// The form with kv_heads K/V heads, blockSize 2, topBlocks 1 (the choice matters at T = 24), and
// blocks compressed by `compress`.
static int setup(aw_attn_form *f, size_t kv_heads, const char *compress) {
    const aw_form *form = aw_form_find("nsa");
    aw_form_values v;
    memset(&v, 0, sizeof v);
    int st = aw_option_set(form, &v, (size_t)aw_option_find(form, "blockSize"), "2");
    if (!st) st = aw_option_set(form, &v, (size_t)aw_option_find(form, "topBlocks"), "1");
    if (!st) st = aw_option_set(form, &v, (size_t)aw_option_find(form, "compress"), compress);
    if (!st) st = aw_option_finish(form, &v, T);
    const aw_form_setup su = {.C = C, .H = H, .L = T, .kv_heads = kv_heads, .causal = 1, .opts = &v, .seed = 7};
    return st ? st : attn_form_init(f, form, &su);
}

// 1 when heads a and b selected the same keys at every query
static int same_rows(const float *sel, size_t a, size_t b) {
    return memcmp(sel + a * T * T, sel + b * T * T, T * T * sizeof(float)) == 0;
}

static void run_all(aw_attn_form *f, const float *q, const float *k, const float *v, const float *x, const char *what);

int main(void) {
    static float q[T * C], k[T * C], v[T * C], x[T * C], sel[H * T * T];
    fill_uniform(q, T * C, 11), fill_uniform(k, T * C, 12), fill_uniform(v, T * C, 13), fill_uniform(x, T * C, 14);
    for (size_t i = 0; i < T * C; i++) q[i] *= 4.0f; // sharp block weights: the heads' choices differ
    aw_attn_form grouped, alone;
    CHECK(setup(&grouped, 2, "mean") == 0, "nsa with kv_heads 2: %s", aw_error_message());
    CHECK(setup(&alone, 4, "mean") == 0, "nsa with kv_heads 4: %s", aw_error_message());
    CHECK(grouped.form->selection(&grouped, sel, x, q, k, v, T, T) == 0, "selection: %s", aw_error_message());
    // groups {0, 1} and {2, 3}
    CHECK(same_rows(sel, 0, 1) && same_rows(sel, 2, 3), "the heads of a K/V group selected different keys");
    CHECK(alone.form->selection(&alone, sel, x, q, k, v, T, T) == 0, "selection: %s", aw_error_message());
    CHECK(!same_rows(sel, 0, 1) || !same_rows(sel, 2, 3), "one K/V head per head: the heads never chose apart "
                                                           "(the grouped check above would prove nothing)");
    attn_form_free(&alone);
    for (int mlp = 0; mlp < 2; mlp++) {
        if (mlp) {
            attn_form_free(&grouped);
            CHECK(setup(&grouped, 2, "mlp") == 0, "nsa mlp: %s", aw_error_message());
        }
        run_all(&grouped, q, k, v, x, mlp ? "nsa grouped, mlp: step vs forward" : "nsa grouped, mean: step vs forward");
    }
    attn_form_free(&grouped);
    return test_failures != 0;
}

// forward, backward and generation (memory checked by the sanitizers); step vs forward reported
static void run_all(aw_attn_form *f, const float *q, const float *k, const float *v, const float *x, const char *what) {
    static float out[T * C];
    const size_t ns = f->form->saved_floats(f, T, T), nw = f->form->work_floats(f, T, T);
    aw_form_tensor tn[8];
    size_t np = 0;
    for (size_t i = 0, n = f->form->tensors(f, tn, 8); i < n; i++) np += tn[i].size;
    float *saved = calloc(ns, sizeof(float)), *work = calloc(nw, sizeof(float)), *grads = calloc(np, sizeof(float));
    float *params = calloc(np, sizeof(float));
    static float dq[T * C], dk[T * C], dv[T * C], dx[T * C], row[C];
    f->form->bind(f, params, grads);
    fill_uniform(params, np, 15); // gates and compression away from zero
    CHECK(f->form->forward(f, out, NULL, saved, x, q, k, v, T, T) == 0, "forward: %s", aw_error_message());
    CHECK(f->form->backward(f, dx, dq, dk, dv, work, out, saved, x, q, k, v, T, T) == 0, "backward: %s",
          aw_error_message());
    float *state = calloc(f->form->step_floats(f, T), sizeof(float));
    double err = 0.0;
    for (size_t t = 0; t < T; t++) {
        CHECK(f->form->step(f, state, T, row, x + t * C, q + t * C, k + t * C, v + t * C, t) == 0, "step");
        const double e = max_err(row, out + t * C, C);
        if (e > err) err = e;
    }
    REPORT(what, err, 1e-6);
    free(saved), free(work), free(grads), free(params), free(state);
    f->params = f->grads = NULL; // bound to the block freed above
}
