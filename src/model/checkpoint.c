// checkpoint.c: safetensors write and read (see checkpoint.h), with a small JSON reader that
// accepts what the header format needs: objects, strings, integer arrays.
#include "checkpoint.h"
#include "config.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NORMS AW_NORM_NAMES
#define ARCHS AW_ARCH_NAMES

// ---- writing ----------------------------------------------------------------------------------

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void put(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            return;
        }
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        const size_t cap = (t->cap + (size_t)n + 256) * 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->oom = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
}

// The three blocks a checkpoint can hold, in file order: the parameters, then (with the
// optimizer state) AdamW's first and second moments under "optim.m.<name>" and "optim.v.<name>".
static const char *const BLOCK_PREFIX[3] = {"", "optim.m.", "optim.v."};

static const float *block_data(const aw_model *m, int block) {
    return block == 0 ? m->params : block == 1 ? m->adam_m : m->adam_v;
}

// A form's set options as metadata: ,"<prefix><key>":"<text>" each (booleans as 1 and 0).
static void put_options(text *t, const char *prefix, const aw_form *form, const aw_form_values *v) {
    for (size_t i = 0; i < form->n_options; i++) {
        const char *s = v->text[i];
        if (!s[0]) continue;
        if (form->options[i].kind == AW_OPTION_BOOL) s = strcmp(s, "true") == 0 ? "1" : "0";
        put(t, ",\"%s%s\":\"%s\"", prefix, form->options[i].key, s);
    }
}

// The JSON header, unpadded. Caller frees t->s.
static int build_header(const aw_model *m, int optim, text *t) {
    const aw_model_config *c = &m->cfg;
    memset(t, 0, sizeof *t);
    // version 3: layerForms (each layer's form under layer.<l>.*), which version-2 readers would
    // load as one form everywhere; every other model stays version 2
    put(t, "{\"__metadata__\":{\"format\":\"attention-wasm-model\",\"version\":\"%d\"", c->layer_forms ? 3 : 2);
    put(t, ",\"vocab\":\"%d\",\"d_model\":\"%d\",\"heads\":\"%d\",\"layers\":\"%d\",\"d_ff\":\"%d\",\"max_len\":\"%d\"",
        (int)c->vocab, (int)c->d_model, (int)c->heads, (int)c->layers, (int)c->d_ff, (int)c->max_len);
    const aw_form *form = aw_form_at((size_t)c->form);
    put(t, ",\"attention\":\"%s\",\"positional\":\"%s\",\"norm\":\"%s\",\"arch\":\"%s\",\"seed\":\"%u\",\"step\":\"%ld\"",
        form->name, AW_POSITIONALS[c->positional].name, NORMS[c->norm], ARCHS[c->arch], (unsigned)c->seed, m->step);
    // the block's switches, where they differ from the 2017 block (older readers see none)
    if (c->block) put(t, ",\"block\":\"%s\"", AW_BLOCK_NAMES[c->block]);
    if (c->norm_type) put(t, ",\"norm_type\":\"%s\"", AW_NORM_TYPE_NAMES[c->norm_type]);
    if (c->ffn) put(t, ",\"ffn\":\"%s\"", AW_FFN_NAMES[c->ffn]);
    if (c->no_bias) put(t, ",\"bias\":\"0\"");
    if (c->tie) put(t, ",\"tie_embeddings\":\"1\"");
    if (c->kv_heads != c->heads) put(t, ",\"kv_heads\":\"%d\"", (int)c->kv_heads);
    if (AW_POSITIONALS[c->positional].rotate_qk) put(t, ",\"rope_theta\":\"%.9g\"", (double)c->rope_theta); // the rotation's base
    // Hugging Face's architectures' switches (loadHuggingFace), where they differ from the default
    if (c->norm_eps != 0.0f && c->norm_eps != 1e-5f) put(t, ",\"norm_eps\":\"%.9g\"", (double)c->norm_eps);
    if (c->qkv_bias) put(t, ",\"qkv_bias\":\"1\"");
    if (c->head_dim) put(t, ",\"head_dim\":\"%d\"", (int)c->head_dim);
    if (c->rope_factor > 0.0f)
        put(t, ",\"rope_factor\":\"%.9g\",\"rope_low_freq_factor\":\"%.9g\",\"rope_high_freq_factor\":\"%.9g\","
               "\"rope_original_max_len\":\"%d\"", (double)c->rope_factor, (double)c->rope_low_freq,
            (double)c->rope_high_freq, (int)c->rope_original_len);
    // the form's options under their own keys, as text; an unset one (it does not apply to this
    // form's settings) is left out; booleans as 1 and 0. layerForms: "attention" and its options
    // are layer 0's, and every layer's are under "layer.<l>.attention" and "layer.<l>.<key>"
    if (!aw_arch_is_rnn(c->arch)) put_options(t, "", form, &c->attn);
    for (int l = 0; c->layer_forms && l < c->layers; l++) {
        const aw_form_values *v;
        const aw_form *f = model_layer_form(c, l, &v);
        char prefix[24];
        snprintf(prefix, sizeof prefix, "layer.%d.", l);
        put(t, ",\"%sattention\":\"%s\"", prefix, f->name);
        put_options(t, prefix, f, v);
    }
    // with the optimizer state, training resumes exactly: the moments, and where the model's own
    // training-batch stream stands
    if (optim) put(t, ",\"optimizer\":\"adamw\",\"data_rng\":\"%llu\"", (unsigned long long)m->data_rng.state);
    put(t, "}");
    size_t off = 0;
    for (int block = 0; block < (optim ? 3 : 1); block++)
        for (size_t i = 0; i < m->n_tensors; i++) {
            const aw_tensor_info *ti = &m->tensors[i];
            const size_t bytes = model_tensor_size(ti) * sizeof(float);
            put(t, ",\"%s%s\":{\"dtype\":\"F32\",\"shape\":[", BLOCK_PREFIX[block], ti->name);
            for (int d = 0; d < ti->rank; d++) put(t, "%s%zu", d ? "," : "", ti->dims[d]);
            put(t, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
            off += bytes;
        }
    put(t, "}");
    return t->oom ? aw_fail(AW_ERR_NOMEM, "out of memory for the checkpoint header") : AW_OK;
}

static size_t data_bytes(const aw_model *m, int optim) {
    return aw_size_mul3(m->n_params, sizeof(float), optim ? 3 : 1);
}

// The first value of a block (0 params, 1 AdamW m, 2 AdamW v) that cannot be in a checkpoint: NaN
// or Infinity anywhere, and a negative second moment (sqrt(v) of one is NaN at the next step).
// Returns its index, or m->n_params when there is none.
static size_t first_bad(const aw_model *m, const float *x, int block) {
    for (size_t i = 0; i < m->n_params; i++)
        if (!isfinite(x[i]) || (block == 2 && x[i] < 0.0f)) return i;
    return m->n_params;
}

// A diverged model is refused by save, named by its tensor: its NaN would only come back at load.
static int check_saveable(const aw_model *m, int optim) {
    if (m->quant) return model_refuse_quantized(m, "saving a checkpoint");
    if (optim && m->inference) return model_refuse_inference(m, "saving the optimizer state");
    int st = model_check_params(m);
    if (st) {
        aw_clear_error();
        const size_t bad = aw_find_nonfinite(m->params, m->n_params);
        return aw_fail(AW_ERR_NONFINITE, "the model's parameters hold NaN or Infinity (in %s): a diverged model is not "
                                         "saved; save it before the step that diverged, or create it again",
                       model_tensor_at(m, bad));
    }
    for (int block = 1; optim && block < 3; block++) {
        const size_t bad = first_bad(m, block_data(m, block), block);
        if (bad != m->n_params)
            return aw_fail(AW_ERR_NONFINITE, "the optimizer state %s%s holds %g: a diverged model is not saved",
                           BLOCK_PREFIX[block], model_tensor_at(m, bad), (double)block_data(m, block)[bad]);
    }
    return AW_OK;
}

int checkpoint_size(const aw_model *m, int optim, size_t *bytes) {
    text t;
    int st = check_saveable(m, optim);
    if (st) return st;
    st = build_header(m, optim, &t);
    if (!st) *bytes = aw_size_add(8 + ((t.len + 7) & ~(size_t)7), data_bytes(m, optim));
    free(t.s);
    return st;
}

int checkpoint_write(const aw_model *m, int optim, uint8_t *buf, size_t cap) {
    text t;
    int st = check_saveable(m, optim);
    if (st) return st;
    st = build_header(m, optim, &t);
    if (st) {
        free(t.s);
        return st;
    }
    const size_t hlen = (t.len + 7) & ~(size_t)7;
    if (cap < aw_size_add(8 + hlen, data_bytes(m, optim))) {
        free(t.s);
        return aw_fail(AW_ERR_ARG, "the checkpoint needs more than the %zu bytes given", cap);
    }
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, t.s, t.len);
    memset(buf + 8 + t.len, ' ', hlen - t.len);
    free(t.s);
    // float32 little-endian, the host order of wasm and x86; the buffer may be unaligned, so a
    // transposed tensor goes through memcpy of single floats
    uint8_t *p = buf + 8 + hlen;
    for (int block = 0; block < (optim ? 3 : 1); block++)
        for (size_t i = 0; i < m->n_tensors; i++) {
            const aw_tensor_info *ti = &m->tensors[i];
            const float *src = block_data(m, block) + ti->offset;
            const size_t n = model_tensor_size(ti);
            if (!ti->transposed) memcpy(p, src, n * sizeof(float));
            else
                for (size_t r = 0; r < ti->rows; r++)
                    for (size_t c = 0; c < ti->cols; c++) memcpy(p + (c * ti->rows + r) * sizeof(float), &src[r * ti->cols + c], sizeof(float));
            p += n * sizeof(float);
        }
    return AW_OK;
}

