// form_mla.c: multi-head latent attention (DeepSeek-V2) as a registry row (docs/attention-forms.md
// section 4d; kernel src/attention/mla.c). The form makes its own keys, values and queries from the
// sublayer input x: its parameters are W_DKV, W_UK, W_UV, W_KR, (W_DQ,) W_Q or W_UQ, W_QR, stored
// as nn.Linear keeps them and initialised as nn.Linear does. It reads neither the sublayer's Q and
// K nor its V (AW_FORM_OWN_V: the values come from the latent), so the sublayer has no Wq, Wk, Wv,
// only Wo. Positions: MLA
// carries its own decoupled RoPE (ropeDim columns); the model's positional "rope" and "alibi" act
// on Q, K or their scores, which this form does not have, so positional.c refuses them with MLA
// (sinusoidal, learned or none may be added to the embeddings as usual). Generation caches only
// the latent and the rotary key per token (kvRank + ropeDim floats) and runs the absorbed path.
#include "form_layer.h"
#include "forms.h"

#include "../attention/mla.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const PATHS[] = {"plain", "absorbed", NULL};
static const aw_form_option OPTIONS[] = {
    {"kvRank", AW_OPTION_INT, 1, 4096, NULL, "8", "mla_kv_rank",
     "the rank of the shared key-value latent c_KV (cached per token in generation)"},
    {"ropeDim", AW_OPTION_INT, 0, 256, NULL, "4", "mla_rope_dim",
     "the width of the decoupled rotary key shared by the heads (even; 0: none)"},
    {"qRank", AW_OPTION_INT, 0, 4096, NULL, "0", "mla_q_rank",
     "the rank of the query latent c_Q (0: full-rank queries)"},
    {"path", AW_OPTION_CHOICE, 0, 0, PATHS, "plain", "mla_path",
     "how the forward runs: keys and values up-projected (plain) or W_UK folded into the queries (absorbed); "
     "the same numbers"},
};
enum { O_KV_RANK, O_ROPE_DIM, O_Q_RANK, O_PATH, N_OPTIONS };

static int finish(const aw_form *form, aw_form_values *v, size_t max_len) {
    (void)max_len;
    const long long P = aw_option_int(form, v, "ropeDim");
    if (P % 2)
        return aw_fail(AW_ERR_ARG, "attentionOptions.ropeDim must be even (RoPE turns pairs of columns), got %lld", P);
    return AW_OK;
}

typedef struct {
    aw_mla_desc ds; // T set per call
    aw_mla_weights w, g;
} mla_own;

#define OWN(f) ((mla_own *)(f)->own)

static aw_mla_desc desc(const aw_attn_form *f, size_t T) {
    aw_mla_desc ds = OWN(f)->ds;
    ds.T = T;
    return ds;
}

static int init(aw_attn_form *f, const aw_form_setup *su) {
    mla_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    aw_mla_desc *ds = &o->ds;
    ds->C = f->C, ds->H = f->H, ds->causal = f->causal;
    ds->R = (size_t)aw_option_int(f->form, su->opts, "kvRank");
    ds->P = (size_t)aw_option_int(f->form, su->opts, "ropeDim");
    ds->Qr = (size_t)aw_option_int(f->form, su->opts, "qRank");
    ds->path = aw_option_word(f->form, su->opts, "path");
    f->uses_qk = 0;
    const size_t n = mla_param_floats(ds);
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    mla_weights_at(&o->w, f->params, ds);
    // nn.Linear's initialisation: uniform in +-1/sqrt(fan_in)
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0x3A11u);
    const size_t C = f->C, in_q = ds->Qr ? ds->Qr : C;
    const struct { float *w; size_t size, fan_in; } parts[] = {
        {o->w.w_dkv, ds->R * C, C}, {o->w.w_uk, C * ds->R, ds->R}, {o->w.w_uv, C * ds->R, ds->R},
        {o->w.w_kr, ds->P * C, C}, {o->w.w_dq, ds->Qr * C, C}, {o->w.w_q, C * in_q, in_q},
        {o->w.w_qr, ds->H * ds->P * in_q, in_q},
    };
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
        const float bound = 1.0f / sqrtf((float)parts[p].fan_in);
        for (size_t i = 0; i < parts[p].size; i++) parts[p].w[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    }
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static void tensor(aw_form_tensor *t, const char *name, size_t rows, size_t cols) {
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->size = rows * cols, t->dims[0] = rows, t->dims[1] = cols, t->rank = 2, t->trainable = 1;
}

