// test_linear.c: linear attention against its naive reference (every feature map, causal and
// not, multi-head, cross-attention), recurrent == parallel == decoding state, the edge cases,
// and the backward against central finite differences of a float64 forward written here.
#include "../../src/attention/linear_attention.h"
#include "../../src/kernels/status.h"
#include "test.h"

#include <string.h>

static const char *FEATURE_NAMES[] = {"elu+1", "relu", "efficient", "taylor"};

// Float64 forward from the definitions (shares no code with the library):
// out (n, dv) = per head, sum_j sim(q_i, k_j) v_j / sum_j sim(q_i, k_j), zero when the sum is 0.
static void forward_f64(double *out, const double *q, const double *k, const double *v,
                        const aw_linear_attention_desc *ds) {
    const size_t n = ds->n, m = ds->m, d = ds->d, dv = ds->dv, h = ds->heads, dh = d / h, dvh = dv / h;
    double sim[64], colmax[64], colsum[64]; // the test sizes stay below 64
    for (size_t hd = 0; hd < h; hd++) {
        for (size_t c = 0; c < dh; c++) { // softmax over positions, per column of K
            colmax[c] = -INFINITY, colsum[c] = 0;
            for (size_t j = 0; j < m; j++) colmax[c] = fmax(colmax[c], k[j * d + hd * dh + c]);
            for (size_t j = 0; j < m; j++) colsum[c] += exp(k[j * d + hd * dh + c] - colmax[c]);
        }
        for (size_t i = 0; i < n; i++) {
            const double *qi = q + i * d + hd * dh;
            double den = 0, qmax = -INFINITY, qsum = 0, qn = 0;
            for (size_t c = 0; c < dh; c++) qmax = fmax(qmax, qi[c]), qn += qi[c] * qi[c];
            for (size_t c = 0; c < dh; c++) qsum += exp(qi[c] - qmax);
            for (size_t j = 0; j < m; j++) {
                const double *kj = k + j * d + hd * dh;
                double s = 0, kn = 0, dot = 0;
                for (size_t c = 0; c < dh; c++) {
                    if (ds->feature == AW_LINEAR_ELU1)
                        s += (qi[c] > 0 ? qi[c] + 1 : exp(qi[c])) * (kj[c] > 0 ? kj[c] + 1 : exp(kj[c]));
                    else if (ds->feature == AW_LINEAR_RELU)
                        s += fmax(qi[c], 0) * fmax(kj[c], 0);
                    else if (ds->feature == AW_LINEAR_EFFICIENT)
                        s += exp(qi[c] - qmax) / qsum * exp(kj[c] - colmax[c]) / colsum[c];
                    dot += qi[c] * kj[c], kn += kj[c] * kj[c];
                }
                if (ds->feature == AW_LINEAR_TAYLOR) s = 1 + (qn > 0 && kn > 0 ? dot / sqrt(qn * kn) : 0);
                sim[j] = ds->causal && j > i ? 0 : s;
                den += sim[j];
            }
            for (size_t c = 0; c < dvh; c++) {
                double o = 0;
                for (size_t j = 0; j < m; j++) o += sim[j] * v[j * dv + hd * dvh + c];
                out[i * dv + hd * dvh + c] = den > 0 ? o / den : 0;
            }
        }
    }
}

static double loss_f64(const double *dout, const double *q, const double *k, const double *v,
                       const aw_linear_attention_desc *ds) {
    double out[64 * 64], l = 0;
    forward_f64(out, q, k, v, ds);
    for (size_t i = 0; i < ds->n * ds->dv; i++) l += dout[i] * out[i];
    return l;
}

