// Native tests of the tiny Transformer (src/model): finite-difference gradient checks for every
// op and for whole models with every attention form wired in, softmax-attention backward vs its
// reference, determinism, the safetensors round trip, cached vs full generation, and a short
// learning check. Op-level gradient errors are ||numeric - analytic|| / max(||numeric||,
// ||analytic||) over the checked entries (central differences, step 1e-2); the bound is
// TOL_GRAD_CHECK. Whole models use model_grad_check (src/model/gradcheck.c): every tensor along its
// own gradient and a random direction, relative to the tensor's gradient norm, bound
// TOL_GRAD_CHECK_TENSOR (3e-2). Measured: correct gradients stay under 3e-3 here (1.2e-2 in the
// wasm tests' softmax encoder-decoder); a single tensor's gradient times 1.1 gives 0.09 or more,
// and the mutation runs below require exactly that to fail.
#include "../../src/attention/softmax_attention_backward.h"
#include "../../src/kernels/status.h"
#include "../../src/model/checkpoint.h"
#include "../../src/model/config.h"
#include "../../src/model/tasks.h"
#include "../../src/model/transformer.h"
#include "test.h"

#include <math.h>
#include <string.h>

// ---- helpers ------------------------------------------------------------------------------------

static double dot_d(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

typedef struct {
    double num2, ana2, diff2;
} grad_acc;

static void acc_add(grad_acc *g, double num, double ana) {
    g->num2 += num * num, g->ana2 += ana * ana, g->diff2 += (num - ana) * (num - ana);
}

static double acc_err(const grad_acc *g) {
    const double s = g->num2 > g->ana2 ? g->num2 : g->ana2;
    return s > 0 ? sqrt(g->diff2 / s) : sqrt(g->diff2);
}

// ---- per-op checks: L = sum(out * R) with a random R, so dout = R ------------------------------

typedef struct {
    size_t N, IC, OC;
    float *x, *w, *b, *out, *R;
} linear_case;

static double linear_loss(void *p) {
    linear_case *c = p;
    linear_forward(c->out, c->x, c->w, c->b, c->N, c->IC, c->OC);
    return dot_d(c->out, c->R, c->N * c->OC);
}

typedef double (*loss_fn)(void *);

// Central differences over (up to `most`) entries of x against grad.
static void fd(grad_acc *g, float *x, const float *grad, size_t n, loss_fn f, void *ctx, float eps, size_t most) {
    const size_t stride = n > most ? n / most : 1;
    for (size_t i = 0; i < n; i += stride) {
        const float keep = x[i];
        x[i] = keep + eps;
        const double lp = f(ctx);
        x[i] = keep - eps;
        const double lm = f(ctx);
        x[i] = keep;
        acc_add(g, (lp - lm) / (2.0 * eps), grad[i]);
    }
}

static void test_linear_op(void) {
    linear_case c = {5, 7, 6, NULL, NULL, NULL, NULL, NULL};
    float buf[5 * 7 + 7 * 6 + 6 + 5 * 6 * 2], g[5 * 7 + 7 * 6 + 6] = {0}, ref[5 * 6];
    c.x = buf, c.w = c.x + 35, c.b = c.w + 42, c.out = c.b + 6, c.R = c.out + 30;
    fill_uniform(buf, 35 + 42 + 6, 3), fill_uniform(c.R, 30, 4);
    linear_forward(c.out, c.x, c.w, c.b, 5, 7, 6);
    linear_forward_ref(ref, c.x, c.w, c.b, 5, 7, 6);
    REPORT("linear forward vs ref", max_err(c.out, ref, 30), TOL_MATMUL);
    linear_backward(g, g + 35, g + 77, c.R, c.x, c.w, 5, 7, 6);
    grad_acc acc = {0};
    fd(&acc, c.x, g, 35, linear_loss, &c, 1e-2f, 64);
    fd(&acc, c.w, g + 35, 42, linear_loss, &c, 1e-2f, 64);
    fd(&acc, c.b, g + 77, 6, linear_loss, &c, 1e-2f, 64);
    REPORT("grad check: linear (x, W, b)", acc_err(&acc), TOL_GRAD_CHECK);
}

typedef struct {
    float *x, *w, *b, *out, *mean, *rstd, *R;
    size_t N, C;
} ln_case;

static double ln_loss(void *p) {
    ln_case *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C, 1e-5f);
    return dot_d(c->out, c->R, c->N * c->C);
}

static void test_layernorm_op(void) {
    enum { N = 4, C = 9 };
    float x[N * C], w[C], b[C], out[N * C], mean[N], rstd[N], R[N * C], dx[N * C] = {0}, dw[C] = {0}, db[C] = {0};
    fill_uniform(x, N * C, 5), fill_uniform(w, C, 6), fill_uniform(b, C, 7), fill_uniform(R, N * C, 8);
    ln_case c = {x, w, b, out, mean, rstd, R, N, C};
    ln_loss(&c);
    layernorm_backward(dx, dw, db, R, x, w, mean, rstd, N, C);
    grad_acc acc = {0};
    fd(&acc, x, dx, N * C, ln_loss, &c, 1e-2f, 64);
    fd(&acc, w, dw, C, ln_loss, &c, 1e-2f, 64);
    fd(&acc, b, db, C, ln_loss, &c, 1e-2f, 64);
    REPORT("grad check: layernorm (x, w, b)", acc_err(&acc), TOL_GRAD_CHECK);
}

typedef struct {
    float *x, *out, *R;
    size_t n;
} relu_case;

static double relu_loss(void *p) {
    relu_case *c = p;
    relu_forward(c->out, c->x, c->n);
    return dot_d(c->out, c->R, c->n);
}

static void test_relu_embedding_ops(void) {
    enum { n = 40 };
    float x[n], out[n], R[n], dx[n] = {0};
    fill_uniform(x, n, 9), fill_uniform(R, n, 10);
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) < 0.05f) x[i] = 0.5f; // keep away from the kink
    relu_case c = {x, out, R, n};
    relu_backward(dx, R, x, n);
    grad_acc acc = {0};
    fd(&acc, x, dx, n, relu_loss, &c, 1e-2f, 64);
    REPORT("grad check: relu", acc_err(&acc), TOL_GRAD_CHECK);

    // embedding: out[b, t] = wte[tok] + pos[t]; L = sum(out * R)
    enum { V = 5, T = 3, C = 4 };
    const int32_t tokens[2 * T] = {1, 4, 1, 0, 2, 4};
    float wte[V * C], pos[T * C], eo[2 * T * C], Re[2 * T * C], dwte[V * C] = {0}, dpos[T * C] = {0};
    fill_uniform(wte, V * C, 11), fill_uniform(pos, T * C, 12), fill_uniform(Re, 2 * T * C, 13);
    embedding_backward(dwte, dpos, Re, tokens, 2, T, C);
    double worst = 0.0;
    for (size_t i = 0; i < V * C + T * C; i++) {
        float *p = i < V * C ? &wte[i] : &pos[i - V * C];
        const float keep = *p;
        *p = keep + 0.5f, embedding_forward(eo, tokens, wte, pos, 2, T, C);
        const double lp = dot_d(eo, Re, 2 * T * C);
        *p = keep - 0.5f, embedding_forward(eo, tokens, wte, pos, 2, T, C);
        const double lm = dot_d(eo, Re, 2 * T * C);
        *p = keep;
        const double e = fabs((lp - lm) - (i < V * C ? dwte[i] : dpos[i - V * C]));
        worst = e > worst ? e : worst;
    }
    REPORT("grad check: embedding + learned positions (abs)", worst, TOL_GRAD_CHECK);
}

