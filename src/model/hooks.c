// hooks.c: hooked runs of one sequence (hooks.h): the named points' table, the edits (ablation,
// patching), the cache, and the tools built on them: the logit lens, direct logit attribution and
// the whole ablation grid in one call.
#include "hooks.h"

#include "layers.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The names after "blocks.{l}." (every point but hook_embed and ln_final.hook_normalized).
static const struct {
    const char *suffix;
    int point;
} BLOCK_POINTS[] = {
    {"hook_resid_pre", AW_HOOK_RESID_PRE}, {"attn.hook_q", AW_HOOK_Q},         {"attn.hook_k", AW_HOOK_K},
    {"attn.hook_v", AW_HOOK_V},             {"attn.hook_pattern", AW_HOOK_PATTERN}, {"attn.hook_z", AW_HOOK_Z},
    {"hook_attn_out", AW_HOOK_ATTN_OUT},    {"hook_resid_mid", AW_HOOK_RESID_MID}, {"hook_mlp_out", AW_HOOK_MLP_OUT},
    {"hook_resid_post", AW_HOOK_RESID_POST},
};
enum { N_BLOCK_POINTS = sizeof BLOCK_POINTS / sizeof BLOCK_POINTS[0] };
#define NAMES_HELP                                                                                                 \
    "hook_embed, blocks.{l}.hook_resid_pre, blocks.{l}.attn.hook_q, hook_k, hook_v, hook_pattern, hook_z, "        \
    "blocks.{l}.hook_attn_out, hook_resid_mid, hook_mlp_out, hook_resid_post, ln_final.hook_normalized"

int hook_model_check(const aw_model *m) {
    if (aw_arch_is_rnn(m->cfg.arch))
        return aw_fail(AW_ERR_ARG, "hooks need a transformer: arch \"%s\" is a recurrent network (a GRU), which has "
                                   "no blocks, heads or residual stream to name",
                       m->cfg.arch == AW_ARCH_GRU ? "gru" : "gru-attention");
    if (m->cfg.arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "hooks need a decoder-only model: arch \"encoder-decoder\" reads a source through "
                                   "an encoder and cross-attention, which TransformerLens's names (one stream of "
                                   "blocks) do not cover");
    return AW_OK;
}

static int point_exists(const aw_model *m, int point, int layer, const char *name) {
    const aw_attn_form *f = &m->self_form[layer > 0 ? layer : 0]; // layerForms: each layer's own
    if ((point == AW_HOOK_Q || point == AW_HOOK_K) && !f->uses_qk)
        return aw_fail(AW_ERR_ARG, "%s: attention \"%s\" reads no queries or keys, so this %s has no such point",
                       name, f->form->name, m->cfg.layer_forms ? "layer" : "model");
    // a form that makes its own values from X (MLA's latent) has no Wv: there is no hook_v to write
    if (point == AW_HOOK_V && (f->form->flags & AW_FORM_OWN_V))
        return aw_fail(AW_ERR_ARG, "%s: attention \"%s\" makes its own values from X (it has no W_V), so this %s "
                                   "has no such point; its per-head values are only seen through attn.hook_z",
                       name, f->form->name, m->cfg.layer_forms ? "layer" : "model");
    if (point == AW_HOOK_LN_FINAL && m->cfg.norm != AW_NORM_PRE)
        return aw_fail(AW_ERR_ARG, "%s: a post-norm model has no final norm (each sublayer normalises its own "
                                   "output; blocks.{l}.hook_resid_post is already normalised)", name);
    return AW_OK;
}