// ---- reading ----------------------------------------------------------------------------------

enum { MAX_META = 48 + AW_MAX_LAYERS * (1 + AW_MAX_FORM_OPTIONS), MAX_ENTRIES = 3 * AW_MAX_TENSORS + 8 };

typedef struct {
    char key[40], value[128];
} meta_kv;

typedef struct {
    char name[48], dtype[8];
    size_t shape[4], rank;
    size_t begin, end;
} entry;

typedef struct {
    const char *p, *end;
    meta_kv meta[MAX_META];
    size_t n_meta;
    entry *entries;
    size_t n_entries;
    char bad_meta[40]; // a __metadata__ key whose value is not a JSON string
    char why[200];     // what in a JSON header that parses is not a safetensors header ("" when unknown)
} parser;

// Records why the header is refused (the first reason wins); returns 0 for the parser's caller.
static int refuse(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(parser *ps, const char *fmt, ...) {
    if (!ps->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->why, sizeof ps->why, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

static int expect(parser *ps, char c) {
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

// A JSON string without \u escapes into out (cap bytes, NUL-terminated); 0 on error or overflow.
static int parse_string(parser *ps, char *out, size_t cap) {
    if (!expect(ps, '"')) return 0;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\\') {
            if (ps->p >= ps->end) return 0;
            c = *ps->p++;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c != '"' && c != '\\' && c != '/')
                return refuse(ps, "a string in the header has the escape \\%c; this reader takes \\n, \\t, \\\", \\\\ and \\/ "
                                  "(names and metadata of this library are plain text)", c);
        }
        if (n + 1 >= cap)
            return refuse(ps, "a string in the header, starting \"%.*s\", is longer than the %zu bytes this reader "
                              "holds for it (tensor names 47, metadata keys 39, values 127)", (int)(n < 24 ? n : 24), out, cap - 1);
        out[n++] = c;
    }
    if (ps->p >= ps->end) return 0;
    ps->p++;
    out[n] = '\0';
    return 1;
}

// A JSON number that is a whole number in [0, SIZE_MAX]; what names it in the reason for a refusal.
static int parse_uint(parser *ps, size_t *out, const char *what) {
    skip_ws(ps);
    size_t v = 0;
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        const size_t d = (size_t)(*ps->p - '0');
        if (v > (SIZE_MAX - d) / 10) break;
        v = v * 10 + d, ps->p++;
    }
    const int digit_left = ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
    const int number_left = ps->p < ps->end && (*ps->p == '-' || *ps->p == '.' || *ps->p == 'e' || *ps->p == 'E');
    if (ps->p == start || digit_left || number_left) {
        const char *q = start;
        while (q < ps->end && q - start < 24 && *q != ',' && *q != ']' && *q != '}') q++;
        return refuse(ps, "%s must be whole numbers in [0, %zu] (byte counts), got %.*s", what, (size_t)SIZE_MAX,
                      (int)(q - start), start);
    }
    *out = v;
    return 1;
}

