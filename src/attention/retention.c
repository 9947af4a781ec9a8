// retention.c: retention's parallel, recurrent and chunked forms, the naive reference, the
// backward and the decoding state (see retention.h; docs/attention-forms.md section 4).
#include "retention.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { BQ = 64 }; // query rows per block of the parallel form and the backward

void retention_default_gammas(float *gamma, size_t heads) {
    for (size_t h = 0; h < heads; h++) gamma[h] = (float)(1.0 - ldexp(1.0, -5 - (int)(h < 40 ? h : 40)));
}

int retention_check(const aw_retention_desc *ds) {
    if (!ds || ds->n == 0 || ds->d == 0 || ds->dv == 0 || ds->heads == 0)
        return aw_fail(AW_ERR_ARG, "retention: sizes must be positive");
    if (ds->d % ds->heads || ds->dv % ds->heads)
        return aw_fail(AW_ERR_ARG, "retention: heads (%zu) must divide d (%zu) and dv (%zu)", ds->heads, ds->d, ds->dv);
    if (!ds->gamma) return aw_fail(AW_ERR_ARG, "retention: no decays given");
    for (size_t h = 0; h < ds->heads; h++)
        if (!(ds->gamma[h] > 0.0f && ds->gamma[h] <= 1.0f))
            return aw_fail(AW_ERR_ARG, "retention: gamma[%zu] must be in (0, 1], got %g", h, (double)ds->gamma[h]);
    if (!isfinite(ds->scale)) return aw_fail(AW_ERR_ARG, "retention: scale must be finite");
    if (ds->causal && ds->mode != AW_RETENTION_PARALLEL && ds->mode != AW_RETENTION_RECURRENT &&
        ds->mode != AW_RETENTION_CHUNKED)
        return aw_fail(AW_ERR_ARG, "retention: mode must be parallel, recurrent or chunked, got %d", ds->mode);
    return AW_OK;
}

// pw[t] = gamma^t for t in [0, len), from the logarithm in double so that a long row is as exact
// as a short one (repeated multiplication would drift by t ulps); values below 1e-30 are 0 so no
// denormal slows a row down. dpw (NULL: skipped) = d gamma^t / d gamma = t gamma^(t - 1).
static void powers(float *pw, float *dpw, float gamma, size_t len) {
    const double lg = log((double)gamma);
    for (size_t t = 0; t < len; t++) {
        const double p = exp((double)t * lg);
        pw[t] = p < 1e-30 ? 0.0f : (float)p;
        if (dpw) {
            const double dp = t == 0 ? 0.0 : (double)t * exp((double)(t - 1) * lg);
            dpw[t] = dp < 1e-30 ? 0.0f : (float)dp;
        }
    }
}

static int finite_or_fail(const float *x, size_t len) {
    return aw_find_nonfinite(x, len) == len
               ? AW_OK
               : aw_fail(AW_ERR_NONFINITE, "retention: the result overflowed float32 (an Infinity appeared); scale q, "
                                           "k or v down");
}

// The decayed scores of block rows [i0, i0 + rows) against keys [0, kend), in place: P holds
// q_i . k_j and becomes scale q_i . k_j gamma^|i - j| (0 above the diagonal when causal).
static void decay_block(float *P, size_t rows, size_t kend, size_t i0, const float *pw, float scale, int causal) {
    for (size_t r = 0; r < rows; r++) {
        const size_t i = i0 + r;
        float *row = P + r * kend;
        for (size_t j = 0; j < kend; j++) {
            if (causal && j > i) row[j] = 0.0f;
            else row[j] *= scale * pw[i >= j ? i - j : j - i];
        }
    }
}

