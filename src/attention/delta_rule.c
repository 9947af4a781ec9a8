// delta_rule.c: DeltaNet and Gated DeltaNet by their recurrence and in chunks (see delta_rule.h).
// Serial per head: the model runs it inside one sequence's job.
#include "delta_rule.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DH = 1024 };

// k^ = k / sqrt(|k|^2 + 1e-6); returns the norm.
static float normalise(float *kh, const float *k, size_t dh) {
    double s = 1e-6;
    for (size_t r = 0; r < dh; r++) s += (double)k[r] * k[r];
    const float norm = (float)sqrt(s);
    for (size_t r = 0; r < dh; r++) kh[r] = k[r] / norm;
    return norm;
}

// One step of one head: S (dh, dvh) from S_{t-1} to S_t; out (dvh) = scale q S_t (out may be
// NULL); kh (dh), u (dvh): scratch, left holding k^_t and u_t = k^_t S_{t-1}. a: this head's decay
// at this position: one value (channel 0; NULL: 1), or dh values, one per row (channel 1: KDA).
static void step_head(float *S, float *out, const float *q, const float *k, const float *v, float b, const float *a,
                      int channel, size_t dh, size_t dvh, float scale, float *kh, float *u) {
    normalise(kh, k, dh);
    for (size_t c = 0; c < dvh; c++) u[c] = 0.0f;
    if (channel) { // S' = diag(alpha) S_{t-1}; u = k^ S'; S_t = S' + b k^^T (v - u)
        for (size_t r = 0; r < dh; r++) {
            float *row = S + r * dvh;
            for (size_t c = 0; c < dvh; c++) row[c] *= a[r];
            aw_axpy(u, kh[r], row, dvh);
        }
        for (size_t r = 0; r < dh; r++) {
            float *row = S + r * dvh;
            const float w = b * kh[r];
            for (size_t c = 0; c < dvh; c++) row[c] += w * (v[c] - u[c]);
        }
    } else {
        const float at = a ? a[0] : 1.0f;
        for (size_t r = 0; r < dh; r++) aw_axpy(u, kh[r], S + r * dvh, dvh);
        for (size_t r = 0; r < dh; r++) {
            float *row = S + r * dvh;
            const float w = b * kh[r];
            for (size_t c = 0; c < dvh; c++) row[c] = at * row[c] + w * (v[c] - at * u[c]);
        }
    }
    if (!out) return;
    for (size_t c = 0; c < dvh; c++) out[c] = 0.0f;
    for (size_t r = 0; r < dh; r++) aw_axpy(out, scale * q[r], S + r * dvh, dvh);
}

// This head's decays at position t (see step_head): a row of (n, heads) or dh values of (n, d).
static const float *gate_at(const float *a, const aw_delta_desc *ds, size_t t, size_t hd) {
    if (!a) return NULL;
    return ds->channel_gates ? a + t * ds->d + hd * (ds->d / ds->heads) : a + t * ds->heads + hd;
}

static int check(const aw_delta_desc *ds) {
    if (ds->heads == 0 || ds->d % ds->heads || ds->dv % ds->heads || ds->n == 0)
        return aw_fail(AW_ERR_ARG, "delta rule: sizes must be positive and heads must divide d and dv");
    if (ds->d / ds->heads > MAX_DH || ds->dv / ds->heads > MAX_DH)
        return aw_fail(AW_ERR_ARG, "delta rule: a head's width must be at most %d", MAX_DH);
    if (ds->mode != AW_DELTA_RECURRENT && ds->mode != AW_DELTA_CHUNKED)
        return aw_fail(AW_ERR_ARG, "delta rule: unknown mode %d", ds->mode);
    if (ds->mode == AW_DELTA_CHUNKED && ds->chunk == 0) return aw_fail(AW_ERR_ARG, "delta rule: chunk must be >= 1");
    return AW_OK;
}