// Forward: fast path (both causal modes) and weights against the reference.
static void test_forward(int feature, int causal, size_t n, size_t m, size_t d, size_t dv, size_t heads) {
    aw_linear_attention_desc ds = {n, m, d, dv, heads, feature, causal, AW_LINEAR_PARALLEL};
    float *q = malloc(n * d * sizeof(float)), *k = malloc(m * d * sizeof(float)), *v = malloc(m * dv * sizeof(float));
    float *out = malloc(n * dv * sizeof(float)), *out2 = malloc(n * dv * sizeof(float));
    float *ref = malloc(n * dv * sizeof(float)), *w = malloc(heads * n * m * sizeof(float));
    float *wref = malloc(heads * n * m * sizeof(float));
    fill_uniform(q, n * d, 11 + (uint32_t)feature), fill_uniform(k, m * d, 23), fill_uniform(v, m * dv, 37);
    char name[96];
    CHECK(linear_attention_forward_ref(ref, wref, q, k, v, &ds) == AW_OK, "ref status");
    CHECK(linear_attention_forward(out, w, q, k, v, &ds) == AW_OK, "forward status");
    snprintf(name, sizeof name, "%s %s n=%zu m=%zu h=%zu: out", FEATURE_NAMES[feature], causal ? "causal par" : "full",
             n, m, heads);
    REPORT(name, max_err(out, ref, n * dv), TOL_ATTENTION);
    snprintf(name, sizeof name, "%s %s n=%zu m=%zu h=%zu: weights", FEATURE_NAMES[feature],
             causal ? "causal" : "full", n, m, heads);
    REPORT(name, max_err(w, wref, heads * n * m), TOL_ATTENTION_WEIGHTS);
    double row_err = 0; // each weights row sums to 1, or is all zero where the reference's is
    size_t zero_rows = 0;
    for (size_t r = 0; r < heads * n; r++) {
        double s = 0, sref = 0;
        for (size_t j = 0; j < m; j++) s += w[r * m + j], sref += wref[r * m + j];
        zero_rows += sref == 0.0;
        row_err = fmax(row_err, sref == 0.0 ? fabs(s) : fabs(s - 1));
    }
    snprintf(name, sizeof name, "  weights rows sum to 1 (%zu zero rows)", zero_rows);
    REPORT(name, row_err, TOL_ATTENTION_WEIGHTS * 10);
    if (causal) {
        ds.mode = AW_LINEAR_RECURRENT;
        CHECK(linear_attention_forward(out2, NULL, q, k, v, &ds) == AW_OK, "recurrent status");
        REPORT("  recurrent vs parallel", max_err(out2, out, n * dv), TOL_LINEAR_CAUSAL_FORMS);
        if (m >= n) { // stepping a state through the sequence gives the causal rows
            aw_linear_state *st = linear_state_create(d, dv, heads, feature);
            CHECK(st != NULL, "state create");
            for (size_t i = 0; st && i < n; i++) CHECK(linear_state_step(out2 + i * dv, st, q + i * d, k + i * d, v + i * dv) == AW_OK, "step");
            CHECK(st && linear_state_position(st) == n, "position");
            REPORT("  state steps vs parallel", max_err(out2, out, n * dv), TOL_LINEAR_CAUSAL_FORMS);
            linear_state_destroy(st);
        }
    }
    free(q), free(k), free(v), free(out), free(out2), free(ref), free(w), free(wref);
}

// Backward against central differences of forward_f64 (eps = 1e-3 in double): truncation error
// O(eps^2) ~ 1e-7 and the float backward ~1e-6, so the bound TOL_LINEAR_GRAD (normalised, as
// everywhere: |a - f| / (1 + |f|)) has a wide margin. Entries within 2 eps of 0 are skipped for
// elu+1 and relu, whose second (relu: first) derivative jumps there.
static void test_backward(int feature, int causal, size_t n, size_t m) {
    const size_t d = 8, dv = 6, heads = 2;
    const double eps = 1e-3;
    aw_linear_attention_desc ds = {n, m, d, dv, heads, feature, causal, AW_LINEAR_PARALLEL};
    float q[64], k[64], v[64], dout[64], dq[64], dk[64], dvg[64];
    double qd[64], kd[64], vd[64], doutd[64];
    fill_uniform(q, n * d, 101 + (uint32_t)(feature * 7 + causal)), fill_uniform(k, m * d, 203);
    fill_uniform(v, m * dv, 307), fill_uniform(dout, n * dv, 401);
    for (size_t i = 0; i < n * d; i++) qd[i] = q[i], dq[i] = 1.0f; // dq starts at 1: checks +=
    for (size_t i = 0; i < m * d; i++) kd[i] = k[i], dk[i] = 0.0f;
    for (size_t i = 0; i < m * dv; i++) vd[i] = v[i], dvg[i] = 0.0f;
    for (size_t i = 0; i < n * dv; i++) doutd[i] = dout[i];
    CHECK(linear_attention_backward(dq, dk, dvg, dout, q, k, v, &ds) == AW_OK, "backward status");
    for (size_t i = 0; i < n * d; i++) dq[i] -= 1.0f;
    double err = 0;
    struct { double *x; const float *g; size_t len; int kinked; } params[3] = {
        {qd, dq, n * d, feature <= AW_LINEAR_RELU}, {kd, dk, m * d, feature <= AW_LINEAR_RELU}, {vd, dvg, m * dv, 0}};
    for (int p = 0; p < 3; p++)
        for (size_t i = 0; i < params[p].len; i++) {
            double *x = params[p].x, x0 = x[i];
            if (params[p].kinked && fabs(x0) < 2 * eps) continue;
            x[i] = x0 + eps;
            double lp = loss_f64(doutd, qd, kd, vd, &ds);
            x[i] = x0 - eps;
            double lm = loss_f64(doutd, qd, kd, vd, &ds);
            x[i] = x0;
            double fd = (lp - lm) / (2 * eps);
            err = fmax(err, fabs(params[p].g[i] - fd) / (1 + fabs(fd)));
        }
    char name[96];
    snprintf(name, sizeof name, "backward %s %s n=%zu m=%zu vs finite diff", FEATURE_NAMES[feature],
             causal ? "causal" : "full", n, m);
    REPORT(name, err, TOL_LINEAR_GRAD);
}

