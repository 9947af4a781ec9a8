// local_attention.c: local (sliding-window) attention; formulas and shapes in local_attention.h.
#include "local_attention.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void local_attention_band(const aw_local_attention_desc *ds, size_t row, size_t *lo, size_t *hi) {
    const size_t w = ds->window, i = ds->q0 + row;
    if (ds->causal) *lo = i + 1 >= w ? i + 1 - w : 0, *hi = i + 1;
    else *lo = i >= w / 2 ? i - w / 2 : 0, *hi = i + w / 2 + 1;
    if (*hi > ds->m) *hi = ds->m;
    if (*lo > *hi) *lo = *hi;
}

int local_attention_allowed(const aw_local_attention_desc *ds, size_t row, size_t j) {
    size_t lo, hi;
    local_attention_band(ds, row, &lo, &hi);
    if (j >= ds->m) return 0;
    if (j >= lo && j < hi) return 1;
    const size_t i = ds->q0 + row, gap = i > j ? i - j : j - i;
    return ds->stride && gap % ds->stride == 0 && (!ds->causal || j <= i);
}

// keys (up to the bound below) = the keys query row i may use, in increasing order; returns how many.
// The band is a range, the strided keys outside it are stepped to directly: O(w + m / s) per row.
static size_t row_keys(const aw_local_attention_desc *ds, size_t row, size_t *keys) {
    size_t lo, hi, n = 0;
    local_attention_band(ds, row, &lo, &hi);
    const size_t i = ds->q0 + row, s = ds->stride;
    const size_t end = ds->causal ? (i + 1 < ds->m ? i + 1 : ds->m) : ds->m;
    if (s) // strided keys below the band: j = i mod s, i mod s + s, ... < lo
        for (size_t j = i % s; j < lo; j += s) keys[n++] = j;
    for (size_t j = lo; j < hi; j++) keys[n++] = j;
    if (s) // and above it (centred only): the first j >= hi with (j - i) % s == 0
        for (size_t j = hi > i ? i + ((hi - i + s - 1) / s) * s : hi; j < end; j += s) keys[n++] = j;
    return n;
}

// The most keys a row can have: the band (w + 1) and one in every s of the m keys, and never
// more than the m keys there are (a row's keys are distinct): a window wider than the sequence
// (1e9: every key, causal softmax) sizes its buffers by m, not by the window.
static size_t max_keys(const aw_local_attention_desc *ds) {
    const size_t most = aw_size_add(ds->window < ds->m ? ds->window + 2 : ds->m + 2,
                                    ds->stride ? ds->m / ds->stride + 2 : 0);
    return most < ds->m ? most : ds->m;
}

int local_attention_check(const aw_local_attention_desc *ds) {
    if (ds->n == 0 || ds->m == 0 || ds->d == 0 || ds->dv == 0 || ds->heads == 0 || ds->d % ds->heads ||
        ds->dv % ds->heads)
        return aw_fail(AW_ERR_ARG, "local attention: sizes must be positive and heads must divide d and dv");
    if (ds->window == 0) return aw_fail(AW_ERR_ARG, "local attention: window must be at least 1");
    if (!isfinite(ds->scale)) return aw_fail(AW_ERR_ARG, "local attention: scale must be finite");
    return AW_OK;
}

// p (cnt) = softmax of the logits of query row qi of head hd over the keys listed.
static void row_probs(float *p, const float *qi, const float *k, const aw_local_attention_desc *ds, size_t hd,
                      const size_t *keys, size_t cnt) {
    const size_t d = ds->d, dh = d / ds->heads;
    float mx = -INFINITY;
    for (size_t t = 0; t < cnt; t++) {
        const float s = aw_dot(qi, k + keys[t] * d + hd * dh, dh) * ds->scale;
        p[t] = s;
        mx = s > mx ? s : mx;
    }
    float sum = 0.0f;
    for (size_t t = 0; t < cnt; t++) sum += p[t] = expf(p[t] - mx);
    for (size_t t = 0; t < cnt; t++) p[t] /= sum;
}

int local_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                            const aw_local_attention_desc *ds) {
    int st = local_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    const size_t most = max_keys(ds);
    float *p = aw_alloc_floats(most);
    size_t *keys = aw_alloc(most, sizeof(size_t));
    if (!p || !keys) {
        free(p), free(keys);
        return aw_fail(AW_ERR_NOMEM, "local attention: out of memory for a row of %zu keys", most);
    }
    if (weights) memset(weights, 0, aw_size_mul3(h, n, m) * sizeof(float));
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            const size_t cnt = row_keys(ds, i, keys);
            float *o = out + i * dv + hd * dvh;
            memset(o, 0, dvh * sizeof(float));
            if (cnt == 0) continue; // no key in range: a zero row
            row_probs(p, q + i * d + hd * dh, k, ds, hd, keys, cnt);
            for (size_t t = 0; t < cnt; t++) aw_axpy(o, p[t], v + keys[t] * dv + hd * dvh, dvh);
            if (weights)
                for (size_t t = 0; t < cnt; t++) weights[(hd * n + i) * m + keys[t]] = p[t];
        }
    free(p), free(keys);
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
            double mx = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < m; j++) {
                double s = 0.0;
                for (size_t c = 0; c < dh; c++) s += (double)q[i * d + hd * dh + c] * k[j * d + hd * dh + c];
                p[j] = local_attention_allowed(ds, i, j) ? s * ds->scale : -INFINITY; // the pattern as a mask
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
    const size_t most = max_keys(ds);
    float *p = aw_alloc_floats(aw_size_mul(2, most));
    size_t *keys = aw_alloc(most, sizeof(size_t));
    if (!p || !keys) {
        free(p), free(keys);
        return aw_fail(AW_ERR_NOMEM, "local attention: out of memory for a row of %zu keys", most);
    }
    float *dp = p + most;
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            const size_t cnt = row_keys(ds, i, keys);
            if (cnt == 0) continue;
            const float *qi = q + i * d + hd * dh, *doi = dout + i * dvs + hd * dvh;
            row_probs(p, qi, k, ds, hd, keys, cnt);
            float pdp = 0.0f;
            for (size_t t = 0; t < cnt; t++) {
                dp[t] = aw_dot(doi, v + keys[t] * dvs + hd * dvh, dvh);
                pdp += p[t] * dp[t];
            }
            for (size_t t = 0; t < cnt; t++) {
                const size_t j = keys[t];
                const float dsj = p[t] * (dp[t] - pdp) * ds->scale;
                aw_axpy(dq + i * d + hd * dh, dsj, k + j * d + hd * dh, dh);
                aw_axpy(dk + j * d + hd * dh, dsj, qi, dh);
                aw_axpy(dv + j * dvs + hd * dvh, p[t], doi, dvh);
            }
        }
    free(p), free(keys);
    return AW_OK;
}