// The chunked forward of every head (delta_rule.h), in matrix products over each chunk of c rows:
// K S_0 and Q S_0 (c x dvh), the Gram matrix K K^T and the scores Q K^T (c x c), P U' and K^T U'.
// Only the triangular solve for U' runs row by row. Scratch: S (dh, dvh), K^ (c, dh), the
// decayed keys (c, dh), U' (c, dvh), W = K^ S_0 (c, dvh), A (c, c), the decays (c).
static int forward_chunked(float *out, const float *q, const float *k, const float *v, const float *beta, const float *a,
                           const aw_delta_desc *ds) {
    const size_t n = ds->n, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    const size_t c = ds->chunk < n ? ds->chunk : n;
    aw_plan plan = {0};
    const size_t oS = aw_plan_take(&plan, dh, dvh), oK = aw_plan_take(&plan, c, dh), oKd = aw_plan_take(&plan, c, dh);
    const size_t oU = aw_plan_take(&plan, c, dvh), oW = aw_plan_take(&plan, c, dvh), oA = aw_plan_take(&plan, c, c);
    const size_t oE = aw_plan_take(&plan, c, 1);
    float *mem = aw_plan_ok(&plan, sizeof(float)) ? aw_alloc_floats(plan.total) : NULL;
    double *b = malloc(c * sizeof(double));
    if (!mem || !b) {
        free(mem), free(b);
        return aw_fail(AW_ERR_NOMEM, "delta rule: out of memory for the chunked form");
    }
    float *S = mem + oS, *K = mem + oK, *Kd = mem + oKd, *U = mem + oU, *W = mem + oW, *A = mem + oA, *eb = mem + oE;
    for (size_t hd = 0; hd < h; hd++) {
        memset(S, 0, dh * dvh * sizeof(float));
        for (size_t t0 = 0; t0 < n; t0 += c) {
            const size_t len = n - t0 < c ? n - t0 : c;
            double acc = 0.0;
            for (size_t i = 0; i < len; i++) {
                const size_t t = t0 + i;
                normalise(K + i * dh, k + t * d + hd * dh, dh);
                acc += a ? log((double)a[t * h + hd]) : 0.0;
                b[i] = acc;
                eb[i] = (float)exp(b[i]);
            }
            // U' = beta (V - diag(exp(b)) K^ S_0 - strict lower part of (decayed K^ K^T) U'), row by row
            aw_matmul_nn(W, K, S, len, dvh, dh, dh, dvh, dvh, 0);
            aw_matmul_nt(A, K, K, len, len, dh, dh, dh, len, 0);
            for (size_t i = 0; i < len; i++) {
                const size_t t = t0 + i;
                const float *vt = v + t * dv + hd * dvh, *wi = W + i * dvh, bt = beta[t * h + hd];
                float *ui = U + i * dvh;
                for (size_t col = 0; col < dvh; col++) ui[col] = vt[col] - eb[i] * wi[col];
                for (size_t j = 0; j < i; j++) aw_axpy(ui, -(float)exp(b[i] - b[j]) * A[i * len + j], U + j * dvh, dvh);
                for (size_t col = 0; col < dvh; col++) ui[col] *= bt;
            }
            // O = scale (diag(exp(b)) Q S_0 + (decayed, causal Q K^T) U')
            const float *qc = q + t0 * d + hd * dh;
            float *oc = out + t0 * dv + hd * dvh;
            aw_matmul_nn(oc, qc, S, len, dvh, dh, d, dvh, dv, 0);
            aw_matmul_nt(A, qc, K, len, len, dh, d, dh, len, 0);
            for (size_t i = 0; i < len; i++) {
                float *oi = oc + i * dv, *ai = A + i * len;
                const float e = eb[i] * ds->scale;
                for (size_t col = 0; col < dvh; col++) oi[col] *= e;
                for (size_t j = 0; j < len; j++) ai[j] = j <= i ? (float)exp(b[i] - b[j]) * ai[j] * ds->scale : 0.0f;
            }
            aw_matmul_nn(oc, A, U, len, dvh, len, len, dvh, dv, 1);
            // S_end = exp(b_end) S_0 + (decayed K^)^T U'
            const size_t e = len - 1;
            for (size_t j = 0; j < len; j++) {
                const float f = (float)exp(b[e] - b[j]);
                for (size_t r = 0; r < dh; r++) Kd[j * dh + r] = f * K[j * dh + r];
            }
            for (size_t i = 0; i < dh * dvh; i++) S[i] *= eb[e];
            aw_matmul_tn(S, Kd, U, dh, dvh, len, dh, dvh, dvh, 1);
        }
    }
    free(mem), free(b);
    return AW_OK;
}

