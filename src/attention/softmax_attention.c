// softmax_attention.c: scaled dot-product attention, streaming and explicit-weights paths
// plus the naive reference. Formula: docs/attention-forms.md section 1.
#include "softmax_attention.h"

#include "../kernels/parallel.h"

#include "../kernels/kernels.h"
#include "../kernels/matmul_packed.h"
#include "../kernels/simd.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Query rows per block and keys per tile of the streaming path: the S tile (BR x BC, 64 KiB)
// and the block's output rows stay in L1/L2 while the packed K^T and V stream past. Measured in
// V8 at n = 512..2048 (docs/bench.md): 64 x 256 is 2% ahead of 64 x 128 (fewer rescales of the
// output rows) and 4-7% ahead of 64 x 64; 32 x 256, 128 x 256 and 64 x 512 were within 1% of it.
// BC must stay a multiple of 8 (the matmul's panel width), so every key tile starts on a panel
// of the packed K^T.
enum { BR = 64, BC = 256 };

static int key_allowed(const aw_softmax_attention_desc *ds, size_t i, size_t j) {
    if (ds->causal && j > i) return 0;
    if (ds->window && j + ds->window <= ds->q_offset + i) return 0; // out of the sliding window
    return ds->key_mask == NULL || ds->key_mask[j] != 0;
}

static float max_abs(const float *x, size_t rows, size_t cols, size_t ld) {
    float mx = 0.0f;
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < cols; c++) {
            const float a = fabsf(x[i * ld + c]);
            mx = a > mx ? a : mx;
        }
    return mx;
}

// 1 when float32 could overflow on these (finite) inputs: a logit |s q.k| can reach
// s * dh * max|q| * max|k|, and an unnormalised tile sum of P V up to m * max|v|. Then the
// double-precision path runs instead, which gives the right answer for any finite input.
static int float32_may_overflow(const float *q, const float *k, const float *v, const aw_softmax_attention_desc *ds) {
    const double limit = 1e37; // FLT_MAX / 34: headroom for the sums of a tile
    const double logit = fabs((double)ds->scale) * (double)(ds->d / ds->heads) * max_abs(q, ds->n, ds->d, ds->d) *
                         max_abs(k, ds->m, ds->d, ds->d);
    const double value = (double)ds->m * max_abs(v, ds->m, ds->dv, ds->dv);
    return !(logit < limit) || !(value < limit);
}

int softmax_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                              const aw_softmax_attention_desc *desc) {
    if (desc->heads == 0 || desc->d % desc->heads || desc->dv % desc->heads || desc->n == 0 || desc->m == 0)
        return aw_fail(AW_ERR_ARG, "softmax attention: sizes must be positive and heads must divide d and dv");
    if (!isfinite(desc->scale)) return aw_fail(AW_ERR_ARG, "softmax attention: scale must be finite");
    int st;
    if (float32_may_overflow(q, k, v, desc)) st = softmax_attention_forward_ref(out, weights, q, k, v, desc);
    else if (weights) st = softmax_attention_forward_weights(out, weights, q, k, v, desc);
    else st = softmax_attention_forward_streaming(out, q, k, v, desc);
    if (st) return st == AW_ERR_NOMEM ? aw_fail(st, "softmax attention: out of memory for its workspace") : st;
    const size_t bad = aw_find_nonfinite(out, desc->n * desc->dv);
    if (bad != desc->n * desc->dv) // a backstop: the paths above keep finite inputs finite
        return aw_fail(AW_ERR_NONFINITE, "softmax attention: output row %zu is not finite", bad / desc->dv);
    return AW_OK;
}

// The streaming path works in base 2: Q is scaled by scale * log2(e) once, so a tile's
// probabilities are 2^(s - max), which needs no ln 2 range reduction (measured ~4% faster).
#define LOG2E 1.44269504088896341f
#define LN2 0.693147180559945309f