typedef struct {
    float *logits, *probs, *losses;
    const int32_t *targets;
    size_t N, V;
} ce_case;

static double ce_loss(void *p) {
    ce_case *c = p;
    size_t count, correct;
    return crossentropy_forward(c->probs, c->losses, c->logits, c->targets, c->N, c->V, &count, &correct);
}

static void test_crossentropy_op(void) {
    enum { N = 5, V = 7 };
    float logits[N * V], probs[N * V], losses[N], dl[N * V] = {0};
    const int32_t targets[N] = {3, -1, 0, 6, 2};
    fill_uniform(logits, N * V, 14);
    logits[0] = 30.0f; // a confident wrong row stays finite
    ce_case c = {logits, probs, losses, targets, N, V};
    const double loss = ce_loss(&c);
    CHECK(isfinite(loss), "crossentropy loss %g is not finite", loss);
    crossentropy_backward(dl, probs, targets, 1.0f / 4.0f, N, V);
    grad_acc acc = {0};
    fd(&acc, logits, dl, N * V, ce_loss, &c, 1e-2f, 64);
    REPORT("grad check: softmax cross-entropy (mean, ignored rows)", acc_err(&acc), TOL_GRAD_CHECK);
}

// ---- softmax attention backward ------------------------------------------------------------------

typedef struct {
    float *q, *k, *v, *out, *w, *R;
    aw_softmax_attention_desc ds;
} att_case;

static double att_loss(void *p) {
    att_case *c = p;
    softmax_attention_forward_weights(c->out, c->w, c->q, c->k, c->v, &c->ds);
    return dot_d(c->out, c->R, c->ds.n * c->ds.dv);
}

static void test_softmax_attention_backward(void) {
    const uint8_t mask[7] = {1, 0, 1, 1, 1, 0, 1};
    struct {
        size_t n, m, d, dv, h;
        int causal, masked;
    } cases[] = {{5, 5, 8, 8, 2, 0, 0}, {6, 6, 8, 4, 2, 1, 0}, {4, 7, 6, 6, 3, 0, 1}, {7, 7, 4, 8, 1, 1, 1}, {3, 7, 8, 8, 2, 1, 0}};
    double worst_ref = 0.0, worst_fd = 0.0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const size_t n = cases[ci].n, m = cases[ci].m, d = cases[ci].d, dv = cases[ci].dv, h = cases[ci].h;
        float *mem = calloc(2 * n * d + 2 * m * d + 2 * m * dv + 4 * n * dv + h * n * m + n * m + 2 * (n * d + m * d + m * dv), sizeof(float));
        float *q = mem, *k = q + n * d, *v = k + m * d, *out = v + m * dv, *R = out + n * dv, *w = R + n * dv;
        float *scratch = w + h * n * m, *g = scratch + n * m, *gr = g + n * d + m * d + m * dv;
        fill_uniform(q, n * d, 20 + (uint32_t)ci), fill_uniform(k, m * d, 30 + (uint32_t)ci);
        fill_uniform(v, m * dv, 40 + (uint32_t)ci), fill_uniform(R, n * dv, 50 + (uint32_t)ci);
        for (size_t i = 0; i < n * d; i++) q[i] *= 2.0f; // sharper weights
        static const float slopes[3] = {0.5f, 0.25f, 0.125f};
        att_case c = {q, k, v, out, w, R, {n, m, d, dv, h, cases[ci].causal, 1.0f / sqrtf((float)(d / h)),
                                           cases[ci].masked ? mask : NULL, ci % 2 ? slopes : NULL, 0, 0, 0.0f, NULL, NULL}};
        att_loss(&c);
        CHECK(softmax_attention_backward(g, g + n * d, g + n * d + m * d, scratch, R, w, q, k, v, &c.ds) == AW_OK, "backward status");
        CHECK(softmax_attention_backward_ref(gr, gr + n * d, gr + n * d + m * d, R, q, k, v, &c.ds) == AW_OK, "ref status");
        const double e = max_err(g, gr, n * d + m * d + m * dv);
        worst_ref = e > worst_ref ? e : worst_ref;
        grad_acc acc = {0};
        fd(&acc, q, g, n * d, att_loss, &c, 1e-2f, 200);
        fd(&acc, k, g + n * d, m * d, att_loss, &c, 1e-2f, 200);
        fd(&acc, v, g + n * d + m * d, m * dv, att_loss, &c, 1e-2f, 200);
        worst_fd = acc_err(&acc) > worst_fd ? acc_err(&acc) : worst_fd;
        free(mem);
    }
    REPORT("softmax attention backward vs ref (5 cases, masks, ALiBi)", worst_ref, TOL_ATTENTION);
    REPORT("grad check: softmax attention (causal, key mask, m != n)", worst_fd, TOL_GRAD_CHECK);
}

