// mla.c: multi-head latent attention (mla.h; docs/attention-forms.md section 4d): the plain path
// (keys and values up-projected per head, then softmax attention), the absorbed path (W_UK folded
// into the queries, W_UV applied to the averaged latents: inference's), the plain path's gradient,
// and one generation step over the latent cache.
#include "mla.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <string.h>

static const double ROPE_BASE = 10000.0;

size_t mla_param_floats(const aw_mla_desc *ds) {
    const size_t C = ds->C, in_q = ds->Qr ? ds->Qr : C;
    aw_plan p = {0};
    aw_plan_take(&p, ds->R, C);          // W_DKV
    aw_plan_take(&p, 2 * C, ds->R);      // W_UK, W_UV
    aw_plan_take(&p, ds->P, C);          // W_KR
    aw_plan_take(&p, ds->Qr, C);         // W_DQ
    aw_plan_take(&p, C, in_q);           // W_UQ or W_Q
    aw_plan_take(&p, aw_size_mul(ds->H, ds->P), in_q); // W_QR
    return aw_plan_ok(&p, sizeof(float)) ? p.total : AW_SIZE_INVALID;
}

void mla_weights_at(aw_mla_weights *w, float *base, const aw_mla_desc *ds) {
    const size_t C = ds->C, R = ds->R, P = ds->P, Qr = ds->Qr, in_q = Qr ? Qr : C;
    w->w_dkv = base, base += R * C;
    w->w_uk = base, base += C * R;
    w->w_uv = base, base += C * R;
    w->w_kr = base, base += P * C;
    w->w_dq = Qr ? base : NULL, base += Qr * C;
    w->w_q = base, base += C * in_q;
    w->w_qr = base;
}

// y (T, O) = x (T, I) W^T, W (O, I) as nn.Linear keeps it
static void project(float *y, const float *x, const float *W, size_t T, size_t O, size_t I) {
    if (T && O && I) aw_matmul_nt(y, x, W, T, O, I, I, I, O, 0);
    else if (T && O) memset(y, 0, T * O * sizeof(float));
}

// its backward: dx += dy W, dW += dy^T x
static void project_backward(float *dx, float *dW, const float *dy, const float *x, const float *W, size_t T,
                             size_t O, size_t I) {
    if (!T || !O || !I) return;
    aw_matmul_nn(dx, dy, W, T, I, O, O, I, I, 1);
    aw_matmul_tn(dW, dy, x, O, I, T, O, I, I, 1);
}

// Turns the `groups` P-wide blocks of row x at position pos: pair (2r, 2r+1) by pos 10000^(-2r/P);
// inverse turns back (the transpose: the backward of a rotation).
static void rope_row(float *x, size_t groups, size_t P, size_t pos, int inverse) {
    for (size_t r = 0; 2 * r < P; r++) {
        const double a = (double)pos * pow(ROPE_BASE, -(double)(2 * r) / (double)P);
        const float c = (float)cos(a), s = inverse ? -(float)sin(a) : (float)sin(a);
        for (size_t g = 0; g < groups; g++) {
            float *p = x + g * P + 2 * r;
            const float x0 = p[0], x1 = p[1];
            p[0] = x0 * c - x1 * s;
            p[1] = x0 * s + x1 * c;
        }
    }
}

// What the forward computes and the backward re-reads, carved from work.
typedef struct {
    float *c, *kr, *cq, *qc, *qr, *kc, *v; // (T, R), (T, P), (T, Qr), (T, C), (T, H P), (T, C), (T, C)
    float *A;                              // (H, T, T) the probabilities (0 where masked)
    float *qa, *lat;                       // (T, H R) each: the absorbed path's queries and latent averages
} mla_acts;

