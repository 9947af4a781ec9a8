// form_options.c: the options a form declares (forms.h), parsed, checked and written by their
// list alone. No form's name and no option's name appear here.
#include "forms.h"
#include "json.h"

#include "../kernels/status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int aw_option_find(const aw_form *form, const char *name) {
    for (size_t i = 0; name && i < form->n_options; i++)
        if (strcmp(form->options[i].name, name) == 0) return (int)i;
    return -1;
}

int aw_parse_decimal(const char *text, double *out) {
    const char *p = text;
    if (*p == '-') p++;
    const char *digits = p;
    while (*p >= '0' && *p <= '9') p++;
    int any = p > digits;
    if (*p == '.') {
        const char *frac = ++p;
        while (*p >= '0' && *p <= '9') p++;
        any |= p > frac;
    }
    if (!any) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        const char *exp = p;
        while (*p >= '0' && *p <= '9') p++;
        if (p == exp) return 0;
    }
    if (*p) return 0;
    errno = 0;
    char *end;
    const double x = strtod(text, &end);
    if (*end || errno || !isfinite(x)) return 0;
    *out = x;
    return 1;
}

static int word_index(const char *const *words, const char *text, size_t len) {
    for (int i = 0; words && words[i]; i++)
        if (strlen(words[i]) == len && strncmp(words[i], text, len) == 0) return i;
    return -1;
}

static void word_list(const char *const *words, char *buf, size_t cap) {
    buf[0] = '\0';
    for (int i = 0; words && words[i]; i++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s\"%s\"", i ? ", " : "", words[i]);
}

// Parses text for option o into out (canonical text); AW_ERR_ARG naming the option.
static int parse(const aw_form_option *o, const char *text, char out[AW_OPTION_TEXT]) {
    char list[200];
    switch (o->kind) {
    case AW_OPTION_INT: {
        double x = NAN;
        if (!aw_parse_decimal(text, &x) || !(x >= o->lo && x <= o->hi) || x != floor(x))
            return aw_fail(AW_ERR_ARG, "attentionOptions.%s must be an integer in [%.0f, %.0f], got %.40s", o->name,
                           o->lo, o->hi, text);
        snprintf(out, AW_OPTION_TEXT, "%.0f", x);
        return AW_OK;
    }
    case AW_OPTION_BOOL:
        if (strcmp(text, "true") && strcmp(text, "false"))
            return aw_fail(AW_ERR_ARG, "attentionOptions.%s must be true or false, got %.40s", o->name, text);
        snprintf(out, AW_OPTION_TEXT, "%s", text);
        return AW_OK;
    case AW_OPTION_CHOICE: {
        if (word_index(o->words, text, strlen(text)) >= 0) return snprintf(out, AW_OPTION_TEXT, "%s", text), AW_OK;
        double x = NAN;
        if (o->lo < o->hi && aw_parse_decimal(text, &x) && x > o->lo && x < o->hi)
            return snprintf(out, AW_OPTION_TEXT, "%.9g", x), AW_OK;
        word_list(o->words, list, sizeof list);
        if (o->lo < o->hi)
            return aw_fail(AW_ERR_ARG, "attentionOptions.%s must be %s or a number in (%g, %g), got %.40s", o->name,
                           list, o->lo, o->hi, text);
        return aw_fail(AW_ERR_ARG, "attentionOptions.%s must be one of %s, got %.40s", o->name, list, text);
    }
    case AW_OPTION_LIST: {
        int seen[AW_OPTION_MAX_ITEMS];
        size_t n = 0, len = 0;
        word_list(o->words, list, sizeof list);
        for (const char *p = text;;) {
            const char *comma = strchr(p, ',');
            const size_t l = comma ? (size_t)(comma - p) : strlen(p);
            const int w = word_index(o->words, p, l);
            if (w < 0)
                return aw_fail(AW_ERR_ARG, "attentionOptions.%s[%zu] must be one of %s, got \"%.*s\"", o->name, n,
                               list, (int)(l < 40 ? l : 40), p);
            for (size_t j = 0; j < n; j++)
                if (seen[j] == w)
                    return aw_fail(AW_ERR_ARG, "attentionOptions.%s must be distinct, got \"%s\" twice", o->name,
                                   o->words[w]);
            if (n == AW_OPTION_MAX_ITEMS || len + l + 2 > AW_OPTION_TEXT)
                return aw_fail(AW_ERR_ARG, "attentionOptions.%s must list 1 to %d items", o->name, AW_OPTION_MAX_ITEMS);
            seen[n++] = w;
            len += (size_t)snprintf(out + len, AW_OPTION_TEXT - len, "%s%s", len ? "," : "", o->words[w]);
            if (!comma) break;
            p = comma + 1;
        }
        return AW_OK;
    }
    }
    return aw_fail(AW_ERR_ARG, "attentionOptions.%s: unknown kind %d", o->name, o->kind);
}