// The backward that keeps no n x m matrix (FlashAttention-2's recomputation from the forward's
// log-sum-exp) against the double reference: sizes across several query blocks (32) and key
// tiles (64) that do not divide them, causal and not, a key mask that leaves rows empty, m != n,
// n = m = 1; its scratch is the same whatever the sizes.
static void test_softmax_attention_backward_flash(void) {
    struct {
        size_t n, m, d, dv, h;
        int causal, masked;
    } cases[] = {{1, 1, 4, 4, 1, 0, 0}, {1, 1, 4, 4, 1, 1, 0}, {70, 70, 16, 8, 2, 1, 0}, {33, 130, 8, 8, 2, 0, 1},
                 {130, 130, 8, 16, 4, 1, 1}, {65, 200, 12, 12, 3, 0, 0}, {100, 100, 8, 8, 1, 1, 0}};
    double worst = 0.0, worst_lse = 0.0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const size_t n = cases[ci].n, m = cases[ci].m, d = cases[ci].d, dv = cases[ci].dv, h = cases[ci].h;
        uint8_t *mask = calloc(m, 1);
        for (size_t j = 0; j < m; j++) mask[j] = (j % 5) != 1 && j != 0; // key 0 masked: causal row 0 is empty
        const size_t grads = n * d + m * d + m * dv;
        float *mem = calloc(n * d + m * d + m * dv + 2 * n * dv + h * n + 2 * grads + softmax_attention_backward_flash_floats(),
                            sizeof(float));
        float *q = mem, *k = q + n * d, *v = k + m * d, *out = v + m * dv, *R = out + n * dv, *lse = R + n * dv;
        float *g = lse + h * n, *gr = g + grads, *scratch = gr + grads;
        fill_uniform(q, n * d, 60 + (uint32_t)ci), fill_uniform(k, m * d, 70 + (uint32_t)ci);
        fill_uniform(v, m * dv, 80 + (uint32_t)ci), fill_uniform(R, n * dv, 90 + (uint32_t)ci);
        for (size_t i = 0; i < n * d; i++) q[i] *= 3.0f; // sharper weights
        static const float slopes[4] = {0.5f, 0.25f, 0.125f, 0.0625f}; // ALiBi in every other case
        const aw_softmax_attention_desc ds = {n, m, d, dv, h, cases[ci].causal, 1.0f / sqrtf((float)(d / h)),
                                              cases[ci].masked ? mask : NULL, ci % 2 ? slopes : NULL, 0, 0, 0.0f, NULL, NULL};
        CHECK(softmax_attention_forward_lse(out, lse, q, k, v, &ds) == AW_OK, "forward_lse status");
        // the log-sum-exp against double
        for (size_t hd = 0; hd < h; hd++)
            for (size_t i = 0; i < n; i++) {
                double mx = -INFINITY, sum = 0.0;
                for (size_t j = 0; j < m; j++) {
                    if ((ds.causal && j > i) || (ds.key_mask && !ds.key_mask[j])) continue;
                    double sc = 0.0;
                    for (size_t c = 0; c < d / h; c++) sc += (double)q[i * d + hd * (d / h) + c] * k[j * d + hd * (d / h) + c];
                    sc = sc * ds.scale + aw_score_bias(&ds, hd, i, j);
                    if (sc > mx) sum = sum * exp(mx - sc) + 1.0, mx = sc;
                    else sum += exp(sc - mx);
                }
                const double want = mx == -INFINITY ? -INFINITY : mx + log(sum), got = lse[hd * n + i];
                if (want == -INFINITY) CHECK(got == -INFINITY, "an empty row's lse is -inf, got %g", got);
                else worst_lse = fabs(got - want) > worst_lse ? fabs(got - want) : worst_lse;
            }
        memset(g, 0, 2 * grads * sizeof(float));
        CHECK(softmax_attention_backward_flash(g, g + n * d, g + n * d + m * d, scratch, R, out, lse, q, k, v, &ds) == AW_OK,
              "flash backward status");
        CHECK(softmax_attention_backward_ref(gr, gr + n * d, gr + n * d + m * d, R, q, k, v, &ds) == AW_OK, "ref status");
        double scale = 0.0;
        for (size_t i = 0; i < grads; i++) scale = fabs(gr[i]) > scale ? fabs(gr[i]) : scale;
        const double e = max_err(g, gr, grads) / (scale > 1.0 ? scale : 1.0);
        worst = e > worst ? e : worst;
        free(mem), free(mask);
    }
    REPORT("softmax attention: log-sum-exp of the streaming forward vs double (7 cases)", worst_lse, TOL_ATTENTION);
    REPORT("softmax attention flash backward vs ref (7 cases: blocks, masks, empty rows, m != n, n = 1, ALiBi)", worst,
           TOL_ATTENTION);
}

// ---- whole models ------------------------------------------------------------------------------------

// The registry index of a form.
static int32_t FORM(const char *name) { return aw_form_index(aw_form_find(name)); }

static aw_model_config base_config(void) {
    aw_model_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 7, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 12, c.max_len = 8, c.seed = 5;
    c.form = FORM("softmax");
    return c;
}

// c with the form `name` and its options from "option=value;option=value" (values as users write
// them), through the form's own option list.
static aw_model_config WITH(aw_model_config c, const char *name, const char *spec) {
    c.form = FORM(name);
    const aw_form *f = aw_form_at((size_t)c.form);
    memset(&c.attn, 0, sizeof c.attn);
    for (const char *p = spec; p && *p;) {
        const char *semi = strchr(p, ';'), *eq = strchr(p, '=');
        const size_t len = semi ? (size_t)(semi - p) : strlen(p);
        char key[32], value[96];
        snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
        snprintf(value, sizeof value, "%.*s", (int)(len - (size_t)(eq - p) - 1), eq + 1);
        const int i = aw_option_find(f, key);
        if (i < 0 || aw_option_set(f, &c.attn, (size_t)i, value)) {
            fprintf(stderr, "test config: %s %s: %s\n", name, key, aw_error_message());
            abort();
        }
        p += len + (semi != NULL);
    }
    return c;
}

// model_grad_check (src/model/gradcheck.c) on a random batch: every tensor along its gradient and
// along a random direction. With mutate, it then multiplies each tensor's analytic gradient by
// 1.1 in turn and requires the check to fail on that tensor: the bound can see a 10% error in
// any single tensor.
static void grad_check_model_ex(const char *label, aw_model_config cfg, int mutate) {
    aw_model *m = NULL;
    int st = model_create(&m, &cfg);
    CHECK(st == AW_OK, "%s: model_create status %d (%s)", label, st, aw_error_message());
    if (st) return;
    const size_t S = aw_arch_has_source(cfg.arch) ? 5 : 0;
    aw_grad_check gc;
    st = model_grad_check(m, 2, 6, S, 77, NULL, 1.0, &gc);
    CHECK(st == AW_OK, "%s: grad check status %d", label, st);
    CHECK(gc.zero_grad_tensors == 0, "%s: %zu tensors with an all-zero gradient (first: %s)", label, gc.zero_grad_tensors,
          gc.zero_grad_name);
    CHECK(gc.fixed_with_grad == 0, "%s: a fixed random table got a gradient", label);
    CHECK(gc.skipped * 10 <= gc.checked, "%s: too many directions at kinks (%zu of %zu)", label, gc.skipped,
          gc.checked + gc.skipped);
    char line[160];
    snprintf(line, sizeof line, "grad check: %s (%zu dirs, %zu kinks; worst %s)", label, gc.checked, gc.skipped,
             gc.worst_tensor);
    REPORT(line, gc.error, TOL_GRAD_CHECK_TENSOR);
    if (mutate) {
        double least = 1e9;
        char least_name[40] = "";
        size_t caught = 0, tried = 0, exempt = 0;
        for (size_t t = 0; t < m->n_tensors; t++) {
            const aw_tensor_info *ti = &m->tensors[t];
            if (!ti->trainable) continue; // fixed tables have no gradient to scale
            // a gradient that is zero up to rounding (a key bias under softmax: every logit of a
            // row shifts alike) has nothing for a factor to change
            const float *g = model_tensor_grad(m, ti);
            double gn = 0.0;
            for (size_t i = 0; i < model_tensor_size(ti); i++) gn += (double)g[i] * g[i];
            if (sqrt(gn) < 1e-4) {
                exempt++;
                continue;
            }
            aw_grad_check mg;
            model_grad_check(m, 2, 6, S, 77, ti->name, 1.1, &mg);
            tried++;
            const int hit = mg.error > TOL_GRAD_CHECK_TENSOR && strcmp(mg.worst_tensor, ti->name) == 0;
            caught += hit;
            if (!hit) CHECK(0, "%s: gradient of %s times 1.1 passed the check (error %.4f)", label, ti->name, mg.error);
            if (mg.worst_tensor_error < least) least = mg.worst_tensor_error, snprintf(least_name, sizeof least_name, "%s", ti->name);
        }
        printf("  mutation: gradient x 1.1 in each of %zu tensors -> %zu caught (%zu with a zero gradient exempt); "
               "smallest error %.4f (%s) vs bound %g\n", tried, caught, exempt, least, least_name, TOL_GRAD_CHECK_TENSOR);
    }
    model_destroy(m);
}

static void grad_check_model(const char *label, aw_model_config cfg) { grad_check_model_ex(label, cfg, 0); }