#if AW_SIMD
// 2^x for x <= 0 (a base-2 logit minus its row max), exactly 0 at and below -125.5 and for -inf.
// n = round(x) comes from the 1.5 * 2^23 magic-number addition, whose low bits then already
// hold n + 127, so 2^n is one shift (no float rounding, no float-to-int conversion, which V8
// expands into several instructions on x64); r = x - n is exact, and 2^r = 1 + r P(r) on
// |r| <= 1/2 with the Cephes exp2f coefficients (relative error ~2e-7), P by Estrin's scheme:
// P = (P0 r + P1) r^4 + (P2 r + P3) r^2 + (P4 r + P5), half the dependency depth of Horner's.
static inline aw_f32x4 exp2_nonpositive(aw_f32x4 x) {
    const aw_f32x4 magic = aw_splat(12583039.0f); // 1.5 * 2^23 + 127
    aw_f32x4 keep = aw_gt(x, aw_splat(-125.5f));  // false for -inf; 2^n stays a normal float
    aw_f32x4 t = aw_add(x, magic);
    aw_f32x4 r = aw_sub(x, aw_sub(t, magic));
    aw_f32x4 r2 = aw_mul(r, r);
    aw_f32x4 p01 = aw_madd(aw_splat(1.339887440266574e-3f), aw_splat(1.535336188319500e-4f), r);
    aw_f32x4 p23 = aw_madd(aw_splat(5.550332471162809e-2f), aw_splat(9.618437357674640e-3f), r);
    aw_f32x4 p45 = aw_madd(aw_splat(6.931472028550421e-1f), aw_splat(2.402264791363012e-1f), r);
    aw_f32x4 p = aw_madd(p45, aw_madd(p23, p01, r2), r2);
    p = aw_madd(aw_splat(1.0f), r, p);
    aw_f32x4 y = aw_mul(p, aw_cast_f32(aw_i32_shl((aw_i32x4)t, 23))); // bit cast of t, then 2^n
    return aw_and(keep, y);
}
#endif

