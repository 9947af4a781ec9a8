// linear_attention.c: linear attention with four feature maps; non-causal, causal parallel
// (chunked prefix sums) and causal recurrent forms; the implied weights; the naive reference;
// the backward; and the constant-size decoding state. Formulas: docs/attention-forms.md section 2.
#include "linear_attention.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../kernels/simd.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// Positions per chunk: the chunk's feature rows (CHUNK x D) and, in the causal parallel form,
// its CHUNK x CHUNK similarity block stay in L1 while S (D x dvh) is reused across the chunk.
enum { CHUNK = 64 };

// Feature width D of a head: taylor carries the constant 1 as an extra feature.
static size_t feature_width(int feature, size_t dh) { return feature == AW_LINEAR_TAYLOR ? dh + 1 : dh; }

// The rule that efficient attention has no causal form lives here, once: the model's registry
// row, the standalone call and the decoding state all meet it through this check.
#define NO_CAUSAL_EFFICIENT                                                                                           \
    "feature \"efficient\" has no causal form (softmax_1(K) normalises over every position, future ones included); " \
    "use causal: false, or feature \"elu+1\", \"relu\" or \"taylor\""

int linear_attention_check(const aw_linear_attention_desc *ds) {
    if (!ds || ds->n == 0 || ds->m == 0 || ds->d == 0 || ds->dv == 0 || ds->heads == 0)
        return aw_fail(AW_ERR_ARG, "linear attention: sizes must be positive");
    if (ds->d % ds->heads || ds->dv % ds->heads)
        return aw_fail(AW_ERR_ARG, "linear attention: heads (%zu) must divide d (%zu) and dv (%zu)", ds->heads, ds->d, ds->dv);
    if (ds->feature < AW_LINEAR_ELU1 || ds->feature > AW_LINEAR_TAYLOR)
        return aw_fail(AW_ERR_ARG, "linear attention: unknown feature map %d", ds->feature);
    if (ds->causal && ds->feature == AW_LINEAR_EFFICIENT) return aw_fail(AW_ERR_ARG, NO_CAUSAL_EFFICIENT);
    if (ds->causal && ds->mode != AW_LINEAR_PARALLEL && ds->mode != AW_LINEAR_RECURRENT)
        return aw_fail(AW_ERR_ARG, "linear attention: unknown mode %d", ds->mode);
    return AW_OK;
}

