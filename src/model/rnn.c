// rnn.c: the GRU encoder-decoder with a fixed context (arch "gru") or additive attention (arch
// "gru-attention"); equations in rnn.h. Forward saves every gate; backward is exact backprop
// through time (the decoder's steps in reverse, then the encoder's).
#include "rnn.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


// ---- one GRU step -----------------------------------------------------------------------------

void gru_cell_forward(float *h, float *gate, const float *gi, const float *gh, const float *h_prev, size_t B,
                      size_t C) {
    for (size_t b = 0; b < B; b++) {
        const float *xi = gi + b * 3 * C, *hh = gh + b * 3 * C, *hp = h_prev + b * C;
        float *g = gate + b * 3 * C, *out = h + b * C;
        for (size_t k = 0; k < C; k++) {
            const float r = aw_sigmoidf(xi[k] + hh[k]);
            const float z = aw_sigmoidf(xi[C + k] + hh[C + k]);
            const float n = tanhf(xi[2 * C + k] + r * hh[2 * C + k]);
            g[k] = r, g[C + k] = z, g[2 * C + k] = n;
            out[k] = (1.0f - z) * n + z * hp[k];
        }
    }
}

void gru_cell_backward(float *dgi, float *dgh, float *dh_prev, const float *dh, const float *gate, const float *gh,
                       const float *h_prev, size_t B, size_t C) {
    for (size_t b = 0; b < B; b++) {
        const float *g = gate + b * 3 * C, *hh = gh + b * 3 * C, *hp = h_prev + b * C, *d = dh + b * C;
        float *di = dgi + b * 3 * C, *dhh = dgh + b * 3 * C, *dp = dh_prev + b * C;
        for (size_t k = 0; k < C; k++) {
            const float r = g[k], z = g[C + k], n = g[2 * C + k];
            // h' = (1 - z) n + z h
            const float dn = d[k] * (1.0f - z), dz = d[k] * (hp[k] - n);
            dp[k] += d[k] * z;
            // n = tanh(a_n), a_n = gi_n + r gh_n
            const float dan = dn * (1.0f - n * n);
            const float dr = dan * hh[2 * C + k];
            // r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z)
            const float dar = dr * r * (1.0f - r), daz = dz * z * (1.0f - z);
            di[k] += dar, dhh[k] += dar;
            di[C + k] += daz, dhh[C + k] += daz;
            di[2 * C + k] += dan, dhh[2 * C + k] += dan * r;
        }
    }
}

void gru_step_forward(float *h, float *gi, float *gh, float *gate, const float *x, const float *h_prev,
                      const aw_gru_weights *w, size_t B, size_t IN, size_t C) {
    linear_forward(gi, x, w->w_ih, w->b_ih, B, IN, 3 * C);
    linear_forward(gh, h_prev, w->w_hh, w->b_hh, B, C, 3 * C);
    gru_cell_forward(h, gate, gi, gh, h_prev, B, C);
}

void gru_step_backward(float *dx, float *dh_prev, aw_gru_weights *g, float *dgi, float *dgh, const float *dh,
                       const float *gate, const float *gh, const float *x, const float *h_prev,
                       const aw_gru_weights *w, size_t B, size_t IN, size_t C) {
    gru_cell_backward(dgi, dgh, dh_prev, dh, gate, gh, h_prev, B, C);
    linear_backward(dh_prev, g->w_hh, g->b_hh, dgh, h_prev, w->w_hh, B, C, 3 * C);
    linear_backward(dx, g->w_ih, g->b_ih, dgi, x, w->w_ih, B, IN, 3 * C);
}

// ---- additive attention -----------------------------------------------------------------------

