// linformer.c: Linformer's projections around softmax attention (see linformer.h).
#include "linformer.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "softmax_attention.h"
#include "softmax_attention_backward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int linformer_check(const aw_linformer_desc *ds) {
    if (!ds || ds->n == 0 || ds->d == 0 || ds->dv == 0 || ds->heads == 0 || ds->k == 0 || ds->L == 0)
        return aw_fail(AW_ERR_ARG, "linformer: sizes must be positive");
    if (ds->d % ds->heads || ds->dv % ds->heads)
        return aw_fail(AW_ERR_ARG, "linformer: heads (%zu) must divide d (%zu) and dv (%zu)", ds->heads, ds->d, ds->dv);
    if (ds->n > ds->L)
        return aw_fail(AW_ERR_ARG, "linformer: n = %zu is longer than maxLen = %zu: E and F have maxLen columns, the "
                                   "longest sequence they project; use maxLen >= n", ds->n, ds->L);
    if (!isfinite(ds->scale)) return aw_fail(AW_ERR_ARG, "linformer: scale must be finite");
    return AW_OK;
}

static aw_softmax_attention_desc inner(const aw_linformer_desc *ds) {
    return (aw_softmax_attention_desc){ds->n, ds->k, ds->d, ds->dv, ds->heads, 0, ds->scale, NULL, NULL, 0, 0, 0.0f, NULL, NULL};
}

// Kp (k, d) = E[:, :n] K and Vp (k, dv) = F[:, :n] V.
static void project(float *Kp, float *Vp, const float *kk, const float *v, const float *E, const float *F,
                    const aw_linformer_desc *ds) {
    aw_matmul_nn(Kp, E, kk, ds->k, ds->d, ds->n, ds->L, ds->d, ds->d, 0);
    aw_matmul_nn(Vp, F, v, ds->k, ds->dv, ds->n, ds->L, ds->dv, ds->dv, 0);
}

int linformer_forward(float *out, float *weights, const float *q, const float *kk, const float *v, const float *E,
                      const float *F, const aw_linformer_desc *ds) {
    int st = linformer_check(ds);
    if (st) return st;
    const size_t n = ds->n, k = ds->k, H = ds->heads;
    aw_plan plan = {0};
    const size_t o_k = aw_plan_take(&plan, k, ds->d), o_v = aw_plan_take(&plan, k, ds->dv);
    const size_t o_p = aw_plan_take(&plan, weights ? aw_size_mul(H, n) : 0, k);
    if (!aw_plan_ok(&plan, sizeof(float))) return aw_fail(AW_ERR_NOMEM, "linformer: k = %zu is too large", k);
    float *mem = aw_alloc_floats(plan.total);
    if (!mem) return aw_fail(AW_ERR_NOMEM, "linformer: out of memory for %zu projected rows", k);
    float *Kp = mem + o_k, *Vp = mem + o_v, *P = weights ? mem + o_p : NULL;
    project(Kp, Vp, kk, v, E, F, ds);
    const aw_softmax_attention_desc sd = inner(ds);
    st = softmax_attention_forward(out, P, q, Kp, Vp, &sd);
    if (!st && weights)
        for (size_t h = 0; h < H; h++) aw_matmul_nn(weights + h * n * n, P + h * n * k, F, n, n, k, k, ds->L, n, 0);
    free(mem);
    if (!st && (aw_find_nonfinite(out, n * ds->dv) != n * ds->dv ||
                (weights && aw_find_nonfinite(weights, H * n * n) != H * n * n)))
        st = aw_fail(AW_ERR_NONFINITE, "linformer: the result overflowed float32 (an Infinity appeared); scale q, k, "
                                       "v, E or F down");
    return st;
}

