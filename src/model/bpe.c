// bpe.c: byte-level BPE (bpe.h). Training keeps pair counts up to date incrementally: each
// pre-token is stored once with its count, as a linked list of symbols; each pair keeps the
// positions where it occurs; a merge visits only those positions and moves the counts of the pairs
// with their neighbours; a max-heap of pairs is corrected lazily (a popped entry whose count has
// fallen since it was pushed goes back with its current count). So a merge costs its occurrences,
// never a recount of the text nor a rescan of long pre-tokens (a text without spaces, such as
// Chinese, is one pre-token: 2.4 MB of it trains to 8192 pieces in about a second natively).
#include "bpe.h"

#include "../kernels/size.h"
#include "../kernels/status.h"
#include "bpe_unicode.h"

#include <string.h>

// ---- pre-tokenization --------------------------------------------------------------------------

enum { CLS_OTHER = 0, CLS_LETTER = 1, CLS_NUMBER = 2, CLS_SPACE = 3 };

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int cp_class(uint32_t cp) {
    if (cp < 128) { // the common case without a search
        if (cp == ' ' || (cp >= 9 && cp <= 13)) return CLS_SPACE;
        if ((cp | 32) >= 'a' && (cp | 32) <= 'z') return CLS_LETTER;
        if (cp >= '0' && cp <= '9') return CLS_NUMBER;
        return CLS_OTHER;
    }
    if (in_ranges(AW_BPE_LETTER, COUNT(AW_BPE_LETTER), cp)) return CLS_LETTER;
    if (in_ranges(AW_BPE_NUMBER, COUNT(AW_BPE_NUMBER), cp)) return CLS_NUMBER;
    if (in_ranges(AW_BPE_SPACE, COUNT(AW_BPE_SPACE), cp)) return CLS_SPACE;
    return CLS_OTHER;
}

// The class of the UTF-8 character at s[i] (i < n); *len: its bytes. An invalid or cut-short
// sequence is one byte of class other.
static int char_at(const uint8_t *s, size_t n, size_t i, size_t *len) {
    const uint8_t b = s[i];
    if (b < 0x80) return *len = 1, cp_class(b);
    size_t need = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
    if (need == 0 || i + need > n) return *len = 1, CLS_OTHER;
    uint32_t cp = b & (need == 2 ? 0x1f : need == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < need; k++) {
        if ((s[i + k] & 0xc0) != 0x80) return *len = 1, CLS_OTHER;
        cp = cp << 6 | (s[i + k] & 0x3f);
    }
    // overlong forms, surrogates and values past U+10FFFF are invalid
    if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
        return *len = 1, CLS_OTHER;
    return *len = need, cp_class(cp);
}

// The end of the run of characters of class cls starting at i.
static size_t run_end(const uint8_t *s, size_t n, size_t i, int cls) {
    size_t len;
    while (i < n && char_at(s, n, i, &len) == cls) i += len;
    return i;
}

size_t aw_bpe_pretoken_end(const uint8_t *s, size_t n, size_t i) {
    // 's|'t|'re|'ve|'m|'ll|'d
    if (s[i] == '\'' && i + 1 < n) {
        const uint8_t d = s[i + 1];
        if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
        if (i + 2 < n && ((d == 'r' && s[i + 2] == 'e') || (d == 'v' && s[i + 2] == 'e') || (d == 'l' && s[i + 2] == 'l')))
            return i + 3;
    }
    size_t len;
    const int cls = char_at(s, n, i, &len);
    // ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`: one ASCII space may lead a run of another class
    if (s[i] == ' ' && i + 1 < n) {
        size_t len2;
        const int next = char_at(s, n, i + 1, &len2);
        if (next != CLS_SPACE) return run_end(s, n, i + 1, next);
    }
    if (cls != CLS_SPACE) return run_end(s, n, i, cls);
    // `\s+(?!\S)|\s+`: a run of white space, less its last character when a non-space follows
    // and the run has two or more (that last one then leads the next pre-token, as " word")
    size_t j = i, last = i, chars = 0;
    while (j < n && char_at(s, n, j, &len) == CLS_SPACE) last = j, j += len, chars++;
    return j == n || chars < 2 ? j : last;
}

// ---- hashing -----------------------------------------------------------------------------------

static uint64_t mix64(uint64_t x) { // splitmix64's finaliser
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27, x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(const uint8_t *p, size_t n) { // FNV-1a, mixed
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return mix64(h);
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n && c < ((size_t)1 << (sizeof(size_t) * 8 - 2))) c <<= 1;
    return c;
}

// ---- the encoder -------------------------------------------------------------------------------

static int32_t merge_rank(const aw_bpe_encoder *e, int32_t a, int32_t b) {
    const uint64_t key = pair_key(a, b);
    for (size_t i = mix64(key) & (e->cap - 1);; i = (i + 1) & (e->cap - 1)) {
        if (e->keys[i] == key) return e->ranks[i];
        if (e->keys[i] == 0) return -1;
    }
}

