// sae.c: the TopK sparse autoencoder of sae.h: forward, backward, the projected decoder step.
#include "sae.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "../model/layers.h"
#include "../model/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The Adam of Gao et al. 2024 (their eps 6.25e-10), without weight decay.
static const float ADAM_BETA1 = 0.9f, ADAM_BETA2 = 0.999f, ADAM_EPS = 6.25e-10f;
// How far from 1 a loaded decoder row's norm may be.
static const double UNIT_NORM_SLACK = 1e-3;

static size_t pairs_per_row(const aw_sae *s) { return s->cfg.k + s->cfg.aux_k; }

// Byte offsets of the work buffers for cap rows, each 8-byte aligned; AW_SIZE_INVALID on overflow.
typedef struct {
    size_t xc, pre, g, h, idx, val, dval, row_sums, col_start, col_pairs, total;
} work_layout;

// Reserves count * elem bytes at *at, rounded up to 8; *at saturates at AW_SIZE_INVALID.
static size_t take(size_t *at, size_t count, size_t elem) {
    const size_t here = *at, bytes = aw_size_mul(count, elem);
    *at = aw_size_add(*at, bytes >= AW_SIZE_INVALID - 8 ? AW_SIZE_INVALID : (bytes + 7) & ~(size_t)7);
    return here;
}

static work_layout layout_for(const aw_sae_config *c, size_t cap) {
    work_layout w;
    size_t at = 0;
    const size_t pairs = aw_size_mul(cap, aw_size_add(c->k, c->aux_k));
    w.xc = take(&at, aw_size_mul(cap, c->d_in), sizeof(float));
    w.pre = take(&at, aw_size_mul(cap, c->d_sae), sizeof(float));
    w.g = take(&at, aw_size_mul(cap, c->d_in), sizeof(float));
    w.h = take(&at, aw_size_mul(cap, c->d_in), sizeof(float));
    w.idx = take(&at, pairs, sizeof(int32_t));
    w.val = take(&at, pairs, sizeof(float));
    w.dval = take(&at, pairs, sizeof(float));
    w.row_sums = take(&at, aw_size_mul(cap, 3), sizeof(double));
    w.col_start = take(&at, aw_size_add(c->d_sae, 1), sizeof(size_t));
    w.col_pairs = take(&at, pairs, sizeof(uint32_t));
    w.total = pairs > UINT32_MAX || at >= AW_SIZE_INVALID - 8 ? AW_SIZE_INVALID : at; // pair indices are uint32
    return w;
}

// Makes the work buffers hold batches of B rows.
static int sae_reserve(aw_sae *s, size_t B) {
    if (B <= s->cap) return AW_OK;
    const work_layout w = layout_for(&s->cfg, B);
    if (w.total == AW_SIZE_INVALID)
        return aw_fail(AW_ERR_NOMEM, "a batch of %zu rows of %zu values needs more than the 4 GiB a wasm32 size can count", B,
                       s->cfg.d_in);
    char *p = aw_alloc(w.total, 1);
    if (!p) return aw_fail(AW_ERR_NOMEM, "out of memory: %zu bytes of work for a batch of %zu rows", w.total, B);
    free(s->work);
    s->work = p;
    s->cap = B;
    s->xc = (float *)(p + w.xc), s->pre = (float *)(p + w.pre), s->g = (float *)(p + w.g), s->h = (float *)(p + w.h);
    s->idx = (int32_t *)(p + w.idx), s->val = (float *)(p + w.val), s->dval = (float *)(p + w.dval);
    s->row_sums = (double *)(p + w.row_sums);
    s->col_start = (size_t *)(p + w.col_start), s->col_pairs = (uint32_t *)(p + w.col_pairs);
    return AW_OK;
}

// The parameter views, at the same offsets in params and grads.
static void carve(aw_sae *s) {
    const size_t E = s->cfg.d_sae * s->cfg.d_in, S = s->cfg.d_sae;
    s->w_enc = s->params;
    s->b_enc = s->params + E;
    s->w_dec = s->params + E + S;
    s->b_pre = s->params + 2 * E + S;
}

