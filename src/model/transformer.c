// transformer.c: the model: size tables, init, forward, backward, AdamW update, batches.
// Formulas: docs/attention-forms.md section 5. The per-op forward/backward pairs are in layers.h;
// the attention forms plug in through attention_forms.c.
#include "transformer.h"

#include "form_layer.h"
#include "hooks.h"

#include "../kernels/parallel.h"

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
    for (int l = 0; pos->check && l < (c->layer_forms ? c->layers : 1); l++) // the encoding's own bounds (rope, alibi)
        if ((st = pos->check(c, model_layer_form(c, l, NULL)))) return c->layer_forms ? model_layer_error(l, st) : st;
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
    free(m->pe_sin);
    free(m->rope_cos);
    free(m->rope_sin);
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
    if (m->pos->tables && (st = m->pos->tables(m))) { // the encoding's tables: the sinusoid, rotary angles
        model_destroy(m);
        return st;
    }
    m->pe = m->pos->embed ? m->pos->embed(m) : NULL;
    if (inference != AW_CREATE_UNINITIALISED) init_params(m); // else the caller writes every parameter
    aw_rng_seed(&m->data_rng, ((uint64_t)cfg->seed << 32) ^ 0xDA7Au);
    *out = m;
    return AW_OK;
}

// A new arena of the tensors not marked quantized, in the walk's order: their floats copied, m->w,
// the forms' parameters and a learned position table bound into it; the old arena freed. Inference
// models only (no gradients or AdamW state share the allocation).
int model_compact_params(aw_model *m) {
    size_t kept = 0, old_off[AW_MAX_TENSORS];
    for (size_t i = 0; i < m->n_tensors; i++) {
        old_off[i] = m->tensors[i].offset;
        if (!m->tensors[i].quantized) kept = aw_size_add(kept, model_tensor_size(&m->tensors[i]));
    }
    float *params = aw_alloc_floats(kept ? kept : 1), *old = m->params;
    if (!params) return aw_fail(AW_ERR_NOMEM, "out of memory for the parameters left in float32 (%zu floats)", kept);
    m->n_params = walk_params(m, params, &m->w);
    for (size_t i = 0; i < m->n_tensors; i++)
        if (!m->tensors[i].quantized)
            memcpy(params + m->tensors[i].offset, old + old_off[i], model_tensor_size(&m->tensors[i]) * sizeof(float));
    m->params = params;
    for (int l = 0; l < m->cfg.layers; l++) { // the forms that bound their parameters into the old arena
        aw_attn_form *f = &m->self_form[l];
        if (f->form && f->form->bind && (form_owns(f) || (f->form->flags & AW_FORM_NO_GRADS_OK)))
            f->form->bind(f, m->params + m->form_offset[1][l], NULL);
    }
    m->pe = m->pos->embed ? m->pos->embed(m) : NULL;
    free(old);
    return AW_OK;
}

// ---- activations ------------------------------------------------------------------------------

typedef struct {
    float *base; // NULL: only count
    aw_plan plan;
} carver;

// a * b floats (checked: an overflow makes the whole plan invalid)
static float *carve(carver *cv, size_t a, size_t b) {
    const size_t at = aw_plan_take(&cv->plan, a, b);
    return cv->base ? cv->base + at : NULL;
}

// keep: the weights for display (B, H, T, Tk); else none. saved: the form's own, linear in T, Tk.
static void carve_attn(carver *cv, aw_attn_acts *a, const aw_attn_form *f, int keep, size_t B, size_t T, size_t Tk,
                       size_t C, size_t A, size_t H, size_t KC) {
    const size_t N = aw_size_mul(B, T), Nk = aw_size_mul(B, Tk);
    a->ln = carve(cv, N, C), a->ln_mean = carve(cv, N, 1), a->ln_rstd = carve(cv, N, 1);
    a->q = carve(cv, N, A), a->k = carve(cv, Nk, A), a->v = carve(cv, Nk, A);
    a->att = keep ? carve(cv, aw_size_mul(B, H), aw_size_mul(T, Tk)) : NULL;
    a->kv = KC < A ? carve(cv, Nk, aw_size_mul(2, KC)) : NULL;
    a->saved = f->form->saved_floats ? carve(cv, B, f->form->saved_floats(f, T, Tk)) : NULL;
    a->o = carve(cv, N, A), a->res = carve(cv, N, C);
}

static void carve_ffn(carver *cv, aw_ffn_acts *f, size_t N, size_t C, size_t F, int swiglu) {
    f->ln = carve(cv, N, C), f->ln_mean = carve(cv, N, 1), f->ln_rstd = carve(cv, N, 1);
    f->h = carve(cv, N, F), f->r = carve(cv, N, F), f->res = carve(cv, N, C);
    f->u = swiglu ? carve(cv, N, F) : NULL;
}

