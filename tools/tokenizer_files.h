// tokenizer_files.h: the native trainer's tokenizer files (included once, by tools/train.c): the
// byte-level BPE of src/model/bpe.h read from Hugging Face's tokenizer.json or llama2.c's
// tokenizer.bin, and written as tokenizer.json, the same file wasm/bpe.js's toJSON() writes.
// Only the trainer's id layout is read (<unk> <s> </s>, the bytes at 3..258, then one piece per
// merge): the merges are rebuilt from the pieces (aw_bpe_merges_from_pieces), which checks them.
#ifndef AW_TOKENIZER_FILES_H
#define AW_TOKENIZER_FILES_H

#include "../src/model/bpe.h"
#include "../src/model/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *bytes;    // every piece's bytes back to back
    uint32_t *offsets; // (n + 1): piece i is bytes[offsets[i] .. offsets[i + 1])
    size_t n;
    int32_t *merges; // (n - 259, 3): left, right, result
} bpe_vocab;

static void bpe_vocab_free(bpe_vocab *v) {
    free(v->bytes), free(v->offsets), free(v->merges);
    memset(v, 0, sizeof *v);
}

static const char *const SPECIAL_TEXT[3] = {"<unk>", "<s>", "</s>"};

// GPT-2's byte-to-unicode table (as wasm/bpe.js): printable bytes stand for themselves, the
// others become U+0100 onwards in byte order.
static uint32_t byte_char(int b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return (uint32_t)b;
    int extra = 0;
    for (int k = 0; k < b; k++) extra += !((k >= 33 && k <= 126) || (k >= 161 && k <= 172) || (k >= 174 && k <= 255));
    return 256u + (uint32_t)extra;
}

static int char_byte(uint32_t cp) {
    for (int b = 0; b < 256; b++)
        if (byte_char(b) == cp) return b;
    return -1;
}

static int read_all(const char *path, uint8_t **out, size_t *n) {
    FILE *f = fopen(path, "rb");
    long len = -1;
    *out = NULL;
    if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
        !(*out = malloc((size_t)len + 1)) || fread(*out, 1, (size_t)len, f) != (size_t)len) {
        if (f) fclose(f);
        free(*out);
        return 1;
    }
    fclose(f);
    *n = (size_t)len;
    return 0;
}

// Adds a piece (the vocabulary's id order is the caller's).
static int vocab_push(bpe_vocab *v, size_t *cap_bytes, const uint8_t *p, size_t len) {
    const size_t need = v->offsets[v->n] + len;
    if (need > *cap_bytes) {
        size_t c = *cap_bytes ? *cap_bytes * 2 : 4096;
        while (c < need) c *= 2;
        uint8_t *q = realloc(v->bytes, c);
        if (!q) return 1;
        v->bytes = q, *cap_bytes = c;
    }
    memcpy(v->bytes + v->offsets[v->n], p, len);
    v->offsets[v->n + 1] = (uint32_t)need;
    v->n++;
    return 0;
}

// llama2.c's tokenizer.bin: int32 max_token_length, then per piece: float32 score, int32 length, bytes.
static int read_llama2c(bpe_vocab *v, const uint8_t *d, size_t n, char *why, size_t why_len) {
    size_t count = 0, at = 4, cap = 0;
    for (; at + 8 <= n; count++) {
        int32_t len;
        memcpy(&len, d + at + 4, 4);
        if (len < 0 || at + 8 + (size_t)len > n) break;
        at += 8 + (size_t)len;
    }
    if (n < 4 || at != n) return snprintf(why, why_len, "not a llama2.c tokenizer.bin (its pieces do not end at the file's end)"), 1;
    v->offsets = calloc(count + 1, sizeof *v->offsets);
    if (!v->offsets) return snprintf(why, why_len, "out of memory"), 1;
    at = 4;
    for (size_t i = 0; i < count; i++) {
        int32_t len;
        memcpy(&len, d + at + 4, 4);
        const uint8_t *p = i < 3 ? (const uint8_t *)SPECIAL_TEXT[i] : d + at + 8; // the specials as tokenizer.json spells them
        if (vocab_push(v, &cap, p, i < 3 ? strlen(SPECIAL_TEXT[i]) : (size_t)len)) return snprintf(why, why_len, "out of memory"), 1;
        at += 8 + (size_t)len;
    }
    return 0;
}

