// gla.c: gated linear attention with a gate per key channel (see gla.h). Serial per head: the model
// runs it inside one sequence's job, and the sizes it serves are the tiny model's.
#include "gla.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int check(const aw_gla_desc *ds) {
    if (ds->heads == 0 || ds->d % ds->heads || ds->dv % ds->heads || ds->n == 0)
        return aw_fail(AW_ERR_ARG, "GLA: sizes must be positive and heads must divide d and dv");
    if (ds->mode < AW_GLA_PARALLEL || ds->mode > AW_GLA_CHUNKED) return aw_fail(AW_ERR_ARG, "GLA: unknown mode %d", ds->mode);
    if (ds->mode == AW_GLA_CHUNKED && ds->chunk == 0) return aw_fail(AW_ERR_ARG, "GLA: chunk must be >= 1");
    return AW_OK;
}

// B (rows t0 .. t0 + len - 1, dh) = head hd's running log-gates from position t0 on, in double
static void cumsum(double *B, const float *g, size_t t0, size_t len, size_t d, size_t dh, size_t hd) {
    for (size_t r = 0; r < dh; r++) {
        double acc = 0.0;
        for (size_t t = 0; t < len; t++) B[t * dh + r] = acc += g[(t0 + t) * d + hd * dh + r];
    }
}

// al (len, dh) = head hd's gates exp(g) from position t0 on, in double
static void gate_values(double *al, const float *g, size_t t0, size_t len, size_t d, size_t dh, size_t hd) {
    for (size_t t = 0; t < len; t++)
        for (size_t r = 0; r < dh; r++) al[t * dh + r] = exp((double)g[(t0 + t) * d + hd * dh + r]);
}

// A_ij = scale sum_r q_ir k_jr E_ijr for j <= i (0 above), E_ijr = alpha_(j+1)r ... alpha_ir (so
// E_iir = 1), rows and columns 0 .. len - 1 of the block that starts at position t0; lda: A's row
// stride; acc: len doubles. E is built as a running product in double from j = i down (products
// of gates <= 1 only shrink: they underflow to 0, never overflow), with no exp in the inner loop.
static void scores(float *A, size_t lda, double *acc, const float *q, const float *k, const double *al, size_t t0,
                   size_t len, size_t d, size_t dh, size_t hd, float scale) {
    for (size_t i = 0; i < len; i++) {
        const float *qi = q + (t0 + i) * d + hd * dh;
        for (size_t j = 0; j <= i; j++) acc[j] = 0.0;
        for (size_t r = 0; r < dh; r++) {
            double e = qi[r];
            for (size_t j = i + 1; j-- > 0;) {
                acc[j] += e * k[(t0 + j) * d + hd * dh + r];
                e *= al[j * dh + r];
            }
        }
        for (size_t j = 0; j < len; j++) A[i * lda + j] = j <= i ? (float)(scale * acc[j]) : 0.0f;
    }
}

int gla_forward(float *out, float *weights, const float *q, const float *k, const float *v, const float *g,
                const aw_gla_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    const size_t c = ds->mode == AW_GLA_CHUNKED ? (ds->chunk < n ? ds->chunk : n) : n;
    const int full = ds->mode == AW_GLA_PARALLEL || weights; // the n x n A of each head is built
    const size_t rows = full ? n : c;
    double *B = aw_alloc(aw_size_add(aw_size_mul(2 * rows, dh), rows), sizeof(double)); // B, the gates, a row
    double *al = B ? B + rows * dh : NULL, *acc = B ? al + rows * dh : NULL;
    float *A = aw_alloc_floats(full ? aw_size_mul(n, n) : aw_size_mul(c, c));
    float *S = aw_alloc_floats(aw_size_mul(dh, dvh));
    if (!B || !A || !S) {
        free(B), free(A), free(S);
        return aw_fail(AW_ERR_NOMEM, "GLA: out of memory for n = %zu", n);
    }
    for (size_t hd = 0; hd < h; hd++) {
        if (full) {
            gate_values(al, g, 0, n, d, dh, hd);
            scores(weights ? weights + hd * n * n : A, n, acc, q, k, al, 0, n, d, dh, hd, ds->scale);
        }
        if (ds->mode == AW_GLA_PARALLEL) {
            aw_matmul_nn(out + hd * dvh, weights ? weights + hd * n * n : A, v + hd * dvh, n, dvh, n, n, dv, dv, 0);
            continue;
        }
        memset(S, 0, dh * dvh * sizeof(float));
        if (ds->mode == AW_GLA_RECURRENT) {
            for (size_t t = 0; t < n; t++) {
                const float *gt = g + t * d + hd * dh, *kt = k + t * d + hd * dh, *qt = q + t * d + hd * dh;
                const float *vt = v + t * dv + hd * dvh;
                for (size_t r = 0; r < dh; r++) {
                    float *row = S + r * dvh;
                    const float a = expf(gt[r]);
                    for (size_t col = 0; col < dvh; col++) row[col] = a * row[col] + kt[r] * vt[col];
                }
                float *ot = out + t * dv + hd * dvh;
                memset(ot, 0, dvh * sizeof(float));
                for (size_t r = 0; r < dh; r++) aw_axpy(ot, ds->scale * qt[r], S + r * dvh, dvh);
            }
            continue;
        }
        for (size_t t0 = 0; t0 < n; t0 += c) { // chunked
            const size_t len = n - t0 < c ? n - t0 : c, e = len - 1;
            cumsum(B, g, t0, len, d, dh, hd);
            gate_values(al, g, t0, len, d, dh, hd);
            scores(A, len, acc, q, k, al, t0, len, d, dh, hd, ds->scale);
            for (size_t i = 0; i < len; i++) { // the carried state's part: scale (q_i ⊙ exp(b_i)) S_0
                const float *qi = q + (t0 + i) * d + hd * dh;
                float *oi = out + (t0 + i) * dv + hd * dvh;
                memset(oi, 0, dvh * sizeof(float));
                for (size_t r = 0; r < dh; r++) aw_axpy(oi, (float)(ds->scale * qi[r] * exp(B[i * dh + r])), S + r * dvh, dvh);
            }
            aw_matmul_nn(out + t0 * dv + hd * dvh, A, v + t0 * dv + hd * dvh, len, dvh, len, len, dv, dv, 1);
            for (size_t r = 0; r < dh; r++) { // S_end = diag(exp(b_end)) S_0 + sum_j (k_j ⊙ exp(b_end - b_j))^T v_j
                float *row = S + r * dvh;
                const float a = (float)exp(B[e * dh + r]);
                for (size_t col = 0; col < dvh; col++) row[col] *= a;
                for (size_t j = 0; j < len; j++)
                    aw_axpy(row, (float)(k[(t0 + j) * d + hd * dh + r] * exp(B[e * dh + r] - B[j * dh + r])),
                            v + (t0 + j) * dv + hd * dvh, dvh);
            }
        }
    }
    free(B), free(A), free(S);
    const size_t bad = aw_find_nonfinite(out, n * dv);
    if (bad != n * dv) return aw_fail(AW_ERR_NONFINITE, "GLA: output row %zu is not finite", bad / dv);
    return AW_OK;
}

