// stream.c: reading and generating past maxLen with a rolling KV cache (StreamingLLM: Xiao, Tian,
// Chen, Han, Lewis 2023, "Efficient Streaming Language Models with Attention Sinks",
// arXiv:2309.17453). The cache holds `window` positions: the first `sinks` tokens ever seen stay,
// the rest is the most recent tokens. Positions are the slots of the cache, as in the paper: keys
// are kept unrotated and turned by their slot when attended to, the query by its own slot, so no
// position ever exceeds the window. sinks = 0 is plain window attention. The reference,
// recomputing, runs the model afresh on the last `window` tokens for every position.
#include "transformer.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t window, sinks, count;     // capacity, kept first tokens, tokens seen so far
    size_t C, A, KC, H, KH, hd, F, V; // A: the heads' width (C unless headDim)
    float *k[AW_MAX_LAYERS], *v[AW_MAX_LAYERS]; // (window, KC): slots 0..sinks-1, then a ring
    float *x, *ln, *q, *kv, *o, *res, *h, *u, *r, *kr, *vr, *scores, *logits, mean, rstd;
    float *mem;
} stream_state;

int model_stream_check(const aw_model *m, size_t window, size_t sinks) {
    const aw_model_config *c = &m->cfg;
    if (c->arch != AW_ARCH_DECODER || strcmp(m->self_form[0].form->name, "softmax") != 0)
        return aw_fail(AW_ERR_ARG, "streaming past maxLen keeps a KV cache of softmax attention: it needs a decoder-only "
                                   "model with attention \"softmax\"%s%s%s", c->layer_forms ? " in every layer (layerForms[0] is \"" : "",
                       c->layer_forms ? m->self_form[0].form->name : "", c->layer_forms ? "\")" : "");
    for (int l = 1; l < c->layers; l++) // layerForms: every layer's cache is a softmax KV cache
        if (strcmp(m->self_form[l].form->name, "softmax") != 0)
            return aw_fail(AW_ERR_ARG, "streaming past maxLen keeps a KV cache of softmax attention in every layer, and "
                                       "layerForms[%d] is attention \"%s\": give every layer attention \"softmax\"",
                           l, m->self_form[l].form->name);
    if (!(m->pos->flags & AW_POSITIONAL_BY_SLOT)) {
        char list[128];
        aw_positional_names(list, sizeof list, AW_POSITIONAL_BY_SLOT, 1);
        return aw_fail(AW_ERR_ARG, "streaming past maxLen numbers positions by cache slot: it needs positional %s (this "
                                   "model adds %s positions to its embeddings, which end at maxLen)", list, m->pos->name);
    }
    if (window < 1 || window > (size_t)c->max_len)
        return aw_fail(AW_ERR_ARG, "window must be an integer in [1, maxLen = %d], got %zu", (int)c->max_len, window);
    if (sinks >= window) return aw_fail(AW_ERR_ARG, "sinks must be below window (%zu), got %zu", window, sinks);
    return model_check_params(m);
}

static int stream_init(stream_state *s, const aw_model *m, size_t window, size_t sinks) {
    const aw_model_config *c = &m->cfg;
    memset(s, 0, sizeof *s);
    s->window = window, s->sinks = sinks;
    s->C = (size_t)c->d_model, s->H = (size_t)c->heads, s->KH = (size_t)c->kv_heads, s->hd = model_head_dim(c);
    s->A = s->H * s->hd, s->KC = s->KH * s->hd, s->F = (size_t)c->d_ff, s->V = (size_t)c->vocab;
    aw_plan plan = {0};
    size_t at_k[AW_MAX_LAYERS], at_v[AW_MAX_LAYERS];
    for (int l = 0; l < c->layers; l++) at_k[l] = aw_plan_take(&plan, window, s->KC), at_v[l] = aw_plan_take(&plan, window, s->KC);
    const size_t at = aw_plan_take(&plan, 5, s->C > s->A ? s->C : s->A);
    aw_plan_take(&plan, 2, s->KC);
    aw_plan_take(&plan, 3, s->F);
    aw_plan_take(&plan, window, 2 * s->KC + 1);
    aw_plan_take(&plan, s->V, 1);
    if (!aw_plan_ok(&plan, sizeof(float)) || !(s->mem = aw_alloc_floats(plan.total)))
        return aw_fail(AW_ERR_NOMEM, "out of memory for the streaming cache");
    for (int l = 0; l < c->layers; l++) s->k[l] = s->mem + at_k[l], s->v[l] = s->mem + at_v[l];
    float *p = s->mem + at;
    const size_t wide = s->C > s->A ? s->C : s->A;
    s->x = p, p += wide;
    s->ln = p, p += wide;
    s->q = p, p += wide;
    s->o = p, p += wide;
    s->res = p, p += wide;
    s->kv = p, p += 2 * s->KC;
    s->h = p, p += s->F;
    s->u = p, p += s->F;
    s->r = p, p += s->F;
    s->kr = p, p += window * s->KC; // kr then vr, adjacent: a switched-on softmax's step cache of window rows
    s->vr = p, p += window * s->KC;
    s->scores = p, p += window;
    s->logits = p;
    return AW_OK;
}

