// embedding.c: token embedding plus positional encoding (docs/attention-forms.md section 5).
#include "layers.h"

#include <math.h>
#include <string.h>

void embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *pos, size_t B, size_t T,
                       size_t C) {
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            float *o = out + (b * T + t) * C;
            const float *e = wte + (size_t)tokens[b * T + t] * C, *p = pos + t * C;
            for (size_t c = 0; c < C; c++) o[c] = e[c] + p[c];
        }
}

void embedding_backward(float *dwte, float *dpos, const float *dout, const int32_t *tokens, size_t B, size_t T,
                        size_t C) {
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const float *d = dout + (b * T + t) * C;
            float *de = dwte + (size_t)tokens[b * T + t] * C; // out = wte[tok] + pos[t]
            for (size_t c = 0; c < C; c++) de[c] += d[c];
            if (dpos)
                for (size_t c = 0; c < C; c++) dpos[t * C + c] += d[c];
        }
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