// The chunked forward with a decay per key channel (KDA; delta_rule.h): the same WY form, with
// the scalar exp(b_t - b_j) now a diagonal D_tj = diag(alpha_(j+1) ... alpha_t) (dh). The c x c
// matrices mix it into the dot products, A_tj = sum_r k^_tr D_tj,r k^_jr and P_tj = sum_r q_tr
// D_tj,r k^_jr, so they cannot be one matrix product of K and K^T; they are formed pair by pair
// from running products of the gates in double (for each t, D_tj for j = t, t-1, ...: one multiply
// per step), O(c^2 dh) scalar work per chunk. Every factor is a product of gates in (0, 1]: it can
// underflow to 0 but never overflow, for any gates and chunk (fla's chunk_kda instead factors
// D_tj = exp(b_t - b_ref) exp(b_ref - b_j) about a reference inside a short sub-chunk so these
// become matrix products, which bounds the range only as long as the sub-chunk is short). The
// products with S_0 and the state update remain matrix products. Scratch: S (dh, dvh), K^ (c, dh),
// the decayed keys and queries (c, dh), U' (c, dvh), W (c, dvh), A and P (c, c), D (dh) and the
// cumulative decays E_t = diag(alpha_t0 ... alpha_t) (c, dh) in double.
static int forward_chunked_channel(float *out, const float *q, const float *k, const float *v, const float *beta,
                                   const float *a, const aw_delta_desc *ds) {
    const size_t n = ds->n, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    const size_t c = ds->chunk < n ? ds->chunk : n;
    aw_plan plan = {0};
    const size_t oS = aw_plan_take(&plan, dh, dvh), oK = aw_plan_take(&plan, c, dh), oKd = aw_plan_take(&plan, c, dh);
    const size_t oU = aw_plan_take(&plan, c, dvh), oW = aw_plan_take(&plan, c, dvh), oA = aw_plan_take(&plan, c, c);
    const size_t oP = aw_plan_take(&plan, c, c);
    aw_plan dplan = {0};
    const size_t oE = aw_plan_take(&dplan, c, dh), oD = aw_plan_take(&dplan, dh, 1);
    float *mem = aw_plan_ok(&plan, sizeof(float)) ? aw_alloc_floats(plan.total) : NULL;
    double *dmem = aw_plan_ok(&dplan, sizeof(double)) ? aw_alloc(dplan.total, sizeof(double)) : NULL;
    if (!mem || !dmem) {
        free(mem), free(dmem);
        return aw_fail(AW_ERR_NOMEM, "delta rule: out of memory for the chunked form");
    }
    float *S = mem + oS, *K = mem + oK, *Kd = mem + oKd, *U = mem + oU, *W = mem + oW, *A = mem + oA, *P = mem + oP;
    double *E = dmem + oE, *D = dmem + oD;
    for (size_t hd = 0; hd < h; hd++) {
        memset(S, 0, dh * dvh * sizeof(float));
        for (size_t t0 = 0; t0 < n; t0 += c) {
            const size_t len = n - t0 < c ? n - t0 : c;
            const float *qc = q + t0 * d + hd * dh, *ac = a + t0 * d + hd * dh;
            for (size_t i = 0; i < len; i++) {
                normalise(K + i * dh, k + (t0 + i) * d + hd * dh, dh);
                for (size_t r = 0; r < dh; r++) E[i * dh + r] = (i ? E[(i - 1) * dh + r] : 1.0) * ac[i * d + r];
            }
            // A_tj (j < t) and P_tj (j <= t), D = diag(alpha_(j+1) ... alpha_t) built as j falls
            for (size_t i = 0; i < len; i++) {
                const float *ki = K + i * dh, *qi = qc + i * d;
                for (size_t r = 0; r < dh; r++) D[r] = 1.0;
                for (size_t j = i + 1; j-- > 0;) {
                    const float *kj = K + j * dh;
                    double sa = 0.0, sp = 0.0;
                    for (size_t r = 0; r < dh; r++) {
                        const double w = D[r] * kj[r];
                        sa += w * ki[r], sp += w * qi[r];
                    }
                    A[i * len + j] = j < i ? (float)sa : 0.0f;
                    P[i * len + j] = (float)sp * ds->scale;
                    for (size_t r = 0; r < dh; r++) D[r] *= ac[j * d + r];
                }
                for (size_t j = i + 1; j < len; j++) A[i * len + j] = 0.0f, P[i * len + j] = 0.0f;
            }
            // W = (K^ E) S_0; U' = beta (V - W - strict lower part of A U'), row by row
            for (size_t i = 0; i < len * dh; i++) Kd[i] = (float)(E[i] * K[i]);
            aw_matmul_nn(W, Kd, S, len, dvh, dh, dh, dvh, dvh, 0);
            for (size_t i = 0; i < len; i++) {
                const size_t t = t0 + i;
                const float *vt = v + t * dv + hd * dvh, *wi = W + i * dvh, bt = beta[t * h + hd];
                float *ui = U + i * dvh;
                for (size_t col = 0; col < dvh; col++) ui[col] = vt[col] - wi[col];
                for (size_t j = 0; j < i; j++) aw_axpy(ui, -A[i * len + j], U + j * dvh, dvh);
                for (size_t col = 0; col < dvh; col++) ui[col] *= bt;
            }
            // O = scale (Q E) S_0 + P U'
            for (size_t i = 0; i < len; i++)
                for (size_t r = 0; r < dh; r++) Kd[i * dh + r] = (float)(E[i * dh + r] * qc[i * d + r]) * ds->scale;
            float *oc = out + t0 * dv + hd * dvh;
            aw_matmul_nn(oc, Kd, S, len, dvh, dh, dh, dvh, dv, 0);
            aw_matmul_nn(oc, P, U, len, dvh, len, len, dvh, dv, 1);
            // S_end = diag(E_end) S_0 + (K^ decayed to the end)^T U'
            const size_t e = len - 1;
            for (size_t r = 0; r < dh; r++) D[r] = 1.0;
            for (size_t j = len; j-- > 0;)
                for (size_t r = 0; r < dh; r++) Kd[j * dh + r] = (float)(D[r] * K[j * dh + r]), D[r] *= ac[j * d + r];
            for (size_t r = 0; r < dh; r++) {
                const float f = (float)E[e * dh + r];
                for (size_t col = 0; col < dvh; col++) S[r * dvh + col] *= f;
            }
            aw_matmul_tn(S, Kd, U, dh, dvh, len, dh, dvh, dvh, 1);
        }
    }
    free(mem), free(dmem);
    return AW_OK;
}

