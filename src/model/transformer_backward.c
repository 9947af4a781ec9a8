// transformer_backward.c: the backward pass, the forward's in reverse: each op's gradient from what
// the forward saved (transformer_forward.c), accumulated into m->grads. On an inference-only model
// (no m->grads: every m->g pointer NULL) model_backward_from_logits runs the activations' gradients
// alone: the layers skip a NULL weight gradient (layers.h), so no parameter gradient is touched.
#include "transformer_internal.h"

#include "form_layer.h"

#include "../kernels/kernels.h"
#include "../kernels/status.h"

#include <string.h>

// ---- sublayers --------------------------------------------------------------------------------

void norm_backward(const aw_model *m, float *dx, float *dw, float *db, const float *dout, const float *x,
                   const float *w, const float *mean, const float *rstd, size_t N) {
    const size_t C = (size_t)m->cfg.d_model;
    if (m->cfg.norm_type == AW_NORMTYPE_RMS) rmsnorm_backward(dx, dw, dout, x, w, rstd, N, C);
    else layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C);
}

static void seq_backward(void *ctx, size_t b) {
    seq_job *j = ctx;
    aw_model *m = j->m;
    const size_t C = (size_t)m->cfg.d_model, A = model_attn_cols(&m->cfg), T = j->T, Tk = j->Tk;
    const aw_attn_acts *a = j->a;
    aw_attn_acts *da = j->da;
    const size_t saved = j->f->form->saved_floats ? j->f->form->saved_floats(j->f, T, Tk) : 0;
    const int st = j->f->form->backward(j->f, j->dxq + b * T * C, da->q + b * T * A, da->k + b * Tk * A,
                                        da->v + b * Tk * A, m->scratch + b * j->work, da->o + b * T * A,
                                        saved ? a->saved + b * saved : NULL, j->xq + b * T * C, a->q + b * T * A,
                                        a->k + b * Tk * A, a->v + b * Tk * A, T, Tk);
    aw_first_failure(&j->status, st);
}

static int attn_sublayer_backward(aw_model *m, aw_attn_form *f, const aw_attn_weights *w, aw_attn_weights *g,
                                  const aw_attn_acts *a, aw_attn_acts *da, const float *in, float *d_in,
                                  const float *kv_src, float *d_kv_src, size_t B, size_t T, size_t Tk) {
    const size_t C = (size_t)m->cfg.d_model, A = model_attn_cols(&m->cfg), N = B * T, Nk = B * Tk;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    // post: out = LN(res)
    if (!pre) norm_backward(m, da->res, g->ln_w, g->ln_b, da->ln, a->res, w->ln_w, a->ln_mean, a->ln_rstd, N);
    // res = in + o Wo + bo
    residual_add(d_in, da->res, N * C);
    linear_backward(da->o, g->wo, g->bo, da->res, a->o, w->wo, N, A, C);
    const float *xq = pre ? a->ln : in, *xkv = kv_src ? kv_src : xq;
    float *dxq = pre ? da->ln : d_in, *dxkv = kv_src ? d_kv_src : dxq;
    // o = form(q, k, v); in the threaded build each sequence has its own slice of the scratch
    // (model_reserve sized it B times the largest sublayer's need)
    seq_job j = {m, f, (aw_attn_acts *)a, da, xq, dxq, T, Tk, aw_threads_built() ? m->scratch_cap / B : 0, 1, AW_OK};
    model_run_sequences(&j, B, seq_backward);
    if (j.status) return j.status;
    if (m->pos->rotate_qk && !kv_src && w->wq) { // q, k were rotated: turn their gradients back
        m->pos->rotate_qk(&m->pos_tables, da->q, B, T, 0, A, 1);
        m->pos->rotate_qk(&m->pos_tables, da->k, B, Tk, 0, A, 1);
    }
    if (f->form->qk_backward && w->wq) { // the form's own before the rotation (QK-norm), one sequence at a time
        const size_t sf = f->form->saved_floats ? f->form->saved_floats(f, T, Tk) : 0;
        for (size_t b = 0; b < B; b++)
            f->form->qk_backward(f, da->q + b * T * A, da->k + b * Tk * A, m->scratch, a->saved + b * sf, T, Tk);
    }
    // q = xq Wq + bq, k = xkv Wk + bk, v = xkv Wv + bv
    if (a->kv) { // grouped-query: each K/V head gathers the gradients of the query heads it served
        const size_t H = (size_t)m->cfg.heads, KH = (size_t)m->cfg.kv_heads, hd = model_head_dim(&m->cfg), KC = KH * hd;
        kv_reduce(da->kv + Nk * KC, da->v, Nk, H, KH, hd);
        linear_backward(dxkv, g->wv, g->bv, da->kv + Nk * KC, xkv, w->wv, Nk, C, KC);
        if (w->wk) {
            kv_reduce(da->kv, da->k, Nk, H, KH, hd);
            linear_backward(dxkv, g->wk, g->bk, da->kv, xkv, w->wk, Nk, C, KC);
        }
    } else {
        if (w->wv) linear_backward(dxkv, g->wv, g->bv, da->v, xkv, w->wv, Nk, C, A);
        if (w->wk) linear_backward(dxkv, g->wk, g->bk, da->k, xkv, w->wk, Nk, C, A);
    }
    if (w->wq) linear_backward(dxq, g->wq, g->bq, da->q, xq, w->wq, N, C, A);
    // pre: ln = LN(in)
    if (pre) norm_backward(m, d_in, g->ln_w, g->ln_b, da->ln, in, w->ln_w, a->ln_mean, a->ln_rstd, N);
    return AW_OK;
}

