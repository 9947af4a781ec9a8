// transformer_acts.c: the activations' layout (one allocation carved by a size table, as the
// parameters are) and model_reserve, which sizes it and the batch's buffers for (B, T, S); their
// gradients' twin of it for a trainable model, and for an inference-only one only around a backward
// (model_reserve_dacts, model_release_dacts).
#include "transformer.h"

#include "form_layer.h"

#include "../kernels/parallel.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    float *base; // NULL: only count
    aw_plan plan;
} carver;

// a * b floats (checked: an overflow makes the whole plan invalid)
static float *carve(carver *cv, size_t a, size_t b) {
    const size_t at = aw_plan_take(&cv->plan, a, b);
    return cv->base ? cv->base + at : NULL;
}

// keep: the weights for display (B, H, T, Tk); else none. saved: the form's own, linear in T, Tk.
static void carve_attn(carver *cv, aw_attn_acts *a, const aw_attn_form *f, int keep, size_t B, size_t T, size_t Tk,
                       size_t C, size_t A, size_t H, size_t KC) {
    const size_t N = aw_size_mul(B, T), Nk = aw_size_mul(B, Tk);
    a->ln = carve(cv, N, C), a->ln_mean = carve(cv, N, 1), a->ln_rstd = carve(cv, N, 1);
    a->q = carve(cv, N, A), a->k = carve(cv, Nk, A), a->v = carve(cv, Nk, A);
    a->att = keep ? carve(cv, aw_size_mul(B, H), aw_size_mul(T, Tk)) : NULL;
    a->kv = KC < A ? carve(cv, Nk, aw_size_mul(2, KC)) : NULL;
    a->saved = f->form->saved_floats ? carve(cv, B, f->form->saved_floats(f, T, Tk)) : NULL;
    a->o = carve(cv, N, A), a->res = carve(cv, N, C);
}

static void carve_ffn(carver *cv, aw_ffn_acts *f, size_t N, size_t C, size_t F, int swiglu) {
    f->ln = carve(cv, N, C), f->ln_mean = carve(cv, N, 1), f->ln_rstd = carve(cv, N, 1);
    f->h = carve(cv, N, F), f->r = carve(cv, N, F), f->res = carve(cv, N, C);
    f->u = swiglu ? carve(cv, N, F) : NULL;
}