int delta_rule_forward(float *out, float *weights, const float *q, const float *k, const float *v, const float *beta,
                       const float *a, const aw_delta_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    if (ds->mode == AW_DELTA_CHUNKED) {
        st = a && ds->channel_gates ? forward_chunked_channel(out, q, k, v, beta, a, ds) : forward_chunked(out, q, k, v, beta, a, ds);
        if (st) return st;
        if (weights) { // the weights come from the recurrence; its outputs go to scratch
            float *scratch = aw_alloc_floats(aw_size_mul(n, dv));
            if (!scratch) return aw_fail(AW_ERR_NOMEM, "delta rule: out of memory for the weights");
            aw_delta_desc rec = *ds;
            rec.mode = AW_DELTA_RECURRENT;
            st = delta_rule_forward(scratch, weights, q, k, v, beta, a, &rec);
            free(scratch);
            if (st) return st;
        }
        const size_t bad = aw_find_nonfinite(out, n * dv);
        if (bad != n * dv) return aw_fail(AW_ERR_NONFINITE, "delta rule: output row %zu is not finite", bad / dv);
        return AW_OK;
    }
    float *S = aw_alloc_floats(aw_size_add(aw_size_mul(dh, dvh), aw_size_mul(2, MAX_DH)));
    float *cm = weights ? aw_alloc_floats(aw_size_mul(n, dh)) : NULL; // c_tj, one row per j
    if (!S || (weights && !cm)) {
        free(S), free(cm);
        return aw_fail(AW_ERR_NOMEM, "delta rule: out of memory for its state");
    }
    float *kh = S + dh * dvh, *u = kh + MAX_DH;
    for (size_t hd = 0; hd < h; hd++) {
        memset(S, 0, dh * dvh * sizeof(float));
        for (size_t t = 0; t < n; t++) {
            const float b = beta[t * h + hd], *at = gate_at(a, ds, t, hd);
            step_head(S, out + t * dv + hd * dvh, q + t * d + hd * dh, k + t * d + hd * dh, v + t * dv + hd * dvh, b, at,
                      ds->channel_gates, dh, dvh, ds->scale, kh, u);
            if (!weights) continue;
            // the implied matrix: every earlier value's coefficient vector through this step
            float *w = weights + (hd * n + t) * n;
            // c_tj = (I - b k^^T k^) diag(alpha_t) c_(t-1)j (the decay first, as the state's)
            for (size_t j = 0; j < t; j++) {
                float *cj = cm + j * dh;
                if (ds->channel_gates) {
                    for (size_t r = 0; r < dh; r++) cj[r] *= at[r];
                    const float p = aw_dot(kh, cj, dh);
                    for (size_t r = 0; r < dh; r++) cj[r] -= b * kh[r] * p;
                } else {
                    const float p = aw_dot(kh, cj, dh), g = at ? at[0] : 1.0f;
                    for (size_t r = 0; r < dh; r++) cj[r] = g * (cj[r] - b * kh[r] * p);
                }
            }
            for (size_t r = 0; r < dh; r++) cm[t * dh + r] = b * kh[r];
            for (size_t j = 0; j < n; j++) w[j] = j <= t ? ds->scale * aw_dot(q + t * d + hd * dh, cm + j * dh, dh) : 0.0f;
        }
    }
    free(S), free(cm);
    const size_t bad = aw_find_nonfinite(out, n * dv);
    if (bad != n * dv) return aw_fail(AW_ERR_NONFINITE, "delta rule: output row %zu is not finite", bad / dv);
    return AW_OK;
}