// Carves the activations of (B, T, S) from base (NULL: only counts); returns the floats needed,
// AW_SIZE_INVALID when that does not fit in size_t.
static size_t carve_acts(const aw_model *m, float *base, aw_acts *a, size_t B, size_t T, size_t S) {
    const aw_model_config *c = &m->cfg;
    const size_t C = (size_t)c->d_model, V = (size_t)c->vocab, F = (size_t)c->d_ff, H = (size_t)c->heads;
    const size_t N = aw_size_mul(B, T), Ne = aw_size_mul(B, S), KC = model_kv_cols(m);
    const int encdec = c->arch == AW_ARCH_ENCODER_DECODER, swiglu = c->ffn == AW_FFN_SWIGLU;
    carver cv = {base, {0}};
    memset(a, 0, sizeof *a);
    a->x0 = carve(&cv, N, C);
    if (aw_arch_is_rnn(c->arch)) { // rnn.h's buffers; x0 holds the decoder states s_1..s_T
        aw_rnn_acts *r = &a->rnn;
        const size_t C3 = aw_size_mul(3, C), S1 = aw_size_mul(aw_size_add(S, 1), B);
        r->enc_x = carve(&cv, Ne, C);
        r->enc_gi = carve(&cv, Ne, C3), r->enc_gh = carve(&cv, Ne, C3), r->enc_gate = carve(&cv, Ne, C3);
        r->enc_h = carve(&cv, S1, C);
        r->dec_x = carve(&cv, N, aw_size_mul(2, C));
        r->dec_gi = carve(&cv, N, C3), r->dec_gh = carve(&cv, N, C3), r->dec_gate = carve(&cv, N, C3);
        r->dec_s = carve(&cv, aw_size_mul(aw_size_add(T, 1), B), C);
        if (c->arch == AW_ARCH_GRU_ATTENTION) {
            r->uh = carve(&cv, Ne, C), r->ws = carve(&cv, N, C);
            r->tanh = carve(&cv, aw_size_mul(N, S), C), r->att = carve(&cv, N, S);
        }
        a->logits = carve(&cv, N, V), a->probs = carve(&cv, N, V), a->losses = carve(&cv, N, 1);
        return aw_plan_ok(&cv.plan, sizeof(float)) ? cv.plan.total : AW_SIZE_INVALID;
    }
    if (encdec) {
        a->e0 = carve(&cv, Ne, C);
        for (int l = 0; l < c->layers; l++) {
            carve_attn(&cv, &a->enc_attn[l], &m->enc_form[l], m->keep_attention, B, S, S, C, model_attn_cols(c), H, KC);
            carve_ffn(&cv, &a->enc_ffn[l], Ne, C, F, swiglu);
        }
        a->enc_lnf = carve(&cv, Ne, C), a->enc_lnf_mean = carve(&cv, Ne, 1), a->enc_lnf_rstd = carve(&cv, Ne, 1);
    }
    for (int l = 0; l < c->layers; l++) {
        carve_attn(&cv, &a->dec_self[l], &m->self_form[l], m->keep_attention, B, T, T, C, model_attn_cols(c), H, KC);
        if (encdec) carve_attn(&cv, &a->dec_cross[l], &m->cross_form[l], m->keep_attention, B, T, S, C, model_attn_cols(c), H, KC);
        carve_ffn(&cv, &a->dec_ffn[l], N, C, F, swiglu);
    }
    a->lnf = carve(&cv, N, C), a->lnf_mean = carve(&cv, N, 1), a->lnf_rstd = carve(&cv, N, 1);
    a->logits = carve(&cv, N, V), a->probs = carve(&cv, N, V), a->losses = carve(&cv, N, 1);
    return aw_plan_ok(&cv.plan, sizeof(float)) ? cv.plan.total : AW_SIZE_INVALID;
}

// The attention backward's work for one sequence: the most any sublayer's form asks for at the
// shapes it runs with (encoder S x S, decoder T x T, cross T x S).
static size_t backward_work_floats(const aw_model *m, size_t T, size_t S) {
    size_t most = 0;
    for (int l = 0; l < m->cfg.layers; l++) {
        const aw_attn_form *f[3] = {&m->enc_form[l], &m->self_form[l], &m->cross_form[l]};
        const size_t rows[3] = {S, T, T}, cols[3] = {S, T, S};
        for (int g = 0; g < 3; g++) {
            if (!f[g]->form) continue;
            const size_t w = f[g]->form->work_floats(f[g], rows[g], cols[g]);
            most = w > most ? w : most;
        }
    }
    return most;
}

// Grows *buf to hold n elements of elem bytes (never shrinks); 0 or AW_ERR_NOMEM.
static int grow(void **buf, size_t *cap, size_t n, size_t elem) {
    if (n <= *cap && *buf) return AW_OK;
    void *p = aw_alloc(n, elem);
    if (!p) return AW_ERR_NOMEM;
    free(*buf);
    *buf = p, *cap = n;
    return AW_OK;
}

int model_reserve(aw_model *m, size_t B, size_t T, size_t S) {
    const size_t L = (size_t)m->cfg.max_len;
    const int encdec = aw_arch_has_source(m->cfg.arch);
    if (B == 0 || B > 65536) return aw_fail(AW_ERR_ARG, "batch size must be in [1, 65536], got %zu", B);
    if (T == 0 || T > L) {
        const aw_form *f = aw_form_at((size_t)m->cfg.form);
        for (int l = 0; m->cfg.layer_forms && l < m->cfg.layers; l++) // the layer whose tables fix the length
            if (m->self_form[l].form->flags & AW_FORM_FIXED_LENGTH) f = m->self_form[l].form;
        const int fixed = (f->flags & AW_FORM_FIXED_LENGTH) != 0; // tables of maxLen
        return aw_fail(AW_ERR_ARG, "the sequence has %zu positions; this model takes 1 to maxLen = %zu%s%s%s", T, L,
                       fixed ? " (attention \"" : "", fixed ? f->name : "", fixed ? "\" fixes its length when created)" : "");
    }
    if (S > L) return aw_fail(AW_ERR_ARG, "the source has %zu positions; this model takes at most maxLen = %zu", S, L);
    if (encdec != (S > 0))
        return aw_fail(AW_ERR_ARG, encdec ? "a model with an encoder (arch \"%s\") needs a source sequence"
                                          : "a decoder-only model takes no source sequence",
                       m->cfg.arch == AW_ARCH_ENCODER_DECODER ? "encoder-decoder" : m->cfg.arch == AW_ARCH_GRU ? "gru" : "gru-attention");
    aw_acts tmp;
    const size_t floats = carve_acts(m, NULL, &tmp, B, T, S);
    const size_t toks = aw_size_add(aw_size_mul3(2, B, T), aw_size_add(aw_size_mul(B, S), 1));
    // the threaded build runs the batch's sequences at once (attn_sublayer_*): a scratch for each
    const size_t work = aw_size_mul(backward_work_floats(m, T, S), aw_threads_built() ? B : 1);
    size_t act_bytes;
    if (floats == AW_SIZE_INVALID || toks == AW_SIZE_INVALID || work == AW_SIZE_INVALID ||
        aw_mul_overflows(&act_bytes, floats, 2 * sizeof(float)))
        return aw_fail(AW_ERR_NOMEM, "a batch of %zu x %zu positions does not fit in this build's %u-bit address "
                                     "space; use a smaller batch", B, T + S, (unsigned)(sizeof(size_t) * 8));
    m->B = 0; // until every buffer is in place
    if (floats > m->act_cap || !m->act_mem) {
        free(m->act_mem), free(m->dact_mem);
        m->act_mem = aw_alloc_floats(floats);
        m->dact_mem = aw_alloc_floats(floats);
        m->act_cap = m->act_mem && m->dact_mem ? floats : 0;
        if (!m->act_cap) {
            free(m->act_mem), free(m->dact_mem);
            m->act_mem = m->dact_mem = NULL;
        }
    }
    void *tokens = m->tokens, *scratch = m->scratch;
    const int ok = m->act_cap && !grow(&tokens, &m->tok_cap, toks, sizeof(int32_t)) &&
                   !grow(&scratch, &m->scratch_cap, work ? work : 1, sizeof(float));
    m->tokens = tokens, m->scratch = scratch;
    if (!ok)
        return aw_fail(AW_ERR_NOMEM, "out of memory: a batch of %zu x %zu positions needs %.1f MiB of activations",
                       B, T + S, (double)act_bytes / 1048576.0);
    m->targets = m->tokens + B * T, m->src = m->targets + B * T;
    m->B = B, m->T = T, m->S = S, m->act_floats = floats;
    carve_acts(m, m->act_mem, &m->a, B, T, S);
    carve_acts(m, m->dact_mem, &m->da, B, T, S);
    return AW_OK;
}

