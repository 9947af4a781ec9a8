// transformer_forward.c: the forward pass, top to bottom: the sublayers (attention, feed-forward),
// then the whole model (embeddings, encoder, decoder, classifier and loss). Saves what the backward
// (transformer_backward.c) reads; calls the named points of hooks.h.
#include "transformer_internal.h"

#include "form_layer.h"
#include "hooks.h"

#include "../kernels/kernels.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- sublayers --------------------------------------------------------------------------------

void norm_forward(const aw_model *m, float *out, float *mean, float *rstd, const float *x, const float *w,
                  const float *b, size_t N) {
    const size_t C = (size_t)m->cfg.d_model;
    const float eps = m->cfg.norm_eps > 0.0f ? m->cfg.norm_eps : 1e-5f;
    if (m->cfg.norm_type == AW_NORMTYPE_RMS) rmsnorm_forward(out, rstd, x, w, N, C, eps);
    else layernorm_forward(out, mean, rstd, x, w, b, N, C, eps);
}

// A named point of the decoder (hooks.h): layer -1 for the points outside the blocks, AW_NO_HOOK
// for the encoder's and the cross-attention's sublayers. Unhooked, a point costs one test.
#define AW_NO_HOOK (-2)
#define HOOK(point, layer, x)                                                                                      \
    do {                                                                                                           \
        if (m->hooks && (layer) != AW_NO_HOOK) m->hooks->fn(m->hooks, (point), (layer), (float *)(x));               \
    } while (0)

static void seq_forward(void *ctx, size_t b) {
    seq_job *j = ctx;
    const size_t C = (size_t)j->m->cfg.d_model, A = model_attn_cols(&j->m->cfg), H = (size_t)j->m->cfg.heads;
    const size_t T = j->T, Tk = j->Tk;
    const aw_attn_form *f = j->f;
    // a forward for display (keep) has no backward after it: the form saves nothing then, so
    // softmax builds its weights once instead of also streaming for the backward's statistics
    const size_t saved = f->form->saved_floats && !j->keep ? f->form->saved_floats(f, T, Tk) : 0;
    const int st = f->form->forward(j->f, j->a->o + b * T * A, j->keep ? j->a->att + b * H * T * Tk : NULL,
                                    saved ? j->a->saved + b * saved : NULL, j->xq + b * T * C, j->a->q + b * T * A,
                                    j->a->k + b * Tk * A, j->a->v + b * Tk * A, T, Tk);
    aw_first_failure(&j->status, st);
}

void model_run_sequences(seq_job *j, size_t B, aw_item_fn fn) {
    if (!(j->f->form->flags & AW_FORM_PARAMS) && !j->f->params && aw_threads_built()) {
        aw_parallel_for(B, fn, j);
        return;
    }
    for (size_t b = 0; b < B && !j->status; b++) fn(j, b);
}

// The sparse probe (transformer.h): the form's selection, and the causal softmax of the same q, k (T, H hd)
// per head, computed in double and stored as float.
static int sparse_probe_read(aw_sparse_probe *p, aw_attn_form *f, const float *x, const float *q, const float *k,
                             const float *v, size_t T, size_t H, size_t hd) {
    const int st = f->form->selection(f, p->sel, x, q, k, v, T, T);
    if (st) return st;
    const size_t C = H * hd;
    const double scale = 1.0 / sqrt((double)hd);
    double *row = malloc(T * sizeof *row);
    if (!row) return aw_fail(AW_ERR_NOMEM, "sparseReading: out of memory for %zu positions", T);
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < T; t++) {
            const float *qt = q + t * C + h * hd;
            double top = -INFINITY, sum = 0;
            for (size_t s = 0; s <= t; s++) {
                const float *ks = k + s * C + h * hd;
                double d = 0;
                for (size_t i = 0; i < hd; i++) d += (double)qt[i] * ks[i];
                row[s] = d * scale;
                if (row[s] > top) top = row[s];
            }
            for (size_t s = 0; s <= t; s++) sum += (row[s] = exp(row[s] - top));
            float *out = p->dense + (h * T + t) * T;
            for (size_t s = 0; s < T; s++) out[s] = s <= t ? (float)(row[s] / sum) : 0.0f;
        }
    free(row);
    p->done = 1;
    return AW_OK;
}

