// synthesizer.c: Synthesizer attention layers (Dense, Random, Factorized Dense, Factorized Random,
// Mixture): create/destroy, the fast forward (matmul kernels + row softmax, saving what the
// backward needs), the naive double-precision reference forward, and the backward.
// Formulas: docs/attention-forms.md section 3; shapes and conventions: synthesizer.h.
#include "synthesizer.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- size table ---------------------------------------------------------------------

static const char *const KIND_NAMES[] = {"dense", "random", "factorized-dense", "factorized-random", "mixture", "dot"};

// a * b into *out; 0 when it overflows size_t (32 bits in wasm32).
static int mul_ok(size_t *out, size_t a, size_t b) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

typedef struct {
    const char *name;
    size_t rows, cols; // one head's tensor is (rows, cols); the whole tensor (heads, rows, cols)
    float init;        // U(-init, init); 0 = zeros
} tensor_spec;

static float xavier(size_t fan_in, size_t fan_out) { return sqrtf(6.0f / (float)(fan_in + fan_out)); }

// The tensors of one logits source, in their order in params. Returns how many (0 for 'dot').
static size_t kind_tensors(int kind, const aw_synthesizer_config *c, tensor_spec *t) {
    const size_t d = c->d, L = c->max_len;
    switch (kind) {
    case AW_SYNTH_DENSE:
        t[0] = (tensor_spec){"W1", d, d, xavier(d, d)};
        t[1] = (tensor_spec){"b1", 1, d, 0.0f};
        t[2] = (tensor_spec){"W2", d, L, xavier(d, L)};
        t[3] = (tensor_spec){"b2", 1, L, 0.0f};
        return 4;
    case AW_SYNTH_RANDOM:
        t[0] = (tensor_spec){"R", L, L, 1.0f};
        return 1;
    case AW_SYNTH_FACTORIZED_DENSE:
        t[0] = (tensor_spec){"W1a", d, d, xavier(d, d)};
        t[1] = (tensor_spec){"b1a", 1, d, 0.0f};
        t[2] = (tensor_spec){"W2a", d, c->a, xavier(d, c->a)};
        t[3] = (tensor_spec){"W1b", d, d, xavier(d, d)};
        t[4] = (tensor_spec){"b1b", 1, d, 0.0f};
        t[5] = (tensor_spec){"W2b", d, c->b, xavier(d, c->b)};
        return 6;
    case AW_SYNTH_FACTORIZED_RANDOM: {
        const float r = powf(3.0f / (float)c->k, 0.25f);
        t[0] = (tensor_spec){"R1", L, c->k, r};
        t[1] = (tensor_spec){"R2", L, c->k, r};
        return 2;
    }
    default:
        return 0;
    }
}

static int has_kind(const aw_synthesizer *s, int kind) {
    for (size_t c = 0; c < s->n_comp; c++)
        if (s->comp_kind[c] == kind) return 1;
    return 0;
}

// Tensor i of component c, head hd: its (rows, cols) block in params (or grads when g != 0).
static float *tensor_at(const aw_synthesizer *s, int g, size_t c, size_t i, size_t hd) {
    const aw_synth_tensor *t = &s->tensors[s->comp_tensor[c] + i];
    return (g ? s->grads : s->params) + t->offset + hd * (t->size / s->cfg.heads);
}
#define PARAM(c, i, hd) tensor_at(s, 0, (c), (i), (hd))
#define GRAD(c, i, hd) tensor_at(s, 1, (c), (i), (hd))

// ---- deterministic init: splitmix64, one stream per tensor ---------------------------

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// w[i] = a * u, u uniform on [-1, 1) from the top 24 bits: every step is exact or one IEEE
// rounding, so wasm (SIMD or not) and native give identical numbers.
static void init_uniform(float *w, size_t count, float a, uint32_t seed, int kind, size_t index) {
    uint64_t state = ((uint64_t)seed << 32) ^ ((uint64_t)(kind + 1) << 8) ^ (uint64_t)index;
    state = splitmix64(&state); // scatter neighbouring stream ids
    for (size_t i = 0; i < count; i++) {
        const float u = (float)(splitmix64(&state) >> 40) * 0x1p-23f - 1.0f;
        w[i] = a * u;
    }
}

// ---- create / destroy ------------------------------------------------------------------

// 1 when c is a valid config; else 0, with the reason recorded (aw_fail).
static int check_config(const aw_synthesizer_config *c) {
    if (c->d == 0 || c->max_len == 0 || c->heads == 0)
        return !aw_fail(AW_ERR_ARG, "synthesizer: d, maxLen and heads must be positive");
    if (c->variant < AW_SYNTH_DENSE || c->variant > AW_SYNTH_MIXTURE)
        return !aw_fail(AW_ERR_ARG, "synthesizer: unknown variant %d", c->variant);
    int kinds[AW_SYNTH_MAX_COMPONENTS], nk = 0;
    if (c->variant == AW_SYNTH_MIXTURE) {
        if (c->n_components == 0 || c->n_components > AW_SYNTH_MAX_COMPONENTS)
            return !aw_fail(AW_ERR_ARG, "synthesizer: a mixture needs 1 to %d components, got %zu",
                            AW_SYNTH_MAX_COMPONENTS, c->n_components);
        for (size_t i = 0; i < c->n_components; i++) {
            const int kd = c->components[i];
            if (kd < AW_SYNTH_DENSE || kd > AW_SYNTH_DOT || kd == AW_SYNTH_MIXTURE)
                return !aw_fail(AW_ERR_ARG, "synthesizer: components[%zu] is not a component kind", i);
            for (int j = 0; j < nk; j++)
                if (kinds[j] == kd) return !aw_fail(AW_ERR_ARG, "synthesizer: components must be distinct");
            kinds[nk++] = kd;
        }
    } else {
        kinds[nk++] = c->variant;
    }
    for (int j = 0; j < nk; j++) {
        size_t ab;
        if (kinds[j] == AW_SYNTH_FACTORIZED_DENSE &&
            (c->a == 0 || c->b == 0 || !mul_ok(&ab, c->a, c->b) || ab != c->max_len))
            return !aw_fail(AW_ERR_ARG, "synthesizer: factorized-dense needs a * b = maxLen (%zu), got %zu * %zu",
                            c->max_len, c->a, c->b);
        if (kinds[j] == AW_SYNTH_FACTORIZED_RANDOM && c->k == 0)
            return !aw_fail(AW_ERR_ARG, "synthesizer: factorized-random needs k >= 1");
    }
    return 1;
}