static int forward_parallel(float *out, float *weights, const float *q, const float *k, const float *v,
                            const aw_retention_desc *ds) {
    const size_t n = ds->n, d = ds->d, dv = ds->dv, H = ds->heads, dh = d / H, dvh = dv / H;
    aw_plan plan = {0};
    const size_t o_pw = aw_plan_take(&plan, n, 1), o_p = aw_plan_take(&plan, n < BQ ? n : BQ, n);
    if (!aw_plan_ok(&plan, sizeof(float))) return aw_fail(AW_ERR_NOMEM, "retention: n = %zu is too long", n);
    float *mem = aw_alloc_floats(plan.total);
    if (!mem) return aw_fail(AW_ERR_NOMEM, "retention: out of memory for a block of %zu x %zu scores", (size_t)BQ, n);
    float *pw = mem + o_pw, *P = mem + o_p;
    for (size_t h = 0; h < H; h++) {
        powers(pw, NULL, ds->gamma[h], n);
        for (size_t i0 = 0; i0 < n; i0 += BQ) {
            const size_t rows = n - i0 < BQ ? n - i0 : BQ, kend = ds->causal ? i0 + rows : n;
            aw_matmul_nt(P, q + i0 * d + h * dh, k + h * dh, rows, kend, dh, d, d, kend, 0);
            decay_block(P, rows, kend, i0, pw, ds->scale, ds->causal);
            aw_matmul_nn(out + i0 * dv + h * dvh, P, v + h * dvh, rows, dvh, kend, kend, dv, dv, 0);
            if (weights)
                for (size_t r = 0; r < rows; r++) {
                    float *wr = weights + (h * n + i0 + r) * n;
                    memcpy(wr, P + r * kend, kend * sizeof(float));
                    memset(wr + kend, 0, (n - kend) * sizeof(float));
                }
        }
    }
    free(mem);
    return AW_OK;
}

static int forward_recurrent(float *out, const float *q, const float *k, const float *v, const aw_retention_desc *ds) {
    const size_t d = ds->d, dv = ds->dv, H = ds->heads;
    float *state = aw_alloc_zero(retention_state_floats(d, dv, H), sizeof(float));
    if (!state) return aw_fail(AW_ERR_NOMEM, "retention: out of memory for the recurrent state");
    int st = AW_OK;
    for (size_t i = 0; i < ds->n && !st; i++)
        st = retention_step(out + i * dv, state, q + i * d, k + i * d, v + i * dv, d, dv, H, ds->gamma, ds->scale);
    free(state);
    return st;
}

static int forward_chunked(float *out, const float *q, const float *k, const float *v, const aw_retention_desc *ds) {
    const size_t n = ds->n, d = ds->d, dv = ds->dv, H = ds->heads, dh = d / H, dvh = dv / H;
    const size_t c = ds->chunk ? ds->chunk : AW_RETENTION_CHUNK;
    aw_plan plan = {0};
    const size_t o_pw = aw_plan_take(&plan, c + 1, 1), o_p = aw_plan_take(&plan, c, c);
    const size_t o_x = aw_plan_take(&plan, c, dvh), o_kd = aw_plan_take(&plan, c, dh), o_s = aw_plan_take(&plan, dh, dvh);
    if (!aw_plan_ok(&plan, sizeof(float))) return aw_fail(AW_ERR_NOMEM, "retention: chunk %zu is too large", c);
    float *mem = aw_alloc_floats(plan.total);
    if (!mem) return aw_fail(AW_ERR_NOMEM, "retention: out of memory for a chunk of %zu", c);
    float *pw = mem + o_pw, *P = mem + o_p, *X = mem + o_x, *Kd = mem + o_kd, *S = mem + o_s;
    for (size_t h = 0; h < H; h++) {
        powers(pw, NULL, ds->gamma[h], c + 1);
        memset(S, 0, dh * dvh * sizeof(float));
        for (size_t t0 = 0; t0 < n; t0 += c) {
            const size_t rows = n - t0 < c ? n - t0 : c;
            const float *qc = q + t0 * d + h * dh, *kc = k + t0 * d + h * dh, *vc = v + t0 * dv + h * dvh;
            float *oc = out + t0 * dv + h * dvh;
            // inside the chunk: the parallel form
            aw_matmul_nt(P, qc, kc, rows, rows, dh, d, d, rows, 0);
            decay_block(P, rows, rows, 0, pw, ds->scale, 1);
            aw_matmul_nn(oc, P, vc, rows, dvh, rows, rows, dv, dv, 0);
            // every earlier chunk, through the state: gamma^(r + 1) scale q_r S
            if (t0) {
                aw_matmul_nn(X, qc, S, rows, dvh, dh, d, dvh, dvh, 0);
                for (size_t r = 0; r < rows; r++) aw_axpy(oc + r * dv, ds->scale * pw[r + 1], X + r * dvh, dvh);
            }
            // S <- gamma^rows S + sum_r gamma^(rows - 1 - r) k_r^T v_r
            for (size_t e = 0; e < dh * dvh; e++) S[e] *= pw[rows];
            for (size_t r = 0; r < rows; r++) aw_scale(Kd + r * dh, kc + r * d, pw[rows - 1 - r], dh);
            aw_matmul_tn(S, Kd, vc, dh, dvh, rows, dh, dv, dvh, 1);
        }
    }
    free(mem);
    return AW_OK;
}