static void test_model_grads(void) {
    aw_model_config c = base_config();
    grad_check_model("softmax pre-norm decoder", c);
    c.norm = AW_NORM_POST, c.positional = AW_POS_LEARNED;
    grad_check_model("softmax post-norm learned-pos decoder", c);
    c = base_config(), c.arch = AW_ARCH_ENCODER_DECODER;
    grad_check_model_ex("softmax encoder-decoder pre-norm", c, 1);
    c.norm = AW_NORM_POST;
    grad_check_model("softmax encoder-decoder post-norm", c);
    const int32_t features[] = {FORM("linear:elu+1"), FORM("linear:relu"), FORM("linear:taylor")};
    const char *fnames[] = {"linear elu+1 decoder", "linear relu decoder", "linear taylor decoder"};
    for (int i = 0; i < 3; i++) {
        c = base_config(), c.form = features[i];
        grad_check_model(fnames[i], c);
    }
    c = WITH(base_config(), "local", "window=3");
    grad_check_model("local (window 3) decoder", c);
    c.arch = AW_ARCH_ENCODER_DECODER, c.norm = AW_NORM_POST;
    grad_check_model("local (window 3) encoder-decoder post-norm", c);
    c = WITH(base_config(), "strided", "window=2;stride=3");
    grad_check_model("strided (window 2, stride 3) decoder", c);
    c.arch = AW_ARCH_ENCODER_DECODER;
    grad_check_model("strided (window 2, stride 3) encoder-decoder", c);
    c = base_config(), c.form = FORM("retention");
    grad_check_model("retention (RetNet's decays) decoder", c);
    c = WITH(c, "retention", "decay=learned");
    grad_check_model_ex("retention (learned decays) decoder", c, 1);
    c.arch = AW_ARCH_ENCODER_DECODER;
    grad_check_model("retention (learned decays) encoder-decoder", c);
    c = WITH(base_config(), "linformer", "k=3"), c.arch = AW_ARCH_ENCODER_DECODER;
    grad_check_model_ex("linformer (k 3) encoder-decoder", c, 1);
    { // Linformer has no causal form: a decoder-only model with it is refused, and says why
        aw_model *m = NULL;
        c.arch = AW_ARCH_DECODER;
        CHECK(model_create(&m, &c) == AW_ERR_ARG && strstr(aw_error_message(), "mixes every position") &&
                  strstr(aw_error_message(), "encoder-decoder"),
              "a Linformer decoder is refused with the reason: %s", aw_error_message());
    }
    c = WITH(base_config(), "mla", "kvRank=3;ropeDim=2"); // MLA: every one of its tensors, the mutation too
    grad_check_model_ex("mla (kvRank 3, ropeDim 2) decoder", c, 1);
    c = WITH(base_config(), "mla", "kvRank=5;ropeDim=4;qRank=3;path=absorbed"), c.arch = AW_ARCH_ENCODER_DECODER;
    c.norm = AW_NORM_POST;
    grad_check_model("mla (qRank 3, absorbed forward) encoder-decoder post-norm", c);
    c = base_config(), c.form = FORM("linear:elu+1"), c.arch = AW_ARCH_ENCODER_DECODER;
    grad_check_model("linear elu+1 encoder-decoder", c);
    struct {
        const char *name, *form, *opts;
    } synths[] = {
        {"synthesizer dense", "synth:dense", "trainable=false"},
        {"synthesizer random (trainable)", "synth:random", "trainable=true"},
        {"synthesizer random (fixed)", "synth:random", "trainable=false"},
        {"synthesizer factorized-dense", "synth:factorized-dense", "a=2;b=4;trainable=false"},
        {"synthesizer factorized-random", "synth:factorized-random", "k=3;trainable=true"},
        {"synthesizer mixture (random + dot)", "synth:mixture", "trainable=true;components=random,dot"},
        {"synthesizer mixture (dense + factorized-random)", "synth:mixture",
         "trainable=true;k=2;components=dense,factorized-random"},
    };
    for (size_t i = 0; i < sizeof synths / sizeof synths[0]; i++) {
        c = WITH(base_config(), synths[i].form, synths[i].opts);
        grad_check_model_ex(synths[i].name, c, i == 5 || i == 6 || i == 1);
    }
    c = WITH(base_config(), "synth:dense", NULL), c.arch = AW_ARCH_ENCODER_DECODER;
    grad_check_model("synthesizer dense encoder-decoder", c);
    // the RNN baselines (rnn.c): backprop through 5 encoder and 6 decoder steps, every tensor's
    // gradient times 1.1 must fail
    c = base_config(), c.arch = AW_ARCH_GRU, c.layers = 1;
    grad_check_model_ex("gru encoder-decoder (fixed context)", c, 1);
    c.arch = AW_ARCH_GRU_ATTENTION;
    grad_check_model_ex("gru-attention (additive attention)", c, 1);
}

// ---- configs, determinism, checkpoint, generation, learning ----------------------------------------

// Sizes that do not fit a 32-bit size_t (wasm32's) are refused before anything is allocated.
// Only in the 32-bit build: a 64-bit one would try to allocate tens of GiB.
static void test_size_overflow(void) {
    if (sizeof(size_t) != 4) return;
    aw_model_config c = base_config();
    c.vocab = 1 << 20, c.d_model = 4096, c.heads = 1, c.layers = 2, c.d_ff = 7159, c.max_len = 2;
    aw_model *m = NULL;
    aw_clear_error();
    CHECK(model_create(&m, &c) == AW_ERR_NOMEM && !m && strstr(aw_error_message(), "32-bit address space"),
          "a model too large for 32 bits is refused: %s", aw_error_message());
    c = base_config(), c.vocab = 12, c.d_model = 16, c.max_len = 40;
    CHECK(model_create(&m, &c) == AW_OK, "create");
    aw_clear_error();
    const int st = model_reserve(m, 65536, 40, 0); // 65536 x 40 positions of activations: too many for 32 bits
    CHECK(st == AW_ERR_NOMEM && strstr(aw_error_message(), "address space"), "a batch too large for 32 bits: %d %s", st,
          aw_error_message());
    const aw_task_spec spec = {AW_TASK_REVERSE, 3, 6, 0};
    const aw_train_config tc = {1e-3f, 0.9f, 0.98f, 1e-8f, 0.01f, 1.0f};
    aw_metrics mt;
    CHECK(model_train_step(m, &spec, 4, &tc, &mt) == AW_OK, "the model still trains after the refusal");
    model_destroy(m);
    printf("32-bit: a model and a batch too large for size_t are refused with a message; the model still works\n");
}

