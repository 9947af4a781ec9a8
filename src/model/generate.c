// generate.c: autoregressive generation. The incremental path keeps, per decoder layer, a KV
// cache (softmax) or the recurrent state (causal linear attention) so each new token costs one
// row through the network; the reference path re-runs the full forward for every token.
#include "transformer.h"

#include "config.h"

#include "../attention/softmax_attention.h"
#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *self[AW_MAX_LAYERS];                   // each self-attention form's step state; with
                                                  // grouped-query softmax, the K/V heads' cache:
                                                  // keys (L, KC) then values (L, KC)
    float *ck[AW_MAX_LAYERS], *cv[AW_MAX_LAYERS]; // (S, C) cross-attention keys and values
    float *x, *ln, *q, *k, *v, *o, *res;          // (C) one position's vectors
    float *kv, *kx, *vx;                          // (2 KC) the K/V heads' k, v; (C) each shared out
    float *scores;                                // (L) grouped-query softmax's weights
    float *h, *r, *u;                             // (F)
    float *logits;                                // (V)
    float mean, rstd;
    float *mem;
} decode_state;

// 1 when generation keeps its own cache of layer l's K/V heads (grouped-query softmax without
// switches, which decode_attend reads): KC columns per position. A switched-on softmax keeps the same
// columns in its form's step state (aw_attn_form.KC). Each layer keeps its own kind (layerForms mixes them).
static int own_cache(const aw_model *m, int l) {
    return m->cfg.kv_heads < m->cfg.heads && strcmp(m->self_form[l].form->name, "softmax") == 0 &&
           !m->self_form[l].switches; // a switched-on softmax attends through its form's step
}

// Layer l's window when generation keeps it as a ring (0: a cache of maxLen rows): a form whose step
// reads only its last `window` keys (form->step_window), a window short enough that the ring's 2
// window rows save memory.
static size_t ring_window(const aw_model *m, int l) {
    const aw_attn_form *f = &m->self_form[l];
    if (own_cache(m, l) || !f->form->step_window) return 0;
    const size_t w = f->form->step_window(f);
    return w && 2 * w < (size_t)m->cfg.max_len ? w : 0;
}

// The rows of layer l's step state: a ring of 2 window rows, or maxLen.
static size_t state_rows(const aw_model *m, int l) {
    const size_t w = ring_window(m, l);
    return w ? 2 * w : (size_t)m->cfg.max_len;
}

// 1 when the prompt can go through one batched forward whose K, V fill the caches: a decoder
// whose every self-attention keeps the positions' K, V (grouped-query softmax's own cache, or a
// form with a prefill).
static int can_prefill(const aw_model *m) {
    if (m->cfg.arch != AW_ARCH_DECODER) return 0;
    for (int l = 0; l < m->cfg.layers; l++)
        if (!own_cache(m, l) && !m->self_form[l].form->prefill) return 0;
    return 1;
}

// The batched forward of the np prompt tokens, its K, V into every layer's cache; the logits of
// the last prompt position into logits.
static int prefill(aw_model *m, decode_state *s, const int32_t *prompt, size_t np, float *logits) {
    const aw_model_config *c = &m->cfg;
    const size_t A = model_attn_cols(c), V = (size_t)c->vocab, L = (size_t)c->max_len; // A: the heads' width
    const size_t H = (size_t)c->heads, KH = (size_t)c->kv_heads, hd = model_head_dim(c), KC = KH * hd;
    int st = model_reserve(m, 1, np, 0);
    if (st) return st;
    memcpy(m->tokens, prompt, np * sizeof(int32_t));
    for (size_t i = 0; i < np; i++) m->targets[i] = -1;
    m->last_logits_only = 1, m->params_checked = 1; // model_generate checked them: one pass over the weights less
    st = model_forward(m, NULL);
    m->last_logits_only = 0, m->params_checked = 0;
    if (st) return st;
    for (int l = 0; l < c->layers; l++) {
        const aw_attn_acts *a = &m->a.dec_self[l];
        const size_t W = ring_window(m, l);
        if (own_cache(m, l)) { // K/V head g is the first of its group's copies (rotated already)
            kv_take(s->self[l], a->k, np, H, KH, hd);
            kv_take(s->self[l] + L * KC, a->v, np, H, KH, hd);
        } else if (W) { // the last window positions into the ring, both copies (ring_step), rows of the form's KC
            const size_t R = 2 * W, FC = m->self_form[l].KC, FH = FC / hd; // FH: the heads a row keeps
            float *ring = s->self[l];
            for (size_t p = np > W ? np - W : 0; p < np; p++)
                for (size_t row = p % W; row < R; row += W) {
                    kv_take(ring + row * FC, a->k + p * A, 1, H, FH, hd);
                    kv_take(ring + (R + row) * FC, a->v + p * A, 1, H, FH, hd);
                }
        } else {
            m->self_form[l].form->prefill(&m->self_form[l], s->self[l], L, a->k, a->v, np);
        }
    }
    memcpy(logits, m->a.logits + (np - 1) * V, V * sizeof(float));
    return AW_OK;
}