int retention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                      const aw_retention_desc *ds) {
    int st = retention_check(ds);
    if (st) return st;
    if (aw_size_mul(ds->n, ds->dv) == AW_SIZE_INVALID) return aw_fail(AW_ERR_NOMEM, "retention: n * dv overflows");
    if (weights || !ds->causal || ds->mode == AW_RETENTION_PARALLEL) st = forward_parallel(out, weights, q, k, v, ds);
    else if (ds->mode == AW_RETENTION_RECURRENT) st = forward_recurrent(out, q, k, v, ds);
    else st = forward_chunked(out, q, k, v, ds);
    if (!st && weights && ds->causal && ds->mode != AW_RETENTION_PARALLEL) // the asked-for form's own output
        st = ds->mode == AW_RETENTION_RECURRENT ? forward_recurrent(out, q, k, v, ds) : forward_chunked(out, q, k, v, ds);
    if (!st && weights) st = finite_or_fail(weights, ds->heads * ds->n * ds->n); // sizes: planned above
    return st ? st : finite_or_fail(out, ds->n * ds->dv);
}

int retention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                          const aw_retention_desc *ds) {
    int st = retention_check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dv = ds->dv, H = ds->heads, dh = d / H, dvh = dv / H;
    double *acc = aw_alloc_doubles(dvh);
    if (!acc) return aw_fail(AW_ERR_NOMEM, "retention: out of memory");
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < n; i++) {
            memset(acc, 0, dvh * sizeof(double));
            for (size_t j = 0; j < n; j++) {
                double w = 0.0;
                if (!ds->causal || j <= i) {
                    double dot = 0.0;
                    for (size_t e = 0; e < dh; e++) dot += (double)q[i * d + h * dh + e] * (double)k[j * d + h * dh + e];
                    w = (double)ds->scale * dot * pow((double)ds->gamma[h], (double)(i >= j ? i - j : j - i));
                }
                for (size_t e = 0; e < dvh; e++) acc[e] += w * (double)v[j * dv + h * dvh + e];
                if (weights) weights[(h * n + i) * n + j] = (float)w;
            }
            for (size_t e = 0; e < dvh; e++) out[i * dv + h * dvh + e] = (float)acc[e];
        }
    free(acc);
    if (weights && finite_or_fail(weights, H * n * n)) return AW_ERR_NONFINITE;
    return finite_or_fail(out, n * dv);
}

