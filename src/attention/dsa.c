// dsa.c: DeepSeek Sparse Attention's kernel (dsa.h): the lightning indexer, the top-k selection, softmax
// over the selected keys, the indexer's KL loss and their gradients, and the step of generation. Plain
// scalar loops in a fixed order: the forward and the step compute each index score by the same
// operations, so they choose the same keys (a different rounding could break a near-tie otherwise).
#include "dsa.h"

#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <string.h>

size_t dsa_param_floats(const aw_dsa_desc *ds) {
    const size_t rows = aw_size_add(aw_size_mul(ds->J, aw_size_add(ds->D, 1)), ds->D); // J D + D + J
    return aw_size_mul(rows, ds->C);
}

void dsa_weights_at(aw_dsa_weights *w, float *base, const aw_dsa_desc *ds) {
    w->w_qi = base;
    w->w_ki = base ? w->w_qi + ds->J * ds->D * ds->C : NULL;
    w->w_w = base ? w->w_ki + ds->D * ds->C : NULL;
}

size_t dsa_kept(const aw_dsa_desc *ds) { return ds->K < ds->T ? ds->K : ds->T; }

size_t dsa_saved_floats(const aw_dsa_desc *ds) { return aw_size_mul(ds->T, dsa_kept(ds)); }

// qi, ki, wi and their gradients (T (J D + D + J) each), then I, all, p, tgt, grad (T each), pd (H T),
// sel and best (K' each)
size_t dsa_work_floats(const aw_dsa_desc *ds) {
    const size_t per = aw_size_add(aw_size_mul(ds->J, aw_size_add(ds->D, 1)), ds->D);
    size_t n = aw_size_mul3(2, ds->T, per);
    n = aw_size_add(n, aw_size_mul(ds->T, aw_size_add(5, ds->H)));
    return aw_size_add(n, aw_size_mul(2, dsa_kept(ds)));
}