// Adds merge `rank` (its pair from e->merges) to the lookup; 1 when the pair was there already.
static int encoder_add(aw_bpe_encoder *e, size_t rank) {
    const uint64_t key = pair_key(e->merges[3 * rank], e->merges[3 * rank + 1]);
    size_t i = mix64(key) & (e->cap - 1);
    while (e->keys[i] != 0) {
        if (e->keys[i] == key) return 1;
        i = (i + 1) & (e->cap - 1);
    }
    e->keys[i] = key, e->ranks[i] = (int32_t)rank;
    return 0;
}

static int encoder_alloc(aw_bpe_encoder *e, const int32_t *byte_id, const int32_t *merges, size_t n_merges) {
    memset(e, 0, sizeof *e);
    memcpy(e->byte_id, byte_id, sizeof e->byte_id);
    e->merges = merges;
    e->n_merges = n_merges;
    e->cap = pow2_at_least(aw_size_mul(n_merges, 2));
    e->keys = aw_alloc_zero(e->cap, sizeof *e->keys);
    e->ranks = aw_alloc(e->cap, sizeof *e->ranks);
    if (!e->keys || !e->ranks) {
        aw_bpe_encoder_free(e);
        return aw_fail(AW_ERR_NOMEM, "out of memory for a table of %zu merges", n_merges);
    }
    return AW_OK;
}

int aw_bpe_encoder_init(aw_bpe_encoder *e, const int32_t *byte_id, const int32_t *merges, size_t n_merges,
                        size_t n_pieces) {
    for (int b = 0; b < 256; b++)
        if (byte_id[b] < 0 || (size_t)byte_id[b] >= n_pieces)
            return aw_fail(AW_ERR_ARG, "the id of byte %d is %d, outside [0, %zu)", b, (int)byte_id[b], n_pieces);
    for (size_t r = 0; r < n_merges; r++)
        for (int k = 0; k < 3; k++)
            if (merges[3 * r + k] < 0 || (size_t)merges[3 * r + k] >= n_pieces)
                return aw_fail(AW_ERR_ARG, "merge %zu names id %d, outside [0, %zu)", r, (int)merges[3 * r + k],
                               n_pieces);
    int st = encoder_alloc(e, byte_id, merges, n_merges);
    if (st) return st;
    for (size_t r = 0; r < n_merges; r++)
        if (encoder_add(e, r)) {
            aw_bpe_encoder_free(e);
            return aw_fail(AW_ERR_ARG, "merge %zu (%d, %d) repeats an earlier merge of the same pair", r,
                           (int)merges[3 * r], (int)merges[3 * r + 1]);
        }
    return AW_OK;
}

int aw_bpe_encoder_init_first(aw_bpe_encoder *e, const int32_t *byte_id, const int32_t *merges, size_t n_merges,
                              size_t n_pieces, size_t use_merges) {
    if (use_merges > n_merges)
        return aw_fail(AW_ERR_ARG, "merges is %zu, outside [0, %zu] (the tokenizer's merges, in rank order)", use_merges,
                       n_merges);
    return aw_bpe_encoder_init(e, byte_id, merges, use_merges, n_pieces);
}

void aw_bpe_encoder_free(aw_bpe_encoder *e) {
    free(e->keys);
    free(e->ranks);
    e->keys = NULL, e->ranks = NULL;
}

// Scratch for merging one word of up to cap symbols: a doubly linked list of symbols and a
// binary min-heap of candidate merges ordered by (rank, left position), each candidate dropped
// when popped if either of its symbols changed since it was pushed (a version per position).
typedef struct {
    int32_t *next, *prev, *ver;             // (cap)
    int32_t *c_right, *c_verl, *c_verr;     // (3 cap) candidates
    int32_t *h_rank, *h_left, *h_cand;      // (3 cap) the heap
    size_t cap;
} word_scratch;

static void scratch_free(word_scratch *w) {
    int32_t **all[] = {&w->next, &w->prev, &w->ver, &w->c_right, &w->c_verl, &w->c_verr, &w->h_rank, &w->h_left, &w->h_cand};
    for (size_t i = 0; i < COUNT(all); i++) free(*all[i]), *all[i] = NULL;
}