int synthesizer_create(aw_synthesizer **out, const aw_synthesizer_config *cfg) {
    if (!out) return AW_ERR_ARG;
    *out = NULL;
    if (!cfg || !check_config(cfg)) return AW_ERR_ARG;
    aw_synthesizer *s = calloc(1, sizeof *s);
    if (!s) return AW_ERR_NOMEM;
    s->cfg = *cfg;
    const int mixture = cfg->variant == AW_SYNTH_MIXTURE;
    s->n_comp = mixture ? cfg->n_components : 1;
    for (size_t c = 0; c < s->n_comp; c++) s->comp_kind[c] = mixture ? cfg->components[c] : cfg->variant;

    // the size table: each component's tensors, then (mixture) alphaLogits
    size_t offset = 0;
    tensor_spec spec[8];
    int overflow = 0;
    for (size_t c = 0; c < s->n_comp; c++) {
        const int kind = s->comp_kind[c];
        const size_t nt = kind_tensors(kind, cfg, spec);
        s->comp_tensor[c] = s->n_tensors;
        for (size_t i = 0; i < nt; i++) {
            aw_synth_tensor *t = &s->tensors[s->n_tensors++];
            size_t per_head;
            overflow |= !mul_ok(&per_head, spec[i].rows, spec[i].cols) || !mul_ok(&t->size, per_head, cfg->heads);
            // "<kind>.<name>" inside a mixture, the bare name otherwise
            size_t len = 0;
            if (mixture) {
                for (const char *p = KIND_NAMES[kind]; *p; p++) t->name[len++] = *p;
                t->name[len++] = '.';
            }
            for (const char *p = spec[i].name; *p; p++) t->name[len++] = *p;
            t->name[len] = '\0';
            t->rows = spec[i].rows, t->cols = spec[i].cols;
            t->offset = offset;
            overflow |= t->size > SIZE_MAX / 2 - offset; // offset <= SIZE_MAX / 2 so far
            offset += t->size;
        }
    }
    if (mixture) {
        aw_synth_tensor *t = &s->tensors[s->n_tensors];
        s->alpha_tensor = s->n_tensors++;
        memcpy(t->name, "alphaLogits", sizeof "alphaLogits");
        t->offset = offset;
        t->size = cfg->heads * s->n_comp;
        t->rows = 1, t->cols = s->n_comp;
        offset += t->size;
    }
    s->n_params = offset;
    size_t bytes;
    if (overflow || !mul_ok(&bytes, offset, 2 * sizeof(float))) {
        free(s);
        return AW_ERR_NOMEM;
    }
    // params and grads: one allocation carved in two
    s->params = bytes ? malloc(bytes) : NULL;
    if (bytes && !s->params) {
        free(s);
        return AW_ERR_NOMEM;
    }
    s->owns_params = 1;
    s->grads = s->params + offset;
    memset(s->grads, 0, offset * sizeof(float));
    for (size_t c = 0; c < s->n_comp; c++) {
        const int kind = s->comp_kind[c];
        const size_t nt = kind_tensors(kind, cfg, spec);
        for (size_t i = 0; i < nt; i++) {
            const aw_synth_tensor *t = &s->tensors[s->comp_tensor[c] + i];
            if (spec[i].init == 0.0f) memset(s->params + t->offset, 0, t->size * sizeof(float));
            else init_uniform(s->params + t->offset, t->size, spec[i].init, cfg->seed, kind, i);
        }
    }
    if (mixture) memset(s->params + s->tensors[s->alpha_tensor].offset, 0, s->tensors[s->alpha_tensor].size * sizeof(float));
    *out = s;
    return AW_OK;
}

void synthesizer_destroy(aw_synthesizer *s) {
    if (!s) return;
    if (s->owns_params) free(s->params); // grads share this allocation
    free(s->acts);
    free(s);
}

void synthesizer_bind(aw_synthesizer *s, float *params, float *grads) {
    if (s->n_params) {
        memcpy(params, s->params, s->n_params * sizeof(float));
        memset(grads, 0, s->n_params * sizeof(float));
    }
    if (s->owns_params) free(s->params);
    s->params = params, s->grads = grads, s->owns_params = 0;
}

void synthesizer_zero_grad(aw_synthesizer *s) {
    if (s && s->n_params) memset(s->grads, 0, s->n_params * sizeof(float));
}

int synthesizer_tensor_index(const aw_synthesizer *s, const char *name) {
    for (size_t i = 0; s && name && i < s->n_tensors; i++)
        if (strcmp(s->tensors[i].name, name) == 0) return (int)i;
    return -1;
}

// alphas (h, C) = softmax(alphaLogits[h]), in double for the reference and float for the fast path.
static void alphas_double(const aw_synthesizer *s, size_t hd, double *al) {
    const size_t C = s->n_comp;
    if (s->cfg.variant != AW_SYNTH_MIXTURE) {
        al[0] = 1.0;
        return;
    }
    const float *w = s->params + s->tensors[s->alpha_tensor].offset + hd * C;
    double mx = -INFINITY, sum = 0.0;
    for (size_t c = 0; c < C; c++) mx = w[c] > mx ? w[c] : mx;
    for (size_t c = 0; c < C; c++) sum += al[c] = exp(w[c] - mx);
    for (size_t c = 0; c < C; c++) al[c] /= sum;
}

