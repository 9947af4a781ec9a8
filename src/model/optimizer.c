// optimizer.c: AdamW (decoupled weight decay) and global-norm gradient clipping.
// Threads (src/kernels/parallel.h): the update and the scaling by ranges of parameters; the norm's
// sum of squares as partial sums over a cut fixed by n alone, added in order, so any number of
// threads gives the same bits.
#include "layers.h"

#include "../kernels/parallel.h"

#include <math.h>

typedef struct {
    float *params, *m, *v, *grads;
    const uint8_t *decay_mask;
    const aw_adamw_config *cfg;
    float step, rbc2, scale;
    double *partial;
    size_t n, piece;
} opt_job;

static void adamw_range(void *ctx, size_t i0, size_t i1) {
    const opt_job *j = ctx;
    const aw_adamw_config *cfg = j->cfg;
    const float lr = cfg->lr, b1 = cfg->beta1, b2 = cfg->beta2, step = j->step, rbc2 = j->rbc2;
    float *params = j->params, *m = j->m, *v = j->v;
    for (size_t i = i0; i < i1; i++) {
        const float g = j->grads[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        const float decay = (j->decay_mask == NULL || j->decay_mask[i]) ? lr * cfg->weight_decay * params[i] : 0.0f;
        params[i] -= step * m[i] / (sqrtf(v[i] * rbc2) + cfg->eps) + decay;
    }
}

void adamw_update(float *params, float *m, float *v, const float *grads, const uint8_t *decay_mask, size_t n,
                  const aw_adamw_config *cfg, long t) {
    const double bc1 = 1.0 - pow(cfg->beta1, (double)t), bc2 = 1.0 - pow(cfg->beta2, (double)t);
    opt_job j = {.params = params, .m = m, .v = v, .grads = (float *)grads, .decay_mask = decay_mask, .cfg = cfg,
                 .step = (float)(cfg->lr / bc1), .rbc2 = (float)(1.0 / bc2)};
    aw_parallel_ranges(n, AW_GRAIN, adamw_range, &j);
}

static void sumsq_piece(void *ctx, size_t p) {
    const opt_job *j = ctx;
    const size_t i0 = p * j->piece, i1 = j->n - i0 < j->piece ? j->n : i0 + j->piece;
    double ss = 0.0;
    for (size_t i = i0; i < i1; i++) ss += (double)j->grads[i] * j->grads[i];
    j->partial[p] = ss;
}

static void scale_range(void *ctx, size_t i0, size_t i1) {
    const opt_job *j = ctx;
    for (size_t i = i0; i < i1; i++) j->grads[i] *= j->scale;
}

double clip_grad_norm(float *grads, size_t n, double max_norm) {
    double partial[AW_PIECES];
    size_t piece;
    const size_t pieces = aw_pieces(n, AW_GRAIN, &piece);
    opt_job j = {.grads = grads, .partial = partial, .n = n, .piece = piece};
    aw_parallel_for(pieces, sumsq_piece, &j);
    double ss = 0.0;
    for (size_t p = 0; p < pieces; p++) ss += partial[p];
    const double norm = sqrt(ss);
    if (max_norm > 0.0 && norm > max_norm) {
        j.scale = (float)(max_norm / (norm + 1e-12));
        aw_parallel_ranges(n, AW_GRAIN, scale_range, &j);
    }
    return norm;
}
