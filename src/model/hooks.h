// hooks.h: named points in a decoder's forward pass, TransformerLens's names (HookedTransformer's
// HookPoint), layers counted from 0: caching, ablation and activation patching are all "do
// something at a named point" (docs/interpretability.md).
//
// model_forward calls m->hooks->fn at each point (transformer_forward.c, HOOK) when m->hooks is set, with
// the activation of the one sequence being run (B = 1), which the hook may change in place; with
// m->hooks NULL (every other caller: forward, training, generation) a point costs one test.
//
// Shapes (n positions, C = d_model, H heads, KH K/V heads, hd = C / H, F = d_ff):
//   hook_embed                     (n, C)       token embedding plus any additive position table
//   blocks.{l}.hook_resid_pre      (n, C)       the residual stream into block l
//   blocks.{l}.attn.hook_q         (n, H, hd)   queries, before rotary positions (as in TransformerLens)
//   blocks.{l}.attn.hook_k / hook_v (n, KH, hd) keys, values of the K/V heads (before rotary)
//   blocks.{l}.attn.hook_pattern   (H, n, n)    the form's weights (signed A with O = A V for forms
//                                               without probabilities); read-only: no form reads it back
//   blocks.{l}.attn.hook_z         (n, H, hd)   each head's output before W_O
//   blocks.{l}.hook_attn_out       (n, C)       z W_O + b_O
//   blocks.{l}.hook_resid_mid      (n, C)       resid_pre + attn_out (post-norm: LN of that)
//   blocks.{l}.hook_mlp_out        (n, C)       the feed-forward sublayer's output
//   blocks.{l}.hook_resid_post     (n, C)       resid_mid + mlp_out (post-norm: LN of that)
//   ln_final.hook_normalized       (n, C)       the final norm's output (pre-norm models only)
#ifndef AW_MODEL_HOOKS_H
#define AW_MODEL_HOOKS_H

#include "transformer.h"

#include <stddef.h>
#include <stdint.h>

enum aw_hook_point {
    AW_HOOK_EMBED, AW_HOOK_RESID_PRE, AW_HOOK_Q, AW_HOOK_K, AW_HOOK_V, AW_HOOK_PATTERN, AW_HOOK_Z,
    AW_HOOK_ATTN_OUT, AW_HOOK_RESID_MID, AW_HOOK_MLP_OUT, AW_HOOK_RESID_POST, AW_HOOK_LN_FINAL, AW_HOOK_COUNT
};

// What model_forward calls at a point: layer is -1 for hook_embed and ln_final; x is the
// activation of the point's shape, writable.
struct aw_hooks {
    void (*fn)(struct aw_hooks *h, int point, int layer, float *x);
    int first_layer; // > 0: model_forward starts at this block and reads the blocks before it from
                     // the previous forward of the same ids (the grids order their runs so that
                     // those are the clean run's); 0: the whole forward
    int stop;        // the mirror of first_layer: 1: model_forward returns once block last_layer is done
    int last_layer;  // (-1: right after hook_embed; layers: after the final norm), skipping the later
                     // blocks, the final norm and the classifier (the logits are not computed);
                     // stop 0: the whole forward
};

// What an edit does at its point (hook functions in TransformerLens's words): zero or mean-ablate,
// patch (a whole activation from another run; replace is a patch built from rows), add factor x a
// vector to every selected row (steering), scale by factor.
enum aw_hook_mode { AW_HOOK_ZERO = 0, AW_HOOK_MEAN = 1, AW_HOOK_PATCH = 2, AW_HOOK_ADD = 3, AW_HOOK_SCALE = 4 };

// One intervention: ablate (zero or mean) or patch (replace by `from`) at (point, layer), at the
// positions marked in `positions` (all when NULL) and, for a per-head point, the heads marked in
// `heads` (all when NULL).
typedef struct {
    int point, layer, mode;
    uint8_t *positions; // (n) or NULL; owned
    uint8_t *heads;     // (H or KH) or NULL; owned
    float *from;        // (the point's shape) for AW_HOOK_PATCH, (a row: heads x dHead or dModel) for
                        // AW_HOOK_ADD; owned
    float factor;       // AW_HOOK_ADD's scale, AW_HOOK_SCALE's factor
} aw_hook_edit;

enum { AW_HOOK_MAX_EDITS = 4096 };