static int all_finite(const float *x, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

// AW_OK when x (len) is finite; else the overflow, named.
static int finite_or_fail(const float *x, size_t len) {
    return all_finite(x, len) ? AW_OK
                              : aw_fail(AW_ERR_NONFINITE, "the result overflowed float32 (an Infinity "
                                                          "appeared); scale q, k or v down");
}

// The denominator at or below which a row counts as having no similarity at all. Taylor's
// similarities 1 + cos(q, k) lie in [0, 2] and are exactly 0 for k = -q; float32 rounding leaves
// each one up to ~(D + 1) eps away from its true value, with either sign, and the parallel,
// recurrent and chunked forms round differently. So a denominator within 4 (D + 1) eps per key of
// zero is zero for every form (and the float64 reference) alike: the row is zero, never a ratio
// of rounding errors. The other feature maps' similarities are products of non-negative values:
// their denominators are exactly 0 when nothing matches.
static float den_floor(int feature, size_t D, size_t keys) {
    return feature == AW_LINEAR_TAYLOR ? 4.0f * (float)(D + 1) * FLT_EPSILON * (float)keys : 0.0f;
}

// o (len) = o / den, or zero when den is not > floor (no allowed similarity: a zero row, never
// NaN). For a subnormal den, 1 / den overflows: divide element by element instead.
static void normalise_row(float *o, float den, size_t len, float floor) {
    if (!(den > floor))
        memset(o, 0, len * sizeof(float));
    else if (den >= FLT_MIN)
        aw_scale(o, o, 1.0f / den, len);
    else if (den > 0.0f)
        for (size_t c = 0; c < len; c++) o[c] /= den;
    else
        memset(o, 0, len * sizeof(float));
}

// y (len) = x / |x|, returns |x|; a zero x gives y = 0 and 0. Scales by max |x_c| first when
// |x|^2 could overflow or underflow in float.
static float normalise_vector(float *y, const float *x, size_t len) {
    float amax = 0.0f;
    for (size_t c = 0; c < len; c++) amax = fabsf(x[c]) > amax ? fabsf(x[c]) : amax;
    if (amax == 0.0f) {
        memset(y, 0, len * sizeof(float));
        return 0.0f;
    }
    if (amax > 1e-15f && amax < 1e15f) {
        const float norm = sqrtf(aw_dot(x, x, len));
        aw_scale(y, x, 1.0f / norm, len);
        return norm;
    }
    for (size_t c = 0; c < len; c++) y[c] = x[c] / amax;
    const float s = sqrtf(aw_dot(y, y, len)); // in [1, sqrt(len)]
    aw_scale(y, y, 1.0f / s, len);
    return amax * s;
}

// Branch-free elementwise pieces of the feature maps: with random signs a branch per element
// mispredicts half the time (perf on the native build: 2/3 of the elu+1 forward before these).
// y = min(x, 0)
static void min_zero(float *y, const float *x, size_t len) {
    size_t c = 0;
#if AW_SIMD
    const aw_f32x4 zero = aw_splat(0.0f);
    for (; c + 4 <= len; c += 4) aw_store(y + c, aw_min(aw_load(x + c), zero));
#endif
    for (; c < len; c++) y[c] = x[c] < 0.0f ? x[c] : 0.0f;
}

// y = max(x, 0)
static void relu(float *y, const float *x, size_t len) {
    size_t c = 0;
#if AW_SIMD
    const aw_f32x4 zero = aw_splat(0.0f);
    for (; c + 4 <= len; c += 4) aw_store(y + c, aw_max(aw_load(x + c), zero));
#endif
    for (; c < len; c++) y[c] = x[c] > 0.0f ? x[c] : 0.0f;
}

// phi = x + 1 where x > 0, else phi unchanged (it holds exp(min(x, 0)))
static void elu1_select(float *phi, const float *x, size_t len) {
    size_t c = 0;
#if AW_SIMD
    const aw_f32x4 zero = aw_splat(0.0f), one = aw_splat(1.0f);
    for (; c + 4 <= len; c += 4) {
        const aw_f32x4 xv = aw_load(x + c);
        aw_store(phi + c, aw_select(aw_gt(xv, zero), aw_add(xv, one), aw_load(phi + c)));
    }
#endif
    for (; c < len; c++) phi[c] = x[c] > 0.0f ? x[c] + 1.0f : phi[c];
}

// phi (rows, D) = the row-local feature map of x (rows, dh), rows of x at stride ld.
// For EFFICIENT this is the query map (softmax over the dh features).
static void feature_rows(float *phi, const float *x, size_t rows, size_t dh, size_t ld, int feature) {
    const size_t D = feature_width(feature, dh);
    if (feature == AW_LINEAR_ELU1) { // x + 1 for x > 0, exp(x) otherwise (exp of min(x, 0) cannot overflow)
        for (size_t r = 0; r < rows; r++) min_zero(phi + r * D, x + r * ld, dh);
        aw_exp(phi, phi, rows * D); // one call for the whole block: phi is dense (D == dh)
        for (size_t r = 0; r < rows; r++) elu1_select(phi + r * D, x + r * ld, dh);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * ld;
        float *pr = phi + r * D;
        switch (feature) {
        case AW_LINEAR_RELU:
            relu(pr, xr, dh);
            break;
        case AW_LINEAR_EFFICIENT:
            memcpy(pr, xr, dh * sizeof(float));
            aw_softmax_rows(pr, 1, dh, dh);
            break;
        default: // AW_LINEAR_TAYLOR: [1, x / |x|] (ELU1 is handled above)
            pr[0] = 1.0f;
            normalise_vector(pr + 1, xr, dh);
            break;
        }
    }
}

// ---- elu+1 without underflow -----------------------------------------------------------------
// phi(x) = exp(min(x, 0)) (1 + max(x, 0)): for x far below 0 the features underflow float32 and a
// row whose similarities are tiny but not zero would come out all zero (q = -100, k = -100 and -1:
// exp(-200) and exp(-101) are both 0 in float32, yet the normalised answer is ~ v of the second
// key). Two exact rescalings prevent it:
//   - per key column c of a head, K_c = max_j min(k_jc, 0) over the head's keys: key features are
//     taken as phi(k_jc) exp(-K_c) and query features as phi(q_ic) exp(K_c), so every product
//     phi(q_ic) phi(k_jc), and every prefix sum of them, is unchanged (the causal forms included);
//   - per query row i, M_i = max_c (min(q_ic, 0) + K_c): its features are divided by exp(M_i) (its
//     largest exp part is 1), which the normalisation phi(q_i) S / (phi(q_i) . z) does not see.
// So each key column's largest feature is >= 1 and each query row's too: a non-causal row has a
// similarity >= 1 with some key. K_c = 0 (no shift) whenever some key has k_jc >= 0, and M_i = 0
// whenever q_i has a coordinate >= 0, so ordinary inputs take the unshifted path unchanged. The
// backward treats the shifts as constants, which is exact: the output does not depend on them.
// The decoding state keeps a running K_c (the keys so far) and rescales S and z when it grows.

// K (dh) = per column, max_j min(k_jc, 0) over the m key rows (stride ld).
static void elu1_key_shift(float *K, const float *k, size_t m, size_t dh, size_t ld) {
    for (size_t c = 0; c < dh; c++) K[c] = -INFINITY;
    for (size_t j = 0; j < m; j++)
        for (size_t c = 0; c < dh; c++) {
            const float x = k[j * ld + c] < 0.0f ? k[j * ld + c] : 0.0f;
            K[c] = x > K[c] ? x : K[c];
        }
}

// phi (rows, dh) = exp(min(x, 0) - K) for x <= 0, x + 1 for x > 0 (where K_c = 0), key rows of x
// at stride ld.
static void elu1_keys(float *phi, const float *x, size_t rows, size_t dh, size_t ld, const float *K) {
    for (size_t r = 0; r < rows; r++) {
        float *pr = phi + r * dh;
        min_zero(pr, x + r * ld, dh);
        for (size_t c = 0; c < dh; c++) pr[c] -= K[c];
    }
    aw_exp(phi, phi, rows * dh);
    for (size_t r = 0; r < rows; r++) elu1_select(phi + r * dh, x + r * ld, dh);
}

// Query rows already mapped by feature_rows (unshifted): a row is recomputed in double as
// exp(min(x, 0) + K - M) (1 + max(x, 0)) when it needs a shift (M < 0, or some K_c != 0).
// K may be NULL (no key shift).
static void elu1_query_shift(float *phi, const float *x, size_t rows, size_t dh, size_t ld, const float *K) {
    int keyed = 0;
    for (size_t c = 0; K && c < dh; c++) keyed |= K[c] != 0.0f;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * ld;
        float *pr = phi + r * dh;
        double mx = -INFINITY;
        for (size_t c = 0; c < dh; c++) {
            const double t = (double)(xr[c] < 0.0f ? xr[c] : 0.0f) + (K ? (double)K[c] : 0.0);
            mx = t > mx ? t : mx;
        }
        if (mx == 0.0 && !keyed) continue;
        for (size_t c = 0; c < dh; c++) {
            const double t = (double)(xr[c] < 0.0f ? xr[c] : 0.0f) + (K ? (double)K[c] : 0.0);
            pr[c] = (float)(exp(t - mx) * (1.0 + (xr[c] > 0.0f ? (double)xr[c] : 0.0)));
        }
    }
}

// Query features: the row-local map, then for ELU1 the shifts above (K: the head's key shift).
static void query_features(float *phi, const float *q, size_t rows, size_t dh, size_t ld, int feature,
                           const float *K) {
    feature_rows(phi, q, rows, dh, ld, feature);
    if (feature == AW_LINEAR_ELU1) elu1_query_shift(phi, q, rows, dh, ld, K);
}

// EFFICIENT keys: per column c of the head's K (m, dh), colmax[c] = max_j k_jc and
// colinv[c] = 1 / sum_j exp(k_jc - colmax[c]) (the sum is >= 1, so the inverse is finite).
static void efficient_key_stats(float *colmax, float *colinv, float *tmp, const float *k, size_t m, size_t dh,
                                size_t ld) {
    for (size_t c = 0; c < dh; c++) colmax[c] = -INFINITY, colinv[c] = 0.0f;
    for (size_t j = 0; j < m; j++)
        for (size_t c = 0; c < dh; c++) colmax[c] = k[j * ld + c] > colmax[c] ? k[j * ld + c] : colmax[c];
    for (size_t j = 0; j < m; j++) {
        for (size_t c = 0; c < dh; c++) tmp[c] = k[j * ld + c] - colmax[c];
        aw_exp(tmp, tmp, dh);
        aw_axpy(colinv, 1.0f, tmp, dh);
    }
    for (size_t c = 0; c < dh; c++) colinv[c] = 1.0f / colinv[c];
}

// phi (rows, D) for keys: the row-local map, for ELU1 with the head's key shift colmax (K above),
// or for EFFICIENT the column softmax over all m positions from efficient_key_stats:
// phi_jc = exp(k_jc - colmax[c]) * colinv[c].
static void key_features(float *phi, const float *k, size_t rows, size_t dh, size_t ld, int feature,
                         const float *colmax, const float *colinv) {
    if (feature == AW_LINEAR_ELU1 && colmax) {
        elu1_keys(phi, k, rows, dh, ld, colmax);
        return;
    }
    if (feature != AW_LINEAR_EFFICIENT) {
        feature_rows(phi, k, rows, dh, ld, feature);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        float *pr = phi + r * dh;
        for (size_t c = 0; c < dh; c++) pr[c] = k[r * ld + c] - colmax[c];
        aw_exp(pr, pr, dh);
        for (size_t c = 0; c < dh; c++) pr[c] *= colinv[c];
    }
}