static int parse_uint_array(parser *ps, size_t *out, size_t cap, size_t *count, const char *what) {
    if (!expect(ps, '[')) return refuse(ps, "%s must be an array of whole numbers", what);
    *count = 0;
    if (expect(ps, ']')) return 1;
    do {
        if (*count >= cap) return refuse(ps, "%s has more than %zu numbers", what, cap);
        if (!parse_uint(ps, &out[(*count)++], what)) return 0;
    } while (expect(ps, ','));
    return expect(ps, ']');
}

static int parse_entry(parser *ps, entry *e) {
    char what[80];
    if (!expect(ps, '{')) return refuse(ps, "tensor \"%s\" must be an object {dtype, shape, data_offsets}", e->name);
    int got = 0;
    do {
        char key[32];
        size_t n;
        if (!parse_string(ps, key, sizeof key) || !expect(ps, ':')) return 0;
        if (strcmp(key, "dtype") == 0) {
            if (!parse_string(ps, e->dtype, sizeof e->dtype)) return 0;
            got |= 1;
        } else if (strcmp(key, "shape") == 0) {
            snprintf(what, sizeof what, "tensor \"%s\"'s shape", e->name);
            if (!parse_uint_array(ps, e->shape, 4, &e->rank, what)) return 0;
            got |= 2;
        } else if (strcmp(key, "data_offsets") == 0) {
            size_t off[2];
            snprintf(what, sizeof what, "tensor \"%s\"'s data_offsets", e->name);
            if (!parse_uint_array(ps, off, 2, &n, what)) return 0;
            if (n != 2) return refuse(ps, "%s must be two numbers [begin, end], got %zu", what, n);
            e->begin = off[0], e->end = off[1];
            got |= 4;
        } else return refuse(ps, "tensor \"%s\" has a field \"%s\"; a tensor has dtype, shape and data_offsets", e->name, key);
    } while (expect(ps, ','));
    if (!expect(ps, '}')) return 0;
    if (got != 7) return refuse(ps, "tensor \"%s\" has no %s", e->name, !(got & 1) ? "dtype" : !(got & 2) ? "shape" : "data_offsets");
    return 1;
}

static int parse_header(parser *ps) {
    if (!expect(ps, '{')) return 0;
    if (expect(ps, '}')) return 1;
    do {
        char key[48];
        if (!parse_string(ps, key, sizeof key) || !expect(ps, ':')) return 0;
        if (strcmp(key, "__metadata__") == 0) {
            if (!expect(ps, '{')) return 0;
            if (expect(ps, '}')) continue;
            do {
                if (ps->n_meta >= MAX_META)
                    return refuse(ps, "__metadata__ has more than %d keys (a model's config has fewer)", MAX_META);
                meta_kv *kv = &ps->meta[ps->n_meta++];
                if (!parse_string(ps, kv->key, sizeof kv->key) || !expect(ps, ':')) return 0;
                skip_ws(ps);
                if (ps->p < ps->end && *ps->p != '"') { // safetensors metadata maps strings to strings
                    memcpy(ps->bad_meta, kv->key, sizeof ps->bad_meta);
                    return 0;
                }
                if (!parse_string(ps, kv->value, sizeof kv->value)) return 0;
            } while (expect(ps, ','));
            if (!expect(ps, '}')) return 0;
        } else {
            if (ps->n_entries >= MAX_ENTRIES) return refuse(ps, "the header lists more than %d tensors", MAX_ENTRIES);
            entry *e = &ps->entries[ps->n_entries++];
            memcpy(e->name, key, sizeof e->name);
            if (!parse_entry(ps, e)) return 0;
        }
    } while (expect(ps, ','));
    return expect(ps, '}');
}

static const char *meta(const parser *ps, const char *key) {
    for (size_t i = 0; i < ps->n_meta; i++)
        if (strcmp(ps->meta[i].key, key) == 0) return ps->meta[i].value;
    return NULL;
}

#define META_BAD "the checkpoint's __metadata__ is not an attention-wasm model config: "