// The seven (T, width) blocks the forward's activations and backward's gradients share, in the
// order of mla_acts and mla_grads: c (R), kr (P), cq (Qr), qc (C), qr (H P), kc (C), v (C).
static void take_rows(aw_plan *p, const aw_mla_desc *ds, size_t o[7]) {
    const size_t T = ds->T, C = ds->C, widths[7] = {ds->R, ds->P, ds->Qr, C, aw_size_mul(ds->H, ds->P), C, C};
    for (int i = 0; i < 7; i++) o[i] = aw_plan_take(p, T, widths[i]);
}

static size_t acts_plan(aw_plan *p, const aw_mla_desc *ds, mla_acts *a, float *base) {
    const size_t T = ds->T, H = ds->H, HR = aw_size_mul(ds->H, ds->R);
    size_t o[9];
    take_rows(p, ds, o);
    o[7] = aw_plan_take(p, aw_size_mul(H, T), T);
    o[8] = aw_plan_take(p, T, aw_size_mul(2, HR));
    if (a && base) {
        a->c = base + o[0], a->kr = base + o[1], a->cq = base + o[2], a->qc = base + o[3], a->qr = base + o[4];
        a->kc = base + o[5], a->v = base + o[6], a->A = base + o[7], a->qa = base + o[8], a->lat = a->qa + T * HR;
    }
    return p->total;
}

size_t mla_forward_work_floats(const aw_mla_desc *ds) {
    aw_plan p = {0};
    acts_plan(&p, ds, NULL, NULL);
    return aw_plan_ok(&p, sizeof(float)) ? p.total : AW_SIZE_INVALID;
}

static int check(const aw_mla_desc *ds) {
    if (!ds->H || ds->C % ds->H) return aw_fail(AW_ERR_ARG, "MLA: width %zu does not split into %zu heads", ds->C, ds->H);
    if (!ds->R) return aw_fail(AW_ERR_ARG, "MLA: attentionOptions.kvRank must be at least 1");
    if (ds->P % 2) return aw_fail(AW_ERR_ARG, "MLA: attentionOptions.ropeDim must be even, got %zu", ds->P);
    return AW_OK;
}

// The latent c, the rotary key k^R, the queries q^C and the rotary queries q^R of rows 0..T-1 at
// positions pos0.. (the forward: pos0 = 0; a step: one row at pos).
static void project_all(mla_acts *a, const float *x, const aw_mla_weights *w, const aw_mla_desc *ds, size_t T,
                        size_t pos0) {
    const size_t C = ds->C, H = ds->H, P = ds->P, Qr = ds->Qr;
    project(a->c, x, w->w_dkv, T, ds->R, C);
    project(a->kr, x, w->w_kr, T, P, C);
    const float *xq = x;
    size_t in_q = C;
    if (Qr) project(a->cq, x, w->w_dq, T, Qr, C), xq = a->cq, in_q = Qr;
    project(a->qc, xq, w->w_q, T, C, in_q);
    project(a->qr, xq, w->w_qr, T, H * P, in_q);
    for (size_t t = 0; t < T; t++) {
        rope_row(a->kr + t * P, 1, P, pos0 + t, 0);
        rope_row(a->qr + t * H * P, H, P, pos0 + t, 0);
    }
}

