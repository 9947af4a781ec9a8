// test_bpe.c: the byte-level BPE (src/model/bpe.c) under ASan + UBSan: GPT-2's pre-tokens on
// known strings, the merges of a small text worked by hand, the merges rebuilt from the pieces
// alone, exact round trips on random bytes, and the range errors.
#include "../../src/kernels/status.h"
#include "../../src/model/bpe.h"
#include "test.h"

#include <string.h>

// The pre-tokens of s joined by '|'.
static void split(char *out, const char *s) {
    const size_t n = strlen(s);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const size_t j = aw_bpe_pretoken_end((const uint8_t *)s, n, i);
        if (i) out[k++] = '|';
        memcpy(out + k, s + i, j - i), k += j - i;
        i = j;
    }
    out[k] = 0;
}

static void test_pretokens(void) {
    static const char *const cases[][2] = {
        {"Hello, world!", "Hello|,| world|!"},
        {"It's 42 o'clock", "It|'s| 42| o|'|clock"},
        {"x  y", "x| | y"},
        {"a \n\n b", "a| \n\n| b"},
        {"end   ", "end|   "},
        {"\t\tx", "\t|\t|x"}, // a tab does not lead a word as a space does
        {"caf\xc3\xa9 na\xc3\xafve", "caf\xc3\xa9| na\xc3\xafve"},             // letters beyond ASCII
        {"x \xe2\x85\xab!!", "x| \xe2\x85\xab|!!"},                              // U+216B ROMAN NUMERAL TWELVE is a number
        {"a\xe3\x80\x80" "b", "a|\xe3\x80\x80|b"},                               // U+3000 is white space, not " "
        {"\xff\xfe" "ab", "\xff\xfe|ab"},                                        // invalid bytes: other
    };
    char got[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        split(got, cases[i][0]);
        CHECK(strcmp(got, cases[i][1]) == 0, "pre-tokens of case %zu: got \"%s\", expected \"%s\"", i, got, cases[i][1]);
    }
}

static void test_known_merges(void) {
    // aa (4) -> 259; then (a, b) and (aa, a) tie at 2, the smaller left id first -> ab 260; (aa, ab) -> 261
    const char *text = "aaabdaaabac";
    int32_t merges[2 * 10];
    size_t n = 0;
    CHECK(aw_bpe_train(merges, &n, (const uint8_t *)text, strlen(text), 262) == AW_OK, "train: %s", aw_error_message());
    const int32_t a = 3 + 'a', b = 3 + 'b';
    const int32_t want[] = {a, a, a, b, 259, 260};
    CHECK(n == 3 && memcmp(merges, want, sizeof want) == 0, "merges of aaabdaaabac: %zu, (%d %d) (%d %d) (%d %d)", n,
          merges[0], merges[1], merges[2], merges[3], merges[4], merges[5]);
    int32_t m3[9], byte_id[256];
    for (int i = 0; i < 256; i++) byte_id[i] = 3 + i;
    for (int r = 0; r < 3; r++) m3[3 * r] = merges[2 * r], m3[3 * r + 1] = merges[2 * r + 1], m3[3 * r + 2] = 259 + r;
    aw_bpe_encoder e;
    CHECK(aw_bpe_encoder_init(&e, byte_id, m3, 3, 262) == AW_OK, "encoder");
    int32_t ids[16];
    size_t k = 0;
    CHECK(aw_bpe_encode(ids, &k, (const uint8_t *)text, strlen(text), &e) == AW_OK, "encode");
    const int32_t ids_want[] = {261, 3 + 'd', 261, a, 3 + 'c'};
    CHECK(k == 5 && memcmp(ids, ids_want, sizeof ids_want) == 0, "ids of aaabdaaabac");
    aw_bpe_encoder_free(&e);
    // the first merges only: 0 gives the bytes; 1 (aa) gives aa a b d aa a b a c
    CHECK(aw_bpe_encoder_init_first(&e, byte_id, m3, 3, 262, 0) == AW_OK, "encoder of 0 merges");
    CHECK(aw_bpe_encode(ids, &k, (const uint8_t *)text, strlen(text), &e) == AW_OK && k == strlen(text) && ids[3] == b && ids[4] == 3 + 'd',
          "0 merges: one id per byte");
    aw_bpe_encoder_free(&e);
    CHECK(aw_bpe_encoder_init_first(&e, byte_id, m3, 3, 262, 1) == AW_OK, "encoder of 1 merge");
    const int32_t ids1[] = {259, a, b, 3 + 'd', 259, a, b, a, 3 + 'c'};
    CHECK(aw_bpe_encode(ids, &k, (const uint8_t *)text, strlen(text), &e) == AW_OK && k == 9 &&
              memcmp(ids, ids1, sizeof ids1) == 0,
          "1 merge: aa a b d aa a b a c (%zu ids)", k);
    aw_bpe_encoder_free(&e);
    aw_clear_error();
    CHECK(aw_bpe_encoder_init_first(&e, byte_id, m3, 3, 262, 4) == AW_ERR_ARG, "4 of 3 merges is refused");
    CHECK(strstr(aw_error_message(), "merges is 4, outside [0, 3]") != NULL, "message: %s", aw_error_message());
    aw_clear_error();
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
    return rng_state;
}