// The metadata read as a config: every field through createModel's own parser (config.c's
// config_builder_set, the forms' option lists), so a file is held to the same bounds and words as
// createModel's options; a value it refuses is refused here with its message after the key. The
// metadata keys and the createModel options they are:
static const struct {
    const char *key, *option;
} META_CONFIG[] = {
    {"vocab", "vocab"},     {"d_model", "dModel"}, {"heads", "heads"},       {"layers", "layers"},
    {"d_ff", "dFF"},        {"max_len", "maxLen"}, {"seed", "seed"},         {"positional", "positional"},
    {"norm", "norm"},       {"arch", "arch"},      {"block", "block"},       {"norm_type", "normType"},
    {"ffn", "ffn"},         {"bias", "bias"},      {"tie_embeddings", "tieEmbeddings"},
    {"kv_heads", "kvHeads"}, {"rope_theta", "ropeTheta"},
    // Hugging Face's architectures' switches (loadHuggingFace)
    {"norm_eps", "normEps"}, {"qkv_bias", "qkvBias"}, {"head_dim", "headDim"},
    {"rope_factor", "ropeScaling.factor"}, {"rope_low_freq_factor", "ropeScaling.lowFreqFactor"},
    {"rope_high_freq_factor", "ropeScaling.highFreqFactor"}, {"rope_original_max_len", "ropeScaling.originalMaxLen"},
};
enum { N_META_CONFIG = sizeof META_CONFIG / sizeof META_CONFIG[0] };
// the fields the GRU archs read (the others are parsed and kept as written: meta_rnn_kept)
static const char *const META_RNN[] = {"vocab", "d_model", "layers", "max_len", "seed", "arch"};
// every file has these (the block's switches default to the 2017 block's, kv_heads to heads)
static const char *const META_REQUIRED[] = {"vocab", "d_model", "heads",      "layers", "d_ff", "max_len", "seed",
                                            "step",  "positional", "norm", "arch",   "attention"};
// the keys that are not config fields; feature and synth_variant are the first release's (meta_form)
static const char *const META_OTHER[] = {"format", "version", "step", "optimizer", "data_rng", "attention"};

#define IN_LIST(list, key) (name_index(list, (int)(sizeof list / sizeof list[0]), key) >= 0)

// A refused value: the message of the parser that refused it (createModel's words), after the
// key and the value as the file has them. Returns AW_ERR_FORMAT.
static int meta_refuse(const char *key, const char *value) {
    char why[400];
    snprintf(why, sizeof why, "%s", aw_error_message());
    aw_clear_error();
    return aw_fail(AW_ERR_FORMAT, META_BAD "\"%s\" is \"%.40s\": %s", key, value, why);
}

// A form's option by its metadata key (its index through *i), or NULL.
static const aw_form_option *option_by_key(const aw_form *f, const char *key, size_t *i) {
    for (size_t j = 0; j < f->n_options; j++)
        if (strcmp(f->options[j].key, key) == 0) return *i = j, &f->options[j];
    return NULL;
}

// The option of any form whose metadata key is key, or NULL.
static const aw_form_option *any_option_by_key(const char *key) {
    size_t i;
    for (size_t f = 0; f < aw_form_count_all(); f++) {
        const aw_form_option *o = option_by_key(aw_form_at(f), key, &i);
        if (o) return o;
    }
    return NULL;
}

// The option of form f stored under metadata key `key` (whole, e.g. "layer.1.window"; bare: the
// part after any "layer.<l>."), as createModel's attentionOptions.<name> in builder field `field`
// (the prefix before "attentionOptions."): checked now by the form's own parser, so that the
// message names the key. legacy (version 1 and 2 files): "" and "0" for an integer that starts at
// 1 are how the first release wrote an option that did not apply: unset.
static int meta_option(aw_config_builder *b, const char *field, const aw_form *f, const char *key, const char *bare,
                       const char *text, int legacy) {
    const char *written = text;
    size_t i;
    const aw_form_option *o = option_by_key(f, bare, &i);
    const aw_form_option *any = o ? o : any_option_by_key(bare);
    if (legacy && any && (!text[0] || (any->kind == AW_OPTION_INT && any->lo >= 1 && strcmp(text, "0") == 0)))
        return AW_OK;
    if (!o) {
        if (!any) {
            aw_clear_error();
            return aw_fail(AW_ERR_FORMAT, META_BAD "it has an unknown key \"%s\" (no form has an "
                                          "option stored as \"%s\")", key, bare);
        }
        aw_option_refuse(f, any->name);
        return meta_refuse(key, text);
    }
    if (o->kind == AW_OPTION_BOOL) { // stored as 1 and 0
        if (strcmp(text, "1") && strcmp(text, "0")) {
            aw_clear_error();
            return aw_fail(AW_ERR_FORMAT, META_BAD "\"%s\" is \"%.40s\": attentionOptions.%s is "
                                          "stored as 1 (true) or 0 (false)", key, text, o->name);
        }
        text = text[0] == '1' ? "true" : "false";
    }
    aw_form_values scratch;
    memset(&scratch, 0, sizeof scratch);
    char option[96];
    snprintf(option, sizeof option, "%sattentionOptions.%s", field, o->name);
    if (aw_option_set(f, &scratch, i, text) || config_builder_set(b, option, text)) return meta_refuse(key, written);
    return AW_OK;
}

// Layer l of a "layer.<l>.<rest>" key (digits as the writer writes them, l < layers), its rest
// through *rest; AW_ERR_FORMAT naming the key otherwise.
static int meta_layer(const char *key, int layers, int *l, const char **rest) {
    const char *p = key + 6; // after "layer."
    long v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 6) v = v * 10 + (*p++ - '0'), digits++;
    if (!digits || *p != '.' || !p[1] || (digits > 1 && key[6] == '0'))
        return aw_fail(AW_ERR_FORMAT, META_BAD "it has an unknown key \"%s\": per-layer keys are "
                                      "layer.<l>.attention and layer.<l>.<option> with l in [0, %d)", key, layers);
    if (v >= layers)
        return aw_fail(AW_ERR_FORMAT, META_BAD "\"%s\" is for layer %ld, and its model has %d "
                                      "layers (layer.0 to layer.%d)", key, v, layers, layers - 1);
    *l = (int)v, *rest = p + 1;
    return AW_OK;
}

