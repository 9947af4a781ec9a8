// gated_linear.c: decay-gated linear attention (see gated_linear.h). Serial per head: the model
// runs it inside one sequence's job, and the sizes it serves are the tiny model's.
#include "gated_linear.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// c (n) = the running sum of head hd's log-gates: c_t = g_0 + ... + g_t (positions from 0).
static void cumsum(double *c, const float *g, size_t n, size_t heads, size_t hd) {
    double acc = 0.0;
    for (size_t t = 0; t < n; t++) c[t] = acc += g[t * heads + hd];
}

// The scores of head hd: P_ij = scale q_i . k_j exp(c_i - c_j) for j <= i (rows i0 .. i1 - 1
// against keys 0 .. n - 1), 0 above the diagonal. p: (i1 - i0, n).
static void scores(float *p, const float *q, const float *k, const double *c, size_t i0, size_t i1, size_t n,
                   size_t d, size_t dh, size_t hd, float scale) {
    aw_matmul_nt(p, q + i0 * d + hd * dh, k + hd * dh, i1 - i0, n, dh, d, d, n, 0);
    for (size_t i = i0; i < i1; i++) {
        float *pi = p + (i - i0) * n;
        for (size_t j = 0; j < n; j++) pi[j] = j <= i ? (float)(pi[j] * scale * exp(c[i] - c[j])) : 0.0f;
    }
}

static int check(const aw_gated_desc *ds) {
    if (ds->heads == 0 || ds->d % ds->heads || ds->dv % ds->heads || ds->n == 0)
        return aw_fail(AW_ERR_ARG, "gated linear attention: sizes must be positive and heads must divide d and dv");
    if (ds->mode < AW_GATED_PARALLEL || ds->mode > AW_GATED_CHUNKED)
        return aw_fail(AW_ERR_ARG, "gated linear attention: unknown mode %d", ds->mode);
    if (ds->mode == AW_GATED_CHUNKED && ds->chunk == 0) return aw_fail(AW_ERR_ARG, "gated linear attention: chunk must be >= 1");
    return AW_OK;
}

static void forward_parallel(float *out, float *p, const float *q, const float *k, const float *v, const double *c,
                             const aw_gated_desc *ds, size_t hd) {
    const size_t n = ds->n, d = ds->d, dv = ds->dv, dh = d / ds->heads, dvh = dv / ds->heads;
    scores(p, q, k, c, 0, n, n, d, dh, hd, ds->scale);
    aw_matmul_nn(out + hd * dvh, p, v + hd * dvh, n, dvh, n, n, dv, dv, 0);
}

static void forward_recurrent(float *out, float *S, const float *q, const float *k, const float *v, const float *g,
                              const aw_gated_desc *ds, size_t hd) {
    const size_t d = ds->d, dv = ds->dv, dh = d / ds->heads, dvh = dv / ds->heads;
    memset(S, 0, dh * dvh * sizeof(float));
    for (size_t t = 0; t < ds->n; t++) {
        const float a = expf(g[t * ds->heads + hd]);
        const float *kt = k + t * d + hd * dh, *vt = v + t * dv + hd * dvh, *qt = q + t * d + hd * dh;
        for (size_t r = 0; r < dh; r++) {
            float *row = S + r * dvh;
            for (size_t c2 = 0; c2 < dvh; c2++) row[c2] = a * row[c2] + kt[r] * vt[c2];
        }
        float *ot = out + t * dv + hd * dvh;
        for (size_t c2 = 0; c2 < dvh; c2++) ot[c2] = 0.0f;
        for (size_t r = 0; r < dh; r++) aw_axpy(ot, qt[r] * ds->scale, S + r * dvh, dvh);
    }
}

// Chunks of ds->chunk positions: the inner part from the scores, the earlier chunks through the
// carried state S (dh, dvh); p: (chunk, chunk) scratch.
static void forward_chunked(float *out, float *S, float *p, const float *q, const float *k, const float *v,
                            const double *c, const aw_gated_desc *ds, size_t hd) {
    const size_t n = ds->n, d = ds->d, dv = ds->dv, dh = d / ds->heads, dvh = dv / ds->heads;
    memset(S, 0, dh * dvh * sizeof(float));
    for (size_t t0 = 0; t0 < n; t0 += ds->chunk) {
        const size_t t1 = n - t0 < ds->chunk ? n : t0 + ds->chunk, len = t1 - t0;
        const double c0 = t0 ? c[t0 - 1] : 0.0; // the log-decay before the chunk
        // inner: P (len, len) over the chunk's own keys
        aw_matmul_nt(p, q + t0 * d + hd * dh, k + t0 * d + hd * dh, len, len, dh, d, d, len, 0);
        for (size_t i = 0; i < len; i++)
            for (size_t j = 0; j < len; j++)
                p[i * len + j] = j <= i ? (float)(p[i * len + j] * ds->scale * exp(c[t0 + i] - c[t0 + j])) : 0.0f;
        aw_matmul_nn(out + t0 * dv + hd * dvh, p, v + t0 * dv + hd * dvh, len, dvh, len, len, dv, dv, 0);
        // the earlier chunks: o_i += scale exp(c_i - c0) q_i S
        for (size_t i = 0; i < len; i++) {
            const float w = (float)(ds->scale * exp(c[t0 + i] - c0));
            const float *qi = q + (t0 + i) * d + hd * dh;
            float *oi = out + (t0 + i) * dv + hd * dvh;
            for (size_t r = 0; r < dh; r++) aw_axpy(oi, w * qi[r], S + r * dvh, dvh);
        }
        // the state after the chunk
        const float carry = (float)exp(c[t1 - 1] - c0);
        aw_scale(S, S, carry, dh * dvh);
        for (size_t j = 0; j < len; j++) {
            const float w = (float)exp(c[t1 - 1] - c[t0 + j]);
            const float *kj = k + (t0 + j) * d + hd * dh, *vj = v + (t0 + j) * dv + hd * dvh;
            for (size_t r = 0; r < dh; r++) aw_axpy(S + r * dvh, w * kj[r], vj, dvh);
        }
    }
}