// The recurrent step, shared by the causal recurrent form and aw_linear_state:
// S (D, dvh) += phik^T v, z (D) += phik.
static void state_add(float *s, float *z, const float *phik, const float *v, size_t D, size_t dvh) {
    for (size_t c = 0; c < D; c++)
        if (phik[c] != 0.0f) aw_axpy(s + c * dvh, phik[c], v, dvh);
    aw_axpy(z, 1.0f, phik, D);
}

// One chunk's keys into a state: S += phi(K_c)^T V_c (phi: rows x D, V_c rows of dvh with
// stride dv), z += the rows of phi. accumulate 0 writes S instead of adding to it.
static void add_chunk(float *s, float *z, const float *phi, const float *vc, size_t rows, size_t D, size_t dvh,
                      size_t dv, int accumulate) {
    aw_matmul_tn(s, phi, vc, D, dvh, rows, D, dv, dvh, accumulate);
    for (size_t r = 0; r < rows; r++) aw_axpy(z, 1.0f, phi + r * D, D);
}

// out (dvh) = phiq S / (phiq . z), zero when phiq . z is not > floor.
static void state_query(float *out, const float *s, const float *z, const float *phiq, size_t D, size_t dvh,
                        float floor) {
    memset(out, 0, dvh * sizeof(float));
    for (size_t c = 0; c < D; c++)
        if (phiq[c] != 0.0f) aw_axpy(out, phiq[c], s + c * dvh, dvh);
    normalise_row(out, aw_dot(phiq, z, D), dvh, floor);
}

// ---- forward paths ----------------------------------------------------------------------

// Segment count for one head's `chunks` chunks: enough (head, segment) items for ~8 threads,
// segments of at least SEG_MIN_CHUNKS chunks, and at most SEG_BUDGET floats for the G - 1 extra
// blocks of `block` floats per head (a large D gives G = 1). From the sizes alone (parallel.h).
enum { SEG_ITEMS = 8, SEG_MIN_CHUNKS = 2 };
#define SEG_BUDGET ((size_t)1 << 20) // floats (4 MiB)
static size_t segments(size_t h, size_t chunks, size_t block) {
    size_t g = h >= SEG_ITEMS ? 1 : (SEG_ITEMS + h - 1) / h;
    if (g > chunks / SEG_MIN_CHUNKS) g = chunks / SEG_MIN_CHUNKS;
    const size_t blocks = aw_size_mul(h, block);
    const size_t most = blocks == AW_SIZE_INVALID || blocks == 0 ? 1 : 1 + SEG_BUDGET / blocks;
    if (g > most) g = most;
    return g ? g : 1;
}

// First chunk of segment g of `segs` (g = segs gives chunks): the chunks split as evenly as they
// go, without a product that could overflow.
static size_t segment_start(size_t chunks, size_t segs, size_t g) {
    const size_t base = chunks / segs, rem = chunks % segs;
    return g * base + (g < rem ? g : rem);
}

static size_t chunk_count(size_t rows) { return rows / CHUNK + (rows % CHUNK != 0); }

// Non-causal: per head, S = phi(K)^T V and z = sum_j phi(k_j) over key chunks, then each query
// chunk's O = phi(Q) S / (phi(Q) z).
// Threads (src/kernels/parallel.h): a head's key chunks are cut into Gk segments and its query
// chunks into Gq (segments(), from the sizes alone): (0) EFFICIENT's key statistics, per head;
// (1) per (head, key segment), the segment's S and z into its own block; (2) per head, in order,
// the blocks' sum into block 0; (3) per (head, query segment), the output rows.
typedef struct {
    const aw_linear_attention_desc *ds;
    const float *q, *k, *v;
    float *out;
    float *blocks; // (h, Gk) blocks of kper floats: (S (D, dvh), z (D)), then a chunk's key features
    float *rows;   // (h, Gq) blocks of CHUNK x D: a chunk's query features
    float *stats;  // (h, 3 dh): EFFICIENT's colmax, colinv and a row of scratch
    size_t kper, ksegs, kchunks, qsegs, qchunks;
} noncausal_job;

static void noncausal_stats(void *ctx, size_t hd) {
    const noncausal_job *j = ctx;
    const size_t dh = j->ds->d / j->ds->heads;
    float *st = j->stats + hd * 3 * dh;
    if (j->ds->feature == AW_LINEAR_ELU1) elu1_key_shift(st, j->k + hd * dh, j->ds->m, dh, j->ds->d);
    else efficient_key_stats(st, st + dh, st + 2 * dh, j->k + hd * dh, j->ds->m, dh, j->ds->d);
}

static void noncausal_keys(void *ctx, size_t item) {
    const noncausal_job *j = ctx;
    const aw_linear_attention_desc *ds = j->ds;
    const size_t m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh);
    const size_t hd = item / j->ksegs, g = item % j->ksegs;
    float *s = j->blocks + item * j->kper; // (D, dvh)
    float *z = s + D * dvh;                // (D)
    float *phi = z + D;                    // (CHUNK, D)
    const float *st = j->stats + hd * 3 * dh, *kh = j->k + hd * dh, *vh = j->v + hd * dvh;
    memset(s, 0, (D * dvh + D) * sizeof(float));
    for (size_t c = segment_start(j->kchunks, j->ksegs, g); c < segment_start(j->kchunks, j->ksegs, g + 1); c++) {
        const size_t j0 = c * CHUNK, cm = m - j0 < CHUNK ? m - j0 : CHUNK;
        key_features(phi, kh + j0 * d, cm, dh, d, ds->feature, st, st + dh);
        add_chunk(s, z, phi, vh + j0 * dv, cm, D, dvh, dv, 1);
    }
}

static void noncausal_queries(void *ctx, size_t item) {
    const noncausal_job *j = ctx;
    const aw_linear_attention_desc *ds = j->ds;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh);
    const size_t hd = item / j->qsegs, g = item % j->qsegs;
    const float *s = j->blocks + hd * j->ksegs * j->kper, *z = s + D * dvh; // the head's sums (block 0)
    float *phi = j->rows + item * CHUNK * D;                                 // (CHUNK, D)
    const float *qh = j->q + hd * dh, *shift = j->stats + hd * 3 * dh;       // ELU1: the key shift K
    for (size_t c = segment_start(j->qchunks, j->qsegs, g); c < segment_start(j->qchunks, j->qsegs, g + 1); c++) {
        const size_t i0 = c * CHUNK, cr = n - i0 < CHUNK ? n - i0 : CHUNK;
        float *o = j->out + i0 * dv + hd * dvh; // (cr, dvh), stride dv
        query_features(phi, qh + i0 * d, cr, dh, d, ds->feature, shift);
        aw_matmul_nn(o, phi, s, cr, dvh, D, D, dvh, dv, 0); // phi(Q_c) S
        for (size_t r = 0; r < cr; r++)
            normalise_row(o + r * dv, aw_dot(phi + r * D, z, D), dvh, den_floor(ds->feature, D, m));
    }
}

