// composition.c: Elhage et al. 2021's composition scores ("A Mathematical Framework for Transformer
// Circuits"): how much a later head's queries (Q), keys (K) or values (V) read what an earlier head
// writes, from the weights alone (docs/interpretability.md, model.compositionScores in wasm/hooks.js).
//
// Row vectors, as this library (x W) and TransformerLens keep them: head h writes x W_OV with
// W_OV = W_V^h W_O^h (C x C), and scores x_q W_QK x_k^T with W_QK = W_Q^h W_K^h^T (C x C). An earlier
// head (l1, h1) and a later head (l2, h2), l1 < l2, compose by
//   Q: ||W_OV^1 W_QK^2||_F   / (||W_OV^1||_F ||W_QK^2||_F)    (the query reads x W_OV^1)
//   K: ||W_OV^1 W_QK^2^T||_F / (||W_OV^1||_F ||W_QK^2||_F)    (the key reads it)
//   V: ||W_OV^1 W_OV^2||_F   / (||W_OV^1||_F ||W_OV^2||_F)    (the value reads it)
// which are TransformerLens's all_composition_scores (left = OV, right = QK, QK^T or OV; left @ right)
// and Elhage et al.'s column-vector ||W_QK^T W_OV|| etc. transposed (a Frobenius norm does not see it).
//
// What enters the matrices, as TransformerLens's defaults (fold_ln, center_writing_weights) do:
// - the norm each attention sublayer applies to its input is folded into W_Q, W_K, W_V: its weight
//   as diag(g) W; with LayerNorm the rows are also centred (P diag(g) W, P = I - 11^T / C: the
//   LayerNorm removes the mean), and so is what W_O writes (W_O P). RMSNorm: the weight only.
// - biases are left out, rotary positions and ALiBi too (they act on positions, not on the
//   residual basis), and the softmax options that act per head after the projections (qkNorm's
//   scales, outputGate) as well.
// - grouped-query attention: a query head uses the W_K, W_V of its K/V head (h / (H / KH)).
//
// How, in O(L^2 H^2 C hd^2) multiply-adds over one matrix product per pair of layers: every norm
// above is ||X Y^T||_F with X, Y of hd columns, and ||X Y^T||_F = ||X R^T||_F for any R with
// R^T R = Y^T Y (both squared are tr(X Y^T Y X^T)); so with the hd x hd Cholesky factors of the
// heads' Gram matrices (double precision),
//   left  (per earlier head h1):  R_V1 O_1                     (hd, C)  [R_V1^T R_V1 = V_1^T V_1]
//   right (per later head h2):  Q: Q_2 R_K2^T, K: K_2 R_Q2^T, V: V_2 R_O2^T   (C, hd) each
//                                                              [R_O2^T R_O2 = O_2 O_2^T]
// the numerator of each score is ||left right||_F, one hd x hd block of left_{l1} (A, C) times
// right_{l2} (C, 3A), and the norms are ||left||_F, ||right(Q)||_F. The product is taken in float
// in chunks of the C axis, each chunk's partial sums added in double.
#include "composition.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { COMPOSITION_CHUNK = 64 }; // C columns per float product before its sums go to double

int model_composition_check(const aw_model *m) {
    if (m->quant) return model_refuse_quantized(m, "composition scores (they read W_Q, W_K, W_V and W_O)");
    const aw_model_config *c = &m->cfg;
    if (aw_arch_is_rnn(c->arch) || c->arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "compositionScores needs a decoder-only transformer; this model's arch is \"%s\"",
                       c->arch == AW_ARCH_GRU ? "gru" : c->arch == AW_ARCH_GRU_ATTENTION ? "gru-attention" : "encoder-decoder");
    if (c->norm != AW_NORM_PRE)
        return aw_fail(AW_ERR_ARG, "compositionScores needs a pre-norm model: with norm \"post\" each sublayer's "
                                   "output is normalised with its own weights before the next head reads it, which "
                                   "the scores (W_OV into W_QK, W_OV) do not describe");
    for (int l = 0; l < c->layers; l++) {
        const aw_form *f = model_layer_form(c, l, NULL);
        if (!f || strcmp(f->name, "softmax") != 0)
            return aw_fail(AW_ERR_ARG, "compositionScores needs softmax attention in every layer (W_Q W_K^T and "
                                       "W_V W_O per head); layer %d's attention is \"%s\"", l, f ? f->name : "?");
    }
    return AW_OK;
}