// Carves the activations of (B, T, S) from base (NULL: only counts); returns the floats needed,
// AW_SIZE_INVALID when that does not fit in size_t.
static size_t carve_acts(const aw_model *m, float *base, aw_acts *a, size_t B, size_t T, size_t S) {
    const aw_model_config *c = &m->cfg;
    const size_t C = (size_t)c->d_model, V = (size_t)c->vocab, F = (size_t)c->d_ff, H = (size_t)c->heads;
    const size_t N = aw_size_mul(B, T), Ne = aw_size_mul(B, S), KC = model_kv_cols(m);
    const int encdec = c->arch == AW_ARCH_ENCODER_DECODER, swiglu = c->ffn == AW_FFN_SWIGLU;
    carver cv = {base, {0}};
    memset(a, 0, sizeof *a);
    a->x0 = carve(&cv, N, C);
    if (aw_arch_is_rnn(c->arch)) { // rnn.h's buffers; x0 holds the decoder states s_1..s_T
        aw_rnn_acts *r = &a->rnn;
        const size_t C3 = aw_size_mul(3, C), S1 = aw_size_mul(aw_size_add(S, 1), B);
        r->enc_x = carve(&cv, Ne, C);
        r->enc_gi = carve(&cv, Ne, C3), r->enc_gh = carve(&cv, Ne, C3), r->enc_gate = carve(&cv, Ne, C3);
        r->enc_h = carve(&cv, S1, C);
        r->dec_x = carve(&cv, N, aw_size_mul(2, C));
        r->dec_gi = carve(&cv, N, C3), r->dec_gh = carve(&cv, N, C3), r->dec_gate = carve(&cv, N, C3);
        r->dec_s = carve(&cv, aw_size_mul(aw_size_add(T, 1), B), C);
        if (c->arch == AW_ARCH_GRU_ATTENTION) {
            r->uh = carve(&cv, Ne, C), r->ws = carve(&cv, N, C);
            r->tanh = carve(&cv, aw_size_mul(N, S), C), r->att = carve(&cv, N, S);
        }
        a->logits = carve(&cv, N, V), a->probs = carve(&cv, N, V), a->losses = carve(&cv, N, 1);
        return aw_plan_ok(&cv.plan, sizeof(float)) ? cv.plan.total : AW_SIZE_INVALID;
    }
    if (encdec) {
        a->e0 = carve(&cv, Ne, C);
        for (int l = 0; l < c->layers; l++) {
            carve_attn(&cv, &a->enc_attn[l], &m->enc_form[l], m->keep_attention, B, S, S, C, model_attn_cols(c), H, KC);
            carve_ffn(&cv, &a->enc_ffn[l], Ne, C, F, swiglu);
        }
        a->enc_lnf = carve(&cv, Ne, C), a->enc_lnf_mean = carve(&cv, Ne, 1), a->enc_lnf_rstd = carve(&cv, Ne, 1);
    }
    for (int l = 0; l < c->layers; l++) {
        carve_attn(&cv, &a->dec_self[l], &m->self_form[l], m->keep_attention, B, T, T, C, model_attn_cols(c), H, KC);
        if (encdec) carve_attn(&cv, &a->dec_cross[l], &m->cross_form[l], m->keep_attention, B, T, S, C, model_attn_cols(c), H, KC);
        carve_ffn(&cv, &a->dec_ffn[l], N, C, F, swiglu);
    }
    a->lnf = carve(&cv, N, C), a->lnf_mean = carve(&cv, N, 1), a->lnf_rstd = carve(&cv, N, 1);
    a->logits = carve(&cv, N, V), a->probs = carve(&cv, N, V), a->losses = carve(&cv, N, 1);
    return aw_plan_ok(&cv.plan, sizeof(float)) ? cv.plan.total : AW_SIZE_INVALID;
}

// The attention backward's work for one sequence: the most any sublayer's form asks for at the
// shapes it runs with (encoder S x S, decoder T x T, cross T x S).
static size_t backward_work_floats(const aw_model *m, size_t T, size_t S) {
    size_t most = 0;
    for (int l = 0; l < m->cfg.layers; l++) {
        const aw_attn_form *f[3] = {&m->enc_form[l], &m->self_form[l], &m->cross_form[l]};
        const size_t rows[3] = {S, T, T}, cols[3] = {S, T, S};
        for (int g = 0; g < 3; g++) {
            if (!f[g]->form) continue;
            const size_t w = f[g]->form->work_floats(f[g], rows[g], cols[g]);
            most = w > most ? w : most;
        }
    }
    return most;
}

// Grows *buf to hold n elements of elem bytes (never shrinks); 0 or AW_ERR_NOMEM.
static int grow(void **buf, size_t *cap, size_t n, size_t elem) {
    if (n <= *cap && *buf) return AW_OK;
    void *p = aw_alloc(n, elem);
    if (!p) return AW_ERR_NOMEM;
    free(*buf);
    *buf = p, *cap = n;
    return AW_OK;
}