int hook_parse(const aw_model *m, const char *name, int *point, int *layer) {
    int st = hook_model_check(m);
    if (st) return st;
    if (strcmp(name, "hook_embed") == 0) return *point = AW_HOOK_EMBED, *layer = -1, AW_OK;
    if (strcmp(name, "ln_final.hook_normalized") == 0)
        return *point = AW_HOOK_LN_FINAL, *layer = -1, point_exists(m, AW_HOOK_LN_FINAL, -1, name);
    if (strncmp(name, "blocks.", 7) == 0) {
        const char *p = name + 7;
        long l = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 9) l = l * 10 + (*p++ - '0'), digits++;
        // the layer as hook_name writes it: "blocks.01" or "blocks.007" is not normalised to 1 or 7
        if (digits && *p == '.' && !(digits > 1 && name[7] == '0')) {
            for (size_t i = 0; i < N_BLOCK_POINTS; i++)
                if (strcmp(p + 1, BLOCK_POINTS[i].suffix) == 0) {
                    if (l >= m->cfg.layers)
                        return aw_fail(AW_ERR_ARG, "%s: layer %ld is outside [0, %d) (this model has %d layers, "
                                                   "counted from 0)", name, l, (int)m->cfg.layers, (int)m->cfg.layers);
                    *point = BLOCK_POINTS[i].point, *layer = (int)l;
                    return point_exists(m, *point, *layer, name);
                }
        }
    }
    return aw_fail(AW_ERR_ARG, "unknown hook name \"%.60s\": the names are " NAMES_HELP " (l in [0, %d))", name,
                   (int)m->cfg.layers);
}

void hook_name(char *buf, size_t cap, int point, int layer) {
    if (point == AW_HOOK_EMBED) snprintf(buf, cap, "hook_embed");
    else if (point == AW_HOOK_LN_FINAL) snprintf(buf, cap, "ln_final.hook_normalized");
    else
        for (size_t i = 0; i < N_BLOCK_POINTS; i++)
            if (BLOCK_POINTS[i].point == point) snprintf(buf, cap, "blocks.%d.%s", layer, BLOCK_POINTS[i].suffix);
}

int hook_has_heads(const aw_model *m, int point, size_t *heads) {
    const int kv = point == AW_HOOK_K || point == AW_HOOK_V;
    *heads = (size_t)(kv ? m->cfg.kv_heads : m->cfg.heads);
    return kv || point == AW_HOOK_Q || point == AW_HOOK_Z;
}

int hook_shape(const aw_model *m, int point, size_t n, size_t dims[3], size_t *floats) {
    const size_t C = (size_t)m->cfg.d_model, H = (size_t)m->cfg.heads, hd = model_head_dim(&m->cfg);
    size_t G;
    if (point == AW_HOOK_PATTERN) {
        dims[0] = H, dims[1] = n, dims[2] = n;
        *floats = aw_size_mul3(H, n, n);
        return 3;
    }
    if (hook_has_heads(m, point, &G)) {
        dims[0] = n, dims[1] = G, dims[2] = hd;
        *floats = aw_size_mul3(n, G, hd);
        return 3;
    }
    dims[0] = n, dims[1] = C, dims[2] = 0;
    *floats = aw_size_mul(n, C);
    return 2;
}

// ---- the run ----------------------------------------------------------------------------------

// The edits at (point, layer) in order, then the copy into the cache.
static void hook_run_point(struct aw_hooks *h, int point, int layer, float *x) {
    aw_hook_run *r = (aw_hook_run *)h;
    const aw_model *m = r->m;
    const size_t n = r->n, C = (size_t)m->cfg.d_model;
    size_t dims[3], floats;
    hook_shape(m, point, n, dims, &floats);
    for (size_t e = 0; e < r->n_edits; e++) {
        const aw_hook_edit *ed = &r->edits[e];
        if (ed->point != point || ed->layer != layer) continue;
        size_t G, w = model_head_dim(&m->cfg); // a position's row: G groups (heads) of w floats
        if (!hook_has_heads(m, point, &G)) G = 1, w = C;
        for (size_t g = 0; g < G; g++) {
            if (ed->heads && !ed->heads[g]) continue;
            for (size_t i = 0; i < w; i++) {
                float fill = 0.0f;
                if (ed->mode == AW_HOOK_MEAN) { // the mean over every position of this input
                    double s = 0.0;
                    for (size_t p = 0; p < n; p++) s += x[(p * G + g) * w + i];
                    fill = (float)(s / (double)n);
                }
                for (size_t p = 0; p < n; p++) {
                    if (ed->positions && !ed->positions[p]) continue;
                    const size_t at = (p * G + g) * w + i;
                    if (ed->mode == AW_HOOK_ADD) x[at] += ed->factor * ed->from[g * w + i];
                    else if (ed->mode == AW_HOOK_SCALE) x[at] *= ed->factor;
                    else x[at] = ed->mode == AW_HOOK_PATCH ? ed->from[at] : fill;
                }
            }
        }
    }
    float *keep = r->cache[point][layer + 1];
    if (keep) memcpy(keep, x, floats * sizeof(float));
}

