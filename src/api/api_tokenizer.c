// api_tokenizer.c: the byte-level BPE tokenizer (src/model/bpe.h) for the wrapper (wasm/bpe.js).
// Stateless: the wrapper keeps a tokenizer's merges and passes them with each call.
#include "api.h"

#include "../model/bpe.h"

// The range of vocab_size that aw_bpe_train_text takes, so a page's label and bounds are the C's.
AW_API int aw_bpe_vocab_min(void) { return AW_BPE_VOCAB_MIN; }
AW_API int aw_bpe_vocab_max(void) { return AW_BPE_VOCAB_MAX; }

// merges (vocab_size - 259, 2): the (left, right) ids of each merge in rank order, trained on
// text (n bytes, UTF-8 or any bytes); *n_merges: how many (fewer when the text runs out of pairs).
AW_API int aw_bpe_train_text(int32_t *merges, int32_t *n_merges, const uint8_t *text, int32_t n, int32_t vocab_size) {
    aw_clear_error();
    *n_merges = 0;
    if (n < 0) return aw_fail(AW_ERR_ARG, "text length %d is negative", (int)n);
    if (vocab_size < AW_BPE_VOCAB_MIN || vocab_size > AW_BPE_VOCAB_MAX)
        return aw_fail(AW_ERR_ARG, "vocabSize is %d, outside [%d, %d] (3 specials and 256 bytes, then merges)",
                       (int)vocab_size, AW_BPE_VOCAB_MIN, AW_BPE_VOCAB_MAX);
    size_t got = 0;
    const int st = aw_bpe_train(merges, &got, text, (size_t)n, (size_t)vocab_size);
    *n_merges = (int32_t)got;
    return api_done(st);
}

// ids (at most n values) = the encoding of text (n bytes) with the first use_merges merges (the
// wrapper's `merges` option; n_merges for all); *n_ids: how many. byte_id (256): the id of each
// byte; merges (n_merges, 3): (left, right, result) in rank order; ids < n_pieces.
AW_API int aw_bpe_encode_text(int32_t *ids, int32_t *n_ids, const uint8_t *text, int32_t n, const int32_t *byte_id,
                              const int32_t *merges, int32_t n_merges, int32_t n_pieces, int32_t use_merges) {
    aw_clear_error();
    *n_ids = 0;
    if (n < 0 || n_merges < 0 || n_pieces <= 0) return aw_fail(AW_ERR_ARG, "sizes must not be negative");
    if (use_merges < 0)
        return aw_fail(AW_ERR_ARG, "merges is %d, outside [0, %d] (the tokenizer's merges, in rank order)",
                       (int)use_merges, (int)n_merges);
    aw_bpe_encoder e;
    int st = aw_bpe_encoder_init_first(&e, byte_id, merges, (size_t)n_merges, (size_t)n_pieces, (size_t)use_merges);
    if (st) return api_done(st);
    size_t got = 0;
    st = aw_bpe_encode(ids, &got, text, (size_t)n, &e);
    aw_bpe_encoder_free(&e);
    *n_ids = (int32_t)got;
    return api_done(st);
}

// merges (n_pieces - 259, 3) of a vocabulary in the trainer's layout, from its pieces' bytes
// (piece i at pieces[offsets[i] .. offsets[i + 1])): what llama2.c's tokenizer.bin leaves out.
AW_API int aw_bpe_merges_of_pieces(int32_t *merges, const uint8_t *pieces, const uint32_t *offsets, int32_t n_pieces) {
    aw_clear_error();
    if (n_pieces < 0) return aw_fail(AW_ERR_ARG, "n_pieces is negative");
    return api_done(aw_bpe_merges_from_pieces(merges, pieces, offsets, (size_t)n_pieces));
}