// 1 when every self-attention form of the model has an incremental step.
static int has_steps(const aw_model *m) {
    for (int l = 0; l < m->cfg.layers; l++)
        if (!(m->self_form[l].form->flags & AW_FORM_STEP)) return 0;
    return 1;
}

// One allocation carved by a plan: per layer the form's step state (whole 16-byte blocks, so a
// state that holds a struct stays aligned) and the cross K, V; then one position's vectors.
static int state_init(decode_state *s, aw_model *m, size_t S) {
    const aw_model_config *c = &m->cfg;
    const size_t L = (size_t)c->max_len, F = (size_t)c->d_ff, V = (size_t)c->vocab;
    const size_t KC = model_kv_cols(m), A = model_attn_cols(c);
    // one position's vectors: the stream's (dModel) and the heads' (A) alike take the wider
    const size_t C = (size_t)c->d_model > A ? (size_t)c->d_model : A;
    const int nl = c->layers;
    memset(s, 0, sizeof *s);
    size_t at_self[AW_MAX_LAYERS], at_ck[AW_MAX_LAYERS], at_cv[AW_MAX_LAYERS];
    aw_plan plan = {0};
    for (int l = 0; l < nl; l++) {
        const aw_attn_form *f = &m->self_form[l];
        const size_t floats = own_cache(m, l) ? aw_size_mul3(2, L, KC) : f->form->step_floats(f, state_rows(m, l));
        at_self[l] = aw_plan_take(&plan, floats / 4 + 1, 4);
        at_ck[l] = aw_plan_take(&plan, S, C);
        at_cv[l] = aw_plan_take(&plan, S, C);
    }
    const size_t at_vec = aw_plan_take(&plan, 9, C);
    aw_plan_take(&plan, 2, KC);
    aw_plan_take(&plan, L, 1);
    aw_plan_take(&plan, 3, F);
    aw_plan_take(&plan, V, 1);
    if (!aw_plan_ok(&plan, sizeof(float)) || !(s->mem = aw_alloc_floats(plan.total)))
        return aw_fail(AW_ERR_NOMEM, "out of memory for the generation state");
    for (int l = 0; l < nl; l++) s->self[l] = s->mem + at_self[l], s->ck[l] = s->mem + at_ck[l], s->cv[l] = s->mem + at_cv[l];
    float *p = s->mem + at_vec;
    s->x = p, p += C;
    s->ln = p, p += C;
    s->q = p, p += C;
    s->k = p, p += C;
    s->v = p, p += C;
    s->o = p, p += C;
    s->res = p, p += C;
    s->kx = p, p += C;
    s->vx = p, p += C;
    s->kv = p, p += 2 * KC;
    s->scores = p, p += L;
    s->h = p, p += F;
    s->r = p, p += F;
    s->u = p, p += F;
    s->logits = p;
    return AW_OK;
}

static void state_free(decode_state *s) { free(s->mem); }