static float dot(const float *a, const float *b, size_t n) {
    float s = 0.0f;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

// out (n) = W (n, C) x (C), one dot product per row
static void project(float *out, const float *W, const float *x, size_t n, size_t C) {
    for (size_t r = 0; r < n; r++) out[r] = dot(W + r * C, x, C);
}

// the indexer's projections of one token: q^I (J D), k^I (D), w (J)
static void index_token(float *qi, float *ki, float *wi, const float *x, const aw_dsa_weights *w,
                        const aw_dsa_desc *ds) {
    project(qi, w->w_qi, x, ds->J * ds->D, ds->C);
    project(ki, w->w_ki, x, ds->D, ds->C);
    project(wi, w->w_w, x, ds->J, ds->C);
}

// I (n): query t's index scores against the keys 0..n-1, I_s = sum_j w_j ReLU(q^I_j . k^I_s)
static void index_row(float *I, const float *qi, const float *wi, const float *ki, size_t n, size_t J, size_t D) {
    for (size_t s = 0; s < n; s++) {
        float acc = 0.0f;
        for (size_t j = 0; j < J; j++) {
            const float a = dot(qi + j * D, ki + s * D, D);
            if (a > 0.0f) acc += wi[j] * a;
        }
        I[s] = acc;
    }
}

// sel: the K largest of I (n), ties to the lower index, written in ascending order of index (best:
// K floats of scratch); returns their count, min(K, n)
static size_t top_k(float *sel, float *best, const float *I, size_t n, size_t K) {
    size_t m = 0;
    for (size_t s = 0; s < n; s++) {
        const float x = I[s];
        // a later index enters only when strictly larger than the K-th: ties stay with the lower index
        if (m == K && !(x > best[K - 1])) continue;
        size_t i = m < K ? m++ : K - 1;
        for (; i > 0 && x > best[i - 1]; i--) best[i] = best[i - 1], sel[i] = sel[i - 1];
        best[i] = x, sel[i] = (float)s;
    }
    for (size_t i = 1; i < m; i++) { // by index, so sums run in the order of positions
        const float s = sel[i];
        size_t j = i;
        for (; j > 0 && sel[j - 1] > s; j--) sel[j] = sel[j - 1];
        sel[j] = s;
    }
    return m;
}

// p (m) = softmax over the set of q_h . k_s / sqrt(d), for head h's columns [off, off + d)
static void head_probs(float *p, const float *qh, const float *k, size_t off, const float *set, size_t m, size_t C,
                       size_t d, float scale) {
    float mx = -INFINITY;
    for (size_t i = 0; i < m; i++) {
        p[i] = dot(qh, k + (size_t)set[i] * C + off, d) * scale;
        mx = p[i] > mx ? p[i] : mx;
    }
    float sum = 0.0f;
    for (size_t i = 0; i < m; i++) sum += (p[i] = expf(p[i] - mx));
    for (size_t i = 0; i < m; i++) p[i] /= sum;
}

// The indexer's loss at query t: KL(target || softmax of I over the set), where the target is the dense
// attention of every head over s <= t (n keys), summed over the heads, restricted to the set and
// L1-normalised (warm-up: the set is every s <= t). Iset (m): I at the set; grad (m, or NULL) gets
// softmax(Iset) - target, the KL's gradient with respect to Iset. pd: H n floats, tgt: n floats.
static double side_kl(float *grad, float *pd, float *tgt, const float *Iset, const float *set, size_t m,
                      const float *all, size_t n, const float *qt, const float *k, const aw_dsa_desc *ds) {
    const size_t C = ds->C, H = ds->H, d = C / H;
    const float scale = 1.0f / sqrtf((float)d);
    for (size_t h = 0; h < H; h++) head_probs(pd + h * n, qt + h * d, k, h * d, all, n, C, d, scale);
    double z = 0.0;
    for (size_t i = 0; i < m; i++) {
        double acc = 0.0;
        for (size_t h = 0; h < H; h++) acc += pd[h * n + (size_t)set[i]];
        tgt[i] = (float)acc, z += acc;
    }
    double mx = -INFINITY, lse = 0.0;
    for (size_t i = 0; i < m; i++) mx = Iset[i] > mx ? Iset[i] : mx;
    for (size_t i = 0; i < m; i++) lse += exp((double)Iset[i] - mx);
    lse = mx + log(lse);
    double kl = 0.0;
    for (size_t i = 0; i < m; i++) {
        const double pt = tgt[i] / z, lq = (double)Iset[i] - lse;
        if (pt > 0.0) kl += pt * (log(pt) - lq);
        if (grad) grad[i] = (float)(exp(lq) - pt);
    }
    return kl;
}

typedef struct {
    float *qi, *ki, *wi, *dqi, *dki, *dwi, *I, *all, *p, *tgt, *grad, *pd, *sel, *best;
} dsa_work;

static dsa_work carve(float *work, const aw_dsa_desc *ds) {
    const size_t T = ds->T, JD = ds->J * ds->D, Kt = dsa_kept(ds);
    dsa_work w;
    w.qi = work, w.ki = w.qi + T * JD, w.wi = w.ki + T * ds->D;
    w.dqi = w.wi + T * ds->J, w.dki = w.dqi + T * JD, w.dwi = w.dki + T * ds->D;
    w.I = w.dwi + T * ds->J, w.all = w.I + T, w.p = w.all + T, w.tgt = w.p + T, w.grad = w.tgt + T;
    w.pd = w.grad + T, w.sel = w.pd + ds->H * T, w.best = w.sel + Kt;
    for (size_t s = 0; s < T; s++) w.all[s] = (float)s;
    return w;
}

static void index_all(dsa_work *wk, const float *x, const aw_dsa_weights *w, const aw_dsa_desc *ds) {
    const size_t JD = ds->J * ds->D;
    for (size_t t = 0; t < ds->T; t++)
        index_token(wk->qi + t * JD, wk->ki + t * ds->D, wk->wi + t * ds->J, x + t * ds->C, w, ds);
}

// out (d) = sum over the set of p_i v_s for head h, and att's row (T) when given
static void attend_row(float *out, float *att_row, const float *p, const float *v, size_t off, const float *set,
                       size_t m, size_t C, size_t d) {
    memset(out, 0, d * sizeof(float));
    for (size_t i = 0; i < m; i++) {
        const float *vs = v + (size_t)set[i] * C + off;
        for (size_t c = 0; c < d; c++) out[c] += p[i] * vs[c];
        if (att_row) att_row[(size_t)set[i]] = p[i];
    }
}

int dsa_forward(float *out, float *att, float *saved, double *side_loss, float *work, const float *x, const float *q,
                const float *k, const float *v, const aw_dsa_weights *w, const aw_dsa_desc *ds) {
    const size_t T = ds->T, C = ds->C, H = ds->H, d = C / H, JD = ds->J * ds->D, Kt = dsa_kept(ds);
    const float scale = 1.0f / sqrtf((float)d);
    dsa_work wk = carve(work, ds);
    index_all(&wk, x, w, ds);
    if (att) memset(att, 0, H * T * T * sizeof(float));
    // the indexer's loss when a backward follows (saved): training and gradient checks, not a display
    const int side = ds->side_weight > 0.0f && saved && side_loss;
    double kl = 0.0;
    for (size_t t = 0; t < T; t++) {
        const size_t n = t + 1;
        index_row(wk.I, wk.qi + t * JD, wk.wi + t * ds->J, wk.ki, n, ds->J, ds->D);
        const size_t m = top_k(wk.sel, wk.best, wk.I, n, ds->K);
        if (saved) memcpy(saved + t * Kt, wk.sel, m * sizeof(float));
        const float *set = ds->sparse ? wk.sel : wk.all;
        const size_t ms = ds->sparse ? m : n;
        for (size_t h = 0; h < H; h++) {
            head_probs(wk.p, q + t * C + h * d, k, h * d, set, ms, C, d, scale);
            attend_row(out + t * C + h * d, att ? att + (h * T + t) * T : NULL, wk.p, v, h * d, set, ms, C, d);
        }
        if (side) {
            for (size_t i = 0; i < ms; i++) wk.grad[i] = wk.I[(size_t)set[i]]; // I at the set
            kl += side_kl(NULL, wk.pd, wk.tgt, wk.grad, set, ms, wk.all, n, q + t * C, k, ds);
        }
    }
    if (side) *side_loss += (double)ds->side_weight * kl / (double)T;
    return AW_OK;
}

int dsa_backward(float *dq, float *dk, float *dv, const aw_dsa_weights *g, float *work, const float *dout,
                 const float *saved, const float *x, const float *q, const float *k, const float *v,
                 const aw_dsa_weights *w, const aw_dsa_desc *ds) {
    const size_t T = ds->T, C = ds->C, H = ds->H, d = C / H, J = ds->J, D = ds->D, JD = J * D, Kt = dsa_kept(ds);
    const float scale = 1.0f / sqrtf((float)d);
    if (ds->sparse && !saved) return aw_fail(AW_ERR_STATE, "DSA: backward without the forward's selection");
    dsa_work wk = carve(work, ds);
    const int side = g && ds->side_weight > 0.0f;
    if (side) {
        index_all(&wk, x, w, ds);
        memset(wk.dqi, 0, T * (JD + D + J) * sizeof(float)); // dqi, dki, dwi
    }
    for (size_t t = 0; t < T; t++) {
        const size_t n = t + 1, m = n < Kt ? n : Kt;
        const float *set = ds->sparse ? saved + t * Kt : wk.all;
        const size_t ms = ds->sparse ? m : n;
        for (size_t h = 0; h < H; h++) {
            const float *qh = q + t * C + h * d, *go = dout + t * C + h * d;
            head_probs(wk.p, qh, k, h * d, set, ms, C, d, scale);
            // o = sum_i p_i v_i: dv_i += p_i do; dp_i = do . v_i; ds_i = p_i (dp_i - sum_j p_j dp_j)
            float sum = 0.0f;
            for (size_t i = 0; i < ms; i++) {
                const size_t s = (size_t)set[i];
                float *dvs = dv + s * C + h * d;
                for (size_t c = 0; c < d; c++) dvs[c] += wk.p[i] * go[c];
                wk.tgt[i] = dot(go, v + s * C + h * d, d);
                sum += wk.p[i] * wk.tgt[i];
            }
            // score_i = q . k_i scale: dq += ds_i scale k_i, dk_i += ds_i scale q
            float *dqh = dq + t * C + h * d;
            for (size_t i = 0; i < ms; i++) {
                const size_t s = (size_t)set[i];
                const float gs = wk.p[i] * (wk.tgt[i] - sum) * scale;
                const float *ks = k + s * C + h * d;
                float *dks = dk + s * C + h * d;
                for (size_t c = 0; c < d; c++) dqh[c] += gs * ks[c], dks[c] += gs * qh[c];
            }
        }
        if (!side) continue;
        // the indexer loss' gradient at I over the set (its target and inputs detached), then through
        // I_s = sum_j w_j ReLU(a_js), a_js = q^I_j . k^I_s
        index_row(wk.I, wk.qi + t * JD, wk.wi + t * J, wk.ki, n, J, D);
        float *Iset = wk.p;
        for (size_t i = 0; i < ms; i++) Iset[i] = wk.I[(size_t)set[i]];
        side_kl(wk.grad, wk.pd, wk.tgt, Iset, set, ms, wk.all, n, q + t * C, k, ds);
        const float weight = ds->side_weight / (float)T;
        const float *qit = wk.qi + t * JD, *wit = wk.wi + t * J;
        float *dqit = wk.dqi + t * JD, *dwit = wk.dwi + t * J;
        for (size_t i = 0; i < ms; i++) {
            const size_t s = (size_t)set[i];
            const float dI = weight * wk.grad[i];
            const float *kis = wk.ki + s * D;
            float *dkis = wk.dki + s * D;
            for (size_t j = 0; j < J; j++) {
                const float a = dot(qit + j * D, kis, D);
                if (!(a > 0.0f)) continue;
                dwit[j] += dI * a;
                const float c = dI * wit[j];
                for (size_t r = 0; r < D; r++) dqit[j * D + r] += c * kis[r], dkis[r] += c * qit[j * D + r];
            }
        }
    }
    if (!side) return AW_OK;
    // q^I = W_qI x, k^I = W_kI x, w = W_w x: dW += dy x^T (x itself gets nothing: the input is detached)
    const struct { float *gw; const float *dy; size_t rows; } parts[] = {
        {g->w_qi, wk.dqi, JD}, {g->w_ki, wk.dki, D}, {g->w_w, wk.dwi, J}};
    for (size_t p = 0; p < 3; p++)
        for (size_t t = 0; t < T; t++)
            for (size_t r = 0; r < parts[p].rows; r++) {
                const float dy = parts[p].dy[t * parts[p].rows + r];
                if (dy == 0.0f) continue;
                float *gr = parts[p].gw + r * C;
                const float *xt = x + t * C;
                for (size_t c = 0; c < C; c++) gr[c] += dy * xt[c];
            }
    return AW_OK;
}

int dsa_selection(float *sel, float *work, const float *x, const aw_dsa_weights *w, const aw_dsa_desc *ds) {
    const size_t T = ds->T, H = ds->H, JD = ds->J * ds->D;
    dsa_work wk = carve(work, ds);
    index_all(&wk, x, w, ds);
    memset(sel, 0, H * T * T * sizeof(float));
    for (size_t t = 0; t < T; t++) {
        index_row(wk.I, wk.qi + t * JD, wk.wi + t * ds->J, wk.ki, t + 1, ds->J, ds->D);
        const size_t m = top_k(wk.sel, wk.best, wk.I, t + 1, ds->K);
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < m; i++) sel[(h * T + t) * T + (size_t)wk.sel[i]] = 1.0f;
    }
    return AW_OK;
}