static void normalise_row(float *w, size_t d) {
    double ss = 0.0;
    for (size_t i = 0; i < d; i++) ss += (double)w[i] * w[i];
    if (ss <= 0.0) return; // left as is: a zero row cannot be a direction (never met: rows start unit)
    const float r = (float)(1.0 / sqrt(ss));
    for (size_t i = 0; i < d; i++) w[i] *= r;
}

int sae_init(aw_sae *s, const aw_sae_config *cfg, uint64_t seed) {
    memset(s, 0, sizeof *s);
    const aw_sae_config c = *cfg;
    if (c.d_in < 1) return aw_fail(AW_ERR_ARG, "dIn must be at least 1");
    if (c.d_sae < 1) return aw_fail(AW_ERR_ARG, "dSae must be at least 1");
    if (c.k < 1 || c.k > c.d_sae) return aw_fail(AW_ERR_ARG, "k is %zu; expected 1 <= k <= dSae = %zu", c.k, c.d_sae);
    if (c.aux_k > c.d_sae) return aw_fail(AW_ERR_ARG, "auxK is %zu; expected 0 <= auxK <= dSae = %zu", c.aux_k, c.d_sae);
    if (c.dead_tokens < 1) return aw_fail(AW_ERR_ARG, "deadTokens must be at least 1");
    if (!(c.aux_coef >= 0.0f) || !isfinite(c.aux_coef)) return aw_fail(AW_ERR_ARG, "auxCoef must be a finite number >= 0");
    aw_plan plan = {0};
    aw_plan_take(&plan, 2, aw_size_mul(c.d_sae, c.d_in));
    aw_plan_take(&plan, 1, c.d_sae);
    aw_plan_take(&plan, 1, c.d_in);
    const size_t n = plan.total;
    aw_plan all = {0};
    aw_plan_take(&all, 4, n);
    aw_plan_take(&all, 1, c.d_sae); // since_fired (uint32) and dead (uint8) fit in a float each
    aw_plan_take(&all, 1, c.d_sae);
    if (!aw_plan_ok(&all, sizeof(float)))
        return aw_fail(AW_ERR_NOMEM, "dSae x dIn = %zu x %zu is too large: its parameters and Adam state need more memory "
                                     "than the 4 GiB a wasm32 size can count", c.d_sae, c.d_in);
    s->mem = aw_alloc_zero(all.total, sizeof(float));
    if (!s->mem)
        return aw_fail(AW_ERR_NOMEM, "out of memory: dSae x dIn = %zu x %zu needs %zu MiB for parameters and Adam state",
                       c.d_sae, c.d_in, (size_t)((double)all.total * sizeof(float) / 1048576.0));
    s->cfg = c;
    s->n_params = n;
    s->params = s->mem, s->grads = s->mem + n, s->m = s->mem + 2 * n, s->v = s->mem + 3 * n;
    s->since_fired = (uint32_t *)(s->mem + 4 * n);
    s->dead = (uint8_t *)(s->mem + 4 * n + c.d_sae);
    carve(s);
    // W_dec rows: isotropic directions (Box-Muller normals, normalised); W_enc = W_dec (the paper's
    // W_enc = W_dec^T with its (d_in, d_sae) decoder), b_enc = b_pre = 0
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    const size_t E = c.d_sae * c.d_in;
    for (size_t i = 0; i < E; i += 2) {
        const double u1 = (aw_rng_u32(&rng) + 1.0) / 4294967297.0, u2 = aw_rng_u32(&rng) / 4294967296.0;
        const double r = sqrt(-2.0 * log(u1));
        s->w_dec[i] = (float)(r * cos(6.283185307179586 * u2));
        if (i + 1 < E) s->w_dec[i + 1] = (float)(r * sin(6.283185307179586 * u2));
    }
    for (size_t j = 0; j < c.d_sae; j++) normalise_row(s->w_dec + j * c.d_in, c.d_in);
    memcpy(s->w_enc, s->w_dec, E * sizeof(float));
    return AW_OK;
}

void sae_free(aw_sae *s) {
    free(s->mem);
    free(s->work);
    memset(s, 0, sizeof *s);
}