// out (layers): the floats generation keeps for each decoder layer's self-attention, as state_init
// allocates them for a sequence of maxLen: grouped-query softmax's K/V-head cache (2 maxLen KC), or
// the form's step state (its KV cache of maxLen rows, a window layer's ring of 2 window rows, or its
// recurrent state, with the step's scratch). -1 for a layer whose form has no step (generation recomputes instead).
int model_generation_floats(const aw_model *m, double *out) {
    if (m->cfg.arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "generationBytes: counts a decoder's caches, and this model is arch \"%s\"",
                       AW_ARCH_NAMES[m->cfg.arch]);
    const size_t L = (size_t)m->cfg.max_len, KC = model_kv_cols(m);
    for (int l = 0; l < m->cfg.layers; l++) {
        const aw_attn_form *f = &m->self_form[l];
        if (own_cache(m, l)) out[l] = (double)aw_size_mul3(2, L, KC);
        else if (f->form->flags & AW_FORM_STEP) out[l] = (double)f->form->step_floats(f, state_rows(m, l));
        else out[l] = -1.0;
    }
    return AW_OK;
}

// One attention sublayer for one position. Self: the form's step adds this position's k, v (and
// x) to its state. Cross: the form's forward for one query over the precomputed ck, cv (Sk rows).
void decode_attend(float *out, float *scores, const float *q, const float *kc, const float *vc, size_t n, size_t H,
                   size_t KH, size_t hd, const float *slopes) {
    const size_t KC = KH * hd, group = H / KH;
    const float scale = 1.0f / sqrtf((float)hd);
    for (size_t h = 0; h < H; h++) {
        const float *qh = q + h * hd;
        const size_t off = (h / group) * hd;
        float mx = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            scores[j] = aw_dot(qh, kc + j * KC + off, hd) * scale - (slopes ? slopes[h] * (float)(n - 1 - j) : 0.0f);
            mx = scores[j] > mx ? scores[j] : mx;
        }
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) sum += scores[j] = expf(scores[j] - mx);
        float *o = out + h * hd;
        memset(o, 0, hd * sizeof(float));
        for (size_t j = 0; j < n; j++) aw_axpy(o, (float)(scores[j] / sum), vc + j * KC + off, hd);
    }
}

// A window layer's step on its ring of R = 2W rows (keys, then values): position p sits at rows p % W
// and p % W + W, so the last W positions are always W consecutive rows, oldest first. The form's step
// runs on that view as on a cache of those positions alone (the same keys in the same order, the
// query at the same offset from the first: the bits of a full cache) and writes this position's row
// of it; the other copy is written here.
// Rows are the form's KC columns (the K/V heads' under grouped-query attention).
static int ring_step(aw_attn_form *f, decode_state *s, float *ring, size_t W, const float *xin, const float *k,
                     const float *v, size_t pos) {
    const size_t KC = f->KC, R = 2 * W;
    const size_t start = pos < W ? 0 : (pos + 1) % W, at = pos < W ? pos : W - 1; // the view's first row; this one's in it
    const size_t row = start + at, twin = row < W ? row + W : row - W;
    memcpy(ring + twin * KC, k, KC * sizeof(float));
    memcpy(ring + (R + twin) * KC, v, KC * sizeof(float));
    return f->form->step(f, ring + start * KC, R, s->o, xin, s->q, k, v, at);
}

