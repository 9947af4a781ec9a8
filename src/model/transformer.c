// transformer.c: the model's config check, its parameter size table (one arena walked in the
// checkpoint's order), init, create and destroy. Formulas: docs/attention-forms.md section 5.
#include "transformer.h"

#include "form_layer.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- config ---------------------------------------------------------------------------------

// The bounds of every size field: name (as users write it), lowest, highest.
#define CHECK_RANGE(field, name, lo, hi)                                                                            \
    if (c->field < (lo) || c->field > (hi))                                                                          \
        return aw_fail(AW_ERR_ARG, "%s must be an integer in [%d, %d], got %ld", name, (int)(lo), (int)(hi),           \
                       (long)c->field);

// What the positional row reads of the config (positional.h): the sizes, and rope's base and scaling.
static aw_positional_cfg positional_cfg(const aw_model_config *c) {
    return (aw_positional_cfg){(size_t)c->max_len, (size_t)c->d_model, model_head_dim(c), c->head_dim != 0,
                               (double)c->rope_theta,
                               {c->rope_factor, c->rope_low_freq, c->rope_high_freq, c->rope_original_len}};
}

int model_check_config(const aw_model_config *c) {
    CHECK_RANGE(vocab, "vocab", 2, 1 << 20)
    CHECK_RANGE(d_model, "dModel", 1, 4096)
    CHECK_RANGE(heads, "heads", 1, 4096)
    CHECK_RANGE(layers, "layers", 1, AW_MAX_LAYERS)
    CHECK_RANGE(d_ff, "dFF", 1, 16384)
    CHECK_RANGE(max_len, "maxLen", 2, 4096)
    if (c->arch < 0 || c->arch >= AW_ARCH_COUNT)
        return aw_fail(AW_ERR_ARG, "arch must be \"decoder\", \"encoder-decoder\", \"gru\" or \"gru-attention\"");
    if (aw_arch_is_rnn(c->arch)) { // one GRU layer each; heads, attention, positional, norm, dFF unused
        if (c->layers != 1)
            return aw_fail(AW_ERR_ARG, "layers must be 1 for arch \"%s\" (one GRU layer in the encoder and one in the "
                                       "decoder), got %d", c->arch == AW_ARCH_GRU ? "gru" : "gru-attention", (int)c->layers);
        return AW_OK;
    }
    if (c->head_dim < 0 || c->head_dim > 1024) return aw_fail(AW_ERR_ARG, "headDim must be an integer in [1, 1024], got %d", (int)c->head_dim);
    if (!c->head_dim && c->d_model % c->heads)
        return aw_fail(AW_ERR_ARG, "dModel (%d) must be divisible by heads (%d)", (int)c->d_model, (int)c->heads);
    if (model_attn_cols(c) > 65536)
        return aw_fail(AW_ERR_ARG, "heads x headDim (%d x %d) must be at most 65536", (int)c->heads, (int)model_head_dim(c));
    if (c->head_dim && c->arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "headDim (%d, where dModel / heads is %g) applies to arch \"decoder\" only",
                       (int)c->head_dim, (double)c->d_model / c->heads);
    if (c->layer_forms && c->arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "layerForms applies to arch \"decoder\" only (an encoder-decoder's encoder, decoder "
                                   "and cross-attention take the one attention); leave layerForms out, or use arch "
                                   "\"decoder\"");
    if ((c->layer_forms | 1) != 1) return aw_fail(AW_ERR_ARG, "layerForms: the flag must be 0 or 1");
    int st = AW_OK;
    for (int l = 0; l < (c->layer_forms ? c->layers : 1) && !st; l++) { // each layer's form, checked as one model's
        const aw_form_values *o;
        const aw_form *f = model_layer_form(c, l, &o);
        if (!f) st = aw_fail(AW_ERR_ARG, "attention: unknown form %d", (int)(c->layer_forms ? c->layer_form[l] : c->form));
        // the decoder's self-attention is causal
        else if (!(f->flags & AW_FORM_CAUSAL) && !(c->arch == AW_ARCH_ENCODER_DECODER && f->decoder))
            st = attn_form_refuse_causal(f);
        else {
            aw_form_values opts = *o; // the form checks its own options (model_create keeps them finished)
            st = aw_option_finish(f, &opts, (size_t)c->max_len);
        }
        // headDim (heads wider or narrower than dModel / heads): softmax sizes q, k, v and its output by
        // it; every other form, and softmax's output gate (W_g is dModel x dModel), by dModel
        if (!st && c->head_dim && strcmp(f->name, "softmax") != 0)
            st = aw_fail(AW_ERR_ARG, "headDim (%d, where dModel / heads is %g) applies to attention \"softmax\" only, "
                                     "and %s is \"%s\"", (int)c->head_dim, (double)c->d_model / c->heads,
                         c->layer_forms ? "a layer's form" : "attention", f->name);
        if (!st && c->head_dim && aw_option_int(f, o, "outputGate"))
            st = aw_fail(AW_ERR_ARG, "headDim (%d) and attentionOptions.outputGate cannot go together: the gate's "
                                     "weights are dModel x dModel", (int)c->head_dim);
        // grouped-query attention needs keys in every layer (config.c says so for one form)
        if (!st && c->layer_forms && c->kv_heads && c->kv_heads != c->heads && !(f->flags & AW_FORM_USES_QK))
            st = aw_fail(AW_ERR_ARG, "kvHeads (%d) applies to forms that read queries and keys (grouped-query attention "
                                     "shares K/V heads between query heads); attention \"%s\" reads no keys: leave "
                                     "kvHeads out or give this layer a form that reads keys", (int)c->kv_heads, f->name);
        if (st && c->layer_forms) st = model_layer_error(l, st);
    }
    if (st) return st;
    const aw_positional *pos = aw_positional_at(c->positional);
    if (!pos) {
        char list[128];
        aw_positional_names(list, sizeof list, 0, 1);
        return aw_fail(AW_ERR_ARG, "positional must be %s", list);
    }
    if (c->norm != AW_NORM_PRE && c->norm != AW_NORM_POST) return aw_fail(AW_ERR_ARG, "norm must be \"pre\" or \"post\"");
    if (c->norm_type != AW_NORMTYPE_LAYER && c->norm_type != AW_NORMTYPE_RMS)
        return aw_fail(AW_ERR_ARG, "normType must be \"layernorm\" or \"rmsnorm\"");
    if (c->ffn < 0 || c->ffn >= AW_FFN_COUNT) return aw_fail(AW_ERR_ARG, "ffn must be \"relu\", \"swiglu\" or \"gelu\"");
    if (!(c->norm_eps >= 0.0f && c->norm_eps <= 0.1f)) return aw_fail(AW_ERR_ARG, "normEps must be a number in (0, 0.1], got %g", (double)c->norm_eps);
    if ((c->qkv_bias | 1) != 1) return aw_fail(AW_ERR_ARG, "qkvBias must be true or false");
    if ((c->no_bias | 1) != 1 || (c->tie | 1) != 1) return aw_fail(AW_ERR_ARG, "bias and tieEmbeddings must be true or false");
    if (c->kv_heads < 0 || c->kv_heads > c->heads || (c->kv_heads && c->heads % c->kv_heads))
        return aw_fail(AW_ERR_ARG, "kvHeads must divide heads (%d): %d is the default (a K/V head per query head), 1 "
                                   "is multi-query attention; got %d", (int)c->heads, (int)c->heads, (int)c->kv_heads);
    if (c->rope_theta != 0.0f && !(c->rope_theta > 1.0f && c->rope_theta <= 1e9f))
        return aw_fail(AW_ERR_ARG, "ropeTheta must be a number in (1, 1e9] (10000 by default), got %g", (double)c->rope_theta);
    const aw_positional_cfg pc = positional_cfg(c);
    for (int l = 0; pos->check && l < (c->layer_forms ? c->layers : 1); l++) // the encoding's own bounds (rope, alibi)
        if ((st = pos->check(&pc, model_layer_form(c, l, NULL)))) return c->layer_forms ? model_layer_error(l, st) : st;
    // parameters and AdamW state (4 floats and a decay byte each) must fit in size_t: counted in
    // model_create, where the forms' tensors are known
    return AW_OK;
}