static int scratch_alloc(word_scratch *w, size_t cap) {
    memset(w, 0, sizeof *w);
    w->cap = cap;
    const size_t c3 = aw_size_mul(cap, 3);
    w->next = aw_alloc(cap, 4), w->prev = aw_alloc(cap, 4), w->ver = aw_alloc(cap, 4);
    w->c_right = aw_alloc(c3, 4), w->c_verl = aw_alloc(c3, 4), w->c_verr = aw_alloc(c3, 4);
    w->h_rank = aw_alloc(c3, 4), w->h_left = aw_alloc(c3, 4), w->h_cand = aw_alloc(c3, 4);
    if (!w->next || !w->prev || !w->ver || !w->c_right || !w->c_verl || !w->c_verr || !w->h_rank || !w->h_left ||
        !w->h_cand) {
        scratch_free(w);
        return aw_fail(AW_ERR_NOMEM, "out of memory for a word of %zu bytes", cap);
    }
    return AW_OK;
}

static int cand_before(const word_scratch *w, size_t x, int32_t rank, int32_t left) {
    return w->h_rank[x] < rank || (w->h_rank[x] == rank && w->h_left[x] < left);
}

// Pushes the candidate merge of the symbol at l with its right neighbour, if that pair merges.
static void word_push(word_scratch *w, const aw_bpe_encoder *e, const int32_t *tok, size_t *used, size_t *size,
                      int32_t l) {
    const int32_t r = w->next[l];
    if (r < 0) return;
    const int32_t rank = merge_rank(e, tok[l], tok[r]);
    if (rank < 0) return;
    const size_t c = (*used)++;
    w->c_right[c] = r, w->c_verl[c] = w->ver[l], w->c_verr[c] = w->ver[r];
    size_t i = (*size)++;
    while (i > 0) { // sift up: lower rank first, then the leftmost
        const size_t p = (i - 1) / 2;
        if (!(rank < w->h_rank[p] || (rank == w->h_rank[p] && l < w->h_left[p]))) break;
        w->h_rank[i] = w->h_rank[p], w->h_left[i] = w->h_left[p], w->h_cand[i] = w->h_cand[p], i = p;
    }
    w->h_rank[i] = rank, w->h_left[i] = l, w->h_cand[i] = (int32_t)c;
}

static void word_pop(word_scratch *w, size_t *size) {
    const size_t last = --*size;
    const int32_t rank = w->h_rank[last], left = w->h_left[last], cand = w->h_cand[last];
    size_t i = 0;
    for (;;) { // sift down
        size_t k = 2 * i + 1;
        if (k >= *size) break;
        if (k + 1 < *size && cand_before(w, k + 1, w->h_rank[k], w->h_left[k])) k++;
        if (!cand_before(w, k, rank, left)) break;
        w->h_rank[i] = w->h_rank[k], w->h_left[i] = w->h_left[k], w->h_cand[i] = w->h_cand[k], i = k;
    }
    w->h_rank[i] = rank, w->h_left[i] = left, w->h_cand[i] = cand;
}

// Merges tok (n symbols, n <= w->cap) in place; returns the new count.
static size_t word_merge(int32_t *tok, size_t n, const aw_bpe_encoder *e, word_scratch *w) {
    if (n < 2) return n;
    if (n == 2) { // most words of two symbols: no heap needed
        const int32_t rank = merge_rank(e, tok[0], tok[1]);
        if (rank < 0) return 2;
        tok[0] = e->merges[3 * rank + 2];
        return 1;
    }
    for (size_t i = 0; i < n; i++) w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1, w->prev[i] = (int32_t)i - 1, w->ver[i] = 0;
    size_t used = 0, size = 0;
    for (size_t i = 0; i + 1 < n; i++) word_push(w, e, tok, &used, &size, (int32_t)i);
    while (size > 0) {
        const int32_t l = w->h_left[0], c = w->h_cand[0], rank = w->h_rank[0], r = w->c_right[c];
        word_pop(w, &size);
        if (w->ver[l] != w->c_verl[c] || w->ver[r] != w->c_verr[c]) continue; // a symbol of this pair changed
        tok[l] = e->merges[3 * rank + 2];
        w->ver[l]++, w->ver[r]++;
        w->next[l] = w->next[r];
        if (w->next[r] >= 0) w->prev[w->next[r]] = l;
        if (w->prev[l] >= 0) word_push(w, e, tok, &used, &size, w->prev[l]);
        word_push(w, e, tok, &used, &size, l);
    }
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = w->next[i]) tok[k++] = tok[i];
    return k;
}

int aw_bpe_encode(int32_t *ids, size_t *n_ids, const uint8_t *text, size_t n, const aw_bpe_encoder *e) {
    *n_ids = 0;
    if (n == 0) return AW_OK;
    // the longest pre-token sizes the scratch
    size_t longest = 0;
    for (size_t i = 0; i < n;) {
        const size_t j = aw_bpe_pretoken_end(text, n, i);
        if (j - i > longest) longest = j - i;
        i = j;
    }
    word_scratch w;
    int st = scratch_alloc(&w, longest);
    if (st) return st;
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        const size_t j = aw_bpe_pretoken_end(text, n, i);
        for (size_t k = i; k < j; k++) ids[out + k - i] = e->byte_id[text[k]];
        out += word_merge(ids + out, j - i, e, &w);
        i = j;
    }
    scratch_free(&w);
    *n_ids = out;
    return AW_OK;
}

