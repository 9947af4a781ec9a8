// form_softmax.c: scaled dot-product attention as a registry row (docs/attention-forms.md
// sections 1 and 1b). The forward saves each row's log-sum-exp and its output, and the backward
// recomputes the probabilities block by block (FlashAttention-2): no (H, T, Tk) matrix is kept
// for training. Generation keeps a KV cache of the positions so far.
//
// 2025's switches, each an option, each off by default (then nothing below runs but a test):
//   window W        a causal row sees the last W keys only (Gemma 2/3, gpt-oss); in the kernel
//   softcap c       logits c tanh(s / c) before the mask (Gemma 2); in the kernel
//   learnedSinks    one learned logit per head as an extra column with no value (gpt-oss);
//                   in the kernel, its parameter `sinks` (H) here
//   outputGate      Y = SDPA(Q, K, V) ⊙ sigmoid(x W_g^T), W_g (C, C) as nn.Linear(C, C) keeps it
//                   (Qwen3-Next; Qiu et al. 2025); here, around the kernel
//   qkNorm          RMSNorm of each head's q and k with learned scales q_norm, k_norm (d_head,
//                   shared by the heads, as Qwen3 and Gemma 3 keep them) before the positional
//                   rotation: the model calls qk_forward / qk_backward around its rotation
// They apply to causal self-attention (a decoder's); a non-causal layer refuses them.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/softmax_attention.h"
#include "../attention/softmax_attention_backward.h"
#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const OFF[] = {"off", NULL};
static const aw_form_option SOFTMAX_OPTIONS[] = {
    {"window", AW_OPTION_INT, 1, 1 << 20, NULL, NULL, "window",
     "a sliding window: query i sees keys i - window < j <= i only (Gemma 2/3, gpt-oss); unset: every earlier key"},
    {"softcap", AW_OPTION_CHOICE, 0, 1e6, OFF, NULL, "softcap",
     "soft-capping: each scaled logit s becomes c tanh(s / c) before the mask (Gemma 2 uses 50); off by default"},
    {"learnedSinks", AW_OPTION_BOOL, 0, 0, NULL, NULL, "learned_sinks",
     "a learned logit per head as one more softmax column with no value (gpt-oss)"},
    {"outputGate", AW_OPTION_BOOL, 0, 0, NULL, NULL, "output_gate",
     "Y = SDPA(Q, K, V) * sigmoid(x W_g), elementwise before W_O (Qwen3-Next; Qiu et al. 2025)"},
    {"qkNorm", AW_OPTION_BOOL, 0, 0, NULL, NULL, "qk_norm",
     "RMSNorm of each head's q and k, learned scales of d_head, before RoPE (OLMo 2, Gemma 3, Qwen3)"},
};
enum { N_SOFTMAX_OPTIONS = sizeof SOFTMAX_OPTIONS / sizeof SOFTMAX_OPTIONS[0] };

typedef struct {
    size_t window;          // 0: none
    float softcap;          // 0: none
    int sinks, gate, qk_norm;
    float eps;              // QK-norm's epsilon: the model's normEps
    size_t n_params;        // floats: sinks (H), gate (C, C), q_norm (hd), k_norm (hd), those switched on
    size_t at_sinks, at_gate, at_qn, at_kn; // their offsets in f->params
} softmax_own;

static int finish(const aw_form *form, aw_form_values *v, size_t max_len) {
    const long long w = aw_option_int(form, v, "window");
    if (aw_option_is_set(form, v, "window") && (size_t)w > max_len)
        return aw_fail(AW_ERR_ARG, "attentionOptions.window (%lld) must be at most maxLen (%zu): a window as long as "
                                   "the sequence is full attention", w, max_len);
    return AW_OK;
}

