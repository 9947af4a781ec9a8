// api_hooks.c: the exported C ABI of hooked runs (src/model/hooks.h): model.runWithCache,
// runWithHooks, logitLens, headAttribution and ablationGrid in wasm/model.js, and the weights-only
// compositionScores (composition.h).
#include "api.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../model/composition.h"
#include "../model/hooks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A hooked run of one sequence of n tokens on model m (keeps a pointer to m: destroy it first).
AW_API int aw_hooks_create(aw_hook_run **out, aw_model *m, int32_t n) {
    aw_clear_error();
    *out = NULL;
    if (n <= 0) return aw_fail(AW_ERR_ARG, "ids must not be empty");
    aw_hook_run *r = calloc(1, sizeof *r);
    if (!r) return api_done(AW_ERR_NOMEM);
    int st = hook_run_init(r, m, (size_t)n);
    if (st) return free(r), api_done(st);
    *out = r;
    return AW_OK;
}

AW_API void aw_hooks_destroy(aw_hook_run *r) {
    if (!r) return;
    hook_run_free(r);
    free(r);
}

// Caches the activation `name` (NULL or "": every point of the model).
AW_API int aw_hooks_keep(aw_hook_run *r, const char *name) {
    aw_clear_error();
    int point = -1, layer = -1, st;
    // NULL keeps every point; "" is a name like any other (an unknown one), never "all"
    if (name && (st = hook_parse(r->m, name, &point, &layer))) return api_done(st);
    return api_done(hook_run_keep(r, point, layer));
}

// mode: 0 zero, 1 mean; positions: np indices (np < 0: every position).
AW_API int aw_hooks_ablate(aw_hook_run *r, int32_t layer, int32_t head, int32_t mode, const int32_t *positions,
                           int32_t np) {
    aw_clear_error();
    return api_done(hook_run_ablate(r, layer, head, mode, positions, np));
}

// from: nfrom floats of the activation `name` of another run of n tokens; positions (np), heads (nh):
// indices, < 0 for all.
AW_API int aw_hooks_patch(aw_hook_run *r, const char *name, const int32_t *positions, int32_t np, const int32_t *heads,
                          int32_t nh, const float *from, int32_t nfrom) {
    aw_clear_error();
    int point, layer;
    int st = hook_parse(r->m, name, &point, &layer);
    if (st) return api_done(st);
    if (nfrom < 0) return aw_fail(AW_ERR_ARG, "from has a negative length");
    if (aw_find_nonfinite(from, (size_t)nfrom) != (size_t)nfrom)
        return aw_fail(AW_ERR_ARG, "from's %s holds NaN or Infinity", name);
    return api_done(hook_run_patch(r, point, layer, positions, np, heads, nh, from, (size_t)nfrom));
}

// Hook operations on a named point (hooks.h): add factor x vector to each selected row (steering),
// scale by factor, replace rows. Values must be finite.
AW_API int aw_hooks_add(aw_hook_run *r, const char *name, const int32_t *positions, int32_t np, const int32_t *heads,
                        int32_t nh, const float *vector, int32_t nvec, double scale) {
    aw_clear_error();
    int point, layer;
    int st = hook_parse(r->m, name, &point, &layer);
    if (st) return api_done(st);
    if (nvec < 0) return aw_fail(AW_ERR_ARG, "add: vector has a negative length");
    if (aw_find_nonfinite(vector, (size_t)nvec) != (size_t)nvec) return aw_fail(AW_ERR_ARG, "add: %s's vector holds NaN or Infinity", name);
    if (!isfinite(scale) || fabs(scale) > 3.4e38) return aw_fail(AW_ERR_ARG, "add: scale must be a finite number, got %g", scale);
    return api_done(hook_run_add(r, point, layer, positions, np, heads, nh, vector, (size_t)nvec, (float)scale));
}

AW_API int aw_hooks_scale(aw_hook_run *r, const char *name, const int32_t *positions, int32_t np, const int32_t *heads,
                          int32_t nh, double factor) {
    aw_clear_error();
    int point, layer;
    int st = hook_parse(r->m, name, &point, &layer);
    if (st) return api_done(st);
    if (!isfinite(factor) || fabs(factor) > 3.4e38) return aw_fail(AW_ERR_ARG, "scale: factor must be a finite number, got %g", factor);
    return api_done(hook_run_scale(r, point, layer, positions, np, heads, nh, (float)factor));
}

AW_API int aw_hooks_replace(aw_hook_run *r, const char *name, const int32_t *positions, int32_t np, const int32_t *heads,
                            int32_t nh, const float *rows, int32_t nrows) {
    aw_clear_error();
    int point, layer;
    int st = hook_parse(r->m, name, &point, &layer);
    if (st) return api_done(st);
    if (nrows < 0) return aw_fail(AW_ERR_ARG, "replace: data has a negative length");
    if (aw_find_nonfinite(rows, (size_t)nrows) != (size_t)nrows) return aw_fail(AW_ERR_ARG, "replace: %s's data holds NaN or Infinity", name);
    return api_done(hook_run_replace(r, point, layer, positions, np, heads, nh, rows, (size_t)nrows));
}