int hook_run_init(aw_hook_run *r, aw_model *m, size_t n) {
    memset(r, 0, sizeof *r);
    int st = hook_model_check(m);
    if (st) return st;
    if (n == 0 || n > (size_t)m->cfg.max_len)
        return aw_fail(AW_ERR_ARG, "ids has %zu tokens; this model takes 1 to maxLen = %d", n, (int)m->cfg.max_len);
    r->base.fn = hook_run_point, r->m = m, r->n = n;
    return AW_OK;
}

static void edit_free(aw_hook_edit *e) {
    free(e->positions), free(e->heads), free(e->from);
    memset(e, 0, sizeof *e);
}

void hook_run_clear_edits(aw_hook_run *r) {
    for (size_t i = 0; i < r->n_edits; i++) edit_free(&r->edits[i]);
    r->n_edits = 0;
}

void hook_run_free(aw_hook_run *r) {
    if (!r->m) return;
    hook_run_clear_edits(r);
    free(r->edits);
    for (int p = 0; p < AW_HOOK_COUNT; p++)
        for (int l = 0; l <= AW_MAX_LAYERS; l++) free(r->cache[p][l]);
    memset(r, 0, sizeof *r);
}

static int keep_one(aw_hook_run *r, int point, int layer) {
    if (r->cache[point][layer + 1]) return AW_OK;
    size_t dims[3], floats;
    hook_shape(r->m, point, r->n, dims, &floats);
    r->cache[point][layer + 1] = floats == AW_SIZE_INVALID ? NULL : aw_alloc_floats(floats);
    if (!r->cache[point][layer + 1]) return aw_fail(AW_ERR_NOMEM, "out of memory for the cache of %zu positions", r->n);
    r->keep[point][layer + 1] = 1;
    return AW_OK;
}

int hook_run_keep(aw_hook_run *r, int point, int layer) {
    if (point >= 0) return keep_one(r, point, layer);
    aw_clear_error();
    for (int p = 0; p < AW_HOOK_COUNT; p++) {
        const int outside = p == AW_HOOK_EMBED || p == AW_HOOK_LN_FINAL;
        for (int l = outside ? -1 : 0; l < (outside ? 0 : r->m->cfg.layers); l++) {
            if (point_exists(r->m, p, l, "")) continue; // not a point of this model
            aw_clear_error();
            int st = keep_one(r, p, l);
            if (st) return st;
        }
    }
    aw_clear_error();
    return AW_OK;
}

// A 0/1 mask of `count` from np indices (np < 0: NULL, every one); AW_ERR_ARG naming a bad index.
static int index_mask(uint8_t **out, const char *what, const int32_t *idx, int np, size_t count) {
    *out = NULL;
    if (np < 0) return AW_OK;
    uint8_t *mask = aw_alloc_zero(count ? count : 1, 1);
    if (!mask) return AW_ERR_NOMEM;
    for (int i = 0; i < np; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= count) {
            free(mask);
            return aw_fail(AW_ERR_ARG, "%s[%d] is %d, outside [0, %zu)", what, i, (int)idx[i], count);
        }
        mask[idx[i]] = 1;
    }
    *out = mask;
    return AW_OK;
}

static aw_hook_edit *new_edit(aw_hook_run *r) {
    if (r->n_edits == r->cap_edits) {
        if (r->cap_edits >= AW_HOOK_MAX_EDITS) {
            aw_fail(AW_ERR_ARG, "at most %d edits (ablations, patches, adds, scales, replaces) in one run", AW_HOOK_MAX_EDITS);
            return NULL;
        }
        const size_t cap = r->cap_edits ? 2 * r->cap_edits : 8;
        aw_hook_edit *e = realloc(r->edits, cap * sizeof *e);
        if (!e) return NULL;
        r->edits = e, r->cap_edits = cap;
    }
    aw_hook_edit *e = &r->edits[r->n_edits];
    memset(e, 0, sizeof *e);
    return e;
}