static void ffn_sublayer_backward(aw_model *m, const aw_ffn_weights *w, aw_ffn_weights *g, const aw_ffn_acts *a,
                                  aw_ffn_acts *da, const float *in, float *d_in, size_t N) {
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (!pre) norm_backward(m, da->res, g->ln_w, g->ln_b, da->ln, a->res, w->ln_w, a->ln_mean, a->ln_rstd, N);
    residual_add(d_in, da->res, N * C);                                      // res = in + ...
    linear_backward(da->r, g->w2, g->b2, da->res, a->r, w->w2, N, F, C);   // ... r W2 + b2
    if (w->w3) { // r = silu(h) u, u = x W3 + b3
        swiglu_backward(da->h, da->u, da->r, a->h, a->u, N * F);
        linear_backward(pre ? da->ln : d_in, g->w3, g->b3, da->u, pre ? a->ln : in, w->w3, N, C, F);
    } else if (m->cfg.ffn == AW_FFN_GELU) gelu_backward(da->h, da->r, a->h, N * F); // r = gelu(h)
    else relu_backward(da->h, da->r, a->h, N * F); // r = relu(h)
    linear_backward(pre ? da->ln : d_in, g->w1, g->b1, da->h, pre ? a->ln : in, w->w1, N, C, F); // h = x W1 + b1
    if (pre) norm_backward(m, d_in, g->ln_w, g->ln_b, da->ln, in, w->ln_w, a->ln_mean, a->ln_rstd, N);
}

// ---- whole model ------------------------------------------------------------------------------

static int backward(aw_model *m, const float *dlogits);

int model_backward(aw_model *m) { return backward(m, NULL); }

int model_backward_from_logits(aw_model *m, const float *dlogits) { return backward(m, dlogits); }

