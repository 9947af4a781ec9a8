// config.c: named config fields (see config.h).
#include "config.h"

#include "../kernels/status.h"
#include "checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_VOCAB, F_D_MODEL, F_HEADS, F_LAYERS, F_D_FF, F_MAX_LEN, F_ATTENTION, F_POSITIONAL, F_NORM, F_ARCH, F_SEED,
    F_TRAINABLE, F_A, F_B, F_K, F_COMPONENTS, F_WINDOW, F_STRIDE, F_DECAY, F_COUNT
};
static const char *const KEYS[F_COUNT] = {
    "vocab", "dModel", "heads", "layers", "dFF", "maxLen", "attention", "positional", "norm", "arch", "seed",
    "attentionOptions.trainable", "attentionOptions.a", "attentionOptions.b", "attentionOptions.k",
    "attentionOptions.components", "attentionOptions.window", "attentionOptions.stride", "attentionOptions.decay"};
// attentionOptions fields in the order of enum aw_form_option (forms.h)
static const int OPTION_FIELDS[] = {F_TRAINABLE, F_A, F_B, F_K, F_COMPONENTS, F_WINDOW, F_STRIDE, F_DECAY};
// whose option each is, for the message when a form does not read it
static const char *const OPTION_OWNERS[] = {"a \"synth:*\" option", "a \"synth:*\" option", "a \"synth:*\" option",
                                            "the Synthesizer's and Linformer's", "\"synth:mixture\"'s",
                                            "local or strided attention's", "strided attention's", "retention's"};
enum { N_OPTIONS = sizeof OPTION_FIELDS / sizeof OPTION_FIELDS[0] };

void config_builder_init(aw_config_builder *b) {
    memset(b, 0, sizeof *b);
    aw_model_config *c = &b->cfg;
    c->vocab = 64, c->d_model = 64, c->heads = 4, c->layers = 2, c->d_ff = 256, c->max_len = 64, c->seed = 1;
    c->form = aw_form_index(aw_form_find("softmax"));
    c->synth.trainable = 1, c->synth.k = 8;
    c->window = 8, c->stride = 8;
    c->synth.n_components = 2, c->synth.components[0] = AW_SYNTH_RANDOM, c->synth.components[1] = AW_SYNTH_DOT;
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

int config_parse_decay(const char *text, float *decay, int32_t *learned) {
    char *end;
    const double g = strtod(text, &end);
    if (strcmp(text, "retnet") == 0) *decay = 0.0f, *learned = 0;
    else if (strcmp(text, "learned") == 0) *decay = 0.0f, *learned = 1;
    else if (end != text && *end == '\0' && g > 0.0 && g < 1.0) *decay = (float)g, *learned = 0;
    else return 0;
    return 1;
}

int config_builder_set(aw_config_builder *b, const char *key, const char *value) {
    aw_model_config *c = &b->cfg;
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
    case F_A:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->synth.a = (size_t)v;
        break;
    case F_B:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->synth.b = (size_t)v;
        break;
    case F_K:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->synth.k = (size_t)v;
        break;
    case F_STRIDE:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->stride = (int32_t)v;
        break;
    case F_WINDOW:
        if (!(st = parse_int(key, value, 1, 4096, &v))) c->window = (int32_t)v;
        break;
    case F_DECAY:
        if (!config_parse_decay(value, &c->decay, &c->learn_decay))
            return aw_fail(AW_ERR_ARG, "%s must be \"retnet\", \"learned\" or a number in (0, 1), got %.40s", key,
                           value);
        break;
    case F_TRAINABLE:
        if (strcmp(value, "true") && strcmp(value, "false"))
            return aw_fail(AW_ERR_ARG, "%s must be true or false, got %.40s", key, value);
        c->synth.trainable = strcmp(value, "true") == 0;
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
    case F_POSITIONAL: st = parse_name(key, value, AW_POSITIONAL_NAMES, 2, &c->positional); break;
    case F_NORM: st = parse_name(key, value, AW_NORM_NAMES, 2, &c->norm); break;
    case F_ARCH: st = parse_name(key, value, AW_ARCH_NAMES, AW_ARCH_COUNT, &c->arch); break;
    case F_COMPONENTS: {
        // a comma list of component kinds: dense, random, factorized-dense, factorized-random, dot
        size_t n = 0;
        int kinds[AW_SYNTH_MAX_COMPONENTS];
        const char *p = value;
        while (*p) {
            const char *comma = strchr(p, ',');
            const size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char name[32];
            int k = -1;
            if (len < sizeof name) {
                memcpy(name, p, len), name[len] = '\0';
                k = name_index(AW_SYNTH_KIND_NAMES, 6, name);
            }
            if (k < 0 || k == AW_SYNTH_MIXTURE)
                return aw_fail(AW_ERR_ARG, "%s[%zu] must be one of \"dense\", \"random\", \"factorized-dense\", "
                                           "\"factorized-random\", \"dot\"", key, n);
            if (n == AW_SYNTH_MAX_COMPONENTS)
                return aw_fail(AW_ERR_ARG, "%s must list 1 to %d components", key, AW_SYNTH_MAX_COMPONENTS);
            for (size_t j = 0; j < n; j++)
                if (kinds[j] == k) return aw_fail(AW_ERR_ARG, "%s must be distinct, got \"%s\" twice", key, name);
            kinds[n++] = k;
            p += len + (comma != NULL);
        }
        if (n == 0) return aw_fail(AW_ERR_ARG, "%s must list 1 to %d components", key, AW_SYNTH_MAX_COMPONENTS);
        c->synth.n_components = n;
        for (size_t j = 0; j < n; j++) c->synth.components[j] = kinds[j];
        break;
    }
    }
    if (!st) b->given |= 1u << f;
    return st;
}