// Row i of head h's probabilities over keys 0..n-1 from its scores (in place): a stable softmax.
static void softmax_row(float *s, size_t n) {
    float mx = -INFINITY;
    for (size_t j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    float sum = 0.0f;
    for (size_t j = 0; j < n; j++) sum += (s[j] = expf(s[j] - mx));
    const float inv = 1.0f / sum;
    for (size_t j = 0; j < n; j++) s[j] *= inv;
}

static float dotf(const float *a, const float *b, size_t n) {
    float s = 0.0f;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static float scale_of(const aw_mla_desc *ds) { return 1.0f / sqrtf((float)(ds->C / ds->H + ds->P)); }

// The plain path: k^C and v per head, then softmax attention; leaves every activation in a.
static void forward_plain(float *out, mla_acts *a, const aw_mla_weights *w, const aw_mla_desc *ds) {
    const size_t T = ds->T, C = ds->C, H = ds->H, hd = C / H, P = ds->P, R = ds->R;
    const float s = scale_of(ds);
    project(a->kc, a->c, w->w_uk, T, C, R);
    project(a->v, a->c, w->w_uv, T, C, R);
    memset(out, 0, T * C * sizeof(float));
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++) {
            float *row = a->A + (h * T + i) * T;
            const size_t n = ds->causal ? i + 1 : T;
            const float *qc = a->qc + i * C + h * hd, *qr = a->qr + (i * H + h) * P;
            for (size_t j = 0; j < n; j++) row[j] = (dotf(qc, a->kc + j * C + h * hd, hd) + dotf(qr, a->kr + j * P, P)) * s;
            softmax_row(row, n);
            for (size_t j = n; j < T; j++) row[j] = 0.0f;
            float *o = out + i * C + h * hd;
            for (size_t j = 0; j < n; j++)
                for (size_t e = 0; e < hd; e++) o[e] += row[j] * a->v[j * C + h * hd + e];
        }
}

// The absorbed path for rows whose keys are the cached latents c (n_keys, R) and rotary keys kr:
// qa_h = q^C_h W_UK,h, scores qa_h . c_j + q^R_h . k^R_j, l_h = sum_j A_j c_j, o_h = l_h W_UV,h^T.
// Row t of the queries attends to keys 0..keys(t)-1; A (H, rows, n_keys) or per row scratch.
static void absorbed_rows(float *out, float *A, size_t a_stride, float *qa, float *lat, const float *qc,
                          const float *qr, const float *c, const float *kr, const aw_mla_weights *w,
                          const aw_mla_desc *ds, size_t rows, size_t n_keys, size_t first_keys) {
    const size_t C = ds->C, H = ds->H, hd = C / H, P = ds->P, R = ds->R;
    const float s = scale_of(ds);
    for (size_t i = 0; i < rows; i++)
        for (size_t h = 0; h < H; h++) {
            float *q = qa + (i * H + h) * R, *l = lat + (i * H + h) * R;
            // qa_h (R) = q^C_h (hd) W_UK,h (hd, R): rows h hd.. of W_UK (C, R)
            for (size_t r = 0; r < R; r++) q[r] = 0.0f;
            for (size_t e = 0; e < hd; e++) {
                const float qe = qc[i * C + h * hd + e];
                const float *wr = w->w_uk + (h * hd + e) * R;
                for (size_t r = 0; r < R; r++) q[r] += qe * wr[r];
            }
            const size_t n = first_keys + i < n_keys ? first_keys + i : n_keys;
            float *row = A + (h * rows + i) * a_stride;
            const float *qrh = qr + (i * H + h) * P;
            for (size_t j = 0; j < n; j++) row[j] = (dotf(q, c + j * R, R) + dotf(qrh, kr + j * P, P)) * s;
            softmax_row(row, n);
            for (size_t j = n; j < a_stride; j++) row[j] = 0.0f;
            for (size_t r = 0; r < R; r++) l[r] = 0.0f;
            for (size_t j = 0; j < n; j++)
                for (size_t r = 0; r < R; r++) l[r] += row[j] * c[j * R + r];
            // o_h (hd) = l_h (R) W_UV,h^T: rows h hd.. of W_UV (C, R)
            for (size_t e = 0; e < hd; e++) out[i * C + h * hd + e] = dotf(l, w->w_uv + (h * hd + e) * R, R);
        }
}

int mla_forward(float *out, float *weights, float *work, const float *x, const aw_mla_weights *w,
                const aw_mla_desc *ds) {
    int st = check(ds);
    if (st) return st;
    mla_acts a;
    aw_plan p = {0};
    acts_plan(&p, ds, &a, work);
    project_all(&a, x, w, ds, ds->T, 0);
    if (ds->path == AW_MLA_ABSORBED)
        absorbed_rows(out, a.A, ds->T, a.qa, a.lat, a.qc, a.qr, a.c, a.kr, w, ds, ds->T, ds->T, ds->causal ? 1 : ds->T);
    else forward_plain(out, &a, w, ds);
    if (weights) memcpy(weights, a.A, ds->H * ds->T * ds->T * sizeof(float));
    if (aw_find_nonfinite(out, ds->T * ds->C) != ds->T * ds->C)
        return aw_fail(AW_ERR_NONFINITE, "MLA: the output holds NaN or Infinity (the inputs or parameters are too large)");
    return AW_OK;
}

// Backward's scratch: the plain forward's activations, then their gradients.
typedef struct {
    float *dc, *dkr, *dcq, *dqc, *dqr, *dkc, *dv; // shaped as in mla_acts
} mla_grads;

static size_t backward_plan(aw_plan *p, const aw_mla_desc *ds, mla_acts *a, mla_grads *g, float *base) {
    acts_plan(p, ds, a, base);
    size_t o[7];
    take_rows(p, ds, o);
    aw_plan_take(p, ds->T, 1); // dA of one row
    if (g && base) {
        g->dc = base + o[0], g->dkr = base + o[1], g->dcq = base + o[2], g->dqc = base + o[3], g->dqr = base + o[4];
        g->dkc = base + o[5], g->dv = base + o[6];
    }
    return p->total;
}

size_t mla_backward_work_floats(const aw_mla_desc *ds) {
    aw_plan p = {0};
    backward_plan(&p, ds, NULL, NULL, NULL);
    return aw_plan_ok(&p, sizeof(float)) ? p.total : AW_SIZE_INVALID;
}

int mla_backward(float *dx, const aw_mla_weights *g, float *work, const float *dout, const float *x,
                 const aw_mla_weights *w, const aw_mla_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t T = ds->T, C = ds->C, H = ds->H, hd = C / H, P = ds->P, R = ds->R, Qr = ds->Qr;
    mla_acts a;
    mla_grads d = {0}; // every field set by backward_plan; zeroed so gcc -O3 sees it (maybe-uninitialized)
    aw_plan p = {0};
    const size_t total = backward_plan(&p, ds, &a, &d, work);
    float *dA = work + total - T;
    memset(d.dc, 0, (size_t)(dA - d.dc) * sizeof(float));
    // the plain forward again (the saved activations are this work's first part)
    project_all(&a, x, w, ds, T, 0);
    forward_plain(d.dv, &a, w, ds); // its output is not needed: d.dv holds it until zeroed here
    memset(d.dv, 0, T * C * sizeof(float));
    const float s = scale_of(ds);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++) {
            const float *row = a.A + (h * T + i) * T, *go = dout + i * C + h * hd;
            const size_t n = ds->causal ? i + 1 : T;
            // o_i = sum_j A_ij v_j:  dA_ij = dout_i . v_j,  dv_j += A_ij dout_i
            float rs = 0.0f;
            for (size_t j = 0; j < n; j++) {
                dA[j] = dotf(go, a.v + j * C + h * hd, hd);
                rs += row[j] * dA[j];
                for (size_t e = 0; e < hd; e++) d.dv[j * C + h * hd + e] += row[j] * go[e];
            }
            // A = softmax(score): dscore_ij = A_ij (dA_ij - sum_j' A_ij' dA_ij'); score = s (q^C.k^C + q^R.k^R)
            const float *qc = a.qc + i * C + h * hd, *qr = a.qr + (i * H + h) * P;
            float *dqc = d.dqc + i * C + h * hd, *dqr = d.dqr + (i * H + h) * P;
            for (size_t j = 0; j < n; j++) {
                const float ds_ = row[j] * (dA[j] - rs) * s;
                const float *kc = a.kc + j * C + h * hd, *kr = a.kr + j * P;
                float *dkc = d.dkc + j * C + h * hd, *dkr = d.dkr + j * P;
                for (size_t e = 0; e < hd; e++) dqc[e] += ds_ * kc[e], dkc[e] += ds_ * qc[e];
                for (size_t e = 0; e < P; e++) dqr[e] += ds_ * kr[e], dkr[e] += ds_ * qr[e];
            }
        }
    // k^R = RoPE(x W_KR^T), q^R = RoPE(.. W_QR^T): turn the gradients back
    for (size_t t = 0; t < T; t++) {
        rope_row(d.dkr + t * P, 1, P, t, 1);
        rope_row(d.dqr + t * H * P, H, P, t, 1);
    }
    // k^C = c W_UK^T, v = c W_UV^T
    project_backward(d.dc, g->w_uk, d.dkc, a.c, w->w_uk, T, C, R);
    project_backward(d.dc, g->w_uv, d.dv, a.c, w->w_uv, T, C, R);
    // q^C = xq W_Q^T, q^R = xq W_QR^T with xq = x or c_Q = x W_DQ^T
    const float *xq = Qr ? a.cq : x;
    float *dxq = Qr ? d.dcq : dx;
    const size_t in_q = Qr ? Qr : C;
    project_backward(dxq, g->w_q, d.dqc, xq, w->w_q, T, C, in_q);
    project_backward(dxq, g->w_qr, d.dqr, xq, w->w_qr, T, H * P, in_q);
    if (Qr) project_backward(dx, g->w_dq, d.dcq, x, w->w_dq, T, Qr, C);
    // c = x W_DKV^T, k^R before its rotation = x W_KR^T
    project_backward(dx, g->w_dkv, d.dc, x, w->w_dkv, T, R, C);
    project_backward(dx, g->w_kr, d.dkr, x, w->w_kr, T, P, C);
    return AW_OK;
}