// The slot of the token seen `i`-th of the `count` kept: sinks keep theirs, the rest a ring.
static size_t slot_of(const stream_state *s, size_t i) {
    if (i < s->sinks) return i;
    const size_t ring = s->window - s->sinks;
    return s->sinks + (i - s->sinks) % ring;
}

// One token through the model with the rolling cache; the logits in s->logits.
static void stream_token(aw_model *m, stream_state *s, int32_t token) {
    const aw_model_config *c = &m->cfg;
    const size_t C = s->C, A = s->A, KC = s->KC, hd = s->hd;
    const int pre = c->norm == AW_NORM_PRE;
    // the cache after this token: which tokens (by the order they came) it holds, in slot order
    const size_t seen = s->count + 1, kept = seen < s->window ? seen : s->window;
    const size_t recent0 = seen - (kept - (kept < s->sinks ? kept : s->sinks)); // first recent token kept
    const size_t my_slot = seen <= s->window ? s->count : slot_of(s, s->count);
    embedding_forward(s->x, &token, m->w.wte, NULL, 1, 1, C);
    for (int l = 0; l < c->layers; l++) {
        const aw_attn_weights *w = &m->w.dec[l].self;
        if (pre) norm_forward(m, s->ln, &s->mean, &s->rstd, s->x, w->ln_w, w->ln_b, 1);
        const float *xin = pre ? s->ln : s->x;
        model_linear(m, s->q, xin, w->wq, w->qq, w->bq, 1, C, A);
        model_linear(m, s->kv, xin, w->wk, w->qk, w->bk, 1, C, KC);
        model_linear(m, s->kv + KC, xin, w->wv, w->qv, w->bv, 1, C, KC);
        aw_attn_form *f = &m->self_form[l];
        if (f->form->qk_forward) f->form->qk_forward(f, NULL, s->q, s->kv, 1, 1, KC); // QK-norm, before rotation
        memcpy(s->k[l] + my_slot * KC, s->kv, KC * sizeof(float)); // unrotated: its position is its place
        memcpy(s->v[l] + my_slot * KC, s->kv + KC, KC * sizeof(float));
        // the keys and values in the order the tokens came, the keys turned by their place in it
        size_t n = 0;
        for (size_t i = 0; i < seen; i++) {
            if (i >= (s->sinks < kept ? s->sinks : kept) && i < recent0) continue; // evicted
            const size_t sl = seen <= s->window ? i : slot_of(s, i);
            memcpy(s->kr + n * KC, s->k[l] + sl * KC, KC * sizeof(float));
            memcpy(s->vr + n * KC, s->v[l] + sl * KC, KC * sizeof(float));
            n++;
        }
        if (m->pos->rotate_qk) { // positions by cache slot
            m->pos->rotate_qk(&m->pos_tables, s->kr, 1, n, 0, KC, 0);
            m->pos->rotate_qk(&m->pos_tables, s->q, 1, 1, n - 1, A, 0);
        }
        if (f->switches) { // the form's step over the kept keys in slot order: kr then vr are its cache of
            // window rows of the K/V heads (its KC), this token's row last, in place (n <= window)
            f->form->step(f, s->kr, s->window, s->o, xin, s->q, s->kr + (n - 1) * KC, s->vr + (n - 1) * KC, n - 1);
        } else {
            decode_attend(s->o, s->scores, s->q, s->kr, s->vr, n, s->H, s->KH, hd, m->score_slopes); // by cache slot
        }
        model_linear(m, s->res, s->o, w->wo, w->qo, w->bo, 1, A, C);
        aw_axpy(s->res, 1.0f, s->x, C);
        if (pre) memcpy(s->x, s->res, C * sizeof(float));
        else norm_forward(m, s->x, &s->mean, &s->rstd, s->res, w->ln_w, w->ln_b, 1);
        decode_ffn(m, &m->w.dec[l].ffn, s->x, s->ln, s->h, s->u, s->r, s->res);
    }
    decode_logits(m, s->logits, s->x, s->ln);
    s->count = seen;
}