int synthesizer_alphas(const aw_synthesizer *s, float *alphas) {
    if (!s || !alphas) return AW_ERR_ARG;
    if (s->cfg.variant != AW_SYNTH_MIXTURE) return AW_ERR_STATE;
    for (size_t hd = 0; hd < s->cfg.heads; hd++) {
        const float *w = s->params + s->tensors[s->alpha_tensor].offset + hd * s->n_comp;
        for (size_t c = 0; c < s->n_comp; c++)
            if (!(w[c] - w[c] == 0.0f)) return aw_fail(AW_ERR_NONFINITE, "alphaLogits holds a NaN or an infinity");
        double al[AW_SYNTH_MAX_COMPONENTS];
        alphas_double(s, hd, al);
        for (size_t c = 0; c < s->n_comp; c++) alphas[hd * s->n_comp + c] = (float)al[c];
    }
    return AW_OK;
}

// Shared argument checks of the forwards.
static int check_forward_args(const aw_synthesizer *s, const float *out, const float *x, const float *v,
                              const float *q, const float *k, size_t n, size_t dv, size_t dqk) {
    const size_t h = s->cfg.heads;
    if (!out || !v || n == 0 || n > s->cfg.max_len || dv == 0 || dv % h) return 0;
    if ((has_kind(s, AW_SYNTH_DENSE) || has_kind(s, AW_SYNTH_FACTORIZED_DENSE)) && !x) return 0; // X feeds them
    if (has_kind(s, AW_SYNTH_DOT) && (!q || !k || dqk == 0 || dqk % h)) return 0;
    return 1;
}

// ---- fast forward ----------------------------------------------------------------------

// H (n, d) = relu(X W1 + b1); x (n, d), W1 (d, d), b1 (d).
static void dense_hidden(float *H, const float *x, const float *W1, const float *b1, size_t n, size_t d) {
    aw_matmul_nn(H, x, W1, n, d, d, d, d, d, 0);
    for (size_t i = 0; i < n; i++) {
        float *hr = H + i * d;
        for (size_t j = 0; j < d; j++) {
            const float z = hr[j] + b1[j];
            hr[j] = z < 0.0f ? 0.0f : z; // a NaN passes through, so the finiteness check sees it
        }
    }
}

// B (n, n) = the logits of component c for head hd; saves the intermediates the backward needs.
static void component_logits(aw_synthesizer *s, float *B, size_t c, size_t hd, const float *x, const float *q,
                             const float *k, size_t n, size_t dqk) {
    const size_t d = s->cfg.d, L = s->cfg.max_len, h = s->cfg.heads;
    switch (s->comp_kind[c]) {
    case AW_SYNTH_DENSE: { // B = relu(X W1 + b1) W2[:, :n] + b2[:n]
        float *H = s->dense_h + hd * n * d;
        dense_hidden(H, x, PARAM(c, 0, hd), PARAM(c, 1, hd), n, d);
        aw_matmul_nn(B, H, PARAM(c, 2, hd), n, n, d, d, L, n, 0);
        const float *b2 = PARAM(c, 3, hd);
        for (size_t i = 0; i < n; i++) aw_axpy(B + i * n, 1.0f, b2, n);
        break;
    }
    case AW_SYNTH_RANDOM: { // B = R[:n, :n]
        const float *R = PARAM(c, 0, hd);
        for (size_t i = 0; i < n; i++) memcpy(B + i * n, R + i * L, n * sizeof(float));
        break;
    }
    case AW_SYNTH_FACTORIZED_DENSE: { // B[i, j] = Ba[i, j / b] * Bb[i, j % b]
        const size_t a = s->cfg.a, b = s->cfg.b;
        float *Ha = s->fd_ha + hd * n * d, *Hb = s->fd_hb + hd * n * d;
        float *Ba = s->fd_ba + hd * n * a, *Bb = s->fd_bb + hd * n * b;
        dense_hidden(Ha, x, PARAM(c, 0, hd), PARAM(c, 1, hd), n, d);
        aw_matmul_nn(Ba, Ha, PARAM(c, 2, hd), n, a, d, d, a, a, 0);
        dense_hidden(Hb, x, PARAM(c, 3, hd), PARAM(c, 4, hd), n, d);
        aw_matmul_nn(Bb, Hb, PARAM(c, 5, hd), n, b, d, d, b, b, 0);
        for (size_t i = 0; i < n; i++) {
            const float *ba = Ba + i * a, *bb = Bb + i * b;
            float *br = B + i * n;
            for (size_t p = 0, j = 0; j < n; p++) // j = p * b + t: block p repeats Ba[i, p]
                for (size_t t = 0; t < b && j < n; t++, j++) br[j] = ba[p] * bb[t];
        }
        break;
    }
    case AW_SYNTH_FACTORIZED_RANDOM: // B = R1[:n] R2[:n]^T
        aw_matmul_nt(B, PARAM(c, 0, hd), PARAM(c, 1, hd), n, n, s->cfg.k, s->cfg.k, s->cfg.k, n, 0);
        break;
    case AW_SYNTH_DOT: { // B = Q_h K_h^T / sqrt(dqk / h)
        const size_t dh = dqk / h;
        aw_matmul_nt(B, q + hd * dh, k + hd * dh, n, n, dh, dqk, dqk, n, 0);
        aw_scale(B, B, 1.0f / sqrtf((float)dh), n * n);
        break;
    }
    }
}