// max(x[0 .. n)) with four independent running maxima (one chain is latency-bound); -inf for n == 0.
static float row_max_value(const float *x, size_t n) {
    size_t i = 0;
    float mx = -INFINITY;
#if AW_SIMD
    if (n >= 16) {
        aw_f32x4 m0 = aw_load(x), m1 = aw_load(x + 4), m2 = aw_load(x + 8), m3 = aw_load(x + 12);
        for (i = 16; i + 16 <= n; i += 16) {
            m0 = aw_max(m0, aw_load(x + i));
            m1 = aw_max(m1, aw_load(x + i + 4));
            m2 = aw_max(m2, aw_load(x + i + 8));
            m3 = aw_max(m3, aw_load(x + i + 12));
        }
        mx = aw_hmax(aw_max(aw_max(m0, m1), aw_max(m2, m3)));
    }
#endif
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

// x = 2^(x - shift) in place over n values, returns their sum; shift >= max(x) and finite.
static float exp2_shift_sum_row(float *x, float shift, size_t n) {
    size_t i = 0;
    float sum = 0.0f;
#if AW_SIMD
    aw_f32x4 vs = aw_splat(shift), acc = aw_splat(0.0f);
    for (; i + 4 <= n; i += 4) {
        aw_f32x4 e = exp2_nonpositive(aw_sub(aw_load(x + i), vs));
        aw_store(x + i, e);
        acc = aw_add(acc, e);
    }
    sum = aw_hsum(acc);
#endif
    for (; i < n; i++) {
        x[i] = aw_expf((x[i] - shift) * LN2);
        sum += x[i];
    }
    return sum;
}

// The streaming path's work, cut for threads (src/kernels/parallel.h) by sizes alone: first every
// head's K^T and V panels (items of PB keys), then one item per (head, block of BR query rows),
// each with its own scratch and its own rows of out; so any thread count gives the same bits.
typedef struct {
    const aw_softmax_attention_desc *ds;
    const float *q, *k, *v;
    float *out, *kp, *vp, *weights; // weights: the weights path's (h, n, m)
    float *lse;                     // NULL, or (h, n): each row's log-sum-exp of its scaled logits
    size_t kp_stride, vp_stride, blocks;
    int status;
} stream_job;

// Item (head, part): parts 0 .. pb-1 pack PB keys' panels of K^T, parts pb .. 2pb-1 PB rows of V.
enum { PB = 64 };
static void stream_pack(void *ctx, size_t item) {
    stream_job *j = ctx;
    const size_t d = j->ds->d, dv = j->ds->dv, h = j->ds->heads, dh = d / h, dvh = dv / h, m = j->ds->m;
    const size_t pb = (m + PB - 1) / PB, hd = item / (2 * pb), part = item % (2 * pb);
    const size_t r0 = (part % pb) * PB, r1 = m - r0 < PB ? m : r0 + PB;
    // B = K_h^T: element (c, j) at k[j d + hd dh + c]; V_h: rows of dvh with stride dv
    if (part < pb) aw_pack_b_block(j->kp + hd * j->kp_stride, j->k + hd * dh, dh, m, 1, d, 0, dh, r0, r1);
    else aw_pack_b_block(j->vp + hd * j->vp_stride, j->v + hd * dvh, m, dvh, dv, 1, r0, r1, 0, dvh);
}

static void stream_block(void *ctx, size_t item) {
    stream_job *j = ctx;
    const aw_softmax_attention_desc *ds = j->ds;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    const size_t hd = item / j->blocks, i0 = (item % j->blocks) * BR, br = n - i0 < BR ? n - i0 : BR;
    const float *kp = j->kp + hd * j->kp_stride, *vp = j->vp + hd * j->vp_stride;
    // scratch: the scaled query block (BR, dh), logits then probabilities (BR, BC), and per row
    // the running max and sum of exp
    float *qs = malloc((BR * dh + BR * BC + 2 * BR) * sizeof(float));
    if (!qs) {
        aw_first_failure(&j->status, AW_ERR_NOMEM);
        return;
    }
    float *s = qs + BR * dh, *row_max = s + BR * BC, *row_sum = row_max + BR;
    float *oh = j->out + i0 * dv + hd * dvh; // (br, dvh), stride dv
    for (size_t r = 0; r < br; r++) {
        aw_scale(qs + r * dh, j->q + (i0 + r) * d + hd * dh, ds->scale * LOG2E, dh); // base-2 logits
        memset(oh + r * dv, 0, dvh * sizeof(float));
        // a learned sink is the row's first column, with no value: the running max and sum start from it
        row_max[r] = ds->sinks ? ds->sinks[hd] * LOG2E : -INFINITY;
        row_sum[r] = ds->sinks ? 1.0f : 0.0f;
    }
    // causal: keys past the block's last row are masked for every row of it; a window: keys before
    // its first row's window are masked for every row (the start stays on a panel of 8 keys)
    const size_t kend = ds->causal ? (m < i0 + br ? m : i0 + br) : m;
    const size_t first = ds->window && ds->q_offset + i0 + 1 > ds->window ? ds->q_offset + i0 + 1 - ds->window : 0;
    const size_t kstart = first / 8 * 8;
    const float cap2 = ds->softcap * LOG2E; // the cap in base 2, as the logits are
    for (size_t j0 = kstart; j0 < kend; j0 += BC) {
        const size_t bc = kend - j0 < BC ? kend - j0 : BC;
        aw_matmul_packed(s, qs, kp + j0 * dh, br, bc, dh, dh, 8 * dh, BC, 0); // S = Q_s K^T
        const int needs_mask = ds->key_mask != NULL || (ds->causal && j0 + bc - 1 > i0) || ds->window;
        for (size_t r = 0; r < br; r++) {
            float *sr = s + r * BC;
            if (ds->softcap > 0.0f) // Gemma 2's soft-capping of the scaled logit
                for (size_t jj = 0; jj < bc; jj++) sr[jj] = cap2 * tanhf(sr[jj] / cap2);
            if (ds->slopes) // the score bias (ALiBi), in base 2 as the logits are
                for (size_t jj = 0; jj < bc; jj++) sr[jj] += aw_score_bias(ds, hd, i0 + r, j0 + jj) * LOG2E;
            if (needs_mask) { // keys [lo, hi) of this tile are in the row's band; then the key mask
                const size_t qi = ds->q_offset + i0 + r, lo = ds->window && qi + 1 > ds->window ? qi + 1 - ds->window : 0;
                const size_t hi = ds->causal ? i0 + r + 1 : m;
                for (size_t jj = 0; jj < bc && j0 + jj < lo; jj++) sr[jj] = -INFINITY;
                for (size_t jj = hi > j0 ? hi - j0 : 0; jj < bc; jj++) sr[jj] = -INFINITY;
                if (ds->key_mask)
                    for (size_t jj = 0; jj < bc; jj++)
                        if (!ds->key_mask[j0 + jj]) sr[jj] = -INFINITY;
            }
            const float tile_max = row_max_value(sr, bc);
            const float new_max = tile_max > row_max[r] ? tile_max : row_max[r];
            if (new_max == -INFINITY) { // nothing allowed yet: this row adds nothing
                memset(sr, 0, bc * sizeof(float));
                continue;
            }
            // rescale what was accumulated under the old max: 2^(old - new), 0 when old = -inf
            const float alpha = aw_expf((row_max[r] - new_max) * LN2);
            const float tile_sum = exp2_shift_sum_row(sr, new_max, bc);
            if (alpha != 1.0f) aw_scale(oh + r * dv, oh + r * dv, alpha, dvh);
            row_sum[r] = row_sum[r] * alpha + tile_sum;
            row_max[r] = new_max;
        }
        aw_matmul_packed(oh, s, vp + 8 * j0, br, dvh, bc, BC, 8 * m, dv, 1); // O += P V
    }
    for (size_t r = 0; r < br; r++) { // O /= l; a row that saw no key stays zero
        if (row_sum[r] > 0.0f) aw_scale(oh + r * dv, oh + r * dv, 1.0f / row_sum[r], dvh);
        // natural log-sum-exp: the base-2 max times ln 2, plus ln of the sum of 2^(s - max)
        if (j->lse) j->lse[hd * n + i0 + r] = row_sum[r] > 0.0f ? row_max[r] * LN2 + logf(row_sum[r]) : -INFINITY;
    }
    free(qs);
}

static int streaming(float *out, float *lse, const float *q, const float *k, const float *v,
                     const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dv % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dv / h;
    // K^T and V are packed once per head into the matmul's 8-column panels, so every query
    // block multiplies by them with no per-tile packing: key tile j0 of K^T is 8-aligned panels
    // starting at kp + j0 * dh (panel stride 8 dh); rows j0 .. of V start at vp + 8 j0.
    stream_job j = {.ds = ds, .q = q, .k = k, .v = v, .out = out, .lse = lse, .kp_stride = aw_packed_b_floats(dh, m),
                    .vp_stride = aw_packed_b_floats(m, dvh), .blocks = (n + BR - 1) / BR};
    j.kp = aw_alloc_floats(aw_size_mul(h, j.kp_stride)); // (h, m / 8, dh, 8): K^T panels
    j.vp = aw_alloc_floats(aw_size_mul(h, j.vp_stride)); // (h, dvh / 8, m, 8): V panels
    if (!j.kp || !j.vp) {
        free(j.kp), free(j.vp);
        return AW_ERR_NOMEM;
    }
    const double macs = (double)n * (double)m * (double)(d + dv); // a generation step's one row runs in turn
    aw_parallel_for_work(aw_size_mul(h, 2 * ((m + PB - 1) / PB)), stream_pack, &j, macs);
    aw_parallel_for_work(aw_size_mul(h, j.blocks), stream_block, &j, macs);
    free(j.kp), free(j.vp);
    return j.status;
}

int softmax_attention_forward_streaming(float *out, const float *q, const float *k, const float *v,
                                        const aw_softmax_attention_desc *ds) {
    return streaming(out, NULL, q, k, v, ds);
}

// Row softmax with a sink: p_j = exp(w_j) / (exp(sink) + sum_j exp(w_j)), the sink's own share
// dropped (so a row sums to less than 1).
static void softmax_rows_sink(float *w, size_t rows, size_t m, float sink) {
    for (size_t r = 0; r < rows; r++) {
        float *x = w + r * m;
        const float mx = fmaxf(row_max_value(x, m), sink);
        double sum = exp((double)sink - mx);
        for (size_t c = 0; c < m; c++) sum += x[c] = expf(x[c] - mx);
        for (size_t c = 0; c < m; c++) x[c] = (float)(x[c] / sum);
    }
}

// The weights path cut the same way: one item per (head, block of BR query rows), each with its
// own scaled queries and its own rows of the weights and of out.
static void weights_block(void *ctx, size_t item) {
    stream_job *j = ctx;
    const aw_softmax_attention_desc *ds = j->ds;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    const size_t hd = item / j->blocks, i0 = (item % j->blocks) * BR, br = n - i0 < BR ? n - i0 : BR;
    // calloc, not malloc: gcc -O2 (the native trainer) cannot see that aw_scale writes every value
    float *qs = calloc(BR * dh, sizeof(float)); // (br, dh): the block's scaled queries
    if (!qs) {
        aw_first_failure(&j->status, AW_ERR_NOMEM);
        return;
    }
    float *w = j->weights + hd * n * m + i0 * m; // (br, m): this block's rows of the weights
    for (size_t r = 0; r < br; r++) aw_scale(qs + r * dh, j->q + (i0 + r) * d + hd * dh, ds->scale, dh);
    aw_matmul_nt(w, qs, j->k + hd * dh, br, m, dh, dh, d, m, 0);
    if (ds->softcap > 0.0f)
        for (size_t c = 0; c < br * m; c++) w[c] = aw_softcap(w[c], ds->softcap);
    if (ds->slopes)
        for (size_t r = 0; r < br; r++)
            for (size_t c = 0; c < m; c++) w[r * m + c] += aw_score_bias(ds, hd, i0 + r, c);
    if (ds->causal || ds->key_mask || ds->window)
        for (size_t r = 0; r < br; r++)
            for (size_t c = 0; c < m; c++)
                if (!key_allowed(ds, i0 + r, c)) w[r * m + c] = -INFINITY;
    if (ds->sinks) softmax_rows_sink(w, br, m, ds->sinks[hd]);
    else aw_softmax_rows(w, br, m, m);
    aw_matmul_nn(j->out + i0 * dv + hd * dvh, w, j->v + hd * dvh, br, dvh, m, m, dv, dv, 0);
    free(qs);
}

int softmax_attention_forward_weights(float *out, float *weights, const float *q, const float *k,
                                      const float *v, const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dv % h || n == 0 || m == 0) return AW_ERR_ARG;
    stream_job j = {.ds = ds, .q = q, .k = k, .v = v, .out = out, .weights = weights, .blocks = (n + BR - 1) / BR};
    aw_parallel_for(aw_size_mul(h, j.blocks), weights_block, &j);
    return j.status;
}

