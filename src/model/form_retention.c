// form_retention.c: retention (RetNet's decayed linear attention, docs/attention-forms.md
// section 4) as a registry row. Training runs the parallel form (its backward is blockwise, with
// the gradient of each head's decay); generation keeps the constant-size recurrent state S per
// head, as a recurrent network does. The decays are RetNet's schedule, one value for every head
// (attentionOptions.decay), or learned ("learned": a logit per head, gamma = sigmoid(logit),
// starting from the schedule). Cross-attention stays softmax: a decay across two different
// sequences has no meaning.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/retention.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    float *gamma;    // the heads' decays (H)
    int learn_decay; // 1 when params holds the decays' logits (gamma = sigmoid)
} retention_own;

static const char *const DECAY_WORDS[] = {"retnet", "learned", NULL};
static const aw_form_option OPTIONS[] = {
    {"decay", AW_OPTION_CHOICE, 0, 1, DECAY_WORDS, "retnet", "decay",
     "\"retnet\": RetNet's decays 1 - 2^(-5-h), one per head; \"learned\": learned from there; or one decay in "
     "(0, 1) for every head"}};

// The decays in use: from the logits when they are learned.
static void refresh(aw_attn_form *f) {
    retention_own *o = f->own;
    if (o->learn_decay)
        for (size_t h = 0; h < f->H; h++) o->gamma[h] = aw_sigmoidf(f->params[h]);
}

static int init(aw_attn_form *f, const aw_form_setup *su) {
    retention_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    o->gamma = aw_alloc_floats(f->H);
    if (!o->gamma) return AW_ERR_NOMEM;
    const int word = aw_option_word(f->form, su->opts, "decay");
    if (word < 0)
        for (size_t h = 0; h < f->H; h++) o->gamma[h] = (float)aw_option_number(f->form, su->opts, "decay");
    else retention_default_gammas(o->gamma, f->H);
    o->learn_decay = word == 1;
    if (o->learn_decay) {
        if (!(f->params = aw_alloc_floats(f->H))) return AW_ERR_NOMEM;
        f->owns_params = 1;
        for (size_t h = 0; h < f->H; h++) {
            const double g = o->gamma[h] < 1.0f - 1e-6f ? o->gamma[h] : 1.0 - 1e-6;
            f->params[h] = (float)log(g / (1.0 - g));
        }
        refresh(f);
    }
    return AW_OK;
}

static void release(aw_attn_form *f) {
    retention_own *o = f->own;
    if (o) free(o->gamma);
    attn_form_release_params(f);
}

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    if (!((const retention_own *)f->own)->learn_decay) return 0;
    if (cap) {
        memset(out, 0, sizeof *out);
        strcpy(out->name, "decay_logit");
        out->size = f->H, out->dims[0] = f->H, out->rank = 1, out->trainable = 1, out->no_decay = 1;
    }
    return 1;
}

static void bind(aw_attn_form *f, float *params, float *grads) {
    if (((retention_own *)f->own)->learn_decay) attn_form_bind_params(f, params, grads, f->H);
}

static aw_retention_desc desc(const aw_attn_form *f, size_t T) {
    return (aw_retention_desc){T, f->C, f->C, f->H, ((const retention_own *)f->own)->gamma, f->causal, 1.0f / sqrtf((float)(f->C / f->H)),
                               AW_RETENTION_PARALLEL, 0};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)T, (void)Tk;
    return f->H; // the decays' gradient, before the chain rule through the sigmoid
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)x, (void)saved;
    if (T != Tk) return aw_fail(AW_ERR_ARG, "retention is self-attention only (%zu queries, %zu keys)", T, Tk);
    refresh(f);
    const aw_retention_desc ds = desc(f, T);
    return retention_forward(out, att, q, k, v, &ds);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)saved, (void)x, (void)Tk;
    refresh(f);
    const aw_retention_desc ds = desc(f, T);
    const retention_own *o = f->own;
    float *dgamma = o->learn_decay ? work : NULL;
    if (dgamma) memset(dgamma, 0, f->H * sizeof(float));
    const int st = retention_backward(dq, dk, dv, dgamma, dout, q, k, v, &ds);
    if (!st && dgamma && f->grads) // d gamma / d logit = gamma (1 - gamma)
        for (size_t h = 0; h < f->H; h++) f->grads[h] += dgamma[h] * o->gamma[h] * (1.0f - o->gamma[h]);
    return st;
}

// state: S (dh, dvh) per head, whatever the length: generation from a constant-size state.
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    return retention_state_floats(f->C, f->C, f->H);
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)x, (void)L;
    if (pos == 0) memset(state, 0, step_floats(f, L) * sizeof(float)), refresh(f);
    return retention_step(out, state, q, k, v, f->C, f->C, f->H, ((const retention_own *)f->own)->gamma, 1.0f / sqrtf((float)(f->C / f->H)));
}

const aw_form AW_FORM_RETENTION_DESC = {
    .name = "retention",
    .words = {
        .label = "Retention (RetNet, decayed linear)",
        .formula = "A_ij = (q_i·k_j) s γ^(i−j)  for j ≤ i\n"
            "O = A V        no softmax, no normaliser\n"
            "γ_h = 1 − 2^(−5−h)   (RetNet: one decay\n"
            "                      per head)\n"
            "Recurrent:  S_i = γ S_{i−1} + k_iᵀ v_i\n"
            "            o_i = s q_i S_i\n"
            "Parallel, recurrent and chunked forms\n"
            "give the same numbers. Generation keeps\n"
            "one d × d state: time O(n d²).\n"
            "Shown: |A_ij| (scores can be negative).",
        .summary = "Causal linear attention with a decay: the running state is multiplied by γ before each new "
            "key-value pair is added, so old tokens fade, and each head fades at its own rate (RetNet's 1 "
            "− 2^(−5−h)). There is no softmax, so the scores are signed and rows do not sum to 1. The same "
            "numbers come out of a parallel form (for training), a recurrent form (an RNN with a d × d "
            "state, for generation) and a chunked mix of both.",
        .cost = "O(n d²)",
        .paper = "Retentive Network: A Successor to Transformer for Large Language Models. Sun et al., 2023.",
        .url = "https://arxiv.org/abs/2307.08621",
        .year = 2023,
        .signed_scores = 1,
    },
    .family = "retention",
    .cross = "softmax",
    .flags = AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_PARAMS,
    .options = OPTIONS,
    .n_options = 1,
    .init = init,
    .release = release,
    .param_group = "retention",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
};