// In the order of the block (mla_weights_at); names as the paper writes the matrices. W_KR and
// W_QR have no rows when ropeDim is 0: they are then left out (no empty tensors in checkpoints).
static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const aw_mla_desc *ds = &OWN(f)->ds;
    const size_t C = f->C, in_q = ds->Qr ? ds->Qr : C;
    aw_form_tensor t[7];
    size_t n = 0;
    tensor(&t[n++], "w_dkv", ds->R, C);
    tensor(&t[n++], "w_uk", C, ds->R);
    tensor(&t[n++], "w_uv", C, ds->R);
    if (ds->P) tensor(&t[n++], "w_kr", ds->P, C); // ropeDim 0: no rotary part, no empty tensors
    if (ds->Qr) tensor(&t[n++], "w_dq", ds->Qr, C);
    tensor(&t[n++], ds->Qr ? "w_uq" : "w_q", C, in_q);
    if (ds->P) tensor(&t[n++], "w_qr", ds->H * ds->P, in_q);
    for (size_t i = 0; i < n && i < cap; i++) out[i] = t[i];
    return n;
}

static void bind(aw_attn_form *f, float *params, float *grads) {
    mla_own *o = OWN(f);
    attn_form_bind_params(f, params, grads, mla_param_floats(&o->ds));
    mla_weights_at(&o->w, params, &o->ds);
    mla_weights_at(&o->g, grads, &o->ds);
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const aw_mla_desc ds = desc(f, T);
    const size_t fw = mla_forward_work_floats(&ds), bw = mla_backward_work_floats(&ds);
    return fw > bw ? fw : bw;
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved, (void)q, (void)k, (void)v;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"mla\" is self-attention only (%zu queries, %zu keys)", T, Tk);
    const aw_mla_desc ds = desc(f, T);
    mla_own *o = OWN(f);
    mla_weights_at(&o->w, f->params, &o->ds); // its own block, or the model's arena after bind
    float *work = aw_alloc_floats(mla_forward_work_floats(&ds));
    if (!work) return aw_fail(AW_ERR_NOMEM, "MLA: out of memory for %zu positions", T);
    const int st = mla_forward(out, att, work, x, &o->w, &ds);
    free(work);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dq, (void)dk, (void)dv, (void)saved, (void)q, (void)k, (void)v, (void)Tk; // q, k, v are not read
    const aw_mla_desc ds = desc(f, T);
    mla_own *o = OWN(f);
    if (!f->grads) return aw_fail(AW_ERR_STATE, "MLA: backward before the parameters were bound");
    mla_weights_at(&o->w, f->params, &o->ds);
    mla_weights_at(&o->g, f->grads, &o->ds);
    return mla_backward(dx, &o->g, work, dout, x, &o->w, &ds);
}

static size_t step_floats(const aw_attn_form *f, size_t L) {
    const aw_mla_desc ds = desc(f, 1);
    return mla_step_floats(&ds, L);
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)q, (void)k, (void)v;
    const aw_mla_desc ds = desc(f, 1);
    mla_weights_at(&OWN(f)->w, f->params, &OWN(f)->ds);
    return mla_step(out, state, L, x, &OWN(f)->w, &ds, pos);
}

const aw_form AW_FORM_MLA_DESC = {
    .name = "mla",
    .family = "mla",
    .cross = "softmax",
    .words = {
        .label = "MLA (multi-head latent attention)",
        .formula = "c = x W_DKV        (rank r: cached)\n"
            "k^C = c W_UK,  v = c W_UV   (per head)\n"
            "k^R = RoPE(x W_KR)  (shared: cached)\n"
            "q^C = x W_Q,  q^R = RoPE(x W_QR)\n"
            "A = softmax((q^C·k^C + q^R·k^R)\n"
            "            / √(d_head + d_rope))\n"
            "O = A V\n"
            "\n"
            "Inference folds W_UK into q^C and W_UV\n"
            "after A: the same logits, and a cache of\n"
            "r + d_rope floats per token per layer.",
        .summary = "Softmax attention whose keys and values are decompressed from one small latent per token, "
            "shared by every head, plus one narrow rotary key for positions. Generation caches only the latent "
            "and the rotary key (kvRank + ropeDim floats per token, against 2 × dModel for softmax's K and V), "
            "and folds the key up-projection into the queries so the keys are never rebuilt. DeepSeek-V2 and V3 "
            "(and Kimi Linear's softmax layers) use it to make long-context serving cheap.",
        .cost = "O(n² (d + r))",
        .paper = "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model. "
            "DeepSeek-AI, 2024.",
        .url = "https://arxiv.org/abs/2405.04434",
        .year = 2024,
        .signed_scores = 0,
    },
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_X | AW_FORM_PARAMS | AW_FORM_OWN_V,
    .options = OPTIONS,
    .n_options = N_OPTIONS,
    .finish = finish,
    .init = init,
    .release = release,
    .param_group = "mla",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};