// Carves s->acts for a forward of n tokens; grows it when needed.
static int carve_acts(aw_synthesizer *s, size_t n) {
    const size_t h = s->cfg.heads, d = s->cfg.d, C = s->n_comp;
    const int mixture = s->cfg.variant == AW_SYNTH_MIXTURE;
    size_t nn, hnn, nd, hnd, hn, total = 0, sizes[7] = {0};
    if (!mul_ok(&nn, n, n) || !mul_ok(&hnn, nn, h) || !mul_ok(&nd, n, d) || !mul_ok(&hnd, nd, h) || !mul_ok(&hn, h, n))
        return AW_ERR_NOMEM;
    sizes[0] = hnn;                                       // probs
    if (mixture && !mul_ok(&sizes[1], hnn, C)) return AW_ERR_NOMEM; // comp_logits
    if (has_kind(s, AW_SYNTH_DENSE)) sizes[2] = hnd;      // dense_h
    if (has_kind(s, AW_SYNTH_FACTORIZED_DENSE)) {
        sizes[3] = sizes[4] = hnd;                        // fd_ha, fd_hb
        if (!mul_ok(&sizes[5], hn, s->cfg.a) || !mul_ok(&sizes[6], hn, s->cfg.b)) return AW_ERR_NOMEM; // fd_ba, fd_bb
    }
    for (int i = 0; i < 7; i++) {
        if (total > SIZE_MAX / 8 - sizes[i]) return AW_ERR_NOMEM;
        total += sizes[i];
    }
    total += h * C; // alphas
    if (total > s->acts_cap) {
        if (total > SIZE_MAX / sizeof(float)) return AW_ERR_NOMEM;
        float *p = malloc(total * sizeof(float));
        if (!p) return AW_ERR_NOMEM;
        free(s->acts);
        s->acts = p;
        s->acts_cap = total;
    }
    float *p = s->acts;
    float **slots[7] = {&s->probs, &s->comp_logits, &s->dense_h, &s->fd_ha, &s->fd_hb, &s->fd_ba, &s->fd_bb};
    for (int i = 0; i < 7; i++) {
        *slots[i] = sizes[i] ? p : NULL;
        p += sizes[i];
    }
    s->alphas = p;
    return AW_OK;
}

static int all_finite(const float *x, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (!(x[i] - x[i] == 0.0f)) return 0;
    return 1;
}

// Threads (src/kernels/parallel.h): one item per head. A head writes only its own blocks: probs,
// comp_logits, dense_h and fd_* at hd (carve_acts gives every head its slice), the weights' block
// hd and the column block hd of out. A non-finite logit is recorded in the job (the first failure
// wins) with its message (aw_fail, whose record any thread may claim: src/kernels/status.c).
typedef struct {
    aw_synthesizer *s;
    float *out, *weights;
    const float *x, *v, *q, *k;
    size_t n, dv, dqk;
    int causal, status;
} forward_job;

// A head's logits hold a NaN or an infinity: the call fails with this message (forward and step).
static void fail_nonfinite_logits(int *status) {
    aw_first_failure(status, aw_fail(AW_ERR_NONFINITE, "a logit is NaN or infinite; check the values written into "
                                                       "layer.params (or scale the inputs down)"));
}

static void forward_head(void *ctx, size_t hd) {
    forward_job *j = ctx;
    aw_synthesizer *s = j->s;
    const size_t n = j->n, dv = j->dv, C = s->n_comp, dvh = dv / s->cfg.heads, nn = n * n;
    if (__atomic_load_n(&j->status, __ATOMIC_ACQUIRE)) return; // another head failed: the call fails
    float *P = s->probs + hd * nn; // (n, n): B, then A in place
    if (s->cfg.variant != AW_SYNTH_MIXTURE) {
        component_logits(s, P, 0, hd, j->x, j->q, j->k, n, j->dqk);
    } else { // B = sum_c alpha_c B_c; each B_c kept for the alpha gradient
        for (size_t c = 0; c < C; c++) {
            float *Bc = s->comp_logits + (hd * C + c) * nn;
            component_logits(s, Bc, c, hd, j->x, j->q, j->k, n, j->dqk);
            if (c == 0) aw_scale(P, Bc, s->alphas[hd * C], nn);
            else aw_axpy(P, s->alphas[hd * C + c], Bc, nn);
        }
    }
    if (!all_finite(P, nn)) {
        fail_nonfinite_logits(&j->status);
        return;
    }
    if (j->causal)
        for (size_t i = 0; i + 1 < n; i++)
            for (size_t c = i + 1; c < n; c++) P[i * n + c] = -INFINITY;
    aw_softmax_rows(P, n, n, n);
    aw_matmul_nn(j->out + hd * dvh, P, j->v + hd * dvh, n, dvh, n, n, dv, dv, 0);
    if (j->weights) memcpy(j->weights + hd * nn, P, nn * sizeof(float));
}

int synthesizer_forward(aw_synthesizer *s, float *out, float *weights, const float *x, const float *v,
                        const float *q, const float *k, size_t n, size_t dv, size_t dqk, int causal) {
    if (!s || !check_forward_args(s, out, x, v, q, k, n, dv, dqk)) return AW_ERR_ARG;
    s->has_forward = 0;
    const int status = carve_acts(s, n);
    if (status != AW_OK) return status;
    const size_t h = s->cfg.heads, C = s->n_comp;
    for (size_t hd = 0; hd < h; hd++) {
        double al[AW_SYNTH_MAX_COMPONENTS];
        alphas_double(s, hd, al);
        for (size_t c = 0; c < C; c++) s->alphas[hd * C + c] = (float)al[c];
    }
    forward_job j = {s, out, weights, x, v, q, k, n, dv, dqk, causal, AW_OK};
    aw_parallel_for(h, forward_head, &j);
    if (j.status != AW_OK) return j.status;
    s->n = n, s->dv = dv, s->dqk = dqk, s->causal = causal != 0;
    s->has_forward = 1;
    return AW_OK;
}

// ---- one causal step (generation) --------------------------------------------------------

// One head's scratch: p (max_len), row (max_len), tmp (2 d + a + b).
static size_t step_head_floats(const aw_synthesizer *s) {
    return aw_size_add(aw_size_mul(2, s->cfg.max_len), aw_size_add(aw_size_mul(2, s->cfg.d), s->cfg.a + s->cfg.b));
}

size_t synthesizer_step_floats(const aw_synthesizer *s) { return aw_size_mul(s->cfg.heads, step_head_floats(s)); }