// ---- the pieces' texts -------------------------------------------------------------------------

// The texts of the specials in either format (tokenizer.json and llama2.c's): no merge may make one.
static const char *const RESERVED[] = {"<unk>", "<s>", "</s>", "\n<s>\n", "\n</s>\n"};

static int is_reserved(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < COUNT(RESERVED); i++)
        if (strlen(RESERVED[i]) == n && memcmp(RESERVED[i], p, n) == 0) return 1;
    return 0;
}

// 1 when a merge may make a piece of these bytes (besides its text being new): llama2.c's run.c
// (wasm/llama2c.js) encodes with no pre-tokenizer, each whole UTF-8 character first looked up as
// a piece, then merging any two neighbours whose joined text is a piece, highest score first. Two
// kinds of piece would let it merge where this encoder does not, so none is made:
//  - a piece that splits a UTF-8 character and holds a byte outside it (run.c never splits a
//    character that is a piece); the bytes of one character may merge among themselves;
//  - a piece of two or more white-space characters (run.c would join the space that GPT-2's
//    pattern leaves to lead the next word, "  So" as "  " "So" where this encoder has " " " So");
//  - a piece with an apostrophe followed by a letter: only GPT-2's contractions ('s 't 're 've 'm
//    'll 'd) make them, and run.c would make them across pre-tokens too (" 'tis" is " '" "tis").
static int piece_allowed(const uint8_t *p, size_t n) {
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '\'' && ((p[i + 1] | 32) >= 'a' && (p[i + 1] | 32) <= 'z')) return 0;
    if ((p[0] & 0xc0) == 0x80) { // starts inside a character: allowed only inside it
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80) return 0;
        return n < 4;
    }
    size_t chars = 0, spaces = 0;
    for (size_t i = 0; i < n;) {
        size_t len;
        const int cls = char_at(p, n, i, &len);
        if (len == 1 && p[i] >= 0xc2 && p[i] <= 0xf4) { // a lead byte cut short: the piece's tail, or an invalid sequence
            size_t k = i + 1;
            while (k < n && (p[k] & 0xc0) == 0x80) k++;
            if (k == n) return i == 0; // a part of one character: only alone
        }
        chars++, spaces += cls == CLS_SPACE, i += len;
    }
    return !(spaces == chars && chars >= 2);
}

// ---- training ----------------------------------------------------------------------------------

typedef struct {
    // the distinct pre-tokens ("words") and their counts; their symbols, all words back to back, as
    // doubly linked lists (a merge keeps the left position and empties the right one: sym -1)
    size_t *w_off, *w_len;
    int64_t *w_count;
    size_t n_words;
    int32_t *sym, *nxt, *prv, *word_of; // (total symbols); nxt / prv -1 at a word's ends
    // the pairs: left, right, count, the head of their list of positions, the last merge touching them
    int32_t *p_a, *p_b;
    int64_t *p_count;
    int64_t *p_head; // index into occ, -1 = none
    size_t *p_stamp;
    size_t n_pairs, cap_pairs;
    uint64_t *p_keys; // hash: pair_key -> pair index + 1 in p_slot
    int32_t *p_slot;
    size_t p_hcap;
    // the occurrence lists: the position of the pair's left symbol when it was added, next entry
    int32_t *occ_pos;
    int64_t *occ_next;
    size_t n_occ, cap_occ;
    // the max-heap of pairs: (count, pair)
    int64_t *h_count;
    int32_t *h_pair;
    size_t h_size;
    // the pieces' bytes (for the rule that no two pieces share a text)
    uint8_t *bytes;
    size_t *b_off, *b_len;
    size_t n_bytes, cap_bytes;
    int32_t *t_keys; // hash of piece texts: piece id + 1, 0 = empty
    size_t t_cap;
    int32_t *fresh; // the pairs the current merge made
    size_t n_fresh, cap_fresh;
    int32_t *todo; // the positions the current merge visits
    size_t cap_todo;
} trainer;

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c = aw_size_mul(c, 2);
    size_t bytes;
    if (aw_mul_overflows(&bytes, c, elem)) return 1;
    void *q = realloc(*p, bytes);
    if (!q) return 1;
    *p = q, *cap = c;
    return 0;
}