void additive_attention_forward(float *ctx, size_t ldctx, float *att, float *th, float *ws, const float *s_prev,
                                const float *H, const float *UH, const aw_additive_attn_weights *w, size_t B, size_t S,
                                size_t C) {
    linear_forward(ws, s_prev, w->W_a, NULL, B, C, C);
    for (size_t b = 0; b < B; b++) {
        float *a = att + b * S, *cb = ctx + b * ldctx;
        const float *wb = ws + b * C;
        float mx = -INFINITY;
        for (size_t j = 0; j < S; j++) {
            float *t = th + (b * S + j) * C;
            const float *u = UH + (j * B + b) * C;
            for (size_t k = 0; k < C; k++) t[k] = tanhf(wb[k] + u[k]);
            a[j] = aw_dot(w->v, t, C);
            mx = a[j] > mx ? a[j] : mx;
        }
        float sum = 0.0f;
        for (size_t j = 0; j < S; j++) sum += a[j] = expf(a[j] - mx);
        for (size_t j = 0; j < S; j++) a[j] /= sum;
        memset(cb, 0, C * sizeof(float));
        for (size_t j = 0; j < S; j++) aw_axpy(cb, a[j], H + (j * B + b) * C, C);
    }
}

void additive_attention_backward(float *ds_prev, float *dH, float *dUH, aw_additive_attn_weights *g, float *dws,
                                 float *datt, const float *dctx, size_t lddctx, const float *att, const float *th,
                                 const float *s_prev, const float *H, const aw_additive_attn_weights *w, size_t B,
                                 size_t S, size_t C) {
    memset(dws, 0, B * C * sizeof(float));
    for (size_t b = 0; b < B; b++) {
        const float *a = att + b * S, *dc = dctx + b * lddctx;
        float *da = datt + b * S;
        // ctx = sum_j a_j h_j
        float dot = 0.0f;
        for (size_t j = 0; j < S; j++) {
            da[j] = aw_dot(dc, H + (j * B + b) * C, C);
            aw_axpy(dH + (j * B + b) * C, a[j], dc, C);
            dot += a[j] * da[j];
        }
        // a = softmax(e); e_j = v . t_j; t_j = tanh(ws + uh_j)
        float *dwb = dws + b * C;
        for (size_t j = 0; j < S; j++) {
            const float de = a[j] * (da[j] - dot);
            const float *t = th + (b * S + j) * C;
            float *du = dUH + (j * B + b) * C;
            aw_axpy(g->v, de, t, C);
            for (size_t k = 0; k < C; k++) {
                const float dp = de * w->v[k] * (1.0f - t[k] * t[k]);
                dwb[k] += dp, du[k] += dp;
            }
        }
    }
    linear_backward(ds_prev, g->W_a, NULL, dws, s_prev, w->W_a, B, C, C);
}

// ---- encoder and decoder ----------------------------------------------------------------------

// x (B rows of C, stride ld) = wte[tokens[b * stride]]
static void gather(float *x, size_t ld, const float *wte, const int32_t *tokens, size_t stride, size_t B, size_t C) {
    for (size_t b = 0; b < B; b++) memcpy(x + b * ld, wte + (size_t)tokens[b * stride] * C, C * sizeof(float));
}

static void scatter(float *dwte, const float *dx, size_t ld, const int32_t *tokens, size_t stride, size_t B, size_t C) {
    for (size_t b = 0; b < B; b++) aw_axpy(dwte + (size_t)tokens[b * stride] * C, 1.0f, dx + b * ld, C);
}

// One decoder step over B rows from s_prev (B, C): x (B, 2C) = [wte[tok]; context], then the GRU
// into s. H, UH: the encoder states (S*B, C) and H U_a + b_a (attention; else NULL). The same
// function serves training and generation, so both compute the same floats.
static void decoder_step(float *s, float *x, float *gi, float *gh, float *gate, float *ws, float *th, float *att,
                         const float *s_prev, const int32_t *tok, size_t tok_stride, const float *H, const float *UH,
                         const aw_rnn_weights *w, int attention, size_t B, size_t S, size_t C) {
    gather(x, 2 * C, w->wte, tok, tok_stride, B, C);
    if (attention) additive_attention_forward(x + C, 2 * C, att, th, ws, s_prev, H, UH, &w->attn, B, S, C);
    else
        for (size_t b = 0; b < B; b++) memcpy(x + b * 2 * C + C, H + ((S - 1) * B + b) * C, C * sizeof(float)); // c = h_S
    gru_step_forward(s, gi, gh, gate, x, s_prev, &w->dec_gru, B, 2 * C, C);
}