// The backward of model_backward, seeded with the loss's gradient of the logits or with dlogits.
// Without m->grads (inference-only) only a transformer's backward from dlogits runs, into m->da
// (model_reserve_dacts gives an inference-only model its m->da).
static int backward(aw_model *m, const float *dlogits) {
    if (!m->grads && (!dlogits || aw_arch_is_rnn(m->cfg.arch)))
        return model_refuse_inference(m, dlogits ? "a recurrent network's backward from the logits" : "training");
    if (m->quant) return model_refuse_quantized(m, "a backward");
    if (m->B == 0 || !m->dact_mem) return AW_ERR_STATE;
    const aw_model_config *c = &m->cfg;
    const size_t B = m->B, T = m->T, S = m->S, C = (size_t)c->d_model, V = (size_t)c->vocab, N = B * T;
    const int pre = c->norm == AW_NORM_PRE, encdec = c->arch == AW_ARCH_ENCODER_DECODER;
    const aw_acts *a = &m->a;
    aw_acts *da = &m->da;
    if (m->grads) zero_floats(m->grads, m->n_params);
    zero_floats(m->dact_mem, m->act_floats);
    if (dlogits) memcpy(da->logits, dlogits, N * V * sizeof(float));
    else {
        size_t count = 0;
        for (size_t i = 0; i < N; i++) count += m->targets[i] >= 0;
        if (count == 0) return AW_OK;
        // loss = mean over counted rows of -log probs[target]
        crossentropy_backward(da->logits, a->probs, m->targets, 1.0f / (float)count, N, V);
    }
    if (aw_arch_is_rnn(c->arch)) {
        linear_backward(da->x0, m->g.w_out, m->g.b_out, da->logits, a->x0, m->w.w_out, N, C, V);
        const aw_rnn_batch bt = {m->B, m->T, m->S, C, V, c->arch == AW_ARCH_GRU_ATTENTION, m->tokens, m->src};
        const aw_rnn_weights w = model_rnn_weights(&m->w);
        aw_rnn_weights g = model_rnn_weights(&m->g);
        rnn_backward(&bt, &w, &g, &a->rnn, &da->rnn, da->x0); // da->rnn zeroed above
        return AW_OK;
    }
    const float *xl = decoder_stream_out(m, a);
    float *dxl = (float *)decoder_stream_out(m, da);
    if (c->tie) tied_backward(pre ? da->lnf : dxl, m->g.wte, m->g.b_out, da->logits, pre ? a->lnf : xl, m->w.wte, N, C, V);
    else linear_backward(pre ? da->lnf : dxl, m->g.w_out, m->g.b_out, da->logits, pre ? a->lnf : xl, m->w.w_out, N, C, V);
    if (pre) norm_backward(m, dxl, m->g.lnf_w, m->g.lnf_b, da->lnf, xl, m->w.lnf_w, a->lnf_mean, a->lnf_rstd, N);
    const float *enc = encdec ? encoder_out(m, a) : NULL;
    float *denc = encdec ? (float *)encoder_out(m, da) : NULL;
    int st;
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *in_self = l ? ffn_out(m, &a->dec_ffn[l - 1]) : a->x0;
        float *din_self = l ? ffn_dout(m, &da->dec_ffn[l - 1]) : da->x0;
        const float *in_ffn = attn_out(m, encdec ? &a->dec_cross[l] : &a->dec_self[l]);
        float *din_ffn = attn_dout(m, encdec ? &da->dec_cross[l] : &da->dec_self[l]);
        ffn_sublayer_backward(m, &m->w.dec[l].ffn, &m->g.dec[l].ffn, &a->dec_ffn[l], &da->dec_ffn[l], in_ffn, din_ffn, N);
        if (encdec &&
            (st = attn_sublayer_backward(m, &m->cross_form[l], &m->w.dec[l].cross, &m->g.dec[l].cross, &a->dec_cross[l],
                                         &da->dec_cross[l], attn_out(m, &a->dec_self[l]),
                                         attn_dout(m, &da->dec_self[l]), enc, denc, B, T, S)))
            return st;
        if ((st = attn_sublayer_backward(m, &m->self_form[l], &m->w.dec[l].self, &m->g.dec[l].self, &a->dec_self[l],
                                         &da->dec_self[l], in_self, din_self, NULL, NULL, B, T, T)))
            return st;
    }
    embedding_backward(m->g.wte, m->g.wpe, da->x0, m->tokens, B, T, C);
    if (!encdec) return AW_OK;
    const float *xe = ffn_out(m, &a->enc_ffn[c->layers - 1]);
    float *dxe = ffn_dout(m, &da->enc_ffn[c->layers - 1]);
    if (pre) norm_backward(m, dxe, m->g.enc_lnf_w, m->g.enc_lnf_b, da->enc_lnf, xe, m->w.enc_lnf_w, a->enc_lnf_mean,
                                a->enc_lnf_rstd, B * S);
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *in = l ? ffn_out(m, &a->enc_ffn[l - 1]) : a->e0;
        float *din = l ? ffn_dout(m, &da->enc_ffn[l - 1]) : da->e0;
        ffn_sublayer_backward(m, &m->w.enc[l].ffn, &m->g.enc[l].ffn, &a->enc_ffn[l], &da->enc_ffn[l],
                              attn_out(m, &a->enc_attn[l]), attn_dout(m, &da->enc_attn[l]), B * S);
        if ((st = attn_sublayer_backward(m, &m->enc_form[l], &m->w.enc[l].self, &m->g.enc[l].self, &a->enc_attn[l],
                                         &da->enc_attn[l], in, din, NULL, NULL, B, S, S)))
            return st;
    }
    embedding_backward(m->g.wte, m->g.wpe, da->e0, m->src, B, S, C);
    return AW_OK;
}