static int forward_noncausal(float *out, const float *q, const float *k, const float *v,
                             const aw_linear_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh);
    const size_t state = aw_size_add(aw_size_mul(D, dvh), D), rows = aw_size_mul(CHUNK, D);
    noncausal_job j = {ds, q, k, v, out, NULL, NULL, NULL, aw_size_add(state, rows), 1, chunk_count(m), 1, chunk_count(n)};
    j.ksegs = segments(h, j.kchunks, j.kper);
    j.qsegs = segments(h, j.qchunks, rows);
    aw_plan plan = {0};
    aw_plan_take(&plan, aw_size_mul(h, j.ksegs), j.kper); // blocks, at 0
    const size_t rows_at = aw_plan_take(&plan, aw_size_mul(h, j.qsegs), rows);
    const size_t stats_at = aw_plan_take(&plan, h, aw_size_mul(3, dh));
    float *buf = aw_plan_ok(&plan, sizeof(float)) ? aw_alloc_floats(plan.total) : NULL;
    if (!buf) return AW_ERR_NOMEM;
    j.blocks = buf, j.rows = buf + rows_at, j.stats = buf + stats_at;
    if (ds->feature == AW_LINEAR_EFFICIENT || ds->feature == AW_LINEAR_ELU1) aw_parallel_for(h, noncausal_stats, &j);
    aw_parallel_for(h * j.ksegs, noncausal_keys, &j); // h * Gk blocks fit in memory: no overflow
    for (size_t hd = 0; hd < h; hd++)
        for (size_t g = 1; g < j.ksegs; g++)
            aw_axpy(j.blocks + hd * j.ksegs * j.kper, 1.0f, j.blocks + (hd * j.ksegs + g) * j.kper, state);
    aw_parallel_for(h * j.qsegs, noncausal_queries, &j);
    free(buf);
    return finite_or_fail(out, n * dv);
}

// Causal, chunked: per head, positions in chunks of CHUNK; a chunk's rows see the state (S, z)
// of every earlier chunk (phi(Q_c) S) plus the masked block phi(Q_c) phi(K_c)^T V_c of its own.
// Threads (src/kernels/parallel.h): each head's chunks are cut into G segments of whole chunks
// (segments(), from the sizes alone), so one head still keeps every thread busy:
//   1. per (head, segment), in parallel: each chunk's own sum of phi(k)^T v and phi(k) over its
//      keys into the segment's slots (the first t chunks of a segment; none when G = 1), and the
//      segment's total into block g + 1's state (not for the last segment);
//   2. per head, in order: block g's state += block g - 1's for g = 2 .. G - 1, so block g holds
//      the state of every chunk before segment g (block 0 starts at zero);
//   3. per (head, segment), in parallel: the chunk loop from block g's state; after a chunk, the
//      state grows by the chunk's slot when it has one, else by phi(K_c)^T V_c computed again.
// The same G and t (causal_slots), so the same sums in the same order, in every build and at
// every thread count. With a slot for every chunk but the segments' last, the work is the
// one-segment loop's plus phi(K) taken twice (~5-10% more on one thread); without slots, the
// matmul phi(K_c)^T V_c is done twice for most chunks (~20% more).
typedef struct {
    const aw_linear_attention_desc *ds;
    const float *q, *k, *v;
    float *out, *buf;
    float *shift;  // (h, dh): ELU1's key shift K per head (NULL for the other feature maps)
    size_t per;    // scratch floats per (head, segment) block: state (S, z), chunk work, t slots
    size_t segs;   // G: segments per head
    size_t slots;  // t: the first t chunks of each segment keep their own sums (from phase 1)
    size_t chunks; // chunks per head: ceil(n / CHUNK)
} causal_job;

// Slots t per segment: at most SEG_BUDGET floats of `state` floats each (after the G - 1 extra
// blocks of segments()); fewer than a segment's chunks leave the rest recomputed in phase 3.
static size_t causal_slots(size_t h, size_t segs, size_t chunks, size_t state) {
    if (segs == 1) return 0; // one segment: its chunk loop is the whole work; slots would add none
    const size_t longest = chunks / segs + (chunks % segs != 0);
    const size_t one = aw_size_mul3(h, segs, state); // floats of one slot in every block
    const size_t most = one == AW_SIZE_INVALID || one == 0 ? 0 : SEG_BUDGET / one;
    return longest - 1 < most ? longest - 1 : most; // a segment's last chunk never adds to its state
}

// Keys that are new in the chunk of cr rows at row i0 (keys at or after m are absent).
static size_t chunk_keys(size_t i0, size_t cr, size_t m) { return i0 < m ? (m - i0 < cr ? m - i0 : cr) : 0; }

// Phase 1: item = (head, segment g): slots of block g, and the segment's total into block g + 1.
static void causal_segment_sums(void *ctx, size_t item) {
    const causal_job *j = ctx;
    const aw_linear_attention_desc *ds = j->ds;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh), state = D * dvh + D;
    const size_t g = item % j->segs;
    const int last = g + 1 == j->segs;
    float *block = j->buf + item * j->per;
    float *phik = block + state + CHUNK * D;                         // (CHUNK, D), as in phase 3
    float *slots = phik + CHUNK * D + CHUNK * CHUNK + CHUNK;         // t x (D x dvh, D)
    float *s = last ? NULL : block + j->per, *z = s ? s + D * dvh : NULL; // block g + 1's state
    const float *kh = j->k + (item / j->segs) * dh, *vh = j->v + (item / j->segs) * dvh;
    if (s) memset(s, 0, state * sizeof(float));
    const size_t c0 = segment_start(j->chunks, j->segs, g), end = segment_start(j->chunks, j->segs, g + 1);
    for (size_t c = c0; c < end && (s || c - c0 < j->slots); c++) { // the last segment: slots only
        const size_t i0 = c * CHUNK, ck = chunk_keys(i0, n - i0 < CHUNK ? n - i0 : CHUNK, m);
        if (ck == 0) break; // no keys from here on
        key_features(phik, kh + i0 * d, ck, dh, d, ds->feature, j->shift ? j->shift + (item / j->segs) * dh : NULL, NULL);
        if (c - c0 < j->slots) {
            float *slot = slots + (c - c0) * state;
            memset(slot + D * dvh, 0, D * sizeof(float));
            add_chunk(slot, slot + D * dvh, phik, vh + i0 * dv, ck, D, dvh, dv, 0); // the chunk's own sums
            if (s) aw_axpy(s, 1.0f, slot, state);
        } else {
            add_chunk(s, z, phik, vh + i0 * dv, ck, D, dvh, dv, 1);
        }
    }
}