int hook_run_ablate(aw_hook_run *r, int layer, int head, int mode, const int32_t *positions, int np) {
    const aw_model *m = r->m;
    if (layer < 0 || layer >= m->cfg.layers)
        return aw_fail(AW_ERR_ARG, "layer %d is outside [0, %d) (layers counted from 0)", layer, (int)m->cfg.layers);
    if (head < 0 || head >= m->cfg.heads)
        return aw_fail(AW_ERR_ARG, "head %d is outside [0, %d) (heads counted from 0)", head, (int)m->cfg.heads);
    if (mode != AW_HOOK_ZERO && mode != AW_HOOK_MEAN) return aw_fail(AW_ERR_ARG, "mode must be zero or mean");
    uint8_t *pos, *heads;
    int st = index_mask(&pos, "positions", positions, np, r->n);
    if (st) return st;
    const int32_t h = head;
    if ((st = index_mask(&heads, "head", &h, 1, (size_t)m->cfg.heads))) return free(pos), st;
    aw_hook_edit *e = new_edit(r);
    if (!e) return free(pos), free(heads), aw_error_message()[0] ? AW_ERR_ARG : AW_ERR_NOMEM;
    *e = (aw_hook_edit){AW_HOOK_Z, layer, mode, pos, heads, NULL, 0.0f};
    r->n_edits++;
    return AW_OK;
}

int hook_run_patch(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads,
                   int nh, const float *from, size_t nfrom) {
    const aw_model *m = r->m;
    char name[64];
    hook_name(name, sizeof name, point, layer);
    if (point == AW_HOOK_PATTERN)
        return aw_fail(AW_ERR_ARG, "%s is read-only: the attention forms compute their output from q, k and v, "
                                   "never from the pattern; patch attn.hook_z, hook_q, hook_k or hook_v instead", name);
    size_t G, dims[3], floats;
    const int per_head = hook_has_heads(m, point, &G);
    if (!per_head && nh >= 0)
        return aw_fail(AW_ERR_ARG, "heads is only for the per-head names (attn.hook_q, hook_k, hook_v, "
                                   "hook_z), not %s", name);
    hook_shape(m, point, r->n, dims, &floats);
    if (nfrom != floats) {
        if (per_head)
            return aw_fail(AW_ERR_ARG, "from's %s has %zu values, expected (n, heads, dHead) = (%zu, %zu, %zu) = "
                                       "%zu: a cache of an input of the same length", name, nfrom, dims[0], dims[1],
                           dims[2], floats);
        return aw_fail(AW_ERR_ARG, "from's %s has %zu values, expected (n, dModel) = (%zu, %zu) = %zu: a cache of "
                                   "an input of the same length", name, nfrom, dims[0], dims[1], floats);
    }
    uint8_t *pos, *hm = NULL;
    int st = index_mask(&pos, "positions", positions, np, r->n);
    if (st) return st;
    if (per_head && (st = index_mask(&hm, "heads", heads, nh, G))) return free(pos), st;
    float *copy = aw_alloc_floats(floats);
    aw_hook_edit *e = copy ? new_edit(r) : NULL;
    if (!e) return free(pos), free(hm), free(copy), aw_error_message()[0] ? AW_ERR_ARG : AW_ERR_NOMEM;
    memcpy(copy, from, floats * sizeof(float));
    *e = (aw_hook_edit){point, layer, AW_HOOK_PATCH, pos, hm, copy, 0.0f};
    r->n_edits++;
    return AW_OK;
}

// The checks every edit by name shares: a writable point, heads only where the point has them;
// then the position and head masks. *row: one position's floats (G x w).
static int edit_target(aw_hook_run *r, int point, int layer, const char *op, const int32_t *positions, int np,
                       const int32_t *heads, int nh, uint8_t **pos, uint8_t **hm, size_t *row) {
    const aw_model *m = r->m;
    char name[64];
    hook_name(name, sizeof name, point, layer);
    *pos = *hm = NULL;
    if (point == AW_HOOK_PATTERN)
        return aw_fail(AW_ERR_ARG, "%s: %s is read-only: the attention forms compute their output from q, k and v, "
                                   "never from the pattern; use attn.hook_z, hook_q, hook_k or hook_v instead", op, name);
    size_t G, dims[3], floats;
    const int per_head = hook_has_heads(m, point, &G);
    if (!per_head && nh >= 0)
        return aw_fail(AW_ERR_ARG, "%s: heads is only for the per-head names (attn.hook_q, hook_k, hook_v, hook_z), "
                                   "not %s", op, name);
    hook_shape(m, point, r->n, dims, &floats);
    *row = floats / r->n;
    int st = index_mask(pos, "positions", positions, np, r->n);
    if (!st && per_head) st = index_mask(hm, "heads", heads, nh, G);
    if (st) free(*pos), *pos = NULL;
    return st;
}