// The form that metadata "attention" names; files of the first release (version 1, and version 2
// as its readers took them) wrote a form's family there and the rest of its name (after the ':')
// as "feature" or "synth_variant".
static const aw_form *meta_form(const parser *ps, int version) {
    const char *att = meta(ps, "attention");
    const aw_form *form = aw_form_find(att);
    const char *sub = meta(ps, "feature") ? meta(ps, "feature") : meta(ps, "synth_variant");
    for (size_t i = 0; !form && version < 3 && sub && i < aw_form_count_all(); i++) {
        const aw_form *f = aw_form_at(i);
        const char *colon = strchr(f->name, ':');
        if (strcmp(f->family, att) == 0 && colon && strcmp(colon + 1, sub) == 0) form = f;
    }
    return form;
}

// bias, tie_embeddings and qkv_bias are stored as 1 and 0, createModel's as true and false: *text
// becomes the latter (other keys pass as they are).
static int meta_switch(const char *key, const char *option, const char **text) {
    if (strcmp(key, "bias") != 0 && strcmp(key, "tie_embeddings") != 0 && strcmp(key, "qkv_bias") != 0) return AW_OK;
    if (strcmp(*text, "1") && strcmp(*text, "0"))
        return aw_fail(AW_ERR_FORMAT, META_BAD "\"%s\" is \"%.40s\": %s is stored as 1 (true) or 0 (false)", key, *text,
                       option);
    *text = (*text)[0] == '1' ? "true" : "false";
    return AW_OK;
}

// A GRU checkpoint's fields the GRU does not read (heads, dFF, positional, ...): createModel takes
// none of them with a GRU arch, but a config made in C may hold any, and save writes them; each is
// read by createModel's parser (a scratch builder: the same bounds and words) and kept as written,
// so that the file round-trips.
static int meta_rnn_kept(const parser *ps, const aw_form *form, aw_model_config *c) {
    aw_config_builder b;
    config_builder_init(&b);
    for (size_t k = 0; k < N_META_CONFIG; k++) {
        const char *key = META_CONFIG[k].key, *text = meta(ps, key);
        if (!text || IN_LIST(META_RNN, key)) continue;
        int st = meta_switch(key, META_CONFIG[k].option, &text);
        if (st || config_builder_set(&b, META_CONFIG[k].option, text)) return st ? st : meta_refuse(key, meta(ps, key));
    }
    const aw_model_config *s = &b.cfg;
    c->heads = s->heads, c->d_ff = s->d_ff, c->positional = s->positional, c->norm = s->norm, c->block = s->block;
    c->norm_type = s->norm_type, c->ffn = s->ffn, c->no_bias = s->no_bias, c->tie = s->tie, c->rope_theta = s->rope_theta;
    c->kv_heads = meta(ps, "kv_heads") ? s->kv_heads : c->heads;
    c->form = aw_form_index(form);
    return AW_OK;
}