// Phase 3: item = (head, segment g); the chunk loop over the segment from block g's state.
static void causal_segment(void *ctx, size_t item) {
    const causal_job *j = ctx;
    const aw_linear_attention_desc *ds = j->ds;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh), state = D * dvh + D;
    const size_t hd = item / j->segs, g = item % j->segs;
    float *s = j->buf + item * j->per; // (D, dvh): sum of phi(k_j)^T v_j over the chunks before this one
    float *z = s + D * dvh;            // (D): sum of phi(k_j) over the same keys
    float *phiq = z + D;               // (CHUNK, D)
    float *phik = phiq + CHUNK * D;    // (CHUNK, D)
    float *a = phik + CHUNK * D;       // (CHUNK, CHUNK): masked similarities within the chunk
    float *den = a + CHUNK * CHUNK;    // (CHUNK)
    const float *slots = den + CHUNK;  // t x (D x dvh, D) from phase 1
    const float *kh = j->k + hd * dh, *vh = j->v + hd * dvh, *qh = j->q + hd * dh;
    const float *shift = j->shift ? j->shift + hd * dh : NULL;
    if (g == 0) memset(s, 0, state * sizeof(float)); // later segments start from phase 2's state
    const size_t c0 = segment_start(j->chunks, j->segs, g), end = segment_start(j->chunks, j->segs, g + 1);
    for (size_t c = c0; c < end; c++) {
        const size_t i0 = c * CHUNK;
        const size_t cr = n - i0 < CHUNK ? n - i0 : CHUNK;
        const size_t ck = chunk_keys(i0, cr, m); // keys i0 .. i0+ck-1 are new here
        float *o = j->out + i0 * dv + hd * dvh; // (cr, dvh), stride dv
        query_features(phiq, qh + i0 * d, cr, dh, d, ds->feature, shift);
        aw_matmul_nn(o, phiq, s, cr, dvh, D, D, dvh, dv, 0); // earlier chunks: phi(Q_c) S
        for (size_t r = 0; r < cr; r++) den[r] = aw_dot(phiq + r * D, z, D);
        if (ck > 0) {
            key_features(phik, kh + i0 * d, ck, dh, d, ds->feature, shift, NULL);
            aw_matmul_nt(a, phiq, phik, cr, ck, D, D, D, CHUNK, 0); // A = phi(Q_c) phi(K_c)^T
            for (size_t r = 0; r < cr; r++) {
                float *ar = a + r * CHUNK;
                for (size_t col = r + 1; col < ck; col++) ar[col] = 0.0f; // key i0+col is after query i0+r
                den[r] += aw_sum(ar, ck);
            }
            aw_matmul_nn(o, a, vh + i0 * dv, cr, dvh, ck, CHUNK, dv, dv, 1); // + A V_c
            if (c + 1 < end && c - c0 < j->slots) { // (the segment's last chunk: no later one reads S)
                aw_axpy(s, 1.0f, slots + (c - c0) * state, state); // (S, z) += phase 1's sums of the chunk
            } else if (c + 1 < end) {
                add_chunk(s, z, phik, vh + i0 * dv, ck, D, dvh, dv, 1);
            }
        }
        for (size_t r = 0; r < cr; r++) {
            const size_t keys = i0 + r + 1 < m ? i0 + r + 1 : m; // keys 0 .. i0 + r
            normalise_row(o + r * dv, den[r], dvh, den_floor(ds->feature, D, keys));
        }
    }
}

int linear_attention_forward_causal_parallel(float *out, const float *q, const float *k, const float *v,
                                             const aw_linear_attention_desc *ds) {
    int st = linear_attention_check(ds);
    if (st) return st;
    if (!ds->causal) return AW_ERR_ARG;
    const size_t n = ds->n, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh);
    const size_t state = aw_size_add(aw_size_mul(D, dvh), D); // (S, z)
    const size_t block = aw_size_add(state, aw_size_add(aw_size_mul(2 * CHUNK, D), CHUNK * CHUNK + CHUNK));
    causal_job j = {ds, q, k, v, out, NULL, NULL, 0, 1, 0, chunk_count(n)};
    j.segs = segments(h, j.chunks, block);
    j.slots = causal_slots(h, j.segs, j.chunks, state);
    j.per = aw_size_add(block, aw_size_mul(j.slots, state));
    const size_t blocks = aw_size_mul3(h, j.segs, j.per), shift = ds->feature == AW_LINEAR_ELU1 ? d : 0; // (h, dh)
    if (!(j.buf = aw_alloc_floats(aw_size_add(blocks, shift)))) return AW_ERR_NOMEM;
    if (shift) { // a common shift over all of a head's keys is exact for every prefix
        j.shift = j.buf + blocks;
        for (size_t hd = 0; hd < h; hd++) elu1_key_shift(j.shift + hd * dh, k + hd * dh, ds->m, dh, d);
    }
    if (j.segs > 1) { // h * G blocks fit in memory: h * G and the offsets below do not overflow
        aw_parallel_for(h * j.segs, causal_segment_sums, &j);
        for (size_t hd = 0; hd < h; hd++)
            for (size_t g = 2; g < j.segs; g++) {
                float *b = j.buf + (hd * j.segs + g) * j.per;
                aw_axpy(b, 1.0f, b - j.per, state);
            }
    }
    aw_parallel_for(h * j.segs, causal_segment, &j);
    free(j.buf);
    return finite_or_fail(out, n * dv);
}

int linear_attention_forward_causal_recurrent(float *out, const float *q, const float *k, const float *v,
                                              const aw_linear_attention_desc *ds) {
    int st = linear_attention_check(ds);
    if (st) return st;
    if (!ds->causal) return AW_ERR_ARG;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh);
    float *buf = aw_alloc_floats(aw_size_add(aw_size_mul(D, dvh), aw_size_mul(4, D)));
    if (!buf) return AW_ERR_NOMEM;
    float *s = buf, *z = s + D * dvh, *phiq = z + D, *phik = phiq + D, *shift = phik + D; // (D, dvh), (D) x 4
    const int elu1 = ds->feature == AW_LINEAR_ELU1;
    for (size_t hd = 0; hd < h; hd++) {
        memset(s, 0, (D * dvh + D) * sizeof(float));
        if (elu1) elu1_key_shift(shift, k + hd * dh, m, dh, d); // the same shift as the parallel form
        for (size_t i = 0; i < n; i++) {
            if (i < m) { // S_i = S_{i-1} + phi(k_i)^T v_i, z_i = z_{i-1} + phi(k_i)
                key_features(phik, k + i * d + hd * dh, 1, dh, d, ds->feature, elu1 ? shift : NULL, NULL);
                state_add(s, z, phik, v + i * dv + hd * dvh, D, dvh);
            }
            query_features(phiq, q + i * d + hd * dh, 1, dh, d, ds->feature, elu1 ? shift : NULL);
            state_query(out + i * dv + hd * dvh, s, z, phiq, D, dvh, den_floor(ds->feature, D, i + 1 < m ? i + 1 : m));
        }
    }
    free(buf);
    return finite_or_fail(out, n * dv);
}

