// gradcheck.c: finite-difference gradient check of a whole model, in the library so that the
// native suite and the wasm build (through the JS wrapper) run the very same procedure.
//
// On a random batch (tokens, targets with some ignored, source), forward + backward give the
// analytic gradient g_t of every tensor t. Checking entries one by one drowns in float32 noise
// (a single entry moves the loss by ~1e-7, the size of the forward's rounding), so each tensor
// is checked along whole directions instead, where the loss moves by ~1e-3:
//   - along u = g_t / |g_t|: the directional derivative must equal |g_t|. Any error that scales
//     or bends the tensor's gradient (a factor 1.1 gives 10%) shows here at full strength;
//   - along a random unit direction r: it must equal g_t . r, compared relative to |g_t|, which
//     catches errors orthogonal to g_t.
// Each derivative is a central difference at steps h and h/2 combined by Richardson
// extrapolation, (4 D(h/2) - D(h)) / 3; the step h is set so that h |g_t| = LOSS_STEP (loss
// units). The extrapolation's own error estimate, |D(h/2) - D(h)| / 3, is taken off the difference
// from the analytic value before it counts: float32 rounding in the forward makes the finite
// difference of a tensor with a small gradient uncertain by a few percent (up to 3% seen on the
// relaxed-SIMD build), and that uncertainty is the check's, not the gradient's. A 10% error in a
// gradient moves D(h) and D(h/2) alike, so it still shows in full. When D(h) and D(h/2) disagree by more than KINK the step crossed a ReLU kink: the
// direction is retried with h / 8, and counted as skipped if it still disagrees. The loss is summed in
// double (crossentropy_forward). Parameters are restored exactly. A form's tensor trained by its side
// loss alone (aw_tensor_info.side: DSA's indexer) is checked against that loss' differences instead,
// the loss its gradient is of.
#include "transformer.h"

#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RETRIES = 2 };
#define LOSS_STEP 2e-4   // each step moves the loss by about this much
#define KINK 0.02        // D(h) and D(h/2) further apart than this (relative): a kink was crossed
#define GRAD_FLOOR 1e-4  // gradient norms below this count as zero
#define KINK_MARGIN 2e-3 // feed-forward pre-activations closer to zero than this: draw another batch

// the model's loss, or (side) the forms' side losses
static double loss_now(aw_model *m, int side) {
    aw_metrics mt;
    model_forward(m, &mt);
    return side ? mt.side_loss : mt.loss;
}

// x = x0 + h u over n entries.
static void set_point(float *x, const float *x0, const double *u, double h, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((double)x0[i] + h * u[i]);
}

// The step along u actually taken between x0 - h u and x0 + h u (float-rounded), projected on u.
static double taken_step(const float *x0, const double *u, double h, size_t n) {
    double taken = 0.0;
    for (size_t i = 0; i < n; i++)
        taken += ((double)(float)((double)x0[i] + h * u[i]) - (double)(float)((double)x0[i] - h * u[i])) * u[i];
    return taken / 2.0;
}

// The directional derivative along u (unit): the central differences D(h) and D(h/2) combined by
// Richardson extrapolation. *kink = 1 when a ReLU kink lies within the steps, which shows as
// D(h) and D(h/2) disagreeing, or as the one-sided slopes (L(+h) - L(0)) / h and
// (L(0) - L(-h)) / h disagreeing by more than their curvature allows.
static double directional(aw_model *m, float *x, const float *x0, const double *u, double h, size_t n, double l0,
                          int of_side, int *kink, double *uncert) {
    for (int attempt = 0; attempt < RETRIES; attempt++, h /= 8.0) {
        double lp[2], lm[2], d[2], side = 0.0;
        for (int e = 0; e < 2; e++) {
            const double he = e ? h / 2 : h, t = taken_step(x0, u, he, n);
            set_point(x, x0, u, he, n);
            lp[e] = loss_now(m, of_side);
            set_point(x, x0, u, -he, n);
            lm[e] = loss_now(m, of_side);
            memcpy(x, x0, n * sizeof(float));
            d[e] = t != 0.0 ? (lp[e] - lm[e]) / (2.0 * t) : 0.0;
            // smooth: the one-sided slopes differ by the curvature times the step, which halves
            // with the step; a kink's jump in slope does not
            if (e == 1 && t != 0.0) side = fabs((lp[1] - l0) / t - (l0 - lm[1]) / t);
        }
        const double big = fabs(d[0]) > fabs(d[1]) ? fabs(d[0]) : fabs(d[1]);
        if (fabs(d[0] - d[1]) <= KINK * big + GRAD_FLOOR * 1e-2 && side <= 4.0 * KINK * big + GRAD_FLOOR * 1e-2) {
            *kink = 0;
            *uncert = fabs(d[1] - d[0]) / 3.0; // Richardson's own error estimate
            return (4.0 * d[1] - d[0]) / 3.0;
        }
    }
    *kink = 1;
    return 0.0;
}