static int config_from_meta(const parser *ps, aw_model_config *c, long long *step, int *version) {
    memset(c, 0, sizeof *c);
    const char *fmt = meta(ps, "format"), *ver = meta(ps, "version");
    if (!fmt || strcmp(fmt, "attention-wasm-model") != 0)
        return aw_fail(AW_ERR_FORMAT, META_BAD "\"format\" is %s%.40s%s, expected "
                                      "\"attention-wasm-model\": not a model of this library", fmt ? "\"" : "",
                       fmt ? fmt : "missing", fmt ? "\"" : "");
    *version = ver && strcmp(ver, "1") == 0 ? 1 : ver && strcmp(ver, "2") == 0 ? 2 : ver && strcmp(ver, "3") == 0 ? 3 : 0;
    if (!*version)
        return aw_fail(AW_ERR_FORMAT, META_BAD "\"version\" is %s%.40s%s, expected \"1\", \"2\" or "
                                      "\"3\"", ver ? "\"" : "", ver ? ver : "missing", ver ? "\"" : "");
    for (size_t k = 0; k < sizeof META_REQUIRED / sizeof META_REQUIRED[0]; k++)
        if (!meta(ps, META_REQUIRED[k]))
            return aw_fail(AW_ERR_FORMAT, META_BAD "it has no \"%s\" (every version-%d file has it)",
                           META_REQUIRED[k], *version);
    // every key once, and every key known: a config field, one of the others, a form option's key,
    // or (version 3) a layer's
    for (size_t i = 0; i < ps->n_meta; i++) {
        const char *key = ps->meta[i].key;
        for (size_t j = 0; j < i; j++)
            if (strcmp(ps->meta[j].key, key) == 0)
                return aw_fail(AW_ERR_FORMAT, META_BAD "it has \"%s\" twice", key);
        int known = IN_LIST(META_OTHER, key) || any_option_by_key(key) != NULL ||
                    (*version < 3 && (strcmp(key, "feature") == 0 || strcmp(key, "synth_variant") == 0)) ||
                    (*version == 3 && strncmp(key, "layer.", 6) == 0);
        for (size_t k = 0; k < N_META_CONFIG && !known; k++) known = strcmp(META_CONFIG[k].key, key) == 0;
        if (!known)
            return aw_fail(AW_ERR_FORMAT, META_BAD "it has an unknown key \"%s\"%s", key,
                           strncmp(key, "layer.", 6) == 0 ? " (per-layer keys are version 3's)" : "");
    }
    double st_step = NAN;
    if (!aw_parse_decimal(meta(ps, "step"), &st_step) || !(st_step >= 0 && st_step <= 2147483647.0) || st_step != floor(st_step))
        return aw_fail(AW_ERR_FORMAT, META_BAD "\"step\" is \"%.40s\", expected an integer in [0, "
                                      "2147483647] (the training steps taken)", meta(ps, "step"));
    *step = (long long)st_step;

    aw_config_builder b;
    config_builder_init(&b);
    if (config_builder_set(&b, "arch", meta(ps, "arch"))) return meta_refuse("arch", meta(ps, "arch"));
    const int rnn = aw_arch_is_rnn(b.cfg.arch);
    for (size_t k = 0; k < N_META_CONFIG; k++) {
        const char *key = META_CONFIG[k].key, *text = meta(ps, key);
        if (!text || strcmp(key, "arch") == 0 || (rnn && !IN_LIST(META_RNN, key))) continue;
        int st = meta_switch(key, META_CONFIG[k].option, &text);
        if (st || config_builder_set(&b, META_CONFIG[k].option, text)) return st ? st : meta_refuse(key, meta(ps, key));
    }
    // the writer leaves out a switch at the 2017 block's value; block "llama" would default it to
    // its own, so an absent switch is set to what it means
    if (!rnn && (config_builder_set(&b, "normType", meta(ps, "norm_type") ? meta(ps, "norm_type") : "layernorm") ||
                 config_builder_set(&b, "ffn", meta(ps, "ffn") ? meta(ps, "ffn") : "relu") ||
                 (!meta(ps, "bias") && config_builder_set(&b, "bias", "true"))))
        return meta_refuse("block", meta(ps, "block") ? meta(ps, "block") : "classic");
    const aw_form *form = meta_form(ps, *version);
    if (!form) {
        config_builder_set(&b, "attention", meta(ps, "attention")); // createModel's message and list
        return meta_refuse("attention", meta(ps, "attention"));
    }
    if (*version < 3) {
        if (!rnn && config_builder_set(&b, "attention", form->name)) return meta_refuse("attention", meta(ps, "attention"));
        for (size_t i = 0; i < ps->n_meta; i++) {
            const char *key = ps->meta[i].key;
            if (!any_option_by_key(key)) continue;
            int st = meta_option(&b, "", form, key, key, ps->meta[i].value, 1);
            if (st) return st;
        }
    } else {
        // version 3: layers entries of layerForms, each with its options; the top-level attention
        // and options repeat layer 0's (for readers of one form) and must agree with them
        const int layers = b.cfg.layers;
        char field[48], key[48];
        snprintf(field, sizeof field, "%d", layers);
        if (config_builder_set(&b, "layerForms", field)) return meta_refuse("layers", meta(ps, "layers"));
        const aw_form *lf[AW_MAX_LAYERS];
        for (int l = 0; l < layers; l++) {
            snprintf(key, sizeof key, "layer.%d.attention", l);
            const char *name = meta(ps, key);
            if (!name)
                return aw_fail(AW_ERR_FORMAT, META_BAD "it has no \"%s\": a version-3 file names "
                                              "every layer's form (its model has %d layers)", key, layers);
            snprintf(field, sizeof field, "layerForms.%d.attention", l);
            if (config_builder_set(&b, field, name)) return meta_refuse(key, name);
            lf[l] = aw_form_find(name);
        }
        for (size_t i = 0; i < ps->n_meta; i++) {
            const char *k = ps->meta[i].key, *rest = "";
            int l = 0, st;
            if (strncmp(k, "layer.", 6) != 0) continue;
            if ((st = meta_layer(k, layers, &l, &rest))) return st;
            if (strcmp(rest, "attention") == 0) continue;
            snprintf(field, sizeof field, "layerForms.%d.", l);
            if ((st = meta_option(&b, field, lf[l], k, rest, ps->meta[i].value, 0))) return st;
        }
        if (strcmp(meta(ps, "attention"), lf[0]->name))
            return aw_fail(AW_ERR_FORMAT, META_BAD "\"attention\" is \"%.40s\" and "
                                          "\"layer.0.attention\" is \"%s\": in a version-3 file the top-level "
                                          "attention is layer 0's", meta(ps, "attention"), lf[0]->name);
        for (size_t i = 0; i < ps->n_meta; i++) { // a top-level option: layer 0's, with its value
            const char *k = ps->meta[i].key;
            size_t oi;
            if (!any_option_by_key(k)) continue;
            if (!option_by_key(lf[0], k, &oi)) {
                aw_option_refuse(lf[0], any_option_by_key(k)->name);
                return meta_refuse(k, ps->meta[i].value);
            }
        }
        for (size_t o = 0; o < lf[0]->n_options; o++) {
            const char *k = lf[0]->options[o].key, *top = meta(ps, k);
            snprintf(key, sizeof key, "layer.0.%s", k);
            const char *l0 = meta(ps, key);
            if ((top || l0) && (!top || !l0 || strcmp(top, l0)))
                return aw_fail(AW_ERR_FORMAT, META_BAD "\"%s\" is %s%.40s%s and \"%s\" is "
                                              "%s%.40s%s: in a version-3 file the top-level options are layer 0's",
                               k, top ? "\"" : "", top ? top : "missing", top ? "\"" : "", key, l0 ? "\"" : "",
                               l0 ? l0 : "missing", l0 ? "\"" : "");
        }
    }
    if (config_builder_finish(&b, c)) {
        char why[400];
        snprintf(why, sizeof why, "%s", aw_error_message());
        aw_clear_error();
        return aw_fail(AW_ERR_FORMAT, META_BAD "%s", why);
    }
    return rnn ? meta_rnn_kept(ps, form, c) : AW_OK;
}

static int by_begin(const void *a, const void *b) {
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : x->end < y->end ? -1 : x->end > y->end;
}

