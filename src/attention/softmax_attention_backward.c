// softmax_attention_backward.c: backward of scaled dot-product attention (docs/attention-forms.md
// section 1). Per head, with P = softmax(S), S = Q K^T s + M, O = P V:
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),  dQ = s dS K,  dK = s dS^T Q.
#include "softmax_attention_backward.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>

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

int softmax_attention_backward_ref(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                   const float *k, const float *v, const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dvs = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dvs % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dvs / h;
    double *p = aw_alloc_doubles(m), *dp = aw_alloc_doubles(m);
    if (!p || !dp) {
        free(p), free(dp);
        return AW_ERR_NOMEM;
    }
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            double mx = -INFINITY, sum = 0.0, r = 0.0;
            for (size_t j = 0; j < m; j++) {
                const int allowed = !(ds->causal && j > i) && !(ds->key_mask && !ds->key_mask[j]);
                double s = 0.0;
                for (size_t c = 0; c < dh; c++) s += (double)q[i * d + hd * dh + c] * k[j * d + hd * dh + c];
                p[j] = allowed ? s * ds->scale : -INFINITY;
                if (p[j] > mx) mx = p[j];
            }
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
            for (size_t j = 0; j < m; j++) {
                const double g = p[j] * (dp[j] - r) * ds->scale;
                for (size_t c = 0; c < dh; c++) {
                    dq[i * d + hd * dh + c] += (float)(g * k[j * d + hd * dh + c]);
                    dk[j * d + hd * dh + c] += (float)(g * q[i * d + hd * dh + c]);
                }
            }
        }
    free(p), free(dp);
    return AW_OK;
}