// The encoder over src (B, S, row stride `stride`): embeddings, the input projection at once,
// then the recurrence; H U_a + b_a when attention. Training and generation both run this.
static void encode(float *enc_x, float *gi, float *gh, float *gate, float *h, float *uh, const int32_t *src,
                   size_t stride, const aw_rnn_weights *w, int attention, size_t B, size_t S, size_t C) {
    const size_t C3 = 3 * C;
    for (size_t t = 0; t < S; t++) gather(enc_x + t * B * C, C, w->wte, src + t, stride, B, C);
    linear_forward(gi, enc_x, w->enc_gru.w_ih, w->enc_gru.b_ih, S * B, C, C3);
    memset(h, 0, B * C * sizeof(float));
    for (size_t t = 0; t < S; t++) {
        linear_forward(gh + t * B * C3, h + t * B * C, w->enc_gru.w_hh, w->enc_gru.b_hh, B, C, C3);
        gru_cell_forward(h + (t + 1) * B * C, gate + t * B * C3, gi + t * B * C3, gh + t * B * C3, h + t * B * C, B, C);
    }
    if (attention) linear_forward(uh, h + B * C, w->attn.U_a, w->attn.b_a, S * B, C, C);
}

void rnn_forward(const aw_rnn_batch *bt, const aw_rnn_weights *w, aw_rnn_acts *a, float *x0) {
    const size_t B = bt->B, T = bt->T, S = bt->S, C = bt->C, C3 = 3 * C;
    const int attention = bt->attention;
    encode(a->enc_x, a->enc_gi, a->enc_gh, a->enc_gate, a->enc_h, a->uh, bt->src, S, w, attention, B, S, C);
    const float *H = a->enc_h + B * C;
    // decoder from s_0 = c = h_S
    memcpy(a->dec_s, H + (S - 1) * B * C, B * C * sizeof(float));
    for (size_t i = 0; i < T; i++)
        decoder_step(a->dec_s + (i + 1) * B * C, a->dec_x + i * B * 2 * C, a->dec_gi + i * B * C3, a->dec_gh + i * B * C3,
                     a->dec_gate + i * B * C3, attention ? a->ws + i * B * C : NULL,
                     attention ? a->tanh + i * B * S * C : NULL, attention ? a->att + i * B * S : NULL,
                     a->dec_s + i * B * C, bt->tokens + i, T, H, a->uh, w, attention, B, S, C);
    // s_1..s_T batch-major for the output projection (rows b * T + i, as the targets)
    for (size_t i = 0; i < T; i++)
        for (size_t b = 0; b < B; b++)
            memcpy(x0 + (b * T + i) * C, a->dec_s + ((i + 1) * B + b) * C, C * sizeof(float));
}

void rnn_backward(const aw_rnn_batch *bt, const aw_rnn_weights *w, aw_rnn_weights *g, const aw_rnn_acts *a,
                  aw_rnn_acts *d, const float *dx0) {
    const size_t B = bt->B, T = bt->T, S = bt->S, C = bt->C, C3 = 3 * C;
    const int attention = bt->attention;
    for (size_t i = 0; i < T; i++)
        for (size_t b = 0; b < B; b++)
            aw_axpy(d->dec_s + ((i + 1) * B + b) * C, 1.0f, dx0 + (b * T + i) * C, C);
    const float *H = a->enc_h + B * C;
    float *dH = d->enc_h + B * C;
    // decoder, last step first: ds_{i+1} is complete once step i + 1 has been undone
    for (size_t i = T; i-- > 0;) {
        const float *x = a->dec_x + i * B * 2 * C, *s_prev = a->dec_s + i * B * C;
        float *dx = d->dec_x + i * B * 2 * C, *ds_prev = d->dec_s + i * B * C;
        gru_step_backward(dx, ds_prev, &g->dec_gru, d->dec_gi + i * B * C3, d->dec_gh + i * B * C3,
                          d->dec_s + (i + 1) * B * C, a->dec_gate + i * B * C3, a->dec_gh + i * B * C3, x, s_prev,
                          &w->dec_gru, B, 2 * C, C);
        scatter(g->wte, dx, 2 * C, bt->tokens + i, T, B, C);
        if (attention)
            additive_attention_backward(ds_prev, dH, d->uh, &g->attn, d->ws + i * B * C, d->att + i * B * S, dx + C, 2 * C,
                                        a->att + i * B * S, a->tanh + i * B * S * C, s_prev, H, &w->attn, B, S, C);
        else // c_i = c = h_S
            for (size_t b = 0; b < B; b++) aw_axpy(dH + ((S - 1) * B + b) * C, 1.0f, dx + b * 2 * C + C, C);
    }
    aw_axpy(dH + (S - 1) * B * C, 1.0f, d->dec_s, B * C); // s_0 = h_S
    if (attention) linear_backward(dH, g->attn.U_a, g->attn.b_a, d->uh, H, w->attn.U_a, S * B, C, C);
    // encoder
    for (size_t t = S; t-- > 0;) {
        gru_cell_backward(d->enc_gi + t * B * C3, d->enc_gh + t * B * C3, d->enc_h + t * B * C, d->enc_h + (t + 1) * B * C,
                          a->enc_gate + t * B * C3, a->enc_gh + t * B * C3, a->enc_h + t * B * C, B, C);
        linear_backward(d->enc_h + t * B * C, g->enc_gru.w_hh, g->enc_gru.b_hh, d->enc_gh + t * B * C3,
                        a->enc_h + t * B * C, w->enc_gru.w_hh, B, C, C3);
    }
    linear_backward(d->enc_x, g->enc_gru.w_ih, g->enc_gru.b_ih, d->enc_gi, a->enc_x, w->enc_gru.w_ih, S * B, C, C3);
    for (size_t t = 0; t < S; t++) scatter(g->wte, d->enc_x + t * B * C, C, bt->src + t, S, B, C);
}

