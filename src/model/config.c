// config.c: named config fields (see config.h).
#include "config.h"

#include "../kernels/status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const AW_NORM_TYPE_NAMES[2] = {"layernorm", "rmsnorm"};
const char *const AW_FFN_NAMES[AW_FFN_COUNT] = {"relu", "swiglu", "gelu"};
const char *const AW_BLOCK_NAMES[2] = {"classic", "llama"};
const char *const AW_NORM_NAMES[2] = {"pre", "post"};
const char *const AW_ARCH_NAMES[AW_ARCH_COUNT] = {"decoder", "encoder-decoder", "gru", "gru-attention"};

int name_index(const char *const *names, int count, const char *name) {
    for (int i = 0; name && i < count; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

enum { F_VOCAB, F_D_MODEL, F_HEADS, F_LAYERS, F_D_FF, F_MAX_LEN, F_ATTENTION, F_POSITIONAL, F_NORM, F_ARCH, F_SEED,
       F_BLOCK, F_NORM_TYPE, F_FFN, F_BIAS, F_TIE, F_KV_HEADS, F_ROPE_THETA, F_LAYER_FORMS, F_NORM_EPS, F_QKV_BIAS,
       F_ROPE_FACTOR, F_ROPE_LOW_FREQ, F_ROPE_HIGH_FREQ, F_ROPE_ORIGINAL_LEN, F_HEAD_DIM, F_COUNT };
static const char *const KEYS[F_COUNT] = {"vocab", "dModel", "heads", "layers", "dFF", "maxLen", "attention",
                                          "positional", "norm", "arch", "seed", "block", "normType", "ffn", "bias",
                                          "tieEmbeddings", "kvHeads", "ropeTheta", "layerForms", "normEps",
                                          "qkvBias", "ropeScaling.factor", "ropeScaling.lowFreqFactor",
                                          "ropeScaling.highFreqFactor", "ropeScaling.originalMaxLen", "headDim"};
static const char OPTION_PREFIX[] = "attentionOptions.";
static const char LAYER_PREFIX[] = "layerForms.";

void config_builder_init(aw_config_builder *b) {
    memset(b, 0, sizeof *b);
    aw_model_config *c = &b->cfg;
    c->vocab = 64, c->d_model = 64, c->heads = 4, c->layers = 2, c->d_ff = 256, c->max_len = 64, c->seed = 1;
    c->form = 0; // the registry's first form (softmax)
}

// An integer in [lo, hi] written in decimal (a whole number such as "1e3" is fine; "0x8" is not).
static int parse_int(const char *key, const char *text, double lo, double hi, long long *out) {
    double v = NAN;
    if (!aw_parse_decimal(text, &v) || !(v >= lo && v <= hi) || v != floor(v))
        return aw_fail(AW_ERR_ARG, "%s must be an integer in [%.0f, %.0f], got %.40s", key, lo, hi, text);
    *out = (long long)v;
    return AW_OK;
}

// A number in [lo, hi] (closed_lo) or (lo, hi]: an epsilon, a factor.
static int parse_real(const char *key, const char *text, double lo, double hi, int closed_lo, double *out) {
    double v = NAN;
    if (!aw_parse_decimal(text, &v) || !(closed_lo ? v >= lo : v > lo) || !(v <= hi))
        return aw_fail(AW_ERR_ARG, "%s must be a number in %s%g, %g], got %.40s", key, closed_lo ? "[" : "(", lo, hi, text);
    *out = v;
    return AW_OK;
}

static int parse_name(const char *key, const char *text, const char *const *names, int count, int32_t *out) {
    const int i = name_index(names, count, text);
    if (i >= 0) return *out = i, AW_OK;
    char list[160] = "";
    for (int j = 0; j < count; j++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", j ? ", " : "", names[j]);
    return aw_fail(AW_ERR_ARG, "%s must be one of %s, got \"%.40s\"", key, list, text);
}

// "attention must be one of "softmax", ..., got "x"" for what (the key as users write it); value
// NULL: the key is missing.
static int refuse_form(const char *what, const char *value) {
    char list[400] = "";
    for (size_t i = 0; i < aw_form_count_all(); i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "", aw_form_at(i)->name);
    if (!value) return aw_fail(AW_ERR_ARG, "%s is missing: each entry names its form, one of %s", what, list);
    return aw_fail(AW_ERR_ARG, "%s must be one of %s, got \"%.40s\"", what, list, value);
}

// A form's option `name` for layer (-1: the model's attentionOptions): kept as written until
// finish knows the form (options may come first).
static int set_pending(aw_config_builder *b, const char *key, int layer, const char *name, const char *value) {
    int known = 0;
    for (size_t i = 0; i < aw_form_count_all() && !known; i++) known = aw_option_find(aw_form_at(i), name) >= 0;
    if (!known) return aw_fail(AW_ERR_ARG, "unknown option \"%.60s\"", key);
    size_t j = 0;
    while (j < b->n_pending && (b->pending[j].layer != layer || strcmp(b->pending[j].name, name))) j++;
    if (j == AW_MAX_PENDING_OPTIONS) return aw_fail(AW_ERR_ARG, "too many attentionOptions (at most %d in all)", AW_MAX_PENDING_OPTIONS);
    if (strlen(name) >= sizeof b->pending[j].name || strlen(value) >= sizeof b->pending[j].text)
        return aw_fail(AW_ERR_ARG, "%.60s: the value is too long (%zu characters)", key, strlen(value));
    snprintf(b->pending[j].name, sizeof b->pending[j].name, "%s", name);
    snprintf(b->pending[j].text, sizeof b->pending[j].text, "%s", value);
    b->pending[j].layer = layer;
    if (j == b->n_pending) b->n_pending++;
    return AW_OK;
}

// layerForms.<l>.attention or layerForms.<l>.attentionOptions.<name> (rest: after the prefix).
static int set_layer_field(aw_config_builder *b, const char *key, const char *rest, const char *value) {
    long l = 0;
    int digits = 0;
    while (*rest >= '0' && *rest <= '9' && digits < 6) l = l * 10 + (*rest++ - '0'), digits++;
    if (!digits || *rest != '.') return aw_fail(AW_ERR_ARG, "unknown option \"%.60s\" (layerForms.<layer>.attention or "
                                                            "layerForms.<layer>.attentionOptions.<name>)", key);
    if (l >= AW_MAX_LAYERS)
        return aw_fail(AW_ERR_ARG, "layerForms[%ld]: a model has at most %d layers, so layerForms at most %d entries", l,
                       AW_MAX_LAYERS, AW_MAX_LAYERS);
    rest++;
    char what[48];
    snprintf(what, sizeof what, "layerForms[%ld].attention", l);
    if (strcmp(rest, "attention") == 0) {
        const aw_form *form = aw_form_find(value);
        if (!form) return refuse_form(what, value);
        b->layer_form[l] = aw_form_index(form);
        b->layer_named |= 1u << l;
        return AW_OK;
    }
    if (strncmp(rest, OPTION_PREFIX, sizeof OPTION_PREFIX - 1) == 0)
        return set_pending(b, key, (int)l, rest + sizeof OPTION_PREFIX - 1, value);
    return aw_fail(AW_ERR_ARG, "unknown option \"%.60s\" (an entry of layerForms takes attention and attentionOptions)", key);
}

int config_builder_set(aw_config_builder *b, const char *key, const char *value) {
    aw_model_config *c = &b->cfg;
    if (strncmp(key, OPTION_PREFIX, sizeof OPTION_PREFIX - 1) == 0)
        return set_pending(b, key, -1, key + sizeof OPTION_PREFIX - 1, value);
    if (strncmp(key, LAYER_PREFIX, sizeof LAYER_PREFIX - 1) == 0)
        return set_layer_field(b, key, key + sizeof LAYER_PREFIX - 1, value);
    int f = 0;
    while (f < F_COUNT && strcmp(KEYS[f], key) != 0) f++;
    if (f == F_COUNT) return aw_fail(AW_ERR_ARG, "unknown option \"%.40s\"", key);
    long long v = 0;
    double x = 0.0;
    int st = AW_OK;
    switch (f) {
    case F_VOCAB:
        if (!(st = parse_int(key, value, 2, 1 << 20, &v))) c->vocab = (int32_t)v;
        break;
    case F_D_MODEL:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->d_model = (int32_t)v;
        break;
    case F_HEADS:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->heads = (int32_t)v;
        break;
    case F_LAYERS:
        if (!(st = parse_int(key, value, 1, AW_MAX_LAYERS, &v))) c->layers = (int32_t)v;
        break;
    case F_D_FF:
        if (!(st = parse_int(key, value, 1, 16384, &v))) c->d_ff = (int32_t)v;
        break;
    case F_MAX_LEN:
        if (!(st = parse_int(key, value, 2, 4096, &v))) c->max_len = (int32_t)v;
        break;
    case F_SEED:
        if (!(st = parse_int(key, value, 0, 4294967295.0, &v))) c->seed = (uint32_t)v;
        break;
    case F_ATTENTION: {
        const aw_form *form = aw_form_find(value);
        if (!form) return refuse_form("attention", value);
        c->form = aw_form_index(form);
        break;
    }
    case F_LAYER_FORMS: // its length: one entry per layer (finish compares it with layers)
        if (parse_int(key, value, 1, AW_MAX_LAYERS, &v))
            return aw_clear_error(), aw_fail(AW_ERR_ARG, "layerForms has %.40s entries; it must have one per layer, "
                                                         "1 to %d", value, AW_MAX_LAYERS);
        b->n_layer_forms = (int32_t)v;
        break;
    case F_POSITIONAL:
        if (!aw_positional_find(value, &c->positional)) {
            char list[128];
            aw_positional_names(list, sizeof list, 0, 0);
            return aw_fail(AW_ERR_ARG, "%s must be one of %s, got \"%.40s\"", key, list, value);
        }
        break;
    case F_BLOCK: st = parse_name(key, value, AW_BLOCK_NAMES, 2, &c->block); break;
    case F_NORM_TYPE: st = parse_name(key, value, AW_NORM_TYPE_NAMES, 2, &c->norm_type); break;
    case F_FFN: st = parse_name(key, value, AW_FFN_NAMES, AW_FFN_COUNT, &c->ffn); break;
    case F_NORM_EPS:
        if (!(st = parse_real(key, value, 0.0, 0.1, 0, &x))) c->norm_eps = (float)x;
        break;
    case F_ROPE_FACTOR:
        if (!(st = parse_real(key, value, 1.0, 1024.0, 1, &x))) c->rope_factor = (float)x;
        break;
    case F_ROPE_LOW_FREQ:
        if (!(st = parse_real(key, value, 0.0, 1024.0, 0, &x))) c->rope_low_freq = (float)x;
        break;
    case F_ROPE_HIGH_FREQ:
        if (!(st = parse_real(key, value, 0.0, 1024.0, 0, &x))) c->rope_high_freq = (float)x;
        break;
    case F_HEAD_DIM:
        if (!(st = parse_int(key, value, 1, 1024, &v))) c->head_dim = (int32_t)v;
        break;
    case F_ROPE_ORIGINAL_LEN:
        if (!(st = parse_int(key, value, 1, 1 << 24, &v))) c->rope_original_len = (int32_t)v;
        break;
    case F_BIAS:
    case F_QKV_BIAS:
    case F_TIE: {
        const int yes = strcmp(value, "true") == 0, no = strcmp(value, "false") == 0;
        if (!yes && !no) return aw_fail(AW_ERR_ARG, "%s must be true or false, got %.40s", key, value);
        if (f == F_BIAS) c->no_bias = no;
        else if (f == F_QKV_BIAS) c->qkv_bias = yes;
        else c->tie = yes;
        break;
    }
    case F_KV_HEADS:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->kv_heads = (int32_t)v;
        break;
    case F_ROPE_THETA: {
        double x = NAN;
        if (!aw_parse_decimal(value, &x) || !(x > 1.0 && x <= 1e9))
            return aw_fail(AW_ERR_ARG, "ropeTheta must be a number in (1, 1e9], got %.40s", value);
        c->rope_theta = (float)x;
        break;
    }
    case F_NORM: st = parse_name(key, value, AW_NORM_NAMES, 2, &c->norm); break;
    case F_ARCH: st = parse_name(key, value, AW_ARCH_NAMES, AW_ARCH_COUNT, &c->arch); break;
    }
    if (!st) b->given |= 1u << f;
    return st;
}

// layerForms into c (c->layer_forms, layer_form, layer_attn; form and attn become layer 0's): its
// length is layers, every entry names its form, each entry's options are its form's; the model's
// attention and attentionOptions are refused beside it. Nothing to do without layerForms.
static int set_layer_forms(const aw_config_builder *b, aw_model_config *c) {
    const int given = (b->given & (1u << F_LAYER_FORMS)) != 0;
    for (size_t j = 0; j < b->n_pending; j++)
        if (b->pending[j].layer >= (given ? b->n_layer_forms : 0))
            return aw_fail(AW_ERR_ARG, "layerForms[%d].attentionOptions.%s is past layerForms' %d entries", b->pending[j].layer,
                           b->pending[j].name, given ? (int)b->n_layer_forms : 0);
    for (int l = given ? b->n_layer_forms : 0; l < AW_MAX_LAYERS; l++)
        if (b->layer_named & (1u << l))
            return aw_fail(AW_ERR_ARG, "layerForms[%d].attention is past layerForms' %d entries", l,
                           given ? (int)b->n_layer_forms : 0);
    if (!given) return AW_OK;
    if (b->given & (1u << F_ATTENTION))
        return aw_fail(AW_ERR_ARG, "attention and layerForms are both given: with layerForms each layer names its own "
                                   "attention; leave the model's attention out");
    for (size_t j = 0; j < b->n_pending; j++)
        if (b->pending[j].layer < 0)
            return aw_fail(AW_ERR_ARG, "attentionOptions and layerForms are both given: with layerForms each layer "
                                       "gives its own attentionOptions; leave the model's attentionOptions out");
    if (b->n_layer_forms != c->layers)
        return aw_fail(AW_ERR_ARG, "layerForms has %d entries and layers is %d: give one entry per layer",
                       (int)b->n_layer_forms, (int)c->layers);
    c->layer_forms = 1;
    for (int l = 0; l < c->layers; l++) {
        if (!(b->layer_named & (1u << l))) {
            char what[48];
            snprintf(what, sizeof what, "layerForms[%d].attention", l);
            return refuse_form(what, NULL);
        }
        const aw_form *form = aw_form_at((size_t)b->layer_form[l]);
        aw_form_values *v = &c->layer_attn[l];
        memset(v, 0, sizeof *v);
        c->layer_form[l] = b->layer_form[l];
        int st = AW_OK;
        for (size_t j = 0; j < b->n_pending && !st; j++) {
            if (b->pending[j].layer != l) continue;
            const int i = aw_option_find(form, b->pending[j].name);
            st = i < 0 ? aw_option_refuse(form, b->pending[j].name) : aw_option_set(form, v, (size_t)i, b->pending[j].text);
        }
        if (!st) st = aw_option_finish(form, v, (size_t)c->max_len);
        if (st) return model_layer_error(l, st);
    }
    c->form = c->layer_form[0], c->attn = c->layer_attn[0]; // for readers of one form: layer 0's
    return AW_OK;
}

int config_builder_finish(aw_config_builder *b, aw_model_config *out) {
    aw_model_config c = b->cfg;
    const aw_form *form = aw_form_at((size_t)c.form);
    if (!form) return aw_fail(AW_ERR_ARG, "attention: unknown form %d", (int)c.form);
    // the llama preset: RMSNorm, SwiGLU, rotary positions, no biases, pre-norm, unless given
    if (c.block == AW_BLOCK_LLAMA) {
        if (!(b->given & (1u << F_NORM_TYPE))) c.norm_type = AW_NORMTYPE_RMS;
        if (!(b->given & (1u << F_FFN))) c.ffn = AW_FFN_SWIGLU;
        if (!(b->given & (1u << F_BIAS))) c.no_bias = 1;
        if (!(b->given & (1u << F_POSITIONAL))) c.positional = AW_POS_ROPE;
    }
    // the FFN's width: 4 dModel (ReLU), or as many parameters with SwiGLU's three matrices: 8/3
    // dModel rounded up to a multiple of 8 (dModel <= 4096, so at most 16384)
    if (!(b->given & (1u << F_D_FF))) c.d_ff = c.ffn == AW_FFN_SWIGLU ? (8 * c.d_model / 3 + 7) / 8 * 8 : 4 * c.d_model;
    if (!(b->given & (1u << F_KV_HEADS))) c.kv_heads = c.heads;
    // ropeTheta is the rotary positions' base: with other positions it would be kept and never read
    if ((b->given & (1u << F_ROPE_THETA)) && !AW_POSITIONALS[c.positional].rotate_qk)
        return aw_fail(AW_ERR_ARG, "ropeTheta applies to positional \"rope\" only, and this model's positions are "
                                   "\"%s\"; leave ropeTheta out or set positional: \"rope\"",
                       AW_POSITIONALS[c.positional].name);
    // grouped-query attention shares key and value heads between query heads; a form that reads no
    // keys would only shrink its value projection, which is no scheme of any paper: refused
    if (c.kv_heads != c.heads && !(form->flags & AW_FORM_USES_QK) && !(b->given & (1u << F_LAYER_FORMS)))
        return aw_fail(AW_ERR_ARG, "kvHeads (%d) applies to forms that read queries and keys (grouped-query "
                                   "attention shares K/V heads between query heads); attention \"%s\" reads no keys: "
                                   "leave kvHeads out", (int)c.kv_heads, form->name);
    if (c.rope_theta == 0.0f) c.rope_theta = 10000.0f;
    if (c.norm_eps == 0.0f) c.norm_eps = 1e-5f;
    // ropeScaling (Llama 3.1's): all four fields or none, on rotary positions only
    const unsigned scaling = b->given & (15u << F_ROPE_FACTOR);
    if (scaling && scaling != (15u << F_ROPE_FACTOR))
        return aw_fail(AW_ERR_ARG, "ropeScaling needs factor, lowFreqFactor, highFreqFactor and originalMaxLen together "
                                   "(Llama 3.1's \"llama3\" scaling)");
    if (scaling && !AW_POSITIONALS[c.positional].rotate_qk)
        return aw_fail(AW_ERR_ARG, "ropeScaling applies to positional \"rope\" only, and this model's positions are \"%s\"",
                       AW_POSITIONALS[c.positional].name);
    if (scaling && !(c.rope_high_freq > c.rope_low_freq))
        return aw_fail(AW_ERR_ARG, "ropeScaling.highFreqFactor (%g) must be greater than lowFreqFactor (%g)",
                       (double)c.rope_high_freq, (double)c.rope_low_freq);
    // headDim: the heads' width, when it is not dModel / heads (Qwen3-0.6B's); the usual width is
    // kept as 0 (model_check_config says where another applies)
    if (c.head_dim && c.d_model % c.heads == 0 && c.head_dim == c.d_model / c.heads) c.head_dim = 0;
    if (c.qkv_bias && !c.no_bias)
        return aw_fail(AW_ERR_ARG, "qkvBias keeps q, k and v's biases in a model without biases (bias: false); this "
                                   "model has every bias already: leave qkvBias out");
    // the GRU archs have one layer each: the default (2) becomes 1, a given layers must be 1
    if (aw_arch_is_rnn(c.arch) && !(b->given & (1u << F_LAYERS))) c.layers = 1;
    // the GRU archs read vocab, dModel, maxLen, seed and layers (= 1) only: a transformer option
    // given with them would be silently ignored, so it is a mistake (defaults are fine)
    if (aw_arch_is_rnn(c.arch)) {
        for (int f = 0; f < F_COUNT; f++)
            if ((b->given & (1u << f)) && f != F_VOCAB && f != F_D_MODEL && f != F_LAYERS && f != F_MAX_LEN &&
                f != F_ARCH && f != F_SEED)
                return aw_fail(AW_ERR_ARG, "%s does not apply to arch \"%s\" (a GRU baseline reads vocab, dModel, "
                                           "maxLen, seed and layers = 1 only); leave it out",
                               KEYS[f], AW_ARCH_NAMES[c.arch]);
        if (b->n_pending)
            return aw_fail(AW_ERR_ARG, "%s%s does not apply to arch \"%s\" (a GRU baseline reads vocab, dModel, "
                                       "maxLen, seed and layers = 1 only); leave it out",
                           OPTION_PREFIX, b->pending[0].name, AW_ARCH_NAMES[c.arch]);
    }
    memset(&c.attn, 0, sizeof c.attn);
    int st = set_layer_forms(b, &c);
    if (st) return st;
    for (size_t j = 0; j < b->n_pending && !c.layer_forms; j++) { // an option the form does not read is a mistake, not a no-op
        const int i = aw_option_find(form, b->pending[j].name);
        if (i < 0) return aw_option_refuse(form, b->pending[j].name);
        const int st = aw_option_set(form, &c.attn, (size_t)i, b->pending[j].text);
        if (st) return st;
    }
    if (!c.layer_forms) st = aw_option_finish(form, &c.attn, (size_t)c.max_len);
    if (!st) st = model_check_config(&c);
    if (st) return st;
    *out = c;
    return AW_OK;
}

// x as the shortest %g text that reads back as the same float (1e-06, not 9.99999997e-07).
static const char *float_text(float x, char *buf, size_t cap) {
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, cap, "%.*g", digits, (double)x);
        if ((float)strtod(buf, NULL) == x) break;
    }
    return buf;
}

#define PUT(...) (len += (size_t)snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, __VA_ARGS__))

size_t config_json(const aw_model_config *c, char *buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    const aw_form *form = aw_form_at((size_t)c->form);
    PUT("{\"vocab\":%d,\"dModel\":%d,\"heads\":%d,\"layers\":%d,\"dFF\":%d,\"maxLen\":%d", (int)c->vocab,
        (int)c->d_model, (int)c->heads, (int)c->layers, (int)c->d_ff, (int)c->max_len);
    // layerForms in place of attention and attentionOptions (createModel refuses them together):
    // every layer's form and the options it reads
    if (c->layer_forms) {
        PUT(",\"layerForms\":[");
        for (int l = 0; l < c->layers; l++) {
            const aw_form_values *v;
            const aw_form *f = model_layer_form(c, l, &v);
            char opts[1024];
            aw_option_json(f, v, opts, sizeof opts);
            PUT("%s{\"attention\":\"%s\"", l ? "," : "", f->name);
            if (opts[0]) PUT(",\"attentionOptions\":{%s}", opts + 1);
            PUT("}");
        }
        PUT("]");
    } else PUT(",\"attention\":\"%s\"", form->name);
    PUT(",\"positional\":\"%s\",\"norm\":\"%s\",\"arch\":\"%s\",\"seed\":%u", AW_POSITIONALS[c->positional].name,
        AW_NORM_NAMES[c->norm], AW_ARCH_NAMES[c->arch], (unsigned)c->seed);
    if (!aw_arch_is_rnn(c->arch))
        PUT(",\"block\":\"%s\",\"normType\":\"%s\",\"ffn\":\"%s\",\"bias\":%s,\"tieEmbeddings\":%s,\"kvHeads\":%d",
            AW_BLOCK_NAMES[c->block], AW_NORM_TYPE_NAMES[c->norm_type], AW_FFN_NAMES[c->ffn],
            c->no_bias ? "false" : "true", c->tie ? "true" : "false", (int)(c->kv_heads ? c->kv_heads : c->heads));
    if (!aw_arch_is_rnn(c->arch) && c->qkv_bias) PUT(",\"qkvBias\":true");
    if (!aw_arch_is_rnn(c->arch) && c->head_dim) PUT(",\"headDim\":%d", (int)c->head_dim);
    char f1[24], f2[24], f3[24];
    if (!aw_arch_is_rnn(c->arch) && c->norm_eps != 0.0f && c->norm_eps != 1e-5f) PUT(",\"normEps\":%s", float_text(c->norm_eps, f1, sizeof f1));
    if (!aw_arch_is_rnn(c->arch) && c->rope_factor > 0.0f)
        PUT(",\"ropeScaling\":{\"factor\":%s,\"lowFreqFactor\":%s,\"highFreqFactor\":%s,\"originalMaxLen\":%d}",
            float_text(c->rope_factor, f1, sizeof f1), float_text(c->rope_low_freq, f2, sizeof f2),
            float_text(c->rope_high_freq, f3, sizeof f3), (int)c->rope_original_len);
    // ropeTheta only where it is read, so that createModel(model.config) makes the same model
    if (!aw_arch_is_rnn(c->arch) && AW_POSITIONALS[c->positional].rotate_qk)
        PUT(",\"ropeTheta\":%s", float_text(c->rope_theta == 0.0f ? 10000.0f : c->rope_theta, f1, sizeof f1));
    // the options the form reads, in the order of its list
    if (!aw_arch_is_rnn(c->arch) && !c->layer_forms && form->n_options) {
        char opts[1024];
        aw_option_json(form, &c->attn, opts, sizeof opts);
        if (opts[0]) PUT(",\"attentionOptions\":{%s}", opts + 1);
    }
    PUT("}");
    return len;
}
