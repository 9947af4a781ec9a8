// embedding.c: token embedding plus positional encoding (docs/attention-forms.md section 5).
#include "layers.h"

#include "../kernels/parallel.h"

#include <math.h>
#include <string.h>

typedef struct {
    float *out, *dwte, *dpos;
    const float *wte, *pos, *dout;
    const int32_t *tokens;
    size_t T, C, N;
} emb_job;

static void forward_rows(void *ctx, size_t r0, size_t r1) {
    const emb_job *j = ctx;
    const size_t C = j->C;
    for (size_t r = r0; r < r1; r++) {
        float *o = j->out + r * C;
        const float *e = j->wte + (size_t)j->tokens[r] * C;
        if (!j->pos) { // no positions added (none, rope)
            memcpy(o, e, C * sizeof(float));
            continue;
        }
        const float *p = j->pos + (r % j->T) * C;
        for (size_t c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

void embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *pos, size_t B, size_t T,
                       size_t C) {
    emb_job j = {.out = out, .wte = wte, .pos = pos, .tokens = tokens, .T = T, .C = C};
    aw_parallel_ranges(B * T, aw_rows_grain(C), forward_rows, &j);
}

enum { COLS = 16 }; // columns per item of the backward

// Rows of dwte and dpos are shared by positions, so the backward splits the columns: each column
// adds its rows in row order, as one thread would.
static void backward_cols(void *ctx, size_t b0, size_t b1) {
    const emb_job *j = ctx;
    const size_t C = j->C, c0 = b0 * COLS, c1 = b1 * COLS < C ? b1 * COLS : C;
    for (size_t r = 0; r < j->N; r++) {
        const float *d = j->dout + r * C;
        float *de = j->dwte + (size_t)j->tokens[r] * C; // out = wte[tok] + pos[t]
        for (size_t c = c0; c < c1; c++) de[c] += d[c];
        if (j->dpos)
            for (size_t c = c0; c < c1; c++) j->dpos[(r % j->T) * C + c] += d[c];
    }
}

void embedding_backward(float *dwte, float *dpos, const float *dout, const int32_t *tokens, size_t B, size_t T,
                        size_t C) {
    if (!dwte) return; // an activation-only backward: nothing to accumulate
    emb_job j = {.dwte = dwte, .dpos = dpos, .dout = dout, .tokens = tokens, .T = T, .C = C, .N = B * T};
    aw_parallel_ranges((C + COLS - 1) / COLS, 1, backward_cols, &j);
}

void sinusoidal_encoding(float *pe, size_t L, size_t C) {
    for (size_t p = 0; p < L; p++)
        for (size_t i = 0; 2 * i < C; i++) {
            // computed in double so that native and wasm builds agree to float rounding
            double angle = (double)p / pow(10000.0, (double)(2 * i) / (double)C);
            pe[p * C + 2 * i] = (float)sin(angle);
            if (2 * i + 1 < C) pe[p * C + 2 * i + 1] = (float)cos(angle);
        }
}
