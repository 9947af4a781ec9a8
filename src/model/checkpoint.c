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
        put(t, ",\"rope_scaling\":\"llama3:%.9g,%.9g,%.9g,%d\"", (double)c->rope_factor, (double)c->rope_low_freq,
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
} parser;

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
            else if (c != '"' && c != '\\' && c != '/') return 0;
        }
        if (n + 1 >= cap) return 0;
        out[n++] = c;
    }
    if (ps->p >= ps->end) return 0;
    ps->p++;
    out[n] = '\0';
    return 1;
}

static int parse_uint(parser *ps, size_t *out) {
    skip_ws(ps);
    size_t v = 0;
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        if (v > (SIZE_MAX - 9) / 10) return 0;
        v = v * 10 + (size_t)(*ps->p++ - '0');
    }
    *out = v;
    return ps->p > start;
}

static int parse_uint_array(parser *ps, size_t *out, size_t cap, size_t *count) {
    if (!expect(ps, '[')) return 0;
    *count = 0;
    if (expect(ps, ']')) return 1;
    do {
        if (*count >= cap || !parse_uint(ps, &out[(*count)++])) return 0;
    } while (expect(ps, ','));
    return expect(ps, ']');
}

static int parse_entry(parser *ps, entry *e) {
    if (!expect(ps, '{')) return 0;
    int got = 0;
    do {
        char key[32];
        size_t n;
        if (!parse_string(ps, key, sizeof key) || !expect(ps, ':')) return 0;
        if (strcmp(key, "dtype") == 0) {
            if (!parse_string(ps, e->dtype, sizeof e->dtype)) return 0;
            got |= 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!parse_uint_array(ps, e->shape, 4, &e->rank)) return 0;
            got |= 2;
        } else if (strcmp(key, "data_offsets") == 0) {
            size_t off[2];
            if (!parse_uint_array(ps, off, 2, &n) || n != 2) return 0;
            e->begin = off[0], e->end = off[1];
            got |= 4;
        } else return 0;
    } while (expect(ps, ','));
    return expect(ps, '}') && got == 7;
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
                if (ps->n_meta >= MAX_META) return 0;
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
            if (ps->n_entries >= MAX_ENTRIES) return 0;
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

