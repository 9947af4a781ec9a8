// gradcheck.c: finite-difference gradient check of a whole model, in the library so that the
// native suite and the wasm build (through the JS wrapper) run the very same procedure.
//
// On a random batch (tokens, targets with some ignored, source), forward + backward give the
// analytic gradient; then, for up to `per_tensor` entries of every tensor, central differences
// of the mean loss at steps 1e-2 and 1e-3. Where the two disagree (more than 3% + 3e-4) the step
// crossed a ReLU kink or rounding dominates: the entry is skipped and counted. Errors are
// ||numeric - analytic|| / max(||numeric||, ||analytic||): over all checked entries, and per
// tensor (with a floor of 1e-3 on the norm). Parameters are restored exactly.
#include "transformer.h"

#include "../kernels/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double loss_now(aw_model *m) {
    aw_metrics mt;
    model_forward(m, &mt);
    return mt.loss;
}

int model_grad_check(aw_model *m, size_t B, size_t T, size_t S, uint64_t seed, size_t per_tensor,
                     aw_grad_check *out) {
    memset(out, 0, sizeof *out);
    int st = model_reserve(m, B, T, S);
    if (st) return st;
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    const uint32_t V = (uint32_t)m->cfg.vocab;
    for (size_t i = 0; i < B * T; i++) {
        m->tokens[i] = (int32_t)aw_rng_below(&rng, V);
        m->targets[i] = i % 5 == 2 ? -1 : (int32_t)aw_rng_below(&rng, V);
    }
    for (size_t i = 0; i < B * S; i++) m->src[i] = (int32_t)aw_rng_below(&rng, V);
    aw_metrics mt;
    if ((st = model_forward(m, &mt)) || (st = model_backward(m))) return st;
    size_t most = 0;
    for (size_t t = 0; t < m->n_tensors; t++) most = model_tensor_size(&m->tensors[t]) > most ? model_tensor_size(&m->tensors[t]) : most;
    float *g = malloc(most * sizeof(float));
    if (!g) return AW_ERR_NOMEM;
    double num2 = 0.0, ana2 = 0.0, diff2 = 0.0;
    for (size_t t = 0; t < m->n_tensors; t++) {
        const aw_tensor_info *ti = &m->tensors[t];
        const size_t n = model_tensor_size(ti);
        float *x = model_tensor_data(m, ti);
        memcpy(g, model_tensor_grad(m, ti), n * sizeof(float)); // backward's result (forwards leave grads alone)
        double gn = 0.0;
        for (size_t i = 0; i < n; i++) gn += (double)g[i] * g[i];
        // a fixed random synthesizer table: the backward must leave its gradient at zero
        const int fixed = ti->group && !m->synths[ti->group - 1]->cfg.trainable && strstr(ti->name, ".synth.R");
        if (fixed) {
            out->fixed_with_grad += gn != 0.0;
            continue;
        }
        // learned positions beyond T get no gradient, and neither do unused vocabulary rows
        if (gn == 0.0 && strcmp(ti->name, "wpe") != 0 && strcmp(ti->name, "wte") != 0) {
            out->zero_grad_tensors++;
            if (!out->zero_grad_name[0]) snprintf(out->zero_grad_name, sizeof out->zero_grad_name, "%s", ti->name);
        }
        double tn2 = 0.0, ta2 = 0.0, td2 = 0.0;
        const size_t stride = n > per_tensor ? n / per_tensor : 1;
        for (size_t i = 0; i < n; i += stride) {
            const float steps[2] = {1e-2f, 1e-3f}, keep = x[i];
            double num[2];
            for (int e = 0; e < 2; e++) {
                x[i] = keep + steps[e];
                const double lp = loss_now(m);
                x[i] = keep - steps[e];
                num[e] = (lp - loss_now(m)) / (2.0 * steps[e]);
                x[i] = keep;
            }
            const double big = fabs(num[0]) > fabs(num[1]) ? fabs(num[0]) : fabs(num[1]);
            if (fabs(num[0] - num[1]) > 0.03 * big + 3e-4) {
                out->skipped++;
                continue;
            }
            out->checked++;
            tn2 += num[0] * num[0], ta2 += (double)g[i] * g[i], td2 += (num[0] - g[i]) * (num[0] - g[i]);
        }
        num2 += tn2, ana2 += ta2, diff2 += td2;
        const double norm = sqrt(tn2 > ta2 ? tn2 : ta2);
        const double e = sqrt(td2) / (norm > 1e-3 ? norm : 1e-3);
        if (e > out->worst_tensor_error) {
            out->worst_tensor_error = e;
            snprintf(out->worst_tensor, sizeof out->worst_tensor, "%s", ti->name);
        }
    }
    free(g);
    const double norm = sqrt(num2 > ana2 ? num2 : ana2);
    out->error = norm > 0.0 ? sqrt(diff2) / norm : sqrt(diff2);
    return AW_OK;
}