// pre:  out = in + Attn(LN(in));   post: out = LN(in + Attn(in)).  kv_src: cross-attention's
// encoder output (B*Tk, C), or NULL for self-attention.
static int attn_sublayer_forward(aw_model *m, aw_attn_form *f, const aw_attn_weights *w, aw_attn_acts *a,
                                 const float *in, const float *kv_src, size_t B, size_t T, size_t Tk, int layer) {
    const size_t C = (size_t)m->cfg.d_model, A = model_attn_cols(&m->cfg), N = B * T, Nk = B * Tk;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, in, w->ln_w, w->ln_b, N);
    const float *xq = pre ? a->ln : in, *xkv = kv_src ? kv_src : xq;
    const int has_q = w->wq || w->qq;
    if (has_q) model_linear(m, a->q, xq, w->wq, w->qq, w->bq, N, C, A);
    if (has_q) HOOK(AW_HOOK_Q, layer, a->q);
    if (a->kv) { // grouped-query: the K/V heads' projections, shared out to the query heads
        const size_t H = (size_t)m->cfg.heads, KH = (size_t)m->cfg.kv_heads, hd = model_head_dim(&m->cfg), KC = KH * hd;
        if (w->wk || w->qk) {
            model_linear(m, a->kv, xkv, w->wk, w->qk, w->bk, Nk, C, KC);
            HOOK(AW_HOOK_K, layer, a->kv);
            kv_expand(a->k, a->kv, Nk, H, KH, hd);
        }
        model_linear(m, a->kv + Nk * KC, xkv, w->wv, w->qv, w->bv, Nk, C, KC);
        HOOK(AW_HOOK_V, layer, a->kv + Nk * KC);
        kv_expand(a->v, a->kv + Nk * KC, Nk, H, KH, hd);
    } else {
        if (w->wk || w->qk) {
            model_linear(m, a->k, xkv, w->wk, w->qk, w->bk, Nk, C, A);
            HOOK(AW_HOOK_K, layer, a->k);
        }
        if (w->wv || w->qv) {
            model_linear(m, a->v, xkv, w->wv, w->qv, w->bv, Nk, C, A);
            HOOK(AW_HOOK_V, layer, a->v);
        }
    }
    if (f->form->qk_forward && has_q) { // before the rotation: the form's own (softmax's QK-norm)
        const int keep_only = m->keep_attention && a->att != NULL; // a display forward saves nothing
        const size_t sf = f->form->saved_floats ? f->form->saved_floats(f, T, Tk) : 0;
        for (size_t b = 0; b < B; b++) {
            const int st = f->form->qk_forward(f, keep_only || !sf ? NULL : a->saved + b * sf, a->q + b * T * A,
                                               a->k + b * Tk * A, T, Tk, A);
            if (st) return st;
        }
    }
    if (m->pos->rotate_qk && !kv_src && has_q) { // rotary positions on self-attention's queries and keys
        m->pos->rotate_qk(&m->pos_tables, a->q, B, T, 0, A, 0);
        m->pos->rotate_qk(&m->pos_tables, a->k, B, Tk, 0, A, 0);
    }
    if (m->probe && m->probe->layer == layer && !kv_src && f->form->selection && B == 1) {
        const int st = sparse_probe_read(m->probe, f, xq, a->q, a->k, a->v, T, (size_t)m->cfg.heads, A / (size_t)m->cfg.heads);
        if (st) return st;
    }
    const int keep = m->keep_attention && a->att != NULL;
    seq_job j = {m, f, a, NULL, xq, NULL, T, Tk, 0, keep, AW_OK};
    model_run_sequences(&j, B, seq_forward);
    if (j.status) return j.status;
    if (keep) HOOK(AW_HOOK_PATTERN, layer, a->att);
    HOOK(AW_HOOK_Z, layer, a->o);
    model_linear(m, a->res, a->o, w->wo, w->qo, w->bo, N, A, C);
    HOOK(AW_HOOK_ATTN_OUT, layer, a->res);
    residual_add(a->res, in, N * C);
    if (!pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, a->res, w->ln_w, w->ln_b, N);
    HOOK(AW_HOOK_RESID_MID, layer, attn_out(m, a));
    return AW_OK;
}