// row (t) = the logits of component c, head hd, at query position i = t - 1 over keys 0..i: the
// row i of component_logits, computed from this position's x and q alone (and the cached keys).
static void component_row(const aw_synthesizer *s, float *row, float *tmp, size_t c, size_t hd, const float *xi,
                          const float *qi, const float *kc, size_t t, size_t dqk) {
    const size_t d = s->cfg.d, L = s->cfg.max_len, h = s->cfg.heads, i = t - 1;
    switch (s->comp_kind[c]) {
    case AW_SYNTH_DENSE: { // relu(x_i W1 + b1) W2[:, :t] + b2[:t]
        float *hid = tmp;
        dense_hidden(hid, xi, PARAM(c, 0, hd), PARAM(c, 1, hd), 1, d);
        aw_matmul_nn(row, hid, PARAM(c, 2, hd), 1, t, d, d, L, t, 0);
        aw_axpy(row, 1.0f, PARAM(c, 3, hd), t);
        break;
    }
    case AW_SYNTH_RANDOM: memcpy(row, PARAM(c, 0, hd) + i * L, t * sizeof(float)); break;
    case AW_SYNTH_FACTORIZED_DENSE: {
        const size_t a = s->cfg.a, b = s->cfg.b;
        float *hid = tmp, *ba = tmp + d, *bb = ba + a;
        dense_hidden(hid, xi, PARAM(c, 0, hd), PARAM(c, 1, hd), 1, d);
        aw_matmul_nn(ba, hid, PARAM(c, 2, hd), 1, a, d, d, a, a, 0);
        dense_hidden(hid, xi, PARAM(c, 3, hd), PARAM(c, 4, hd), 1, d);
        aw_matmul_nn(bb, hid, PARAM(c, 5, hd), 1, b, d, d, b, b, 0);
        for (size_t j = 0; j < t; j++) row[j] = ba[j / b] * bb[j % b];
        break;
    }
    case AW_SYNTH_FACTORIZED_RANDOM: // R1[i] R2[:t]^T
        aw_matmul_nt(row, PARAM(c, 0, hd) + i * s->cfg.k, PARAM(c, 1, hd), 1, t, s->cfg.k, s->cfg.k, s->cfg.k, t, 0);
        break;
    case AW_SYNTH_DOT: { // q_i K_h[:t]^T / sqrt(dqk / h)
        const size_t dh = dqk / h;
        aw_matmul_nt(row, qi + hd * dh, kc + hd * dh, 1, t, dh, dqk, dqk, t, 0);
        aw_scale(row, row, 1.0f / sqrtf((float)dh), t);
        break;
    }
    }
}

typedef struct {
    const aw_synthesizer *s;
    float *out, *scratch;
    const float *xi, *qi, *kc, *vc;
    size_t t, dv, dqk, per;
    int status;
} step_job;

static void step_head(void *ctx, size_t hd) {
    step_job *j = ctx;
    const aw_synthesizer *s = j->s;
    const size_t t = j->t, C = s->n_comp, dvh = j->dv / s->cfg.heads;
    float *p = j->scratch + hd * j->per, *row = p + s->cfg.max_len, *tmp = row + s->cfg.max_len;
    double al[AW_SYNTH_MAX_COMPONENTS];
    alphas_double(s, hd, al);
    for (size_t c = 0; c < C; c++) {
        component_row(s, C == 1 ? p : row, tmp, c, hd, j->xi, j->qi, j->kc, t, j->dqk);
        if (C == 1) break;
        if (c == 0) aw_scale(p, row, (float)al[0], t);
        else aw_axpy(p, (float)al[c], row, t);
    }
    if (!all_finite(p, t)) {
        fail_nonfinite_logits(&j->status);
        return;
    }
    aw_softmax_rows(p, 1, t, t);
    aw_matmul_nn(j->out + hd * dvh, p, j->vc + hd * dvh, 1, dvh, t, t, j->dv, j->dv, 0);
}

// Multiply-adds of one step's heads: the logits rows (a dense kind's hidden layer dominates), then
// P V. A size, not a thread count: it only decides who runs the heads, never what they compute.
static double step_macs(const aw_synthesizer *s, size_t t, size_t dvh, size_t dqk) {
    const double d = (double)s->cfg.d, h = (double)s->cfg.heads, tt = (double)t;
    double per = tt * (double)dvh;
    for (size_t c = 0; c < s->n_comp; c++) switch (s->comp_kind[c]) {
        case AW_SYNTH_DENSE: per += d * d + d * tt; break;
        case AW_SYNTH_RANDOM: per += tt; break;
        case AW_SYNTH_FACTORIZED_DENSE: per += 2.0 * d * d + d * (double)(s->cfg.a + s->cfg.b) + tt; break;
        case AW_SYNTH_FACTORIZED_RANDOM: per += (double)s->cfg.k * tt; break;
        case AW_SYNTH_DOT: per += (double)dqk / h * tt; break;
        }
    return h * per;
}

// Threads: one item per head (each with its own scratch block), run in turn below AW_PAR_MIN_MACS
// multiply-adds (aw_parallel_for_work). Measured in generation (dModel 128, 4 heads, 2 threads):
// dense and factorized-dense steps (>= 4 d^2 multiply-adds) ~10% faster split, random,
// factorized-random and a random + dot mixture (< 60k up to t = 200) ~2-6% slower.
int synthesizer_step(const aw_synthesizer *s, float *out, float *scratch, const float *xi, const float *qi,
                     const float *kc, const float *vc, size_t pos, size_t dv, size_t dqk) {
    const size_t t = pos + 1, h = s->cfg.heads;
    if (t > s->cfg.max_len || dv % h) return AW_ERR_ARG;
    step_job j = {s, out, scratch, xi, qi, kc, vc, t, dv, dqk, step_head_floats(s), AW_OK};
    aw_parallel_for_work(h, step_head, &j, (double)step_macs(s, t, dv / h, dqk));
    return j.status;
}

// ---- naive reference forward -----------------------------------------------------------

// hid (d) = relu(x_i W1 + b1) in double.
static void ref_hidden(double *hid, const float *xi, const float *W1, const float *b1, size_t d) {
    for (size_t c = 0; c < d; c++) {
        double z = b1[c];
        for (size_t t = 0; t < d; t++) z += (double)xi[t] * W1[t * d + c];
        hid[c] = z < 0.0 ? 0.0 : z;
    }
}