static int forward_ref(float *out, float *weights, float *lse, const float *q, const float *k, const float *v,
                       const aw_softmax_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    if (h == 0 || d % h || dv % h || n == 0 || m == 0) return AW_ERR_ARG;
    const size_t dh = d / h, dvh = dv / h;
    double *p = aw_alloc_doubles(m); // (m): one row of probabilities
    if (!p) return AW_ERR_NOMEM;
    for (size_t hd = 0; hd < h; hd++)
        for (size_t i = 0; i < n; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < m; j++) {
                double s = 0.0;
                for (size_t c = 0; c < dh; c++) s += (double)q[i * d + hd * dh + c] * k[j * d + hd * dh + c];
                s *= ds->scale;
                if (ds->softcap > 0.0f) s = ds->softcap * tanh(s / ds->softcap);
                p[j] = key_allowed(ds, i, j) ? s + aw_score_bias(ds, hd, i, j) : -INFINITY;
                if (p[j] > mx) mx = p[j];
            }
            if (ds->sinks && ds->sinks[hd] > mx) mx = ds->sinks[hd];
            if (ds->sinks) sum = exp(ds->sinks[hd] - mx); // the sink's column: in the sum, not in the output
            for (size_t j = 0; j < m; j++) {
                p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx);
                sum += p[j];
            }
            for (size_t j = 0; j < m; j++) p[j] = sum > 0.0 ? p[j] / sum : 0.0;
            if (lse) lse[hd * n + i] = sum > 0.0 ? (float)(mx + log(sum)) : -INFINITY;
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

