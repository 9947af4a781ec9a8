// attribution.c: attribution patching (attribution.h) over hooks.c's runs and transformer.c's
// backward, seeded by the metric's gradient of the logits (model_backward_from_logits). It needs the
// activations' gradients only: an inference-only model (no parameter gradients or AdamW state) gets
// them for the call's length (model_reserve_dacts) and frees them before returning, so the memory it
// takes grows with n x dModel (and n x vocab for the logits), not with the weights. The ablation
// estimate is the same first-order step with the ablated head's z in place of a corrupted run's.
#include "attribution.h"

#include "hooks.h"
#include "transformer_internal.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The metric of logits (n, V) at metric->position, and (dlogits not NULL) its gradient there
// (every other row zero; dlogits zeroed by the caller).
static double metric_of(const aw_model *m, const float *logits, const aw_attr_metric *mt, float *dlogits) {
    const size_t V = (size_t)m->cfg.vocab, t = (size_t)mt->target;
    const float *row = logits + (size_t)mt->position * V;
    float *drow = dlogits ? dlogits + (size_t)mt->position * V : NULL;
    if (mt->versus >= 0) { // logit difference
        if (drow) drow[t] = 1.0f, drow[mt->versus] = -1.0f;
        return (double)row[t] - (double)row[mt->versus];
    }
    // log p(target) = row[t] - logsumexp(row), as target_logprobs (hooks.c) computes it; its
    // gradient is onehot(t) - softmax(row)
    float mx = row[0];
    for (size_t v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    double z = 0.0;
    for (size_t v = 0; v < V; v++) z += exp((double)(row[v] - mx));
    for (size_t v = 0; drow && v < V; v++) drow[v] = (float)(-exp((double)(row[v] - mx)) / z);
    if (drow) drow[t] += 1.0f;
    return (double)(row[t] - mx) - log(z);
}

// Where the backward leaves the gradient of (point, layer)'s activation, as the forward's HOOK
// calls hand it out (transformer_forward.c): a block's output is its FFN's output (ffn_dout: res
// pre-norm, ln post-norm), the attention's output z W_O + b_O is read by the residual sum whose
// gradient is res, and q, k, v are the projections' outputs (their gradients are turned back
// through the rotation and the form's QK step before the projections' backward reads them).
static const float *point_grad(aw_model *m, int point, int l) {
    aw_acts *da = &m->da;
    aw_attn_acts *at = &da->dec_self[l];
    aw_ffn_acts *ff = &da->dec_ffn[l];
    const size_t KC = (size_t)m->cfg.kv_heads * model_head_dim(&m->cfg);
    switch (point) {
    case AW_HOOK_RESID_PRE: return l == 0 ? da->x0 : ffn_dout(m, &da->dec_ffn[l - 1]);
    case AW_HOOK_Q: return at->q;
    case AW_HOOK_K: return m->a.dec_self[l].kv ? at->kv : at->k;
    case AW_HOOK_V: return m->a.dec_self[l].kv ? at->kv + m->T * KC : at->v;
    case AW_HOOK_Z: return at->o;
    case AW_HOOK_ATTN_OUT: return at->res;
    case AW_HOOK_RESID_MID: return attn_dout(m, at);
    case AW_HOOK_MLP_OUT: return ff->res;
    case AW_HOOK_RESID_POST: return ffn_dout(m, ff);
    default: return NULL;
    }
}

// The clean forward as training runs it (no attention kept for display: the forms save what their
// backward reads), with the hooks of rk copying out the activations it keeps.
static int hooked_forward(aw_model *m, aw_hook_run *rk, const int32_t *ids, size_t n) {
    m->keep_attention = 0;
    int st = model_reserve(m, 1, n, 0);
    if (st) return st;
    memcpy(m->tokens, ids, n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) m->targets[i] = -1;
    m->hooks = &rk->base;
    st = model_forward(m, NULL);
    m->hooks = NULL;
    if (!st && aw_find_nonfinite(m->a.logits, n * (size_t)m->cfg.vocab) != n * (size_t)m->cfg.vocab)
        st = aw_fail(AW_ERR_NONFINITE, "the clean run's logits are NaN or Infinity (diverged parameters)");
    return st;
}

int attribution_patching(aw_model *m, const int32_t *clean, const int32_t *corrupt, size_t n, const int *points,
                         size_t n_points, const aw_attr_metric *mt, float *out, float *values) {
    // quantized: the backward reads every matrix in float32 (dx += dout W^T), and those were freed
    if (m->quant) return model_refuse_quantized(m, "its backward");
    const int L = m->cfg.layers;
    const size_t V = (size_t)m->cfg.vocab;
    if (mt->target < 0 || (size_t)mt->target >= V)
        return aw_fail(AW_ERR_ARG, "metric.target is %d, outside the vocabulary [0, %zu)", (int)mt->target, V);
    if (mt->versus >= 0 && ((size_t)mt->versus >= V || mt->versus == mt->target))
        return aw_fail(AW_ERR_ARG, "metric.versus is %d: expected a token of the vocabulary [0, %zu) other than "
                                   "metric.target (%d)", (int)mt->versus, V, (int)mt->target);
    if (mt->position < 0 || (size_t)mt->position >= n)
        return aw_fail(AW_ERR_ARG, "metric.position is %d, outside the %zu positions [0, %zu)", (int)mt->position, n, n);
    aw_hook_run rc, rk; // the corrupted run, the clean one
    int st = hook_run_init(&rc, m, n);
    if (st) return st;
    if ((st = hook_run_init(&rk, m, n))) return hook_run_free(&rc), st;
    for (size_t i = 0; i < n_points && !st; i++)
        for (int l = 0; l < L && !st; l++)
            if (!(st = hook_run_keep(&rc, points[i], l))) st = hook_run_keep(&rk, points[i], l);
    if (!st && !(st = hook_run_forward(&rc, corrupt, NULL))) values[1] = (float)metric_of(m, m->a.logits, mt, NULL);
    float *dlogits = st ? NULL : aw_alloc_zero(aw_size_mul(n, V), sizeof(float));
    if (!st && !dlogits) st = aw_fail(AW_ERR_NOMEM, "out of memory for the metric's gradient (%zu x %zu)", n, V);
    if (!st) st = hooked_forward(m, &rk, clean, n);
    if (!st) {
        values[0] = (float)metric_of(m, m->a.logits, mt, dlogits);
        if (!(st = model_reserve_dacts(m))) st = model_backward_from_logits(m, dlogits);
    }
    const size_t hd = model_head_dim(&m->cfg), C = (size_t)m->cfg.d_model;
    for (size_t i = 0; i < n_points && !st; i++) {
        size_t G, w = hd;
        if (!hook_has_heads(m, points[i], &G)) G = 1, w = C;
        for (int l = 0; l < L; l++) {
            const float *g = point_grad(m, points[i], l), *x = rk.cache[points[i]][l + 1], *y = rc.cache[points[i]][l + 1];
            for (size_t h = 0; h < G; h++)
                for (size_t p = 0; p < n; p++) {
                    const size_t at = (p * G + h) * w;
                    double s = 0.0;
                    for (size_t j = at; j < at + w; j++) s += ((double)y[j] - x[j]) * g[j];
                    *out++ = (float)s;
                }
        }
    }
    free(dlogits);
    model_release_dacts(m); // an inference-only model's m->da, made for this call (a no-op when trainable)
    hook_run_free(&rc), hook_run_free(&rk);
    return st;
}

int ablation_estimate(aw_model *m, const int32_t *ids, size_t n, const int32_t *spans, size_t n_spans, int modes,
                      float *out, float *clean) {
    if (m->quant) return model_refuse_quantized(m, "its backward");
    if (modes < 1 || modes > 3) return aw_fail(AW_ERR_ARG, "modes must name zero, mean or both");
    if (n < 2) return aw_fail(AW_ERR_ARG, "ids has %zu tokens: ablationEstimate needs at least 2 (a next token to predict)", n);
    if (n_spans == 0) return aw_fail(AW_ERR_ARG, "spans must list at least one [from, to) range of positions");
    for (size_t s = 0; s < n_spans; s++)
        if (spans[2 * s] < 0 || spans[2 * s] >= spans[2 * s + 1] || (size_t)spans[2 * s + 1] > n - 1)
            return aw_fail(AW_ERR_ARG, "spans[%zu] is [%d, %d): expected 0 <= from < to <= n - 1 = %zu (position p "
                                       "predicts ids[p + 1])", s, (int)spans[2 * s], (int)spans[2 * s + 1], n - 1);
    const size_t V = (size_t)m->cfg.vocab, L = (size_t)m->cfg.layers, H = (size_t)m->cfg.heads;
    const size_t hd = model_head_dim(&m->cfg), A = H * hd;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= V)
            return aw_fail(AW_ERR_ARG, "ids[%zu] is %d, outside the vocabulary [0, %zu)", i, (int)ids[i], V);
    aw_hook_run rk; // the clean run, keeping every layer's z
    int st = hook_run_init(&rk, m, n);
    for (int l = 0; l < (int)L && !st; l++) st = hook_run_keep(&rk, AW_HOOK_Z, l);
    if (!st) st = hooked_forward(m, &rk, ids, n);
    // dlogits (n, V), then each position's log p(ids[p + 1]) and the softmax's normaliser (n - 1 each)
    float *dlogits = st ? NULL : aw_alloc_zero(aw_size_mul(n, V), sizeof(float));
    double *lp = st ? NULL : calloc(2 * n, sizeof(double));
    if (!st && (!dlogits || !lp)) st = aw_fail(AW_ERR_NOMEM, "out of memory for the metric's gradient (%zu x %zu)", n, V);
    for (size_t p = 0; p + 1 < n && !st; p++) {
        const float *row = m->a.logits + p * V;
        float mx = row[0];
        for (size_t v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
        double z = 0.0;
        for (size_t v = 0; v < V; v++) z += exp((double)(row[v] - mx));
        lp[p] = (double)(row[ids[p + 1]] - mx) - log(z); // as target_logprobs (hooks.c)
        lp[n + p] = (double)mx + log(z);
    }
    if (!st) st = model_reserve_dacts(m);
    const double LOG2E = 1.4426950408889634;
    double *mean = st ? NULL : malloc(hd * sizeof(double)), *gsum = st ? NULL : malloc(hd * sizeof(double));
    if (!st && (!mean || !gsum)) st = aw_fail(AW_ERR_NOMEM, "out of memory for the ablation estimate");
    const size_t per_mode = n_spans * L * H;
    for (size_t s = 0; s < n_spans && !st; s++) {
        const size_t from = (size_t)spans[2 * s], to = (size_t)spans[2 * s + 1], count = to - from;
        // the span's metric sum_p log p(ids[p + 1]) and its gradient onehot - softmax in its rows
        memset(dlogits, 0, n * V * sizeof(float));
        double metric = 0.0;
        for (size_t p = from; p < to; p++) {
            const float *row = m->a.logits + p * V;
            float *drow = dlogits + p * V;
            for (size_t v = 0; v < V; v++) drow[v] = (float)-exp((double)row[v] - lp[n + p]);
            drow[ids[p + 1]] += 1.0f;
            metric += lp[p];
        }
        clean[s] = (float)(-metric / (double)count * LOG2E); // the span's loss, bits per token
        // the backward reads the clean forward's activations and rewrites the gradients only, so each
        // span's runs from the same forward
        if ((st = model_backward_from_logits(m, dlogits))) break;
        // d metric ~ sum over positions (z_ablated - z) . g; reported as the change in the span's
        // loss in bits per token (ablated minus clean: positive, the model reads worse without it)
        const double unit = -LOG2E / (double)count;
        for (size_t l = 0; l < L; l++) {
            const float *g = point_grad(m, AW_HOOK_Z, (int)l), *z = rk.cache[AW_HOOK_Z][l + 1];
            for (size_t h = 0; h < H; h++) {
                double zg = 0.0, mg = 0.0; // sum z . g; sum mean(z) . g
                for (size_t i = 0; i < hd; i++) mean[i] = 0.0, gsum[i] = 0.0;
                for (size_t p = 0; p < n; p++)
                    for (size_t i = 0; i < hd; i++) {
                        const size_t at = p * A + h * hd + i;
                        zg += (double)z[at] * g[at];
                        mean[i] += z[at], gsum[i] += g[at];
                    }
                // the mean the hooked run writes: float32 of the double mean (hook_run_point)
                for (size_t i = 0; i < hd; i++) mg += (double)(float)(mean[i] / (double)n) * gsum[i];
                size_t k = 0;
                if (modes & 1) out[k++ * per_mode + (s * L + l) * H + h] = (float)(-zg * unit);
                if (modes & 2) out[k * per_mode + (s * L + l) * H + h] = (float)((mg - zg) * unit);
            }
        }
    }
    free(mean), free(gsum), free(lp), free(dlogits);
    model_release_dacts(m);
    hook_run_free(&rk);
    return st;
}