// The tensors' byte ranges, as the safetensors format has them: each [begin, end) with begin <=
// end, and in order of begin they tile the data exactly: no overlap (two tensors read from the
// same bytes), no gap and nothing after the last.
static int check_ranges(const parser *ps, size_t data_len) {
    const entry **order = malloc((ps->n_entries ? ps->n_entries : 1) * sizeof *order);
    if (!order) return aw_fail(AW_ERR_NOMEM, "out of memory for the checkpoint's %zu tensors", ps->n_entries);
    for (size_t i = 0; i < ps->n_entries; i++) order[i] = &ps->entries[i];
    qsort(order, ps->n_entries, sizeof *order, by_begin);
    int st = AW_OK;
    size_t at = 0;
    for (size_t i = 0; i < ps->n_entries && !st; i++) {
        const entry *e = order[i];
        if (e->end < e->begin)
            st = aw_fail(AW_ERR_FORMAT, "tensor \"%s\"'s data_offsets [%zu, %zu] end before they begin", e->name,
                         e->begin, e->end);
        else if (e->end > data_len)
            st = aw_fail(AW_ERR_FORMAT, "tensor \"%s\"'s data_offsets [%zu, %zu] run past the end of the data (%zu "
                                        "bytes after the header)", e->name, e->begin, e->end, data_len);
        else if (e->begin < at)
            st = aw_fail(AW_ERR_FORMAT, "tensors \"%s\" [%zu, %zu] and \"%s\" [%zu, %zu] overlap: each tensor must "
                                        "have bytes of its own", order[i - 1]->name, order[i - 1]->begin,
                         order[i - 1]->end, e->name, e->begin, e->end);
        else if (e->begin > at)
            st = aw_fail(AW_ERR_FORMAT, "tensor \"%s\" begins at byte %zu, and the bytes before it end at %zu: "
                                        "safetensors data has no gaps", e->name, e->begin, at);
        at = e->end;
    }
    if (!st && at != data_len)
        st = aw_fail(AW_ERR_FORMAT, "the checkpoint has %zu bytes after its last tensor (the tensors end at byte %zu of "
                                    "%zu)", data_len - at, at, data_len);
    free(order);
    return st;
}

int checkpoint_read(aw_model **out, const uint8_t *buf, size_t len) { return checkpoint_read_ex(out, buf, len, 0); }