// The index of pair (a, b), created with count 0 when new; -1 when out of memory.
static int64_t pair_find(trainer *t, int32_t a, int32_t b, int create) {
    const uint64_t key = pair_key(a, b);
    size_t i = mix64(key) & (t->p_hcap - 1);
    while (t->p_keys[i] != 0) {
        if (t->p_keys[i] == key) return t->p_slot[i];
        i = (i + 1) & (t->p_hcap - 1);
    }
    if (!create) return -1;
    if (aw_size_mul(t->n_pairs + 1, 2) > t->p_hcap) { // rehash at half full
        const size_t cap = t->p_hcap * 2;
        uint64_t *keys = aw_alloc_zero(cap, sizeof *keys);
        int32_t *slot = aw_alloc(cap, sizeof *slot);
        if (!keys || !slot) return free(keys), free(slot), -1;
        for (size_t k = 0; k < t->p_hcap; k++)
            if (t->p_keys[k]) {
                size_t j = mix64(t->p_keys[k]) & (cap - 1);
                while (keys[j]) j = (j + 1) & (cap - 1);
                keys[j] = t->p_keys[k], slot[j] = t->p_slot[k];
            }
        free(t->p_keys), free(t->p_slot);
        t->p_keys = keys, t->p_slot = slot, t->p_hcap = cap;
        i = mix64(key) & (cap - 1);
        while (t->p_keys[i]) i = (i + 1) & (cap - 1);
    }
    size_t c = t->cap_pairs;
    if (grow((void **)&t->p_a, &c, t->n_pairs + 1, 4)) return -1;
    c = t->cap_pairs;
    if (grow((void **)&t->p_b, &c, t->n_pairs + 1, 4)) return -1;
    c = t->cap_pairs;
    if (grow((void **)&t->p_count, &c, t->n_pairs + 1, 8)) return -1;
    c = t->cap_pairs;
    if (grow((void **)&t->p_head, &c, t->n_pairs + 1, 8)) return -1;
    c = t->cap_pairs;
    if (grow((void **)&t->p_stamp, &c, t->n_pairs + 1, sizeof(size_t))) return -1;
    c = t->cap_pairs;
    if (grow((void **)&t->h_count, &c, t->n_pairs + 1, 8)) return -1;
    if (grow((void **)&t->h_pair, &t->cap_pairs, t->n_pairs + 1, 4)) return -1;
    const size_t p = t->n_pairs++;
    t->p_a[p] = a, t->p_b[p] = b, t->p_count[p] = 0, t->p_head[p] = -1, t->p_stamp[p] = 0;
    t->p_keys[i] = key, t->p_slot[i] = (int32_t)p;
    return (int64_t)p;
}

static int occ_add(trainer *t, size_t p, int32_t pos) {
    size_t c = t->cap_occ;
    if (grow((void **)&t->occ_pos, &c, t->n_occ + 1, 4)) return 1;
    if (grow((void **)&t->occ_next, &t->cap_occ, t->n_occ + 1, 8)) return 1;
    t->occ_pos[t->n_occ] = pos, t->occ_next[t->n_occ] = t->p_head[p];
    t->p_head[p] = (int64_t)t->n_occ++;
    return 0;
}

// heap order: the higher count first, then the smaller left id, then the smaller right id
static int heap_before(const trainer *t, int64_t c1, int32_t p1, int64_t c2, int32_t p2) {
    if (c1 != c2) return c1 > c2;
    if (t->p_a[p1] != t->p_a[p2]) return t->p_a[p1] < t->p_a[p2];
    return t->p_b[p1] < t->p_b[p2];
}

static void heap_push(trainer *t, int32_t p) { // room: the heap holds each pair at most once
    const int64_t c = t->p_count[p];
    size_t i = t->h_size++;
    while (i > 0) {
        const size_t q = (i - 1) / 2;
        if (!heap_before(t, c, p, t->h_count[q], t->h_pair[q])) break;
        t->h_count[i] = t->h_count[q], t->h_pair[i] = t->h_pair[q], i = q;
    }
    t->h_count[i] = c, t->h_pair[i] = p;
}

static void heap_pop(trainer *t) {
    const size_t last = --t->h_size;
    const int64_t c = t->h_count[last];
    const int32_t p = t->h_pair[last];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= t->h_size) break;
        if (k + 1 < t->h_size && heap_before(t, t->h_count[k + 1], t->h_pair[k + 1], t->h_count[k], t->h_pair[k])) k++;
        if (!heap_before(t, t->h_count[k], t->h_pair[k], c, p)) break;
        t->h_count[i] = t->h_count[k], t->h_pair[i] = t->h_pair[k], i = k;
    }
    t->h_count[i] = c, t->h_pair[i] = p;
}

// The id of the piece whose text is p (n bytes), or -1; with insert_id >= 0, adds it as that id.
static int32_t text_find(trainer *t, const uint8_t *p, size_t n, int32_t insert_id) {
    size_t i = hash_bytes(p, n) & (t->t_cap - 1);
    while (t->t_keys[i]) {
        const int32_t id = t->t_keys[i] - 1;
        if (t->b_len[id] == n && memcmp(t->bytes + t->b_off[id], p, n) == 0) return id;
        i = (i + 1) & (t->t_cap - 1);
    }
    if (insert_id >= 0) t->t_keys[i] = insert_id + 1;
    return -1;
}