// the cache: k, v (L, C), k^I (L, D); then q^I (J D), w (J), I, all, p (L each), sel and best (K each)
size_t dsa_step_floats(const aw_dsa_desc *ds, size_t L) {
    size_t n = aw_size_mul(L, aw_size_add(aw_size_mul(2, ds->C), aw_size_add(ds->D, 3)));
    n = aw_size_add(n, aw_size_mul(ds->J, aw_size_add(ds->D, 1)));
    return aw_size_add(n, aw_size_mul(2, ds->K));
}

int dsa_step(float *out, float *state, size_t L, const float *x, const float *q, const float *k, const float *v,
             const aw_dsa_weights *w, const aw_dsa_desc *ds, size_t pos) {
    const size_t C = ds->C, H = ds->H, d = C / H, D = ds->D, J = ds->J;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "DSA: step at position %zu past the cache of %zu", pos, L);
    float *kc = state, *vc = kc + L * C, *kic = vc + L * C, *qi = kic + L * D, *wi = qi + J * D;
    float *I = wi + J, *all = I + L, *p = all + L, *sel = p + L, *best = sel + ds->K;
    memcpy(kc + pos * C, k, C * sizeof(float));
    memcpy(vc + pos * C, v, C * sizeof(float));
    index_token(qi, kic + pos * D, wi, x, w, ds);
    const size_t n = pos + 1;
    for (size_t s = 0; s < n; s++) all[s] = (float)s;
    index_row(I, qi, wi, kic, n, J, D);
    const size_t m = top_k(sel, best, I, n, ds->K);
    const float *set = ds->sparse ? sel : all;
    const size_t ms = ds->sparse ? m : n;
    const float scale = 1.0f / sqrtf((float)d);
    for (size_t h = 0; h < H; h++) {
        head_probs(p, q + h * d, kc, h * d, set, ms, C, d, scale);
        attend_row(out + h * d, NULL, p, vc, h * d, set, ms, C, d);
    }
    return AW_OK;
}