static int step_attn(aw_model *m, decode_state *s, aw_attn_form *f, const aw_attn_weights *w, int l, size_t pos,
                     int cross, size_t Sk) {
    const size_t C = (size_t)m->cfg.d_model, H = (size_t)m->cfg.heads, KH = (size_t)m->cfg.kv_heads;
    const size_t hd = model_head_dim(&m->cfg), A = H * hd, KC = KH * hd, L = (size_t)m->cfg.max_len;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    if (pre) norm_forward(m, s->ln, &s->mean, &s->rstd, s->x, w->ln_w, w->ln_b, 1);
    const float *xin = pre ? s->ln : s->x;
    const int has_q = w->wq || w->qq;
    if (has_q) model_linear(m, s->q, xin, w->wq, w->qq, w->bq, 1, C, A);
    int st;
    if (cross) {
        st = f->form->forward(f, s->o, NULL, NULL, xin, s->q, s->ck[l], s->cv[l], 1, Sk);
    } else {
        if (w->wk || w->qk) model_linear(m, s->kv, xin, w->wk, w->qk, w->bk, 1, C, KC);
        if (w->wv || w->qv) model_linear(m, s->kv + KC, xin, w->wv, w->qv, w->bv, 1, C, KC);
        if (f->form->qk_forward && has_q && (st = f->form->qk_forward(f, NULL, s->q, s->kv, 1, 1, KC)))
            return st; // before the rotation: the form's own (QK-norm), on the K/V heads' key
        if (m->pos->rotate_qk && has_q) { // rotary positions: the query and the key at this position
            m->pos->rotate_qk(&m->pos_tables, s->q, 1, 1, pos, A, 0);
            m->pos->rotate_qk(&m->pos_tables, s->kv, 1, 1, pos, KC, 0);
        }
        if (own_cache(m, l)) { // the cache holds the K/V heads only
            if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past the KV cache's %zu", pos, L);
            float *kc = s->self[l], *vc = s->self[l] + L * KC;
            memcpy(kc + pos * KC, s->kv, KC * sizeof(float));
            memcpy(vc + pos * KC, s->kv + KC, KC * sizeof(float));
            decode_attend(s->o, s->scores, s->q, kc, vc, pos + 1, H, KH, hd, m->score_slopes);
            st = AW_OK;
        } else {
            const float *k = s->kv, *v = s->kv + KC; // a form that keeps the K/V heads only takes them as they are
            if (f->KC == A) { // the others take every head's: each K/V head copied to its group
                kv_expand(s->kx, s->kv, 1, H, KH, hd);
                kv_expand(s->vx, s->kv + KC, 1, H, KH, hd);
                k = s->kx, v = s->vx;
            }
            const size_t W = ring_window(m, l);
            st = W ? ring_step(f, s, s->self[l], W, xin, k, v, pos) : f->form->step(f, s->self[l], L, s->o, xin, s->q, k, v, pos);
        }
    }
    if (st) return st;
    model_linear(m, s->res, s->o, w->wo, w->qo, w->bo, 1, A, C);
    aw_axpy(s->res, 1.0f, s->x, C);
    if (pre) memcpy(s->x, s->res, C * sizeof(float));
    else norm_forward(m, s->x, &s->mean, &s->rstd, s->res, w->ln_w, w->ln_b, 1);
    return AW_OK;
}

void decode_ffn(const aw_model *m, const aw_ffn_weights *w, float *x, float *ln, float *h, float *u, float *r,
                float *res) {
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff;
    const int pre = m->cfg.norm == AW_NORM_PRE;
    float mean, rstd;
    if (pre) norm_forward(m, ln, &mean, &rstd, x, w->ln_w, w->ln_b, 1);
    model_linear(m, h, pre ? ln : x, w->w1, w->q1, w->b1, 1, C, F);
    if (w->w3 || w->q3) {
        model_linear(m, u, pre ? ln : x, w->w3, w->q3, w->b3, 1, C, F);
        swiglu_forward(r, h, u, F);
    } else if (m->cfg.ffn == AW_FFN_GELU) gelu_forward(r, h, F);
    else relu_forward(r, h, F);
    model_linear(m, res, r, w->w2, w->q2, w->b2, 1, F, C);
    aw_axpy(res, 1.0f, x, C);
    if (pre) memcpy(x, res, C * sizeof(float));
    else norm_forward(m, x, &mean, &rstd, res, w->ln_w, w->ln_b, 1);
}

void decode_logits(const aw_model *m, float *logits, const float *x, float *ln) {
    const aw_model_config *c = &m->cfg;
    float mean, rstd;
    if (c->norm == AW_NORM_PRE) norm_forward(m, ln, &mean, &rstd, x, m->w.lnf_w, m->w.lnf_b, 1), x = ln;
    model_classifier(m, logits, x, 1);
}

// Feeds token at position pos through every layer; leaves the logits in s->logits.
static int step_token(aw_model *m, decode_state *s, int32_t token, size_t pos, size_t Sk) {
    const aw_model_config *c = &m->cfg;
    const size_t C = (size_t)c->d_model;
    embedding_forward(s->x, &token, m->w.wte, m->pe ? m->pe + pos * C : NULL, 1, 1, C);
    int st;
    for (int l = 0; l < c->layers; l++) {
        if ((st = step_attn(m, s, &m->self_form[l], &m->w.dec[l].self, l, pos, 0, 0))) return st;
        if (c->arch == AW_ARCH_ENCODER_DECODER &&
            (st = step_attn(m, s, &m->cross_form[l], &m->w.dec[l].cross, l, pos, 1, Sk)))
            return st;
        decode_ffn(m, &m->w.dec[l].ffn, s->x, s->ln, s->h, s->u, s->r, s->res);
    }
    decode_logits(m, s->logits, s->x, s->ln);
    return AW_OK;
}