int model_reserve(aw_model *m, size_t B, size_t T, size_t S) {
    const size_t L = (size_t)m->cfg.max_len;
    const int encdec = aw_arch_has_source(m->cfg.arch);
    if (B == 0 || B > 65536) return aw_fail(AW_ERR_ARG, "batch size must be in [1, 65536], got %zu", B);
    if (T == 0 || T > L) {
        const aw_form *f = aw_form_at((size_t)m->cfg.form);
        for (int l = 0; m->cfg.layer_forms && l < m->cfg.layers; l++) // the layer whose tables fix the length
            if (m->self_form[l].form->flags & AW_FORM_FIXED_LENGTH) f = m->self_form[l].form;
        const int fixed = (f->flags & AW_FORM_FIXED_LENGTH) != 0; // tables of maxLen
        return aw_fail(AW_ERR_ARG, "the sequence has %zu positions; this model takes 1 to maxLen = %zu%s%s%s", T, L,
                       fixed ? " (attention \"" : "", fixed ? f->name : "", fixed ? "\" fixes its length when created)" : "");
    }
    if (S > L) return aw_fail(AW_ERR_ARG, "the source has %zu positions; this model takes at most maxLen = %zu", S, L);
    if (encdec != (S > 0))
        return aw_fail(AW_ERR_ARG, encdec ? "a model with an encoder (arch \"%s\") needs a source sequence"
                                          : "a decoder-only model takes no source sequence",
                       m->cfg.arch == AW_ARCH_ENCODER_DECODER ? "encoder-decoder" : m->cfg.arch == AW_ARCH_GRU ? "gru" : "gru-attention");
    aw_acts tmp;
    const size_t floats = carve_acts(m, NULL, &tmp, B, T, S);
    const size_t toks = aw_size_add(aw_size_mul3(2, B, T), aw_size_add(aw_size_mul(B, S), 1));
    // the threaded build runs the batch's sequences at once (attn_sublayer_*): a scratch for each
    const size_t work = aw_size_mul(backward_work_floats(m, T, S), aw_threads_built() ? B : 1);
    // an inference-only model keeps no gradients of the activations: only model_reserve_dacts gives it
    // them, for one backward
    const size_t copies = m->inference ? 1 : 2;
    size_t act_bytes;
    if (floats == AW_SIZE_INVALID || toks == AW_SIZE_INVALID || work == AW_SIZE_INVALID ||
        aw_mul_overflows(&act_bytes, floats, copies * sizeof(float)))
        return aw_fail(AW_ERR_NOMEM, "a batch of %zu x %zu positions does not fit in this build's %u-bit address "
                                     "space; use a smaller batch", B, T + S, (unsigned)(sizeof(size_t) * 8));
    m->B = 0; // until every buffer is in place
    model_release_dacts(m); // an inference-only model's were sized for the last (B, T, S)
    if (floats > m->act_cap || !m->act_mem) {
        free(m->act_mem), free(m->dact_mem);
        m->act_mem = aw_alloc_floats(floats);
        m->dact_mem = m->inference ? NULL : aw_alloc_floats(floats);
        m->act_cap = m->act_mem && (m->inference || m->dact_mem) ? floats : 0;
        if (!m->act_cap) {
            free(m->act_mem), free(m->dact_mem);
            m->act_mem = m->dact_mem = NULL;
        }
    }
    void *tokens = m->tokens, *scratch = m->scratch;
    const int ok = m->act_cap && !grow(&tokens, &m->tok_cap, toks, sizeof(int32_t)) &&
                   !grow(&scratch, &m->scratch_cap, work ? work : 1, sizeof(float));
    m->tokens = tokens, m->scratch = scratch;
    if (!ok)
        return aw_fail(AW_ERR_NOMEM, "out of memory: a batch of %zu x %zu positions needs %.1f MiB of activations",
                       B, T + S, (double)act_bytes / 1048576.0);
    m->targets = m->tokens + B * T, m->src = m->targets + B * T;
    m->B = B, m->T = T, m->S = S, m->act_floats = floats;
    carve_acts(m, m->act_mem, &m->a, B, T, S);
    if (m->dact_mem) carve_acts(m, m->dact_mem, &m->da, B, T, S);
    else memset(&m->da, 0, sizeof m->da);
    return AW_OK;
}

int model_reserve_dacts(aw_model *m) {
    if (m->B == 0) return AW_ERR_STATE;
    if (!m->inference) return AW_OK; // model_reserve made them
    // act_floats was checked by model_reserve (its bytes fit in size_t); the last forward's (B, T, S)
    if (!m->dact_mem && !(m->dact_mem = aw_alloc_floats(m->act_floats)))
        return aw_fail(AW_ERR_NOMEM, "out of memory: the backward of %zu x %zu positions needs %.1f MiB for the "
                                     "activations' gradients", m->B, m->T + m->S,
                       (double)m->act_floats * sizeof(float) / 1048576.0);
    carve_acts(m, m->dact_mem, &m->da, m->B, m->T, m->S);
    return AW_OK;
}

void model_release_dacts(aw_model *m) {
    if (!m->inference) return;
    free(m->dact_mem);
    m->dact_mem = NULL;
    memset(&m->da, 0, sizeof m->da);
}
