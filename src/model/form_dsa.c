// form_dsa.c: DeepSeek Sparse Attention (DeepSeek-V3.2-Exp) over softmax as a registry row
// (docs/attention-forms.md section 4f; kernel src/attention/dsa.c). Its parameters are the lightning
// indexer's W_qI, W_kI, W_w (nn.Linear's layout and initialisation, no biases); the sublayer keeps its
// Wq, Wk, Wv, Wo. Two stages of training, as the paper's (the option `stage`):
//   warmup: the output is the dense causal softmax; the indexer learns from its KL loss against the
//           dense attention, and the rest of the model is frozen (aw_attn_form.trains_alone: a
//           training step updates this form's parameters only);
//   sparse: each query reads its top-k keys by the indexer; the model learns from the language-
//           modelling loss through that sparse attention, the indexer from its KL over the selected set.
// The KL is a side loss: the model sets side_weight (1 / batch) so forward adds it to side_loss and
// backward adds its gradient into the indexer's; the standalone layer leaves it 0 (the gradient of
// the output alone, in which the indexer has none: the choice of keys is not differentiated).
#include "form_layer.h"
#include "forms.h"

#include "../attention/dsa.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const STAGES[] = {"warmup", "sparse", NULL};
static const aw_form_option OPTIONS[] = {
    {"indexHeads", AW_OPTION_INT, 1, 64, NULL, "2", "dsa_index_heads", "the lightning indexer's heads"},
    {"indexDim", AW_OPTION_INT, 1, 256, NULL, "8", "dsa_index_dim", "the width of the indexer's queries and keys"},
    {"topK", AW_OPTION_INT, 1, 65536, NULL, NULL, "dsa_top_k",
     "the keys each query reads: the top k by the indexer; at most maxLen (default: 16, or maxLen when shorter)"},
    {"stage", AW_OPTION_CHOICE, 0, 0, STAGES, "sparse", "dsa_stage",
     "training stage: warmup (dense attention, the indexer alone learns) or sparse (top-k attention, all learn)"},
};
enum { N_OPTIONS = sizeof OPTIONS / sizeof OPTIONS[0] };
enum { STAGE_WARMUP = 0, STAGE_SPARSE = 1 };

// A query chooses among at most maxLen keys: topK is at most maxLen (unset: 16, or maxLen when shorter).
static int finish(const aw_form *form, aw_form_values *v, size_t max_len) {
    if (!aw_option_is_set(form, v, "topK"))
        snprintf(v->text[aw_option_find(form, "topK")], AW_OPTION_TEXT, "%zu", max_len < 16 ? max_len : 16);
    const long long k = aw_option_int(form, v, "topK");
    if ((size_t)k > max_len)
        return aw_fail(AW_ERR_ARG, "attentionOptions.topK (%lld) must be at most maxLen (%zu): a query never has more "
                                   "keys than that to choose from", k, max_len);
    return AW_OK;
}

typedef struct {
    aw_dsa_desc ds; // T and side_weight set per call
    aw_dsa_weights w, g;
} dsa_own;

#define OWN(f) ((dsa_own *)(f)->own)

static aw_dsa_desc desc(const aw_attn_form *f, size_t T) {
    aw_dsa_desc ds = OWN(f)->ds;
    ds.T = T, ds.side_weight = f->side_weight;
    return ds;
}

// the stage's switches: the kernel's, and a warm-up that trains the indexer alone
static void set_stage(aw_attn_form *f, int stage) {
    OWN(f)->ds.sparse = stage == STAGE_SPARSE;
    f->trains_alone = stage == STAGE_WARMUP;
}

static int init(aw_attn_form *f, const aw_form_setup *su) {
    dsa_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    aw_dsa_desc *ds = &o->ds;
    ds->C = f->C, ds->H = f->H;
    ds->J = (size_t)aw_option_int(f->form, su->opts, "indexHeads");
    ds->D = (size_t)aw_option_int(f->form, su->opts, "indexDim");
    ds->K = (size_t)aw_option_int(f->form, su->opts, "topK");
    set_stage(f, aw_option_word(f->form, su->opts, "stage"));
    const size_t n = dsa_param_floats(ds);
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    // nn.Linear's initialisation: uniform in +-1/sqrt(C)
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0xD5Au);
    const float bound = 1.0f / sqrtf((float)f->C);
    for (size_t i = 0; i < n; i++) f->params[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) * bound;
    dsa_weights_at(&o->w, f->params, ds);
    return AW_OK;
}

// A built model's stage changes (model_set_attention_option): the rest of the options size it.
static int retune(aw_attn_form *f, const aw_form_values *v, const char *name) {
    if (strcmp(name, "stage") != 0) return 0;
    set_stage(f, aw_option_word(f->form, v, "stage"));
    return 1;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const aw_dsa_desc *ds = &OWN(f)->ds;
    const struct { const char *name; size_t rows; } t[] = {{"w_qi", ds->J * ds->D}, {"w_ki", ds->D}, {"w_w", ds->J}};
    for (size_t i = 0; i < 3 && i < cap; i++) {
        memset(&out[i], 0, sizeof out[i]);
        strcpy(out[i].name, t[i].name);
        out[i].size = t[i].rows * f->C, out[i].dims[0] = t[i].rows, out[i].dims[1] = f->C, out[i].rank = 2;
        out[i].trainable = 1, out[i].side = 1;
    }
    return 3;
}