// ---- generation -------------------------------------------------------------------------------

int rnn_decode_begin(aw_rnn_decode_state *st, const aw_rnn_weights *w, size_t C, size_t V, int attention,
                     const int32_t *src, size_t ns) {
    memset(st, 0, sizeof *st);
    if (ns == 0) return aw_fail(AW_ERR_ARG, "a GRU model needs a source sequence");
    aw_plan plan = {0};
    const size_t at_h = aw_plan_take(&plan, ns + 1, C), at_uh = aw_plan_take(&plan, ns, C);
    const size_t at_vec = aw_plan_take(&plan, 14, C); // s, s_new, x (2), gi, gh, gate (3 each), ws, spare
    const size_t at_tanh = aw_plan_take(&plan, ns, C), at_att = aw_plan_take(&plan, ns, 1);
    const size_t at_enc = aw_plan_take(&plan, ns, 10 * C); // the encoder's x (C) and gi, gh, gate (3C each)
    if (!aw_plan_ok(&plan, sizeof(float)) || !(st->mem = aw_alloc_floats(plan.total)))
        return aw_fail(AW_ERR_NOMEM, "out of memory for the generation state");
    float *enc = st->mem + at_enc, *h = st->mem + at_h; // h: h_0 = 0, h_1..h_S
    encode(enc, enc + ns * C, enc + 4 * ns * C, enc + 7 * ns * C, h, st->mem + at_uh, src, ns, w, attention, 1, ns, C);
    st->S = ns, st->C = C, st->V = V, st->attention = attention;
    st->H = h + C, st->UH = st->mem + at_uh;
    float *p = st->mem + at_vec;
    st->s = p, p += C;
    st->s_new = p, p += C;
    st->x = p, p += 2 * C;
    st->gi = p, p += 3 * C;
    st->gh = p, p += 3 * C;
    st->gate = p, p += 3 * C;
    st->ws = p;
    st->tanh = st->mem + at_tanh, st->att = st->mem + at_att;
    memcpy(st->s, st->H + (ns - 1) * C, C * sizeof(float)); // s_0 = c = h_S
    return AW_OK;
}

void rnn_decode_step(aw_rnn_decode_state *st, const aw_rnn_weights *w, int32_t token, float *logits) {
    const size_t C = st->C;
    decoder_step(st->s_new, st->x, st->gi, st->gh, st->gate, st->ws, st->tanh, st->att, st->s, &token, 1, st->H, st->UH,
                 w, st->attention, 1, st->S, C);
    memcpy(st->s, st->s_new, C * sizeof(float));
    linear_forward(logits, st->s, w->w_out, w->b_out, 1, C, st->V);
}

void rnn_decode_end(aw_rnn_decode_state *st) {
    free(st->mem);
    st->mem = NULL;
}