static int init(aw_attn_form *f, const aw_form_setup *su) {
    softmax_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    const aw_form *form = f->form;
    o->window = (size_t)aw_option_int(form, su->opts, "window");
    o->softcap = aw_option_word(form, su->opts, "softcap") < 0 ? (float)aw_option_number(form, su->opts, "softcap") : 0.0f;
    o->sinks = (int)aw_option_int(form, su->opts, "learnedSinks");
    o->gate = (int)aw_option_int(form, su->opts, "outputGate");
    o->qk_norm = (int)aw_option_int(form, su->opts, "qkNorm");
    o->eps = su->norm_eps > 0.0f ? su->norm_eps : 1e-5f;
    f->switches = o->window || o->softcap > 0.0f || o->sinks || o->gate || o->qk_norm;
    if (f->switches && !f->causal) {
        const char *name = o->window ? "window" : o->softcap > 0.0f ? "softcap" : o->sinks ? "learnedSinks"
                         : o->gate ? "outputGate" : "qkNorm";
        return aw_fail(AW_ERR_ARG, "attentionOptions.%s applies to causal self-attention (a decoder-only model's, or "
                                   "causal: true), not to an encoder's or cross-attention", name);
    }
    const size_t C = f->C, H = f->H, hd = C / H;
    size_t n = 0;
    if (o->sinks) o->at_sinks = n, n = aw_size_add(n, H);
    if (o->gate) o->at_gate = n, n = aw_size_add(n, aw_size_mul(C, C));
    if (o->qk_norm) o->at_qn = n, o->at_kn = aw_size_add(n, hd), n = aw_size_add(n, 2 * hd);
    o->n_params = n;
    if (!n) return AW_OK;
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    // sinks start at 0 (gpt-oss's init); the gate as nn.Linear initialises W (so sigmoid starts
    // near 1/2); the norms' scales at 1
    if (o->sinks) memset(f->params + o->at_sinks, 0, H * sizeof(float));
    if (o->gate) {
        aw_rng rng;
        aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0x6A7Du);
        const float bound = 1.0f / sqrtf((float)C);
        for (size_t i = 0; i < C * C; i++) f->params[o->at_gate + i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    }
    if (o->qk_norm)
        for (size_t i = 0; i < 2 * hd; i++) f->params[o->at_qn + i] = 1.0f;
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const softmax_own *o = f->own;
    const size_t C = f->C, H = f->H, hd = C / H;
    size_t n = 0;
    aw_form_tensor t[4];
    memset(t, 0, sizeof t);
    if (o->sinks) {
        strcpy(t[n].name, "sinks");
        t[n].size = H, t[n].dims[0] = H, t[n].rank = 1, t[n].trainable = 1, t[n].no_decay = 1, n++;
    }
    if (o->gate) {
        strcpy(t[n].name, "gate");
        t[n].size = C * C, t[n].dims[0] = C, t[n].dims[1] = C, t[n].rank = 2, t[n].trainable = 1, n++;
    }
    if (o->qk_norm)
        for (int w = 0; w < 2; w++) {
            strcpy(t[n].name, w ? "k_norm" : "q_norm");
            t[n].size = hd, t[n].dims[0] = hd, t[n].rank = 1, t[n].trainable = 1, t[n].no_decay = 1, n++;
        }
    for (size_t i = 0; i < n && i < cap; i++) out[i] = t[i];
    return n;
}

static void bind(aw_attn_form *f, float *params, float *grads) {
    const softmax_own *o = f->own;
    if (o->n_params) attn_form_bind_params(f, params, grads, o->n_params);
}

static aw_softmax_attention_desc desc(const aw_attn_form *f, size_t T, size_t Tk, int causal) {
    const softmax_own *o = f->own;
    return (aw_softmax_attention_desc){T, Tk, f->C, f->C, f->H, causal, 1.0f / sqrtf((float)(f->C / f->H)), NULL,
                                       f->score_slopes, 0, o->window, o->softcap,
                                       o->sinks ? f->params + o->at_sinks : NULL, NULL};
}

// The layout of what the forward saves per sequence: each row's log-sum-exp (H, T), the attention's
// output O before the gate (T, C); with the gate, its values g (T, C); with QK-norm, the normalised
// q and k before their scales (T, C) and (Tk, C), and each head's row rstd (T, H) and (Tk, H).
typedef struct {
    size_t lse, o, g, qhat, khat, rq, rk, total;
} saved_layout;

static saved_layout layout(const aw_attn_form *f, size_t T, size_t Tk) {
    const softmax_own *o = f->own;
    saved_layout s = {0};
    const size_t C = f->C, H = f->H;
    size_t n = 0;
    s.lse = n, n = aw_size_add(n, aw_size_mul(T, H));
    s.o = n, n = aw_size_add(n, aw_size_mul(T, C));
    if (o->gate) s.g = n, n = aw_size_add(n, aw_size_mul(T, C));
    if (o->qk_norm) {
        s.qhat = n, n = aw_size_add(n, aw_size_mul(T, C));
        s.khat = n, n = aw_size_add(n, aw_size_mul(Tk, C));
        s.rq = n, n = aw_size_add(n, aw_size_mul(T, H));
        s.rk = n, n = aw_size_add(n, aw_size_mul(Tk, H));
    }
    s.total = n;
    return s;
}

