// softmax_attention_backward.c: backward of scaled dot-product attention (docs/attention-forms.md
// section 1). Per head, with P = softmax(S), S = Q K^T s + M, O = P V:
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),  dQ = s dS K,  dK = s dS^T Q.
#include "softmax_attention_backward.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int softmax_attention_backward(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                               const float *weights, const float *q, const float *k, const float *v,
                               const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dvs = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dvs % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dvs / h;
    for (size_t hd = 0; hd < h; hd++) {
        const float *p = weights + hd * n * m; // (n, m)
        const float *doh = dout + hd * dvh;    // (n, dvh), stride dv
        aw_matmul_tn(dv + hd * dvh, p, doh, m, dvh, n, m, dvs, dvs, 1);    // dV += P^T dO
        aw_matmul_nt(scratch, doh, v + hd * dvh, n, m, dvh, dvs, dvs, m, 0); // dP = dO V^T
        for (size_t i = 0; i < n; i++) {
            float *dpi = scratch + i * m;
            const float *pi = p + i * m;
            const float r = aw_dot(dpi, pi, m);
            for (size_t j = 0; j < m; j++) dpi[j] = pi[j] * (dpi[j] - r) * ds->scale; // s dS
        }
        aw_matmul_nn(dq + hd * dh, scratch, k + hd * dh, n, dh, m, m, d, d, 1); // dQ += s dS K
        aw_matmul_tn(dk + hd * dh, scratch, q + hd * dh, m, dh, n, m, d, d, 1); // dK += s dS^T Q
    }
    return AW_OK;
}

// FlashAttention-2's backward (Dao 2023, arXiv:2307.08691, algorithm 2), serial per head: for
// each block of BQ query rows and tile of BK keys, the probabilities are recomputed from the
// logits and the forward's log-sum-exp, P = exp(s q k - lse), and with D_i = dO_i . O_i:
// dV += P^T dO, dP = dO V^T, dS = P (dP - D), dQ += s dS K, dK += s dS^T Q. Nothing of size
// n x m is stored: the scratch is FLASH_SCRATCH floats whatever n and m are.
enum { BQ = 32, BK = 64 };

size_t softmax_attention_backward_flash_floats(void) { return 3 * BQ * BK + BQ * 2; }

// The switches (softmax_attention.h), once written out: with the scaled logit u = s q.k, the
// soft-capped c tanh(u / c) has du = (1 - tanh^2(u / c)) times its gradient; a window masks
// j <= q_offset + i - window; a sink z_h is one more column with no value, so its probability
// p_z = exp(z_h - lse_i) gets dz_h = p_z (0 - D_i) (dP is 0 there: no value to multiply).
static int masked(const aw_softmax_attention_desc *ds, size_t i, size_t j) {
    return (ds->causal && j > i) || (ds->key_mask && !ds->key_mask[j]) ||
           (ds->window && j + ds->window <= ds->q_offset + i);
}