// The smallest |pre-activation| of any feed-forward ReLU in the last forward: how close the batch
// sits to a kink.
static float nearest_kink(const aw_model *m) {
    const size_t F = (size_t)m->cfg.d_ff;
    float least = INFINITY;
    for (int l = 0; l < m->cfg.layers; l++) {
        const aw_ffn_acts *f[2] = {&m->a.dec_ffn[l], &m->a.enc_ffn[l]};
        const size_t rows[2] = {m->B * m->T, m->B * m->S};
        for (int g = 0; g < 2; g++)
            for (size_t i = 0; f[g]->h && i < rows[g] * F; i++) least = fabsf(f[g]->h[i]) < least ? fabsf(f[g]->h[i]) : least;
    }
    return least;
}

int model_grad_check(aw_model *m, size_t B, size_t T, size_t S, uint64_t seed, const char *mutate_tensor,
                     double mutate_factor, aw_grad_check *out) {
    if (m->inference) return model_refuse_inference(m, "a gradient check");
    memset(out, 0, sizeof *out);
    int st = model_reserve(m, B, T, S);
    if (st) return st;
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    const uint32_t V = (uint32_t)m->cfg.vocab;
    aw_metrics mt;
    // a batch whose feed-forward ReLUs all sit clear of their kinks (a pre-activation within the
    // steps of zero makes the finite differences average two slopes): redraw up to 64 times
    for (int draw = 0; draw < 64; draw++) {
        for (size_t i = 0; i < B * T; i++) {
            m->tokens[i] = (int32_t)aw_rng_below(&rng, V);
            m->targets[i] = i % 5 == 2 ? -1 : (int32_t)aw_rng_below(&rng, V);
        }
        for (size_t i = 0; i < B * S; i++) m->src[i] = (int32_t)aw_rng_below(&rng, V);
        if ((st = model_forward(m, &mt))) return st;
        out->redraws = (size_t)draw;
        if (nearest_kink(m) > KINK_MARGIN) break;
    }
    if ((st = model_backward(m))) return st;
    const double l0 = mt.loss, l0_side = mt.side_loss;
    size_t most = 0;
    for (size_t t = 0; t < m->n_tensors; t++) most = model_tensor_size(&m->tensors[t]) > most ? model_tensor_size(&m->tensors[t]) : most;
    float *g = aw_alloc_floats(aw_size_mul(2, most)), *x0 = g + most;
    double *u = aw_alloc_doubles(most);
    if (!g || !u) {
        free(g), free(u);
        return aw_fail(AW_ERR_NOMEM, "out of memory for the gradient check");
    }
    for (size_t t = 0; t < m->n_tensors; t++) {
        const aw_tensor_info *ti = &m->tensors[t];
        const size_t n = model_tensor_size(ti);
        float *x = model_tensor_data(m, ti);
        memcpy(g, model_tensor_grad(m, ti), n * sizeof(float)); // backward's result (forwards leave grads alone)
        memcpy(x0, x, n * sizeof(float));
        if (mutate_tensor && strcmp(mutate_tensor, ti->name) == 0) // a test's deliberate error in one tensor
            for (size_t i = 0; i < n; i++) g[i] = (float)(g[i] * mutate_factor);
        double gn = 0.0;
        for (size_t i = 0; i < n; i++) gn += (double)g[i] * g[i];
        gn = sqrt(gn);
        if (!ti->trainable) { // a fixed table: the backward must leave its gradient at zero
            out->fixed_with_grad += gn != 0.0;
            continue;
        }
        // learned positions beyond T get no gradient, and neither do unused vocabulary rows
        if (gn == 0.0) {
            if (strcmp(ti->name, "wpe") != 0 && strcmp(ti->name, "wte") != 0) {
                out->zero_grad_tensors++;
                if (!out->zero_grad_name[0]) snprintf(out->zero_grad_name, sizeof out->zero_grad_name, "%s", ti->name);
            }
            continue;
        }
        // a gradient this small is zero up to rounding (a key bias under softmax, whose logits
        // shift by the same amount in every column): compare against the floor instead
        const double scale = gn > GRAD_FLOOR ? gn : GRAD_FLOOR;
        const double h = LOSS_STEP / scale;
        double e = 0.0;
        for (int dir = 0; dir < 2; dir++) {
            double ana = 0.0, norm = 0.0;
            for (size_t i = 0; i < n; i++) {
                u[i] = dir == 0 ? (double)g[i] / gn : 2.0 * aw_rng_uniform(&rng) - 1.0;
                norm += u[i] * u[i];
            }
            norm = sqrt(norm);
            for (size_t i = 0; i < n; i++) u[i] /= norm, ana += (double)g[i] * u[i];
            int kink;
            double uncert = 0.0;
            const double num = directional(m, x, x0, u, h, n, ti->side ? l0_side : l0, ti->side, &kink, &uncert);
            if (kink) {
                out->skipped++;
                continue;
            }
            out->checked++;
            const double err = (fabs(num - ana) > uncert ? fabs(num - ana) - uncert : 0.0) / scale;
            e = err > e ? err : e;
        }
        out->error = e > out->error ? e : out->error;
        if (e > out->worst_tensor_error) {
            out->worst_tensor_error = e;
            snprintf(out->worst_tensor, sizeof out->worst_tensor, "%s", ti->name);
        }
    }
    free(g), free(u);
    return AW_OK;
}