size_t gla_work_floats(const aw_gla_desc *ds) { return aw_size_mul3(2, ds->n, ds->n); }

int gla_backward(float *dq, float *dk, float *dv, float *dg, float *work, const float *dout, const float *q,
                 const float *k, const float *v, const float *g, const aw_gla_desc *ds) {
    int st = check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dvs = ds->dv, h = ds->heads, dh = d / h, dvh = dvs / h;
    double *al = aw_alloc(aw_size_add(aw_size_mul3(2, n, dh), n), sizeof(double));
    if (!al) return aw_fail(AW_ERR_NOMEM, "GLA: out of memory for the backward");
    double *dB = al + n * dh, *acc = dB + n * dh;
    float *A = work, *dA = work + n * n;
    const double s = ds->scale;
    for (size_t hd = 0; hd < h; hd++) {
        gate_values(al, g, 0, n, d, dh, hd);
        scores(A, n, acc, q, k, al, 0, n, d, dh, hd, ds->scale);
        aw_matmul_nt(dA, dout + hd * dvh, v + hd * dvh, n, n, dvh, dvs, dvs, n, 0); // dA = dO V^T
        aw_matmul_tn(dv + hd * dvh, A, dout + hd * dvh, n, dvh, n, n, dvs, dvs, 1);  // dV += A^T dO
        memset(dB, 0, n * dh * sizeof(double));
        // with E_ijr the running product of gates (scores above), from j = i down
        for (size_t i = 0; i < n; i++) {
            const float *qi = q + i * d + hd * dh;
            float *dqi = dq + i * d + hd * dh;
            const float *dAi = dA + i * n;
            for (size_t r = 0; r < dh; r++) {
                double e = 1.0, dqr = 0.0, dBi = 0.0;
                for (size_t j = i + 1; j-- > 0;) {
                    const double a = s * dAi[j] * e, kj = k[j * d + hd * dh + r], t = a * qi[r] * kj;
                    dqr += a * kj;
                    dk[j * d + hd * dh + r] += (float)(a * qi[r]);
                    dBi += t;
                    dB[j * dh + r] -= t;
                    e *= al[j * dh + r];
                }
                dqi[r] += (float)dqr;
                dB[i * dh + r] += dBi;
            }
        }
        for (size_t r = 0; r < dh; r++) { // B_t = g_1 + ... + g_t: dg_t = sum_{i >= t} dB_i
            double acc = 0.0;
            for (size_t t = n; t-- > 0;) {
                acc += dB[t * dh + r];
                dg[t * d + hd * dh + r] += (float)acc;
            }
        }
    }
    free(al);
    return AW_OK;
}

size_t gla_state_floats(size_t d, size_t dv, size_t heads) { return aw_size_mul(d / heads, dv); }

void gla_step(float *out, float *state, const float *q, const float *k, const float *v, const float *g, size_t d,
              size_t dv, size_t heads, float scale) {
    const size_t dh = d / heads, dvh = dv / heads;
    for (size_t hd = 0; hd < heads; hd++) {
        float *S = state + hd * dh * dvh, *o = out + hd * dvh;
        const float *vh = v + hd * dvh;
        for (size_t r = 0; r < dh; r++) {
            float *row = S + r * dvh;
            const float a = expf(g[hd * dh + r]), kr = k[hd * dh + r];
            for (size_t col = 0; col < dvh; col++) row[col] = a * row[col] + kr * vh[col];
        }
        memset(o, 0, dvh * sizeof(float));
        for (size_t r = 0; r < dh; r++) aw_axpy(o, scale * q[hd * dh + r], S + r * dvh, dvh);
    }
}