// Picks the next token from logits (V): greedy, or softmax(logits / temperature) over the top_k.
int32_t model_sample(float *logits, size_t V, float temperature, int top_k, aw_rng *rng) {
    size_t arg = 0;
    for (size_t j = 1; j < V; j++)
        if (logits[j] > logits[arg]) arg = j;
    if (!(temperature > 0.0f)) return (int32_t)arg;
    if (top_k > 0 && (size_t)top_k < V) { // keep logits >= the k-th largest (ties kept)
        float kth = -INFINITY;
        for (int r = 0; r < top_k; r++) { // k passes of "largest below the previous": fine for small k
            float best = -INFINITY;
            for (size_t j = 0; j < V; j++)
                if (logits[j] > best && (r == 0 || logits[j] < kth)) best = logits[j];
            kth = best;
        }
        for (size_t j = 0; j < V; j++)
            if (logits[j] < kth) logits[j] = -INFINITY;
    }
    const float mx = logits[arg];
    double sum = 0.0;
    for (size_t j = 0; j < V; j++) sum += logits[j] = logits[j] == -INFINITY ? 0.0f : expf((logits[j] - mx) / temperature);
    double u = aw_rng_uniform(rng) * sum;
    for (size_t j = 0; j < V; j++) {
        u -= logits[j];
        if (u < 0.0 && logits[j] > 0.0f) return (int32_t)j;
    }
    return (int32_t)arg;
}

// ---- a generation session: begin, next, end ------------------------------------------------------
// model_generate in pieces, so a caller can take tokens as they are made (the playground's worker posts
// each one) and stop between any two. The session holds everything the loop reads between calls (its
// own copy of the prompt and the source, the sequence so far, the last logits, the sampler's generator
// and the decode state), so other calls on the model between two next calls (forward, another session)
// leave it as it was. It does not hold the weights: the model's revision (bumped by a training step,
// quantize, an attention option or sampleVocab) is taken at begin, and next refuses once it moved.
struct aw_generation {
    aw_model *m;
    uint64_t revision;             // m->revision at begin
    size_t np, ns, made, max_new;  // prompt and source lengths, tokens made so far, the most to make
    int32_t *seq, *src;            // (maxLen) the prompt then the tokens made; (ns) the source
    float *logits;                 // (V)
    aw_rng rng;
    float temperature;
    int top_k, stop_token, use_cache, rnn, has_src;
    decode_state s;                // the transformer's caches (have_state)
    aw_rnn_decode_state rs;        // the GRU archs' (have_rnn_state)
    int have_state, have_rnn_state, prefilled;
    int ended;                     // 0, or why it ended: AW_GEN_STOP, AW_GEN_MAX_TOKENS, AW_GEN_MAX_LEN
    int failed;                    // 1 after a next that failed: the state is part-way through a token
};

void model_generation_end(aw_generation *g) {
    if (!g) return;
    if (g->have_state) state_free(&g->s);
    if (g->have_rnn_state) rnn_decode_end(&g->rs);
    free(g->seq), free(g->src), free(g->logits), free(g);
}