// row (n) = row i of component c's logits for head hd, every sum in double. tmp: 2 d + a + b doubles.
static void ref_logit_row(const aw_synthesizer *s, double *row, double *tmp, size_t c, size_t hd, size_t i,
                          const float *x, const float *q, const float *k, size_t n, size_t dqk) {
    const size_t d = s->cfg.d, L = s->cfg.max_len, h = s->cfg.heads;
    switch (s->comp_kind[c]) {
    case AW_SYNTH_DENSE: {
        const float *W2 = PARAM(c, 2, hd), *b2 = PARAM(c, 3, hd);
        ref_hidden(tmp, x + i * d, PARAM(c, 0, hd), PARAM(c, 1, hd), d);
        for (size_t j = 0; j < n; j++) {
            double z = b2[j];
            for (size_t t = 0; t < d; t++) z += tmp[t] * W2[t * L + j];
            row[j] = z;
        }
        break;
    }
    case AW_SYNTH_RANDOM:
        for (size_t j = 0; j < n; j++) row[j] = PARAM(c, 0, hd)[i * L + j];
        break;
    case AW_SYNTH_FACTORIZED_DENSE: {
        const size_t a = s->cfg.a, b = s->cfg.b;
        double *ha = tmp, *hb = tmp + d, *ba = tmp + 2 * d, *bb = tmp + 2 * d + a;
        const float *W2a = PARAM(c, 2, hd), *W2b = PARAM(c, 5, hd);
        ref_hidden(ha, x + i * d, PARAM(c, 0, hd), PARAM(c, 1, hd), d);
        ref_hidden(hb, x + i * d, PARAM(c, 3, hd), PARAM(c, 4, hd), d);
        for (size_t p = 0; p < a; p++) {
            ba[p] = 0.0;
            for (size_t t = 0; t < d; t++) ba[p] += ha[t] * W2a[t * a + p];
        }
        for (size_t p = 0; p < b; p++) {
            bb[p] = 0.0;
            for (size_t t = 0; t < d; t++) bb[p] += hb[t] * W2b[t * b + p];
        }
        for (size_t j = 0; j < n; j++) row[j] = ba[j / b] * bb[j % b];
        break;
    }
    case AW_SYNTH_FACTORIZED_RANDOM: {
        const float *R1 = PARAM(c, 0, hd), *R2 = PARAM(c, 1, hd);
        const size_t kk = s->cfg.k;
        for (size_t j = 0; j < n; j++) {
            double z = 0.0;
            for (size_t t = 0; t < kk; t++) z += (double)R1[i * kk + t] * R2[j * kk + t];
            row[j] = z;
        }
        break;
    }
    case AW_SYNTH_DOT: {
        const size_t dh = dqk / h;
        const double scale = 1.0 / sqrt((double)dh);
        for (size_t j = 0; j < n; j++) {
            double z = 0.0;
            for (size_t t = 0; t < dh; t++) z += (double)q[i * dqk + hd * dh + t] * k[j * dqk + hd * dh + t];
            row[j] = z * scale;
        }
        break;
    }
    }
}

int synthesizer_forward_ref(const aw_synthesizer *s, float *out, float *weights, const float *x, const float *v,
                            const float *q, const float *k, size_t n, size_t dv, size_t dqk, int causal) {
    if (!s || !check_forward_args(s, out, x, v, q, k, n, dv, dqk)) return AW_ERR_ARG;
    const size_t h = s->cfg.heads, C = s->n_comp, dvh = dv / h, d = s->cfg.d;
    // row (n) + comp_row (n) + tmp (2 d + a + b)
    double *row = aw_alloc_doubles(aw_size_add(aw_size_mul(2, aw_size_add(n, d)), aw_size_add(s->cfg.a, s->cfg.b)));
    if (!row) return AW_ERR_NOMEM;
    double *comp_row = row + n, *tmp = comp_row + n;
    int status = AW_OK;
    for (size_t hd = 0; hd < h && status == AW_OK; hd++) {
        double al[AW_SYNTH_MAX_COMPONENTS];
        alphas_double(s, hd, al);
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < n; j++) row[j] = 0.0;
            for (size_t c = 0; c < C; c++) {
                ref_logit_row(s, comp_row, tmp, c, hd, i, x, q, k, n, dqk);
                for (size_t j = 0; j < n; j++) row[j] += al[c] * comp_row[j];
            }
            double mx = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < n; j++) {
                if (!isfinite(row[j])) status = aw_fail(AW_ERR_NONFINITE, "synthesizer: a logit is NaN or infinite");
                if (causal && j > i) row[j] = -INFINITY;
                if (row[j] > mx) mx = row[j];
            }
            if (status != AW_OK) break;
            for (size_t j = 0; j < n; j++) sum += row[j] = exp(row[j] - mx); // exp(-inf) = 0
            for (size_t j = 0; j < n; j++) row[j] /= sum;
            if (weights)
                for (size_t j = 0; j < n; j++) weights[hd * n * n + i * n + j] = (float)row[j];
            for (size_t c = 0; c < dvh; c++) {
                double o = 0.0;
                for (size_t j = 0; j < n; j++) o += row[j] * v[j * dv + hd * dvh + c];
                out[i * dv + hd * dvh + c] = (float)o;
            }
        }
    }
    free(row);
    return status;
}

// ---- backward --------------------------------------------------------------------------

// Undoes dense_hidden: dH (n, d) holds dL/dH on entry and becomes dZ = dH * (H > 0).
// db1 += colsum(dZ); dW1 += X^T dZ; dx += dZ W1^T (when dx).
static void dense_hidden_backward(float *dH, const float *H, const float *x, const float *W1, float *dW1,
                                  float *db1, float *dx, size_t n, size_t d) {
    for (size_t i = 0; i < n * d; i++)
        if (!(H[i] > 0.0f)) dH[i] = 0.0f; // relu'(z) = [z > 0], and H = 0 exactly when z <= 0
    for (size_t i = 0; i < n; i++) aw_axpy(db1, 1.0f, dH + i * d, d);
    aw_matmul_tn(dW1, x, dH, d, d, n, d, d, d, 1);
    if (dx) aw_matmul_nt(dx, dH, W1, n, d, d, d, d, d, 1);
}