int softmax_attention_backward_flash(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                                     const float *out, const float *lse, const float *q, const float *k,
                                     const float *v, const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dvs = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dvs % h || n == 0 || m == 0) return AW_ERR_ARG;
    // where float32 could overflow, the forward ran in double: so does the backward
    if (softmax_attention_may_overflow(q, k, v, ds)) return softmax_attention_backward_ref(dq, dk, dv, dout, q, k, v, ds);
    const size_t dh = d / h, dvh = dvs / h;
    float *p = scratch, *dp = p + BQ * BK, *dcap = dp + BQ * BK, *rows = dcap + BQ * BK; // rows: D then lse
    const float scale = ds->scale;
    for (size_t hd = 0; hd < h; hd++) {
        const float *qh = q + hd * dh, *kh = k + hd * dh, *vh = v + hd * dvh, *doh = dout + hd * dvh;
        float *dqh = dq + hd * dh, *dkh = dk + hd * dh, *dvh_ = dv + hd * dvh;
        for (size_t i0 = 0; i0 < n; i0 += BQ) {
            const size_t bq = n - i0 < BQ ? n - i0 : BQ;
            float *D = rows, *L = rows + BQ;
            for (size_t r = 0; r < bq; r++) {
                D[r] = aw_dot(doh + (i0 + r) * dvs, out + (i0 + r) * dvs + hd * dvh, dvh);
                L[r] = lse[hd * n + i0 + r];
                if (ds->sinks && ds->dsinks && L[r] != -INFINITY) // dz = -p_z D
                    ds->dsinks[hd] -= expf(ds->sinks[hd] - L[r]) * D[r];
            }
            // causal: keys past the block's last row are masked for every row of it; a window: keys
            // before the block's first row's window
            const size_t kend = ds->causal ? (m < i0 + bq ? m : i0 + bq) : m;
            const size_t kstart = ds->window && ds->q_offset + i0 + 1 > ds->window ? ds->q_offset + i0 + 1 - ds->window : 0;
            for (size_t j0 = kstart; j0 < kend; j0 += BK) {
                const size_t bk = kend - j0 < BK ? kend - j0 : BK;
                aw_matmul_nt(p, qh + i0 * d, kh + j0 * d, bq, bk, dh, d, d, BK, 0); // S = Q K^T (unscaled)
                for (size_t r = 0; r < bq; r++) {
                    float *pr = p + r * BK;
                    if (L[r] == -INFINITY) { // a row with no allowed key: no probability anywhere
                        memset(pr, 0, bk * sizeof(float));
                        continue;
                    }
                    if (ds->softcap > 0.0f) // logit c tanh(u / c); keep 1 - tanh^2 for the backward
                        for (size_t c = 0; c < bk; c++) {
                            const float t = tanhf(pr[c] * scale / ds->softcap);
                            dcap[r * BK + c] = 1.0f - t * t;
                            pr[c] = ds->softcap * t + aw_score_bias(ds, hd, i0 + r, j0 + c) - L[r];
                        }
                    else
                        for (size_t c = 0; c < bk; c++) pr[c] = pr[c] * scale + aw_score_bias(ds, hd, i0 + r, j0 + c) - L[r];
                    aw_exp(pr, pr, bk);
                    if (ds->causal || ds->key_mask || ds->window) { // outside [lo, hi), or masked: 0
                        const size_t qi = ds->q_offset + i0 + r;
                        const size_t lo = ds->window && qi + 1 > ds->window ? qi + 1 - ds->window : 0;
                        const size_t hi = ds->causal ? i0 + r + 1 : m;
                        for (size_t c = 0; c < bk && j0 + c < lo; c++) pr[c] = 0.0f;
                        for (size_t c = hi > j0 ? hi - j0 : 0; c < bk; c++) pr[c] = 0.0f;
                        if (ds->key_mask)
                            for (size_t c = 0; c < bk; c++)
                                if (!ds->key_mask[j0 + c]) pr[c] = 0.0f;
                    }
                }
                aw_matmul_tn(dvh_ + j0 * dvs, p, doh + i0 * dvs, bk, dvh, bq, BK, dvs, dvs, 1); // dV += P^T dO
                aw_matmul_nt(dp, doh + i0 * dvs, vh + j0 * dvs, bq, bk, dvh, dvs, dvs, BK, 0);  // dP = dO V^T
                for (size_t r = 0; r < bq; r++)
                    for (size_t c = 0; c < bk; c++) dp[r * BK + c] = p[r * BK + c] * (dp[r * BK + c] - D[r]) * scale;
                if (ds->softcap > 0.0f) // through the cap: du = (1 - tanh^2) d(capped)
                    for (size_t r = 0; r < bq; r++)
                        for (size_t c = 0; c < bk; c++) dp[r * BK + c] *= dcap[r * BK + c];
                aw_matmul_nn(dqh + i0 * d, dp, kh + j0 * d, bq, dh, bk, BK, d, d, 1); // dQ += s dS K
                aw_matmul_tn(dkh + j0 * d, dp, qh + i0 * d, bk, dh, bq, BK, d, d, 1); // dK += s dS^T Q
            }
        }
    }
    return AW_OK;
}

int softmax_attention_backward_ref(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                   const float *k, const float *v, const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dvs = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dvs % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dvs / h;
    double *p = aw_alloc_doubles(m), *dp = aw_alloc_doubles(m), *dc = aw_alloc_doubles(m);
    if (!p || !dp || !dc) {
        free(p), free(dp), free(dc);
        return AW_ERR_NOMEM;
    }
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            double mx = -INFINITY, sum = 0.0, r = 0.0;
            for (size_t j = 0; j < m; j++) {
                double s = 0.0;
                for (size_t c = 0; c < dh; c++) s += (double)q[i * d + hd * dh + c] * k[j * d + hd * dh + c];
                s *= ds->scale;
                dc[j] = 1.0;
                if (ds->softcap > 0.0f) {
                    const double t = tanh(s / ds->softcap);
                    s = ds->softcap * t, dc[j] = 1.0 - t * t;
                }
                p[j] = !masked(ds, i, j) ? s + aw_score_bias(ds, hd, i, j) : -INFINITY;
                if (p[j] > mx) mx = p[j];
            }
            if (ds->sinks && ds->sinks[hd] > mx) mx = ds->sinks[hd];
            const double pz = ds->sinks ? exp(ds->sinks[hd] - mx) : 0.0; // the sink's column, unnormalised
            sum = pz;
            for (size_t j = 0; j < m; j++) sum += p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx);
            for (size_t j = 0; j < m; j++) {
                p[j] = sum > 0.0 ? p[j] / sum : 0.0;
                dp[j] = 0.0;
                for (size_t c = 0; c < dvh; c++) {
                    dp[j] += (double)dout[i * dvs + hd * dvh + c] * v[j * dvs + hd * dvh + c];
                    dv[j * dvs + hd * dvh + c] += (float)(p[j] * dout[i * dvs + hd * dvh + c]);
                }
                r += dp[j] * p[j];
            }
            if (ds->sinks && ds->dsinks && sum > 0.0) ds->dsinks[hd] -= (float)(pz / sum * r);
            for (size_t j = 0; j < m; j++) {
                const double g = p[j] * (dp[j] - r) * ds->scale * dc[j];
                for (size_t c = 0; c < dh; c++) {
                    dq[i * d + hd * dh + c] += (float)(g * k[j * d + hd * dh + c]);
                    dk[j * d + hd * dh + c] += (float)(g * q[i * d + hd * dh + c]);
                }
            }
        }
    free(p), free(dp), free(dc);
    return AW_OK;
}