// pre:  out = in + FFN(LN(in));   post: out = LN(in + FFN(in));   FFN(x) = relu(x W1 + b1) W2 + b2.
static void ffn_sublayer_forward(aw_model *m, const aw_ffn_weights *w, aw_ffn_acts *a, const float *in, size_t N,
                                 int layer) {
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, in, w->ln_w, w->ln_b, N);
    model_linear(m, a->h, pre ? a->ln : in, w->w1, w->q1, w->b1, N, C, F);
    if (w->w3 || w->q3) { // SwiGLU: r = silu(x W1) * (x W3)
        model_linear(m, a->u, pre ? a->ln : in, w->w3, w->q3, w->b3, N, C, F);
        swiglu_forward(a->r, a->h, a->u, N * F);
    } else if (m->cfg.ffn == AW_FFN_GELU) gelu_forward(a->r, a->h, N * F);
    else relu_forward(a->r, a->h, N * F);
    model_linear(m, a->res, a->r, w->w2, w->q2, w->b2, N, F, C);
    HOOK(AW_HOOK_MLP_OUT, layer, a->res);
    residual_add(a->res, in, N * C);
    if (!pre) norm_forward(m, a->ln, a->ln_mean, a->ln_rstd, a->res, w->ln_w, w->ln_b, N);
    HOOK(AW_HOOK_RESID_POST, layer, ffn_out(m, a));
}

// ---- whole model ------------------------------------------------------------------------------

static int check_tokens(const aw_model *m, const char *what, const int32_t *t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0 || t[i] >= m->cfg.vocab)
            return aw_fail(AW_ERR_ARG, "%s[%zu] is %d, outside the vocabulary [0, %d)", what, i, (int)t[i],
                           (int)m->cfg.vocab);
    return AW_OK;
}

// logits = x W_out + b_out, the loss and the metrics.
static int output_forward(aw_model *m, const float *x, aw_metrics *metrics) {
    const size_t N = m->B * m->T, C = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab;
    aw_acts *a = &m->a;
    if (m->last_logits_only) { // each sequence's last row: what generation reads
        for (size_t b = 0; b < m->B; b++) {
            const size_t r = b * m->T + m->T - 1;
            model_classifier(m, a->logits + r * V, x + r * C, 1);
        }
        if (metrics) memset(metrics, 0, sizeof *metrics);
        return AW_OK;
    }
    model_classifier(m, a->logits, x, N);
    size_t count = 0, correct = 0;
    const double loss = crossentropy_forward(a->probs, a->losses, a->logits, m->targets, N, V, &count, &correct);
    if (metrics) {
        metrics->loss = loss, metrics->count = count, metrics->grad_norm = 0.0;
        metrics->accuracy = count ? (double)correct / (double)count : 0.0;
    }
    if (!isfinite(loss))
        return aw_fail(AW_ERR_NONFINITE, "the loss is NaN or Infinity: the model's parameters have diverged (lowering lr "
                                         "cannot repair them); create the model again or load a checkpoint");
    return AW_OK;
}

// A hooked run that stopped early (hooks.h stop): no loss, no metrics.
static int stopped(aw_metrics *metrics) {
    if (metrics) memset(metrics, 0, sizeof *metrics);
    return AW_OK;
}