const aw_form *model_layer_form(const aw_model_config *c, int l, const aw_form_values **opts) {
    const int each = c->layer_forms && l >= 0 && l < AW_MAX_LAYERS;
    const int32_t i = each ? c->layer_form[l] : c->form;
    if (opts) *opts = each ? &c->layer_attn[l] : &c->attn;
    return i < 0 ? NULL : aw_form_at((size_t)i);
}

int model_layer_error(int l, int st) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", aw_error_message());
    aw_clear_error();
    return aw_fail(st, "layerForms[%d]: %s", l, msg);
}

// ---- the parameter size table -----------------------------------------------------------------

typedef struct {
    aw_model *m;
    float *base;   // NULL: record names, shapes and offsets into m->tensors
    size_t off;
    int overflow;
    size_t at;     // with base: the index of the next tensor (a quantized one takes no floats; quantize.c)
} walker;

static float *take_tensor(walker *wk, const char *name, size_t rows, size_t cols, int of_form, int trainable,
                          const aw_form_tensor *shape) {
    const size_t n = aw_size_mul(rows, cols ? cols : 1);
    if (!wk->base) {
        if (wk->m->n_tensors >= AW_MAX_TENSORS) {
            wk->overflow = 1;
            return NULL;
        }
        aw_tensor_info *t = &wk->m->tensors[wk->m->n_tensors++];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->offset = wk->off, t->rows = rows, t->cols = cols, t->of_form = of_form, t->trainable = trainable;
        if (shape) { // a form's tensor: the shape it gives
            t->rank = shape->rank, t->transposed = 0, t->no_decay = shape->no_decay, t->side = shape->side;
            memcpy(t->dims, shape->dims, sizeof t->dims);
        } else if (cols == 0) { // a vector
            t->rank = 1, t->dims[0] = rows, t->transposed = 0;
        } else { // (rows, cols); a linear layer's weight (all but the embeddings) is stored (out, in)
            t->transposed = strcmp(name, "wte") != 0 && strcmp(name, "wpe") != 0;
            t->rank = 2, t->dims[0] = t->transposed ? cols : rows, t->dims[1] = t->transposed ? rows : cols;
        }
    }
    if (wk->base && wk->at < wk->m->n_tensors) { // binding: the offsets follow the tensors still in the arena
        aw_tensor_info *t = &wk->m->tensors[wk->at++];
        if (t->quantized) return NULL;
        t->offset = wk->off;
    }
    float *p = wk->base ? wk->base + wk->off : NULL;
    wk->off = aw_size_add(wk->off, n);
    wk->overflow |= wk->off == AW_SIZE_INVALID;
    return p;
}