// One more edit (owning pos, hm and from), or AW_ERR_* with everything freed.
static int push_edit(aw_hook_run *r, aw_hook_edit e) {
    aw_hook_edit *slot = new_edit(r);
    if (!slot) {
        edit_free(&e);
        return aw_error_message()[0] ? AW_ERR_ARG : AW_ERR_NOMEM;
    }
    *slot = e;
    r->n_edits++;
    return AW_OK;
}

int hook_run_add(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads, int nh,
                 const float *vector, size_t nvec, float factor) {
    uint8_t *pos, *hm;
    size_t row;
    int st = edit_target(r, point, layer, "add", positions, np, heads, nh, &pos, &hm, &row);
    if (st) return st;
    if (nvec != row) {
        free(pos), free(hm);
        char name[64];
        hook_name(name, sizeof name, point, layer);
        return aw_fail(AW_ERR_ARG, "add: vector has %zu values, and one position of %s has %zu (%s)", nvec, name, row,
                       row == (size_t)r->m->cfg.d_model ? "dModel" : "heads x dHead");
    }
    float *copy = aw_alloc_floats(row);
    if (!copy) return free(pos), free(hm), AW_ERR_NOMEM;
    memcpy(copy, vector, row * sizeof(float));
    return push_edit(r, (aw_hook_edit){point, layer, AW_HOOK_ADD, pos, hm, copy, factor});
}

int hook_run_scale(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads,
                   int nh, float factor) {
    uint8_t *pos, *hm;
    size_t row;
    int st = edit_target(r, point, layer, "scale", positions, np, heads, nh, &pos, &hm, &row);
    if (st) return st;
    return push_edit(r, (aw_hook_edit){point, layer, AW_HOOK_SCALE, pos, hm, NULL, factor});
}

int hook_run_replace(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads,
                     int nh, const float *rows, size_t nrows) {
    uint8_t *pos, *hm;
    size_t row;
    int st = edit_target(r, point, layer, "replace", positions, np, heads, nh, &pos, &hm, &row);
    if (st) return st;
    const size_t count = np < 0 ? r->n : (size_t)np;
    char name[64];
    hook_name(name, sizeof name, point, layer);
    if (nrows != aw_size_mul(count, row)) {
        free(pos), free(hm);
        return aw_fail(AW_ERR_ARG, "replace: data has %zu values, expected (positions, row) = (%zu, %zu) = %zu for %s",
                       nrows, count, row, aw_size_mul(count, row), name);
    }
    float *full = aw_alloc_zero(aw_size_mul(r->n, row), sizeof(float)); // the rows at their positions
    if (!full) return free(pos), free(hm), AW_ERR_NOMEM;
    for (size_t i = 0; i < count; i++) {
        const size_t p = np < 0 ? i : (size_t)positions[i];
        for (size_t j = 0; j < i && np >= 0; j++)
            if (positions[j] == positions[i]) {
                free(pos), free(hm), free(full);
                return aw_fail(AW_ERR_ARG, "replace: positions[%zu] and positions[%zu] are both %d: one row each",
                               j, i, (int)positions[i]);
            }
        memcpy(full + p * row, rows + i * row, row * sizeof(float));
    }
    return push_edit(r, (aw_hook_edit){point, layer, AW_HOOK_PATCH, pos, hm, full, 0.0f});
}