// on 1: the next aw_hooks_run stops once every kept point is computed (hooks.h stop); its logits
// must then be NULL. on 0: the whole forward again.
AW_API int aw_hooks_stop_after(aw_hook_run *r, int32_t on) {
    aw_clear_error();
    if (on != 0 && on != 1) return aw_fail(AW_ERR_ARG, "stopAfter must be 0 or 1, got %d", (int)on);
    r->stop_after = on;
    return AW_OK;
}

// The forward with every edit and cache request; logits (n, V), or NULL.
AW_API int aw_hooks_run(aw_hook_run *r, const int32_t *ids, float *logits) {
    aw_clear_error();
    return api_done(hook_run_forward(r, ids, logits));
}

// The cache as JSON: [{"name":..., "ptr":..., "shape":[...]}, ...] (snprintf's contract).
AW_API int32_t aw_hooks_cache_json(const aw_hook_run *r, char *buf, int32_t cap) {
    size_t len = 0, c = cap > 0 ? (size_t)cap : 0;
#define PUT(...) len += (size_t)snprintf(len < c ? buf + len : NULL, len < c ? c - len : 0, __VA_ARGS__)
    PUT("[");
    int first = 1;
    for (int p = 0; p < AW_HOOK_COUNT; p++)
        for (int l = -1; l < r->m->cfg.layers; l++) {
            if (!r->cache[p][l + 1]) continue;
            char name[64];
            size_t dims[3], floats;
            hook_name(name, sizeof name, p, l);
            const int rank = hook_shape(r->m, p, r->n, dims, &floats);
            PUT("%s{\"name\":\"%s\",\"ptr\":%lu,\"shape\":[%zu,%zu", first ? "" : ",", name,
                (unsigned long)(uintptr_t)r->cache[p][l + 1], dims[0], dims[1]);
            if (rank == 3) PUT(",%zu", dims[2]);
            PUT("]}");
            first = 0;
        }
    PUT("]");
#undef PUT
    return (int32_t)len;
}

// Each layer's resid_post through the final norm and the classifier: out (layers, n, V).
AW_API int aw_hooks_logit_lens(aw_model *m, const int32_t *ids, int32_t n, float *out) {
    aw_clear_error();
    if (n <= 0) return aw_fail(AW_ERR_ARG, "ids must not be empty");
    return api_done(hook_logit_lens(m, ids, (size_t)n, out));
}

// Direct logit attribution (hooks.h hook_attribution): heads (layers, H, n), mlp (layers, n),
// embed, rest, logit (n).
AW_API int aw_hooks_attribution(aw_model *m, const int32_t *ids, int32_t n, const int32_t *targets, float *heads,
                                float *mlp, float *embed, float *rest, float *logit) {
    aw_clear_error();
    if (n <= 0) return aw_fail(AW_ERR_ARG, "ids must not be empty");
    return api_done(hook_attribution(m, ids, (size_t)n, targets, heads, mlp, embed, rest, logit));
}

// The ablation grid (hooks.h hook_ablation_grid): out (modes, layers, H, n - 1), clean (n - 1).
AW_API int aw_hooks_ablation_grid(aw_model *m, const int32_t *ids, int32_t n, int32_t modes, float *out, float *clean) {
    aw_clear_error();
    if (n < 2) return aw_fail(AW_ERR_ARG, "ablationGrid needs at least 2 tokens (a next token to predict), got %d", (int)n);
    return api_done(hook_ablation_grid(m, ids, (size_t)n, modes, out, clean));
}

// The patching grid (hooks.h hook_patching_grid): name a whole-row point of block 0
// ("blocks.0.hook_resid_pre"); from (layers, n, C); targets (n - 1); out (layers, n, n - 1), clean (n - 1).
AW_API int aw_hooks_patching_grid(aw_model *m, const int32_t *ids, int32_t n, const char *name, const float *from,
                                  int32_t nfrom, const int32_t *targets, float *out, float *clean) {
    aw_clear_error();
    if (n < 2) return aw_fail(AW_ERR_ARG, "patchingGrid needs at least 2 tokens (a next token to predict), got %d", (int)n);
    int point, layer;
    int st = hook_parse(m, name, &point, &layer);
    if (st) return api_done(st);
    const size_t want = (size_t)m->cfg.layers * (size_t)n * (size_t)m->cfg.d_model;
    if (nfrom < 0 || (size_t)nfrom != want)
        return aw_fail(AW_ERR_ARG, "from holds %d values for the layers, expected (layers, n, dModel) = (%d, %d, %d) = %zu: "
                                   "a cache of an input of the same length", (int)nfrom, (int)m->cfg.layers, (int)n,
                       (int)m->cfg.d_model, want);
    if (aw_find_nonfinite(from, want) != want) return aw_fail(AW_ERR_ARG, "from holds NaN or Infinity");
    return api_done(hook_patching_grid(m, ids, (size_t)n, point, from, targets, out, clean));
}

// The composition scores (composition.h model_composition_scores): q, k, v (layers, H, layers, H) each.
AW_API int aw_model_composition_scores(aw_model *m, float *q, float *k, float *v) {
    aw_clear_error();
    return api_done(model_composition_scores(m, q, k, v));
}