// backward scratch: the flash blocks; with the gate, dO before it and dz (T, C) each; with
// QK-norm (qk_backward, after the form's backward), a copy of dq or dk (max(T, Tk), C)
static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    const softmax_own *o = f->own;
    size_t n = softmax_attention_backward_flash_floats();
    if (o->gate) n = aw_size_add(n, aw_size_mul3(2, T, f->C));
    if (o->qk_norm) n = aw_size_add(n, aw_size_mul(T > Tk ? T : Tk, f->C));
    return n;
}

static size_t saved_floats(const aw_attn_form *f, size_t T, size_t Tk) { return layout(f, T, Tk).total; }

// out (T, C) *= g = sigmoid(x W_g^T), one dot per value (no scratch: generation's step runs it
// too); g (T, C) keeps the gate for the backward when not NULL.
static void gate_apply(const aw_attn_form *f, float *out, float *g, const float *x, size_t T) {
    const softmax_own *o = f->own;
    const size_t C = f->C;
    const float *W = f->params + o->at_gate; // (C, C): row c gives output column c
    for (size_t t = 0; t < T; t++)
        for (size_t c = 0; c < C; c++) {
            const float gv = aw_sigmoidf(aw_dot(x + t * C, W + c * C, C));
            out[t * C + c] *= gv;
            if (g) g[t * C + c] = gv;
        }
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    const softmax_own *o = f->own;
    const aw_softmax_attention_desc ds = desc(f, T, Tk, f->causal);
    if (!saved) {
        const int st = softmax_attention_forward(out, att, q, k, v, &ds);
        if (!st && o->gate) gate_apply(f, out, NULL, x, T);
        return st;
    }
    const saved_layout sl = layout(f, T, Tk);
    float *lse = saved + sl.lse, *os = saved + sl.o;
    int st = softmax_attention_forward_lse(out, lse, q, k, v, &ds);
    if (!st) memcpy(os, out, T * f->C * sizeof(float));
    if (!st && att) { // the weights for display too: the same rows, built explicitly (into os, then restored)
        st = softmax_attention_forward(os, att, q, k, v, &ds);
        memcpy(os, out, T * f->C * sizeof(float));
    }
    if (!st && o->gate) gate_apply(f, out, saved + sl.g, x, T);
    return st;
}

// out = a ⊙ g, g = sigmoid(z), z = x W^T:  da = dout ⊙ g,  dz = dout ⊙ a ⊙ g (1 - g),
// dx += dz W,  dW += dz^T x; then the attention's own backward from da.
static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    const softmax_own *o = f->own;
    const size_t C = f->C;
    aw_softmax_attention_desc ds = desc(f, T, Tk, f->causal);
    ds.dsinks = o->sinks && f->grads ? f->grads + o->at_sinks : NULL;
    const saved_layout sl = layout(f, T, Tk);
    const float *os = saved + sl.o;
    if (o->gate) {
        float *da = work + softmax_attention_backward_flash_floats(), *dz = da + T * C;
        const float *g = saved + sl.g, *W = f->params + o->at_gate;
        for (size_t i = 0; i < T * C; i++) {
            da[i] = dout[i] * g[i];
            dz[i] = dout[i] * os[i] * g[i] * (1.0f - g[i]);
        }
        aw_matmul_nn(dx, dz, W, T, C, C, C, C, C, 1);                                   // dx += dz W
        if (f->grads) aw_matmul_tn(f->grads + o->at_gate, dz, x, C, C, T, C, C, C, 1); // dW += dz^T x
        dout = da;
    }
    return softmax_attention_backward_flash(dq, dk, dv, work, dout, os, saved + sl.lse, q, k, v, &ds);
}

// QK-norm (before the positional rotation): each head's q row becomes q / rms(q) * q_norm, and
// k the same with k_norm. k has kc columns (the model's K/V heads in generation, C otherwise).
static int qk_forward(aw_attn_form *f, float *saved, float *q, float *k, size_t T, size_t Tk, size_t kc) {
    const softmax_own *o = f->own;
    if (!o || !o->qk_norm) return AW_OK;
    const size_t C = f->C, H = f->H, hd = C / H;
    const float *wq = f->params + o->at_qn, *wk = f->params + o->at_kn;
    if (!saved) { // no backward follows: in place, each rstd thrown away
        for (size_t r = 0; r < T * H; r++) {
            float rs;
            rmsnorm_forward(q + r * hd, &rs, q + r * hd, wq, 1, hd, o->eps);
        }
        for (size_t r = 0; r < Tk * (kc / hd); r++) {
            float rs;
            rmsnorm_forward(k + r * hd, &rs, k + r * hd, wk, 1, hd, o->eps);
        }
        return AW_OK;
    }
    if (kc != C) return aw_fail(AW_ERR_ARG, "qkNorm: a saved forward needs k of C = %zu columns, got %zu", C, kc);
    const saved_layout sl = layout(f, T, Tk);
    // saved: x (the input), so the backward has what rmsnorm_backward reads; then in place
    memcpy(saved + sl.qhat, q, T * C * sizeof(float));
    memcpy(saved + sl.khat, k, Tk * C * sizeof(float));
    rmsnorm_forward(q, saved + sl.rq, saved + sl.qhat, wq, T * H, hd, o->eps);
    rmsnorm_forward(k, saved + sl.rk, saved + sl.khat, wk, Tk * H, hd, o->eps);
    return AW_OK;
}