int model_forward(aw_model *m, aw_metrics *metrics) {
    if (m->B == 0) return AW_ERR_STATE;
    const aw_model_config *c = &m->cfg;
    const size_t B = m->B, T = m->T, S = m->S, C = (size_t)c->d_model, N = B * T;
    const int pre = c->norm == AW_NORM_PRE, encdec = c->arch == AW_ARCH_ENCODER_DECODER, rnn = aw_arch_is_rnn(c->arch);
    aw_acts *a = &m->a;
    if (check_tokens(m, "tokens", m->tokens, N) ||
        (aw_arch_has_source(c->arch) && check_tokens(m, "source", m->src, B * S)))
        return AW_ERR_ARG;
    // weights that are already NaN or infinite (a diverged run, or a checkpoint holding them)
    // are named as such, not met later as a NaN inside some sublayer (one pass over P floats,
    // against the forward's B T P multiply-adds)
    int st = m->params_checked ? AW_OK : model_check_params(m);
    if (st) return st;
    for (size_t i = 0; i < N; i++)
        if (m->targets[i] >= c->vocab || m->targets[i] < -1)
            return aw_fail(AW_ERR_ARG, "targets[%zu] is %d: expected a token in [0, %d) or -1 (no loss)", i,
                           (int)m->targets[i], (int)c->vocab);
    const float *enc = NULL;
    if (rnn) {
        const aw_rnn_batch bt = {m->B, m->T, m->S, (size_t)c->d_model, (size_t)c->vocab, c->arch == AW_ARCH_GRU_ATTENTION,
                                 m->tokens, m->src};
        const aw_rnn_weights w = model_rnn_weights(&m->w);
        rnn_forward(&bt, &w, &a->rnn, a->x0); // the decoder states into x0
        if (metrics) metrics->side_loss = 0.0;
        return output_forward(m, a->x0, metrics);
    }
    if (encdec) {
        embedding_forward(a->e0, m->src, m->w.wte, m->pe, B, S, C);
        const float *x = a->e0;
        for (int l = 0; l < c->layers; l++) {
            if ((st = attn_sublayer_forward(m, &m->enc_form[l], &m->w.enc[l].self, &a->enc_attn[l], x, NULL, B, S, S,
                                            AW_NO_HOOK)))
                return st;
            x = attn_out(m, &a->enc_attn[l]);
            ffn_sublayer_forward(m, &m->w.enc[l].ffn, &a->enc_ffn[l], x, B * S, AW_NO_HOOK);
            x = ffn_out(m, &a->enc_ffn[l]);
        }
        if (pre) norm_forward(m, a->enc_lnf, a->enc_lnf_mean, a->enc_lnf_rstd, x, m->w.enc_lnf_w, m->w.enc_lnf_b, B * S);
        enc = encoder_out(m, a);
    }
    // the forms' side losses (DSA's indexer KL), each the mean over the batch's sequences, when a
    // backward may follow (a model with gradients, not generation's prefill)
    const float side_weight = m->grads && !m->last_logits_only ? 1.0f / (float)B : 0.0f;
    for (int l = 0; l < c->layers; l++) {
        aw_attn_form *fs[3] = {&m->self_form[l], &m->cross_form[l], &m->enc_form[l]};
        for (int i = 0; i < 3; i++) fs[i]->side_weight = side_weight, fs[i]->side_loss = 0.0;
    }
    // a hooked run may start at a later block, the earlier ones kept from the last forward (hooks.h)
    const int l0 = m->hooks && !encdec ? m->hooks->first_layer : 0;
    if (l0 == 0) embedding_forward(a->x0, m->tokens, m->w.wte, m->pe, B, T, C);
    if (l0 == 0) HOOK(AW_HOOK_EMBED, -1, a->x0);
    // and may stop after an earlier one, once its last named point is done (hooks.h stop): what
    // follows is neither computed nor hooked, and metrics stay empty
    const int stop = m->hooks && !encdec && m->hooks->stop, last = stop ? m->hooks->last_layer : c->layers;
    if (stop && last < l0) return stopped(metrics);
    const float *x = l0 ? ffn_out(m, &a->dec_ffn[l0 - 1]) : a->x0;
    for (int l = l0; l < c->layers; l++) {
        HOOK(AW_HOOK_RESID_PRE, l, x);
        if ((st = attn_sublayer_forward(m, &m->self_form[l], &m->w.dec[l].self, &a->dec_self[l], x, NULL, B, T, T, l)))
            return st;
        x = attn_out(m, &a->dec_self[l]);
        if (encdec) {
            if ((st = attn_sublayer_forward(m, &m->cross_form[l], &m->w.dec[l].cross, &a->dec_cross[l], x, enc, B, T, S,
                                            AW_NO_HOOK)))
                return st;
            x = attn_out(m, &a->dec_cross[l]);
        }
        ffn_sublayer_forward(m, &m->w.dec[l].ffn, &a->dec_ffn[l], x, N, l);
        x = ffn_out(m, &a->dec_ffn[l]);
        if (stop && l == last) return stopped(metrics);
    }
    if (pre) norm_forward(m, a->lnf, a->lnf_mean, a->lnf_rstd, x, m->w.lnf_w, m->w.lnf_b, N), x = a->lnf;
    if (pre) HOOK(AW_HOOK_LN_FINAL, -1, a->lnf);
    if (stop) return stopped(metrics);
    st = output_forward(m, x, metrics);
    if (metrics) {
        metrics->side_loss = 0.0;
        for (int l = 0; l < c->layers; l++)
            metrics->side_loss += m->self_form[l].side_loss + m->cross_form[l].side_loss + m->enc_form[l].side_loss;
    }
    return st;
}