// Scratch for one component backward: dH (n, d), dBa (n, a), dBb (n, b).
typedef struct {
    float *dH, *dBa, *dBb;
} backward_scratch;

// Given dB (n, n) = dL/dB_c for head hd (overwritten), accumulates into grads, dx, dq, dk.
static void component_backward(aw_synthesizer *s, float *dB, size_t c, size_t hd, const float *x, const float *q,
                               const float *k, float *dx, float *dq, float *dk, const backward_scratch *w) {
    const size_t n = s->n, d = s->cfg.d, L = s->cfg.max_len, h = s->cfg.heads, dqk = s->dqk;
    switch (s->comp_kind[c]) {
    case AW_SYNTH_DENSE: { // undoes B = H W2[:, :n] + b2[:n], H = relu(X W1 + b1)
        const float *H = s->dense_h + hd * n * d, *W2 = PARAM(c, 2, hd);
        float *dW2 = GRAD(c, 2, hd), *db2 = GRAD(c, 3, hd);
        for (size_t i = 0; i < n; i++) aw_axpy(db2, 1.0f, dB + i * n, n); // db2[:n] += colsum(dB)
        aw_matmul_tn(dW2, H, dB, d, n, n, d, n, L, 1);                     // dW2[:, :n] += H^T dB
        aw_matmul_nt(w->dH, dB, W2, n, d, n, n, L, d, 0);                  // dH = dB W2[:, :n]^T
        dense_hidden_backward(w->dH, H, x, PARAM(c, 0, hd), GRAD(c, 0, hd), GRAD(c, 1, hd), dx, n, d);
        break;
    }
    case AW_SYNTH_RANDOM: // undoes B = R[:n, :n]
        if (s->cfg.trainable) {
            float *dR = GRAD(c, 0, hd);
            for (size_t i = 0; i < n; i++) aw_axpy(dR + i * L, 1.0f, dB + i * n, n);
        }
        break;
    case AW_SYNTH_FACTORIZED_DENSE: { // undoes B[i, j] = Ba[i, j / b] Bb[i, j % b]
        const size_t a = s->cfg.a, b = s->cfg.b;
        const float *Ba = s->fd_ba + hd * n * a, *Bb = s->fd_bb + hd * n * b;
        memset(w->dBa, 0, n * a * sizeof(float));
        memset(w->dBb, 0, n * b * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            const float *g = dB + i * n, *ba = Ba + i * a, *bb = Bb + i * b;
            float *gba = w->dBa + i * a, *gbb = w->dBb + i * b;
            for (size_t p = 0, j = 0; j < n; p++)
                for (size_t t = 0; t < b && j < n; t++, j++) {
                    gba[p] += g[j] * bb[t]; // dBa[i, p] += dB[i, j] Bb[i, t]
                    gbb[t] += g[j] * ba[p]; // dBb[i, t] += dB[i, j] Ba[i, p]
                }
        }
        const float *Ha = s->fd_ha + hd * n * d, *Hb = s->fd_hb + hd * n * d;
        // branch a: Ba = Ha W2a
        aw_matmul_tn(GRAD(c, 2, hd), Ha, w->dBa, d, a, n, d, a, a, 1); // dW2a += Ha^T dBa
        aw_matmul_nt(w->dH, w->dBa, PARAM(c, 2, hd), n, d, a, a, a, d, 0); // dHa = dBa W2a^T
        dense_hidden_backward(w->dH, Ha, x, PARAM(c, 0, hd), GRAD(c, 0, hd), GRAD(c, 1, hd), dx, n, d);
        // branch b: Bb = Hb W2b
        aw_matmul_tn(GRAD(c, 5, hd), Hb, w->dBb, d, b, n, d, b, b, 1);
        aw_matmul_nt(w->dH, w->dBb, PARAM(c, 5, hd), n, d, b, b, b, d, 0);
        dense_hidden_backward(w->dH, Hb, x, PARAM(c, 3, hd), GRAD(c, 3, hd), GRAD(c, 4, hd), dx, n, d);
        break;
    }
    case AW_SYNTH_FACTORIZED_RANDOM: // undoes B = R1[:n] R2[:n]^T
        if (s->cfg.trainable) {
            const size_t kk = s->cfg.k;
            aw_matmul_nn(GRAD(c, 0, hd), dB, PARAM(c, 1, hd), n, kk, n, n, kk, kk, 1); // dR1 += dB R2
            aw_matmul_tn(GRAD(c, 1, hd), dB, PARAM(c, 0, hd), n, kk, n, n, kk, kk, 1); // dR2 += dB^T R1
        }
        break;
    case AW_SYNTH_DOT: { // undoes B = Q_h K_h^T s
        const size_t dh = dqk / h;
        aw_scale(dB, dB, 1.0f / sqrtf((float)dh), n * n);
        if (dq) aw_matmul_nn(dq + hd * dh, dB, k + hd * dh, n, dh, n, n, dqk, dqk, 1); // dQ += s dB K
        if (dk) aw_matmul_tn(dk + hd * dh, dB, q + hd * dh, n, dh, n, n, dqk, dqk, 1); // dK += s dB^T Q
        break;
    }
    }
}

// Threads (src/kernels/parallel.h): one item per head, each with its own block of the scratch
// (per floats). A head's gradients are its own: its slices of grads and alphaLogits' grads, its
// column blocks of dv, dq and dk. Only dx is shared by the heads (every dense head reads the full
// X): head 0 accumulates into dx itself and head hd > 0 into its own zeroed buffer dxh[hd - 1]
// (n, d); afterwards blocks of DX_ROWS rows add dxh[0], dxh[1], ... to dx in head order, the same
// order for every thread count.
enum { DX_ROWS = 64 };

