// layernorm.c: LayerNorm over the last axis, eps 1e-5.
#include "layers.h"

#include <math.h>

void layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                       size_t N, size_t C) {
    for (size_t r = 0; r < N; r++) {
        const float *xr = x + r * C;
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < C; c++) m += xr[c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= (double)C;
        const float s = (float)(1.0 / sqrt(v + 1e-5));
        float *o = out + r * C;
        for (size_t c = 0; c < C; c++) o[c] = ((xr[c] - (float)m) * s) * w[c] + b[c];
        mean[r] = (float)m, rstd[r] = s;
    }
}

// With xhat = (x - mean) rstd and g = dout * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dout * xhat,  db += dout.
void layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                        const float *mean, const float *rstd, size_t N, size_t C) {
    for (size_t r = 0; r < N; r++) {
        const float *d = dout + r * C, *xr = x + r * C;
        const float m = mean[r], s = rstd[r];
        double gmean = 0.0, gxmean = 0.0;
        for (size_t c = 0; c < C; c++) {
            const float xhat = (xr[c] - m) * s, g = d[c] * w[c];
            gmean += g, gxmean += g * xhat;
        }
        gmean /= (double)C, gxmean /= (double)C;
        float *dxr = dx + r * C;
        for (size_t c = 0; c < C; c++) {
            const float xhat = (xr[c] - m) * s, g = d[c] * w[c];
            db[c] += d[c];
            dw[c] += d[c] * xhat;
            dxr[c] += s * (g - (float)gmean - xhat * (float)gxmean);
        }
    }
}