int linear_attention_weights(float *weights, const float *q, const float *k, const aw_linear_attention_desc *ds) {
    int st = linear_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, m = ds->m, d = ds->d, h = ds->heads;
    const size_t dh = d / h, D = feature_width(ds->feature, dh);
    float *buf = aw_alloc_floats(aw_size_add(aw_size_mul(aw_size_add(n, m), D), aw_size_mul(3, dh)));
    if (!buf) return AW_ERR_NOMEM;
    float *phiq = buf, *phik = phiq + n * D;                       // (n, D), (m, D)
    float *colmax = phik + m * D, *colinv = colmax + dh, *tmp = colinv + dh; // (dh) each
    for (size_t hd = 0; hd < h; hd++) {
        float *w = weights + hd * n * m; // (n, m)
        if (ds->feature == AW_LINEAR_EFFICIENT) efficient_key_stats(colmax, colinv, tmp, k + hd * dh, m, dh, d);
        if (ds->feature == AW_LINEAR_ELU1) elu1_key_shift(colmax, k + hd * dh, m, dh, d);
        query_features(phiq, q + hd * dh, n, dh, d, ds->feature, colmax);
        key_features(phik, k + hd * dh, m, dh, d, ds->feature, colmax, colinv);
        aw_matmul_nt(w, phiq, phik, n, m, D, D, D, m, 0); // sim(q_i, k_j)
        for (size_t i = 0; i < n; i++) {
            float *wr = w + i * m;
            const size_t allowed = ds->causal && i + 1 < m ? i + 1 : m;
            memset(wr + allowed, 0, (m - allowed) * sizeof(float));
            if (ds->feature == AW_LINEAR_TAYLOR) // 1 + cos >= 0: rounding must not make a weight negative
                for (size_t j = 0; j < allowed; j++) wr[j] = wr[j] > 0.0f ? wr[j] : 0.0f;
            normalise_row(wr, aw_sum(wr, allowed), allowed, den_floor(ds->feature, D, allowed));
        }
    }
    free(buf);
    return finite_or_fail(weights, h * n * m);
}

int linear_attention_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                             const aw_linear_attention_desc *ds) {
    int st = linear_attention_check(ds);
    if (st) return st;
    if (!ds->causal) st = forward_noncausal(out, q, k, v, ds);
    else if (ds->mode == AW_LINEAR_RECURRENT) st = linear_attention_forward_causal_recurrent(out, q, k, v, ds);
    else st = linear_attention_forward_causal_parallel(out, q, k, v, ds);
    if (st == AW_OK && weights) st = linear_attention_weights(weights, q, k, ds);
    return st;
}

int linear_attention_forward_ref(float *out, float *weights, const float *q, const float *k, const float *v,
                                 const aw_linear_attention_desc *ds) {
    int st = linear_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h;
    double *p = aw_alloc_doubles(aw_size_add(m, aw_size_mul(3, dh))); // (m) one row of sim, (dh) x 3 below
    if (!p) return AW_ERR_NOMEM;
    double *pq = p + m, *colmax = pq + dh, *colsum = colmax + dh;
    for (size_t hd = 0; hd < h; hd++) {
        const float *qh = q + hd * dh, *kh = k + hd * dh, *vh = v + hd * dvh;
        if (ds->feature == AW_LINEAR_EFFICIENT) // softmax_1(K): per column, over all m positions
            for (size_t c = 0; c < dh; c++) {
                colmax[c] = -INFINITY, colsum[c] = 0.0;
                for (size_t j = 0; j < m; j++) colmax[c] = fmax(colmax[c], kh[j * d + c]);
                for (size_t j = 0; j < m; j++) colsum[c] += exp(kh[j * d + c] - colmax[c]);
            }
        for (size_t i = 0; i < n; i++) {
            const float *qi = qh + i * d;
            double qnorm = 0.0, qmax = -INFINITY, qsum = 0.0;
            for (size_t c = 0; c < dh; c++) qnorm += (double)qi[c] * qi[c], qmax = fmax(qmax, qi[c]);
            qnorm = sqrt(qnorm);
            for (size_t c = 0; c < dh; c++) qsum += pq[c] = exp(qi[c] - qmax); // softmax_2(q_i)
            double den = 0.0;
            for (size_t j = 0; j < m; j++) {
                const float *kj = kh + j * d;
                double sim = 0.0;
                if (ds->causal && j > i) {
                    p[j] = 0.0;
                    continue;
                }
                switch (ds->feature) {
                case AW_LINEAR_ELU1:
                    for (size_t c = 0; c < dh; c++)
                        sim += (qi[c] > 0 ? qi[c] + 1.0 : exp(qi[c])) * (kj[c] > 0 ? kj[c] + 1.0 : exp(kj[c]));
                    break;
                case AW_LINEAR_RELU:
                    for (size_t c = 0; c < dh; c++) sim += fmax(qi[c], 0.0) * fmax(kj[c], 0.0);
                    break;
                case AW_LINEAR_EFFICIENT:
                    for (size_t c = 0; c < dh; c++) sim += pq[c] / qsum * exp(kj[c] - colmax[c]) / colsum[c];
                    break;
                default: { // taylor: 1 + cos(q, k), the cosine taken as 0 when either vector is zero
                    double dot = 0.0, knorm = 0.0;
                    for (size_t c = 0; c < dh; c++) dot += (double)qi[c] * kj[c], knorm += (double)kj[c] * kj[c];
                    knorm = sqrt(knorm);
                    sim = 1.0 + (qnorm > 0 && knorm > 0 ? dot / (qnorm * knorm) : 0.0);
                    sim = sim > 0.0 ? sim : 0.0; // 1 + cos >= 0, also after rounding
                }
                }
                p[j] = sim;
                den += sim;
            }
            const size_t keys = ds->causal && i + 1 < m ? i + 1 : m;
            const int zero = !(den > (double)den_floor(ds->feature, feature_width(ds->feature, dh), keys));
            for (size_t j = 0; j < m; j++) p[j] = zero ? 0.0 : p[j] / den;
            if (weights)
                for (size_t j = 0; j < m; j++) weights[hd * n * m + i * m + j] = (float)p[j];
            for (size_t c = 0; c < dvh; c++) {
                double o = 0.0;
                for (size_t j = 0; j < m; j++) o += p[j] * vh[j * dv + c];
                out[i * dv + hd * dvh + c] = (float)o;
            }
        }
    }
    free(p);
    if (weights && !all_finite(weights, h * n * m)) return finite_or_fail(weights, h * n * m);
    return finite_or_fail(out, n * dv);
}