typedef struct {
    aw_synthesizer *s;
    float *dx, *dv_out, *dq, *dk;
    const float *dout, *x, *v, *q, *k;
    float *buf, *dxh; // (h, per) scratch; (h - 1, n, d) dx of heads 1 .. h-1, or NULL
    size_t per, dh_floats, fd_floats;
} backward_job;

static void backward_head(void *ctx, size_t hd) {
    const backward_job *j = ctx;
    aw_synthesizer *s = j->s;
    const size_t n = s->n, dv = s->dv, C = s->n_comp, dvh = dv / s->cfg.heads, nn = n * n, d = s->cfg.d;
    const int mixture = s->cfg.variant == AW_SYNTH_MIXTURE;
    // scratch: dP (n, n), dBc (n, n) for a mixture, dH (n, d), dBa (n, a), dBb (n, b)
    float *dP = j->buf + hd * j->per, *dBc = mixture ? dP + nn : NULL;
    backward_scratch w = {dP + (mixture ? 2 : 1) * nn, NULL, NULL};
    if (j->fd_floats) w.dBa = w.dH + j->dh_floats, w.dBb = w.dBa + n * s->cfg.a;
    float *dx = j->dx;
    if (dx && j->dxh && hd > 0) {
        dx = j->dxh + (hd - 1) * n * d;
        memset(dx, 0, n * d * sizeof(float));
    }
    const float *A = s->probs + hd * nn, *dO = j->dout + hd * dvh;
    aw_matmul_nt(dP, dO, j->v + hd * dvh, n, n, dvh, dv, dv, n, 0);                  // dA = dO V_h^T
    if (j->dv_out) aw_matmul_tn(j->dv_out + hd * dvh, A, dO, n, dvh, n, n, dv, dv, 1); // dV_h += A^T dO
    // softmax: dB[i, j] = A[i, j] (dA[i, j] - sum_t A[i, t] dA[i, t]); masked entries have A = 0
    for (size_t i = 0; i < n; i++) {
        const float *a = A + i * n;
        float *g = dP + i * n;
        const float r = aw_dot(a, g, n);
        for (size_t c = 0; c < n; c++) g[c] = a[c] * (g[c] - r);
    }
    if (!mixture) {
        component_backward(s, dP, 0, hd, j->x, j->q, j->k, dx, j->dq, j->dk, &w);
        return;
    }
    // B = sum_c alpha_c B_c: dalpha_c = <dB, B_c>; alpha = softmax(w): dw_c = alpha_c (dalpha_c - sum alpha dalpha)
    const float *al = s->alphas + hd * C;
    double galpha[AW_SYNTH_MAX_COMPONENTS], mean = 0.0;
    for (size_t c = 0; c < C; c++) {
        const float *Bc = s->comp_logits + (hd * C + c) * nn;
        double g = 0.0;
        for (size_t t = 0; t < nn; t++) g += (double)dP[t] * Bc[t];
        galpha[c] = g;
        mean += al[c] * g;
    }
    float *dw = s->grads + s->tensors[s->alpha_tensor].offset + hd * C;
    for (size_t c = 0; c < C; c++) dw[c] += (float)(al[c] * (galpha[c] - mean));
    for (size_t c = 0; c < C; c++) {
        aw_scale(dBc, dP, al[c], nn); // dB_c = alpha_c dB
        component_backward(s, dBc, c, hd, j->x, j->q, j->k, dx, j->dq, j->dk, &w);
    }
}

// dx rows [item DX_ROWS, ...) += dxh[0], dxh[1], ... in head order.
static void reduce_dx(void *ctx, size_t item) {
    const backward_job *j = ctx;
    const size_t n = j->s->n, d = j->s->cfg.d, h = j->s->cfg.heads, i0 = item * DX_ROWS;
    const size_t count = (n - i0 < DX_ROWS ? n - i0 : DX_ROWS) * d;
    float *y = j->dx + i0 * d;
    for (size_t hd = 1; hd < h; hd++) {
        const float *g = j->dxh + (hd - 1) * n * d + i0 * d;
        for (size_t t = 0; t < count; t++) y[t] += g[t];
    }
}

int synthesizer_backward(aw_synthesizer *s, float *dx, float *dv_out, float *dq, float *dk, const float *dout,
                         const float *x, const float *v, const float *q, const float *k) {
    if (!s || !dout) return AW_ERR_ARG;
    if (!s->has_forward) return AW_ERR_STATE;
    if (!check_forward_args(s, dout, x, v, q, k, s->n, s->dv, s->dqk)) return AW_ERR_ARG;
    const size_t n = s->n, h = s->cfg.heads, nn = n * n, d = s->cfg.d;
    const int mixture = s->cfg.variant == AW_SYNTH_MIXTURE;
    const int fd = has_kind(s, AW_SYNTH_FACTORIZED_DENSE), dense = fd || has_kind(s, AW_SYNTH_DENSE);
    backward_job j = {s, dx, dv_out, dq, dk, dout, x, v, q, k, NULL, NULL, 0, 0, 0};
    // per head: dP (n, n), dBc (n, n) for a mixture, dH (n, d) for a dense kind, dBa (n, a), dBb (n, b) for fd
    j.dh_floats = dense ? aw_size_mul(n, d) : 0;
    j.fd_floats = fd ? aw_size_mul(n, aw_size_add(s->cfg.a, s->cfg.b)) : 0;
    j.per = aw_size_add(aw_size_mul(mixture ? 2 : 1, nn), aw_size_add(j.dh_floats, j.fd_floats));
    const size_t dxh_floats = dx && dense ? aw_size_mul3(h - 1, n, d) : 0; // heads 1 .. h-1
    const size_t scratch = aw_size_mul(h, j.per), total = aw_size_add(scratch, dxh_floats);
    if (!(j.buf = aw_alloc_floats(total))) return AW_ERR_NOMEM;
    j.dxh = dxh_floats ? j.buf + scratch : NULL;
    aw_parallel_for(h, backward_head, &j);
    if (j.dxh) aw_parallel_for((n + DX_ROWS - 1) / DX_ROWS, reduce_dx, &j);
    free(j.buf);
    return AW_OK;
}