int hook_run_forward(aw_hook_run *r, const int32_t *ids, float *logits) {
    aw_model *m = r->m;
    const size_t n = r->n, V = (size_t)m->cfg.vocab;
    // the forward's own path (forward keeps every form's weights for display): an empty run gives
    // forward's logits bit for bit
    m->keep_attention = 1;
    int st = model_reserve(m, 1, n, 0);
    m->keep_attention = st ? 0 : 1;
    if (st) return st;
    memcpy(m->tokens, ids, n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) m->targets[i] = -1;
    // stop_after: the last block holding a kept point (-1: hook_embed alone or nothing; layers:
    // ln_final, whose final norm runs and whose classifier does not)
    r->base.stop = r->stop_after, r->base.last_layer = -1;
    for (int p = 0; p < AW_HOOK_COUNT && r->stop_after; p++)
        for (int l = -1; l < m->cfg.layers; l++) {
            if (!r->keep[p][l + 1]) continue;
            const int at = p == AW_HOOK_LN_FINAL ? m->cfg.layers : l;
            if (at > r->base.last_layer) r->base.last_layer = at;
        }
    m->hooks = &r->base;
    st = model_forward(m, NULL);
    m->hooks = NULL, m->keep_attention = 0;
    r->base.stop = 0;
    if (st) return st;
    if (r->stop_after) { // no logits: the kept activations are what must be finite
        if (logits) return aw_fail(AW_ERR_ARG, "a run that stops after its last kept point has no logits to return");
        for (int p = 0; p < AW_HOOK_COUNT; p++)
            for (int l = -1; l < m->cfg.layers; l++) {
                const float *c = r->cache[p][l + 1];
                size_t dims[3], floats;
                if (!c) continue;
                hook_shape(m, p, n, dims, &floats);
                if (aw_find_nonfinite(c, floats) != floats) {
                    char name[64];
                    hook_name(name, sizeof name, p, l);
                    return aw_fail(AW_ERR_NONFINITE, "the activation %s of this run holds NaN or Infinity (diverged "
                                                     "parameters, or a patched activation too large for float32)", name);
                }
            }
        return AW_OK;
    }
    if (aw_find_nonfinite(m->a.logits, n * V) != n * V)
        return aw_fail(AW_ERR_NONFINITE, "the logits of this run are NaN or Infinity (a patched activation too large "
                                         "for float32, or diverged parameters)");
    if (logits) memcpy(logits, m->a.logits, n * V * sizeof(float));
    return AW_OK;
}

// ---- tools ------------------------------------------------------------------------------------

// logits (N, V) of rows x (N, C) through the classifier (tied or not).
static void classify(const aw_model *m, float *logits, const float *x, size_t N) {
    model_classifier(m, logits, x, N);
}

int hook_logit_lens(aw_model *m, const int32_t *ids, size_t n, float *out) {
    aw_hook_run r;
    int st = hook_run_init(&r, m, n);
    for (int l = 0; l < m->cfg.layers && !st; l++) st = hook_run_keep(&r, AW_HOOK_RESID_POST, l);
    if (!st) st = hook_run_forward(&r, ids, NULL);
    const size_t C = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab;
    float *x = st ? NULL : aw_alloc_floats(aw_size_mul(n, C + 2));
    if (!st && !x) st = aw_fail(AW_ERR_NOMEM, "out of memory for the logit lens");
    for (int l = 0; l < m->cfg.layers && !st; l++) {
        const float *resid = r.cache[AW_HOOK_RESID_POST][l + 1];
        // pre-norm: the final norm, as the last layer's stream gets it; post-norm: already normalised
        if (m->cfg.norm == AW_NORM_PRE) norm_forward(m, x, x + n * C, x + n * (C + 1), resid, m->w.lnf_w, m->w.lnf_b, n);
        else memcpy(x, resid, n * C * sizeof(float));
        classify(m, out + (size_t)l * n * V, x, n);
    }
    free(x);
    hook_run_free(&r);
    return st;
}