static double nll(const float *logits, size_t V, int32_t target) {
    float mx = logits[0];
    for (size_t j = 1; j < V; j++) mx = logits[j] > mx ? logits[j] : mx;
    double sum = 0.0;
    for (size_t j = 0; j < V; j++) sum += exp((double)logits[j] - mx);
    return log(sum) + mx - logits[target];
}

int model_stream_losses(aw_model *m, const int32_t *tokens, size_t n, size_t window, size_t sinks, int recompute,
                        float *losses) {
    int st = model_stream_check(m, window, sinks);
    if (st) return st;
    if (n < 2) return aw_fail(AW_ERR_ARG, "tokens must hold at least 2 ids (each position is scored on the next), got %zu", n);
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab)
            return aw_fail(AW_ERR_ARG, "tokens[%zu] is %d, outside the vocabulary [0, %d)", i, (int)tokens[i], (int)m->cfg.vocab);
    const size_t V = (size_t)m->cfg.vocab;
    if (recompute) { // afresh on the last `window` tokens, for every position
        for (size_t t = 0; t + 1 < n; t++) {
            const size_t len = t + 1 < window ? t + 1 : window;
            if ((st = model_reserve(m, 1, len, 0))) return st;
            memcpy(m->tokens, tokens + t + 1 - len, len * sizeof(int32_t));
            for (size_t i = 0; i < len; i++) m->targets[i] = -1;
            m->last_logits_only = 1;
            st = model_forward(m, NULL);
            m->last_logits_only = 0;
            if (st) return st;
            losses[t] = (float)nll(m->a.logits + (len - 1) * V, V, tokens[t + 1]);
        }
        return AW_OK;
    }
    stream_state s;
    if ((st = stream_init(&s, m, window, sinks))) return st;
    for (size_t t = 0; t + 1 < n; t++) {
        stream_token(m, &s, tokens[t]);
        losses[t] = (float)nll(s.logits, V, tokens[t + 1]);
    }
    free(s.mem);
    return AW_OK;
}

int model_stream_generate(aw_model *m, int32_t *out, size_t *n_out, size_t max_new, const int32_t *prompt, size_t np,
                          size_t window, size_t sinks, float temperature, int top_k, uint64_t seed, int stop_token) {
    *n_out = 0;
    int st = model_stream_check(m, window, sinks);
    if (st) return st;
    if (np == 0) return aw_fail(AW_ERR_ARG, "prompt must hold at least 1 token");
    for (size_t i = 0; i < np; i++)
        if (prompt[i] < 0 || prompt[i] >= m->cfg.vocab)
            return aw_fail(AW_ERR_ARG, "prompt[%zu] is %d, outside the vocabulary [0, %d)", i, (int)prompt[i], (int)m->cfg.vocab);
    stream_state s;
    if ((st = stream_init(&s, m, window, sinks))) return st;
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    for (size_t i = 0; i < np; i++) stream_token(m, &s, prompt[i]);
    while (*n_out < max_new) {
        const int32_t t = model_sample(s.logits, model_sample_vocab(m), temperature, top_k, &rng);
        out[(*n_out)++] = t;
        if (t == stop_token || *n_out == max_new) break;
        stream_token(m, &s, t);
    }
    free(s.mem);
    return AW_OK;
}