// A hooked run of one sequence of n tokens: the edits to make and the activations to keep.
typedef struct aw_hook_run {
    struct aw_hooks base;     // fn: hook_run_point
    aw_model *m;
    size_t n;
    aw_hook_edit *edits;      // (n_edits), applied in order at their point
    size_t n_edits, cap_edits;
    unsigned char keep[AW_HOOK_COUNT][AW_MAX_LAYERS + 1]; // 1: cache (point, layer); index layer + 1
    float *cache[AW_HOOK_COUNT][AW_MAX_LAYERS + 1];       // the kept activations (owned), or NULL
    int stop_after;           // 1: hook_run_forward stops after the last kept point (no logits)
} aw_hook_run;

// AW_OK when the model has hook points (a decoder-only transformer), else AW_ERR_ARG saying why.
int hook_model_check(const aw_model *m);
// Parses a hook name for this model: its point and layer (-1 for hook_embed, ln_final). AW_ERR_ARG
// naming the name and the layers' range, or why the model has no such point.
int hook_parse(const aw_model *m, const char *name, int *point, int *layer);
// The point's name for layer (into buf) and its shape for n positions: the rank, dims, floats.
void hook_name(char *buf, size_t cap, int point, int layer);
int hook_shape(const aw_model *m, int point, size_t n, size_t dims[3], size_t *floats);
// 1 when the point's activation has a heads axis (q, k, v, z): its count through *heads.
int hook_has_heads(const aw_model *m, int point, size_t *heads);

int hook_run_init(aw_hook_run *r, aw_model *m, size_t n);
void hook_run_free(aw_hook_run *r);
// Keeps (point, layer) in the cache; point -1 keeps every point the model has.
int hook_run_keep(aw_hook_run *r, int point, int layer);
// Adds an edit; positions (np indices) and heads (nh indices) are checked against their range
// (np < 0 / nh < 0: all); from (nfrom floats) must have the point's shape. Copies what it keeps.
int hook_run_ablate(aw_hook_run *r, int layer, int head, int mode, const int32_t *positions, int np);
int hook_run_patch(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads,
                   int nh, const float *from, size_t nfrom);
// add: row += factor * vector (nvec = one position's row) at positions and heads; scale: the
// activation times factor there; replace: rows[i] (nrows = count x the row) at positions[i] (all
// positions in order when np < 0), only the heads given for per-head points.
int hook_run_add(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads, int nh,
                 const float *vector, size_t nvec, float factor);
int hook_run_scale(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads,
                   int nh, float factor);
int hook_run_replace(aw_hook_run *r, int point, int layer, const int32_t *positions, int np, const int32_t *heads,
                     int nh, const float *rows, size_t nrows);
// Drops every edit (the cache requests stay).
void hook_run_clear_edits(aw_hook_run *r);
// The forward over ids (n) with the edits and the cache; logits (n, V) may be NULL. With
// r->stop_after set, the forward ends with the block of the last kept point (after the final norm
// when ln_final is kept) and logits must be NULL: the cache holds the values a full run keeps.
int hook_run_forward(aw_hook_run *r, const int32_t *ids, float *logits);

// Each layer's resid_post through the final norm and the classifier: out (layers, n, V).
int hook_logit_lens(aw_model *m, const int32_t *ids, size_t n, float *out);
// Direct logit attribution of the logit of targets[p] at each position p: heads (layers, H, n),
// mlp (layers, n), embed (n), rest (n: attention biases, the final norm's shift, the classifier's
// bias), logit (n: the clean run's logit). Pre-norm only; LayerNorm: each part centred.
int hook_attribution(aw_model *m, const int32_t *ids, size_t n, const int32_t *targets, float *heads, float *mlp,
                     float *embed, float *rest, float *logit);
// The ablation grid: for each mode (modes: bit 0 zero, bit 1 mean), layer and head, the log
// probability (nats) of ids[p + 1] at each position p < n - 1 with that head's z ablated at every
// position: out (modes set, layers, H, n - 1); clean (n - 1) the unablated run's.
int hook_ablation_grid(aw_model *m, const int32_t *ids, size_t n, int modes, float *out, float *clean);
// The patching grid: for each layer l and position p, a run of ids with the activation `point`
// (a whole-row point: resid_pre, attn_out, resid_mid, mlp_out, resid_post) of block l at position p
// replaced by from's (layers, n, C); out (layers, n, n - 1): the log probability (nats) of
// targets[q] at each position q < n - 1; clean (n - 1) the unpatched run's.
int hook_patching_grid(aw_model *m, const int32_t *ids, size_t n, int point, const float *from,
                       const int32_t *targets, float *out, float *clean);

#endif
