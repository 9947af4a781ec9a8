// loss.c: softmax cross-entropy over vocabulary logits, with ignored rows (target < 0).
#include "layers.h"

#include "../kernels/kernels.h"

#include <math.h>
#include <string.h>

double crossentropy_forward(float *probs, float *losses, const float *logits, const int32_t *targets, size_t N,
                            size_t V, size_t *count, size_t *correct) {
    double total = 0.0;
    size_t cnt = 0, ok = 0;
    for (size_t r = 0; r < N; r++) {
        const float *l = logits + r * V;
        float *p = probs + r * V;
        size_t arg = 0;
        for (size_t j = 1; j < V; j++)
            if (l[j] > l[arg]) arg = j;
        memcpy(p, l, V * sizeof(float));
        aw_softmax_rows(p, 1, V, V);
        losses[r] = 0.0f;
        if (targets[r] < 0) continue;
        // -log p computed from the logits (log-sum-exp) so that p underflowing to 0 stays finite
        double lse = 0.0;
        for (size_t j = 0; j < V; j++) lse += exp((double)l[j] - l[arg]);
        const double loss = log(lse) + l[arg] - l[targets[r]];
        losses[r] = (float)loss;
        total += loss; // in double: the gradient check differentiates this sum

        cnt++;
        ok += arg == (size_t)targets[r];
    }
    *count = cnt, *correct = ok;
    return cnt ? total / (double)cnt : 0.0;
}

// loss = -log softmax(l)[y]:  dl_j = (p_j - [j == y]) * dloss.
void crossentropy_backward(float *dlogits, const float *probs, const int32_t *targets, float dloss, size_t N,
                           size_t V) {
    for (size_t r = 0; r < N; r++) {
        if (targets[r] < 0) continue;
        for (size_t j = 0; j < V; j++) dlogits[r * V + j] += (probs[r * V + j] - (j == (size_t)targets[r])) * dloss;
    }
}
