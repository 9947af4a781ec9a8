// tasks.c: the seeded data generators of tasks.h.
#include "tasks.h"

#include "../kernels/status.h"

#include <stdint.h>
#include <string.h>

void aw_rng_seed(aw_rng *rng, uint64_t seed) { rng->state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull; }

uint32_t aw_rng_u32(aw_rng *rng) {
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

float aw_rng_uniform(aw_rng *rng) { return (float)(aw_rng_u32(rng) >> 8) * (1.0f / 16777216.0f); }

uint32_t aw_rng_below(aw_rng *rng, uint32_t n) { return (uint32_t)(((uint64_t)aw_rng_u32(rng) * n) >> 32); }

const char AW_CHARSET[] = " \n!\"'(),-.0123456789:;?abcdefghijklmnopqrstuvwxyz";

size_t chars_vocab(void) { return 1 + sizeof AW_CHARSET - 1; }

int32_t char_to_token(unsigned char c) {
    if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
    const char *p = c ? strchr(AW_CHARSET, c) : NULL;
    return p ? (int32_t)(p - AW_CHARSET) + 1 : 0;
}

char token_to_char(int32_t t) { return t >= 1 && (size_t)t < chars_vocab() ? AW_CHARSET[t - 1] : '\0'; }

// The chars task's text when task_set_text gave one (else the built-in corpus).
static struct {
    const char *train, *held;
    size_t n_train, n_held;
    int bos; // 1: windows start at a document's start, after a token 0 (the beginning of a sequence)
    uint32_t repeats; // > 0: one training window in this many repeats a passage of itself (task_set_text_repeats)
    uint32_t twice;   // > 0: one training window in this many starts with a passage read twice (task_set_text_twice)
    uint32_t letters; // > 0: one training window in this many starts with random letters read twice (task_set_text_letters)
    const int32_t *train_ids, *held_ids; // sub-word tokens instead of characters (task_set_text_tokens)
    size_t n_train_ids, n_held_ids;
    int32_t vocab, newline, bos_id, letter_a;
} text;

int task_set_text_tokens(const int32_t *train, size_t n_train, const int32_t *held, size_t n_held, int32_t vocab,
                         int32_t newline, int32_t bos, int32_t letter_a) {
    if (!train) return text.train_ids = text.held_ids = NULL, AW_OK;
    if (n_train < 64 || n_held < 64 || n_train > UINT32_MAX || n_held > UINT32_MAX || vocab < 1)
        return aw_fail(AW_ERR_ARG, "the chars task's tokens need 64 to 2^32 tokens of training and of held-out text, "
                                   "got %zu and %zu", n_train, n_held);
    text.train_ids = train, text.n_train_ids = n_train, text.held_ids = held, text.n_held_ids = n_held;
    text.vocab = vocab, text.newline = newline, text.bos_id = bos, text.letter_a = letter_a;
    return AW_OK;
}

// Token i of a window's text: its character's token, or the sub-word id (task_set_text_tokens).
static int32_t text_token(const char *t, const int32_t *ids, size_t i) {
    return ids ? ids[i] : char_to_token((unsigned char)t[i]);
}
static int text_newline(const char *t, const int32_t *ids, size_t i) { return ids ? ids[i] == text.newline : t[i] == '\n'; }

void task_set_text_bos(int bos) { text.bos = bos != 0; }
void task_set_text_repeats(uint32_t every) { text.repeats = every; }
void task_set_text_twice(uint32_t every) { text.twice = every; }
void task_set_text_letters(uint32_t every) { text.letters = every; }

// A passage of the window copied to a later place in it (training windows only, one in text.repeats):
// the window's own text read again, the pattern an induction head completes. Passages of 12 to n/4
// characters, at random places; the window's start (and a start token) stay as they were.
static void repeat_passage(int32_t *tgt, size_t n, aw_rng *rng) {
    const size_t first = text.bos ? 1 : 0, len = n + 1 - first;
    if (len < 48) return;
    const size_t span = 12 + aw_rng_below(rng, (uint32_t)(len / 4 - 12 + 1));
    const size_t a = first + aw_rng_below(rng, (uint32_t)(len - 2 * span + 1));
    const size_t b = a + span + aw_rng_below(rng, (uint32_t)(first + len - span - (a + span) + 1));
    memmove(tgt + b, tgt + a, span * sizeof *tgt);
}

// The window's first passage read twice: its first span characters (16 to half the window, so the
// distance back varies and no fixed offset does the copy), then the same again, then the text that
// followed the passage.
// letters = 1: the passage is 8 to 24 distinct random lowercase letters instead (the repeat task in
// letters, the page's probe's kind: only a copy predicts its second reading, and one letter's match
// says where), then the window's text from its start.
static void read_twice(int32_t *tgt, size_t n, aw_rng *rng, int letters) {
    const size_t first = text.bos ? 1 : 0, len = n + 1 - first, least = letters ? 8 : 16;
    const size_t most = letters ? (len / 2 < 24 ? len / 2 : 24) : len / 2;
    if (len < 2 * least) return;
    const size_t span = least + aw_rng_below(rng, (uint32_t)(most - least + 1));
    if (letters) {
        char abc[26];
        for (int i = 0; i < 26; i++) abc[i] = (char)('a' + i);
        for (size_t i = 0; i < span; i++) { // a partial Fisher-Yates shuffle: span distinct letters
            const size_t j = i + aw_rng_below(rng, (uint32_t)(26 - i));
            const char t = abc[i];
            abc[i] = abc[j], abc[j] = t;
        }
        memmove(tgt + first + 2 * span, tgt + first, (len - 2 * span) * sizeof *tgt);
        for (size_t i = 0; i < span; i++)
            tgt[first + i] = text.train_ids ? text.letter_a + (abc[i] - 'a') : char_to_token((unsigned char)abc[i]);
    } else {
        memmove(tgt + first + 2 * span, tgt + first + span, (len - 2 * span) * sizeof *tgt);
    }
    memcpy(tgt + first + span, tgt + first, span * sizeof *tgt);
}

int task_set_text(const char *train, size_t n_train, const char *held, size_t n_held) {
    if (!train) return text.train = text.held = NULL, text.n_train = text.n_held = 0, AW_OK;
    if (n_train < 64 || n_held < 64 || n_train > UINT32_MAX || n_held > UINT32_MAX)
        return aw_fail(AW_ERR_ARG, "the chars task's text needs 64 B to 4 GiB of training and of held-out text, got "
                                   "%zu and %zu", n_train, n_held);
    text.train = train, text.n_train = n_train, text.held = held, text.n_held = n_held;
    return AW_OK;
}

static const char *const DIGIT_WORDS[10] = {"zero", "one", "two", "three", "four",
                                            "five", "six", "seven", "eight", "nine"};

static const char *const TASK_NAMES[AW_TASK_COUNT] = {"copy", "reverse", "sort", "recall", "translate", "chars",
                                                      "repeat", "mqar"};

const char *task_name(int task) { return task >= 0 && task < AW_TASK_COUNT ? TASK_NAMES[task] : "?"; }

int task_find(const char *name) {
    for (int t = 0; name && t < AW_TASK_COUNT; t++)
        if (strcmp(TASK_NAMES[t], name) == 0) return t;
    return -1;
}

int task_check(const aw_task_spec *s) {
    if (s->task < 0 || s->task >= AW_TASK_COUNT) return aw_fail(AW_ERR_ARG, "task: unknown task %d", s->task);
    const char *name = TASK_NAMES[s->task];
    if (s->length == 0 || s->length > 4096)
        return aw_fail(AW_ERR_ARG, "task \"%s\": length must be in [1, 4096], got %zu", name, s->length);
    switch (s->task) {
    case AW_TASK_COPY:
    case AW_TASK_REVERSE:
    case AW_TASK_SORT:
        if (s->symbols < 2 || s->symbols > AW_TASK_MAX_SYMBOLS)
            return aw_fail(AW_ERR_ARG, "task \"%s\": symbols must be in [2, %d], got %zu", name, AW_TASK_MAX_SYMBOLS,
                           s->symbols);
        return AW_OK;
    case AW_TASK_RECALL:
    case AW_TASK_MQAR:
        if (s->symbols < 4 || s->symbols > 4096)
            return aw_fail(AW_ERR_ARG, "task \"%s\": symbols must be in [4, 4096], got %zu", name, s->symbols);
        if (s->length > s->symbols / 2)
            return aw_fail(AW_ERR_ARG, "task \"%s\": %zu pairs need distinct keys, and symbols = %zu gives only "
                                       "%zu (keys are half the symbols); use length <= %zu or more symbols",
                           name, s->length, s->symbols, s->symbols / 2, s->symbols / 2);
        return AW_OK;
    case AW_TASK_REPEAT:
        if (s->length < 2) return aw_fail(AW_ERR_ARG, "task \"repeat\": length must be at least 2, got %zu", s->length);
        if (s->symbols < 2 || s->symbols > AW_TASK_MAX_SYMBOLS)
            return aw_fail(AW_ERR_ARG, "task \"repeat\": symbols must be in [2, %d], got %zu", AW_TASK_MAX_SYMBOLS, s->symbols);
        return AW_OK;
    case AW_TASK_CHARS: {
        const size_t held = text.held ? text.n_held : aw_chars_corpus_len / 10;
        const size_t train = text.train ? text.n_train : aw_chars_corpus_len - aw_chars_corpus_len / 10;
        const size_t least = held < train ? held : train;
        if (s->length + 1 >= least)
            return aw_fail(AW_ERR_ARG, "task \"chars\": length must be below %zu (the %s text)", least - 1,
                           held < train ? "held-out" : "training");
        return AW_OK;
    }
    default: return AW_OK;
    }
}

size_t task_src_len(const aw_task_spec *s) {
    switch (s->task) {
    case AW_TASK_RECALL: return 2 * s->length + 1;
    case AW_TASK_MQAR: return 2 * s->length;
    case AW_TASK_CHARS:
    case AW_TASK_REPEAT: return 0;
    default: return s->length;
    }
}

size_t task_tgt_len(const aw_task_spec *s) {
    switch (s->task) {
    case AW_TASK_RECALL: return 1;
    case AW_TASK_MQAR: return 2 * s->length;
    case AW_TASK_TRANSLATE: return 6 * s->length; // up to 5 letters + a space (or the end marker) per digit
    case AW_TASK_CHARS: return s->length + 1;
    case AW_TASK_REPEAT: return 2 * s->length + 1;
    default: return s->length;
    }
}

int task_is_lm(const aw_task_spec *s) { return s->task == AW_TASK_CHARS || s->task == AW_TASK_REPEAT; }

int task_uses_separator(const aw_task_spec *s) {
    return s->task != AW_TASK_CHARS && s->task != AW_TASK_RECALL && s->task != AW_TASK_REPEAT && s->task != AW_TASK_MQAR;
}

int task_target_scored(const aw_task_spec *s, size_t j) { return s->task != AW_TASK_MQAR || j % 2 == 1; }

int32_t task_min_vocab(const aw_task_spec *s) {
    if (s->task == AW_TASK_CHARS && text.train && text.train_ids) return text.vocab;
    if (s->task == AW_TASK_TRANSLATE || s->task == AW_TASK_CHARS) return (int32_t)chars_vocab();
    return (int32_t)s->symbols + 1;
}

static void sort_tokens(int32_t *x, size_t n) {
    for (size_t i = 1; i < n; i++) {
        int32_t v = x[i];
        size_t j = i;
        for (; j > 0 && x[j - 1] > v; j--) x[j] = x[j - 1];
        x[j] = v;
    }
}

size_t task_example(int32_t *src, int32_t *tgt, const aw_task_spec *s, aw_rng *rng) {
    const size_t n = s->length;
    switch (s->task) {
    case AW_TASK_COPY:
    case AW_TASK_REVERSE:
    case AW_TASK_SORT:
        for (size_t i = 0; i < n; i++) src[i] = 1 + (int32_t)aw_rng_below(rng, (uint32_t)s->symbols);
        for (size_t i = 0; i < n; i++) tgt[i] = s->task == AW_TASK_REVERSE ? src[n - 1 - i] : src[i];
        if (s->task == AW_TASK_SORT) sort_tokens(tgt, n);
        return n;
    case AW_TASK_RECALL:
    case AW_TASK_MQAR: {
        const uint32_t keys = (uint32_t)(s->symbols / 2), values = (uint32_t)(s->symbols - keys);
        int32_t pool[2048];
        for (uint32_t i = 0; i < keys && i < 2048; i++) pool[i] = 1 + (int32_t)i;
        for (size_t i = 0; i < n; i++) { // partial Fisher-Yates: n distinct keys
            uint32_t j = (uint32_t)i + aw_rng_below(rng, keys - (uint32_t)i);
            int32_t t = pool[i];
            pool[i] = pool[j], pool[j] = t;
            src[2 * i] = pool[i];
            src[2 * i + 1] = 1 + (int32_t)keys + (int32_t)aw_rng_below(rng, values);
        }
        if (s->task == AW_TASK_MQAR) { // every pair queried once, in a random order: q1 a1 q2 a2 ...
            for (size_t i = 0; i < n; i++) pool[i] = (int32_t)i;
            for (size_t i = 0; i + 1 < n; i++) {
                const size_t j = i + aw_rng_below(rng, (uint32_t)(n - i));
                const int32_t t = pool[i];
                pool[i] = pool[j], pool[j] = t;
            }
            for (size_t i = 0; i < n; i++) tgt[2 * i] = src[2 * pool[i]], tgt[2 * i + 1] = src[2 * pool[i] + 1];
            return 2 * n;
        }
        const size_t q = aw_rng_below(rng, (uint32_t)n);
        src[2 * n] = src[2 * q];
        tgt[0] = src[2 * q + 1];
        return 1;
    }
    case AW_TASK_TRANSLATE: {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            const uint32_t digit = aw_rng_below(rng, 10);
            src[i] = char_to_token((unsigned char)('0' + digit));
            if (i) tgt[k++] = char_to_token(' ');
            for (const char *w = DIGIT_WORDS[digit]; *w; w++) tgt[k++] = char_to_token((unsigned char)*w);
        }
        tgt[k++] = 0; // end marker
        const size_t real = k;
        while (k < task_tgt_len(s)) tgt[k++] = 0;
        return real;
    }
    case AW_TASK_REPEAT: {
        const size_t k = (n + 1) / 2 + aw_rng_below(rng, (uint32_t)(n - (n + 1) / 2 + 1)), total = 2 * n + 1;
        for (size_t i = 0; i < k; i++) { // distinct symbols when there are enough (rejection over a short list)
            int32_t x;
            int again;
            do {
                x = 1 + (int32_t)aw_rng_below(rng, (uint32_t)s->symbols);
                again = 0;
                for (size_t j = 0; j < i && s->symbols >= k; j++) again |= tgt[j] == x;
            } while (again);
            tgt[i] = tgt[k + i] = x;
        }
        for (size_t i = 2 * k; i < total; i++) tgt[i] = 0;
        return 2 * k;
    }
    case AW_TASK_CHARS: {
        if (text.train) { // a corpus of its own (task_set_text): the training or the held-out documents
            const char *t = s->heldout ? text.held : text.train;
            const int32_t *ids = text.train_ids ? (s->heldout ? text.held_ids : text.train_ids) : NULL;
            const size_t len = ids ? (s->heldout ? text.n_held_ids : text.n_train_ids) : s->heldout ? text.n_held : text.n_train;
            size_t start = aw_rng_below(rng, (uint32_t)(len - (n + 1)));
            if (text.bos) { // the next document's start (documents end with a blank line), after token 0
                while (start > 0 && start + n + 1 < len && !(text_newline(t, ids, start - 1) && start >= 2 && text_newline(t, ids, start - 2))) start++;
                if (start + n + 1 >= len) start = 0;
                tgt[0] = ids ? text.bos_id : 0;
                for (size_t i = 1; i <= n; i++) tgt[i] = text_token(t, ids, start + i - 1);
            } else {
                for (size_t i = 0; i <= n; i++) tgt[i] = text_token(t, ids, start + i);
            }
            if (text.letters && !s->heldout && aw_rng_below(rng, text.letters) == 0) read_twice(tgt, n, rng, 1);
            else if (text.twice && !s->heldout && aw_rng_below(rng, text.twice) == 0) read_twice(tgt, n, rng, 0);
            else if (text.repeats && !s->heldout && aw_rng_below(rng, text.repeats) == 0) repeat_passage(tgt, n, rng);
            return n + 1;
        }
        const size_t split = aw_chars_corpus_len - aw_chars_corpus_len / 10; // training | held out
        const size_t lo = s->heldout ? split : 0, hi = s->heldout ? aw_chars_corpus_len : split;
        const size_t start = lo + aw_rng_below(rng, (uint32_t)(hi - lo - (n + 1)));
        for (size_t i = 0; i <= n; i++) tgt[i] = char_to_token((unsigned char)aw_chars_corpus[start + i]);
        return n + 1;
    }
    default: return 0;
    }
}