// ---- sublayers --------------------------------------------------------------------------------

void norm_forward(const aw_model *m, float *out, float *mean, float *rstd, const float *x, const float *w,
                  const float *b, size_t N) {
    const size_t C = (size_t)m->cfg.d_model;
    const float eps = m->cfg.norm_eps > 0.0f ? m->cfg.norm_eps : 1e-5f;
    if (m->cfg.norm_type == AW_NORMTYPE_RMS) rmsnorm_forward(out, rstd, x, w, N, C, eps);
    else layernorm_forward(out, mean, rstd, x, w, b, N, C, eps);
}

void norm_backward(const aw_model *m, float *dx, float *dw, float *db, const float *dout, const float *x,
                   const float *w, const float *mean, const float *rstd, size_t N) {
    const size_t C = (size_t)m->cfg.d_model;
    if (m->cfg.norm_type == AW_NORMTYPE_RMS) rmsnorm_backward(dx, dw, dout, x, w, rstd, N, C);
    else layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C);
}

// A named point of the decoder (hooks.h): layer -1 for the points outside the blocks, AW_NO_HOOK
// for the encoder's and the cross-attention's sublayers. Unhooked, a point costs one test.
#define AW_NO_HOOK (-2)
#define HOOK(point, layer, x)                                                                                      \
    do {                                                                                                           \
        if (m->hooks && (layer) != AW_NO_HOOK) m->hooks->fn(m->hooks, (point), (layer), (float *)(x));               \
    } while (0)

static const float *attn_out(const aw_model *m, const aw_attn_acts *a) {
    return m->cfg.norm == AW_NORM_PRE ? a->res : a->ln;
}
static float *attn_dout(const aw_model *m, aw_attn_acts *da) { return m->cfg.norm == AW_NORM_PRE ? da->res : da->ln; }
static const float *ffn_out(const aw_model *m, const aw_ffn_acts *a) {
    return m->cfg.norm == AW_NORM_PRE ? a->res : a->ln;
}
static float *ffn_dout(const aw_model *m, aw_ffn_acts *da) { return m->cfg.norm == AW_NORM_PRE ? da->res : da->ln; }

// The form over the batch's sequences, one item each (src/kernels/parallel.h): in the threaded
// build at once for a form without parameters (its calls share nothing; each sequence has its
// own rows, weights and backward scratch), else one after the other. The first failure counts.
typedef struct {
    aw_model *m;
    aw_attn_form *f;
    aw_attn_acts *a, *da;
    const float *xq;
    float *dxq;
    size_t T, Tk;
    size_t work; // floats of backward scratch per sequence
    int keep, status;
} seq_job;

static void seq_forward(void *ctx, size_t b) {
    seq_job *j = ctx;
    const size_t C = (size_t)j->m->cfg.d_model, A = model_attn_cols(&j->m->cfg), H = (size_t)j->m->cfg.heads;
    const size_t T = j->T, Tk = j->Tk;
    const aw_attn_form *f = j->f;
    // a forward for display (keep) has no backward after it: the form saves nothing then, so
    // softmax builds its weights once instead of also streaming for the backward's statistics
    const size_t saved = f->form->saved_floats && !j->keep ? f->form->saved_floats(f, T, Tk) : 0;
    const int st = f->form->forward(j->f, j->a->o + b * T * A, j->keep ? j->a->att + b * H * T * Tk : NULL,
                                    saved ? j->a->saved + b * saved : NULL, j->xq + b * T * C, j->a->q + b * T * A,
                                    j->a->k + b * Tk * A, j->a->v + b * Tk * A, T, Tk);
    aw_first_failure(&j->status, st);
}

static void seq_backward(void *ctx, size_t b) {
    seq_job *j = ctx;
    aw_model *m = j->m;
    const size_t C = (size_t)m->cfg.d_model, A = model_attn_cols(&m->cfg), T = j->T, Tk = j->Tk;
    const aw_attn_acts *a = j->a;
    aw_attn_acts *da = j->da;
    const size_t saved = j->f->form->saved_floats ? j->f->form->saved_floats(j->f, T, Tk) : 0;
    const int st = j->f->form->backward(j->f, j->dxq + b * T * C, da->q + b * T * A, da->k + b * Tk * A,
                                        da->v + b * Tk * A, m->scratch + b * j->work, da->o + b * T * A,
                                        saved ? a->saved + b * saved : NULL, j->xq + b * T * C, a->q + b * T * A,
                                        a->k + b * Tk * A, a->v + b * Tk * A, T, Tk);
    aw_first_failure(&j->status, st);
}

static void run_sequences(seq_job *j, size_t B, aw_item_fn fn) {
    if (!(j->f->form->flags & AW_FORM_PARAMS) && !j->f->params && aw_threads_built()) {
        aw_parallel_for(B, fn, j);
        return;
    }
    for (size_t b = 0; b < B && !j->status; b++) fn(j, b);
}

// The sparse probe (transformer.h): the form's selection, and the causal softmax of the same q, k (T, H hd)
// per head, computed in double and stored as float.
static int sparse_probe_read(aw_sparse_probe *p, aw_attn_form *f, const float *x, const float *q, const float *k,
                             const float *v, size_t T, size_t H, size_t hd) {
    const int st = f->form->selection(f, p->sel, x, q, k, v, T, T);
    if (st) return st;
    const size_t C = H * hd;
    const double scale = 1.0 / sqrt((double)hd);
    double *row = malloc(T * sizeof *row);
    if (!row) return aw_fail(AW_ERR_NOMEM, "sparseReading: out of memory for %zu positions", T);
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < T; t++) {
            const float *qt = q + t * C + h * hd;
            double top = -INFINITY, sum = 0;
            for (size_t s = 0; s <= t; s++) {
                const float *ks = k + s * C + h * hd;
                double d = 0;
                for (size_t i = 0; i < hd; i++) d += (double)qt[i] * ks[i];
                row[s] = d * scale;
                if (row[s] > top) top = row[s];
            }
            for (size_t s = 0; s <= t; s++) sum += (row[s] = exp(row[s] - top));
            float *out = p->dense + (h * T + t) * T;
            for (size_t s = 0; s < T; s++) out[s] = s <= t ? (float)(row[s] / sum) : 0.0f;
        }
    free(row);
    p->done = 1;
    return AW_OK;
}