int hook_attribution(aw_model *m, const int32_t *ids, size_t n, const int32_t *targets, float *heads, float *mlp,
                     float *embed, float *rest, float *logit) {
    if (m->quant) return model_refuse_quantized(m, "attribution (it reads W_O and the classifier's columns)");
    int st = hook_model_check(m);
    if (st) return st;
    if (m->cfg.norm != AW_NORM_PRE)
        return aw_fail(AW_ERR_ARG, "headAttribution needs a pre-norm model: a post-norm block normalises the stream "
                                   "after every sublayer, so no head's output reaches the logits through one linear map");
    const size_t C = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab, H = (size_t)m->cfg.heads, hd = model_head_dim(&m->cfg);
    const size_t A = H * hd; // the heads' width (C unless headDim)
    const int L = m->cfg.layers;
    for (size_t p = 0; p < n; p++)
        if (targets[p] < 0 || targets[p] >= m->cfg.vocab)
            return aw_fail(AW_ERR_ARG, "target[%zu] is %d, outside the vocabulary [0, %d)", p, (int)targets[p],
                           (int)m->cfg.vocab);
    aw_hook_run r;
    st = hook_run_init(&r, m, n);
    if (!st) st = hook_run_keep(&r, AW_HOOK_EMBED, -1);
    for (int l = 0; l < L && !st; l++)
        if (!(st = hook_run_keep(&r, AW_HOOK_Z, l))) st = hook_run_keep(&r, AW_HOOK_MLP_OUT, l);
    if (!st) st = hook_run_forward(&r, ids, NULL);
    float *s = st ? NULL : aw_alloc_floats(aw_size_add(C, A));
    if (!st && !s) st = aw_fail(AW_ERR_NOMEM, "out of memory for the attribution");
    const int centre = m->cfg.norm_type == AW_NORMTYPE_LAYER;
    for (size_t p = 0; p < n && !st; p++) {
        const size_t t = (size_t)targets[p];
        // the final norm's scale of this row in the clean run, times the classifier's column of t:
        // logit = sum_c (x_c - mean x) s_c + shift; LayerNorm's centring distributed over the parts
        // by centring s (sum_c (y_c - mean y) s_c = sum_c y_c (s_c - mean s))
        const float rstd = m->a.lnf_rstd[p];
        double sum = 0.0, shift = m->w.b_out ? m->w.b_out[t] : 0.0;
        for (size_t c = 0; c < C; c++) {
            const float wu = m->cfg.tie ? m->w.wte[t * C + c] : m->w.w_out[c * V + t];
            s[c] = m->w.lnf_w[c] * rstd * wu;
            sum += s[c];
            if (m->w.lnf_b) shift += (double)m->w.lnf_b[c] * wu;
        }
        if (centre)
            for (size_t c = 0; c < C; c++) s[c] -= (float)(sum / (double)C);
        double e = 0.0;
        for (size_t c = 0; c < C; c++) e += (double)r.cache[AW_HOOK_EMBED][0][p * C + c] * s[c];
        embed[p] = (float)e;
        for (int l = 0; l < L; l++) {
            const float *wo = m->w.dec[l].self.wo, *bo = m->w.dec[l].self.bo, *z = r.cache[AW_HOOK_Z][l + 1] + p * A;
            float *u = s + C; // u = W_O s (A): what each column of z adds to the logit
            for (size_t k = 0; k < A; k++) {
                double a = 0.0;
                for (size_t c = 0; c < C; c++) a += (double)wo[k * C + c] * s[c];
                u[k] = (float)a;
            }
            for (size_t h = 0; h < H; h++) {
                double a = 0.0;
                for (size_t i = h * hd; i < (h + 1) * hd; i++) a += (double)z[i] * u[i];
                heads[((size_t)l * H + h) * n + p] = (float)a;
            }
            const float *y = r.cache[AW_HOOK_MLP_OUT][l + 1] + p * C;
            double a = 0.0;
            for (size_t c = 0; c < C; c++) {
                a += (double)y[c] * s[c];
                if (bo) shift += (double)bo[c] * s[c];
            }
            mlp[(size_t)l * n + p] = (float)a;
        }
        rest[p] = (float)shift;
        logit[p] = m->a.logits[p * V + t];
    }
    free(s);
    hook_run_free(&r);
    return st;
}

