// linear.c: the dense layer, ReLU and the residual add (the FFN is linear-relu-linear).
// Threads (src/kernels/parallel.h): the matmuls split themselves; the bias rows, ReLU and the
// residual add by ranges of elements; the bias gradient by blocks of columns, each summed over the
// rows in row order, so any cut gives the same bits.
#include <math.h>
#include "layers.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"

#include <string.h>

typedef struct {
    float *y;
    const float *x, *b;
    size_t cols, rows;
} vec_job;

static void bias_rows(void *ctx, size_t r0, size_t r1) {
    const vec_job *j = ctx;
    for (size_t r = r0; r < r1; r++) memcpy(j->y + r * j->cols, j->b, j->cols * sizeof(float));
}

void linear_forward(float *out, const float *x, const float *w, const float *b, size_t N, size_t IC, size_t OC) {
    if (b) {
        vec_job j = {.y = out, .b = b, .cols = OC};
        aw_parallel_ranges(N, aw_rows_grain(OC), bias_rows, &j);
    }
    aw_matmul_nn(out, x, w, N, OC, IC, IC, OC, OC, b != NULL);
}

void linear_forward_bf16(float *out, const float *x, const uint16_t *w, const float *b, size_t N, size_t IC, size_t OC) {
    if (b) {
        vec_job j = {.y = out, .b = b, .cols = OC};
        aw_parallel_ranges(N, aw_rows_grain(OC), bias_rows, &j);
    }
    aw_matmul_nn_bf16(out, x, w, N, OC, IC, IC, OC, OC, b != NULL);
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

enum { COLS = 64 }; // columns per item of the bias gradient

static void bias_grad_cols(void *ctx, size_t b0, size_t b1) { // y = db, x = dout: db[c] += sum_r dout[r, c]
    const vec_job *j = ctx;
    const size_t c0 = b0 * COLS, c1 = b1 * COLS < j->cols ? b1 * COLS : j->cols;
    for (size_t r = 0; r < j->rows; r++) aw_axpy(j->y + c0, 1.0f, j->x + r * j->cols + c0, c1 - c0);
}

// out = x W + b:  dx += dout W^T (W stored IC x OC), dw += x^T dout, db += sum_r dout[r].
void linear_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w, size_t N,
                     size_t IC, size_t OC) {
    if (dx) aw_matmul_nt(dx, dout, w, N, IC, OC, OC, OC, IC, 1);
    if (!dw) return; // the activations' gradient only (an inference-only model's backward): no dw, db
    aw_matmul_tn(dw, x, dout, IC, OC, N, IC, OC, OC, 1);
    if (db) {
        vec_job j = {.y = db, .x = dout, .cols = OC, .rows = N};
        aw_parallel_ranges((OC + COLS - 1) / COLS, 1, bias_grad_cols, &j);
    }
}

static void relu_range(void *ctx, size_t i0, size_t i1) {
    const vec_job *j = ctx;
    for (size_t i = i0; i < i1; i++) j->y[i] = j->x[i] > 0.0f ? j->x[i] : 0.0f;
}

void relu_forward(float *out, const float *x, size_t n) {
    vec_job j = {.y = out, .x = x};
    aw_parallel_ranges(n, AW_GRAIN, relu_range, &j);
}

static void relu_back_range(void *ctx, size_t i0, size_t i1) { // x = dout, b = the forward's input
    const vec_job *j = ctx;
    for (size_t i = i0; i < i1; i++) j->y[i] += j->b[i] > 0.0f ? j->x[i] : 0.0f;
}

void relu_backward(float *dx, const float *dout, const float *x, size_t n) {
    vec_job j = {.y = dx, .x = dout, .b = x};
    aw_parallel_ranges(n, AW_GRAIN, relu_back_range, &j);
}

static void gelu_range(void *ctx, size_t i0, size_t i1) {
    const vec_job *j = ctx;
    for (size_t i = i0; i < i1; i++) {
        const double x = j->x[i], t = tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
        j->y[i] = (float)(0.5 * x * (1.0 + t));
    }
}

void gelu_forward(float *out, const float *x, size_t n) {
    vec_job j = {.y = out, .x = x};
    aw_parallel_ranges(n, AW_GRAIN, gelu_range, &j);
}

static void gelu_back_range(void *ctx, size_t i0, size_t i1) { // x = dout, b = the forward's input
    const vec_job *j = ctx;
    for (size_t i = i0; i < i1; i++) {
        const double x = j->b[i], t = tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
        const double d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
        j->y[i] += (float)(j->x[i] * d);
    }
}

void gelu_backward(float *dx, const float *dout, const float *x, size_t n) {
    vec_job j = {.y = dx, .x = dout, .b = x};
    aw_parallel_ranges(n, AW_GRAIN, gelu_back_range, &j);
}

static void add_range(void *ctx, size_t i0, size_t i1) {
    const vec_job *j = ctx;
    aw_axpy(j->y + i0, 1.0f, j->x + i0, i1 - i0);
}

void residual_add(float *y, const float *x, size_t n) {
    vec_job j = {.y = y, .x = x};
    aw_parallel_ranges(n, AW_GRAIN, add_range, &j);
}

static void zero_range(void *ctx, size_t i0, size_t i1) {
    const vec_job *j = ctx;
    memset(j->y + i0, 0, (i1 - i0) * sizeof(float));
}

void zero_floats(float *y, size_t n) {
    vec_job j = {.y = y};
    aw_parallel_ranges(n, 4 * AW_GRAIN, zero_range, &j);
}