// pre:  out = in + Attn(LN(in));   post: out = LN(in + Attn(in)).  kv_src: cross-attention's
// encoder output (B*Tk, C), or NULL for self-attention.
static int attn_sublayer_forward(aw_model *m, aw_attn_form *f, const aw_attn_weights *w, aw_attn_acts *a,
                                 const float *in, const float *kv_src, size_t B, size_t T, size_t Tk, int layer) {
    const size_t C = (size_t)m->cfg.d_model, A = model_attn_cols(&m->cfg), N = B * T, Nk = B * Tk;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, in, w->ln_w, w->ln_b, N);
    const float *xq = pre ? a->ln : in, *xkv = kv_src ? kv_src : xq;
    const int has_q = w->wq || w->qq;
    if (has_q) model_linear(m, a->q, xq, w->wq, w->qq, w->bq, N, C, A);
    if (has_q) HOOK(AW_HOOK_Q, layer, a->q);
    if (a->kv) { // grouped-query: the K/V heads' projections, shared out to the query heads
        const size_t H = (size_t)m->cfg.heads, KH = (size_t)m->cfg.kv_heads, hd = model_head_dim(&m->cfg), KC = KH * hd;
        if (w->wk || w->qk) {
            model_linear(m, a->kv, xkv, w->wk, w->qk, w->bk, Nk, C, KC);
            HOOK(AW_HOOK_K, layer, a->kv);
            kv_expand(a->k, a->kv, Nk, H, KH, hd);
        }
        model_linear(m, a->kv + Nk * KC, xkv, w->wv, w->qv, w->bv, Nk, C, KC);
        HOOK(AW_HOOK_V, layer, a->kv + Nk * KC);
        kv_expand(a->v, a->kv + Nk * KC, Nk, H, KH, hd);
    } else {
        if (w->wk || w->qk) {
            model_linear(m, a->k, xkv, w->wk, w->qk, w->bk, Nk, C, A);
            HOOK(AW_HOOK_K, layer, a->k);
        }
        if (w->wv || w->qv) {
            model_linear(m, a->v, xkv, w->wv, w->qv, w->bv, Nk, C, A);
            HOOK(AW_HOOK_V, layer, a->v);
        }
    }
    if (f->form->qk_forward && has_q) { // before the rotation: the form's own (softmax's QK-norm)
        const int keep_only = m->keep_attention && a->att != NULL; // a display forward saves nothing
        const size_t sf = f->form->saved_floats ? f->form->saved_floats(f, T, Tk) : 0;
        for (size_t b = 0; b < B; b++) {
            const int st = f->form->qk_forward(f, keep_only || !sf ? NULL : a->saved + b * sf, a->q + b * T * A,
                                               a->k + b * Tk * A, T, Tk, A);
            if (st) return st;
        }
    }
    if (m->pos->rotate_qk && !kv_src && has_q) { // rotary positions on self-attention's queries and keys
        m->pos->rotate_qk(m, a->q, B, T, 0, A, 0);
        m->pos->rotate_qk(m, a->k, B, Tk, 0, A, 0);
    }
    if (m->probe && m->probe->layer == layer && !kv_src && f->form->selection && B == 1) {
        const int st = sparse_probe_read(m->probe, f, xq, a->q, a->k, a->v, T, (size_t)m->cfg.heads, A / (size_t)m->cfg.heads);
        if (st) return st;
    }
    const int keep = m->keep_attention && a->att != NULL;
    seq_job j = {m, f, a, NULL, xq, NULL, T, Tk, 0, keep, AW_OK};
    run_sequences(&j, B, seq_forward);
    if (j.status) return j.status;
    if (keep) HOOK(AW_HOOK_PATTERN, layer, a->att);
    HOOK(AW_HOOK_Z, layer, a->o);
    model_linear(m, a->res, a->o, w->wo, w->qo, w->bo, N, A, C);
    HOOK(AW_HOOK_ATTN_OUT, layer, a->res);
    residual_add(a->res, in, N * C);
    if (!pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, a->res, w->ln_w, w->ln_b, N);
    HOOK(AW_HOOK_RESID_MID, layer, attn_out(m, a));
    return AW_OK;
}

static int attn_sublayer_backward(aw_model *m, aw_attn_form *f, const aw_attn_weights *w, aw_attn_weights *g,
                                  const aw_attn_acts *a, aw_attn_acts *da, const float *in, float *d_in,
                                  const float *kv_src, float *d_kv_src, size_t B, size_t T, size_t Tk) {
    const size_t C = (size_t)m->cfg.d_model, A = model_attn_cols(&m->cfg), N = B * T, Nk = B * Tk;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    // post: out = LN(res)
    if (!pre) norm_backward(m, da->res, g->ln_w, g->ln_b, da->ln, a->res, w->ln_w, a->ln_mean, a->ln_rstd, N);
    // res = in + o Wo + bo
    residual_add(d_in, da->res, N * C);
    linear_backward(da->o, g->wo, g->bo, da->res, a->o, w->wo, N, A, C);
    const float *xq = pre ? a->ln : in, *xkv = kv_src ? kv_src : xq;
    float *dxq = pre ? da->ln : d_in, *dxkv = kv_src ? d_kv_src : dxq;
    // o = form(q, k, v); in the threaded build each sequence has its own slice of the scratch
    // (model_reserve sized it B times the largest sublayer's need)
    seq_job j = {m, f, (aw_attn_acts *)a, da, xq, dxq, T, Tk, aw_threads_built() ? m->scratch_cap / B : 0, 1, AW_OK};
    run_sequences(&j, B, seq_backward);
    if (j.status) return j.status;
    if (m->pos->rotate_qk && !kv_src && w->wq) { // q, k were rotated: turn their gradients back
        m->pos->rotate_qk(m, da->q, B, T, 0, A, 1);
        m->pos->rotate_qk(m, da->k, B, Tk, 0, A, 1);
    }
    if (f->form->qk_backward && w->wq) { // the form's own before the rotation (QK-norm), one sequence at a time
        const size_t sf = f->form->saved_floats ? f->form->saved_floats(f, T, Tk) : 0;
        for (size_t b = 0; b < B; b++)
            f->form->qk_backward(f, da->q + b * T * A, da->k + b * Tk * A, m->scratch, a->saved + b * sf, T, Tk);
    }
    // q = xq Wq + bq, k = xkv Wk + bk, v = xkv Wv + bv
    if (a->kv) { // grouped-query: each K/V head gathers the gradients of the query heads it served
        const size_t H = (size_t)m->cfg.heads, KH = (size_t)m->cfg.kv_heads, hd = model_head_dim(&m->cfg), KC = KH * hd;
        kv_reduce(da->kv + Nk * KC, da->v, Nk, H, KH, hd);
        linear_backward(dxkv, g->wv, g->bv, da->kv + Nk * KC, xkv, w->wv, Nk, C, KC);
        if (w->wk) {
            kv_reduce(da->kv, da->k, Nk, H, KH, hd);
            linear_backward(dxkv, g->wk, g->bk, da->kv, xkv, w->wk, Nk, C, KC);
        }
    } else {
        if (w->wv) linear_backward(dxkv, g->wv, g->bv, da->v, xkv, w->wv, Nk, C, A);
        if (w->wk) linear_backward(dxkv, g->wk, g->bk, da->k, xkv, w->wk, Nk, C, A);
    }
    if (w->wq) linear_backward(dxq, g->wq, g->bq, da->q, xq, w->wq, N, C, A);
    // pre: ln = LN(in)
    if (pre) norm_backward(m, d_in, g->ln_w, g->ln_b, da->ln, in, w->ln_w, a->ln_mean, a->ln_rstd, N);
    return AW_OK;
}

