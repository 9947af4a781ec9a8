// tasks.h: the built-in tasks, as seeded data generators in C so that Node, browsers and the
// native trainer see exactly the same examples. Each example is a source sequence and a target
// sequence of token ids; token 0 is the separator (and the end marker of variable targets).
//   copy, reverse, sort   src: `length` symbols 1..symbols; tgt: the same, reversed, sorted
//   recall                src: `length` key-value pairs then one of the keys; tgt: its value
//                         (a decoder predicts it at the query, with no separator).
//                         Keys are drawn from 1..symbols/2 (distinct), values from the rest.
//   translate             src: `length` digit characters; tgt: their number words in letters,
//                         space-separated, then the end marker 0 (chars token ids)
//   chars                 character language modelling on data/chars.txt: tgt = length + 1
//                         consecutive characters (no source); training windows come from the
//                         first 90% of the text, held-out ones (evaluation) from the last 10%
//   repeat                a plain token stream (no source, no separator): k random symbols
//                         (distinct when symbols >= k), then the same k again, k drawn from
//                         [ceil(length / 2), length] per example, padded to 2 length + 1; only the
//                         second copy is predictable, by looking back to what followed the current
//                         symbol's earlier occurrence (an induction head), at an offset that varies
//   mqar                  multi-query associative recall (Zoology's MQAR, Arora et al. 2023, arXiv
//                         2312.04927): src: `length` key-value pairs as recall's; tgt: every key
//                         again in a random order, each followed by its value (q1 a1 q2 a2 ...).
//                         Only the values carry loss (task_target_scored), so a decoder answers
//                         `length` lookups per sequence; a fixed-size state must hold them all
#ifndef AW_MODEL_TASKS_H
#define AW_MODEL_TASKS_H

#include <stddef.h>
#include <stdint.h>

enum aw_task { AW_TASK_COPY, AW_TASK_REVERSE, AW_TASK_SORT, AW_TASK_RECALL, AW_TASK_TRANSLATE, AW_TASK_CHARS,
               AW_TASK_REPEAT, AW_TASK_MQAR, AW_TASK_COUNT };

// A small, fast, portable generator (splitmix64): the same stream in every build.
typedef struct {
    uint64_t state;
} aw_rng;
void aw_rng_seed(aw_rng *rng, uint64_t seed);
uint32_t aw_rng_u32(aw_rng *rng);
float aw_rng_uniform(aw_rng *rng);         // [0, 1), 24 random bits
uint32_t aw_rng_below(aw_rng *rng, uint32_t n); // [0, n)

typedef struct {
    int task;       // enum aw_task
    size_t length;  // symbols (copy/reverse/sort), pairs (recall), digits (translate), characters (chars)
    size_t symbols; // distinct symbols, ids 1..symbols (copy/reverse/sort/recall; ignored otherwise)
    int heldout;    // chars: 0 = windows of the first 90% of the text (training), 1 = of the last 10%
} aw_task_spec;

enum { AW_TASK_MAX_SYMBOLS = (1 << 20) - 1 }; // ids 1..symbols must fit a vocabulary of 2^20
// Checks a spec: AW_OK, or AW_ERR_ARG with a message (length 0, too few or too many symbols,
// recall with more pairs than keys).
int task_check(const aw_task_spec *spec);
const char *task_name(int task); // "copy", ... ("?" for an unknown id)
int task_find(const char *name); // the id of a task name, -1 when unknown
size_t task_src_len(const aw_task_spec *spec);     // source tokens (0 for chars)
size_t task_tgt_len(const aw_task_spec *spec);     // target tokens, the maximum for translate
int task_is_lm(const aw_task_spec *spec);          // 1 for chars: a plain token stream, no source
// 1 when a decoder-only model sees src, 0, tgt; 0 for recall and mqar, whose query key itself is
// the position that predicts the value (the usual associative-recall layout), and for chars.
int task_uses_separator(const aw_task_spec *spec);
int32_t task_min_vocab(const aw_task_spec *spec);  // the smallest model vocabulary that holds it
// 1 when target token j carries loss, 0 when it is input only (mqar's query keys: unpredictable).
int task_target_scored(const aw_task_spec *spec, size_t j);
// Draws one example: src (task_src_len), tgt (task_tgt_len); returns how many target tokens
// are real (the rest, for translate, are padding 0s that carry no loss).
size_t task_example(int32_t *src, int32_t *tgt, const aw_task_spec *spec, aw_rng *rng);

// The chars tokenizer: id = 1 + index in AW_CHARSET after lower-casing; 0 for unknown bytes.
extern const char AW_CHARSET[];
size_t chars_vocab(void); // 1 + strlen(AW_CHARSET)
int32_t char_to_token(unsigned char c);
char token_to_char(int32_t t); // '\0' for ids outside the charset

// The text of data/chars.txt, compiled in (src/model/chars_corpus.c, made by
// scripts/gen_corpus.mjs).
// The chars task reads this text instead of the built-in corpus (the caller keeps both buffers
// alive): windows of the training text for training, of the held-out text for evaluation (split
// by document, not by position, by whoever builds them). NULL restores the built-in corpus.
int task_set_text(const char *train, size_t n_train, const char *held, size_t n_held);
// With such a text: 1 makes every window start at a document's start, after a token 0 (a
// beginning-of-sequence mark), as language models are trained on whole documents.
void task_set_text_bos(int bos);
// 0 (the default): windows as the text has them; N: one training window in N repeats a passage of itself.
void task_set_text_repeats(uint32_t every);
// 0 (the default): none; N: one training window in N starts with a passage of 16 to n/2 characters read
// twice (the page's "your phrase twice" on real text, at varying distances); it repeats nothing else.
void task_set_text_twice(uint32_t every);
// 0 (the default): none; N: one training window in N starts with 8 to 24 distinct random lowercase
// letters read twice, then the text (the repeat task in letters: only a copy predicts the second reading).
void task_set_text_letters(uint32_t every);
// The chars task on sub-word tokens (a BPE's ids, src/model/bpe.h) instead of characters: windows of
// these ids (after task_set_text, whose text they encode; the caller keeps them alive). vocab: the
// tokenizer's size (the model's vocab must reach it); newline: the id of "\n" (a document starts
// after two); bos: the id that starts a window with task_set_text_bos; letter_a: the id of "a" (the
// letters of task_set_text_letters are letter_a + 0..25). NULL goes back to characters.
int task_set_text_tokens(const int32_t *train, size_t n_train, const int32_t *held, size_t n_held, int32_t vocab,
                         int32_t newline, int32_t bos, int32_t letter_a);
extern const char aw_chars_corpus[];
extern const size_t aw_chars_corpus_len;

#endif