int linformer_forward_ref(float *out, float *weights, const float *q, const float *kk, const float *v, const float *E,
                          const float *F, const aw_linformer_desc *ds) {
    int st = linformer_check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dv = ds->dv, k = ds->k, L = ds->L, H = ds->heads, dh = d / H, dvh = dv / H;
    aw_plan plan = {0};
    const size_t o_k = aw_plan_take(&plan, k, d), o_v = aw_plan_take(&plan, k, dv), o_p = aw_plan_take(&plan, k, 1);
    if (!aw_plan_ok(&plan, sizeof(double))) return aw_fail(AW_ERR_NOMEM, "linformer: k = %zu is too large", k);
    double *mem = aw_alloc_doubles(plan.total);
    if (!mem) return aw_fail(AW_ERR_NOMEM, "linformer: out of memory");
    double *Kp = mem + o_k, *Vp = mem + o_v, *p = mem + o_p;
    for (size_t r = 0; r < k; r++) {
        for (size_t e = 0; e < d; e++) {
            double s = 0.0;
            for (size_t j = 0; j < n; j++) s += (double)E[r * L + j] * (double)kk[j * d + e];
            Kp[r * d + e] = s;
        }
        for (size_t e = 0; e < dv; e++) {
            double s = 0.0;
            for (size_t j = 0; j < n; j++) s += (double)F[r * L + j] * (double)v[j * dv + e];
            Vp[r * dv + e] = s;
        }
    }
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < n; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (size_t r = 0; r < k; r++) {
                double s = 0.0;
                for (size_t e = 0; e < dh; e++) s += (double)q[i * d + h * dh + e] * Kp[r * d + h * dh + e];
                p[r] = s * (double)ds->scale;
                mx = p[r] > mx ? p[r] : mx;
            }
            for (size_t r = 0; r < k; r++) sum += (p[r] = exp(p[r] - mx));
            for (size_t r = 0; r < k; r++) p[r] /= sum;
            for (size_t e = 0; e < dvh; e++) {
                double s = 0.0;
                for (size_t r = 0; r < k; r++) s += p[r] * Vp[r * dv + h * dvh + e];
                out[i * dv + h * dvh + e] = (float)s;
            }
            if (weights)
                for (size_t j = 0; j < n; j++) {
                    double s = 0.0;
                    for (size_t r = 0; r < k; r++) s += p[r] * (double)F[r * L + j];
                    weights[(h * n + i) * n + j] = (float)s;
                }
        }
    free(mem);
    return aw_find_nonfinite(out, n * dv) == n * dv && (!weights || aw_find_nonfinite(weights, H * n * n) == H * n * n)
               ? AW_OK
               : aw_fail(AW_ERR_NONFINITE, "linformer: the result overflowed float32; scale q, k or v down");
}

int linformer_backward(float *dq, float *dk, float *dv, float *dE, float *dF, const float *dout, const float *q,
                       const float *kk, const float *v, const float *E, const float *F, const aw_linformer_desc *ds) {
    int st = linformer_check(ds);
    if (st) return st;
    const size_t n = ds->n, d = ds->d, dvw = ds->dv, k = ds->k, L = ds->L, H = ds->heads;
    aw_plan plan = {0};
    const size_t o_k = aw_plan_take(&plan, k, d), o_v = aw_plan_take(&plan, k, dvw);
    const size_t o_dk = aw_plan_take(&plan, k, d), o_dv = aw_plan_take(&plan, k, dvw);
    const size_t o_p = aw_plan_take(&plan, aw_size_mul(H, n), k), o_s = aw_plan_take(&plan, n, k);
    const size_t o_o = aw_plan_take(&plan, n, dvw);
    if (!aw_plan_ok(&plan, sizeof(float))) return aw_fail(AW_ERR_NOMEM, "linformer: n * k = %zu * %zu is too large", n, k);
    float *mem = aw_alloc_zero(plan.total, sizeof(float));
    if (!mem) return aw_fail(AW_ERR_NOMEM, "linformer: out of memory for the backward");
    float *Kp = mem + o_k, *Vp = mem + o_v, *dKp = mem + o_dk, *dVp = mem + o_dv, *P = mem + o_p, *S = mem + o_s;
    project(Kp, Vp, kk, v, E, F, ds);
    const aw_softmax_attention_desc sd = inner(ds);
    st = softmax_attention_forward(mem + o_o, P, q, Kp, Vp, &sd);
    if (!st) st = softmax_attention_backward(dq, dKp, dVp, S, dout, P, q, Kp, Vp, &sd);
    if (!st) {
        aw_matmul_tn(dk, E, dKp, n, d, k, L, d, d, 1);      // dK += E^T dKp
        aw_matmul_tn(dv, F, dVp, n, dvw, k, L, dvw, dvw, 1); // dV += F^T dVp
        if (dE) aw_matmul_nt(dE, dKp, kk, k, n, d, d, d, L, 1); // dE[:, :n] += dKp K^T
        if (dF) aw_matmul_nt(dF, dVp, v, k, n, dvw, dvw, dvw, L, 1);
    }
    free(mem);
    return st;
}
