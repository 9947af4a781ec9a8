// bpe.h: a byte-level byte-pair encoding (BPE) tokenizer: training by pair counts, encoding,
// and the merges of a vocabulary read back from its pieces (docs/tokenizers.md).
//
// The id layout is llama2.c's (its tokenizer.bin and run.c), so a model and its tokenizer keep
// the same ids in every format: 0 <unk>, 1 <s>, 2 </s> (never produced by encoding; <s> can
// separate documents), 3..258 the 256 bytes (id = byte + 3), then one piece per merge in rank
// order (id = 259 + rank): the bytes of its left piece followed by those of its right piece.
//
// Pre-tokenization is GPT-2's (Radford et al. 2019), Hugging Face's ByteLevel with use_regex:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// merges never cross the boundaries of these pre-tokens, so Hugging Face's encoder agrees.
#ifndef AW_BPE_H
#define AW_BPE_H

#include <stddef.h>
#include <stdint.h>

enum {
    AW_BPE_FIRST_BYTE = 3,    // id of byte 0
    AW_BPE_FIRST_MERGE = 259, // id of the piece of merge rank 0
    AW_BPE_VOCAB_MIN = 259,   // the specials and the bytes, no merges
    AW_BPE_VOCAB_MAX = 8192,
};

// The end (exclusive byte offset) of the pre-token that starts at text[i], i < n. Invalid UTF-8
// bytes count as one character each, neither letter, number nor space.
size_t aw_bpe_pretoken_end(const uint8_t *text, size_t n, size_t i);

// Trains merges on text (n bytes) until the vocabulary has vocab_size pieces or no pair occurs
// any more. merges: (vocab_size - 259, 2) ids (left, right) in rank order; *n_merges: how many.
// Each step merges the pair of adjacent pieces that occurs most often inside the pre-tokens
// (weighted by how often each pre-token occurs); ties go to the smaller left id, then the smaller
// right id. A pair whose joined bytes already are a piece (or a special's text) is never merged,
// so every piece has one id, as tokenizer.json's vocabulary requires; nor is a pair whose piece
// llama2.c's run.c could form across pre-tokens (piece_allowed in bpe.c: no piece splits a UTF-8
// character and holds a byte outside it, none is two or more white-space characters, none holds
// an apostrophe followed by a letter).
int aw_bpe_train(int32_t *merges, size_t *n_merges, const uint8_t *text, size_t n, size_t vocab_size);

// An encoder: the id of each byte, and merges (left, right, result) in rank order.
typedef struct {
    int32_t byte_id[256];
    const int32_t *merges; // (n_merges, 3)
    size_t n_merges;
    uint64_t *keys; // open addressing: (left << 32 | right) + 1, 0 = empty
    int32_t *ranks; // the merge rank of keys[i]
    size_t cap;     // a power of two, at least twice n_merges
} aw_bpe_encoder;

// Builds the lookup of merges (kept by pointer: they must outlive the encoder). Every id must lie
// in [0, n_pieces); a pair listed twice is refused.
int aw_bpe_encoder_init(aw_bpe_encoder *e, const int32_t *byte_id, const int32_t *merges, size_t n_merges,
                        size_t n_pieces);
// The encoder of the first use_merges merges only (ranks 0..use_merges-1) of a vocabulary of n_merges
// merges: it encodes as the tokenizer did when training had made those merges and no more (0: the
// bytes). use_merges > n_merges is refused, naming `merges` and the range (the wrapper's option).
int aw_bpe_encoder_init_first(aw_bpe_encoder *e, const int32_t *byte_id, const int32_t *merges, size_t n_merges,
                              size_t n_pieces, size_t use_merges);
void aw_bpe_encoder_free(aw_bpe_encoder *e);

// ids (at most n values) = the encoding of text (n bytes): each pre-token's bytes as their ids,
// then repeatedly the lowest-ranked merge of two neighbours, ties to the leftmost.
int aw_bpe_encode(int32_t *ids, size_t *n_ids, const uint8_t *text, size_t n, const aw_bpe_encoder *e);

// The merges (left, right, result) of a vocabulary in the layout above from its pieces alone (as
// in llama2.c's tokenizer.bin, which stores no merges): piece 259 + r is merge r, and its halves
// are the two pieces its bytes encode to with merges 0..r-1. A piece that does not encode to two
// pieces is refused. pieces: the bytes of all pieces back to back, piece i at
// [offsets[i], offsets[i + 1]). merges: (n_pieces - 259, 3).
int aw_bpe_merges_from_pieces(int32_t *merges, const uint8_t *pieces, const uint32_t *offsets, size_t n_pieces);

#endif