static void test_config_errors(void) {
    aw_model *m = NULL;
    aw_model_config c = base_config();
    c.heads = 3;
    CHECK(model_create(&m, &c) == AW_ERR_ARG && m == NULL, "d_model %% heads != 0 must fail");
    c = base_config(), c.form = 99;
    CHECK(model_create(&m, &c) == AW_ERR_ARG, "unknown form must fail");
    c = base_config(), c.form = FORM("linear:efficient");
    CHECK(model_create(&m, &c) == AW_ERR_ARG, "causal efficient attention must fail");
    c = WITH(base_config(), "synth:factorized-dense", "a=3;b=3");
    CHECK(model_create(&m, &c) == AW_ERR_ARG, "factorized-dense with a*b != max_len must fail");
    c = base_config(), c.arch = AW_ARCH_GRU; // layers 2
    aw_clear_error();
    CHECK(model_create(&m, &c) == AW_ERR_ARG && !m && strstr(aw_error_message(), "layers must be 1 for arch \"gru\""),
          "gru with 2 layers must fail naming layers: %s", aw_error_message());
    c.arch = AW_ARCH_GRU_ATTENTION, c.layers = 3;
    aw_clear_error();
    CHECK(model_create(&m, &c) == AW_ERR_ARG && strstr(aw_error_message(), "layers must be 1 for arch \"gru-attention\""),
          "gru-attention with 3 layers must fail naming layers: %s", aw_error_message());
    c = base_config(), c.arch = 4;
    aw_clear_error();
    CHECK(model_create(&m, &c) == AW_ERR_ARG && strstr(aw_error_message(), "arch must be"), "unknown arch must fail");
    c = base_config();
    CHECK(model_create(&m, &c) == AW_OK, "create");
    aw_task_spec spec = {AW_TASK_REVERSE, 8, 6, 0};
    size_t T, S;
    CHECK(model_task_dims(m, &spec, &T, &S) == AW_ERR_ARG, "reverse of 8 (16 positions) in max_len 8 must fail");
    spec.length = 3;
    CHECK(model_task_dims(m, &spec, &T, &S) == AW_OK && T == 6 && S == 0, "reverse of 3: T = 6");
    spec.symbols = 7;
    CHECK(model_task_dims(m, &spec, &T, &S) == AW_ERR_ARG, "7 symbols need vocab 8");
    CHECK(model_reserve(m, 1, 9, 0) == AW_ERR_ARG, "T > max_len must fail");
    model_reserve(m, 1, 3, 0);
    m->tokens[0] = 0, m->tokens[1] = 7, m->tokens[2] = 1, m->targets[0] = m->targets[1] = m->targets[2] = -1;
    CHECK(model_forward(m, NULL) == AW_ERR_ARG, "token out of vocab must fail");
    model_destroy(m);
}

static aw_train_config train_config(float lr) { return (aw_train_config){lr, 0.9f, 0.98f, 1e-8f, 0.01f, 1.0f}; }

static void test_determinism_and_checkpoint(void) {
    aw_model_config c = base_config();
    c.vocab = 8, c.max_len = 12, c.positional = AW_POS_LEARNED;
    aw_model *a = NULL, *b = NULL;
    model_create(&a, &c), model_create(&b, &c);
    const aw_task_spec spec = {AW_TASK_SORT, 5, 6, 0};
    const aw_train_config tc = train_config(3e-3f);
    int same = 1;
    for (int s = 0; s < 4; s++) {
        aw_metrics ma, mb;
        CHECK(model_train_step(a, &spec, 4, &tc, &ma) == AW_OK && model_train_step(b, &spec, 4, &tc, &mb) == AW_OK, "steps");
        same &= ma.loss == mb.loss;
    }
    CHECK(same, "two models with the same seed must give identical loss curves");

    size_t bytes = 0;
    CHECK(checkpoint_size(a, 0, &bytes) == AW_OK && bytes > 8, "checkpoint size");
    uint8_t *buf = malloc(bytes), *buf2 = malloc(bytes);
    CHECK(checkpoint_write(a, 0, buf, bytes - 1) == AW_ERR_ARG, "short buffer must fail");
    CHECK(checkpoint_write(a, 0, buf, bytes) == AW_OK, "checkpoint write");
    aw_model *r = NULL;
    CHECK(checkpoint_read(&r, buf, bytes) == AW_OK && r, "checkpoint read");
    if (r) {
        CHECK(memcmp(r->params, a->params, a->n_params * sizeof(float)) == 0, "params round-trip bit-exactly");
        CHECK(r->step == a->step, "step restored");
        size_t bytes2 = 0;
        checkpoint_size(r, 0, &bytes2);
        CHECK(bytes2 == bytes && checkpoint_write(r, 0, buf2, bytes2) == AW_OK && memcmp(buf, buf2, bytes) == 0,
              "re-saving a loaded model gives the same bytes");
        aw_metrics ea, er;
        model_evaluate(a, &spec, 4, 2, 9, &ea), model_evaluate(r, &spec, 4, 2, 9, &er);
        CHECK(ea.loss == er.loss, "loaded model evaluates identically (%g vs %g)", ea.loss, er.loss);
        model_destroy(r);
    }
    // corruptions are refused, not crashed on
    CHECK(checkpoint_read(&r, buf, 7) == AW_ERR_FORMAT, "truncated header");
    memcpy(buf2, buf, bytes);
    buf2[9] = 'x';
    CHECK(checkpoint_read(&r, buf2, bytes) == AW_ERR_FORMAT && r == NULL, "bad JSON");
    CHECK(checkpoint_read(&r, buf, bytes - 4) == AW_ERR_FORMAT, "truncated data");
    free(buf), free(buf2);
    model_destroy(a), model_destroy(b);
}

// Training resumes exactly: N steps, save with the optimizer state, load, M more steps == N + M
// steps without a pause, bit for bit, for a softmax and a Synthesizer mixture model. And a
// linear layer's weight is stored (out, in): checkpoint element (o, i) is the model's W[i][o].
static void test_resume(void) {
    aw_model_config cs[2] = {base_config(), base_config()};
    cs[1] = WITH(cs[1], "synth:mixture", "trainable=true;components=random,dot");
    const aw_task_spec spec = {AW_TASK_REVERSE, 3, 5, 0};
    const aw_train_config tc = train_config(3e-3f);
    for (int k = 0; k < 2; k++) {
        aw_model *once = NULL, *first = NULL, *again = NULL;
        model_create(&once, &cs[k]), model_create(&first, &cs[k]);
        aw_metrics mt;
        for (int s = 0; s < 7; s++) model_train_step(once, &spec, 4, &tc, &mt);
        for (int s = 0; s < 4; s++) model_train_step(first, &spec, 4, &tc, &mt);
        size_t bytes = 0;
        CHECK(checkpoint_size(first, 1, &bytes) == AW_OK, "size with optimizer");
        uint8_t *buf = malloc(bytes);
        CHECK(checkpoint_write(first, 1, buf, bytes) == AW_OK && checkpoint_read(&again, buf, bytes) == AW_OK && again,
              "save and load with the optimizer state");
        if (again) {
            for (int s = 0; s < 3; s++) model_train_step(again, &spec, 4, &tc, &mt);
            CHECK(memcmp(again->params, once->params, once->n_params * sizeof(float)) == 0 && again->step == once->step,
                  "%s: resumed training differs from uninterrupted training", k ? "mixture" : "softmax");
            printf("resume (%s): 4 steps, save with AdamW state, load, 3 steps == 7 steps, bit for bit\n",
                   k ? "synth:mixture" : "softmax");
            // the layout: dec.0.self.wq is (C, C) here (x W) and (out, in) in the file
            const aw_tensor_info *wq = model_find_tensor(first, "dec.0.self.wq");
            const char *key = "\"dec.0.self.wq\":{\"dtype\":\"F32\",\"shape\":[8,8],\"data_offsets\":[";
            const char *at = strstr((const char *)buf + 8, key);
            CHECK(wq && wq->transposed && at, "wq stored transposed with its shape");
            if (wq && at) {
                size_t begin = (size_t)strtoull(at + strlen(key), NULL, 10);
                uint64_t hlen = 0;
                for (int i = 0; i < 8; i++) hlen |= (uint64_t)buf[i] << (8 * i);
                float stored;
                memcpy(&stored, buf + 8 + hlen + begin + (2 * 8 + 5) * sizeof(float), sizeof stored); // (o=2, i=5)
                CHECK(stored == first->params[wq->offset + 5 * 8 + 2], "file (o, i) = W[i][o]");
            }
            model_destroy(again);
        }
        free(buf);
        model_destroy(once), model_destroy(first);
    }
}