// ---- backward ---------------------------------------------------------------------------
// Per head, with a_ij = phi(q_i) . phi(k_j) over the allowed pairs, den_i = sum_j a_ij,
// o_i = sum_j a_ij v_j / den_i, and g_i = dout_i / den_i, e_i = -(dout_i . o_i) / den_i:
//   dL/da_ij     = g_i . v_j + e_i
//   dL/dphi(q_i) = S_i g_i + e_i z_i          S_i = sum_{j allowed} phi(k_j)^T v_j, z_i = sum phi(k_j)
//   dL/dphi(k_j) = R_j v_j + r_j              R_j = sum_{i allowed} phi(q_i)^T g_i, r_j = sum e_i phi(q_i)
//   dL/dv_j      = phi(k_j) R_j
// Non-causal: S, z, R, r are the full sums. Causal: S_i, z_i are prefix sums over j <= i (the
// forward recurrence again) and R_j, r_j suffix sums over i >= j (the same recurrence run
// backwards). Then through phi: elu+1' = 1 (x > 0) or exp(x) = phi (x <= 0); relu' = [x > 0];
// taylor xhat: dx = (g - xhat (xhat . g)) / |x|; efficient: softmax Jacobians, over the
// features for q and over the positions (per column) for k.
int linear_attention_backward(float *dq, float *dk, float *dv_grad, const float *dout, const float *q,
                              const float *k, const float *v, const aw_linear_attention_desc *ds) {
    int st = linear_attention_check(ds);
    if (st) return st;
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads;
    const size_t dh = d / h, dvh = dv / h, D = feature_width(ds->feature, dh);
    // One allocation carved by a size table.
    aw_plan plan = {0};
    aw_plan_take(&plan, n, D);   // phiq  (n, D)
    aw_plan_take(&plan, m, D);   // phik  (m, D)
    aw_plan_take(&plan, n, D);   // dphiq (n, D)
    aw_plan_take(&plan, m, D);   // dphik (m, D)
    aw_plan_take(&plan, n, dvh); // g     (n, dvh)
    aw_plan_take(&plan, n, 1);   // e     (n)
    aw_plan_take(&plan, D, dvh); // s     (D, dvh): S, then R
    aw_plan_take(&plan, D, 1);   // z     (D): z, then r
    aw_plan_take(&plan, dvh, 1); // num   (dvh)
    aw_plan_take(&plan, 4, dh);  // colmax, colinv, tmp, xhat (dh each)
    float *buf = aw_plan_ok(&plan, sizeof(float)) ? aw_alloc_floats(plan.total) : NULL;
    if (!buf) return AW_ERR_NOMEM;
    float *phiq = buf, *phik = phiq + n * D, *dphiq = phik + m * D, *dphik = dphiq + n * D;
    float *g = dphik + m * D, *e = g + n * dvh, *s = e + n, *z = s + D * dvh, *num = z + D;
    float *colmax = num + dvh, *colinv = colmax + dh, *tmp = colinv + dh, *xhat = tmp + dh;
    const int causal = ds->causal;

    for (size_t hd = 0; hd < h; hd++) {
        const float *qh = q + hd * dh, *kh = k + hd * dh, *vh = v + hd * dvh, *doh = dout + hd * dvh;
        if (ds->feature == AW_LINEAR_EFFICIENT) efficient_key_stats(colmax, colinv, tmp, kh, m, dh, d);
        if (ds->feature == AW_LINEAR_ELU1) elu1_key_shift(colmax, kh, m, dh, d); // as the forward
        query_features(phiq, qh, n, dh, d, ds->feature, colmax);
        key_features(phik, kh, m, dh, d, ds->feature, colmax, colinv);

        // Sweep 1 (forward recurrence): o_i, g_i, e_i and dphi(q_i) = S_i g_i + e_i z_i.
        memset(s, 0, (D * dvh + D) * sizeof(float));
        if (!causal) {
            aw_matmul_tn(s, phik, vh, D, dvh, m, D, dv, dvh, 0);
            for (size_t j = 0; j < m; j++) aw_axpy(z, 1.0f, phik + j * D, D);
        }
        for (size_t i = 0; i < n; i++) {
            if (causal && i < m) state_add(s, z, phik + i * D, vh + i * dv, D, dvh);
            const float *pq = phiq + i * D;
            float *gi = g + i * dvh;
            memset(num, 0, dvh * sizeof(float));
            for (size_t c = 0; c < D; c++) aw_axpy(num, pq[c], s + c * dvh, dvh);
            const float den = aw_dot(pq, z, D);
            const size_t keys = !causal || i + 1 > m ? m : i + 1;
            if (den > den_floor(ds->feature, D, keys)) { // as the forward: a zero row passes no gradient
                float dot = 0.0f; // dout_i . o_i
                for (size_t c = 0; c < dvh; c++) {
                    gi[c] = doh[i * dv + c] / den;
                    dot += doh[i * dv + c] * (num[c] / den);
                }
                e[i] = -dot / den;
            } else { // the output row is the constant 0: no gradient
                memset(gi, 0, dvh * sizeof(float));
                e[i] = 0.0f;
            }
            for (size_t c = 0; c < D; c++) dphiq[i * D + c] = aw_dot(s + c * dvh, gi, dvh) + e[i] * z[c];
        }

        // Sweep 2 (backward recurrence): R, r and dphi(k_j) = R_j v_j + r_j, dv_j += phi(k_j) R_j.
        memset(s, 0, (D * dvh + D) * sizeof(float));
        if (!causal) {
            aw_matmul_tn(s, phiq, g, D, dvh, n, D, dvh, dvh, 0);
            for (size_t i = 0; i < n; i++) aw_axpy(z, e[i], phiq + i * D, D);
        }
        const size_t last = causal ? (n > m ? n : m) : m;
        for (size_t t = last; t-- > 0;) {
            if (causal && t < n) { // R += phi(q_t)^T g_t, r += e_t phi(q_t)
                for (size_t c = 0; c < D; c++)
                    if (phiq[t * D + c] != 0.0f) aw_axpy(s + c * dvh, phiq[t * D + c], g + t * dvh, dvh);
                aw_axpy(z, e[t], phiq + t * D, D);
            }
            if (t >= m) continue;
            const float *vt = vh + t * dv;
            for (size_t c = 0; c < D; c++) dphik[t * D + c] = aw_dot(s + c * dvh, vt, dvh) + z[c];
            float *dvt = dv_grad + t * dv + hd * dvh;
            for (size_t c = 0; c < D; c++)
                if (phik[t * D + c] != 0.0f) aw_axpy(dvt, phik[t * D + c], s + c * dvh, dvh);
        }

        // Through the feature maps, accumulating into dq and dk.
        for (size_t pass = 0; pass < 2; pass++) {
            const size_t rows = pass == 0 ? n : m;
            const float *x = pass == 0 ? qh : kh, *phi = pass == 0 ? phiq : phik, *dphi = pass == 0 ? dphiq : dphik;
            float *dx = pass == 0 ? dq + hd * dh : dk + hd * dh;
            if (ds->feature == AW_LINEAR_EFFICIENT && pass == 1) {
                // column softmax over positions: dk_jc = p_jc (dphi_jc - sum_j' p_j'c dphi_j'c)
                memset(tmp, 0, dh * sizeof(float));
                for (size_t j = 0; j < m; j++)
                    for (size_t c = 0; c < dh; c++) tmp[c] += phi[j * D + c] * dphi[j * D + c];
                for (size_t j = 0; j < m; j++)
                    for (size_t c = 0; c < dh; c++) dx[j * d + c] += phi[j * D + c] * (dphi[j * D + c] - tmp[c]);
                continue;
            }
            for (size_t r = 0; r < rows; r++) {
                const float *xr = x + r * d, *pr = phi + r * D, *gr = dphi + r * D;
                float *dxr = dx + r * d;
                switch (ds->feature) {
                case AW_LINEAR_ELU1: // phi = s exp(x) (x <= 0) or s (x + 1), s the row's shift (1 unshifted)
                    for (size_t c = 0; c < dh; c++) dxr[c] += gr[c] * (xr[c] > 0.0f ? pr[c] / (xr[c] + 1.0f) : pr[c]);
                    break;
                case AW_LINEAR_RELU:
                    for (size_t c = 0; c < dh; c++) dxr[c] += xr[c] > 0.0f ? gr[c] : 0.0f;
                    break;
                case AW_LINEAR_EFFICIENT: { // softmax over features: dq = p (dphi - p . dphi)
                    const float pg = aw_dot(pr, gr, dh);
                    for (size_t c = 0; c < dh; c++) dxr[c] += pr[c] * (gr[c] - pg);
                    break;
                }
                default: { // taylor: phi = [1, xhat]; the constant feature has no gradient
                    const float norm = normalise_vector(xhat, xr, dh);
                    if (!(norm > 0.0f)) break;
                    const float xg = aw_dot(xhat, gr + 1, dh);
                    for (size_t c = 0; c < dh; c++) dxr[c] += (gr[1 + c] - xhat[c] * xg) / norm;
                }
                }
            }
        }
    }
    free(buf);
    return AW_OK;
}

