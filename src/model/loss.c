// loss.c: softmax cross-entropy over vocabulary logits, with ignored rows (target < 0).
// Threads (src/kernels/parallel.h): by pieces of rows; the loss is summed per piece and the pieces
// in order, over a cut fixed by N and V alone, so any number of threads gives the same bits.
#include "layers.h"

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"

#include <math.h>
#include <string.h>

typedef struct {
    float *probs, *losses, *dlogits;
    const float *logits;
    const int32_t *targets;
    float dloss;
    size_t N, V, rows; // rows per piece
    double total[AW_PIECES];
    size_t count[AW_PIECES], correct[AW_PIECES];
} ce_job;

static void forward_piece(void *ctx, size_t p) {
    ce_job *j = ctx;
    const size_t V = j->V, r0 = p * j->rows, r1 = j->N - r0 < j->rows ? j->N : r0 + j->rows;
    double total = 0.0;
    size_t cnt = 0, ok = 0;
    for (size_t r = r0; r < r1; r++) {
        const float *l = j->logits + r * V;
        float *pr = j->probs + r * V;
        const int32_t y = j->targets[r];
        size_t arg = 0;
        for (size_t k = 1; k < V; k++)
            if (l[k] > l[arg]) arg = k;
        memcpy(pr, l, V * sizeof(float));
        aw_softmax_rows(pr, 1, V, V);
        j->losses[r] = 0.0f;
        if (y < 0) continue;
        // -log p computed from the logits (log-sum-exp) so that p underflowing to 0 stays finite
        double lse = 0.0;
        for (size_t k = 0; k < V; k++) lse += exp((double)l[k] - l[arg]);
        const double loss = log(lse) + l[arg] - l[y];
        j->losses[r] = (float)loss;
        total += loss; // in double: the gradient check differentiates this sum
        cnt++;
        ok += arg == (size_t)y;
    }
    j->total[p] = total, j->count[p] = cnt, j->correct[p] = ok;
}

// Pieces of at least a grain of rows (aw_pieces).
static size_t cut(ce_job *j) { return aw_pieces(j->N, aw_rows_grain(j->V), &j->rows); }

double crossentropy_forward(float *probs, float *losses, const float *logits, const int32_t *targets, size_t N,
                            size_t V, size_t *count, size_t *correct) {
    ce_job j = {.probs = probs, .losses = losses, .logits = logits, .targets = targets, .N = N, .V = V};
    const size_t pieces = cut(&j);
    aw_parallel_for(pieces, forward_piece, &j);
    double total = 0.0;
    size_t cnt = 0, ok = 0;
    for (size_t p = 0; p < pieces; p++) total += j.total[p], cnt += j.count[p], ok += j.correct[p];
    *count = cnt, *correct = ok;
    return cnt ? total / (double)cnt : 0.0;
}

// loss = -log softmax(l)[y]:  dl_j = (p_j - [j == y]) * dloss.
static void backward_piece(void *ctx, size_t p) {
    const ce_job *j = ctx;
    const size_t V = j->V, r0 = p * j->rows, r1 = j->N - r0 < j->rows ? j->N : r0 + j->rows;
    for (size_t r = r0; r < r1; r++) {
        const int32_t y = j->targets[r];
        if (y < 0) continue;
        for (size_t k = 0; k < V; k++) j->dlogits[r * V + k] += (j->probs[r * V + k] - (k == (size_t)y)) * j->dloss;
    }
}

void crossentropy_backward(float *dlogits, const float *probs, const int32_t *targets, float dloss, size_t N,
                           size_t V) {
    ce_job j = {.probs = (float *)probs, .dlogits = dlogits, .targets = targets, .dloss = dloss, .N = N, .V = V};
    aw_parallel_for(cut(&j), backward_piece, &j);
}