// pre:  out = in + FFN(LN(in));   post: out = LN(in + FFN(in));   FFN(x) = relu(x W1 + b1) W2 + b2.
static void ffn_sublayer_forward(aw_model *m, const aw_ffn_weights *w, aw_ffn_acts *a, const float *in, size_t N,
                                 int layer) {
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, in, w->ln_w, w->ln_b, N);
    model_linear(m, a->h, pre ? a->ln : in, w->w1, w->q1, w->b1, N, C, F);
    if (w->w3 || w->q3) { // SwiGLU: r = silu(x W1) * (x W3)
        model_linear(m, a->u, pre ? a->ln : in, w->w3, w->q3, w->b3, N, C, F);
        swiglu_forward(a->r, a->h, a->u, N * F);
    } else if (m->cfg.ffn == AW_FFN_GELU) gelu_forward(a->r, a->h, N * F);
    else relu_forward(a->r, a->h, N * F);
    model_linear(m, a->res, a->r, w->w2, w->q2, w->b2, N, F, C);
    HOOK(AW_HOOK_MLP_OUT, layer, a->res);
    residual_add(a->res, in, N * C);
    if (!pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, a->res, w->ln_w, w->ln_b, N);
    HOOK(AW_HOOK_RESID_POST, layer, ffn_out(m, a));
}

static void ffn_sublayer_backward(aw_model *m, const aw_ffn_weights *w, aw_ffn_weights *g, const aw_ffn_acts *a,
                                  aw_ffn_acts *da, const float *in, float *d_in, size_t N) {
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (!pre) norm_backward(m, da->res, g->ln_w, g->ln_b, da->ln, a->res, w->ln_w, a->ln_mean, a->ln_rstd, N);
    residual_add(d_in, da->res, N * C);                                      // res = in + ...
    linear_backward(da->r, g->w2, g->b2, da->res, a->r, w->w2, N, F, C);   // ... r W2 + b2
    if (w->w3) { // r = silu(h) u, u = x W3 + b3
        swiglu_backward(da->h, da->u, da->r, a->h, a->u, N * F);
        linear_backward(pre ? da->ln : d_in, g->w3, g->b3, da->u, pre ? a->ln : in, w->w3, N, C, F);
    } else if (m->cfg.ffn == AW_FFN_GELU) gelu_backward(da->h, da->r, a->h, N * F); // r = gelu(h)
    else relu_backward(da->h, da->r, a->h, N * F); // r = relu(h)
    linear_backward(pre ? da->ln : d_in, g->w1, g->b1, da->h, pre ? a->ln : in, w->w1, N, C, F); // h = x W1 + b1
    if (pre) norm_backward(m, d_in, g->ln_w, g->ln_b, da->ln, in, w->ln_w, a->ln_mean, a->ln_rstd, N);
}

// ---- whole model ------------------------------------------------------------------------------

static const float *encoder_out(const aw_model *m, const aw_acts *a) {
    if (m->cfg.norm == AW_NORM_PRE) return a->enc_lnf;
    return ffn_out(m, &a->enc_ffn[m->cfg.layers - 1]);
}

static const float *decoder_stream_out(const aw_model *m, const aw_acts *a) {
    return ffn_out(m, &a->dec_ffn[m->cfg.layers - 1]);
}

static int check_tokens(const aw_model *m, const char *what, const int32_t *t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0 || t[i] >= m->cfg.vocab)
            return aw_fail(AW_ERR_ARG, "%s[%zu] is %d, outside the vocabulary [0, %d)", what, i, (int)t[i],
                           (int)m->cfg.vocab);
    return AW_OK;
}

static int output_forward(aw_model *m, const float *x, aw_metrics *metrics);

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