// A forward that shares no code with the library, against the C reference (checks forward_f64).
static void test_f64_matches_ref(int feature, int causal) {
    const size_t n = 9, m = 7, d = 8, dv = 6, heads = 2;
    aw_linear_attention_desc ds = {n, m, d, dv, heads, feature, causal, AW_LINEAR_PARALLEL};
    float q[72], k[56], v[42], ref[54], o32[54];
    double qd[72], kd[56], vd[42], o[54];
    fill_uniform(q, n * d, 5), fill_uniform(k, m * d, 6), fill_uniform(v, m * dv, 7);
    for (size_t i = 0; i < n * d; i++) qd[i] = q[i];
    for (size_t i = 0; i < m * d; i++) kd[i] = k[i];
    for (size_t i = 0; i < m * dv; i++) vd[i] = v[i];
    forward_f64(o, qd, kd, vd, &ds);
    for (size_t i = 0; i < n * dv; i++) o32[i] = (float)o[i];
    CHECK(linear_attention_forward_ref(ref, NULL, q, k, v, &ds) == AW_OK, "ref status");
    char name[96];
    snprintf(name, sizeof name, "test's f64 forward vs C ref: %s %s", FEATURE_NAMES[feature], causal ? "causal" : "full");
    REPORT(name, max_err(ref, o32, n * dv), TOL_ATTENTION_WEIGHTS);
}

static void test_edge_cases(void) {
    // relu: a query with no positive entry has sim = 0 with every key: zero output and weights row.
    const size_t n = 3, m = 4, d = 4;
    float q[12], k[16], v[16], out[12], w[12 * 4], ref[12], wref[48];
    fill_uniform(q, n * d, 3), fill_uniform(k, m * d, 4), fill_uniform(v, m * d, 5);
    for (size_t c = 0; c < d; c++) q[d + c] = -fabsf(q[d + c]); // row 1: all <= 0
    for (int causal = 0; causal < 2; causal++)
        for (int mode = 0; mode < 2; mode++) {
            aw_linear_attention_desc ds = {n, m, d, d, 1, AW_LINEAR_RELU, causal, mode};
            CHECK(linear_attention_forward(out, w, q, k, v, &ds) == AW_OK, "relu status");
            double zero = 0;
            for (size_t c = 0; c < d; c++) zero = fmax(zero, fabs(out[d + c]));
            for (size_t j = 0; j < m; j++) zero = fmax(zero, fabs(w[m + j]));
            CHECK(zero == 0.0, "relu all-zero similarity row: output and weights not zero (max %g)", zero);
            CHECK(linear_attention_forward_ref(ref, wref, q, k, v, &ds) == AW_OK, "relu ref status");
            REPORT("relu with a zero-similarity row vs ref", max_err(out, ref, n * d), TOL_ATTENTION);
        }
    // taylor: zero q and zero k vectors have sim = 1 with everything.
    float qt[12], kt[16];
    memcpy(qt, q, sizeof qt), memcpy(kt, k, sizeof kt);
    memset(qt, 0, d * sizeof(float)), memset(kt + 2 * d, 0, d * sizeof(float));
    aw_linear_attention_desc ds = {n, m, d, d, 1, AW_LINEAR_TAYLOR, 0, 0};
    CHECK(linear_attention_forward(out, w, qt, kt, v, &ds) == AW_OK, "taylor status");
    double uni = 0; // row 0 (q = 0) weights are uniform 1/m
    for (size_t j = 0; j < m; j++) uni = fmax(uni, fabs(w[j] - 1.0 / m));
    REPORT("taylor zero q: uniform weights row", uni, TOL_ATTENTION_WEIGHTS);
    CHECK(linear_attention_forward_ref(ref, wref, qt, kt, v, &ds) == AW_OK, "taylor ref status");
    REPORT("taylor zero q and k vs ref", max_err(out, ref, n * d), TOL_ATTENTION);
    // argument errors
    aw_linear_attention_desc bad = {n, m, d, d, 1, AW_LINEAR_EFFICIENT, 1, 0};
    CHECK(linear_attention_forward(out, NULL, q, k, v, &bad) == AW_ERR_ARG, "efficient causal accepted");
    CHECK(linear_state_create(d, d, 1, AW_LINEAR_EFFICIENT) == NULL, "efficient state accepted");
    bad.causal = 0, bad.feature = 9;
    CHECK(linear_attention_forward(out, NULL, q, k, v, &bad) == AW_ERR_ARG, "feature 9 accepted");
    bad.feature = 0, bad.heads = 3;
    CHECK(linear_attention_forward(out, NULL, q, k, v, &bad) == AW_ERR_ARG, "heads not dividing d accepted");
    // overflow is reported, not returned as a number
    float big[16];
    for (size_t i = 0; i < 16; i++) big[i] = 3e38f;
    aw_linear_attention_desc ov = {n, m, d, d, 1, AW_LINEAR_ELU1, 0, 0};
    CHECK(linear_attention_forward(out, NULL, q, k, big, &ov) == AW_ERR_NONFINITE, "overflow not reported");
}