int aw_option_set(const aw_form *form, aw_form_values *v, size_t i, const char *text) {
    if (i >= form->n_options) return aw_fail(AW_ERR_ARG, "attention \"%s\" has no option %zu", form->name, i);
    char canon[AW_OPTION_TEXT];
    const int st = parse(&form->options[i], text, canon);
    if (st) return st;
    memcpy(v->text[i], canon, AW_OPTION_TEXT);
    v->given |= 1u << i;
    return AW_OK;
}

void aw_option_defaults(const aw_form *form, aw_form_values *v) {
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < form->n_options && i < AW_MAX_FORM_OPTIONS; i++)
        if (form->options[i].def) snprintf(v->text[i], AW_OPTION_TEXT, "%s", form->options[i].def);
}

int aw_option_finish(const aw_form *form, aw_form_values *v, size_t max_len) {
    if (form->n_options > AW_MAX_FORM_OPTIONS)
        return aw_fail(AW_ERR_ARG, "attention \"%s\" declares %zu options, more than %d", form->name, form->n_options,
                       AW_MAX_FORM_OPTIONS);
    for (size_t i = 0; i < form->n_options; i++)
        if (!(v->given & (1u << i)) && !v->text[i][0] && form->options[i].def)
            snprintf(v->text[i], AW_OPTION_TEXT, "%s", form->options[i].def);
    for (size_t i = form->n_options; i < AW_MAX_FORM_OPTIONS; i++)
        if (v->text[i][0]) return aw_fail(AW_ERR_ARG, "attention \"%s\" has %zu options, got a value for option %zu",
                                          form->name, form->n_options, i);
    int st = form->finish ? form->finish(form, v, max_len) : AW_OK;
    for (size_t i = 0; i < form->n_options && !st; i++) { // every set value parses to itself
        char canon[AW_OPTION_TEXT];
        if (!v->text[i][0]) continue;
        if (!memchr(v->text[i], '\0', AW_OPTION_TEXT))
            return aw_fail(AW_ERR_ARG, "attentionOptions.%s is not a string", form->options[i].name);
        st = parse(&form->options[i], v->text[i], canon);
        if (!st) memcpy(v->text[i], canon, AW_OPTION_TEXT);
    }
    return st;
}

static const char *value_of(const aw_form *form, const aw_form_values *v, const char *name, const aw_form_option **o) {
    const int i = aw_option_find(form, name);
    *o = i >= 0 ? &form->options[i] : NULL;
    return i >= 0 ? v->text[i] : "";
}

long long aw_option_int(const aw_form *form, const aw_form_values *v, const char *name) {
    const aw_form_option *o;
    const char *t = value_of(form, v, name, &o);
    if (!o || !t[0]) return 0;
    if (o->kind == AW_OPTION_BOOL) return strcmp(t, "true") == 0;
    return strtoll(t, NULL, 10);
}

double aw_option_number(const aw_form *form, const aw_form_values *v, const char *name) {
    const aw_form_option *o;
    const char *t = value_of(form, v, name, &o);
    return o && t[0] ? strtod(t, NULL) : 0.0;
}

int aw_option_word(const aw_form *form, const aw_form_values *v, const char *name) {
    const aw_form_option *o;
    const char *t = value_of(form, v, name, &o);
    return o ? word_index(o->words, t, strlen(t)) : -1;
}

size_t aw_option_list(const aw_form *form, const aw_form_values *v, const char *name, int *items) {
    const aw_form_option *o;
    const char *t = value_of(form, v, name, &o);
    size_t n = 0;
    for (const char *p = t; o && *p && n < AW_OPTION_MAX_ITEMS;) {
        const char *comma = strchr(p, ',');
        const size_t l = comma ? (size_t)(comma - p) : strlen(p);
        if (items) items[n] = word_index(o->words, p, l);
        n++;
        p += l + (comma != NULL);
    }
    return n;
}

int aw_option_is_set(const aw_form *form, const aw_form_values *v, const char *name) {
    const aw_form_option *o;
    return value_of(form, v, name, &o)[0] != '\0';
}

#define PUT(...) (len += (size_t)snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, __VA_ARGS__))

size_t aw_option_json(const aw_form *form, const aw_form_values *v, char *buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    for (size_t i = 0; i < form->n_options; i++) {
        const aw_form_option *o = &form->options[i];
        const char *t = v->text[i];
        if (!t[0]) continue;
        PUT(",\"%s\":", o->name);
        if (o->kind == AW_OPTION_LIST) {
            PUT("[\"");
            for (const char *p = t; *p; p++) {
                if (*p == ',') PUT("\",\"");
                else PUT("%c", *p);
            }
            PUT("\"]");
        } else if (o->kind == AW_OPTION_CHOICE && word_index(o->words, t, strlen(t)) >= 0) PUT("\"%s\"", t);
        else PUT("%s", t);
    }
    return len;
}