static int meta_int(const parser *ps, const char *key, long long lo, long long hi, long long *out) {
    const char *v = meta(ps, key);
    if (!v || !*v) return 0;
    char *end;
    const long long x = strtoll(v, &end, 10);
    if (*end || x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

static int meta_enum(const parser *ps, const char *key, const char *const *names, int count, int32_t *out) {
    const char *v = meta(ps, key);
    const int i = v ? name_index(names, count, v) : -1;
    if (i < 0) return 0;
    *out = i;
    return 1;
}

// A form's options from the metadata keys "<prefix><key>" into v, finished; 0 when one is bad. An
// option missing or "" (or "0" for an integer that starts at 1, as version-2 files of the first
// release wrote an option that did not apply) is unset; booleans are 1 and 0.
static int options_from_meta(const parser *ps, const char *prefix, const aw_form *form, aw_form_values *v, size_t max_len) {
    for (size_t i = 0; i < form->n_options; i++) {
        const aw_form_option *o = &form->options[i];
        char key[40];
        snprintf(key, sizeof key, "%s%s", prefix, o->key);
        const char *text = meta(ps, key);
        if (!text || !text[0] || (o->kind == AW_OPTION_INT && o->lo >= 1 && strcmp(text, "0") == 0)) continue;
        if (o->kind == AW_OPTION_BOOL) text = strcmp(text, "1") == 0 ? "true" : strcmp(text, "0") == 0 ? "false" : "?";
        if (strlen(text) >= AW_OPTION_TEXT) return 0;
        snprintf(v->text[i], AW_OPTION_TEXT, "%s", text);
    }
    return aw_option_finish(form, v, max_len) == AW_OK;
}

static int config_from_meta(const parser *ps, aw_model_config *c, long long *step, int *version) {
    memset(c, 0, sizeof *c);
    long long v[7];
    const char *fmt = meta(ps, "format");
    if (!fmt || strcmp(fmt, "attention-wasm-model") != 0) return 0;
    const char *ver = meta(ps, "version");
    *version = ver && strcmp(ver, "1") == 0 ? 1 : ver && strcmp(ver, "2") == 0 ? 2 : ver && strcmp(ver, "3") == 0 ? 3 : 0;
    if (!*version) return 0;
    if (!meta_int(ps, "vocab", 2, 1 << 20, &v[0]) || !meta_int(ps, "d_model", 1, 4096, &v[1]) ||
        !meta_int(ps, "heads", 1, 4096, &v[2]) || !meta_int(ps, "layers", 1, AW_MAX_LAYERS, &v[3]) ||
        !meta_int(ps, "d_ff", 1, 16384, &v[4]) || !meta_int(ps, "max_len", 2, 4096, &v[5]) ||
        !meta_int(ps, "seed", 0, 4294967295LL, &v[6]) || !meta_int(ps, "step", 0, 2147483647LL, step))
        return 0;
    c->vocab = (int32_t)v[0], c->d_model = (int32_t)v[1], c->heads = (int32_t)v[2], c->layers = (int32_t)v[3];
    c->d_ff = (int32_t)v[4], c->max_len = (int32_t)v[5], c->seed = (uint32_t)v[6];
    if (!meta(ps, "positional") || !aw_positional_find(meta(ps, "positional"), &c->positional) ||
        !meta_enum(ps, "norm", NORMS, 2, &c->norm) || !meta_enum(ps, "arch", ARCHS, AW_ARCH_COUNT, &c->arch))
        return 0;
    // the block's switches: absent = the 2017 block's
    long long kvh = c->heads, tie = 0, bias = 1;
    if ((meta(ps, "block") && !meta_enum(ps, "block", AW_BLOCK_NAMES, 2, &c->block)) ||
        (meta(ps, "norm_type") && !meta_enum(ps, "norm_type", AW_NORM_TYPE_NAMES, 2, &c->norm_type)) ||
        (meta(ps, "ffn") && !meta_enum(ps, "ffn", AW_FFN_NAMES, AW_FFN_COUNT, &c->ffn)) ||
        (meta(ps, "bias") && !meta_int(ps, "bias", 0, 1, &bias)) ||
        (meta(ps, "tie_embeddings") && !meta_int(ps, "tie_embeddings", 0, 1, &tie)) ||
        (meta(ps, "kv_heads") && !meta_int(ps, "kv_heads", 1, 4096, &kvh)))
        return 0;
    c->no_bias = !bias, c->tie = (int32_t)tie, c->kv_heads = (int32_t)kvh;
    long long qkv_bias = 0;
    if (meta(ps, "qkv_bias") && !meta_int(ps, "qkv_bias", 0, 1, &qkv_bias)) return 0;
    c->qkv_bias = (int32_t)qkv_bias;
    long long head_dim = 0;
    if (meta(ps, "head_dim") && !meta_int(ps, "head_dim", 1, 1024, &head_dim)) return 0;
    c->head_dim = (int32_t)head_dim;
    if (meta(ps, "norm_eps")) {
        char *end;
        const double e = strtod(meta(ps, "norm_eps"), &end);
        if (*end || !(e > 0.0 && e <= 0.1)) return 0;
        c->norm_eps = (float)e;
    }
    if (meta(ps, "rope_scaling")) { // "llama3:factor,low,high,original"
        double f, lo, hi;
        int orig, used = 0;
        if (sscanf(meta(ps, "rope_scaling"), "llama3:%lf,%lf,%lf,%d%n", &f, &lo, &hi, &orig, &used) != 4 ||
            meta(ps, "rope_scaling")[used] || !(f >= 1.0 && f <= 1024.0 && lo >= 0.0 && hi > lo && hi <= 1024.0 && orig >= 1))
            return 0;
        c->rope_factor = (float)f, c->rope_low_freq = (float)lo, c->rope_high_freq = (float)hi, c->rope_original_len = orig;
    }
    if (meta(ps, "rope_theta")) {
        char *end;
        const double th = strtod(meta(ps, "rope_theta"), &end);
        if (*end || !(th > 1.0 && th <= 1e9)) return 0;
        c->rope_theta = (float)th;
    }
    // "attention" is a registry name; version-1 files of the first release wrote a form's family
    // there and the rest of its name (after the ':') as "feature" or "synth_variant"
    const char *att = meta(ps, "attention");
    if (!att) return 0;
    const aw_form *form = aw_form_find(att);
    const char *sub = meta(ps, "feature") ? meta(ps, "feature") : meta(ps, "synth_variant");
    for (size_t i = 0; !form && sub && i < aw_form_count_all(); i++) {
        const aw_form *f = aw_form_at(i);
        const char *colon = strchr(f->name, ':');
        if (strcmp(f->family, att) == 0 && colon && strcmp(colon + 1, sub) == 0) form = f;
    }
    if (!form) return 0;
    c->form = aw_form_index(form);
    // the form's options by their keys (checked with the config, in model_create)
    if (!aw_arch_is_rnn(c->arch) && !options_from_meta(ps, "", form, &c->attn, (size_t)c->max_len)) return 0;
    // version 3: every layer's form (model_create checks them as createModel's layerForms)
    if (*version == 3) {
        c->layer_forms = 1;
        for (int l = 0; l < c->layers; l++) {
            char key[40];
            snprintf(key, sizeof key, "layer.%d.attention", l);
            const aw_form *f = meta(ps, key) ? aw_form_find(meta(ps, key)) : NULL;
            if (!f) return 0;
            c->layer_form[l] = aw_form_index(f);
            snprintf(key, sizeof key, "layer.%d.", l);
            if (!options_from_meta(ps, key, f, &c->layer_attn[l], (size_t)c->max_len)) return 0;
        }
        c->form = c->layer_form[0], c->attn = c->layer_attn[0]; // as createModel keeps them: layer 0's
    }
    return 1;
}

int checkpoint_read(aw_model **out, const uint8_t *buf, size_t len) { return checkpoint_read_ex(out, buf, len, 0); }

int checkpoint_read_ex(aw_model **out, const uint8_t *buf, size_t len, int inference) {
    *out = NULL;
    if (len < 8) return aw_fail(AW_ERR_FORMAT, "the bytes are not an attention-wasm model checkpoint: %zu bytes", len);
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)buf[i] << (8 * i);
    if (hlen < 2 || hlen > len - 8)
        return aw_fail(AW_ERR_FORMAT, "the bytes are not an attention-wasm model checkpoint (safetensors): a header "
                                      "of %llu bytes does not fit in %zu", (unsigned long long)hlen, len);
    parser ps = {(const char *)buf + 8, (const char *)buf + 8 + hlen, {{{0}, {0}}}, 0, NULL, 0, {0}};
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
                 : aw_fail(AW_ERR_FORMAT, "not a safetensors checkpoint: its JSON header does not parse");
        goto fail;
    }
    if (!config_from_meta(&ps, &cfg, &step, &version)) {
        st = aw_fail(AW_ERR_FORMAT, "the checkpoint's __metadata__ is not an attention-wasm model config (version 1 or 2)");
        goto fail;
    }
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
    const int optim = optimizer && strcmp(optimizer, "adamw") == 0;
    if (ps.n_entries != m->n_tensors * (optim ? 3 : 1)) {
        st = aw_fail(AW_ERR_FORMAT, "the checkpoint has %zu tensors; its config makes a model of %zu%s", ps.n_entries,
                     m->n_tensors, optim ? " (times 3 with the optimizer state)" : "");
        goto fail;
    }
    const uint8_t *data = buf + 8 + hlen;
    const size_t data_len = len - 8 - (size_t)hlen;
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
            if (!e) shape_ok = 0;
            else if (version == 1) shape_ok = ti->cols ? e->rank == 2 && e->shape[0] == ti->rows && e->shape[1] == ti->cols
                                                       : e->rank == 1 && e->shape[0] == ti->rows;
            else {
                shape_ok = e->rank == (size_t)ti->rank;
                for (int d = 0; shape_ok && d < ti->rank; d++) shape_ok = e->shape[d] == ti->dims[d];
            }
            if (!shape_ok || strcmp(e->dtype, "F32") != 0 || e->end < e->begin || e->end > data_len ||
                e->end - e->begin != bytes) {
                st = aw_fail(AW_ERR_FORMAT, "tensor \"%s\" is missing or has the wrong dtype, shape or offsets", name);
                goto fail;
            }
            float *dst = blocks[block] + ti->offset;
            const uint8_t *src = data + e->begin;
            if (version == 1 || !ti->transposed) memcpy(dst, src, bytes);
            else // stored (out, in) = (cols, rows): back to (rows, cols)
                for (size_t r = 0; r < ti->rows; r++)
                    for (size_t c = 0; c < ti->cols; c++) memcpy(&dst[r * ti->cols + c], src + (c * ti->rows + r) * sizeof(float), sizeof(float));
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