static float *take(walker *wk, const char *name, size_t rows, size_t cols) {
    return take_tensor(wk, name, rows, cols, 0, 1, NULL);
}

static float *take_named(walker *wk, const char *prefix, const char *suffix, size_t rows, size_t cols) {
    char name[48];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    return take(wk, name, rows, cols);
}

// The sublayer's own tensors, then its form's (recording where they start in *form_offset).
// A bias (NULL for a model without them).
static float *take_bias(walker *wk, const char *prefix, const char *suffix, size_t n) {
    return wk->m->cfg.no_bias ? NULL : take_named(wk, prefix, suffix, n, 0);
}
// q, k and v's biases: with qkvBias a model without biases keeps these three (Qwen2)
static float *take_qkv_bias(walker *wk, const char *prefix, const char *suffix, size_t n) {
    return wk->m->cfg.no_bias && !wk->m->cfg.qkv_bias ? NULL : take_named(wk, prefix, suffix, n, 0);
}

// A norm's weight and (LayerNorm only) its shift.
static void take_norm(walker *wk, float **w, float **b, const char *prefix, const char *suffix, size_t C) {
    char name[48];
    snprintf(name, sizeof name, "%s%s%s.w", prefix, prefix[0] ? "." : "", suffix);
    *w = take(wk, name, C, 0);
    snprintf(name, sizeof name, "%s%s%s.b", prefix, prefix[0] ? "." : "", suffix);
    *b = wk->m->cfg.norm_type == AW_NORMTYPE_RMS ? NULL : take(wk, name, C, 0);
}

size_t model_kv_cols(const aw_model *m) { return model_head_dim(&m->cfg) * (size_t)m->cfg.kv_heads; }

static void walk_attn(walker *wk, aw_attn_weights *a, const char *prefix, size_t C, const aw_attn_form *f,
                      size_t *form_offset) {
    const size_t KC = model_kv_cols(wk->m), A = model_attn_cols(&wk->m->cfg); // A: the heads' width (C unless headDim)
    take_norm(wk, &a->ln_w, &a->ln_b, prefix, "ln", C);
    a->wq = a->bq = a->wk = a->bk = NULL;
    if (f->uses_qk) {
        a->wq = take_named(wk, prefix, "wq", C, A);
        a->bq = take_qkv_bias(wk, prefix, "bq", A);
        a->wk = take_named(wk, prefix, "wk", C, KC);
        a->bk = take_qkv_bias(wk, prefix, "bk", KC);
    }
    const int own_v = (f->form->flags & AW_FORM_OWN_V) != 0; // the form makes its values itself (mla)
    a->wv = own_v ? NULL : take_named(wk, prefix, "wv", C, KC);
    a->bv = own_v ? NULL : take_qkv_bias(wk, prefix, "bv", KC);
    a->wo = take_named(wk, prefix, "wo", A, C);
    a->bo = take_bias(wk, prefix, "bo", C);
    *form_offset = wk->off;
    if (!f->form->tensors) return;
    aw_form_tensor ft[AW_SYNTH_MAX_TENSORS];
    memset(ft, 0, sizeof ft); // a form fills the fields it knows; the rest are 0 (no_decay: decayed)
    const size_t nt = f->form->tensors(f, ft, AW_SYNTH_MAX_TENSORS);
    if (nt > AW_SYNTH_MAX_TENSORS) {
        wk->overflow = 1;
        return;
    }
    for (size_t i = 0; i < nt; i++) {
        char name[128];
        snprintf(name, sizeof name, "%.40s.%.24s.%.24s", prefix, f->form->param_group, ft[i].name);
        take_tensor(wk, name, ft[i].size, 0, 1, ft[i].trainable, &ft[i]);
    }
}