// The checks of a batch: rows and their values.
static int check_batch(const aw_sae *s, const float *x, size_t B) {
    if (B < 1) return aw_fail(AW_ERR_ARG, "acts must hold at least one row of dIn = %zu values", s->cfg.d_in);
    const size_t n = B * s->cfg.d_in; // B <= cap was reserved, so this product fits
    const size_t bad = aw_find_nonfinite(x, n);
    if (bad != n)
        return aw_fail(AW_ERR_NONFINITE, "acts[%zu] (row %zu) is %s; activations must be finite", bad, bad / s->cfg.d_in,
                       isnan(x[bad]) ? "NaN" : "Infinity");
    return AW_OK;
}

// The top `k` of ReLU(pre) over the latents where mask is NULL or 1: idx/val (k), by value
// descending and index ascending; slots beyond the eligible latents get -1 and 0.
static void top_k(int32_t *idx, float *val, const float *pre, const uint8_t *mask, size_t d, size_t k) {
    size_t have = 0;
    for (size_t j = 0; j < d; j++) {
        if (mask && !mask[j]) continue;
        const float v = pre[j] > 0.0f ? pre[j] : 0.0f;
        if (have == k && !(v > val[k - 1])) continue; // strictly larger: an equal value's lower index stays
        size_t at = have < k ? have++ : k - 1;
        while (at > 0 && v > val[at - 1]) { // after equal values, so ties keep index order
            val[at] = val[at - 1], idx[at] = idx[at - 1];
            at--;
        }
        val[at] = v, idx[at] = (int32_t)j;
    }
    for (size_t i = have; i < k; i++) idx[i] = -1, val[i] = 0.0f;
}

typedef struct {
    aw_sae *s;
    const float *x;
    size_t B;
    double D;    // sum_b ||x_b - mean x||^2
    float inv_d; // 1 / D
    int backward, any_dead;
} row_job;

// xc = x - b_pre and the encoder bias is added after the product (row_forward).
static void center_rows(void *ctx, size_t b0, size_t b1) {
    const row_job *j = ctx;
    const size_t d = j->s->cfg.d_in;
    for (size_t b = b0; b < b1; b++)
        for (size_t i = 0; i < d; i++) j->s->xc[b * d + i] = j->x[b * d + i] - j->s->b_pre[i];
}

// One row: pre += b_enc; the main TopK and x^; with backward, e, dloss/dx^, the aux TopK over the
// dead latents, e^ and dloss/de^, and dloss/dpre at every chosen pair.
static void row_forward(void *ctx, size_t b0, size_t b1) {
    const row_job *j = ctx;
    aw_sae *s = j->s;
    const size_t d = s->cfg.d_in, S = s->cfg.d_sae, k = s->cfg.k, ak = s->cfg.aux_k, P = pairs_per_row(s);
    for (size_t b = b0; b < b1; b++) {
        float *pre = s->pre + b * S, *g = s->g + b * d, *h = s->h + b * d;
        int32_t *idx = s->idx + b * P;
        float *val = s->val + b * P, *dval = s->dval + b * P;
        const float *x = j->x + b * d;
        for (size_t i = 0; i < S; i++) pre[i] += s->b_enc[i];
        top_k(idx, val, pre, NULL, S, k);
        if (!j->backward) continue;
        // x^ = b_pre + sum_s val_s w_dec[idx_s]; e = x^ - x (in g, then scaled to dloss/dx^ = 2 e / D)
        for (size_t i = 0; i < d; i++) g[i] = s->b_pre[i] - x[i];
        double fired = 0.0;
        for (size_t t = 0; t < k; t++)
            if (val[t] > 0.0f) aw_axpy(g, val[t], s->w_dec + (size_t)idx[t] * d, d), fired += 1.0;
        double ee = 0.0;
        for (size_t i = 0; i < d; i++) ee += (double)g[i] * g[i];
        double aa = 0.0;
        if (ak > 0) {
            for (size_t t = k; t < P; t++) idx[t] = -1, val[t] = 0.0f, dval[t] = 0.0f;
            if (j->any_dead) {
                // e^ - r with r = x - x^ = -e: e^ + e, in h, then scaled to dloss/de^ = 2 c (e^ - r) / D
                top_k(idx + k, val + k, pre, s->dead, S, ak);
                memcpy(h, g, d * sizeof(float));
                for (size_t t = k; t < P; t++)
                    if (val[t] > 0.0f) aw_axpy(h, val[t], s->w_dec + (size_t)idx[t] * d, d);
                for (size_t i = 0; i < d; i++) aa += (double)h[i] * h[i];
                const float sh = 2.0f * s->cfg.aux_coef * j->inv_d;
                for (size_t i = 0; i < d; i++) h[i] *= sh;
                for (size_t t = k; t < P; t++) dval[t] = val[t] > 0.0f ? aw_dot(s->w_dec + (size_t)idx[t] * d, h, d) : 0.0f;
            }
        }
        const float sg = 2.0f * j->inv_d;
        for (size_t i = 0; i < d; i++) g[i] *= sg;
        // dloss/dz_s = w_dec[idx_s] . g, through the ReLU (0 where z = 0)
        for (size_t t = 0; t < k; t++) dval[t] = val[t] > 0.0f ? aw_dot(s->w_dec + (size_t)idx[t] * d, g, d) : 0.0f;
        s->row_sums[3 * b] = ee, s->row_sums[3 * b + 1] = aa, s->row_sums[3 * b + 2] = fired;
    }
}

