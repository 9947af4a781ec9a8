// optimizer.c: AdamW (decoupled weight decay) and global-norm gradient clipping.
#include "layers.h"

#include <math.h>

void adamw_update(float *params, float *m, float *v, const float *grads, const uint8_t *decay_mask, size_t n,
                  const aw_adamw_config *cfg, long t) {
    const double bc1 = 1.0 - pow(cfg->beta1, (double)t), bc2 = 1.0 - pow(cfg->beta2, (double)t);
    const float lr = cfg->lr, b1 = cfg->beta1, b2 = cfg->beta2;
    const float step = (float)(lr / bc1), rbc2 = (float)(1.0 / bc2);
    for (size_t i = 0; i < n; i++) {
        const float g = grads[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        const float decay = (decay_mask == NULL || decay_mask[i]) ? lr * cfg->weight_decay * params[i] : 0.0f;
        params[i] -= step * m[i] / (sqrtf(v[i] * rbc2) + cfg->eps) + decay;
    }
}

double clip_grad_norm(float *grads, size_t n, double max_norm) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)grads[i] * grads[i];
    const double norm = sqrt(ss);
    if (max_norm > 0.0 && norm > max_norm) {
        const float s = (float)(max_norm / (norm + 1e-12));
        for (size_t i = 0; i < n; i++) grads[i] *= s;
    }
    return norm;
}