static void walk_ffn(walker *wk, aw_ffn_weights *f, const char *prefix, size_t C, size_t F) {
    take_norm(wk, &f->ln_w, &f->ln_b, prefix, "ln", C);
    f->w1 = take_named(wk, prefix, "w1", C, F);
    f->b1 = take_bias(wk, prefix, "b1", F);
    f->w2 = take_named(wk, prefix, "w2", F, C);
    f->b2 = take_bias(wk, prefix, "b2", C);
    f->w3 = f->b3 = NULL;
    if (wk->m->cfg.ffn == AW_FFN_SWIGLU) {
        f->w3 = take_named(wk, prefix, "w3", C, F);
        f->b3 = take_bias(wk, prefix, "b3", F);
    }
}

// A GRU's tensors as nn.GRU names them (weight_ih_l0 ...), weights stored (3C, in).
static void walk_gru(walker *wk, aw_gru_weights *g, const char *prefix, size_t in, size_t C) {
    g->w_ih = take_named(wk, prefix, "weight_ih", in, 3 * C);
    g->w_hh = take_named(wk, prefix, "weight_hh", C, 3 * C);
    g->b_ih = take_named(wk, prefix, "bias_ih", 3 * C, 0);
    g->b_hh = take_named(wk, prefix, "bias_hh", 3 * C, 0);
}

// Walks every parameter tensor in a fixed order (the checkpoint order), binding `w` into base.
static size_t walk_params(aw_model *m, float *base, aw_weights *w) {
    const aw_model_config *c = &m->cfg;
    const size_t C = (size_t)c->d_model, V = (size_t)c->vocab, L = (size_t)c->max_len, F = (size_t)c->d_ff;
    const int pre = c->norm == AW_NORM_PRE, encdec = c->arch == AW_ARCH_ENCODER_DECODER;
    walker wk = {m, base, 0, 0, 0};
    char prefix[32];
    memset(w, 0, sizeof *w);
    w->wte = take(&wk, "wte", V, C);
    if (aw_arch_is_rnn(c->arch)) { // rnn.h: wte, the two GRUs, the attention, the output projection
        walk_gru(&wk, &w->enc_gru, "enc.gru", C, C);
        walk_gru(&wk, &w->dec_gru, "dec.gru", 2 * C, C);
        if (c->arch == AW_ARCH_GRU_ATTENTION) {
            w->attn.W_a = take(&wk, "dec.attn.W_a", C, C);
            w->attn.U_a = take(&wk, "dec.attn.U_a", C, C);
            w->attn.b_a = take(&wk, "dec.attn.b_a", C, 0);
            w->attn.v = take(&wk, "dec.attn.v", C, 0);
        }
        w->w_out = take(&wk, "out.w", C, V);
        w->b_out = take(&wk, "out.b", V, 0);
        return wk.overflow ? AW_SIZE_INVALID : wk.off;
    }
    if (AW_POSITIONALS[c->positional].flags & AW_POSITIONAL_PARAMS) w->wpe = take(&wk, "wpe", L, C);
    for (int l = 0; encdec && l < c->layers; l++) {
        snprintf(prefix, sizeof prefix, "enc.%d.self", l);
        walk_attn(&wk, &w->enc[l].self, prefix, C, &m->enc_form[l], &m->form_offset[0][l]);
        snprintf(prefix, sizeof prefix, "enc.%d.ffn", l);
        walk_ffn(&wk, &w->enc[l].ffn, prefix, C, F);
    }
    if (encdec && pre) take_norm(&wk, &w->enc_lnf_w, &w->enc_lnf_b, "enc", "lnf", C);
    for (int l = 0; l < c->layers; l++) {
        snprintf(prefix, sizeof prefix, "dec.%d.self", l);
        walk_attn(&wk, &w->dec[l].self, prefix, C, &m->self_form[l], &m->form_offset[1][l]);
        if (encdec) {
            snprintf(prefix, sizeof prefix, "dec.%d.cross", l);
            walk_attn(&wk, &w->dec[l].cross, prefix, C, &m->cross_form[l], &m->form_offset[2][l]);
        }
        snprintf(prefix, sizeof prefix, "dec.%d.ffn", l);
        walk_ffn(&wk, &w->dec[l].ffn, prefix, C, F);
    }
    if (pre) take_norm(&wk, &w->lnf_w, &w->lnf_b, "", "lnf", C);
    w->w_out = c->tie ? NULL : take(&wk, "out.w", C, V); // tied: logits = x wte^T
    w->b_out = take_bias(&wk, "out", "b", V);
    return wk.overflow ? AW_SIZE_INVALID : wk.off;
}