int checkpoint_read_ex(aw_model **out, const uint8_t *buf, size_t len, int inference) {
    *out = NULL;
    if (len < 8) return aw_fail(AW_ERR_FORMAT, "the bytes are not an attention-wasm model checkpoint: %zu bytes", len);
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)buf[i] << (8 * i);
    // JSON text (a config.json, tokenizer.json or shard index) reads as a length past the end
    if ((hlen < 2 || hlen > len - 8) && buf[0] == '{')
        return aw_fail(AW_ERR_FORMAT, "the bytes are JSON text, not an attention-wasm model checkpoint (safetensors "
                                      "starts with its header's length): a config.json, tokenizer.json or "
                                      "model.safetensors.index.json? lib.sniffModelFile(bytes, size) tells which");
    if (hlen < 2 || hlen > len - 8)
        return aw_fail(AW_ERR_FORMAT, "the bytes are not an attention-wasm model checkpoint (safetensors): a header "
                                      "of %llu bytes does not fit in %zu", (unsigned long long)hlen, len);
    parser ps = {(const char *)buf + 8, (const char *)buf + 8 + hlen, {{{0}, {0}}}, 0, NULL, 0, {0}, {0}};
    ps.entries = malloc(MAX_ENTRIES * sizeof(entry));
    if (!ps.entries) return AW_ERR_NOMEM;
    aw_model_config cfg;
    long long step = 0;
    int st = AW_ERR_FORMAT, version = 0;
    aw_model *m = NULL;
    if (!parse_header(&ps) || (skip_ws(&ps), ps.p != ps.end)) {
        st = ps.bad_meta[0]
                 ? aw_fail(AW_ERR_FORMAT, "the checkpoint's __metadata__ \"%s\" must be a JSON string (safetensors "
                                          "metadata values are strings, e.g. \"version\": \"2\"), got %.20s",
                           ps.bad_meta, ps.p)
                 : ps.why[0] ? aw_fail(AW_ERR_FORMAT, "the checkpoint's safetensors header: %s", ps.why)
                             : aw_fail(AW_ERR_FORMAT, "not a safetensors checkpoint: its JSON header does not parse");
        goto fail;
    }
    aw_clear_error(); // the message is config_from_meta's (the first failure wins)
    if ((st = config_from_meta(&ps, &cfg, &step, &version))) goto fail;
    if ((st = check_ranges(&ps, len - 8 - (size_t)hlen))) goto fail;
    // a small file must not make a huge model: the embedding and output matrices alone need
    // 2 * vocab * dModel floats (one such matrix when the classifier is tied), the feed-forward layers 2 * dModel * dFF each (the GRU archs have
    // no feed-forward layers and 15 dModel^2 floats of GRU weights)
    const double least = 4.0 * ((cfg.tie ? 1.0 : 2.0) * cfg.vocab * cfg.d_model + (aw_arch_is_rnn(cfg.arch)
                                                                     ? 15.0 * cfg.d_model * cfg.d_model
                                                                     : 2.0 * cfg.layers * cfg.d_model * cfg.d_ff));
    if ((double)(len - 8 - (size_t)hlen) < least) {
        st = aw_fail(AW_ERR_FORMAT, "the checkpoint holds %zu bytes of tensors, fewer than its config needs (%.0f)",
                     len - 8 - (size_t)hlen, least);
        goto fail;
    }
    if ((st = model_create_ex(&m, &cfg, inference))) goto fail;
    const char *optimizer = meta(&ps, "optimizer");
    if (optimizer && strcmp(optimizer, "adamw") != 0) {
        st = aw_fail(AW_ERR_FORMAT, "the checkpoint's __metadata__ \"optimizer\" is \"%.40s\", expected \"adamw\" (the "
                                    "only optimizer whose state a checkpoint holds) or no such key", optimizer);
        goto fail;
    }
    const int optim = optimizer != NULL;
    // every tensor of the file is one of the model's (or its AdamW moments), and every one of the
    // model's is in the file: each named
    for (size_t j = 0; j < ps.n_entries; j++) {
        const char *name = ps.entries[j].name;
        int block = 0;
        for (int k = 1; optim && k < 3 && !block; k++)
            if (strncmp(name, BLOCK_PREFIX[k], strlen(BLOCK_PREFIX[k])) == 0) block = k;
        const char *bare = name + strlen(BLOCK_PREFIX[block]);
        size_t i = 0;
        while (i < m->n_tensors && strcmp(m->tensors[i].name, bare) != 0) i++;
        if (i == m->n_tensors) {
            st = aw_fail(AW_ERR_FORMAT, "the checkpoint has a tensor \"%s\" that its config's model does not have "
                                        "(its %zu tensors run from \"%s\" to \"%s\"%s)", name, m->n_tensors,
                         m->tensors[0].name, m->tensors[m->n_tensors - 1].name,
                         optim ? ", each also as optim.m.<name> and optim.v.<name>" : "");
            goto fail;
        }
    }
    for (int block = 0; block < (optim ? 3 : 1); block++)
        for (size_t i = 0; i < m->n_tensors; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", BLOCK_PREFIX[block], m->tensors[i].name);
            size_t j = 0;
            while (j < ps.n_entries && strcmp(ps.entries[j].name, name) != 0) j++;
            if (j == ps.n_entries) {
                st = aw_fail(AW_ERR_FORMAT, "the checkpoint has no tensor \"%s\", which its config's model has%s", name,
                             block ? " (its __metadata__ says it holds the AdamW state)" : "");
                goto fail;
            }
        }
    if (ps.n_entries != m->n_tensors * (optim ? 3 : 1)) { // every name found both ways: one is listed twice
        st = aw_fail(AW_ERR_FORMAT, "the checkpoint lists %zu tensors for its model's %zu%s: a tensor name appears twice",
                     ps.n_entries, m->n_tensors * (optim ? 3 : 1), optim ? " (with the AdamW state)" : "");
        goto fail;
    }
    const uint8_t *data = buf + 8 + hlen;
    float *blocks[3] = {m->params, m->adam_m, m->adam_v};
    for (int block = 0; block < (optim && !m->inference ? 3 : 1); block++) // inference: the parameters only
        for (size_t i = 0; i < m->n_tensors; i++) {
            const aw_tensor_info *ti = &m->tensors[i];
            char name[64];
            snprintf(name, sizeof name, "%s%s", BLOCK_PREFIX[block], ti->name);
            const entry *e = NULL;
            for (size_t j = 0; j < ps.n_entries && !e; j++)
                if (strcmp(ps.entries[j].name, name) == 0) e = &ps.entries[j];
            const size_t n = model_tensor_size(ti), bytes = n * sizeof(float);
            // version 1 (the first release) stored every tensor as this model keeps it: (rows, cols)
            // or a flat vector; version 2 uses the shapes of the table (docs/model.md)
            int shape_ok = 1;
            if (version == 1) shape_ok = ti->cols ? e->rank == 2 && e->shape[0] == ti->rows && e->shape[1] == ti->cols
                                                       : e->rank == 1 && e->shape[0] == ti->rows;
            else {
                shape_ok = e->rank == (size_t)ti->rank;
                for (int d = 0; shape_ok && d < ti->rank; d++) shape_ok = e->shape[d] == ti->dims[d];
            }
            if (!shape_ok || strcmp(e->dtype, "F32") != 0 || e->end - e->begin != bytes) {
                char shape[80] = "";
                for (int d = 0; d < ti->rank; d++) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%zu", d ? ", " : "", ti->dims[d]);
                st = aw_fail(AW_ERR_FORMAT, "tensor \"%s\" is %s with %zu bytes; its model's is F32 of shape [%s] (%zu "
                                            "bytes)%s", name, e->dtype, e->end - e->begin, shape, bytes,
                             !shape_ok ? ": the shape differs" : "");
                goto fail;
            }
            float *dst = blocks[block] + ti->offset;
            const uint8_t *src = data + e->begin;
            if (version == 1 || !ti->transposed) memcpy(dst, src, bytes);
            else // stored (out, in) = (cols, rows): back to (rows, cols)
                for (size_t r = 0; r < ti->rows; r++)
                    for (size_t c = 0; c < ti->cols; c++) memcpy(&dst[r * ti->cols + c], src + (c * ti->rows + r) * sizeof(float), sizeof(float));
        }
    { // a file's NaN or Infinity is the file's fault: named here, not met as "diverged" at the first forward
        const size_t bad = aw_find_nonfinite(m->params, m->n_params);
        if (bad != m->n_params) {
            st = aw_fail(AW_ERR_FORMAT, "the checkpoint's tensor %s holds %g: a model's parameters must be finite",
                         model_tensor_at(m, bad), (double)m->params[bad]);
            goto fail;
        }
    }
    for (int block = 1; optim && !m->inference && block < 3; block++) { // AdamW's m finite, v finite and >= 0
        const size_t bad = first_bad(m, blocks[block], block);
        if (bad != m->n_params) {
            st = aw_fail(AW_ERR_FORMAT, "the checkpoint's optimizer state %s%s holds %g: AdamW's %s", BLOCK_PREFIX[block],
                         model_tensor_at(m, bad), (double)blocks[block][bad],
                         block == 1 ? "first moments must be finite" : "second moments must be finite and >= 0");
            goto fail;
        }
    }
    if (optim) { // where the model's own batch stream stood
        const char *rng = meta(&ps, "data_rng");
        char *end = NULL;
        const unsigned long long state = rng ? strtoull(rng, &end, 10) : 0;
        if (!rng || !*rng || *end) {
            st = aw_fail(AW_ERR_FORMAT, "the checkpoint has an optimizer state but no data_rng");
            goto fail;
        }
        m->data_rng.state = (uint64_t)state;
    }
    m->step = (long)step;
    free(ps.entries);
    *out = m;
    return AW_OK;
fail:
    model_destroy(m);
    free(ps.entries);
    return st;
}