// A JSON string (json.h escapes it; NULL: ""), appended at len.
static size_t json_string(const char *s, char *buf, size_t cap, size_t len) {
    PUT("\"");
    len += aw_json_escape(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, s ? s : "");
    PUT("\"");
    return len;
}

int aw_option_refuse(const aw_form *form, const char *name) {
    char owners[300] = "", takes[200] = "";
    for (size_t i = 0; i < aw_form_count_all(); i++)
        if (aw_option_find(aw_form_at(i), name) >= 0)
            snprintf(owners + strlen(owners), sizeof owners - strlen(owners), "%s\"%s\"", owners[0] ? ", " : "",
                     aw_form_at(i)->name);
    if (!owners[0]) return aw_fail(AW_ERR_ARG, "unknown option \"attentionOptions.%.40s\"", name);
    for (size_t o = 0; o < form->n_options; o++)
        snprintf(takes + strlen(takes), sizeof takes - strlen(takes), "%s%s", o ? ", " : "", form->options[o].name);
    return aw_fail(AW_ERR_ARG, "attentionOptions.%.40s does not apply to attention \"%s\" (it is an option of %s); "
                               "\"%s\" takes %s", name, form->name, owners, form->name, takes[0] ? takes : "no options");
}

static const char *const KIND_NAMES[] = {"int", "bool", "choice", "list"};

size_t aw_forms_json(char *buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    PUT("[");
    for (size_t i = 0; i < aw_form_count_all(); i++) {
        const aw_form *f = aw_form_at(i);
        const aw_form_words *w = &f->words;
        PUT("%s{\"name\":", i ? "," : "");
        len = json_string(f->name, buf, cap, len);
        PUT(",\"family\":"), len = json_string(f->family, buf, cap, len);
        PUT(",\"crossForm\":"), len = json_string(f->cross, buf, cap, len);
        PUT(",\"decoderForm\":");
        if (f->decoder) len = json_string(f->decoder, buf, cap, len);
        else PUT("null");
        PUT(",\"whyNotCausal\":");
        if (f->why_not_causal) len = json_string(f->why_not_causal, buf, cap, len);
        else PUT("null");
        PUT(",\"flags\":%u,\"label\":", f->flags), len = json_string(w->label, buf, cap, len);
        PUT(",\"formula\":"), len = json_string(w->formula, buf, cap, len);
        PUT(",\"summary\":"), len = json_string(w->summary, buf, cap, len);
        PUT(",\"cost\":"), len = json_string(w->cost, buf, cap, len);
        PUT(",\"paper\":{\"cite\":"), len = json_string(w->paper, buf, cap, len);
        PUT(",\"url\":"), len = json_string(w->url, buf, cap, len);
        PUT(",\"year\":%d},\"signed\":%s,\"options\":[", w->year, w->signed_scores ? "true" : "false");
        for (size_t o = 0; o < f->n_options; o++) {
            const aw_form_option *op = &f->options[o];
            PUT("%s{\"name\":", o ? "," : ""), len = json_string(op->name, buf, cap, len);
            PUT(",\"kind\":\"%s\"", KIND_NAMES[op->kind]);
            if (op->kind == AW_OPTION_INT) PUT(",\"min\":%.17g,\"max\":%.17g", op->lo, op->hi);
            if (op->kind == AW_OPTION_CHOICE && op->lo < op->hi) PUT(",\"above\":%.17g,\"below\":%.17g", op->lo, op->hi);
            if (op->words) {
                PUT(",\"words\":[");
                for (int k = 0; op->words[k]; k++) {
                    PUT("%s", k ? "," : "");
                    len = json_string(op->words[k], buf, cap, len);
                }
                PUT("]");
            }
            PUT(",\"default\":");
            if (!op->def) PUT("null");
            else if (op->kind == AW_OPTION_LIST) {
                char one[AW_OPTION_TEXT];
                snprintf(one, sizeof one, "%s", op->def);
                PUT("[");
                int first = 1;
                for (char *tok = strtok(one, ","); tok; tok = strtok(NULL, ","), first = 0) {
                    PUT("%s", first ? "" : ",");
                    len = json_string(tok, buf, cap, len);
                }
                PUT("]");
            } else if (op->kind == AW_OPTION_CHOICE) len = json_string(op->def, buf, cap, len);
            else PUT("%s", op->def);
            PUT(",\"key\":"), len = json_string(op->key, buf, cap, len);
            PUT(",\"help\":"), len = json_string(op->help, buf, cap, len);
            PUT("}");
        }
        PUT("]}");
    }
    PUT("]");
    return len;
}