// log p(next[p]) at each p < n - 1 from the last run's logits (m->a.logits, one sequence).
static void target_logprobs(const aw_model *m, float *out, const int32_t *next, size_t n) {
    const size_t V = (size_t)m->cfg.vocab;
    for (size_t p = 0; p + 1 < n; p++) {
        const float *row = m->a.logits + p * V;
        float mx = row[0];
        for (size_t v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
        double z = 0.0;
        for (size_t v = 0; v < V; v++) z += exp((double)(row[v] - mx));
        out[p] = (float)((double)(row[next[p]] - mx) - log(z));
    }
}

int hook_ablation_grid(aw_model *m, const int32_t *ids, size_t n, int modes, float *out, float *clean) {
    if (modes < 1 || modes > 3) return aw_fail(AW_ERR_ARG, "modes must name zero, mean or both");
    aw_hook_run r;
    int st = hook_run_init(&r, m, n);
    if (!st) st = hook_run_forward(&r, ids, NULL);
    if (!st) target_logprobs(m, clean, ids + 1, n);
    const int L = m->cfg.layers, H = m->cfg.heads;
    // An ablation in block l changes blocks l and later only: each run starts at block l
    // (first_layer) and reads the blocks before it from the previous run. Going from the last
    // block to the first, those are always the clean run's (a run at l rewrites blocks >= l only).
    for (int l = L - 1; l >= 0 && !st; l--) {
        size_t k = 0; // the grid's mode index
        for (int mode = 0; mode < 2 && !st; mode++) {
            if (!(modes & (1 << mode))) continue;
            for (int h = 0; h < H && !st; h++) {
                hook_run_clear_edits(&r);
                r.base.first_layer = l;
                if (!(st = hook_run_ablate(&r, l, h, mode, NULL, -1)) && !(st = hook_run_forward(&r, ids, NULL)))
                    target_logprobs(m, out + ((k * (size_t)L + (size_t)l) * (size_t)H + (size_t)h) * (n - 1), ids + 1, n);
            }
            k++;
        }
    }
    hook_run_free(&r);
    return st;
}

int hook_patching_grid(aw_model *m, const int32_t *ids, size_t n, int point, const float *from,
                       const int32_t *targets, float *out, float *clean) {
    size_t G;
    if (point == AW_HOOK_EMBED || point == AW_HOOK_LN_FINAL || point == AW_HOOK_PATTERN || hook_has_heads(m, point, &G))
        return aw_fail(AW_ERR_ARG, "name must be a block's whole-row point: hook_resid_pre, hook_attn_out, "
                                   "hook_resid_mid, hook_mlp_out or hook_resid_post (per-head points: runWithHooks "
                                   "with heads)");
    for (size_t p = 0; p + 1 < n; p++)
        if (targets[p] < 0 || targets[p] >= m->cfg.vocab)
            return aw_fail(AW_ERR_ARG, "targets[%zu] is %d, outside the vocabulary [0, %d)", p, (int)targets[p],
                           (int)m->cfg.vocab);
    const size_t C = (size_t)m->cfg.d_model, L = (size_t)m->cfg.layers;
    aw_hook_run r;
    int st = hook_run_init(&r, m, n);
    // resid_pre of block l is block l - 1's output buffer, which a patch overwrites in place: the
    // unpatched rows are kept here (from the clean run) and each run first puts back the row the
    // previous run patched
    float *unpatched = NULL;
    for (size_t l = 0; point == AW_HOOK_RESID_PRE && l < L && !st; l++) st = hook_run_keep(&r, AW_HOOK_RESID_PRE, (int)l);
    if (!st) st = hook_run_forward(&r, ids, NULL);
    if (!st) target_logprobs(m, clean, targets, n);
    if (!st && point == AW_HOOK_RESID_PRE) {
        unpatched = aw_alloc_floats(aw_size_mul3(L, n, C));
        if (!unpatched) st = aw_fail(AW_ERR_NOMEM, "out of memory for the patching grid");
        for (size_t l = 0; l < L && !st; l++) {
            memcpy(unpatched + l * n * C, r.cache[AW_HOOK_RESID_PRE][l + 1], n * C * sizeof(float));
            free(r.cache[AW_HOOK_RESID_PRE][l + 1]); // no longer kept
            r.cache[AW_HOOK_RESID_PRE][l + 1] = NULL, r.keep[AW_HOOK_RESID_PRE][l + 1] = 0;
        }
    }
    // as the ablation grid: block l onwards only (first_layer), from the last block to the first
    for (size_t l = L; l-- > 0 && !st;)
        for (size_t p = 0; p < n && !st; p++) {
            const int32_t pos = (int32_t)p, prev = (int32_t)p - 1;
            hook_run_clear_edits(&r);
            r.base.first_layer = (int)l;
            if (unpatched && p > 0) st = hook_run_patch(&r, point, (int)l, &prev, 1, NULL, -1, unpatched + l * n * C, n * C);
            if (!st && !(st = hook_run_patch(&r, point, (int)l, &pos, 1, NULL, -1, from + l * n * C, n * C)) &&
                !(st = hook_run_forward(&r, ids, NULL)))
                target_logprobs(m, out + (l * n + p) * (n - 1), targets, n);
            // (the last row of block l stays patched: the runs at l - 1 start at block l - 1 and
            // rewrite its output)
        }
    free(unpatched);
    hook_run_free(&r);
    return st;
}