int config_builder_finish(aw_config_builder *b, aw_model_config *out) {
    aw_model_config c = b->cfg;
    const aw_form *form = aw_form_at((size_t)c.form);
    if (!(b->given & (1u << F_D_FF))) c.d_ff = 4 * c.d_model; // dModel <= 4096, so at most 16384
    // the GRU archs have one layer each: the default (2) becomes 1, a given layers must be 1
    if (aw_arch_is_rnn(c.arch) && !(b->given & (1u << F_LAYERS))) c.layers = 1;
    // the GRU archs read vocab, dModel, maxLen, seed and layers (= 1) only: a transformer option
    // given with them would be silently ignored, so it is a mistake (defaults are fine)
    if (aw_arch_is_rnn(c.arch))
        for (int f = 0; f < F_COUNT; f++)
            if ((b->given & (1u << f)) && f != F_VOCAB && f != F_D_MODEL && f != F_LAYERS && f != F_MAX_LEN &&
                f != F_ARCH && f != F_SEED)
                return aw_fail(AW_ERR_ARG, "%s does not apply to arch \"%s\" (a GRU baseline reads vocab, dModel, "
                                           "maxLen, seed and layers = 1 only); leave it out",
                               KEYS[f], AW_ARCH_NAMES[c.arch]);
    for (int o = 0; o < N_OPTIONS; o++) // an option the form does not read is a mistake, not a no-op
        if ((b->given & (1u << OPTION_FIELDS[o])) && !(form->options & (1u << o)))
            return aw_fail(AW_ERR_ARG, "%s does not apply to attention \"%s\" (it is %s)", KEYS[OPTION_FIELDS[o]],
                           form->name, OPTION_OWNERS[o]);
    if (!(form->options & AW_OPT_WINDOW)) c.window = 0;
    if (!(form->options & AW_OPT_STRIDE)) c.stride = 0;
    if (!(form->options & AW_OPT_DECAY)) c.decay = 0.0f, c.learn_decay = 0;
    const int synth = strcmp(form->family, "synthesizer") == 0;
    if (!synth) c.synth.n_components = 0, c.synth.a = c.synth.b = 0;
    if (!(form->options & AW_OPT_K)) c.synth.k = 0;
    if (synth) {
        c.synth.variant = form->variant;
        const int mixture = form->variant == AW_SYNTH_MIXTURE;
        int fd = form->variant == AW_SYNTH_FACTORIZED_DENSE, fr = form->variant == AW_SYNTH_FACTORIZED_RANDOM;
        for (size_t i = 0; mixture && i < c.synth.n_components; i++)
            fd |= c.synth.components[i] == AW_SYNTH_FACTORIZED_DENSE, fr |= c.synth.components[i] == AW_SYNTH_FACTORIZED_RANDOM;
        if (!mixture && (b->given & (1u << F_COMPONENTS)))
            return aw_fail(AW_ERR_ARG, "attentionOptions.components applies to \"synth:mixture\" only");
        if (!mixture) c.synth.n_components = 0;
        if (fd && !(b->given & ((1u << F_A) | (1u << F_B)))) { // the most square split of maxLen
            size_t a = (size_t)sqrt((double)c.max_len);
            a = a ? a : 1;
            while (a > 1 && c.max_len % a) a--;
            c.synth.a = a, c.synth.b = (size_t)c.max_len / a;
        }
        if (fd && (size_t)c.max_len != c.synth.a * c.synth.b)
            return aw_fail(AW_ERR_ARG, "factorized-dense needs attentionOptions.a * b = maxLen (%d), got %zu * %zu",
                           (int)c.max_len, c.synth.a, c.synth.b);
        if (!fd) c.synth.a = c.synth.b = 0;
        if (!fr) c.synth.k = 0;
    }
    int st = model_check_config(&c);
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
    PUT(",\"positional\":\"%s\",\"norm\":\"%s\",\"arch\":\"%s\",\"seed\":%u", AW_POSITIONAL_NAMES[c->positional],
        AW_NORM_NAMES[c->norm], AW_ARCH_NAMES[c->arch], (unsigned)c->seed);
    // the options the form reads, in the order of enum aw_form_option
    const aw_synthesizer_config *s = &c->synth;
    const unsigned o = form->options;
    const char *sep = ",\"attentionOptions\":{";
#define OPT(...) (PUT("%s", sep), PUT(__VA_ARGS__), sep = ",")
    if (o & AW_OPT_TRAINABLE) OPT("\"trainable\":%s", s->trainable ? "true" : "false");
    if ((o & AW_OPT_A) && s->a) OPT("\"a\":%zu,\"b\":%zu", s->a, s->b);
    if ((o & AW_OPT_K) && s->k) OPT("\"k\":%zu", s->k);
    if ((o & AW_OPT_COMPONENTS) && form->variant == AW_SYNTH_MIXTURE) {
        OPT("\"components\":[");
        for (size_t i = 0; i < s->n_components; i++) PUT("%s\"%s\"", i ? "," : "", AW_SYNTH_KIND_NAMES[s->components[i]]);
        PUT("]");
    }
    if (o & AW_OPT_WINDOW) OPT("\"window\":%d", (int)c->window);
    if (o & AW_OPT_STRIDE) OPT("\"stride\":%d", (int)c->stride);
    if ((o & AW_OPT_DECAY) && c->learn_decay) OPT("\"decay\":\"learned\"");
    else if ((o & AW_OPT_DECAY) && c->decay > 0.0f) OPT("\"decay\":%.9g", (double)c->decay);
    else if (o & AW_OPT_DECAY) OPT("\"decay\":\"retnet\"");
#undef OPT
    if (sep[0] == ',' && sep[1] == '\0') PUT("}");
    PUT("}");
    return len;
}