// One JSON string at d[*at] (after its opening quote) decoded into out (UTF-8); *at ends after the closing quote.
static int json_string(const uint8_t *d, size_t n, size_t *at, uint8_t *out, size_t *len) {
    size_t i = *at, k = 0;
    while (i < n && d[i] != '"') {
        if (d[i] != '\\') {
            out[k++] = d[i++];
            continue;
        }
        if (++i >= n) return 1;
        const uint8_t e = d[i++];
        uint32_t cp;
        if (e == 'u') {
            if (i + 4 > n) return 1;
            char hex[5] = {(char)d[i], (char)d[i + 1], (char)d[i + 2], (char)d[i + 3], 0};
            cp = (uint32_t)strtoul(hex, NULL, 16), i += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= n && d[i] == '\\' && d[i + 1] == 'u') { // a surrogate pair
                char lo[5] = {(char)d[i + 2], (char)d[i + 3], (char)d[i + 4], (char)d[i + 5], 0};
                cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)strtoul(lo, NULL, 16) - 0xdc00), i += 6;
            }
        } else {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *p = strchr(from, e);
            if (!p || !e) return 1;
            cp = (uint8_t)to[p - from];
        }
        if (cp < 0x80) out[k++] = (uint8_t)cp;
        else if (cp < 0x800) out[k++] = (uint8_t)(0xc0 | cp >> 6), out[k++] = (uint8_t)(0x80 | (cp & 63));
        else if (cp < 0x10000)
            out[k++] = (uint8_t)(0xe0 | cp >> 12), out[k++] = (uint8_t)(0x80 | (cp >> 6 & 63)), out[k++] = (uint8_t)(0x80 | (cp & 63));
        else
            out[k++] = (uint8_t)(0xf0 | cp >> 18), out[k++] = (uint8_t)(0x80 | (cp >> 12 & 63)),
            out[k++] = (uint8_t)(0x80 | (cp >> 6 & 63)), out[k++] = (uint8_t)(0x80 | (cp & 63));
    }
    if (i >= n) return 1;
    *at = i + 1, *len = k;
    return 0;
}

// tokenizer.json: the "vocab" object of its model (piece -> id), the pieces decoded from GPT-2's
// byte alphabet. The merges are not read: they follow from the pieces in this layout.
static int read_json(bpe_vocab *v, const uint8_t *d, size_t n, char *why, size_t why_len) {
    const uint8_t *type = (const uint8_t *)strstr((const char *)d, "\"type\": \"BPE\"");
    const uint8_t *type2 = (const uint8_t *)strstr((const char *)d, "\"type\":\"BPE\"");
    const char *vocab = strstr((const char *)d, "\"vocab\"");
    if (!type && !type2) return snprintf(why, why_len, "its model is not of type \"BPE\""), 1;
    if (!vocab || !(vocab = strchr(vocab, '{'))) return snprintf(why, why_len, "no \"vocab\" object"), 1;
    // first pass: count the entries and find the largest id
    uint8_t *tmp = malloc(n + 1);
    size_t at = (size_t)(vocab - (const char *)d) + 1, count = 0, cap = 0;
    long max_id = -1;
    typedef struct { size_t at; long id; } entry;
    entry *es = NULL;
    size_t cap_es = 0;
    int bad = !tmp;
    while (!bad) {
        while (at < n && (d[at] == ' ' || d[at] == '\n' || d[at] == '\r' || d[at] == '\t' || d[at] == ',')) at++;
        if (at >= n) { bad = 1; break; }
        if (d[at] == '}') break;
        if (d[at] != '"') { bad = 1; break; }
        const size_t start = ++at;
        size_t len;
        if (json_string(d, n, &at, tmp, &len)) { bad = 1; break; }
        while (at < n && (d[at] == ' ' || d[at] == ':')) at++;
        char *end;
        const long id = strtol((const char *)d + at, &end, 10);
        if (end == (const char *)d + at || id < 0 || id > AW_BPE_VOCAB_MAX * 16) { bad = 1; break; }
        at = (size_t)(end - (const char *)d);
        if (count == cap_es) {
            cap_es = cap_es ? cap_es * 2 : 1024;
            entry *q = realloc(es, cap_es * sizeof *es);
            if (!q) { bad = 1; break; }
            es = q;
        }
        es[count++] = (entry){start, id};
        if (id > max_id) max_id = id;
    }
    if (bad || (size_t)(max_id + 1) != count) {
        free(tmp), free(es);
        return snprintf(why, why_len, bad ? "its \"vocab\" object could not be read" : "its vocab ids are not 0..%zu, each once", count - 1), 1;
    }
    // second pass: the pieces in id order
    size_t *order = malloc(count * sizeof *order);
    v->offsets = calloc(count + 1, sizeof *v->offsets);
    for (size_t i = 0; order && i < count; i++) order[i] = SIZE_MAX;
    for (size_t i = 0; order && i < count; i++) order[es[i].id] = es[i].at;
    for (size_t id = 0; !bad && order && v->offsets && id < count; id++) {
        size_t a = order[id], len;
        if (a == SIZE_MAX || json_string(d, n, &a, tmp, &len)) { bad = 1; break; }
        // the byte-level characters back to bytes
        size_t k = 0;
        for (size_t i = 0; i < len;) {
            uint32_t cp = tmp[i];
            size_t l = 1;
            if (cp >= 0xc0) l = cp >= 0xe0 ? 3 : 2, cp &= l == 2 ? 0x1f : 0x0f;
            for (size_t j = 1; j < l; j++) cp = cp << 6 | (tmp[i + j] & 63);
            const int b = char_byte(cp);
            if (b < 0) { bad = 1; break; }
            tmp[k++] = (uint8_t)b, i += l;
        }
        if (bad || vocab_push(v, &cap, tmp, k)) bad = 1;
    }
    free(tmp), free(es), free(order);
    if (bad) return snprintf(why, why_len, "a vocab piece is not in GPT-2's byte alphabet"), 1;
    return 0;
}

