// llama_layers.c: the ops of a llama-style block (docs/attention-forms.md section 5b): RMSNorm,
// the SwiGLU feed-forward's gate, rotary positions, grouped-query K/V heads and a classifier tied
// to the token embedding. Each is a forward/backward pair in the manner of layers.h.
#include "layers.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"

#include <math.h>
#include <string.h>

// ---- RMSNorm ----------------------------------------------------------------------------------

typedef struct {
    float *out, *rstd, *dx, *dw;
    const float *x, *w, *dout, *crstd;
    size_t N, C;
    float eps;
} rms_job;

static void rms_forward_rows(void *ctx, size_t r0, size_t r1) {
    const rms_job *j = ctx;
    const size_t C = j->C;
    for (size_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * C;
        double ss = 0.0;
        for (size_t c = 0; c < C; c++) ss += (double)xr[c] * xr[c];
        const float s = (float)(1.0 / sqrt(ss / (double)C + (double)j->eps));
        float *o = j->out + r * C;
        for (size_t c = 0; c < C; c++) o[c] = (xr[c] * s) * j->w[c];
        j->rstd[r] = s;
    }
}

void rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C, float eps) {
    rms_job j = {.out = out, .rstd = rstd, .x = x, .w = w, .N = N, .C = C, .eps = eps};
    aw_parallel_ranges(N, aw_rows_grain(C), rms_forward_rows, &j);
}

// y = x s w with s = (mean(x^2) + eps)^(-1/2): with g = dout * w,
//   dx = s g - x s^3 mean(g x),   dw += dout x s.
static void rms_backward_rows(void *ctx, size_t r0, size_t r1) {
    const rms_job *j = ctx;
    const size_t C = j->C;
    for (size_t r = r0; r < r1; r++) {
        const float *d = j->dout + r * C, *xr = j->x + r * C;
        const float s = j->crstd[r];
        double gx = 0.0;
        for (size_t c = 0; c < C; c++) gx += (double)(d[c] * j->w[c]) * xr[c];
        const float k = (float)(gx / (double)C) * s * s * s;
        float *dxr = j->dx + r * C;
        for (size_t c = 0; c < C; c++) dxr[c] += s * (d[c] * j->w[c]) - xr[c] * k;
    }
}

enum { COLS = 16 };

static void rms_backward_cols(void *ctx, size_t b0, size_t b1) {
    const rms_job *j = ctx;
    const size_t C = j->C, c0 = b0 * COLS, c1 = b1 * COLS < C ? b1 * COLS : C;
    for (size_t r = 0; r < j->N; r++) {
        const float *d = j->dout + r * C, *xr = j->x + r * C;
        const float s = j->crstd[r];
        for (size_t c = c0; c < c1; c++) j->dw[c] += d[c] * (xr[c] * s);
    }
}

void rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                      size_t N, size_t C) {
    rms_job j = {.dx = dx, .dw = dw, .x = x, .w = w, .dout = dout, .crstd = rstd, .N = N, .C = C};
    aw_parallel_ranges(N, aw_rows_grain(C), rms_backward_rows, &j);
    if (dw) aw_parallel_ranges((C + COLS - 1) / COLS, 1, rms_backward_cols, &j); // NULL: dx only
}

// ---- SwiGLU -----------------------------------------------------------------------------------

void swiglu_forward(float *out, const float *h, const float *u, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = h[i] * aw_sigmoidf(h[i]) * u[i];
}

// out = silu(h) u: dh += dout u silu'(h), du += dout silu(h); silu'(h) = s (1 + h (1 - s)).
void swiglu_backward(float *dh, float *du, const float *dout, const float *h, const float *u, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const float s = aw_sigmoidf(h[i]);
        du[i] += dout[i] * h[i] * s;
        dh[i] += dout[i] * u[i] * s * (1.0f + h[i] * (1.0f - s));
    }
}

// ---- rotary positions -------------------------------------------------------------------------

// Llama 3.1's scaling of one frequency f (wavelength 2 pi / f) with s = {factor, low, high, original}:
// wavelengths past original / low are slowed by factor, those under original / high kept, and
// between, f ((1 - a) / factor + a) with a = (original / wavelength - low) / (high - low).
static double llama3_frequency(double f, const double *s) {
    const double wavelen = 2.0 * 3.14159265358979323846 / f, lo_wave = s[3] / s[1], hi_wave = s[3] / s[2];
    if (wavelen > lo_wave) return f / s[0];
    if (wavelen < hi_wave) return f;
    const double a = (s[3] / wavelen - s[1]) / (s[2] - s[1]);
    return (1.0 - a) * f / s[0] + a * f;
}

