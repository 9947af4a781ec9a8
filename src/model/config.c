// config.c: named config fields (see config.h).
#include "config.h"

#include "../kernels/status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const AW_NORM_TYPE_NAMES[2] = {"layernorm", "rmsnorm"};
const char *const AW_FFN_NAMES[2] = {"relu", "swiglu"};
const char *const AW_BLOCK_NAMES[2] = {"classic", "llama"};
const char *const AW_NORM_NAMES[2] = {"pre", "post"};
const char *const AW_ARCH_NAMES[AW_ARCH_COUNT] = {"decoder", "encoder-decoder", "gru", "gru-attention"};

int name_index(const char *const *names, int count, const char *name) {
    for (int i = 0; name && i < count; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

enum { F_VOCAB, F_D_MODEL, F_HEADS, F_LAYERS, F_D_FF, F_MAX_LEN, F_ATTENTION, F_POSITIONAL, F_NORM, F_ARCH, F_SEED,
       F_BLOCK, F_NORM_TYPE, F_FFN, F_BIAS, F_TIE, F_KV_HEADS, F_ROPE_THETA, F_COUNT };
static const char *const KEYS[F_COUNT] = {"vocab", "dModel", "heads", "layers", "dFF", "maxLen", "attention",
                                          "positional", "norm", "arch", "seed", "block", "normType", "ffn", "bias",
                                          "tieEmbeddings", "kvHeads", "ropeTheta"};
static const char OPTION_PREFIX[] = "attentionOptions.";

void config_builder_init(aw_config_builder *b) {
    memset(b, 0, sizeof *b);
    aw_model_config *c = &b->cfg;
    c->vocab = 64, c->d_model = 64, c->heads = 4, c->layers = 2, c->d_ff = 256, c->max_len = 64, c->seed = 1;
    c->form = 0; // the registry's first form (softmax)
}

// An integer in [lo, hi] written in decimal (a whole number such as "1e3" is fine).
static int parse_int(const char *key, const char *text, double lo, double hi, long long *out) {
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno || !(v >= lo && v <= hi) || v != floor(v))
        return aw_fail(AW_ERR_ARG, "%s must be an integer in [%.0f, %.0f], got %.40s", key, lo, hi, text);
    *out = (long long)v;
    return AW_OK;
}

static int parse_name(const char *key, const char *text, const char *const *names, int count, int32_t *out) {
    const int i = name_index(names, count, text);
    if (i >= 0) return *out = i, AW_OK;
    char list[160] = "";
    for (int j = 0; j < count; j++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", j ? ", " : "", names[j]);
    return aw_fail(AW_ERR_ARG, "%s must be one of %s, got \"%.40s\"", key, list, text);
}

int config_builder_set(aw_config_builder *b, const char *key, const char *value) {
    aw_model_config *c = &b->cfg;
    if (strncmp(key, OPTION_PREFIX, sizeof OPTION_PREFIX - 1) == 0) {
        // a form's option: kept as written until finish knows the form (options may come first)
        const char *name = key + sizeof OPTION_PREFIX - 1;
        int known = 0;
        for (size_t i = 0; i < aw_form_count_all() && !known; i++) known = aw_option_find(aw_form_at(i), name) >= 0;
        if (!known) return aw_fail(AW_ERR_ARG, "unknown option \"%.40s\"", key);
        size_t j = 0;
        while (j < b->n_pending && strcmp(b->pending[j].name, name)) j++;
        if (j == AW_MAX_PENDING_OPTIONS) return aw_fail(AW_ERR_ARG, "too many attentionOptions");
        if (strlen(name) >= sizeof b->pending[j].name || strlen(value) >= sizeof b->pending[j].text)
            return aw_fail(AW_ERR_ARG, "%.40s: the value is too long (%zu characters)", key, strlen(value));
        snprintf(b->pending[j].name, sizeof b->pending[j].name, "%s", name);
        snprintf(b->pending[j].text, sizeof b->pending[j].text, "%s", value);
        if (j == b->n_pending) b->n_pending++;
        return AW_OK;
    }
    int f = 0;
    while (f < F_COUNT && strcmp(KEYS[f], key) != 0) f++;
    if (f == F_COUNT) return aw_fail(AW_ERR_ARG, "unknown option \"%.40s\"", key);
    long long v = 0;
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
        if (!form) {
            char list[400] = "";
            for (size_t i = 0; i < aw_form_count_all(); i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "", aw_form_at(i)->name);
            return aw_fail(AW_ERR_ARG, "attention must be one of %s, got \"%.40s\"", list, value);
        }
        c->form = aw_form_index(form);
        break;
    }
    case F_POSITIONAL:
        if (!aw_positional_find(value, &c->positional)) {
            char list[128];
            aw_positional_names(list, sizeof list, 0, 0);
            return aw_fail(AW_ERR_ARG, "%s must be one of %s, got \"%.40s\"", key, list, value);
        }
        break;
    case F_BLOCK: st = parse_name(key, value, AW_BLOCK_NAMES, 2, &c->block); break;
    case F_NORM_TYPE: st = parse_name(key, value, AW_NORM_TYPE_NAMES, 2, &c->norm_type); break;
    case F_FFN: st = parse_name(key, value, AW_FFN_NAMES, 2, &c->ffn); break;
    case F_BIAS:
    case F_TIE: {
        const int yes = strcmp(value, "true") == 0, no = strcmp(value, "false") == 0;
        if (!yes && !no) return aw_fail(AW_ERR_ARG, "%s must be true or false, got %.40s", key, value);
        if (f == F_BIAS) c->no_bias = no;
        else c->tie = yes;
        break;
    }
    case F_KV_HEADS:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->kv_heads = (int32_t)v;
        break;
    case F_ROPE_THETA: {
        char *end;
        const double x = strtod(value, &end);
        if (end == value || *end || !(x > 1.0 && x <= 1e9))
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
    if (c.kv_heads != c.heads && !(form->flags & AW_FORM_USES_QK))
        return aw_fail(AW_ERR_ARG, "kvHeads (%d) applies to forms that read queries and keys (grouped-query "
                                   "attention shares K/V heads between query heads); attention \"%s\" reads no keys: "
                                   "leave kvHeads out", (int)c.kv_heads, form->name);
    if (c.rope_theta == 0.0f) c.rope_theta = 10000.0f;
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
    for (size_t j = 0; j < b->n_pending; j++) { // an option the form does not read is a mistake, not a no-op
        const int i = aw_option_find(form, b->pending[j].name);
        if (i < 0) return aw_option_refuse(form, b->pending[j].name);
        const int st = aw_option_set(form, &c.attn, (size_t)i, b->pending[j].text);
        if (st) return st;
    }
    int st = aw_option_finish(form, &c.attn, (size_t)c.max_len);
    if (!st) st = model_check_config(&c);
    if (st) return st;
    *out = c;
    return AW_OK;
}

#define PUT(...) (len += (size_t)snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, __VA_ARGS__))

size_t config_json(const aw_model_config *c, char *buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    const aw_form *form = aw_form_at((size_t)c->form);
    PUT("{\"vocab\":%d,\"dModel\":%d,\"heads\":%d,\"layers\":%d,\"dFF\":%d,\"maxLen\":%d,\"attention\":\"%s\"",
        (int)c->vocab, (int)c->d_model, (int)c->heads, (int)c->layers, (int)c->d_ff, (int)c->max_len, form->name);
    PUT(",\"positional\":\"%s\",\"norm\":\"%s\",\"arch\":\"%s\",\"seed\":%u", AW_POSITIONALS[c->positional].name,
        AW_NORM_NAMES[c->norm], AW_ARCH_NAMES[c->arch], (unsigned)c->seed);
    if (!aw_arch_is_rnn(c->arch))
        PUT(",\"block\":\"%s\",\"normType\":\"%s\",\"ffn\":\"%s\",\"bias\":%s,\"tieEmbeddings\":%s,\"kvHeads\":%d",
            AW_BLOCK_NAMES[c->block], AW_NORM_TYPE_NAMES[c->norm_type], AW_FFN_NAMES[c->ffn],
            c->no_bias ? "false" : "true", c->tie ? "true" : "false", (int)(c->kv_heads ? c->kv_heads : c->heads));
    // ropeTheta only where it is read, so that createModel(model.config) makes the same model
    if (!aw_arch_is_rnn(c->arch) && AW_POSITIONALS[c->positional].rotate_qk)
        PUT(",\"ropeTheta\":%.9g", c->rope_theta == 0.0f ? 10000.0 : (double)c->rope_theta);
    // the options the form reads, in the order of its list
    if (!aw_arch_is_rnn(c->arch) && form->n_options) {
        char opts[1024];
        aw_option_json(form, &c->attn, opts, sizeof opts);
        if (opts[0]) PUT(",\"attentionOptions\":{%s}", opts + 1);
    }
    PUT("}");
    return len;
}