// Reads a tokenizer.json or tokenizer.bin of the trainer's layout and rebuilds its merges.
static int bpe_vocab_read(bpe_vocab *v, const char *path, char *why, size_t why_len) {
    memset(v, 0, sizeof *v);
    uint8_t *d;
    size_t n;
    if (read_all(path, &d, &n)) return snprintf(why, why_len, "cannot read the file"), 1;
    d[n] = 0;
    size_t i = 0;
    while (i < n && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t')) i++;
    int st = i < n && d[i] == '{' ? read_json(v, d, n, why, why_len) : read_llama2c(v, d, n, why, why_len);
    free(d);
    if (!st && v->n < AW_BPE_VOCAB_MIN) st = 1, snprintf(why, why_len, "%zu pieces; a byte-level BPE has at least 259", v->n);
    if (!st && !(v->merges = malloc(3 * sizeof *v->merges * (v->n - AW_BPE_FIRST_MERGE + 1))))
        st = 1, snprintf(why, why_len, "out of memory");
    if (!st && aw_bpe_merges_from_pieces(v->merges, v->bytes, v->offsets, v->n))
        st = 1, snprintf(why, why_len, "%s", aw_error_message());
    if (st) bpe_vocab_free(v);
    return st;
}

// A vocabulary from trained merges (left, right per rank).
static int bpe_vocab_from_merges(bpe_vocab *v, const int32_t *pairs, size_t n_merges) {
    memset(v, 0, sizeof *v);
    size_t cap = 0;
    v->offsets = calloc(AW_BPE_FIRST_MERGE + n_merges + 1, sizeof *v->offsets);
    v->merges = malloc((n_merges + 1) * 3 * sizeof *v->merges);
    if (!v->offsets || !v->merges) return 1;
    for (int id = 0; id < AW_BPE_FIRST_MERGE; id++) {
        const uint8_t b = (uint8_t)(id - AW_BPE_FIRST_BYTE);
        if (vocab_push(v, &cap, id < 3 ? (const uint8_t *)SPECIAL_TEXT[id] : &b, id < 3 ? strlen(SPECIAL_TEXT[id]) : 1)) return 1;
    }
    for (size_t r = 0; r < n_merges; r++) {
        const int32_t a = pairs[2 * r], b = pairs[2 * r + 1];
        const size_t la = v->offsets[a + 1] - v->offsets[a], lb = v->offsets[b + 1] - v->offsets[b];
        uint8_t *joined = malloc(la + lb);
        if (!joined) return 1;
        memcpy(joined, v->bytes + v->offsets[a], la), memcpy(joined + la, v->bytes + v->offsets[b], lb);
        const int st = vocab_push(v, &cap, joined, la + lb);
        free(joined);
        if (st) return 1;
        v->merges[3 * r] = a, v->merges[3 * r + 1] = b, v->merges[3 * r + 2] = (int32_t)(AW_BPE_FIRST_MERGE + r);
    }
    return 0;
}

// A piece's characters (GPT-2's table: each byte one character below U+0800) in UTF-8, escaped by json.h.
static void put_piece(FILE *f, const bpe_vocab *v, size_t id) {
    for (uint32_t i = v->offsets[id]; i < v->offsets[id + 1]; i++) {
        const uint32_t cp = byte_char(v->bytes[i]);
        const char utf8[3] = {(char)(cp < 0x80 ? cp : 0xc0 | cp >> 6), (char)(cp < 0x80 ? 0 : 0x80 | (cp & 63)), 0};
        char text[16];
        aw_json_escape(text, sizeof text, utf8);
        fputs(text, f);
    }
}

// Writes v as tokenizer.json (the fields and order of wasm/bpe.js's toJSON(), one merge a line).
static int bpe_vocab_write_json(const bpe_vocab *v, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    fputs("{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[],\"normalizer\":null,\n"
          "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true},\n"
          "\"post_processor\":null,\n"
          "\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},\n"
          "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,"
          "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,\n\"vocab\":{",
          f);
    for (size_t id = 0; id < v->n; id++) {
        fputs(id ? ",\"" : "\"", f);
        put_piece(f, v, id);
        fprintf(f, "\":%zu", id);
    }
    fputs("},\n\"merges\":[", f);
    for (size_t r = 0; r + AW_BPE_FIRST_MERGE < v->n; r++) {
        fputs(r ? ",\n\"" : "\n\"", f);
        put_piece(f, v, (size_t)v->merges[3 * r]);
        fputc(' ', f);
        put_piece(f, v, (size_t)v->merges[3 * r + 1]);
        fputc('"', f);
    }
    fputs("]}}\n", f);
    return fclose(f) != 0;
}

#endif