size_t delta_rule_work_floats(const aw_delta_desc *ds) {
    const size_t dh = ds->d / ds->heads, dvh = ds->dv / ds->heads;
    // the states S_0 .. S_n of one head, and dS
    return aw_size_add(aw_size_mul(aw_size_add(ds->n, 2), aw_size_mul(dh, dvh)), 6 * MAX_DH);
}

int delta_rule_backward(float *dq, float *dk, float *dv, float *dbeta, float *da, float *work, const float *dout,
                        const float *q, const float *k, const float *v, const float *beta, const float *a,
                        const aw_delta_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dvs = ds->dv, h = ds->heads, dh = d / h, dvh = dvs / h, sz = dh * dvh;
    float *states = work, *G = states + (n + 1) * sz;
    float *kh = G + sz, *u = kh + MAX_DH, *kg = u + MAX_DH, *du = kg + MAX_DH, *dkh = du + MAX_DH, *e = dkh + MAX_DH;
    const float scale = ds->scale;
    for (size_t hd = 0; hd < h; hd++) {
        memset(states, 0, sz * sizeof(float));
        for (size_t t = 0; t < n; t++) {
            memcpy(states + (t + 1) * sz, states + t * sz, sz * sizeof(float));
            step_head(states + (t + 1) * sz, NULL, NULL, k + t * d + hd * dh, v + t * dvs + hd * dvh, beta[t * h + hd],
                      gate_at(a, ds, t, hd), ds->channel_gates, dh, dvh, scale, kh, u);
        }
        memset(G, 0, sz * sizeof(float));
        for (size_t t = n; t-- > 0;) {
            const float *St = states + (t + 1) * sz, *Sp = states + t * sz;
            const float *qt = q + t * d + hd * dh, *kt = k + t * d + hd * dh, *vt = v + t * dvs + hd * dvh;
            const float *dot = dout + t * dvs + hd * dvh;
            const float b = beta[t * h + hd], *ag = gate_at(a, ds, t, hd);
            // o_t = scale q_t S_t
            for (size_t r = 0; r < dh; r++) {
                dq[t * d + hd * dh + r] += scale * aw_dot(St + r * dvh, dot, dvh);
                aw_axpy(G + r * dvh, scale * qt[r], dot, dvh);
            }
            const float norm = normalise(kh, kt, dh);
            if (a && ds->channel_gates) {
                // S' = diag(alpha) S_{t-1}, u = k^ S', e = v - u, S_t = S' + b k^^T e
                for (size_t c = 0; c < dvh; c++) u[c] = 0.0f, kg[c] = 0.0f;
                for (size_t r = 0; r < dh; r++) aw_axpy(u, kh[r] * ag[r], Sp + r * dvh, dvh);
                for (size_t c = 0; c < dvh; c++) e[c] = vt[c] - u[c];
                for (size_t r = 0; r < dh; r++) aw_axpy(kg, kh[r], G + r * dvh, dvh); // k^ G
                dbeta[t * h + hd] += aw_dot(kg, e, dvh);
                for (size_t c = 0; c < dvh; c++) { // de = b k^ G; du = -de
                    dv[t * dvs + hd * dvh + c] += b * kg[c];
                    du[c] = -b * kg[c];
                }
                for (size_t r = 0; r < dh; r++) {
                    const float *spr = Sp + r * dvh;
                    float *g = G + r * dvh;
                    const float sdu = aw_dot(spr, du, dvh);
                    dkh[r] = b * aw_dot(g, e, dvh) + ag[r] * sdu;
                    // dS'_r = G_r + k^_r du; dalpha_r = dS'_r . S_{t-1},r; dS_{t-1},r = alpha_r dS'_r
                    da[t * d + hd * dh + r] += aw_dot(g, spr, dvh) + kh[r] * sdu;
                    for (size_t c = 0; c < dvh; c++) g[c] = ag[r] * (g[c] + kh[r] * du[c]);
                }
                const float p = aw_dot(kh, dkh, dh);
                for (size_t r = 0; r < dh; r++) dk[t * d + hd * dh + r] += (dkh[r] - kh[r] * p) / norm;
                continue;
            }
            // S_t = a S_{t-1} + b k^^T e, e = v - a u, u = k^ S_{t-1}
            const float at = ag ? ag[0] : 1.0f;
            for (size_t c = 0; c < dvh; c++) u[c] = 0.0f;
            for (size_t r = 0; r < dh; r++) aw_axpy(u, kh[r], Sp + r * dvh, dvh);
            for (size_t c = 0; c < dvh; c++) e[c] = vt[c] - at * u[c], kg[c] = 0.0f;
            for (size_t r = 0; r < dh; r++) aw_axpy(kg, kh[r], G + r * dvh, dvh); // k^ G
            dbeta[t * h + hd] += aw_dot(kg, e, dvh);
            double dat = 0.0;
            for (size_t c = 0; c < dvh; c++) {
                const float de = b * kg[c];
                dv[t * dvs + hd * dvh + c] += de;
                du[c] = -at * de;
                dat -= (double)de * u[c];
            }
            for (size_t r = 0; r < dh; r++) dkh[r] = b * aw_dot(G + r * dvh, e, dvh) + aw_dot(Sp + r * dvh, du, dvh);
            for (size_t i = 0; i < sz; i++) dat += (double)G[i] * Sp[i];
            if (ag) da[t * h + hd] += (float)dat;
            // dS_{t-1} = a G + k^^T du
            for (size_t r = 0; r < dh; r++) {
                float *g = G + r * dvh;
                for (size_t c = 0; c < dvh; c++) g[c] = at * g[c] + kh[r] * du[c];
            }
            // k^ = k / |k|: dk = (dk^ - k^ (k^ . dk^)) / |k|
            const float p = aw_dot(kh, dkh, dh);
            for (size_t r = 0; r < dh; r++) dk[t * d + hd * dh + r] += (dkh[r] - kh[r] * p) / norm;
        }
    }
    return AW_OK;
}

size_t delta_rule_state_floats(size_t d, size_t dv, size_t heads) {
    return heads ? (d / heads) * (dv / heads) * heads + 2 * MAX_DH : 0;
}

void delta_rule_step(float *out, float *state, const float *q, const float *k, const float *v, const float *beta,
                     const float *a, int channel_gates, size_t d, size_t dv, size_t heads, float scale) {
    const size_t dh = d / heads, dvh = dv / heads;
    float *kh = state + heads * dh * dvh, *u = kh + MAX_DH;
    for (size_t hd = 0; hd < heads; hd++)
        step_head(state + hd * dh * dvh, out + hd * dvh, q + hd * dh, k + hd * dh, v + hd * dvh, beta[hd],
                  a ? (channel_gates ? a + hd * dh : a + hd) : NULL, channel_gates, dh, dvh, scale, kh, u);
}