int model_forward(aw_model *m, aw_metrics *metrics) {
    if (m->B == 0) return AW_ERR_STATE;
    const aw_model_config *c = &m->cfg;
    const size_t B = m->B, T = m->T, S = m->S, C = (size_t)c->d_model, N = B * T;
    const int pre = c->norm == AW_NORM_PRE, encdec = c->arch == AW_ARCH_ENCODER_DECODER, rnn = aw_arch_is_rnn(c->arch);
    aw_acts *a = &m->a;
    if (check_tokens(m, "tokens", m->tokens, N) ||
        (aw_arch_has_source(c->arch) && check_tokens(m, "source", m->src, B * S)))
        return AW_ERR_ARG;
    // weights that are already NaN or infinite (a diverged run, or a checkpoint holding them)
    // are named as such, not met later as a NaN inside some sublayer (one pass over P floats,
    // against the forward's B T P multiply-adds)
    int st = m->params_checked ? AW_OK : model_check_params(m);
    if (st) return st;
    for (size_t i = 0; i < N; i++)
        if (m->targets[i] >= c->vocab || m->targets[i] < -1)
            return aw_fail(AW_ERR_ARG, "targets[%zu] is %d: expected a token in [0, %d) or -1 (no loss)", i,
                           (int)m->targets[i], (int)c->vocab);
    const float *enc = NULL;
    if (rnn) {
        const aw_rnn_batch bt = {m->B, m->T, m->S, (size_t)c->d_model, (size_t)c->vocab, c->arch == AW_ARCH_GRU_ATTENTION,
                                 m->tokens, m->src};
        const aw_rnn_weights w = model_rnn_weights(&m->w);
        rnn_forward(&bt, &w, &a->rnn, a->x0); // the decoder states into x0
        if (metrics) metrics->side_loss = 0.0;
        return output_forward(m, a->x0, metrics);
    }
    if (encdec) {
        embedding_forward(a->e0, m->src, m->w.wte, m->pe, B, S, C);
        const float *x = a->e0;
        for (int l = 0; l < c->layers; l++) {
            if ((st = attn_sublayer_forward(m, &m->enc_form[l], &m->w.enc[l].self, &a->enc_attn[l], x, NULL, B, S, S,
                                            AW_NO_HOOK)))
                return st;
            x = attn_out(m, &a->enc_attn[l]);
            ffn_sublayer_forward(m, &m->w.enc[l].ffn, &a->enc_ffn[l], x, B * S, AW_NO_HOOK);
            x = ffn_out(m, &a->enc_ffn[l]);
        }
        if (pre) norm_forward(m, a->enc_lnf, a->enc_lnf_mean, a->enc_lnf_rstd, x, m->w.enc_lnf_w, m->w.enc_lnf_b, B * S);
        enc = encoder_out(m, a);
    }
    // the forms' side losses (DSA's indexer KL), each the mean over the batch's sequences, when a
    // backward may follow (a model with gradients, not generation's prefill)
    const float side_weight = m->grads && !m->last_logits_only ? 1.0f / (float)B : 0.0f;
    for (int l = 0; l < c->layers; l++) {
        aw_attn_form *fs[3] = {&m->self_form[l], &m->cross_form[l], &m->enc_form[l]};
        for (int i = 0; i < 3; i++) fs[i]->side_weight = side_weight, fs[i]->side_loss = 0.0;
    }
    // a hooked run may start at a later block, the earlier ones kept from the last forward (hooks.h)
    const int l0 = m->hooks && !encdec ? m->hooks->first_layer : 0;
    if (l0 == 0) embedding_forward(a->x0, m->tokens, m->w.wte, m->pe, B, T, C);
    if (l0 == 0) HOOK(AW_HOOK_EMBED, -1, a->x0);
    const float *x = l0 ? ffn_out(m, &a->dec_ffn[l0 - 1]) : a->x0;
    for (int l = l0; l < c->layers; l++) {
        HOOK(AW_HOOK_RESID_PRE, l, x);
        if ((st = attn_sublayer_forward(m, &m->self_form[l], &m->w.dec[l].self, &a->dec_self[l], x, NULL, B, T, T, l)))
            return st;
        x = attn_out(m, &a->dec_self[l]);
        if (encdec) {
            if ((st = attn_sublayer_forward(m, &m->cross_form[l], &m->w.dec[l].cross, &a->dec_cross[l], x, enc, B, T, S,
                                            AW_NO_HOOK)))
                return st;
            x = attn_out(m, &a->dec_cross[l]);
        }
        ffn_sublayer_forward(m, &m->w.dec[l].ffn, &a->dec_ffn[l], x, N, l);
        x = ffn_out(m, &a->dec_ffn[l]);
    }
    if (pre) norm_forward(m, a->lnf, a->lnf_mean, a->lnf_rstd, x, m->w.lnf_w, m->w.lnf_b, N), x = a->lnf;
    if (pre) HOOK(AW_HOOK_LN_FINAL, -1, a->lnf);
    st = output_forward(m, x, metrics);
    if (metrics) {
        metrics->side_loss = 0.0;
        for (int l = 0; l < c->layers; l++)
            metrics->side_loss += m->self_form[l].side_loss + m->cross_form[l].side_loss + m->enc_form[l].side_loss;
    }
    return st;
}

// logits = x W_out + b_out, the loss and the metrics.
static int output_forward(aw_model *m, const float *x, aw_metrics *metrics) {
    const size_t N = m->B * m->T, C = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab;
    aw_acts *a = &m->a;
    if (m->last_logits_only) { // each sequence's last row: what generation reads
        for (size_t b = 0; b < m->B; b++) {
            const size_t r = b * m->T + m->T - 1;
            model_classifier(m, a->logits + r * V, x + r * C, 1);
        }
        if (metrics) memset(metrics, 0, sizeof *metrics);
        return AW_OK;
    }
    model_classifier(m, a->logits, x, N);
    size_t count = 0, correct = 0;
    const double loss = crossentropy_forward(a->probs, a->losses, a->logits, m->targets, N, V, &count, &correct);
    if (metrics) {
        metrics->loss = loss, metrics->count = count, metrics->grad_norm = 0.0;
        metrics->accuracy = count ? (double)correct / (double)count : 0.0;
    }
    if (!isfinite(loss))
        return aw_fail(AW_ERR_NONFINITE, "the loss is NaN or Infinity: the model's parameters have diverged (lowering lr "
                                         "cannot repair them); create the model again or load a checkpoint");
    return AW_OK;
}

static int backward(aw_model *m, const float *dlogits);

int model_backward(aw_model *m) { return backward(m, NULL); }

int model_backward_from_logits(aw_model *m, const float *dlogits) { return backward(m, dlogits); }