// A head too wide for every chunk's own sums to fit the segments' budget (d = dv = 256: one slot
// per segment of 4 chunks, linear_attention.c): phase 1 sums the other chunks straight into the
// segment's total and phase 3 recomputes them. The parallel form against the recurrent one.
static void test_causal_wide_head(int feature, size_t m) {
    const size_t n = 2048, d = 256, dv = 256;
    aw_linear_attention_desc ds = {n, m, d, dv, 1, feature, 1, AW_LINEAR_PARALLEL};
    float *q = malloc(n * d * sizeof(float)), *k = malloc(m * d * sizeof(float)), *v = malloc(m * dv * sizeof(float));
    float *par = malloc(n * dv * sizeof(float)), *rec = malloc(n * dv * sizeof(float));
    fill_uniform(q, n * d, 61), fill_uniform(k, m * d, 62), fill_uniform(v, m * dv, 63);
    CHECK(linear_attention_forward(par, NULL, q, k, v, &ds) == AW_OK, "parallel status");
    ds.mode = AW_LINEAR_RECURRENT;
    CHECK(linear_attention_forward(rec, NULL, q, k, v, &ds) == AW_OK, "recurrent status");
    char name[96];
    snprintf(name, sizeof name, "%s causal n=%zu m=%zu d=%zu h=1: recurrent vs parallel", FEATURE_NAMES[feature], n, m, d);
    REPORT(name, max_err(rec, par, n * dv), TOL_LINEAR_CAUSAL_FORMS);
    free(q), free(k), free(v), free(par), free(rec);
}

int main(void) {
    for (int f = 0; f < 4; f++) {
        test_forward(f, 0, 150, 150, 16, 8, 2);  // self-attention, heads 2, several chunks
        test_forward(f, 0, 70, 130, 12, 6, 3);   // cross-attention m > n
        // one head: keys and queries in segments (linear_attention.c): 10 query chunks in 5
        // segments and 5 key chunks in 2, then 5 query chunks in 2 and 11 key chunks in 5
        test_forward(f, 0, 640, 300, 16, 8, 1);
        test_forward(f, 0, 300, 700, 16, 8, 1);
        if (f == AW_LINEAR_EFFICIENT) continue;  // no causal form
        test_forward(f, 1, 150, 150, 16, 8, 2);
        test_forward(f, 1, 150, 90, 16, 12, 4);  // causal cross, m < n: late queries see every key
        test_forward(f, 1, 70, 130, 12, 6, 3);   // causal cross, m > n
        // one head, 10 chunks: the causal parallel form runs as 5 segments of 2 chunks (phase 1
        // sums, phase 2 prefixes, phase 3 chunk loops; linear_attention.c), against the reference,
        // the recurrent form and the decoding state; then keys ending in the 3rd segment (m < n),
        // and more keys than queries (m > n, 7 chunks: 3 segments of 3, 2 and 2 chunks)
        test_forward(f, 1, 640, 640, 16, 8, 1);
        test_forward(f, 1, 600, 300, 16, 8, 1);
        test_forward(f, 1, 420, 700, 16, 16, 2); // 2 heads x 3 segments
    }
    for (int f = 0; f < 4; f++)
        for (int causal = 0; causal < 2; causal++) {
            if (f == AW_LINEAR_EFFICIENT && causal) continue;
            test_f64_matches_ref(f, causal);
            test_backward(f, causal, 7, 5);
            test_backward(f, causal, 5, 7);
        }
    test_causal_wide_head(AW_LINEAR_ELU1, 2048);
    test_causal_wide_head(AW_LINEAR_TAYLOR, 1100); // keys end inside the 5th of 8 segments
    test_edge_cases();
    printf("%s: %d failure(s)\n", __FILE__, test_failures);
    return test_failures != 0;
}