size_t mla_cache_floats_per_token(const aw_mla_desc *ds) { return ds->R + ds->P; }

// state: c (L, R), k^R (L, P), then one row's scratch: q^C (C), q^R (H P), c_Q (Qr), qa and l (H R
// each), the scores (H, L).
size_t mla_step_floats(const aw_mla_desc *ds, size_t L) {
    const size_t H = ds->H, HR = aw_size_mul(H, ds->R);
    aw_plan p = {0};
    aw_plan_take(&p, L, mla_cache_floats_per_token(ds));
    aw_plan_take(&p, 1, ds->C);
    aw_plan_take(&p, H, ds->P);
    aw_plan_take(&p, 1, ds->Qr);
    aw_plan_take(&p, 2, HR);
    aw_plan_take(&p, H, L);
    return aw_plan_ok(&p, sizeof(float)) ? p.total : AW_SIZE_INVALID;
}

int mla_step(float *out, float *state, size_t L, const float *x, const aw_mla_weights *w, const aw_mla_desc *ds,
             size_t pos) {
    int st = check(ds);
    if (st) return st;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past the latent cache's %zu", pos, L);
    const size_t C = ds->C, H = ds->H, R = ds->R, P = ds->P;
    float *cache_c = state, *cache_kr = state + L * R, *scratch = cache_kr + L * P;
    mla_acts a;
    a.c = cache_c + pos * R, a.kr = cache_kr + pos * P;
    a.qc = scratch, a.qr = a.qc + C, a.cq = a.qr + H * P, a.qa = a.cq + ds->Qr, a.lat = a.qa + H * R;
    float *scores = a.lat + H * R; // (H, L)
    project_all(&a, x, w, ds, 1, pos);
    absorbed_rows(out, scores, L, a.qa, a.lat, a.qc, a.qr, cache_c, cache_kr, w, ds, 1, pos + 1, pos + 1);
    if (aw_find_nonfinite(out, C) != C)
        return aw_fail(AW_ERR_NONFINITE, "MLA: the output holds NaN or Infinity (the inputs or parameters are too large)");
    return AW_OK;
}