static void trainer_free(trainer *t) {
    void *all[] = {t->sym, t->nxt, t->prv, t->word_of, t->w_off, t->w_len, t->w_count, t->p_a, t->p_b, t->p_count, t->p_head, t->p_stamp,
                   t->p_keys, t->p_slot, t->occ_pos, t->occ_next, t->h_count, t->h_pair, t->bytes, t->b_off, t->b_len,
                   t->t_keys, t->fresh, t->todo};
    for (size_t i = 0; i < COUNT(all); i++) free(all[i]);
}

// Counts the distinct pre-tokens of text: t->w_off (their first occurrence in text, for now),
// t->w_len, t->w_count.
static int count_words(trainer *t, const uint8_t *text, size_t n) {
    size_t n_pre = 0;
    for (size_t i = 0; i < n; i = aw_bpe_pretoken_end(text, n, i)) n_pre++;
    const size_t cap = pow2_at_least(aw_size_mul(n_pre, 2));
    int32_t *slot = aw_alloc_zero(cap, sizeof *slot); // word + 1
    t->w_off = aw_alloc(n_pre, sizeof *t->w_off);
    t->w_len = aw_alloc(n_pre, sizeof *t->w_len);
    t->w_count = aw_alloc(n_pre, sizeof *t->w_count);
    if (!slot || !t->w_off || !t->w_len || !t->w_count) return free(slot), 1;
    for (size_t i = 0; i < n;) {
        const size_t j = aw_bpe_pretoken_end(text, n, i);
        size_t h = hash_bytes(text + i, j - i) & (cap - 1);
        for (;;) {
            if (!slot[h]) {
                const size_t w = t->n_words++;
                t->w_off[w] = i, t->w_len[w] = j - i, t->w_count[w] = 1;
                slot[h] = (int32_t)w + 1;
                break;
            }
            const size_t w = (size_t)slot[h] - 1;
            if (t->w_len[w] == j - i && memcmp(text + t->w_off[w], text + i, j - i) == 0) {
                t->w_count[w]++;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
        i = j;
    }
    free(slot);
    return 0;
}

// Adds delta to the count of pair (x, y); a pair holding the new piece z also learns the position
// of its left symbol and is noted for the heap (once per merge: stamp).
static int pair_change(trainer *t, int32_t x, int32_t y, int64_t delta, int32_t z, int32_t pos, size_t stamp) {
    const int64_t p = pair_find(t, x, y, delta > 0);
    if (p < 0) return 1;
    t->p_count[p] += delta;
    if (delta > 0 && (x == z || y == z)) {
        if (occ_add(t, (size_t)p, pos)) return 1;
        if (t->p_stamp[p] != stamp) { // enters the heap once this merge has counted it in full
            t->p_stamp[p] = stamp;
            if (grow((void **)&t->fresh, &t->cap_fresh, t->n_fresh + 1, 4)) return 1;
            t->fresh[t->n_fresh++] = (int32_t)p;
        }
    }
    return 0;
}

// Merges (a, b) into z at position i (a at i, b at its next): the pairs with the neighbours move
// from a and b to z, weighted by the word's count.
static int merge_at(trainer *t, int32_t i, int32_t a, int32_t b, int32_t z, size_t stamp) {
    const int32_t j = t->nxt[i], l = t->prv[i], r = t->nxt[j];
    const int64_t c = t->w_count[t->word_of[i]];
    if (l >= 0 && (pair_change(t, t->sym[l], a, -c, z, l, stamp) || pair_change(t, t->sym[l], z, c, z, l, stamp))) return 1;
    if (r >= 0 && (pair_change(t, b, t->sym[r], -c, z, j, stamp) || pair_change(t, z, t->sym[r], c, z, i, stamp))) return 1;
    if (pair_change(t, a, b, -c, z, i, stamp)) return 1;
    t->sym[i] = z, t->sym[j] = -1;
    t->nxt[i] = r;
    if (r >= 0) t->prv[r] = i;
    return 0;
}

static int cmp_i32(const void *x, const void *y) {
    const int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

int aw_bpe_train(int32_t *merges, size_t *n_merges, const uint8_t *text, size_t n, size_t vocab_size) {
    *n_merges = 0;
    if (n == 0) return aw_fail(AW_ERR_ARG, "text is empty; a tokenizer is trained on some text");
    if (vocab_size < AW_BPE_VOCAB_MIN || vocab_size > AW_BPE_VOCAB_MAX)
        return aw_fail(AW_ERR_ARG, "vocabSize is %zu, outside [%d, %d] (3 specials and 256 bytes, then merges)",
                       vocab_size, AW_BPE_VOCAB_MIN, AW_BPE_VOCAB_MAX);
    trainer t;
    memset(&t, 0, sizeof t);
    int st = AW_ERR_NOMEM;
    if (count_words(&t, text, n)) goto done;
    // the words' symbols: their bytes as ids
    size_t total = 0;
    for (size_t w = 0; w < t.n_words; w++) total += t.w_len[w];
    if (total > INT32_MAX) goto done;
    t.sym = aw_alloc(total, sizeof *t.sym), t.nxt = aw_alloc(total, sizeof *t.nxt);
    t.prv = aw_alloc(total, sizeof *t.prv), t.word_of = aw_alloc(total, sizeof *t.word_of);
    if (!t.sym || !t.nxt || !t.prv || !t.word_of) goto done;
    for (size_t w = 0, at = 0; w < t.n_words; w++) {
        for (size_t k = 0; k < t.w_len[w]; k++) {
            const size_t i = at + k;
            t.sym[i] = AW_BPE_FIRST_BYTE + text[t.w_off[w] + k], t.word_of[i] = (int32_t)w;
            t.nxt[i] = k + 1 < t.w_len[w] ? (int32_t)i + 1 : -1, t.prv[i] = k ? (int32_t)i - 1 : -1;
        }
        t.w_off[w] = at, at += t.w_len[w];
    }
    // the pieces' texts: the specials, then the bytes
    t.t_cap = pow2_at_least(2 * vocab_size);
    t.t_keys = aw_alloc_zero(t.t_cap, sizeof *t.t_keys);
    t.b_off = aw_alloc(vocab_size, sizeof *t.b_off);
    t.b_len = aw_alloc(vocab_size, sizeof *t.b_len);
    if (!t.t_keys || !t.b_off || !t.b_len || grow((void **)&t.bytes, &t.cap_bytes, 4096, 1)) goto done;
    for (int32_t id = 0; id < AW_BPE_FIRST_MERGE; id++) {
        uint8_t one = (uint8_t)(id - AW_BPE_FIRST_BYTE);
        const uint8_t *p = id < AW_BPE_FIRST_BYTE ? (const uint8_t *)RESERVED[id] : &one;
        const size_t len = id < AW_BPE_FIRST_BYTE ? strlen(RESERVED[id]) : 1;
        memcpy(t.bytes + t.n_bytes, p, len);
        t.b_off[id] = t.n_bytes, t.b_len[id] = len, t.n_bytes += len;
        text_find(&t, p, len, id);
    }
    // the pairs of every word, and the heap over them
    t.p_hcap = 1024;
    t.p_keys = aw_alloc_zero(t.p_hcap, sizeof *t.p_keys);
    t.p_slot = aw_alloc(t.p_hcap, sizeof *t.p_slot);
    if (!t.p_keys || !t.p_slot) goto done;
    for (size_t w = 0; w < t.n_words; w++)
        for (size_t i = t.w_off[w]; i + 1 < t.w_off[w] + t.w_len[w]; i++) {
            const int64_t p = pair_find(&t, t.sym[i], t.sym[i + 1], 1);
            if (p < 0 || occ_add(&t, (size_t)p, (int32_t)i)) goto done;
            t.p_count[p] += t.w_count[w];
        }
    for (size_t p = 0; p < t.n_pairs; p++) t.p_stamp[p] = 0, heap_push(&t, (int32_t)p);
    // the merges
    size_t stamp = 0;
    const size_t want = vocab_size - AW_BPE_FIRST_MERGE;
    while (*n_merges < want && t.h_size > 0) {
        const int64_t c = t.h_count[0];
        const int32_t p = t.h_pair[0];
        heap_pop(&t);
        if (c != t.p_count[p]) { // counted lower since it was pushed: back with its current count
            if (t.p_count[p] > 0) heap_push(&t, p);
            continue;
        }
        if (c <= 0) break;
        const int32_t a = t.p_a[p], b = t.p_b[p], z = (int32_t)(AW_BPE_FIRST_MERGE + *n_merges);
        // its text: a's bytes then b's; a pair whose text is a piece (or a special's) is never merged
        const size_t la = t.b_len[a], lb = t.b_len[b];
        if (grow((void **)&t.bytes, &t.cap_bytes, t.n_bytes + la + lb, 1)) goto done;
        memcpy(t.bytes + t.n_bytes, t.bytes + t.b_off[a], la);
        memcpy(t.bytes + t.n_bytes + la, t.bytes + t.b_off[b], lb);
        const uint8_t *joined = t.bytes + t.n_bytes;
        if (text_find(&t, joined, la + lb, -1) >= 0 || is_reserved(joined, la + lb) || !piece_allowed(joined, la + lb)) {
            t.p_head[p] = -1; // never merged: its positions are not needed
            continue;
        }
        t.b_off[z] = t.n_bytes, t.b_len[z] = la + lb, t.n_bytes += la + lb;
        text_find(&t, t.bytes + t.b_off[z], la + lb, z);
        merges[2 * *n_merges] = a, merges[2 * *n_merges + 1] = b;
        ++*n_merges;
        // every position of the pair, in order (leftmost first where occurrences overlap, "aaa"):
        // the list keeps positions where the pair was once; those where it is no longer are skipped
        ++stamp;
        t.n_fresh = 0;
        size_t k = 0;
        for (int64_t o = t.p_head[p]; o >= 0; o = t.occ_next[o]) {
            const int32_t i = t.occ_pos[o];
            if (t.sym[i] != a || t.nxt[i] < 0 || t.sym[t.nxt[i]] != b) continue;
            if (grow((void **)&t.todo, &t.cap_todo, k + 1, 4)) goto done;
            t.todo[k++] = i;
        }
        qsort(t.todo, k, sizeof *t.todo, cmp_i32);
        for (size_t q = 0; q < k; q++) {
            const int32_t i = t.todo[q];
            if (q && i == t.todo[q - 1]) continue;
            if (t.sym[i] != a || t.nxt[i] < 0 || t.sym[t.nxt[i]] != b) continue; // taken by the merge on its left
            if (merge_at(&t, i, a, b, z, stamp)) goto done;
        }
        t.p_head[p] = -1; // none is left
        // the pairs holding the new piece enter the heap with their final counts
        for (size_t f = 0; f < t.n_fresh; f++)
            if (t.p_count[t.fresh[f]] > 0) heap_push(&t, t.fresh[f]);
    }
    st = AW_OK;
done:
    trainer_free(&t);
    if (st == AW_ERR_NOMEM) return aw_fail(st, "out of memory training on %zu bytes of text", n);
    return st;
}

// ---- merges from pieces ------------------------------------------------------------------------

int aw_bpe_merges_from_pieces(int32_t *merges, const uint8_t *pieces, const uint32_t *offsets, size_t n_pieces) {
    if (n_pieces < AW_BPE_VOCAB_MIN)
        return aw_fail(AW_ERR_FORMAT, "%zu pieces; expected at least %d (3 specials and the 256 bytes)", n_pieces,
                       AW_BPE_VOCAB_MIN);
    for (size_t b = 0; b < 256; b++) {
        const size_t id = AW_BPE_FIRST_BYTE + b;
        if (offsets[id + 1] - offsets[id] != 1 || pieces[offsets[id]] != b)
            return aw_fail(AW_ERR_FORMAT, "piece %zu should be the single byte 0x%02zx (bytes at ids 3..258)", id, b);
    }
    int32_t byte_id[256];
    for (int b = 0; b < 256; b++) byte_id[b] = AW_BPE_FIRST_BYTE + b;
    const size_t n_merges = n_pieces - AW_BPE_FIRST_MERGE;
    size_t longest = 1;
    for (size_t i = AW_BPE_FIRST_MERGE; i < n_pieces; i++)
        if (offsets[i + 1] - offsets[i] > longest) longest = offsets[i + 1] - offsets[i];
    aw_bpe_encoder e;
    int st = encoder_alloc(&e, byte_id, merges, n_merges);
    if (st) return st;
    word_scratch w;
    int32_t *tok = aw_alloc(longest, sizeof *tok);
    if (!tok || (st = scratch_alloc(&w, longest))) {
        free(tok);
        aw_bpe_encoder_free(&e);
        return st ? st : aw_fail(AW_ERR_NOMEM, "out of memory");
    }
    for (size_t r = 0; r < n_merges && st == AW_OK; r++) {
        const size_t id = AW_BPE_FIRST_MERGE + r, len = offsets[id + 1] - offsets[id];
        for (size_t k = 0; k < len; k++) tok[k] = byte_id[pieces[offsets[id] + k]];
        e.n_merges = r; // merges 0..r-1 only
        const size_t got = word_merge(tok, len, &e, &w);
        if (got != 2) {
            st = aw_fail(AW_ERR_FORMAT,
                         "piece %zu (%zu bytes) is not two earlier pieces joined: its bytes encode to %zu pieces "
                         "with the merges before it (pieces after the bytes must be merges in rank order)",
                         id, len, got);
            break;
        }
        merges[3 * r] = tok[0], merges[3 * r + 1] = tok[1], merges[3 * r + 2] = (int32_t)id;
        if (encoder_add(&e, r))
            st = aw_fail(AW_ERR_FORMAT, "piece %zu joins the same two pieces (%d, %d) as an earlier piece", id,
                         (int)tok[0], (int)tok[1]);
    }
    free(tok);
    scratch_free(&w);
    aw_bpe_encoder_free(&e);
    return st;
}