// Backward by latent j, over its pairs (row b, slot t) in row order:
//   grad w_dec[j] = sum val g_b (main) + sum val h_b (aux), then minus its component along w_dec[j];
//   grad w_enc[j] = sum dval xc_b;  grad b_enc[j] = sum dval.
static void latent_backward(void *ctx, size_t j0, size_t j1) {
    const row_job *job = ctx;
    aw_sae *s = job->s;
    const size_t d = s->cfg.d_in, S = s->cfg.d_sae, k = s->cfg.k, P = pairs_per_row(s), E = S * d;
    float *gw_enc = s->grads, *gb_enc = s->grads + E, *gw_dec = s->grads + E + S;
    for (size_t j = j0; j < j1; j++) {
        float *ge = gw_enc + j * d, *gd = gw_dec + j * d;
        const float *w = s->w_dec + j * d;
        float gb = 0.0f;
        for (size_t q = s->col_start[j]; q < s->col_start[j + 1]; q++) {
            const size_t p = s->col_pairs[q], b = p / P, t = p % P;
            aw_axpy(gd, s->val[p], (t < k ? s->g : s->h) + b * d, d);
            if (s->dval[p] != 0.0f) aw_axpy(ge, s->dval[p], s->xc + b * d, d), gb += s->dval[p];
        }
        gb_enc[j] = gb;
        // the decoder row stays a unit vector: only the gradient's part orthogonal to it moves it
        const float along = aw_dot(gd, w, d);
        aw_axpy(gd, -along, w, d);
    }
}