size_t model_tensor_size(const aw_tensor_info *t) { return t->rows * (t->cols ? t->cols : 1); }

const aw_tensor_info *model_find_tensor(const aw_model *m, const char *name) {
    for (size_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

float *model_tensor_data(aw_model *m, const aw_tensor_info *t) { return m->params + t->offset; }

float *model_tensor_grad(aw_model *m, const aw_tensor_info *t) { return m->grads + t->offset; }

const char *model_tensor_at(const aw_model *m, size_t i) {
    for (size_t t = 0; t < m->n_tensors; t++)
        if (i >= m->tensors[t].offset && i < m->tensors[t].offset + model_tensor_size(&m->tensors[t]))
            return m->tensors[t].name;
    return "?";
}

int model_check_params(const aw_model *m) {
    const size_t bad = aw_find_nonfinite(m->params, m->n_params);
    if (bad == m->n_params) return AW_OK;
    return aw_fail(AW_ERR_NONFINITE, "the model's parameters hold NaN or Infinity (in %s): they have diverged "
                                     "(lowering lr cannot repair them); create the model again or load a checkpoint",
                   model_tensor_at(m, bad));
}

// ---- init -------------------------------------------------------------------------------------

static void fill(float *x, size_t n, float value) {
    for (size_t i = 0; i < n; i++) x[i] = value;
}

// U(-a, a) with a = std sqrt(3), so the standard deviation is std; no libm, so every build agrees.
static void init_uniform(float *x, size_t n, float std, aw_rng *rng) {
    const float a = std * 1.7320508f;
    for (size_t i = 0; i < n; i++) x[i] = (2.0f * aw_rng_uniform(rng) - 1.0f) * a;
}

static void init_params(aw_model *m) {
    const aw_model_config *c = &m->cfg;
    const float C = (float)c->d_model, F = (float)c->d_ff;
    const float resid = 1.0f / sqrtf(2.0f * (float)c->layers * (c->arch == AW_ARCH_ENCODER_DECODER ? 2 : 1));
    for (size_t i = 0; i < m->n_tensors; i++) {
        const aw_tensor_info *t = &m->tensors[i];
        float *x = m->params + t->offset;
        const size_t n = model_tensor_size(t);
        if (t->of_form) { // the form initialised it (bind copied the values); decay what it trains
            if (m->decay) memset(m->decay + t->offset, t->trainable && !t->no_decay, n);
            continue;
        }
        const char *leaf = strrchr(t->name, '.');
        leaf = leaf ? leaf + 1 : t->name;
        aw_rng rng;
        aw_rng_seed(&rng, ((uint64_t)c->seed << 16) ^ (uint64_t)(i + 1));
        if (strncmp(t->name, "enc.gru.", 8) == 0 || strncmp(t->name, "dec.gru.", 8) == 0 ||
            strncmp(t->name, "dec.attn.", 9) == 0) // PyTorch's nn.GRU and nn.Linear: U(-1/sqrt(C), 1/sqrt(C))
            init_uniform(x, n, 1.0f / sqrtf(3.0f * C), &rng);
        else if (strstr(t->name, "ln.w") || strcmp(t->name, "lnf.w") == 0 || strcmp(t->name, "enc.lnf.w") == 0)
            fill(x, n, 1.0f);
        else if (t->cols == 0) fill(x, n, 0.0f); // biases, LayerNorm shifts
        else if (strcmp(t->name, "wte") == 0) init_uniform(x, n, 0.7f, &rng); // ~ the sinusoid's scale
        else if (strcmp(t->name, "wpe") == 0) init_uniform(x, n, 0.2f, &rng);
        else if (strcmp(leaf, "wo") == 0) init_uniform(x, n, resid / sqrtf(C), &rng);
        else if (strcmp(leaf, "w2") == 0) init_uniform(x, n, resid / sqrtf(F), &rng);
        else init_uniform(x, n, 1.0f / sqrtf(C), &rng);
        // weight decay on matrices other than the embeddings
        if (m->decay) memset(m->decay + t->offset, t->cols != 0 && strcmp(t->name, "wte") && strcmp(t->name, "wpe"), n);
    }
}

// ---- create / destroy -------------------------------------------------------------------------

void model_destroy(aw_model *m) {
    if (!m) return;
    for (int l = 0; l < AW_MAX_LAYERS; l++) {
        attn_form_free(&m->enc_form[l]);
        attn_form_free(&m->self_form[l]);
        attn_form_free(&m->cross_form[l]);
    }
    free(m->params);
    quant_free(m->quant);
    aw_positional_free(&m->pos_tables);
    free(m->score_slopes);
    free(m->act_mem);
    free(m->dact_mem);
    free(m->tokens);
    free(m->scratch);
    free(m);
}

// Sets up the three kinds of attention sublayer from the registry: the encoder's self-attention
// (non-causal), the decoder's (causal) and its cross-attention (the form's `cross` form). A form
// without a causal form serves an encoder-decoder's encoder; its `decoder` form then serves the
// decoder's self-attention.
static int init_forms(aw_model *m) {
    const aw_model_config *cfg = &m->cfg;
    if (aw_arch_is_rnn(cfg->arch)) return AW_OK; // no attention forms
    const aw_form *self = aw_form_at((size_t)cfg->form), *cross = aw_form_find(self->cross), *dec = self;
    const int encdec = cfg->arch == AW_ARCH_ENCODER_DECODER;
    if (encdec && !(self->flags & AW_FORM_CAUSAL) && self->decoder) dec = aw_form_find(self->decoder);
    if (m->pos->score_bias) { // a bias by distance on the self-attentions' scores (ALiBi's slopes)
        m->score_slopes = aw_alloc_floats((size_t)cfg->heads);
        if (!m->score_slopes) return AW_ERR_NOMEM;
        m->pos->score_bias(m->score_slopes, (size_t)cfg->heads);
    }
    const aw_form_setup su0 = {.C = model_attn_cols(cfg), .H = (size_t)cfg->heads, .L = (size_t)cfg->max_len,
                               .opts = &cfg->attn, .norm_eps = cfg->norm_eps};
    aw_form_setup su = su0;
    int st = AW_OK;
    for (int l = 0; l < cfg->layers && !st; l++) {
        const uint32_t s = cfg->seed * 131u + (uint32_t)l * 7u;
        // the options are the chosen form's: a decoder or cross form that differs takes its defaults;
        // the score bias goes to the self-attentions only
        su.score_slopes = m->score_slopes;
        su.kv_heads = 0; // the encoder's self-attention and the cross-attention keep every head's K/V
        if (encdec) su.causal = 0, su.seed = s + 1, su.opts = &cfg->attn, st = attn_form_init(&m->enc_form[l], self, &su);
        su.kv_heads = (size_t)cfg->kv_heads; // the decoder's self-attention: its step may keep the K/V heads only
        if (!st && cfg->layer_forms) // a decoder whose layers name their own forms (model_check_config refuses others)
            su.causal = 1, su.seed = s + 2, st = attn_form_init(&m->self_form[l], model_layer_form(cfg, l, &su.opts), &su);
        else if (!st) su.causal = 1, su.seed = s + 2, su.opts = dec == self ? &cfg->attn : NULL, st = attn_form_init(&m->self_form[l], dec, &su);
        su.score_slopes = NULL, su.kv_heads = 0;
        if (!st && encdec) su.causal = 0, su.seed = s + 3, su.opts = cross == self ? &cfg->attn : NULL, st = attn_form_init(&m->cross_form[l], cross, &su);
    }
    return st;
}

// 1 when a sublayer's form has parameters of its own to bind into the arena (softmax has them only
// with its switches on: without, an inference-only model keeps no gradients for it).
static int form_owns(const aw_attn_form *f) {
    if (!f->form || !f->form->bind || (f->form->flags & AW_FORM_NO_GRADS_OK)) return 0;
    aw_form_tensor t[AW_SYNTH_MAX_TENSORS];
    return f->params || !f->form->tensors || f->form->tensors(f, t, AW_SYNTH_MAX_TENSORS) > 0;
}

int model_create(aw_model **out, const aw_model_config *cfg) { return model_create_ex(out, cfg, 0); }

int model_create_ex(aw_model **out, const aw_model_config *cfg, int inference) {
    const int st = model_create_layout(out, cfg, inference);
    return st ? st : model_create_arena(out, inference);
}

int model_create_layout(aw_model **out, const aw_model_config *cfg, int inference) {
    *out = NULL;
    int st = model_check_config(cfg);
    if (st) return st;
    aw_model *m = calloc(1, sizeof *m);
    if (!m) return aw_fail(AW_ERR_NOMEM, "out of memory for the model");
    m->cfg = *cfg;
    m->pos = aw_positional_at(cfg->positional); // the GRU archs read no positions, nor check them
    if (!m->pos) m->pos = &AW_POSITIONALS[AW_POS_NONE];
    if (!m->cfg.kv_heads) m->cfg.kv_heads = cfg->heads;           // 0: a K/V head per query head
    if (m->cfg.rope_theta == 0.0f) m->cfg.rope_theta = 10000.0f; // 0: the usual base
    // the form's options with their defaults and derived values filled in (as config_json and
    // checkpoints then show them)
    if (!aw_arch_is_rnn(cfg->arch)) aw_option_finish(aw_form_at((size_t)cfg->form), &m->cfg.attn, (size_t)cfg->max_len);
    for (int l = 0; cfg->layer_forms && l < cfg->layers; l++)
        aw_option_finish(model_layer_form(cfg, l, NULL), &m->cfg.layer_attn[l], (size_t)cfg->max_len);
    if ((st = init_forms(m))) {
        model_destroy(m);
        return st == AW_ERR_NOMEM ? aw_fail(st, "out of memory for the attention forms' parameters") : st;
    }
    m->n_params = walk_params(m, NULL, &m->w);
    // inference only: the parameters alone (a form with parameters of its own binds gradients too,
    // so such a model keeps them all)
    int forms_own = 0;
    for (int l = 0; l < cfg->layers && !aw_arch_is_rnn(cfg->arch); l++)
        forms_own |= form_owns(&m->self_form[l]) || form_owns(&m->enc_form[l]) || form_owns(&m->cross_form[l]);
    m->inference = inference && !forms_own;
    *out = m;
    return AW_OK;
}

int model_create_arena(aw_model **out, int inference) {
    aw_model *m = *out;
    const aw_model_config *cfg = &m->cfg;
    *out = NULL;
    int st;
    // the tensors quantize.c reserved (model_create_quantized) take no floats here
    size_t P = m->n_params;
    if (m->quant) {
        P = 0;
        for (size_t i = 0; i < m->n_tensors; i++)
            if (!m->tensors[i].quantized) P = aw_size_add(P, model_tensor_size(&m->tensors[i]));
    }
    // params, grads, AdamW m and v: one allocation carved in four, then the decay mask (1 byte each)
    // (an inference-only model keeps no decay mask: nothing trains it)
    const size_t bytes = m->inference ? aw_size_mul(P, sizeof(float)) : aw_size_add(aw_size_mul3(4, P, sizeof(float)), P);
    if (P == AW_SIZE_INVALID || bytes == AW_SIZE_INVALID) {
        model_destroy(m);
        return aw_fail(AW_ERR_NOMEM, "the model is too large: its parameters and optimizer state do not fit in "
                                     "this build's %u-bit address space (vocab * dModel, dModel * dFF and layers "
                                     "set its size)", (unsigned)(sizeof(size_t) * 8));
    }
    // uninitialised: every float is the caller's to write (zeroing half a gigabyte costs a pass over it)
    m->params = inference == AW_CREATE_UNINITIALISED && m->inference ? aw_alloc(bytes, 1) : aw_alloc_zero(bytes, 1);
    if (!m->params) {
        model_destroy(m);
        return aw_fail(AW_ERR_NOMEM, "out of memory: the model needs %.1f MiB for its parameters and optimizer "
                                     "state", (double)bytes / 1048576.0);
    }
    if (m->inference) {
        m->grads = m->adam_m = m->adam_v = NULL;
        m->decay = NULL;
        m->n_params = walk_params(m, m->params, &m->w);
        quant_bind(m);
    } else {
        m->grads = m->params + P, m->adam_m = m->grads + P, m->adam_v = m->adam_m + P;
        m->decay = (uint8_t *)(m->adam_v + P);
        walk_params(m, m->params, &m->w);
        walk_params(m, m->grads, &m->g);
    }
    aw_attn_form *kinds[3] = {m->enc_form, m->self_form, m->cross_form};
    for (int g = 0; g < 3; g++) // the forms' parameters move into the arena
        for (int l = 0; l < cfg->layers; l++)
            if (kinds[g][l].form && kinds[g][l].form->bind &&
                (!m->inference || form_owns(&kinds[g][l]) || (kinds[g][l].form->flags & AW_FORM_NO_GRADS_OK)))
                kinds[g][l].form->bind(&kinds[g][l], m->params + m->form_offset[g][l],
                                       m->grads ? m->grads + m->form_offset[g][l] : NULL);
    const aw_positional_cfg pc = positional_cfg(cfg);
    if (m->pos->tables && (st = m->pos->tables(&m->pos_tables, &pc))) { // the encoding's tables: the sinusoid, rotary angles
        model_destroy(m);
        return st;
    }
    m->pe = m->pos->embed ? m->pos->embed(&m->pos_tables, m->w.wpe) : NULL;
    if (inference != AW_CREATE_UNINITIALISED) init_params(m); // else the caller writes every parameter
    aw_rng_seed(&m->data_rng, ((uint64_t)cfg->seed << 32) ^ 0xDA7Au);
    *out = m;
    return AW_OK;
}

// Binds the arena `params` whose floats are the tensors not marked quantized, packed in the walk's
// order (quantize.c moved them there): m->w, the forms' parameters and a learned position table
// point into it. Inference models only (no gradients or AdamW state share the allocation).
void model_bind_packed(aw_model *m, float *params) {
    m->params = params;
    m->n_params = walk_params(m, params, &m->w);
    for (int l = 0; l < m->cfg.layers; l++) { // the forms that bound their parameters into the arena: their
        aw_attn_form *f = &m->self_form[l];    // floats moved with the rest, so bind finds them in place
        if (f->form && f->form->bind && (form_owns(f) || (f->form->flags & AW_FORM_NO_GRADS_OK))) {
            f->params = m->params + m->form_offset[1][l];
            f->form->bind(f, f->params, NULL);
        }
    }
    m->pe = m->pos->embed ? m->pos->embed(&m->pos_tables, m->w.wpe) : NULL;
}

int model_refuse_inference(const aw_model *m, const char *what) {
    if (m->quant) return model_refuse_quantized(m, what);
    return aw_fail(AW_ERR_STATE, "%s needs gradients, and this model was loaded for inference only (it keeps its "
                                 "parameters and no gradients or optimizer state): load it with { training: true }",
                   what);
}

// ---- an option changed on a built model --------------------------------------------------------

int model_set_attention_option(aw_model *m, const char *name, const char *text) {
    aw_model_config *c = &m->cfg;
    m->revision++; // what the forms compute changes: open generation sessions may not continue
    if (aw_arch_is_rnn(c->arch)) return aw_fail(AW_ERR_ARG, "attentionOptions.%s: this model has no attention forms", name);
    // every layer's new values first (checked as users' options are), then applied all at once
    aw_form_values next[AW_MAX_LAYERS];
    int takes[AW_MAX_LAYERS] = {0}, any = 0;
    for (int l = 0; l < c->layers; l++) {
        const aw_form_values *v;
        const aw_form *form = model_layer_form(c, l, &v);
        const int i = form ? aw_option_find(form, name) : -1;
        if (i < 0) continue;
        next[l] = *v;
        int st = aw_option_set(form, &next[l], (size_t)i, text);
        if (!st) st = aw_option_finish(form, &next[l], (size_t)c->max_len);
        if (st) return c->layer_forms ? model_layer_error(l, st) : st;
        // retune with the current values changes nothing, and says whether the form can take this one
        if (!form->retune || !form->retune(&m->self_form[l], v, name))
            return aw_fail(AW_ERR_ARG, "attentionOptions.%s of attention \"%s\" is fixed when the model is created", name,
                           form->name);
        takes[l] = 1, any = 1;
    }
    if (!any) return aw_option_refuse(model_layer_form(c, 0, NULL), name);
    for (int l = 0; l < c->layers; l++)
        if (takes[l]) m->self_form[l].form->retune(&m->self_form[l], &next[l], name);
    for (int l = 0; l < c->layers; l++)
        if (takes[l]) *(c->layer_forms ? &c->layer_attn[l] : &c->attn) = next[l];
    if (c->layer_forms) c->attn = c->layer_attn[0]; // attn holds layer 0's with layerForms
    return AW_OK;
}