void rope_table(float *cs, float *sn, size_t L, size_t hd, double theta, const double *llama3) {
    for (size_t p = 0; p < L; p++)
        for (size_t i = 0; 2 * i + 1 < hd; i++) {
            double f = pow(theta, -(double)(2 * i) / (double)hd);
            if (llama3) f = llama3_frequency(f, llama3);
            const double angle = (double)p * f; // in double: every build agrees
            cs[p * (hd / 2) + i] = (float)cos(angle);
            sn[p * (hd / 2) + i] = (float)sin(angle);
        }
}

void rope_apply(float *x, const float *cs, const float *sn, size_t B, size_t T, size_t pos0, size_t C, size_t hd,
                int inverse) {
    const size_t half = hd / 2, H = C / hd;
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const float *c = cs + (pos0 + t) * half, *s = sn + (pos0 + t) * half;
            float *row = x + (b * T + t) * C;
            for (size_t h = 0; h < H; h++) {
                float *v = row + h * hd;
                for (size_t i = 0; i < half; i++) {
                    const float a = v[2 * i], bb = v[2 * i + 1], si = inverse ? -s[i] : s[i];
                    v[2 * i] = a * c[i] - bb * si;
                    v[2 * i + 1] = a * si + bb * c[i];
                }
            }
        }
}

// ---- grouped-query heads ----------------------------------------------------------------------

void kv_expand(float *out, const float *kv, size_t N, size_t H, size_t KH, size_t hd) {
    const size_t C = H * hd, KC = KH * hd, group = H / KH;
    for (size_t r = 0; r < N; r++)
        for (size_t h = 0; h < H; h++) {
            const float *src = kv + r * KC + (h / group) * hd;
            float *dst = out + r * C + h * hd;
            for (size_t i = 0; i < hd; i++) dst[i] = src[i];
        }
}

void kv_take(float *kv, const float *x, size_t N, size_t H, size_t KH, size_t hd) {
    const size_t C = H * hd, KC = KH * hd, group = H / KH;
    for (size_t r = 0; r < N; r++)
        for (size_t g = 0; g < KH; g++) memcpy(kv + r * KC + g * hd, x + r * C + g * group * hd, hd * sizeof(float));
}

void kv_reduce(float *dkv, const float *dout, size_t N, size_t H, size_t KH, size_t hd) {
    const size_t C = H * hd, KC = KH * hd, group = H / KH;
    for (size_t r = 0; r < N; r++) {
        float *dst = dkv + r * KC;
        for (size_t i = 0; i < KC; i++) dst[i] = 0.0f;
        for (size_t h = 0; h < H; h++) {
            const float *src = dout + r * C + h * hd;
            float *d = dst + (h / group) * hd;
            for (size_t i = 0; i < hd; i++) d[i] += src[i];
        }
    }
}

// ---- the classifier tied to the embedding -----------------------------------------------------

void tied_forward(float *logits, const float *x, const float *wte, const float *b, size_t N, size_t C, size_t V) {
    aw_matmul_nt(logits, x, wte, N, V, C, C, C, V, 0);
    if (b)
        for (size_t r = 0; r < N; r++) aw_axpy(logits + r * V, 1.0f, b, V);
}

void tied_forward_bf16(float *logits, const float *x, const uint16_t *wte, const float *b, size_t N, size_t C, size_t V) {
    aw_matmul_nt_bf16(logits, x, wte, N, V, C, C, C, V, 0);
    if (b)
        for (size_t r = 0; r < N; r++) aw_axpy(logits + r * V, 1.0f, b, V);
}

void tied_backward(float *dx, float *dwte, float *db, const float *dlogits, const float *x, const float *wte, size_t N,
                   size_t C, size_t V) {
    aw_matmul_nn(dx, dlogits, wte, N, C, V, V, C, C, 1);      // dx += dlogits wte
    if (!dwte) return;                                        // dx only: no dwte, db
    aw_matmul_tn(dwte, dlogits, x, V, C, N, V, C, C, 1);      // dwte += dlogits^T x
    if (db)
        for (size_t r = 0; r < N; r++) aw_axpy(db, 1.0f, dlogits + r * V, V);
}