// In place: the upper Cholesky factor R (n x n, row-major) of the symmetric positive semi-definite
// G = R^T R; a pivot at or below tol (a direction the head does not use) gives a zero row.
static void cholesky_upper(double *g, size_t n) {
    double tr = 0;
    for (size_t i = 0; i < n; i++) tr += g[i * n + i];
    const double tol = 1e-13 * (tr > 0 ? tr : 1);
    for (size_t i = 0; i < n; i++) {
        double d = g[i * n + i];
        for (size_t k = 0; k < i; k++) d -= g[k * n + i] * g[k * n + i];
        const double r = d > tol ? sqrt(d) : 0;
        g[i * n + i] = r;
        for (size_t j = i + 1; j < n; j++) {
            double s = g[i * n + j];
            for (size_t k = 0; k < i; k++) s -= g[k * n + i] * g[k * n + j];
            g[i * n + j] = r > 0 ? s / r : 0;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++) g[i * n + j] = 0;
}

// g (hd, hd) = X^T X for X the columns [col, col + hd) of x (C, ld): a head's Gram matrix.
static void gram_cols(double *g, const double *x, size_t C, size_t ld, size_t col, size_t hd) {
    for (size_t i = 0; i < hd; i++)
        for (size_t j = i; j < hd; j++) {
            double s = 0;
            for (size_t r = 0; r < C; r++) s += x[r * ld + col + i] * x[r * ld + col + j];
            g[i * hd + j] = g[j * hd + i] = s;
        }
}

// out (C, ldo) columns [oc, oc + hd) = X R^T, X the columns [col, col + hd) of x (C, ld), R (hd, hd)
// upper triangular; returns ||X R^T||_F^2.
static double times_rt(float *out, size_t ldo, size_t oc, const double *x, size_t ld, size_t col, const double *r,
                       size_t C, size_t hd) {
    double norm2 = 0;
    for (size_t row = 0; row < C; row++)
        for (size_t j = 0; j < hd; j++) {
            double s = 0;
            for (size_t k = j; k < hd; k++) s += x[row * ld + col + k] * r[j * hd + k]; // R upper: r[j][k], k >= j
            out[row * ldo + oc + j] = (float)s;
            norm2 += s * s;
        }
    return norm2;
}

// The folded reading weights of layer l: out (C, cols) = diag(g) w, centred over the C rows with
// LayerNorm (P diag(g) w).
static void fold_read(double *out, const aw_model *m, int l, const float *w, size_t cols) {
    const size_t C = (size_t)m->cfg.d_model;
    const float *g = m->w.dec[l].self.ln_w;
    for (size_t r = 0; r < C; r++)
        for (size_t j = 0; j < cols; j++) out[r * cols + j] = (double)g[r] * (double)w[r * cols + j];
    if (m->cfg.norm_type != AW_NORMTYPE_LAYER) return;
    for (size_t j = 0; j < cols; j++) {
        double mean = 0;
        for (size_t r = 0; r < C; r++) mean += out[r * cols + j];
        mean /= (double)C;
        for (size_t r = 0; r < C; r++) out[r * cols + j] -= mean;
    }
}

int model_composition_scores(const aw_model *m, float *q, float *k, float *v) {
    int st = model_composition_check(m);
    if (st) return st;
    const aw_model_config *c = &m->cfg;
    const size_t L = (size_t)c->layers, H = (size_t)c->heads, KH = (size_t)c->kv_heads, hd = model_head_dim(c),
                 C = (size_t)c->d_model, A = H * hd, KC = KH * hd, group = H / KH, R3 = 3 * A;
    const int layer_norm = c->norm_type == AW_NORMTYPE_LAYER;
    // float: per layer left (A, C) and right (C, 3A); one chunk's product (A, 3A)
    aw_plan plan = {0};
    const size_t at_left = aw_plan_take(&plan, L, aw_size_mul(A, C)), at_right = aw_plan_take(&plan, L, aw_size_mul(C, R3)),
                 at_prod = aw_plan_take(&plan, A, R3);
    // double: the folded q (C, A), k, v (C, KC), o (A, C) of one layer; a Gram (hd, hd); the product's
    // sums (A, 3A); one O_h^T (C, hd); the norms ||W_OV|| and ||W_QK|| of every head (L, H) each
    aw_plan dplan = {0};
    const size_t at_q = aw_plan_take(&dplan, C, A), at_k = aw_plan_take(&dplan, C, KC), at_v = aw_plan_take(&dplan, C, KC),
                 at_o = aw_plan_take(&dplan, A, C), at_g = aw_plan_take(&dplan, hd, hd), at_sum = aw_plan_take(&dplan, A, R3),
                 at_ot = aw_plan_take(&dplan, C, hd), at_ov = aw_plan_take(&dplan, L, H), at_qk = aw_plan_take(&dplan, L, H);
    if (!aw_plan_ok(&plan, sizeof(float)) || !aw_plan_ok(&dplan, sizeof(double)))
        return aw_fail(AW_ERR_ARG, "compositionScores: the work for %zu layers x %zu heads of %zu x %zu does not fit "
                                   "in memory", L, H, C, hd);
    float *f = aw_alloc_floats(plan.total);
    double *d = aw_alloc_doubles(dplan.total);
    if (!f || !d) return free(f), free(d), AW_ERR_NOMEM;
    double *fq = d + at_q, *fk = d + at_k, *fv = d + at_v, *fo = d + at_o, *g = d + at_g, *sum = d + at_sum,
           *ot = d + at_ot, *ov_norm = d + at_ov, *qk_norm = d + at_qk;
    float *prod = f + at_prod;

    for (size_t l = 0; l < L; l++) {
        const aw_attn_weights *w = &m->w.dec[l].self;
        float *left = f + at_left + l * A * C, *right = f + at_right + l * C * R3;
        fold_read(fq, m, (int)l, w->wq, A);
        fold_read(fk, m, (int)l, w->wk, KC);
        fold_read(fv, m, (int)l, w->wv, KC);
        for (size_t r = 0; r < A; r++) { // W_O, its rows centred with LayerNorm (W_O P)
            double mean = 0;
            for (size_t j = 0; j < C; j++) mean += fo[r * C + j] = w->wo[r * C + j];
            mean = layer_norm ? mean / (double)C : 0;
            for (size_t j = 0; j < C; j++) fo[r * C + j] -= mean;
        }
        for (size_t h = 0; h < H; h++) {
            const size_t kv = (h / group) * hd; // the K/V head's columns
            // left: R_V O_h (hd, C)
            gram_cols(g, fv, C, KC, kv, hd);
            cholesky_upper(g, hd);
            double nov = 0;
            for (size_t i = 0; i < hd; i++)
                for (size_t j = 0; j < C; j++) {
                    double s = 0;
                    for (size_t t = i; t < hd; t++) s += g[i * hd + t] * fo[(h * hd + t) * C + j];
                    left[(h * hd + i) * C + j] = (float)s;
                    nov += s * s;
                }
            ov_norm[l * H + h] = sqrt(nov);
            // right, Q: Q_h R_K^T; its norm is ||W_QK||
            gram_cols(g, fk, C, KC, kv, hd);
            cholesky_upper(g, hd);
            qk_norm[l * H + h] = sqrt(times_rt(right, R3, h * hd, fq, A, h * hd, g, C, hd));
            // right, K: K R_Q^T
            gram_cols(g, fq, C, A, h * hd, hd);
            cholesky_upper(g, hd);
            times_rt(right, R3, A + h * hd, fk, KC, kv, g, C, hd);
            // right, V: V R_O^T with R_O^T R_O = O_h O_h^T (the Gram of O_h^T's columns)
            for (size_t r = 0; r < C; r++)
                for (size_t i = 0; i < hd; i++) ot[r * hd + i] = fo[(h * hd + i) * C + r];
            gram_cols(g, ot, C, hd, 0, hd);
            cholesky_upper(g, hd);
            times_rt(right, R3, 2 * A + h * hd, fv, KC, kv, g, C, hd);
        }
    }

    const size_t per = aw_size_mul(L * H, L * H); // L <= AW_MAX_LAYERS: L * H fits when L * H * hd does
    memset(q, 0, per * sizeof *q), memset(k, 0, per * sizeof *k), memset(v, 0, per * sizeof *v);
    for (size_t l2 = 1; l2 < L; l2++)
        for (size_t l1 = 0; l1 < l2; l1++) {
            const float *left = f + at_left + l1 * A * C, *right = f + at_right + l2 * C * R3;
            memset(sum, 0, A * R3 * sizeof *sum);
            for (size_t c0 = 0; c0 < C; c0 += COMPOSITION_CHUNK) {
                const size_t kc = C - c0 < COMPOSITION_CHUNK ? C - c0 : COMPOSITION_CHUNK;
                aw_matmul_nn(prod, left + c0, right + c0 * R3, A, R3, kc, C, R3, R3, 0);
                for (size_t i = 0; i < A * R3; i++) sum[i] += prod[i];
            }
            for (size_t h2 = 0; h2 < H; h2++)
                for (size_t h1 = 0; h1 < H; h1++) {
                    double s[3] = {0, 0, 0};
                    for (size_t mode = 0; mode < 3; mode++)
                        for (size_t i = 0; i < hd; i++)
                            for (size_t j = 0; j < hd; j++) {
                                const double x = sum[(h1 * hd + i) * R3 + mode * A + h2 * hd + j];
                                s[mode] += x * x;
                            }
                    const double n1 = ov_norm[l1 * H + h1], nqk = qk_norm[l2 * H + h2], nov = ov_norm[l2 * H + h2];
                    const size_t at = ((l2 * H + h2) * L + l1) * H + h1;
                    q[at] = n1 > 0 && nqk > 0 ? (float)(sqrt(s[0]) / (n1 * nqk)) : 0;
                    k[at] = n1 > 0 && nqk > 0 ? (float)(sqrt(s[1]) / (n1 * nqk)) : 0;
                    v[at] = n1 > 0 && nov > 0 ? (float)(sqrt(s[2]) / (n1 * nov)) : 0;
                }
        }
    free(f), free(d);
    return AW_OK;
}