static void check_generation(const char *label, aw_model_config c, int trained) {
    aw_model *m = NULL;
    CHECK(model_create(&m, &c) == AW_OK, "%s: create", label);
    if (!m) return;
    const aw_task_spec spec = {AW_TASK_COPY, 4, 5, 0};
    const aw_train_config tc = train_config(3e-3f);
    aw_metrics mt;
    for (int s = 0; s < trained; s++) model_train_step(m, &spec, 8, &tc, &mt);
    const int32_t prompt[3] = {2, 4, 1}, src[4] = {3, 1, 4, 1};
    const int encdec = aw_arch_has_source(c.arch);
    int32_t full[32], cached[32];
    size_t nf = 0, nc = 0;
    for (int mode = 0; mode < 2; mode++) { // greedy, then sampled with a seed
        const float temp = mode ? 0.9f : 0.0f;
        const int top_k = mode ? 3 : 0;
        int s1 = model_generate(m, full, &nf, 20, prompt, encdec ? 1 : 3, encdec ? src : NULL, encdec ? 4 : 0, temp,
                                top_k, 42, -1, 0);
        int s2 = model_generate(m, cached, &nc, 20, prompt, encdec ? 1 : 3, encdec ? src : NULL, encdec ? 4 : 0, temp,
                                top_k, 42, -1, 1);
        const size_t expect = (size_t)c.max_len - (encdec ? 1 : 3) + 1;
        CHECK(s1 == AW_OK && s2 == AW_OK, "%s: generate status %d %d", label, s1, s2);
        CHECK(nf == expect && nc == expect, "%s: generated %zu and %zu tokens, expected %zu (max_len)", label, nf, nc, expect);
        CHECK(nf == nc && memcmp(full, cached, nf * sizeof(int32_t)) == 0, "%s (%s): cached generation differs from full forward",
              label, mode ? "sampled" : "greedy");
    }
    printf("%-48s cached == full forward over %zu tokens (greedy and sampled)\n", label, nc);
    model_destroy(m);
}

static void test_generation(void) {
    aw_model_config c = base_config();
    c.max_len = 12;
    check_generation("generate: softmax decoder", c, 5);
    c.norm = AW_NORM_POST;
    check_generation("generate: softmax post-norm decoder", c, 5);
    c = base_config(), c.max_len = 12, c.form = FORM("linear:elu+1");
    check_generation("generate: linear elu+1 decoder", c, 5);
    c.form = FORM("linear:taylor");
    check_generation("generate: linear taylor decoder", c, 5);
    c = base_config(), c.max_len = 12, c.arch = AW_ARCH_ENCODER_DECODER;
    check_generation("generate: softmax encoder-decoder", c, 5);
    c.form = FORM("linear:relu");
    check_generation("generate: linear relu encoder-decoder", c, 5);
    c = base_config(), c.max_len = 12, c = WITH(c, "local", "window=4");
    check_generation("generate: local (window 4) decoder", c, 5);
    c.arch = AW_ARCH_ENCODER_DECODER;
    check_generation("generate: local (window 4) encoder-decoder", c, 5);
    c = base_config(), c.max_len = 12, c = WITH(c, "strided", "window=2;stride=3");
    check_generation("generate: strided (window 2, stride 3) decoder", c, 5);
    c = base_config(), c.max_len = 12, c.form = FORM("retention");
    check_generation("generate: retention decoder (recurrent state)", c, 5);
    c = WITH(c, "retention", "decay=learned"), c.arch = AW_ARCH_ENCODER_DECODER;
    check_generation("generate: retention encoder-decoder", c, 5);
    c = base_config(), c.max_len = 12, c = WITH(c, "linformer", "k=4"), c.arch = AW_ARCH_ENCODER_DECODER;
    check_generation("generate: linformer encoder-decoder", c, 5);
    // the Synthesizer's own step: every variant, and mixtures with the dot and factorized kinds
    struct {
        const char *name, *form, *opts;
    } synths[] = {
        {"generate: synthesizer dense", "synth:dense", "trainable=true"},
        {"generate: synthesizer random", "synth:random", "trainable=true"},
        {"generate: synthesizer factorized-dense", "synth:factorized-dense", "a=3;b=4;trainable=true"},
        {"generate: synthesizer factorized-random", "synth:factorized-random", "k=3;trainable=true"},
        {"generate: synthesizer mixture (random + dot)", "synth:mixture", "trainable=true;components=random,dot"},
        {"generate: synthesizer mixture (dense, fr, fd)", "synth:mixture",
         "trainable=true;k=2;a=3;b=4;components=dense,factorized-random,factorized-dense"},
    };
    for (size_t i = 0; i < sizeof synths / sizeof synths[0]; i++) {
        c = base_config(), c.max_len = 12, c = WITH(c, synths[i].form, synths[i].opts);
        check_generation(synths[i].name, c, 5);
    }
    c = base_config(), c.max_len = 12, c.arch = AW_ARCH_ENCODER_DECODER, c = WITH(c, "synth:dense", "trainable=true");
    check_generation("generate: synthesizer dense encoder-decoder", c, 5);
    c = base_config(), c.max_len = 12, c.arch = AW_ARCH_GRU, c.layers = 1;
    check_generation("generate: gru", c, 5);
    c.arch = AW_ARCH_GRU_ATTENTION;
    check_generation("generate: gru-attention", c, 5);
}

// The GRU archs: checkpoint round trip (nn.GRU's shapes in the file), and learning reverse.
// Trains c on reverse of 3 symbols out of 4 for `steps` steps; the held-out loss must fall below
// max_loss_ratio of its start and the accuracy rise above min_acc.
static void learn_reverse3(const char *label, aw_model_config c, int steps, double max_loss_ratio, double min_acc) {
    aw_model *m = NULL;
    CHECK(model_create(&m, &c) == AW_OK, "%s: model_create: %s", label, aw_error_message());
    if (!m) return;
    const aw_task_spec spec = {AW_TASK_REVERSE, 3, 4, 0};
    const aw_train_config tc = train_config(1e-2f);
    aw_metrics first, mt, ev;
    model_evaluate(m, &spec, 32, 2, 1, &first);
    for (int s = 0; s < steps; s++) model_train_step(m, &spec, 16, &tc, &mt);
    model_evaluate(m, &spec, 32, 2, 1, &ev);
    printf("%s: reverse(3) accuracy %.3f -> %.3f, loss %.3f -> %.3f after %d steps\n", label, first.accuracy,
           ev.accuracy, first.loss, ev.loss, steps);
    CHECK(ev.loss < first.loss * max_loss_ratio && ev.accuracy > min_acc, "%s: reverse(3) did not learn", label);
    model_destroy(m);
}