int model_generation_begin(aw_generation **out, aw_model *m, size_t max_new, const int32_t *prompt, size_t np,
                           const int32_t *src, size_t ns, float temperature, int top_k, uint64_t seed, int stop_token,
                           int use_cache) {
    const aw_model_config *c = &m->cfg;
    const size_t L = (size_t)c->max_len, C = (size_t)c->d_model, V = (size_t)c->vocab;
    const int encdec = c->arch == AW_ARCH_ENCODER_DECODER, rnn = aw_arch_is_rnn(c->arch);
    const int has_src = aw_arch_has_source(c->arch);
    *out = NULL;
    if (np == 0 || np > L) return aw_fail(AW_ERR_ARG, "prompt must have 1 to maxLen = %zu tokens, got %zu", L, np);
    if (has_src && (ns == 0 || ns > L))
        return aw_fail(AW_ERR_ARG, "source must have 1 to maxLen = %zu tokens, got %zu", L, ns);
    if (!has_src && ns) return aw_fail(AW_ERR_ARG, "a decoder-only model takes no source");
    for (size_t i = 0; i < np; i++)
        if (prompt[i] < 0 || prompt[i] >= c->vocab)
            return aw_fail(AW_ERR_ARG, "prompt[%zu] is %d, outside the vocabulary [0, %d)", i, (int)prompt[i], (int)c->vocab);
    for (size_t i = 0; i < ns; i++)
        if (src[i] < 0 || src[i] >= c->vocab)
            return aw_fail(AW_ERR_ARG, "source[%zu] is %d, outside the vocabulary [0, %d)", i, (int)src[i], (int)c->vocab);
    // a diverged model says so as forward does, before a cached step meets a NaN in some sublayer
    const int bad = model_check_params(m);
    if (bad) return bad;
    aw_generation *g = calloc(1, sizeof *g);
    if (!g) return aw_fail(AW_ERR_NOMEM, "out of memory for generation");
    g->seq = aw_alloc(L, sizeof(int32_t));
    g->src = aw_alloc(ns ? ns : 1, sizeof(int32_t));
    g->logits = aw_alloc_floats(V);
    if (!g->seq || !g->src || !g->logits) {
        model_generation_end(g);
        return aw_fail(AW_ERR_NOMEM, "out of memory for generation");
    }
    g->m = m, g->revision = m->revision;
    g->np = np, g->ns = ns, g->max_new = max_new;
    g->temperature = temperature, g->top_k = top_k, g->stop_token = stop_token;
    g->rnn = rnn, g->has_src = has_src;
    aw_rng_seed(&g->rng, seed);
    memcpy(g->seq, prompt, np * sizeof(int32_t));
    if (ns) memcpy(g->src, src, ns * sizeof(int32_t));
    src = ns ? g->src : NULL;
    const int32_t *seq = g->seq;
    float *logits = g->logits;
    decode_state *s = &g->s;
    int st = AW_OK;
    // a form without an incremental step takes the full-forward path
    if (!rnn && !has_steps(m)) use_cache = 0;
    g->use_cache = use_cache;
    if (use_cache && rnn) { // the GRU archs: the encoder once, then one decoder step per token
        const aw_rnn_weights rw = model_rnn_weights(&m->w);
        if ((st = rnn_decode_begin(&g->rs, &rw, (size_t)m->cfg.d_model, (size_t)m->cfg.vocab,
                                   m->cfg.arch == AW_ARCH_GRU_ATTENTION, src, ns)))
            goto fail;
        g->have_rnn_state = 1;
        for (size_t p = 0; p + 1 < np; p++) rnn_decode_step(&g->rs, &rw, seq[p], logits);
    } else if (use_cache) {
        if ((st = state_init(s, m, ns))) goto fail;
        g->have_state = 1;
        if (encdec) { // encode once (a decoder pass of one token comes along), then project K, V per layer
            if ((st = model_reserve(m, 1, 1, ns))) goto fail;
            memcpy(m->src, src, ns * sizeof(int32_t));
            m->tokens[0] = seq[0], m->targets[0] = -1;
            if ((st = model_forward(m, NULL))) goto fail;
            const float *enc = c->norm == AW_NORM_PRE ? m->a.enc_lnf : m->a.enc_ffn[c->layers - 1].ln;
            const size_t H = (size_t)c->heads, KH = (size_t)c->kv_heads, hd = C / H, KC = KH * hd;
            for (int l = 0; l < c->layers; l++) { // the K/V heads' projections, shared out
                float *tmp = m->a.enc_attn[0].k; // (ns, C): the encoder pass is done with it
                const aw_attn_weights *cw = &m->w.dec[l].cross;
                if (cw->wk) linear_forward(tmp, enc, cw->wk, cw->bk, ns, C, KC), kv_expand(s->ck[l], tmp, ns, H, KH, hd);
                linear_forward(tmp, enc, cw->wv, cw->bv, ns, C, KC);
                kv_expand(s->cv[l], tmp, ns, H, KH, hd);
            }
        }
        if (np > 1 && can_prefill(m)) { // the prompt in one batched forward: its last logits are ready
            if ((st = prefill(m, s, seq, np, logits))) goto fail;
            g->prefilled = 1;
        } else {
            for (size_t p = 0; p + 1 < np; p++)
                if ((st = step_token(m, s, seq[p], p, ns))) goto fail;
        }
    }
    if (max_new == 0) g->ended = AW_GEN_MAX_TOKENS;
    *out = g;
    return AW_OK;
fail:
    model_generation_end(g);
    return st;
}