// The forward (and with backward, the loss, its gradient and stats) of B rows already checked.
static int run_batch(aw_sae *s, const float *x, size_t B, int backward, aw_sae_stats *st) {
    const size_t d = s->cfg.d_in, S = s->cfg.d_sae, P = pairs_per_row(s);
    row_job job = {.s = s, .x = x, .B = B, .backward = backward};
    if (backward) {
        if (B < 2)
            return aw_fail(AW_ERR_ARG, "acts holds 1 row; a training batch needs at least 2 rows that differ (the loss is "
                                       "normalised by their variance)");
        // D = sum_b ||x_b - mean x||^2: the loss's normaliser (a constant of the batch)
        double D = 0.0;
        for (size_t i = 0; i < d; i++) {
            double mean = 0.0;
            for (size_t b = 0; b < B; b++) mean += x[b * d + i];
            mean /= (double)B;
            for (size_t b = 0; b < B; b++) D += (x[b * d + i] - mean) * (x[b * d + i] - mean);
        }
        if (!(D > 0.0))
            return aw_fail(AW_ERR_ARG, "acts: the %zu rows are all equal; training needs rows that differ (the loss is "
                                       "normalised by their variance)", B);
        job.D = D, job.inv_d = (float)(1.0 / D);
        size_t dead = 0;
        for (size_t j = 0; j < S; j++) dead += (s->dead[j] = s->since_fired[j] >= s->cfg.dead_tokens);
        job.any_dead = dead > 0;
    }
    const size_t grain = aw_rows_grain(S);
    aw_parallel_ranges(B, grain, center_rows, &job);
    aw_matmul_nt(s->pre, s->xc, s->w_enc, B, S, d, d, d, S, 0);
    aw_parallel_ranges(B, grain, row_forward, &job);
    if (!backward) return AW_OK;
    double ee = 0.0, aa = 0.0, fired = 0.0;
    for (size_t b = 0; b < B; b++) ee += s->row_sums[3 * b], aa += s->row_sums[3 * b + 1], fired += s->row_sums[3 * b + 2];
    st->fvu = ee / job.D;
    st->aux = aa / job.D;
    st->loss = st->fvu + s->cfg.aux_coef * st->aux;
    st->l0 = fired / (double)B;
    st->dead = 0.0;
    for (size_t j = 0; j < S; j++) st->dead += s->dead[j];
    // the chosen pairs with z > 0, transposed to latents (each latent's in row order)
    memset(s->col_start, 0, (S + 1) * sizeof(size_t));
    for (size_t p = 0; p < B * P; p++)
        if (s->val[p] > 0.0f) s->col_start[s->idx[p] + 1]++;
    for (size_t j = 0; j < S; j++) s->col_start[j + 1] += s->col_start[j];
    {
        size_t *fill = s->col_start; // advanced per latent, then shifted back
        for (size_t p = 0; p < B * P; p++)
            if (s->val[p] > 0.0f) s->col_pairs[fill[s->idx[p]]++] = (uint32_t)p;
        for (size_t j = S; j > 0; j--) s->col_start[j] = s->col_start[j - 1];
        s->col_start[0] = 0;
    }
    memset(s->grads, 0, s->n_params * sizeof(float));
    aw_parallel_ranges(S, aw_rows_grain(4 * d), latent_backward, &job);
    // b_pre: x^ = ... + b_pre gives sum_b g_b; xc = x - b_pre gives -sum_b dpre_b W_enc = -grad_b_enc W_enc
    float *gb_pre = s->grads + 2 * S * d + S;
    const float *gb_enc = s->grads + S * d;
    for (size_t b = 0; b < B; b++) aw_axpy(gb_pre, 1.0f, s->g + b * d, d);
    for (size_t j = 0; j < S; j++)
        if (gb_enc[j] != 0.0f) aw_axpy(gb_pre, -gb_enc[j], s->w_enc + j * d, d);
    return AW_OK;
}

int sae_encode(aw_sae *s, const float *x, size_t B, int32_t *idx, float *val) {
    int st = sae_reserve(s, B);
    if (st || (st = check_batch(s, x, B))) return st;
    if ((st = run_batch(s, x, B, 0, NULL))) return st;
    const size_t k = s->cfg.k, P = pairs_per_row(s);
    for (size_t b = 0; b < B; b++) {
        memcpy(idx + b * k, s->idx + b * P, k * sizeof(int32_t));
        memcpy(val + b * k, s->val + b * P, k * sizeof(float));
    }
    // finite weights can still overflow (a file's 1e38): an Error, never an Infinity handed back
    const size_t n = aw_size_mul(B, k), bad = aw_find_nonfinite(val, n);
    if (bad != n)
        return aw_fail(AW_ERR_NONFINITE, "feature values of row %zu overflow float32: the SAE's weights or the "
                                         "activations are too large", bad / k);
    return AW_OK;
}

int sae_decode(aw_sae *s, const float *z, size_t B, float *out) {
    const size_t d = s->cfg.d_in, S = s->cfg.d_sae;
    if (B < 1) return aw_fail(AW_ERR_ARG, "z must hold at least one row of dSae = %zu values", S);
    const size_t n = aw_size_mul(B, S), bad = aw_find_nonfinite(z, n);
    if (bad != n) return aw_fail(AW_ERR_NONFINITE, "z[%zu] (row %zu) is not finite; z must be finite", bad, bad / S);
    aw_matmul_nn(out, z, s->w_dec, B, d, S, S, d, d, 0);
    for (size_t b = 0; b < B; b++) aw_axpy(out + b * d, 1.0f, s->b_pre, d);
    const size_t m = aw_size_mul(B, d), over = aw_find_nonfinite(out, m);
    if (over != m)
        return aw_fail(AW_ERR_NONFINITE, "the reconstruction of row %zu overflows float32: the SAE's weights or z are "
                                         "too large", over / d);
    return AW_OK;
}