// ---- incremental decoding state ---------------------------------------------------------

struct aw_linear_state {
    size_t d, dv, heads, dh, dvh, D; // sizes; D = feature width per head
    int feature;
    size_t position; // steps since create or reset
    float *s;        // (heads, D, dvh): S per head
    float *z;        // (heads, D): z per head
    float *phiq;     // (D) scratch
    float *phik;     // (D) scratch
    float *shift;    // (heads, D): ELU1's running key shift K (the keys so far; see elu1_key_shift)
};

size_t linear_state_bytes(size_t d, size_t dv, size_t heads, int feature) {
    if (d == 0 || dv == 0 || heads == 0 || d % heads || dv % heads) return 0;
    if (feature == AW_LINEAR_EFFICIENT) return aw_fail(AW_ERR_ARG, NO_CAUSAL_EFFICIENT), 0;
    if (feature != AW_LINEAR_ELU1 && feature != AW_LINEAR_RELU && feature != AW_LINEAR_TAYLOR) return 0;
    const size_t dh = d / heads, dvh = dv / heads, D = feature_width(feature, dh);
    // the struct, then (heads, D, dvh) S, (heads, D) z, two (D) scratch rows and (heads, D) K
    const size_t floats = aw_size_add(aw_size_mul3(heads, D, dvh), aw_size_mul(aw_size_add(2 * heads, 2), D));
    return aw_size_add(sizeof(aw_linear_state), aw_size_mul(floats, sizeof(float)));
}

aw_linear_state *linear_state_create(size_t d, size_t dv, size_t heads, int feature) {
    const size_t bytes = linear_state_bytes(d, dv, heads, feature);
    void *mem = bytes && bytes != (size_t)-1 ? malloc(bytes) : NULL;
    return mem ? linear_state_place(mem, d, dv, heads, feature) : NULL;
}

aw_linear_state *linear_state_place(void *mem, size_t d, size_t dv, size_t heads, int feature) {
    if (!mem || !linear_state_bytes(d, dv, heads, feature)) return NULL;
    const size_t dh = d / heads, dvh = dv / heads, D = feature_width(feature, dh);
    aw_linear_state *st = mem;
    st->d = d, st->dv = dv, st->heads = heads, st->dh = dh, st->dvh = dvh, st->D = D;
    st->feature = feature;
    st->s = (float *)(st + 1);
    st->z = st->s + heads * D * dvh;
    st->phiq = st->z + heads * D;
    st->phik = st->phiq + D;
    st->shift = st->phik + D;
    linear_state_reset(st);
    return st;
}

int linear_state_step(float *out, aw_linear_state *st, const float *q, const float *k, const float *v) {
    if (!st || !out || !q || !k || !v) return AW_ERR_ARG;
    const size_t D = st->D, dh = st->dh, dvh = st->dvh;
    const int elu1 = st->feature == AW_LINEAR_ELU1;
    for (size_t hd = 0; hd < st->heads; hd++) {
        float *s = st->s + hd * D * dvh, *z = st->z + hd * D, *K = st->shift + hd * D;
        if (elu1) { // the running shift: K_c grows to this key's min(k_c, 0), S and z rescaled to match
            const float *kh = k + hd * dh;
            for (size_t c = 0; c < dh; c++) {
                const float x = kh[c] < 0.0f ? kh[c] : 0.0f;
                if (st->position == 0) K[c] = x; // S and z are zero
                else if (x > K[c]) {
                    const float f = expf(K[c] - x); // < 1: the earlier keys' share of column c
                    aw_scale(s + c * dvh, s + c * dvh, f, dvh);
                    z[c] *= f;
                    K[c] = x;
                }
            }
        }
        key_features(st->phik, k + hd * dh, 1, dh, st->d, st->feature, elu1 ? K : NULL, NULL);
        state_add(s, z, st->phik, v + hd * dvh, D, dvh);
        query_features(st->phiq, q + hd * dh, 1, dh, st->d, st->feature, elu1 ? K : NULL);
        state_query(out + hd * dvh, s, z, st->phiq, D, dvh, den_floor(st->feature, D, st->position + 1));
    }
    st->position++;
    return finite_or_fail(out, st->dv);
}

void linear_state_reset(aw_linear_state *st) {
    if (!st) return;
    memset(st->s, 0, (st->heads * st->D * st->dvh + st->heads * st->D) * sizeof(float));
    memset(st->shift, 0, st->heads * st->D * sizeof(float));
    st->position = 0;
}

size_t linear_state_position(const aw_linear_state *st) { return st ? st->position : 0; }

void linear_state_destroy(aw_linear_state *st) { free(st); }