static void test_rnn(void) {
    for (int k = 0; k < 2; k++) {
        aw_model_config c = base_config();
        c.arch = k ? AW_ARCH_GRU_ATTENTION : AW_ARCH_GRU, c.layers = 1;
        aw_model *a = NULL, *r = NULL;
        CHECK(model_create(&a, &c) == AW_OK, "create gru");
        if (!a) return;
        const aw_task_spec spec = {AW_TASK_REVERSE, 4, 5, 0};
        const aw_train_config tc = train_config(3e-3f);
        aw_metrics mt, ea, er;
        for (int s = 0; s < 3; s++) model_train_step(a, &spec, 4, &tc, &mt);
        size_t bytes = 0, bytes2 = 0;
        checkpoint_size(a, 1, &bytes);
        uint8_t *buf = malloc(bytes), *buf2 = malloc(bytes);
        CHECK(checkpoint_write(a, 1, buf, bytes) == AW_OK && checkpoint_read(&r, buf, bytes) == AW_OK && r, "gru save/load");
        if (r) {
            CHECK(memcmp(r->params, a->params, a->n_params * sizeof(float)) == 0, "gru params round-trip");
            checkpoint_size(r, 1, &bytes2);
            CHECK(bytes2 == bytes && checkpoint_write(r, 1, buf2, bytes) == AW_OK && memcmp(buf, buf2, bytes) == 0,
                  "gru: re-saving gives the same bytes");
            model_evaluate(a, &spec, 4, 2, 9, &ea), model_evaluate(r, &spec, 4, 2, 9, &er);
            CHECK(ea.loss == er.loss, "gru: loaded model evaluates identically");
            model_destroy(r);
        }
        // nn.GRU's layout: weight_ih_l0 (3C, in), weight_hh_l0 (3C, C)
        CHECK(strstr((const char *)buf + 8, "\"dec.gru.weight_ih\":{\"dtype\":\"F32\",\"shape\":[24,16]") &&
                  strstr((const char *)buf + 8, "\"enc.gru.weight_hh\":{\"dtype\":\"F32\",\"shape\":[24,8]") &&
                  strstr((const char *)buf + 8, "\"enc.gru.bias_ih\":{\"dtype\":\"F32\",\"shape\":[24]"),
              "gru tensors stored with nn.GRU's shapes");
        if (k) CHECK(strstr((const char *)buf + 8, "\"dec.attn.v\":{\"dtype\":\"F32\",\"shape\":[8]") != NULL, "v stored");
        free(buf), free(buf2);
        model_destroy(a);
    }
    for (int k = 0; k < 2; k++) { // learning: reverse of 3 symbols out of 4
        aw_model_config c = base_config();
        c.arch = k ? AW_ARCH_GRU_ATTENTION : AW_ARCH_GRU, c.layers = 1, c.vocab = 6, c.d_model = 16;
        learn_reverse3(k ? "learning (gru-attention)" : "learning (gru)", c, 200, 0.3, 0.8);
    }
}

static void test_learning(void) {
    // a small sanity check (the real >= 99% reverse run is in the node suite and experiment)
    aw_model_config c = base_config();
    c.vocab = 6, c.d_model = 16, c.heads = 2, c.layers = 1, c.d_ff = 32, c.max_len = 8;
    learn_reverse3("learning", c, 150, 0.5, 0.9);
}

// --curve: the loss curve that tests/node/model.test.js compares with the wasm build's (same
// config, task, seed and hyperparameters there).
static int print_curve(void) {
    aw_model_config c = base_config();
    c.vocab = 16, c.d_model = 32, c.heads = 4, c.layers = 2, c.d_ff = 64, c.max_len = 24, c.seed = 3;
    aw_model *m = NULL;
    if (model_create(&m, &c)) return 1;
    const aw_task_spec spec = {AW_TASK_SORT, 8, 10, 0};
    const aw_train_config tc = {3e-3f, 0.9f, 0.98f, 1e-8f, 0.01f, 1.0f};
    for (int s = 0; s < 30; s++) {
        aw_metrics mt;
        if (model_train_step(m, &spec, 8, &tc, &mt)) return 1;
        printf("%.9g\n", mt.loss);
    }
    model_destroy(m);
    return 0;
}

// One window of the chars task made twice from the same seed: plain with set(0), tgt with set(every);
// set(0) again after it, so no setting outlives the pair.
static void window_pair(void (*set)(uint32_t), uint32_t every, const aw_task_spec *s, uint64_t seed, int32_t *plain,
                        int32_t *tgt) {
    int32_t src[4];
    aw_rng a, b;
    aw_rng_seed(&a, seed), aw_rng_seed(&b, seed);
    set(0);
    task_example(src, plain, s, &a);
    set(every);
    task_example(src, tgt, s, &b);
    set(0);
}