int sae_gradients(aw_sae *s, const float *x, size_t B, aw_sae_stats *st) {
    int r = sae_reserve(s, B);
    if (r || (r = check_batch(s, x, B))) return r;
    return run_batch(s, x, B, 1, st);
}

static void renormalise_rows(void *ctx, size_t j0, size_t j1) {
    aw_sae *s = ctx;
    for (size_t j = j0; j < j1; j++) normalise_row(s->w_dec + j * s->cfg.d_in, s->cfg.d_in);
}

int sae_train_step(aw_sae *s, const float *x, size_t B, float lr, aw_sae_stats *st) {
    if (!(lr >= 0.0f) || !isfinite(lr)) return aw_fail(AW_ERR_ARG, "lr must be a finite number >= 0");
    int r = sae_reserve(s, B);
    if (r || (r = check_batch(s, x, B))) return r;
    const size_t d = s->cfg.d_in, S = s->cfg.d_sae, P = pairs_per_row(s);
    const int first = !s->b_pre_set;
    float *old = NULL;
    if (first) {
        // b_pre = the mean of the first batch (kept aside in case this step is refused)
        old = aw_alloc_floats(d);
        if (!old) return aw_fail(AW_ERR_NOMEM, "out of memory");
        memcpy(old, s->b_pre, d * sizeof(float));
        for (size_t i = 0; i < d; i++) {
            double mean = 0.0;
            for (size_t b = 0; b < B; b++) mean += x[b * d + i];
            s->b_pre[i] = (float)(mean / (double)B);
        }
    }
    r = run_batch(s, x, B, 1, st);
    if (!r && !isfinite(st->loss))
        r = aw_fail(AW_ERR_NONFINITE, "the loss is not finite (%g): the activations are too large for float32, or lr too "
                                      "large; the SAE is unchanged", st->loss);
    if (!r && aw_find_nonfinite(s->grads, s->n_params) != s->n_params)
        r = aw_fail(AW_ERR_NONFINITE, "a gradient is not finite: the activations are too large for float32; the SAE is "
                                      "unchanged");
    if (r) {
        if (old) memcpy(s->b_pre, old, d * sizeof(float));
        free(old);
        return r;
    }
    free(old);
    s->b_pre_set = 1;
    // the counters: every latent aged by B rows, the ones that fired in this batch back to 0
    for (size_t j = 0; j < S; j++) s->since_fired[j] = s->since_fired[j] > UINT32_MAX - B ? UINT32_MAX : s->since_fired[j] + (uint32_t)B;
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < s->cfg.k; t++)
            if (s->val[b * P + t] > 0.0f) s->since_fired[s->idx[b * P + t]] = 0;
    st->dead = 0.0;
    for (size_t j = 0; j < S; j++) st->dead += s->since_fired[j] >= s->cfg.dead_tokens;
    const aw_adamw_config cfg = {.lr = lr, .beta1 = ADAM_BETA1, .beta2 = ADAM_BETA2, .eps = ADAM_EPS, .weight_decay = 0.0f};
    adamw_update(s->params, s->m, s->v, s->grads, NULL, s->n_params, &cfg, ++s->step);
    aw_parallel_ranges(S, aw_rows_grain(d), renormalise_rows, s);
    return AW_OK;
}

int sae_set_params(aw_sae *s, const float *p, size_t n) {
    if (n != s->n_params)
        return aw_fail(AW_ERR_ARG, "params has %zu values, expected %zu", n, s->n_params);
    const size_t bad = aw_find_nonfinite(p, n);
    if (bad != n) return aw_fail(AW_ERR_NONFINITE, "params[%zu] is not finite", bad);
    const size_t d = s->cfg.d_in, S = s->cfg.d_sae, at = S * d + S;
    for (size_t j = 0; j < S; j++) {
        double ss = 0.0;
        for (size_t i = 0; i < d; i++) ss += (double)p[at + j * d + i] * p[at + j * d + i];
        if (fabs(sqrt(ss) - 1.0) > UNIT_NORM_SLACK)
            return aw_fail(AW_ERR_ARG, "dec.w row %zu has norm %g; a TopK SAE's decoder rows are unit vectors", j, sqrt(ss));
    }
    memcpy(s->params, p, n * sizeof(float));
    s->b_pre_set = 1;
    return AW_OK;
}
