// linear.c: the dense layer, ReLU and the residual add (the FFN is linear-relu-linear).
#include "layers.h"

#include "../kernels/kernels.h"

#include <string.h>

void linear_forward(float *out, const float *x, const float *w, const float *b, size_t N, size_t IC, size_t OC) {
    if (b)
        for (size_t r = 0; r < N; r++) memcpy(out + r * OC, b, OC * sizeof(float));
    aw_matmul_nn(out, x, w, N, OC, IC, IC, OC, OC, b != NULL);
}

void linear_forward_ref(float *out, const float *x, const float *w, const float *b, size_t N, size_t IC,
                        size_t OC) {
    for (size_t r = 0; r < N; r++)
        for (size_t o = 0; o < OC; o++) {
            double s = b ? b[o] : 0.0;
            for (size_t i = 0; i < IC; i++) s += (double)x[r * IC + i] * w[i * OC + o];
            out[r * OC + o] = (float)s;
        }
}

// out = x W + b:  dx += dout W^T (W stored IC x OC), dw += x^T dout, db += sum_r dout[r].
void linear_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w, size_t N,
                     size_t IC, size_t OC) {
    if (dx) aw_matmul_nt(dx, dout, w, N, IC, OC, OC, OC, IC, 1);
    aw_matmul_tn(dw, x, dout, IC, OC, N, IC, OC, OC, 1);
    if (db)
        for (size_t r = 0; r < N; r++) aw_axpy(db, 1.0f, dout + r * OC, OC);
}

void relu_forward(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(float *dx, const float *dout, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] += x[i] > 0.0f ? dout[i] : 0.0f;
}