int softmax_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                  const aw_softmax_attention_desc *ds) {
    return forward_ref(out, weights, NULL, q, k, v, ds);
}

int softmax_attention_forward_lse(float *out, float *lse, const float *q, const float *k, const float *v,
                                  const aw_softmax_attention_desc *desc) {
    if (desc->heads == 0 || desc->d % desc->heads || desc->dv % desc->heads || desc->n == 0 || desc->m == 0)
        return aw_fail(AW_ERR_ARG, "softmax attention: sizes must be positive and heads must divide d and dv");
    if (!isfinite(desc->scale)) return aw_fail(AW_ERR_ARG, "softmax attention: scale must be finite");
    int st = float32_may_overflow(q, k, v, desc) ? forward_ref(out, NULL, lse, q, k, v, desc)
                                                 : streaming(out, lse, q, k, v, desc);
    if (st) return st == AW_ERR_NOMEM ? aw_fail(st, "softmax attention: out of memory for its workspace") : st;
    const size_t bad = aw_find_nonfinite(out, desc->n * desc->dv);
    if (bad != desc->n * desc->dv)
        return aw_fail(AW_ERR_NONFINITE, "softmax attention: output row %zu is not finite", bad / desc->dv);
    return AW_OK;
}

int softmax_attention_may_overflow(const float *q, const float *k, const float *v, const aw_softmax_attention_desc *desc) {
    return float32_may_overflow(q, k, v, desc);
}