static void bind(aw_attn_form *f, float *params, float *grads) {
    dsa_own *o = OWN(f);
    attn_form_bind_params(f, params, grads, dsa_param_floats(&o->ds));
    dsa_weights_at(&o->w, params, &o->ds);
    dsa_weights_at(&o->g, grads, &o->ds);
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const aw_dsa_desc ds = desc(f, T);
    return dsa_work_floats(&ds);
}

static size_t saved_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const aw_dsa_desc ds = desc(f, T);
    return dsa_saved_floats(&ds);
}

static int self_only(size_t T, size_t Tk) {
    return T == Tk ? AW_OK
                   : aw_fail(AW_ERR_ARG, "attention \"dsa\" is causal self-attention only (%zu queries, %zu keys)", T, Tk);
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    int st = self_only(T, Tk);
    if (st) return st;
    const aw_dsa_desc ds = desc(f, T);
    dsa_own *o = OWN(f);
    dsa_weights_at(&o->w, f->params, &o->ds); // its own block, or the model's arena after bind
    float *work = aw_alloc_floats(dsa_work_floats(&ds));
    if (!work) return aw_fail(AW_ERR_NOMEM, "DSA: out of memory for %zu positions", T);
    st = dsa_forward(out, att, saved, &f->side_loss, work, x, q, k, v, &o->w, &ds);
    free(work);
    return st;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)Tk; // the indexer's input is detached: x gets no gradient
    const aw_dsa_desc ds = desc(f, T);
    dsa_own *o = OWN(f);
    dsa_weights_at(&o->w, f->params, &o->ds);
    dsa_weights_at(&o->g, f->grads, &o->ds);
    return dsa_backward(dq, dk, dv, f->grads ? &o->g : NULL, work, dout, saved, x, q, k, v, &o->w, &ds);
}

static int selection(aw_attn_form *f, float *sel, const float *x, const float *q, const float *k, const float *v,
                     size_t T, size_t Tk) {
    (void)q, (void)k, (void)v;
    int st = self_only(T, Tk);
    if (st) return st;
    const aw_dsa_desc ds = desc(f, T);
    dsa_own *o = OWN(f);
    dsa_weights_at(&o->w, f->params, &o->ds);
    float *work = aw_alloc_floats(dsa_work_floats(&ds));
    if (!work) return aw_fail(AW_ERR_NOMEM, "DSA: out of memory for %zu positions", T);
    st = dsa_selection(sel, work, x, &o->w, &ds);
    free(work);
    return st;
}

static size_t step_floats(const aw_attn_form *f, size_t L) {
    const aw_dsa_desc ds = desc(f, 1);
    return dsa_step_floats(&ds, L);
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    const aw_dsa_desc ds = desc(f, 1);
    dsa_weights_at(&OWN(f)->w, f->params, &OWN(f)->ds);
    return dsa_step(out, state, L, x, q, k, v, &OWN(f)->w, &ds, pos);
}

const aw_form AW_FORM_DSA_DESC = {
    .name = "dsa",
    .family = "dsa",
    .cross = "softmax",
    .words = {
        .label = "DSA (DeepSeek sparse attention)",
        .formula = "q^I_tj = W_qI,j x_t,  k^I_s = W_kI x_s\n"
            "w_tj = W_w,j x_t\n"
            "I_ts = Σ_j w_tj ReLU(q^I_tj · k^I_s)   (s ≤ t)\n"
            "S_t = the top k of I_t (shared by the heads)\n"
            "A = softmax over S_t of q_t·k_s / √d\n"
            "O = A V\n"
            "\n"
            "The indexer learns by KL(p ‖ softmax(I_t)),\n"
            "p the attention summed over heads:\n"
            "dense warm-up, then sparse training.",
        .summary = "Softmax attention in which each query reads only its top k earlier tokens, chosen by a small "
            "\"lightning indexer\": a few narrow ReLU heads scoring every earlier token cheaply. The indexer is "
            "trained to imitate the full attention (a KL loss, its input detached): first in a dense warm-up with "
            "the rest of the model frozen, then alongside the model as it trains on the sparse attention. The "
            "main attention then costs k per query instead of the whole context; DeepSeek-V3.2-Exp uses it "
            "for long contexts.",
        .cost = "O(n² d_I + n k d)",
        .paper = "DeepSeek-V3.2-Exp: Boosting Long-Context Efficiency with DeepSeek Sparse Attention. DeepSeek-AI, "
            "2025.",
        .url = "https://github.com/deepseek-ai/DeepSeek-V3.2-Exp/blob/main/DeepSeek_V3_2.pdf",
        .year = 2025,
        .signed_scores = 0,
    },
    .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS | AW_FORM_SELECTS,
    .options = OPTIONS,
    .n_options = N_OPTIONS,
    .finish = finish,
    .init = init,
    .release = release,
    .param_group = "dsa",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .saved_floats = saved_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
    .selection = selection,
    .retune = retune,
};