// The chars task's --repeats: one training window in N holds a passage of itself read again (12 to a
// quarter of the window's characters, wholly inside it, later than the original), the rest of the
// window is the text as it is; held-out windows never change. And --twice and --letters: a window that
// starts with a passage of its text, or distinct random letters, read twice.
static void test_text_repeats(void) {
    enum { LEN = 64, N = 4000 };
    static char train[N], held[N];
    for (int i = 0; i < N; i++) train[i] = held[i] = (char)('a' + (i * 7 + i / 26) % 26); // no 12-letter repeats nearby
    CHECK(task_set_text(train, N, held, N) == AW_OK, "task_set_text");
    int32_t plain[LEN + 1], tgt[LEN + 1];
    for (int heldout = 0; heldout <= 1; heldout++) {
        aw_task_spec s = {AW_TASK_CHARS, LEN, 0, heldout};
        int repeated = 0;
        for (int w = 0; w < 400; w++) {
            window_pair(task_set_text_repeats, 4, &s, (uint64_t)w + 1, plain, tgt);
            // the differing positions form one run [lo, hi) that equals an earlier run of the window
            int lo = -1, hi = -1;
            for (int i = 0; i <= LEN; i++)
                if (tgt[i] != plain[i]) hi = i + 1, lo = lo < 0 ? i : lo;
            if (lo < 0) continue;
            repeated++;
            CHECK(!heldout, "a held-out window changed (window %d)", w);
            int found = 0;
            for (int span = hi - lo; span <= LEN / 4 && !found; span++)
                for (int b0 = hi - span; b0 <= lo && b0 + span <= LEN + 1 && !found; b0++)
                    for (int a0 = 0; a0 + span <= b0 && !found; a0++)
                        found = span >= 12 && memcmp(tgt + a0, tgt + b0, (size_t)span * sizeof *tgt) == 0;
            CHECK(found, "window %d: positions %d..%d changed but repeat no earlier passage of 12 to %d", w, lo, hi - 1, LEN / 4);
        }
        if (!heldout) CHECK(repeated > 60 && repeated < 140, "%d of 400 training windows repeat a passage (want about 100)", repeated);
    }
    // --twice: a window that changed is its first span characters (16 to half the window), the same
    // again, then the plain window's text from span on; held-out windows never change
    for (int heldout = 0; heldout <= 1; heldout++) {
        aw_task_spec s = {AW_TASK_CHARS, LEN, 0, heldout};
        int twice = 0, spans_small = 0, spans_large = 0;
        for (int w = 0; w < 600; w++) {
            window_pair(task_set_text_twice, 3, &s, (uint64_t)w + 7, plain, tgt);
            if (memcmp(tgt, plain, sizeof tgt) == 0) continue;
            twice++;
            CHECK(!heldout, "a held-out window changed (window %d)", w);
            int span = 0;
            for (int k = 16; k <= (LEN + 1) / 2 && !span; k++)
                if (memcmp(tgt, plain, (size_t)k * sizeof *tgt) == 0 && memcmp(tgt + k, plain, (size_t)k * sizeof *tgt) == 0 &&
                    memcmp(tgt + 2 * k, plain + k, (size_t)(LEN + 1 - 2 * k) * sizeof *tgt) == 0)
                    span = k;
            CHECK(span, "window %d: not a passage of 16 to %d read twice, then the text after it", w, (LEN + 1) / 2);
            spans_small += span && span < 24, spans_large += span > 24;
        }
        if (!heldout) {
            CHECK(twice > 150 && twice < 250, "%d of 600 training windows read a passage twice (want about 200)", twice);
            CHECK(spans_small > 10 && spans_large > 10, "the passage's length varies (%d short, %d long)", spans_small, spans_large);
        }
    }
    // --letters: 8 to 24 distinct random lowercase letters, the same again, then the plain window
    for (int heldout = 0; heldout <= 1; heldout++) {
        aw_task_spec s = {AW_TASK_CHARS, LEN, 0, heldout};
        int changed = 0, short_spans = 0;
        for (int w = 0; w < 400; w++) {
            window_pair(task_set_text_letters, 2, &s, (uint64_t)w + 11, plain, tgt);
            if (memcmp(tgt, plain, sizeof tgt) == 0) continue;
            changed++;
            CHECK(!heldout, "a held-out window changed (window %d)", w);
            int span = 0;
            for (int k = 8; k <= (LEN + 1) / 2 && !span; k++) {
                int ok = memcmp(tgt, tgt + k, (size_t)k * sizeof *tgt) == 0 &&
                         memcmp(tgt + 2 * k, plain, (size_t)(LEN + 1 - 2 * k) * sizeof *tgt) == 0;
                for (int i = 0; i < k && ok; i++) ok = token_to_char(tgt[i]) >= 'a' && token_to_char(tgt[i]) <= 'z';
                if (ok) span = k;
            }
            CHECK(span && span <= 24, "window %d: not 8 to 24 random letters read twice, then the window's text (%d)", w, span);
            for (int i = 0; i < span; i++)
                for (int j = 0; j < i; j++) CHECK(tgt[i] != tgt[j], "window %d: letters %d and %d are the same", w, j, i);
            short_spans += span && span < 16;
        }
        if (!heldout) CHECK(changed > 150 && changed < 250 && short_spans > 10, "%d of 400 windows changed, %d short", changed, short_spans);
    }
    task_set_text(NULL, 0, NULL, 0);
}

// layerForms through the config builder (the keys createModel sends): a hybrid of three forms is
// created, gradient-checked, saved and loaded to the same bytes, and generates with each layer's
// own cache as the full forward does; the per-layer options buffer refuses, never overflows.
static void test_layer_forms(void) {
    static const char *const fields[][2] = {
        {"vocab", "8"}, {"dModel", "8"}, {"heads", "2"}, {"kvHeads", "1"}, {"layers", "3"}, {"maxLen", "12"},
        {"positional", "rope"}, {"layerForms", "3"}, {"layerForms.0.attention", "gated-delta"},
        {"layerForms.0.attentionOptions.chunk", "4"}, {"layerForms.1.attention", "softmax"},
        {"layerForms.2.attentionOptions.window", "3"}, {"layerForms.2.attention", "local"}};
    aw_config_builder *b = malloc(sizeof *b);
    aw_model_config c;
    config_builder_init(b);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CHECK(config_builder_set(b, fields[i][0], fields[i][1]) == AW_OK, "set %s: %s", fields[i][0], aw_error_message());
    CHECK(config_builder_finish(b, &c) == AW_OK && c.layer_forms == 1, "finish: %s", aw_error_message());
    aw_model *m = NULL;
    CHECK(model_create(&m, &c) == AW_OK && m, "create: %s", aw_error_message());
    if (m) {
        CHECK(strcmp(m->self_form[0].form->name, "gated-delta") == 0 && strcmp(m->self_form[2].form->name, "local") == 0,
              "each layer's form");
        aw_grad_check gc;
        CHECK(model_grad_check(m, 2, 6, 0, 77, NULL, 1.0, &gc) == AW_OK, "grad check");
        REPORT("layerForms gated-delta/softmax/local: grad check", gc.error, TOL_GRAD_CHECK);
        size_t bytes = 0, bytes2 = 0;
        checkpoint_size(m, 1, &bytes);
        uint8_t *buf = malloc(bytes), *buf2 = malloc(bytes);
        aw_model *r = NULL;
        CHECK(checkpoint_write(m, 1, buf, bytes) == AW_OK && checkpoint_read(&r, buf, bytes) == AW_OK && r, "save/load");
        if (r) {
            checkpoint_size(r, 1, &bytes2);
            CHECK(bytes2 == bytes && checkpoint_write(r, 1, buf2, bytes) == AW_OK && memcmp(buf, buf2, bytes) == 0,
                  "re-saving a loaded hybrid gives the same bytes");
            model_destroy(r);
        }
        free(buf), free(buf2);
        const int32_t prompt[3] = {1, 5, 2};
        int32_t cached[16], full[16];
        size_t nc = 0, nf = 0;
        CHECK(model_generate(m, cached, &nc, 12, prompt, 3, NULL, 0, 1.0f, 0, 5, -1, 1) == AW_OK &&
                  model_generate(m, full, &nf, 12, prompt, 3, NULL, 0, 1.0f, 0, 5, -1, 0) == AW_OK && nc == nf &&
                  memcmp(cached, full, nc * sizeof(int32_t)) == 0, "cached generation of a hybrid = the full forward");
        model_destroy(m);
    }
    // every known option name on every layer: more than the buffer holds, refused with a message
    static const char *const names[] = {"window", "stride", "trainable", "a", "b", "k", "components", "decay", "mode", "chunk"};
    config_builder_init(b);
    int refused = 0;
    for (int l = 0; l < AW_MAX_LAYERS && !refused; l++)
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !refused; i++) {
            char key[64];
            snprintf(key, sizeof key, "layerForms.%d.attentionOptions.%s", l, names[i]);
            aw_clear_error();
            refused = config_builder_set(b, key, "2") != AW_OK;
        }
    CHECK(refused && strstr(aw_error_message(), "too many attentionOptions"), "a full buffer refuses: %s", aw_error_message());
    config_builder_init(b);
    aw_clear_error();
    CHECK(config_builder_set(b, "layerForms.32.attention", "softmax") == AW_ERR_ARG &&
              strstr(aw_error_message(), "at most 32 layers"), "layer 32 refused: %s", aw_error_message());
    free(b);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--curve") == 0) return print_curve();
    test_linear_op();
    test_layernorm_op();
    test_relu_embedding_ops();
    test_crossentropy_op();
    test_softmax_attention_backward();
    test_softmax_attention_backward_flash();
    test_model_grads();
    test_config_errors();
    test_size_overflow();
    test_determinism_and_checkpoint();
    test_resume();
    test_generation();
    test_learning();
    test_rnn();
    test_text_repeats();
    test_layer_forms();
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