// dq, dk (gradients at the norms' outputs) become the gradients at their inputs, in place; the
// scales' gradients accumulate when gradients are bound (an inference-only model has none: its
// activation-only backward turns dq, dk back alone).
static void qk_backward(aw_attn_form *f, float *dq, float *dk, float *work, const float *saved, size_t T, size_t Tk) {
    const softmax_own *o = f->own;
    if (!o || !o->qk_norm) return;
    const size_t C = f->C, H = f->H, hd = C / H;
    const saved_layout sl = layout(f, T, Tk);
    float *g = work;
    memcpy(g, dq, T * C * sizeof(float));
    memset(dq, 0, T * C * sizeof(float));
    rmsnorm_backward(dq, f->grads ? f->grads + o->at_qn : NULL, g, saved + sl.qhat, f->params + o->at_qn, saved + sl.rq,
                     T * H, hd);
    memcpy(g, dk, Tk * C * sizeof(float));
    memset(dk, 0, Tk * C * sizeof(float));
    rmsnorm_backward(dk, f->grads ? f->grads + o->at_kn : NULL, g, saved + sl.khat, f->params + o->at_kn, saved + sl.rk,
                     Tk * H, hd);
}

// state: the KV cache, keys (L, KC) then values (L, KC): every head's (KC = C), or under
// grouped-query attention the K/V heads' only (KC = kvHeads x dHead).
static size_t step_floats(const aw_attn_form *f, size_t L) { return aw_size_mul3(2, L, f->KC); }

// One query (C) over n cached rows of the K/V heads (n, KC): head h reads K/V head h / (H / KH), with
// the kernel's weights: the scaled dot product soft-capped, the bias by distance (the query at row
// ds->q_offset), and a learned sink's logit in each head's softmax sum. Two passes over each head's
// logits in scratch (n a head): their maximum, then exp and the weighted sum of the values. One item a
// head (threads when the step is large enough: parallel.h), so the result is the same at any count.
typedef struct {
    const aw_attn_form *f;
    const aw_softmax_attention_desc *ds;
    float *out, *scratch;
    const float *q, *kc, *vc;
    size_t n;
} attend_job;

static void attend_head(void *ctx, size_t h) {
    const attend_job *jb = ctx;
    const aw_softmax_attention_desc *ds = jb->ds;
    const size_t C = jb->f->C, H = jb->f->H, hd = C / H, KC = jb->f->KC, group = H / (KC / hd), n = jb->n;
    const float *qh = jb->q + h * hd, *kc = jb->kc + (h / group) * hd, *vc = jb->vc + (h / group) * hd;
    float *o = jb->out + h * hd, *s = jb->scratch + h * n, mx = ds->sinks ? ds->sinks[h] : -INFINITY;
    for (size_t j = 0; j < n; j++) {
        s[j] = aw_softcap(aw_dot(qh, kc + j * KC, hd) * ds->scale, ds->softcap) + aw_score_bias(ds, h, 0, j);
        mx = s[j] > mx ? s[j] : mx;
    }
    float sum = ds->sinks ? expf(ds->sinks[h] - mx) : 0.0f;
    for (size_t j = 0; j < n; j++) s[j] = expf(s[j] - mx), sum += s[j];
    memset(o, 0, hd * sizeof(float));
    for (size_t j = 0; j < n; j++) aw_axpy(o, s[j], vc + j * KC, hd);
    for (size_t i = 0; i < hd; i++) o[i] /= sum;
}

