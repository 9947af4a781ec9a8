// transformer_internal.h: what the forward and backward files share (transformer_forward.c,
// transformer_backward.c): each sublayer's output and the job that runs a form over the batch.
#ifndef AW_MODEL_TRANSFORMER_INTERNAL_H
#define AW_MODEL_TRANSFORMER_INTERNAL_H

#include "transformer.h"

#include "../kernels/parallel.h"

#include <stddef.h>

// A sublayer's output (the next one's input) and its gradient: the residual sum (pre-norm) or its norm (post).
static inline const float *attn_out(const aw_model *m, const aw_attn_acts *a) {
    return m->cfg.norm == AW_NORM_PRE ? a->res : a->ln;
}
static inline float *attn_dout(const aw_model *m, aw_attn_acts *da) { return m->cfg.norm == AW_NORM_PRE ? da->res : da->ln; }
static inline const float *ffn_out(const aw_model *m, const aw_ffn_acts *a) {
    return m->cfg.norm == AW_NORM_PRE ? a->res : a->ln;
}
static inline float *ffn_dout(const aw_model *m, aw_ffn_acts *da) { return m->cfg.norm == AW_NORM_PRE ? da->res : da->ln; }

// The encoder's output (its final norm's, pre-norm) and the decoder's last block's.
static inline const float *encoder_out(const aw_model *m, const aw_acts *a) {
    if (m->cfg.norm == AW_NORM_PRE) return a->enc_lnf;
    return ffn_out(m, &a->enc_ffn[m->cfg.layers - 1]);
}

static inline const float *decoder_stream_out(const aw_model *m, const aw_acts *a) {
    return ffn_out(m, &a->dec_ffn[m->cfg.layers - 1]);
}

// The form over the batch's sequences, one item each (src/kernels/parallel.h): in the threaded
// build at once for a form without parameters (its calls share nothing; each sequence has its
// own rows, weights and backward scratch), else one after the other. The first failure counts.
typedef struct {
    aw_model *m;
    aw_attn_form *f;
    aw_attn_acts *a, *da;
    const float *xq;
    float *dxq;
    size_t T, Tk;
    size_t work; // floats of backward scratch per sequence
    int keep, status;
} seq_job;

// Runs fn (seq_forward, seq_backward) over the B sequences of j (transformer_forward.c).
void model_run_sequences(seq_job *j, size_t B, aw_item_fn fn);

#endif