int gated_linear_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                         const float *g, const aw_gated_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t n = ds->n, dh = ds->d / ds->heads, dvh = ds->dv / ds->heads;
    const size_t chunk = ds->chunk < n ? ds->chunk : n;
    const size_t pn = aw_size_mul(n, n), extra = aw_size_add(aw_size_mul(dh, dvh), aw_size_mul(chunk, chunk));
    double *c = aw_alloc_doubles(n);
    const size_t need = ds->mode == AW_GATED_PARALLEL && (pn == AW_SIZE_INVALID || pn > extra) ? pn : extra;
    float *p = need == AW_SIZE_INVALID ? NULL : aw_alloc_floats(need);
    if (!c || !p) {
        free(c), free(p);
        return aw_fail(AW_ERR_NOMEM, "gated linear attention: out of memory for its workspace");
    }
    for (size_t hd = 0; hd < ds->heads; hd++) {
        cumsum(c, g, n, ds->heads, hd);
        if (ds->mode == AW_GATED_PARALLEL) forward_parallel(out, p, q, k, v, c, ds, hd);
        else if (ds->mode == AW_GATED_RECURRENT) forward_recurrent(out, p, q, k, v, g, ds, hd);
        else {
            aw_gated_desc cd = *ds;
            cd.chunk = chunk;
            forward_chunked(out, p, p + dh * dvh, q, k, v, c, &cd, hd);
        }
        if (weights) scores(weights + hd * n * n, q, k, c, 0, n, n, ds->d, dh, hd, ds->scale);
    }
    free(c), free(p);
    const size_t bad = aw_find_nonfinite(out, n * ds->dv);
    if (bad != n * ds->dv)
        return aw_fail(AW_ERR_NONFINITE, "gated linear attention: output row %zu is not finite", bad / ds->dv);
    return AW_OK;
}

size_t gated_linear_work_floats(size_t n) { return aw_size_add(aw_size_mul3(2, n, n), aw_size_mul(2, n)); }

// With P = (Q K^T scale) ⊙ D, O = P V: dV = P^T dO, dP = dO V^T; the scores' gradient
// dA = dP ⊙ D scale gives dQ = dA K, dK = dA^T Q; and D_ij = exp(c_i - c_j) gives
// dc_i += sum_j dP_ij P_ij, dc_j -= sum_i dP_ij P_ij, then dg_t = sum_{i >= t} dc_i.
int gated_linear_backward(float *dq, float *dk, float *dv, float *dg, float *work, const float *dout, const float *q,
                          const float *k, const float *v, const float *g, const aw_gated_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dvs = ds->dv, h = ds->heads, dh = d / h, dvh = dvs / h;
    float *p = work, *dp = p + n * n;
    double *c = aw_alloc_doubles(2 * n);
    if (!c) return aw_fail(AW_ERR_NOMEM, "gated linear attention: out of memory for its backward");
    double *dc = c + n;
    for (size_t hd = 0; hd < h; hd++) {
        cumsum(c, g, n, h, hd);
        scores(p, q, k, c, 0, n, n, d, dh, hd, ds->scale);
        const float *doh = dout + hd * dvh;
        aw_matmul_tn(dv + hd * dvh, p, doh, n, dvh, n, n, dvs, dvs, 1);   // dV += P^T dO
        aw_matmul_nt(dp, doh, v + hd * dvh, n, n, dvh, dvs, dvs, n, 0);   // dP = dO V^T
        memset(dc, 0, n * sizeof(double));
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j <= i; j++) {
                const double t = (double)dp[i * n + j] * p[i * n + j]; // dD_ij D_ij
                dc[i] += t, dc[j] -= t;
                dp[i * n + j] = (float)(dp[i * n + j] * ds->scale * exp(c[i] - c[j])); // dA
            }
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++) dp[i * n + j] = 0.0f;
        aw_matmul_nn(dq + hd * dh, dp, k + hd * dh, n, dh, n, n, d, d, 1); // dQ += dA K
        aw_matmul_tn(dk + hd * dh, dp, q + hd * dh, n, dh, n, n, d, d, 1); // dK += dA^T Q
        double acc = 0.0;
        for (size_t t = n; t-- > 0;) dg[t * h + hd] += (float)(acc += dc[t]);
    }
    free(c);
    return AW_OK;
}

size_t gated_linear_state_floats(size_t d, size_t dv, size_t heads) { return heads ? (d / heads) * (dv / heads) * heads : 0; }

void gated_linear_step(float *out, float *state, const float *q, const float *k, const float *v, const float *g,
                       size_t d, size_t dv, size_t heads, float scale) {
    const size_t dh = d / heads, dvh = dv / heads;
    for (size_t hd = 0; hd < heads; hd++) {
        float *S = state + hd * dh * dvh;
        const float a = expf(g[hd]);
        const float *kt = k + hd * dh, *vt = v + hd * dvh, *qt = q + hd * dh;
        for (size_t r = 0; r < dh; r++)
            for (size_t c = 0; c < dvh; c++) S[r * dvh + c] = a * S[r * dvh + c] + kt[r] * vt[c];
        float *ot = out + hd * dvh;
        memset(ot, 0, dvh * sizeof(float));
        for (size_t r = 0; r < dh; r++) aw_axpy(ot, qt[r] * scale, S + r * dvh, dvh);
    }
}