// AW_OK, AW_ERR_NOMEM, or AW_ERR_NONFINITE when float32 could not hold a logit or the output
// (inputs that large: the caller then takes the double-precision path)
static int decode_attend(const aw_attn_form *f, const aw_softmax_attention_desc *ds, float *out, const float *q,
                         const float *kc, const float *vc, size_t n) {
    float *scratch = aw_alloc_floats(aw_size_mul(f->H, n));
    if (!scratch) return AW_ERR_NOMEM;
    attend_job jb = {f, ds, out, scratch, q, kc, vc, n};
    aw_parallel_for_work(f->H, attend_head, &jb, 2.0 * (double)n * (double)f->C);
    free(scratch);
    return aw_find_nonfinite(out, f->C) == f->C ? AW_OK : AW_ERR_NONFINITE;
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q,
                const float *k, const float *v, size_t pos) {
    const softmax_own *o = f->own;
    const size_t C = f->C, KC = f->KC;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past the KV cache's %zu", pos, L);
    float *kc = state, *vc = state + L * KC; // (L, KC) each
    if (k != kc + pos * KC) memcpy(kc + pos * KC, k, KC * sizeof(float)); // streaming hands the row in place
    if (v != vc + pos * KC) memcpy(vc + pos * KC, v, KC * sizeof(float));
    // the cache holds positions 0..pos only, so no causal mask is needed; a window reads its last
    // `window` rows (the cache stays full size)
    const size_t first = o->window && pos + 1 > o->window ? pos + 1 - o->window : 0;
    aw_softmax_attention_desc ds = desc(f, 1, pos + 1 - first, 0);
    ds.window = 0;
    ds.q_offset = pos - first; // the score bias: the query is at position pos, key row 0 at first
    int st = decode_attend(f, &ds, out, q, kc + first * KC, vc + first * KC, pos + 1 - first);
    if (st == AW_ERR_NOMEM) return aw_fail(st, "generation: out of memory for the attention's scratch");
    if (st && KC == C) st = softmax_attention_forward(out, NULL, q, kc + first * C, vc + first * C, &ds); // the double path
    else if (st) st = aw_fail(st, "generation: the attention's output is not finite");
    if (!st && o->gate) gate_apply(f, out, NULL, x, 1);
    return st;
}

// The sliding window, which generation's ring of rows follows (forms.h).
static size_t step_window(const aw_attn_form *f) { return ((const softmax_own *)f->own)->window; }

// The KV cache of positions 0..T-1 at once: the rows as step() stores them (k, v (T, C) from the
// forward, where each K/V head is copied to its group's heads: the K/V heads' columns when KC < C).
static void prefill(aw_attn_form *f, float *state, size_t L, const float *k, const float *v, size_t T) {
    const size_t C = f->C, KC = f->KC, hd = C / f->H;
    if (KC == C) {
        memcpy(state, k, T * C * sizeof(float));
        memcpy(state + L * C, v, T * C * sizeof(float));
        return;
    }
    kv_take(state, k, T, f->H, KC / hd, hd);
    kv_take(state + L * KC, v, T, f->H, KC / hd, hd);
}

const aw_form AW_FORM_SOFTMAX_DESC = {
    .name = "softmax",
    .words = {
        .label = "Softmax (scaled dot-product)",
        .formula = "A = softmax(Q Kᵀ · s + M)\n"
            "s = 1/√d_head\n"
            "M = 0 where allowed, −∞ where masked\n"
            "    (causal: masked where j > i)\n"
            "O = A V\n"
            "\n"
            "Time O(n² d). Without weights the fast\n"
            "path streams over the keys (online\n"
            "softmax) and never stores A.",
        .summary = "Every query is compared with every key by a dot product, and a softmax turns the scores of a "
            "row into weights that sum to 1: each position reads a weighted average of the values. It is "
            "the most expressive form here (it can look a token up by its content, sharply), and it costs "
            "time n² in the sequence length: the choice when n is a few thousand or less.",
        .cost = "O(n² d)",
        .paper = "Attention Is All You Need. Vaswani et al., 2017.",
        .url = "https://arxiv.org/abs/1706.03762",
        .year = 2017,
        .signed_scores = 0,
    },
    .family = "softmax",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_CROSS | AW_FORM_SCORE_BIAS | AW_FORM_NO_GRADS_OK |
             AW_FORM_KV_GROUPS,
    .options = SOFTMAX_OPTIONS,
    .n_options = N_SOFTMAX_OPTIONS,
    .finish = finish,
    .init = init,
    .release = release,
    .param_group = "attn",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .saved_floats = saved_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
    .prefill = prefill,
    .step_window = step_window,
    .qk_forward = qk_forward,
    .qk_backward = qk_backward,
};
