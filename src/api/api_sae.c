// api_sae.c: the exported C ABI of TopK sparse autoencoders (src/sae/sae.h): lib.createSAE,
// lib.loadSAE and the SAE object's methods in wasm/sae.js.
#include "api.h"

#include "../sae/sae.h"

#include <math.h>
#include <stdlib.h>

// A new SAE (its parameters from seed); *out NULL on failure.
AW_API int aw_sae_create(aw_sae **out, int32_t d_in, int32_t d_sae, int32_t k, int32_t aux_k, int32_t dead_tokens,
                         double aux_coef, uint32_t seed) {
    aw_clear_error();
    *out = NULL;
    if (d_in < 1) return aw_fail(AW_ERR_ARG, "dIn is %d; expected a positive integer", d_in);
    if (d_sae < 1) return aw_fail(AW_ERR_ARG, "dSae is %d; expected a positive integer", d_sae);
    if (k < 1) return aw_fail(AW_ERR_ARG, "k is %d; expected 1 <= k <= dSae = %d", k, d_sae);
    if (aux_k < 0) return aw_fail(AW_ERR_ARG, "auxK is %d; expected 0 <= auxK <= dSae = %d", aux_k, d_sae);
    if (dead_tokens < 1) return aw_fail(AW_ERR_ARG, "deadTokens is %d; expected a positive integer", dead_tokens);
    if (!isfinite(aux_coef) || aux_coef < 0 || aux_coef > 1e30)
        return aw_fail(AW_ERR_ARG, "auxCoef is %g; expected a finite number >= 0", aux_coef);
    aw_sae *s = calloc(1, sizeof *s);
    if (!s) return api_done(AW_ERR_NOMEM);
    const aw_sae_config cfg = {.d_in = (size_t)d_in, .d_sae = (size_t)d_sae, .k = (size_t)k, .aux_k = (size_t)aux_k,
                               .dead_tokens = (size_t)dead_tokens, .aux_coef = (float)aux_coef};
    int st = sae_init(s, &cfg, seed);
    if (st) return free(s), api_done(st);
    *out = s;
    return AW_OK;
}

AW_API void aw_sae_destroy(aw_sae *s) {
    if (!s) return;
    sae_free(s);
    free(s);
}

// The parameter block (n_params floats: enc.w (dSae, dIn), enc.b (dSae), dec.w (dSae, dIn), b_pre (dIn))
// and the gradient block of the same layout (the last sae_gradients or train step).
AW_API float *aw_sae_params(aw_sae *s) { return s->params; }
AW_API float *aw_sae_grads(aw_sae *s) { return s->grads; }
AW_API int32_t aw_sae_param_count(aw_sae *s) { return (int32_t)s->n_params; }
// Rows since each latent last fired (dSae uint32), and the Adam steps taken.
AW_API uint32_t *aw_sae_since_fired(aw_sae *s) { return s->since_fired; }
AW_API int32_t aw_sae_steps(aw_sae *s) { return (int32_t)s->step; }

// stats (5 doubles): loss, fvu, aux, l0, dead.
static void write_stats(double *out, const aw_sae_stats *st) {
    out[0] = st->loss, out[1] = st->fvu, out[2] = st->aux, out[3] = st->l0, out[4] = st->dead;
}

AW_API int aw_sae_train_step(aw_sae *s, const float *x, int32_t rows, double lr, double *stats) {
    aw_clear_error();
    if (rows < 1) return aw_fail(AW_ERR_ARG, "acts must hold at least one row");
    if (!isfinite(lr) || lr < 0 || lr > 1e30) return aw_fail(AW_ERR_ARG, "lr is %g; expected a finite number >= 0", lr);
    aw_sae_stats st = {0};
    int r = sae_train_step(s, x, (size_t)rows, (float)lr, &st);
    if (!r) write_stats(stats, &st);
    return api_done(r);
}

AW_API int aw_sae_gradients(aw_sae *s, const float *x, int32_t rows, double *stats) {
    aw_clear_error();
    if (rows < 1) return aw_fail(AW_ERR_ARG, "acts must hold at least one row");
    aw_sae_stats st = {0};
    int r = sae_gradients(s, x, (size_t)rows, &st);
    if (!r) write_stats(stats, &st);
    return api_done(r);
}

AW_API int aw_sae_encode(aw_sae *s, const float *x, int32_t rows, int32_t *idx, float *val) {
    aw_clear_error();
    if (rows < 1) return aw_fail(AW_ERR_ARG, "acts must hold at least one row");
    return api_done(sae_encode(s, x, (size_t)rows, idx, val));
}

AW_API int aw_sae_decode(aw_sae *s, const float *z, int32_t rows, float *out) {
    aw_clear_error();
    if (rows < 1) return aw_fail(AW_ERR_ARG, "z must hold at least one row");
    return api_done(sae_decode(s, z, (size_t)rows, out));
}

// Sets the parameters from n floats (a loaded checkpoint) and the counters (since: dSae uint32, or
// NULL to keep them at 0). Adam's moments are not saved: training on from a load starts them afresh.
AW_API int aw_sae_load(aw_sae *s, const float *p, int32_t n, const uint32_t *since) {
    aw_clear_error();
    if (n < 0) return aw_fail(AW_ERR_ARG, "params must not have a negative length");
    int r = sae_set_params(s, p, (size_t)n);
    if (r) return api_done(r);
    if (since)
        for (size_t j = 0; j < s->cfg.d_sae; j++) s->since_fired[j] = since[j];
    return AW_OK;
}
