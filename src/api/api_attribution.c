// api_attribution.c: the exported C ABI of attribution patching (src/model/attribution.h),
// model.attributionPatching and model.ablationEstimate in wasm/hooks.js.
#include "api.h"

#include "../model/attribution.h"
#include "../model/hooks.h"

#include <stdio.h>
#include <string.h>

#define ATTR_NAMES                                                                                                 \
    "attn.hook_q, attn.hook_k, attn.hook_v, attn.hook_z, hook_resid_pre, hook_attn_out, hook_resid_mid, "          \
    "hook_mlp_out, hook_resid_post"

// names: the points as comma-separated suffixes of "blocks.{l}." ("attn.hook_z,hook_mlp_out"), each
// taken at every layer; out: for each in turn (layers, heads or 1, n) floats (attribution.h);
// versus < 0: the metric is log p(target) at position, else logit[target] - logit[versus] there;
// values: the clean and the corrupted metric.
AW_API int aw_hooks_attribution_patching(aw_model *m, const int32_t *clean, const int32_t *corrupt, int32_t n,
                                         const char *names, int32_t target, int32_t position, int32_t versus,
                                         float *out, float *values) {
    aw_clear_error();
    int st = hook_model_check(m);
    if (st) return api_done(st);
    if (n <= 0) return aw_fail(AW_ERR_ARG, "clean must not be empty");
    int points[AW_HOOK_COUNT];
    size_t count = 0;
    for (const char *p = names; *p; count++) {
        if (count == AW_HOOK_COUNT) return aw_fail(AW_ERR_ARG, "names: at most %d points, each once", AW_HOOK_COUNT);
        const size_t len = strcspn(p, ",");
        char name[80];
        snprintf(name, sizeof name, "blocks.0.%.*s", (int)(len < 60 ? len : 60), p);
        int point = -1, layer;
        hook_parse(m, name, &point, &layer); // point stays -1 for an unknown name; the layers' check is below
        if (len >= 60 || point < 0 || point == AW_HOOK_PATTERN) {
            aw_clear_error();
            return aw_fail(AW_ERR_ARG, "names[%zu] is \"%.*s\": expected a block's point, one of " ATTR_NAMES
                                       " (without \"blocks.{l}.\": each is taken at every layer)%s",
                           count, (int)(len < 60 ? len : 60), p,
                           point == AW_HOOK_PATTERN ? "; hook_pattern is read-only (no form reads it back)" : "");
        }
        aw_clear_error();
        for (int l = 0; l < m->cfg.layers; l++) { // a point this model's form (or a layer's) lacks
            snprintf(name, sizeof name, "blocks.%d.%.*s", l, (int)len, p);
            if ((st = hook_parse(m, name, &point, &layer))) {
                char why[512];
                snprintf(why, sizeof why, "%s", aw_error_message());
                aw_clear_error(); // the first failure wins: this one names the argument
                return aw_fail(AW_ERR_ARG, "names[%zu]: %s", count, why);
            }
        }
        points[count] = point;
        p += len + (p[len] == ',');
    }
    if (count == 0) return aw_fail(AW_ERR_ARG, "names must name at least one point: " ATTR_NAMES);
    const aw_attr_metric mt = {target, position, versus};
    return api_done(attribution_patching(m, clean, corrupt, (size_t)n, points, count, &mt, out, values));
}

// The ablation estimate (attribution.h ablation_estimate): spans (n_spans pairs from, to), modes
// (bit 0 zero, bit 1 mean); out (modes set, n_spans, layers, heads), clean (n_spans).
AW_API int aw_hooks_ablation_estimate(aw_model *m, const int32_t *ids, int32_t n, const int32_t *spans,
                                      int32_t n_spans, int32_t modes, float *out, float *clean) {
    aw_clear_error();
    int st = hook_model_check(m);
    if (st) return api_done(st);
    if (n < 2) return aw_fail(AW_ERR_ARG, "ablationEstimate needs at least 2 tokens (a next token to predict), got %d", (int)n);
    if (n_spans < 1) return aw_fail(AW_ERR_ARG, "spans must list at least one [from, to) range of positions");
    return api_done(ablation_estimate(m, ids, (size_t)n, spans, (size_t)n_spans, modes, out, clean));
}