// The backward of model_backward, seeded with the loss's gradient of the logits or with dlogits.
static int backward(aw_model *m, const float *dlogits) {
    if (m->inference) return model_refuse_inference(m, dlogits ? "a backward from the logits" : "training");
    if (m->B == 0) return AW_ERR_STATE;
    const aw_model_config *c = &m->cfg;
    const size_t B = m->B, T = m->T, S = m->S, C = (size_t)c->d_model, V = (size_t)c->vocab, N = B * T;
    const int pre = c->norm == AW_NORM_PRE, encdec = c->arch == AW_ARCH_ENCODER_DECODER;
    const aw_acts *a = &m->a;
    aw_acts *da = &m->da;
    zero_floats(m->grads, m->n_params);
    zero_floats(m->dact_mem, m->act_floats);
    if (dlogits) memcpy(da->logits, dlogits, N * V * sizeof(float));
    else {
        size_t count = 0;
        for (size_t i = 0; i < N; i++) count += m->targets[i] >= 0;
        if (count == 0) return AW_OK;
        // loss = mean over counted rows of -log probs[target]
        crossentropy_backward(da->logits, a->probs, m->targets, 1.0f / (float)count, N, V);
    }
    if (aw_arch_is_rnn(c->arch)) {
        linear_backward(da->x0, m->g.w_out, m->g.b_out, da->logits, a->x0, m->w.w_out, N, C, V);
        const aw_rnn_batch bt = {m->B, m->T, m->S, C, V, c->arch == AW_ARCH_GRU_ATTENTION, m->tokens, m->src};
        const aw_rnn_weights w = model_rnn_weights(&m->w);
        aw_rnn_weights g = model_rnn_weights(&m->g);
        rnn_backward(&bt, &w, &g, &a->rnn, &da->rnn, da->x0); // da->rnn zeroed above
        return AW_OK;
    }
    const float *xl = decoder_stream_out(m, a);
    float *dxl = (float *)decoder_stream_out(m, da);
    if (c->tie) tied_backward(pre ? da->lnf : dxl, m->g.wte, m->g.b_out, da->logits, pre ? a->lnf : xl, m->w.wte, N, C, V);
    else linear_backward(pre ? da->lnf : dxl, m->g.w_out, m->g.b_out, da->logits, pre ? a->lnf : xl, m->w.w_out, N, C, V);
    if (pre) norm_backward(m, dxl, m->g.lnf_w, m->g.lnf_b, da->lnf, xl, m->w.lnf_w, a->lnf_mean, a->lnf_rstd, N);
    const float *enc = encdec ? encoder_out(m, a) : NULL;
    float *denc = encdec ? (float *)encoder_out(m, da) : NULL;
    int st;
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *in_self = l ? ffn_out(m, &a->dec_ffn[l - 1]) : a->x0;
        float *din_self = l ? ffn_dout(m, &da->dec_ffn[l - 1]) : da->x0;
        const float *in_ffn = attn_out(m, encdec ? &a->dec_cross[l] : &a->dec_self[l]);
        float *din_ffn = attn_dout(m, encdec ? &da->dec_cross[l] : &da->dec_self[l]);
        ffn_sublayer_backward(m, &m->w.dec[l].ffn, &m->g.dec[l].ffn, &a->dec_ffn[l], &da->dec_ffn[l], in_ffn, din_ffn, N);
        if (encdec &&
            (st = attn_sublayer_backward(m, &m->cross_form[l], &m->w.dec[l].cross, &m->g.dec[l].cross, &a->dec_cross[l],
                                         &da->dec_cross[l], attn_out(m, &a->dec_self[l]),
                                         attn_dout(m, &da->dec_self[l]), enc, denc, B, T, S)))
            return st;
        if ((st = attn_sublayer_backward(m, &m->self_form[l], &m->w.dec[l].self, &m->g.dec[l].self, &a->dec_self[l],
                                         &da->dec_self[l], in_self, din_self, NULL, NULL, B, T, T)))
            return st;
    }
    embedding_backward(m->g.wte, m->g.wpe, da->x0, m->tokens, B, T, C);
    if (!encdec) return AW_OK;
    const float *xe = ffn_out(m, &a->enc_ffn[c->layers - 1]);
    float *dxe = ffn_dout(m, &da->enc_ffn[c->layers - 1]);
    if (pre) norm_backward(m, dxe, m->g.enc_lnf_w, m->g.enc_lnf_b, da->enc_lnf, xe, m->w.enc_lnf_w, a->enc_lnf_mean,
                                a->enc_lnf_rstd, B * S);
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *in = l ? ffn_out(m, &a->enc_ffn[l - 1]) : a->e0;
        float *din = l ? ffn_dout(m, &da->enc_ffn[l - 1]) : da->e0;
        ffn_sublayer_backward(m, &m->w.enc[l].ffn, &m->g.enc[l].ffn, &a->enc_ffn[l], &da->enc_ffn[l],
                              attn_out(m, &a->enc_attn[l]), attn_dout(m, &da->enc_attn[l]), B * S);
        if ((st = attn_sublayer_backward(m, &m->enc_form[l], &m->w.enc[l].self, &m->g.enc[l].self, &a->enc_attn[l],
                                         &da->enc_attn[l], in, din, NULL, NULL, B, S, S)))
            return st;
    }
    embedding_backward(m->g.wte, m->g.wpe, da->e0, m->src, B, S, C);
    return AW_OK;
}

int model_refuse_inference(const aw_model *m, const char *what) {
    if (m->quant) return model_refuse_quantized(m, what);
    return aw_fail(AW_ERR_STATE, "%s needs gradients, and this model was loaded for inference only (it keeps its "
                                 "parameters and no gradients or optimizer state): load it with { training: true }",
                   what);
}

// The arena's range of a form that trains alone ([*lo, *hi)), or 0 when it does not.
static int trains_alone(const aw_model *m, int l, size_t *lo, size_t *hi) {
    const aw_attn_form *f = &m->self_form[l];
    if (aw_arch_is_rnn(m->cfg.arch) || !f->trains_alone) return 0;
    *lo = m->form_offset[1][l], *hi = *lo;
    aw_form_tensor ft[AW_SYNTH_MAX_TENSORS];
    const size_t nt = f->form->tensors(f, ft, AW_SYNTH_MAX_TENSORS);
    for (size_t i = 0; i < nt && i < AW_SYNTH_MAX_TENSORS; i++) *hi += ft[i].size;
    return 1;
}

double model_update(aw_model *m, const aw_train_config *tc) {
    const aw_adamw_config ac = {tc->lr, tc->beta1, tc->beta2, tc->eps, tc->weight_decay};
    int alone = 0;
    size_t lo, hi;
    for (int l = 0; l < m->cfg.layers; l++) alone |= trains_alone(m, l, &lo, &hi);
    if (!alone) {
        const double norm = clip_grad_norm(m->grads, m->n_params, tc->clip);
        m->step++;
        adamw_update(m->params, m->adam_m, m->adam_v, m->grads, m->decay, m->n_params, &ac, m->step);
        return norm;
    }
    // only the forms that train alone learn: every other gradient is zeroed, so the clipping norm is
    // theirs, and AdamW runs over their ranges only (the frozen parameters and their moments stay)
    size_t kept = 0;
    for (int l = 0; l < m->cfg.layers; l++)
        if (trains_alone(m, l, &lo, &hi)) {
            memset(m->grads + kept, 0, (lo - kept) * sizeof(float));
            kept = hi;
        }
    memset(m->grads + kept, 0, (m->n_params - kept) * sizeof(float));
    const double norm = clip_grad_norm(m->grads, m->n_params, tc->clip);
    m->step++;
    for (int l = 0; l < m->cfg.layers; l++)
        if (trains_alone(m, l, &lo, &hi))
            adamw_update(m->params + lo, m->adam_m + lo, m->adam_v + lo, m->grads + lo, m->decay ? m->decay + lo : NULL,
                         hi - lo, &ac, m->step);
    return norm;
}