int retention_backward(float *dq, float *dk, float *dv, float *dgamma, const float *dout, const float *q,
                       const float *k, const float *v, const aw_retention_desc *ds) {
    int st = retention_check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dvw = ds->dv, H = ds->heads, dh = d / H, dvh = dvw / H;
    const size_t rows_max = n < BQ ? n : BQ;
    aw_plan plan = {0};
    const size_t o_pw = aw_plan_take(&plan, n, 1), o_dpw = aw_plan_take(&plan, n, 1);
    const size_t o_p = aw_plan_take(&plan, rows_max, n), o_g = aw_plan_take(&plan, rows_max, n);
    if (!aw_plan_ok(&plan, sizeof(float))) return aw_fail(AW_ERR_NOMEM, "retention: n = %zu is too long", n);
    float *mem = aw_alloc_floats(plan.total);
    if (!mem) return aw_fail(AW_ERR_NOMEM, "retention: out of memory for the backward's %zu x %zu blocks", rows_max, n);
    float *pw = mem + o_pw, *dpw = mem + o_dpw, *P = mem + o_p, *G = mem + o_g;
    const float scale = ds->scale;
    for (size_t h = 0; h < H; h++) {
        powers(pw, dpw, ds->gamma[h], n);
        double dg = 0.0;
        for (size_t i0 = 0; i0 < n; i0 += BQ) {
            const size_t rows = n - i0 < BQ ? n - i0 : BQ, kend = ds->causal ? i0 + rows : n;
            const float *qb = q + i0 * d + h * dh, *dob = dout + i0 * dvw + h * dvh;
            aw_matmul_nt(P, qb, k + h * dh, rows, kend, dh, d, d, kend, 0);      // q_i . k_j
            aw_matmul_nt(G, dob, v + h * dvh, rows, kend, dvh, dvw, dvw, kend, 0); // dO_i . v_j
            for (size_t r = 0; r < rows; r++) {
                const size_t i = i0 + r;
                float *pr = P + r * kend, *gr = G + r * kend;
                for (size_t j = 0; j < kend; j++) {
                    if (ds->causal && j > i) {
                        pr[j] = gr[j] = 0.0f;
                        continue;
                    }
                    const size_t t = i >= j ? i - j : j - i;
                    dg += (double)gr[j] * (double)pr[j] * (double)dpw[t];
                    pr[j] *= scale * pw[t]; // the weight w_ij
                    gr[j] *= scale * pw[t]; // d loss / d (q_i . k_j)
                }
            }
            aw_matmul_tn(dv + h * dvh, P, dob, kend, dvh, rows, kend, dvw, dvw, 1); // dV += W^T dO
            aw_matmul_nn(dq + i0 * d + h * dh, G, k + h * dh, rows, dh, kend, kend, d, d, 1);
            aw_matmul_tn(dk + h * dh, G, qb, kend, dh, rows, kend, d, d, 1);
        }
        if (dgamma) dgamma[h] += (float)(dg * (double)scale);
    }
    free(mem);
    return AW_OK;
}

size_t retention_state_floats(size_t d, size_t dv, size_t heads) {
    if (heads == 0 || d % heads || dv % heads) return AW_SIZE_INVALID;
    return aw_size_mul(heads, aw_size_mul(d / heads, dv / heads));
}

int retention_step(float *out, float *state, const float *q, const float *k, const float *v, size_t d, size_t dv,
                   size_t heads, const float *gamma, float scale) {
    const size_t dh = d / heads, dvh = dv / heads;
    for (size_t h = 0; h < heads; h++) {
        float *S = state + h * dh * dvh;
        const float g = gamma[h];
        for (size_t a = 0; a < dh; a++) {
            float *row = S + a * dvh;
            for (size_t b = 0; b < dvh; b++) row[b] *= g;
            aw_axpy(row, k[h * dh + a], v + h * dvh, dvh);
        }
        float *o = out + h * dvh;
        memset(o, 0, dvh * sizeof(float));
        for (size_t a = 0; a < dh; a++) aw_axpy(o, scale * q[h * dh + a], S + a * dvh, dvh);
    }
    return finite_or_fail(out, dv);
}