static void test_train_roundtrip(void) {
    // a text of words over a few letters, spaces and some random bytes
    const size_t n = 40000;
    uint8_t *text = malloc(n);
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = rnd() % 100;
        text[i] = r < 15 ? ' ' : r < 20 ? (uint8_t)(rnd() & 255) : (uint8_t)("etaoinshrdlu"[rnd() % 12]);
    }
    const size_t vocab = 700;
    int32_t *pairs = malloc(2 * sizeof *pairs * vocab), *merges = malloc(3 * sizeof *merges * vocab);
    size_t n_merges = 0;
    CHECK(aw_bpe_train(pairs, &n_merges, text, n, vocab) == AW_OK, "train: %s", aw_error_message());
    CHECK(n_merges == vocab - 259, "%zu merges, expected %zu", n_merges, vocab - 259);
    // the pieces' bytes
    uint8_t *bytes = malloc(1 << 20);
    uint32_t *off = calloc(vocab + 1, sizeof *off);
    const char *specials[3] = {"<unk>", "<s>", "</s>"};
    for (size_t id = 0; id < 259 + n_merges; id++) {
        size_t len;
        if (id < 3) len = strlen(specials[id]), memcpy(bytes + off[id], specials[id], len);
        else if (id < 259) len = 1, bytes[off[id]] = (uint8_t)(id - 3);
        else {
            const int32_t a = pairs[2 * (id - 259)], b = pairs[2 * (id - 259) + 1];
            const size_t la = off[a + 1] - off[a], lb = off[b + 1] - off[b];
            memcpy(bytes + off[id], bytes + off[a], la), memcpy(bytes + off[id] + la, bytes + off[b], lb), len = la + lb;
        }
        off[id + 1] = off[id] + (uint32_t)len;
    }
    // the merges come back from the pieces alone
    CHECK(aw_bpe_merges_from_pieces(merges, bytes, off, 259 + n_merges) == AW_OK, "merges from pieces: %s", aw_error_message());
    int same = 1;
    for (size_t r = 0; r < n_merges; r++)
        same &= merges[3 * r] == pairs[2 * r] && merges[3 * r + 1] == pairs[2 * r + 1] && merges[3 * r + 2] == (int32_t)(259 + r);
    CHECK(same, "the merges rebuilt from the pieces are the trained ones");
    // encode random bytes, decode by joining the pieces: the same bytes
    int32_t byte_id[256];
    for (int i = 0; i < 256; i++) byte_id[i] = 3 + i;
    aw_bpe_encoder e;
    CHECK(aw_bpe_encoder_init(&e, byte_id, merges, n_merges, 259 + n_merges) == AW_OK, "encoder");
    int32_t *ids = malloc(sizeof *ids * n);
    uint8_t *back = malloc(n);
    size_t k = 0;
    CHECK(aw_bpe_encode(ids, &k, text, n, &e) == AW_OK, "encode");
    size_t at = 0;
    for (size_t i = 0; i < k && at <= n; i++) {
        const size_t len = off[ids[i] + 1] - off[ids[i]];
        if (at + len <= n) memcpy(back + at, bytes + off[ids[i]], len);
        at += len;
    }
    CHECK(at == n && memcmp(back, text, n) == 0, "decode(encode(text)) is the text (%zu bytes back of %zu)", at, n);
    CHECK(k < n * 3 / 5, "merges shorten the text: %zu tokens for %zu bytes", k, n);
    printf("bpe: %zu random bytes -> %zu tokens, vocab %zu, round trip exact\n", n, k, vocab);
    // a piece that is not two earlier pieces joined is refused
    const uint32_t keep = off[260];
    off[260] = off[259] + 3; // piece 259 now three bytes
    CHECK(aw_bpe_merges_from_pieces(merges, bytes, off, 260) == AW_ERR_FORMAT, "a 3-byte piece 259 is refused");
    aw_clear_error();
    off[260] = keep;
    aw_bpe_encoder_free(&e);
    free(text), free(pairs), free(merges), free(bytes), free(off), free(ids), free(back);
}

static void test_errors(void) {
    int32_t merges[2];
    size_t n;
    aw_clear_error();
    CHECK(aw_bpe_train(merges, &n, (const uint8_t *)"abc", 3, 258) == AW_ERR_ARG, "vocab 258 is refused");
    CHECK(strstr(aw_error_message(), "vocabSize is 258, outside [259, 8192]") != NULL, "message: %s", aw_error_message());
    aw_clear_error();
    CHECK(aw_bpe_train(merges, &n, (const uint8_t *)"abc", 3, 8193) == AW_ERR_ARG, "vocab 8193 is refused");
    aw_clear_error();
    CHECK(aw_bpe_train(merges, &n, (const uint8_t *)"", 0, 300) == AW_ERR_ARG, "empty text is refused");
    aw_clear_error();
    int32_t byte_id[256];
    for (int i = 0; i < 256; i++) byte_id[i] = 3 + i;
    const int32_t bad[3] = {3, 4, 900};
    aw_bpe_encoder e;
    CHECK(aw_bpe_encoder_init(&e, byte_id, bad, 1, 260) == AW_ERR_ARG, "a merge naming id 900 of 260 is refused");
    aw_clear_error();
}

int main(void) {
    test_pretokens();
    test_known_merges();
    test_train_roundtrip();
    test_errors();
    printf("test_bpe: %s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