int model_set_attention_option(aw_model *m, const char *name, const char *text) {
    aw_model_config *c = &m->cfg;
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

// ---- tasks ------------------------------------------------------------------------------------

// The decoder positions T and encoder positions S one example of the task takes on this model.
static void task_positions(const aw_model *m, const aw_task_spec *spec, size_t *T, size_t *S) {
    const size_t ns = task_src_len(spec), nt = task_tgt_len(spec);
    if (m->cfg.arch == AW_ARCH_DECODER) *T = ns + (size_t)task_uses_separator(spec) + nt - 1, *S = 0;
    else *T = nt, *S = ns;
}

int model_task_dims(const aw_model *m, const aw_task_spec *spec, size_t *T, size_t *S) {
    int st = task_check(spec);
    if (st) return st;
    if (task_min_vocab(spec) > m->cfg.vocab)
        return aw_fail(AW_ERR_ARG, "task \"%s\" with these symbols needs vocab >= %d, and this model has %d",
                       task_name(spec->task), task_min_vocab(spec), (int)m->cfg.vocab);
    if (m->cfg.arch != AW_ARCH_DECODER && task_is_lm(spec))
        return aw_fail(AW_ERR_ARG, "task \"%s\" is language modelling: it needs a decoder-only model",
                       task_name(spec->task));
    task_positions(m, spec, T, S);
    const size_t max_len = (size_t)m->cfg.max_len, need = *T > *S ? *T : *S;
    if (need <= max_len) return AW_OK;
    // The longest length that fits, found by the same count of positions (shorter examples never
    // take more positions), so the advice cannot drift from the rule.
    aw_task_spec shorter = *spec;
    const size_t least = spec->task == AW_TASK_REPEAT ? 2 : 1;
    size_t fits = 0;
    for (shorter.length = spec->length - 1; !fits && shorter.length >= least; shorter.length--) {
        size_t t, s;
        task_positions(m, &shorter, &t, &s);
        if (t <= max_len && s <= max_len) fits = shorter.length;
    }
    if (fits)
        return aw_fail(AW_ERR_ARG, "task \"%s\" at length %zu needs %zu positions, more than maxLen = %d: pass "
                                   "{ length: %zu } (the longest that fits) or less, or create the model with "
                                   "maxLen >= %zu", task_name(spec->task), spec->length, need, (int)max_len, fits, need);
    return aw_fail(AW_ERR_ARG, "task \"%s\" at length %zu needs %zu positions, more than maxLen = %d, and no "
                               "length fits: create the model with maxLen >= %zu",
                   task_name(spec->task), spec->length, need, (int)max_len, need);
}

int model_make_batch(aw_model *m, const aw_task_spec *spec, size_t B, aw_rng *rng) {
    size_t T, S;
    int st = model_task_dims(m, spec, &T, &S);
    if (st || (st = model_reserve(m, B, T, S))) return st;
    const size_t ns = task_src_len(spec), nt = task_tgt_len(spec);
    int32_t *buf = malloc((ns + nt + 1) * sizeof(int32_t));
    if (!buf) return AW_ERR_NOMEM;
    int32_t *src = buf, *tgt = buf + ns;
    for (size_t b = 0; b < B; b++) {
        const size_t real = task_example(src, tgt, spec, rng);
        int32_t *tok = m->tokens + b * T, *trg = m->targets + b * T;
        if (aw_arch_has_source(m->cfg.arch)) {
            memcpy(m->src + b * S, src, ns * sizeof(int32_t));
            tok[0] = 0; // the separator starts the decoder
            for (size_t i = 0; i < T; i++) {
                if (i) tok[i] = tgt[i - 1];
                trg[i] = i < real && task_target_scored(spec, i) ? tgt[i] : -1;
            }
        } else { // seq = src, [0], tgt (the separator only when the task uses one): predict tgt
            const size_t sep = (size_t)task_uses_separator(spec), start = ns + sep; // tgt's first index in seq
            for (size_t i = 0; i < T; i++) {
                tok[i] = i < ns ? src[i] : i < start ? 0 : tgt[i - start];
                const size_t next = i + 1; // position i predicts seq[next]
                trg[i] = (next >= start && next - start < real && task_target_scored(spec, next - start)) ? tgt[next - start] : -1;
            }
        }
    }
    free(buf);
    return AW_OK;
}

int model_train_step(aw_model *m, const aw_task_spec *spec, size_t B, const aw_train_config *tc, aw_metrics *mt) {
    int st = model_make_batch(m, spec, B, &m->data_rng);
    if (st || (st = model_forward(m, mt)) || (st = model_backward(m))) return st;
    mt->grad_norm = model_update(m, tc);
    return isfinite(mt->grad_norm) ? AW_OK
                                   : aw_fail(AW_ERR_NONFINITE, "the gradients became NaN or Infinity (lr %g), so the "
                                                               "weights are now unusable: create the model again or "
                                                               "load a checkpoint, then train with a lower lr or clip > 0",
                                             (double)tc->lr);
}

int model_evaluate(aw_model *m, const aw_task_spec *train_spec, size_t B, size_t batches, uint64_t seed,
                   aw_metrics *mt) {
    aw_task_spec held = *train_spec;
    held.heldout = 1; // chars: text the training batches never show
    const aw_task_spec *spec = &held;
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    double loss = 0.0, correct = 0.0;
    size_t count = 0;
    for (size_t i = 0; i < batches; i++) {
        aw_metrics one;
        int st = model_make_batch(m, spec, B, &rng);
        if (st || (st = model_forward(m, &one))) return st;
        loss += one.loss * (double)one.count, correct += one.accuracy * (double)one.count, count += one.count;
    }
    mt->loss = count ? loss / (double)count : 0.0;
    mt->accuracy = count ? correct / (double)count : 0.0;
    mt->count = count, mt->grad_norm = 0.0;
    return AW_OK;
}