int model_generation_next(aw_generation *g, int32_t *out, size_t count, size_t *n_out, int *ended) {
    aw_model *m = g->m;
    const size_t L = (size_t)m->cfg.max_len, V = (size_t)m->cfg.vocab, np = g->np, ns = g->ns;
    *n_out = 0;
    *ended = g->ended;
    if (g->failed)
        return aw_fail(AW_ERR_STATE, "this generation failed in an earlier call; start a new one");
    if (m->revision != g->revision)
        return aw_fail(AW_ERR_STATE, "the model changed since this generation began (a training step, quantize, an "
                                     "attention option or sampleVocab): its caches no longer match the weights; "
                                     "start a new generation");
    int32_t *seq = g->seq;
    float *logits = g->logits;
    decode_state *s = &g->s;
    const aw_rnn_weights rw = model_rnn_weights(&m->w);
    int st = AW_OK;
    // the model reads at most L positions: after the prompt, up to L - np + 1 new tokens
    while (*n_out < count && !g->ended) {
        const size_t len = np + g->made;
        if (g->use_cache && g->rnn) {
            rnn_decode_step(&g->rs, &rw, seq[len - 1], logits);
        } else if (g->use_cache && g->prefilled) {
            g->prefilled = 0; // the prefill left the last prompt position's logits
        } else if (g->use_cache) {
            if ((st = step_token(m, s, seq[len - 1], len - 1, ns))) goto fail;
            memcpy(logits, s->logits, V * sizeof(float));
        } else {
            if ((st = model_reserve(m, 1, len, g->has_src ? ns : 0))) goto fail;
            memcpy(m->tokens, seq, len * sizeof(int32_t));
            for (size_t i = 0; i < len; i++) m->targets[i] = -1;
            if (g->has_src) memcpy(m->src, g->src, ns * sizeof(int32_t));
            if ((st = model_forward(m, NULL))) goto fail;
            memcpy(logits, m->a.logits + (len - 1) * V, V * sizeof(float));
        }
        for (size_t j = 0; j < V; j++)
            if (!isfinite(logits[j])) {
                st = aw_fail(AW_ERR_NONFINITE, "the model's logits are not finite (NaN or Infinity): its parameters have "
                                               "diverged; load a checkpoint from before or create it again");
                goto fail;
            }
        const int32_t t = model_sample(logits, model_sample_vocab(m), g->temperature, g->top_k, &g->rng);
        out[(*n_out)++] = t;
        g->made++;
        // why it ends, when it does: the stop token first, then the caller's count, then the full sequence
        if (t == g->stop_token) g->ended = AW_GEN_STOP;
        else if (g->made == g->max_new) g->ended = AW_GEN_MAX_TOKENS;
        else if (len == L) g->ended = AW_GEN_MAX_LEN;
        else seq[len] = t;
    }
    *ended = g->ended;
    return AW_OK;
fail:
    g->failed = 1;
    return st;
}

int model_generate(aw_model *m, int32_t *out, size_t *n_out, size_t max_new, const int32_t *prompt, size_t np,
                   const int32_t *src, size_t ns, float temperature, int top_k, uint64_t seed, int stop_token,
                   int use_cache) {
    aw_generation *g;
    int ended;
    *n_out = 0;
    int st = model_generation_begin(&g, m, max_new, prompt, np, src, ns, temperature, top_k, seed, stop_token, use_cache);
    if (st) return st;
    st = model_generation_next(g, out, max_new, n_out, &ended);
    model_generation_end(g);
    return st;
}
