// layernorm.c: LayerNorm over the last axis (eps the model's normEps, 1e-5 by default).
// Threads (src/kernels/parallel.h): the forward and dx by blocks of rows; dw and db by blocks of
// columns, each column summed over the rows in row order, so any cut gives the same bits.
#include "layers.h"

#include "../kernels/parallel.h"

#include <math.h>

typedef struct {
    float *out, *mean, *rstd, *dx, *dw, *db;
    const float *x, *w, *b, *dout, *cmean, *crstd;
    size_t N, C;
    float eps;
} ln_job;

static void forward_rows(void *ctx, size_t r0, size_t r1) {
    const ln_job *j = ctx;
    const size_t C = j->C;
    for (size_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * C;
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < C; c++) m += xr[c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= (double)C;
        const float s = (float)(1.0 / sqrt(v + (double)j->eps));
        float *o = j->out + r * C;
        for (size_t c = 0; c < C; c++) o[c] = ((xr[c] - (float)m) * s) * j->w[c] + j->b[c];
        j->mean[r] = (float)m, j->rstd[r] = s;
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                       size_t N, size_t C, float eps) {
    ln_job j = {.out = out, .mean = mean, .rstd = rstd, .x = x, .w = w, .b = b, .N = N, .C = C, .eps = eps};
    aw_parallel_ranges(N, aw_rows_grain(C), forward_rows, &j);
}

// With xhat = (x - mean) rstd and g = dout * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dout * xhat,  db += dout.
static void backward_rows(void *ctx, size_t r0, size_t r1) { // dx
    const ln_job *j = ctx;
    const size_t C = j->C;
    const float *w = j->w;
    for (size_t r = r0; r < r1; r++) {
        const float *d = j->dout + r * C, *xr = j->x + r * C;
        const float m = j->cmean[r], s = j->crstd[r];
        double gmean = 0.0, gxmean = 0.0;
        for (size_t c = 0; c < C; c++) {
            const float xhat = (xr[c] - m) * s, g = d[c] * w[c];
            gmean += g, gxmean += g * xhat;
        }
        gmean /= (double)C, gxmean /= (double)C;
        float *dxr = j->dx + r * C;
        for (size_t c = 0; c < C; c++) {
            const float xhat = (xr[c] - m) * s, g = d[c] * w[c];
            dxr[c] += s * (g - (float)gmean - xhat * (float)gxmean);
        }
    }
}

enum { COLS = 16 }; // columns per item of the dw, db sums

static void backward_cols(void *ctx, size_t b0, size_t b1) { // dw, db over blocks b0 .. b1-1 of COLS columns
    const ln_job *j = ctx;
    const size_t C = j->C, c0 = b0 * COLS, c1 = b1 * COLS < C ? b1 * COLS : C;
    for (size_t r = 0; r < j->N; r++) {
        const float *d = j->dout + r * C, *xr = j->x + r * C;
        const float m = j->cmean[r], s = j->crstd[r];
        for (size_t c = c0; c < c1; c++) {
            const float xhat = (xr[c] - m) * s;
            j->db[c] += d[c];
            j->dw[c] += d[c] * xhat;
        }
    }
}

void layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                        const float *mean, const float *rstd, size_t N, size_t C) {
    ln_job j = {.dx = dx, .dw = dw, .db = db, .x = x, .w = w, .dout = dout, .cmean = mean, .crstd = rstd, .N = N, .C = C};
    aw_parallel_ranges(N, aw_rows_grain(C), backward_rows, &j);
    if (dw) aw_parallel_ranges((C + COLS - 1) / COLS, 1, backward_cols, &j); // NULL: dx only
}
