// softmax_attention.c: scaled dot-product attention, streaming and explicit-weights paths
// plus the naive reference. Formula: ATTENTION_FORMS.md section 1.
#include "softmax_attention.h"

#include "../kernels/kernels.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Query rows per block and keys per tile of the streaming path: the S tile (BR x BC) and the
// block's output rows stay in L1/L2 while K^T and V stream past.
enum { BR = 64, BC = 128 };

static int key_allowed(const aw_softmax_attention_desc *ds, size_t i, size_t j) {
    if (ds->causal && j > i) return 0;
    return ds->key_mask == NULL || ds->key_mask[j] != 0;
}

int softmax_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                              const aw_softmax_attention_desc *desc) {
    if (weights) return softmax_attention_forward_weights(out, weights, q, k, v, desc);
    return softmax_attention_forward_streaming(out, q, k, v, desc);
}

int softmax_attention_forward_streaming(float *out, const float *q, const float *k, const float *v,
                                        const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dv % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dv / h;
    float *kt = malloc(dh * m * sizeof(float));      // (dh, m): this head's K^T
    float *qs = malloc(BR * dh * sizeof(float));     // (BR, dh): scaled query block
    float *s = malloc(BR * BC * sizeof(float));      // (BR, BC): logits, then probabilities
    float *row_max = malloc(BR * sizeof(float));     // (BR) running max per row
    float *row_sum = malloc(BR * sizeof(float));     // (BR) running sum of exp per row
    if (!kt || !qs || !s || !row_max || !row_sum) {
        free(kt), free(qs), free(s), free(row_max), free(row_sum);
        return AW_ERR_NOMEM;
    }
    for (size_t hd = 0; hd < h; hd++) {
        aw_transpose(kt, k + hd * dh, m, dh, d, m);
        const float *vh = v + hd * dvh;
        for (size_t i0 = 0; i0 < n; i0 += BR) {
            const size_t br = n - i0 < BR ? n - i0 : BR;
            float *oh = out + i0 * dv + hd * dvh; // (br, dvh), stride dv
            for (size_t r = 0; r < br; r++) {
                aw_scale(qs + r * dh, q + (i0 + r) * d + hd * dh, ds->scale, dh);
                memset(oh + r * dv, 0, dvh * sizeof(float));
                row_max[r] = -INFINITY;
                row_sum[r] = 0.0f;
            }
            // causal: keys past the block's last row are masked for every row of it
            const size_t kend = ds->causal ? (m < i0 + br ? m : i0 + br) : m;
            for (size_t j0 = 0; j0 < kend; j0 += BC) {
                const size_t bc = kend - j0 < BC ? kend - j0 : BC;
                aw_matmul_nn(s, qs, kt + j0, br, bc, dh, dh, m, BC, 0);
                const int needs_mask = ds->key_mask != NULL || (ds->causal && j0 + bc - 1 > i0);
                for (size_t r = 0; r < br; r++) {
                    float *sr = s + r * BC;
                    if (needs_mask)
                        for (size_t j = 0; j < bc; j++)
                            if (!key_allowed(ds, i0 + r, j0 + j)) sr[j] = -INFINITY;
                    const float tile_max = aw_max_value(sr, bc);
                    const float new_max = tile_max > row_max[r] ? tile_max : row_max[r];
                    if (new_max == -INFINITY) { // nothing allowed yet: this row adds nothing
                        memset(sr, 0, bc * sizeof(float));
                        continue;
                    }
                    // rescale what was accumulated under the old max: exp(old - new), 0 when old = -inf
                    const float alpha = aw_expf(row_max[r] - new_max);
                    const float tile_sum = aw_exp_shift_sum(sr, sr, new_max, bc);
                    if (alpha != 1.0f) aw_scale(oh + r * dv, oh + r * dv, alpha, dvh);
                    row_sum[r] = row_sum[r] * alpha + tile_sum;
                    row_max[r] = new_max;
                }
                aw_matmul_nn(oh, s, vh + j0 * dv, br, dvh, bc, BC, dv, dv, 1); // O += P V
            }
            for (size_t r = 0; r < br; r++) { // O /= l; a row that saw no key stays zero
                if (row_sum[r] > 0.0f) aw_scale(oh + r * dv, oh + r * dv, 1.0f / row_sum[r], dvh);
            }
        }
    }
    free(kt), free(qs), free(s), free(row_max), free(row_sum);
    return AW_OK;
}

int softmax_attention_forward_weights(float *out, float *weights, const float *q, const float *k,
                                      const float *v, const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dv % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dv / h;
    float *qs = malloc(n * dh * sizeof(float)); // (n, dh): this head's scaled queries
    if (!qs) return AW_ERR_NOMEM;
    for (size_t hd = 0; hd < h; hd++) {
        float *w = weights + hd * n * m; // (n, m)
        for (size_t i = 0; i < n; i++) aw_scale(qs + i * dh, q + i * d + hd * dh, ds->scale, dh);
        aw_matmul_nt(w, qs, k + hd * dh, n, m, dh, dh, d, m, 0);
        if (ds->causal || ds->key_mask)
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < m; j++)
                    if (!key_allowed(ds, i, j)) w[i * m + j] = -INFINITY;
        aw_softmax_rows(w, n, m, m);
        aw_matmul_nn(out + hd * dvh, w, v + hd * dvh, n, dvh, m, m, dv, dv, 0);
    }
    free(qs);
    return AW_OK;
}

int softmax_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                  const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dv % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dv / h;
    double *p = malloc(m * sizeof(double)); // (m): one row of probabilities
    if (!p) return AW_ERR_NOMEM;
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < m; j++) {
                double s = 0.0;
                for (size_t c = 0; c < dh; c++) s += (double)q[i * d + hd * dh + c] * k[j * d + hd * dh + c];
                p[j] = key_allowed(ds, i, j) ? s * ds->scale : -INFINITY;
                if (p[j] > mx) mx = p[j];
            }
            for (size_t j = 0; j < m; j++) {
                p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx);
                sum += p[j];
            }
            for (size_t j = 0; j < m; j++) p[j] = sum > 0.0 ? p[j] / sum : 0.0;
            if (weights)
                for (size_t j = 0; j < m; j++) weights[hd * n * m + i * m + j] = (float)p[j];
            for (size_t c = 0; c < dvh; c++) {
                double o = 0.0;
                for (size_t j = 0; j < m; j++) o += p[j] * v[j * dv + hd * dvh + c];
                out[i * dv + hd * dvh + c] = (float)o;
            }
        }
    free(p);
    return AW_OK;
}
