// local_attention.c: local (sliding-window) attention; formulas and shapes in local_attention.h.
#include "local_attention.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void local_attention_band(const aw_local_attention_desc *ds, size_t i, size_t *lo, size_t *hi) {
    const size_t w = ds->window;
    if (ds->causal) *lo = i + 1 >= w ? i + 1 - w : 0, *hi = i + 1;
    else *lo = i >= w / 2 ? i - w / 2 : 0, *hi = i + w / 2 + 1;
    if (*hi > ds->m) *hi = ds->m;
    if (*lo > *hi) *lo = *hi;
}

int local_attention_check(const aw_local_attention_desc *ds) {
    if (ds->n == 0 || ds->m == 0 || ds->d == 0 || ds->dv == 0 || ds->heads == 0 || ds->d % ds->heads ||
        ds->dv % ds->heads)
        return aw_fail(AW_ERR_ARG, "local attention: sizes must be positive and heads must divide d and dv");
    if (ds->window == 0) return aw_fail(AW_ERR_ARG, "local attention: window must be at least 1");
    if (!isfinite(ds->scale)) return aw_fail(AW_ERR_ARG, "local attention: scale must be finite");
    return AW_OK;
}

// p (cnt) = softmax of the band's logits for query row qi of head hd; returns the band.
static void band_probs(float *p, const float *qi, const float *k, const aw_local_attention_desc *ds, size_t hd,
                       size_t lo, size_t hi) {
    const size_t d = ds->d, dh = d / ds->heads;
    float mx = -INFINITY;
    for (size_t j = lo; j < hi; j++) {
        const float s = aw_dot(qi, k + j * d + hd * dh, dh) * ds->scale;
        p[j - lo] = s;
        mx = s > mx ? s : mx;
    }
    float sum = 0.0f;
    for (size_t j = 0; j < hi - lo; j++) sum += p[j] = expf(p[j] - mx);
    for (size_t j = 0; j < hi - lo; j++) p[j] /= sum;
}

int local_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                            const aw_local_attention_desc *ds) {
    int st = local_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    float *p = aw_alloc_floats(aw_size_add(ds->window, 2)); // a band holds at most w + 1 keys
    if (!p) return aw_fail(AW_ERR_NOMEM, "local attention: out of memory for a window of %zu", ds->window);
    if (weights) memset(weights, 0, aw_size_mul3(h, n, m) * sizeof(float));
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            size_t lo, hi;
            local_attention_band(ds, i, &lo, &hi);
            float *o = out + i * dv + hd * dvh;
            memset(o, 0, dvh * sizeof(float));
            if (lo == hi) continue; // no key in range: a zero row
            band_probs(p, q + i * d + hd * dh, k, ds, hd, lo, hi);
            for (size_t j = lo; j < hi; j++) aw_axpy(o, p[j - lo], v + j * dv + hd * dvh, dvh);
            if (weights) memcpy(weights + (hd * n + i) * m + lo, p, (hi - lo) * sizeof(float));
        }
    free(p);
    const size_t bad = aw_find_nonfinite(out, n * dv);
    if (bad != n * dv)
        return aw_fail(AW_ERR_NONFINITE, "local attention: output row %zu is not finite (logits overflow float32: "
                                         "scale q or k down)", bad / dv);
    return AW_OK;
}

int local_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                const aw_local_attention_desc *ds) {
    int st = local_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    double *p = aw_alloc_doubles(m);
    if (!p) return aw_fail(AW_ERR_NOMEM, "local attention: out of memory");
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            size_t lo, hi;
            local_attention_band(ds, i, &lo, &hi);
            double mx = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < m; j++) {
                double s = 0.0;
                for (size_t c = 0; c < dh; c++) s += (double)q[i * d + hd * dh + c] * k[j * d + hd * dh + c];
                p[j] = j >= lo && j < hi ? s * ds->scale : -INFINITY; // the band as a mask
                mx = p[j] > mx ? p[j] : mx;
            }
            for (size_t j = 0; j < m; j++) sum += p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx);
            for (size_t j = 0; j < m; j++) p[j] = sum > 0.0 ? p[j] / sum : 0.0;
            if (weights)
                for (size_t j = 0; j < m; j++) weights[(hd * n + i) * m + j] = (float)p[j];
            for (size_t c = 0; c < dvh; c++) {
                double o = 0.0;
                for (size_t j = 0; j < m; j++) o += p[j] * v[j * dv + hd * dvh + c];
                out[i * dv + hd * dvh + c] = (float)o;
            }
        }
    free(p);
    return AW_OK;
}

// For row i: P = softmax(S) over the band, O = P V. Given dO:
//   dP_j = dO . v_j;  dS_j = P_j (dP_j - sum_l P_l dP_l);  dq_i += scale sum_j dS_j k_j;
//   dk_j += scale dS_j q_i;  dv_j += P_j dO.
int local_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                             const float *v, const aw_local_attention_desc *ds) {
    int st = local_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dvs = ds->dv, h = ds->heads, dh = d / h, dvh = dvs / h;
    float *p = aw_alloc_floats(aw_size_mul(2, aw_size_add(ds->window, 2)));
    if (!p) return aw_fail(AW_ERR_NOMEM, "local attention: out of memory for a window of %zu", ds->window);
    float *dp = p + ds->window + 2;
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            size_t lo, hi;
            local_attention_band(ds, i, &lo, &hi);
            if (lo == hi) continue;
            const float *qi = q + i * d + hd * dh, *doi = dout + i * dvs + hd * dvh;
            band_probs(p, qi, k, ds, hd, lo, hi);
            float pdp = 0.0f;
            for (size_t j = lo; j < hi; j++) {
                dp[j - lo] = aw_dot(doi, v + j * dvs + hd * dvh, dvh);
                pdp += p[j - lo] * dp[j - lo];
            }
            for (size_t j = lo; j < hi; j++) {
                const float dsj = p[j - lo] * (dp[j - lo] - pdp) * ds->scale;
                aw_axpy(dq + i * d + hd * dh, dsj, k + j * d + hd * dh, dh);
                aw_axpy(dk + j * d + hd * dh, dsj, qi, dh);
                aw_axpy(dv + j * dvs + hd * dvh, p[j - lo], doi, dvh);
            }
        }
    free(p);
    return AW_OK;
}
