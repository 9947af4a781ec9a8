// form_synthesizer.c: the Synthesizer variants as registry rows (docs/attention-forms.md
// section 3). Each sublayer owns a synthesizer layer whose parameters live in the model's arena
// (bound after the arena is carved). A synthesizer makes square position-to-position logits, so
// it serves self-attention only: an encoder-decoder built with it cross-attends with softmax.
// The layer keeps only the last sequence's activations: the backward redoes that sequence's
// forward first (into the work buffer).
#include "forms.h"

#include "../kernels/size.h"
#include "../kernels/status.h"

#include <stdio.h>
#include <string.h>

static int init(aw_attn_form *f, const aw_form_setup *setup) {
    if (!setup->synth) return aw_fail(AW_ERR_ARG, "attention \"%s\" needs its options", f->form->name);
    aw_synthesizer_config sc = *setup->synth;
    sc.variant = f->form->variant, sc.d = setup->C, sc.max_len = setup->L, sc.heads = setup->H, sc.seed = setup->seed;
    if (sc.variant != AW_SYNTH_MIXTURE) sc.n_components = 0;
    f->uses_qk = 0;
    if (sc.variant == AW_SYNTH_MIXTURE)
        for (size_t c = 0; c < sc.n_components; c++) f->uses_qk |= sc.components[c] == AW_SYNTH_DOT;
    return synthesizer_create(&f->synth, &sc);
}

static void release(aw_attn_form *f) {
    synthesizer_destroy(f->synth);
    f->synth = NULL;
}

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const aw_synthesizer *s = f->synth;
    for (size_t i = 0; i < s->n_tensors && i < cap; i++) {
        snprintf(out[i].name, sizeof out[i].name, "%s", s->tensors[i].name);
        out[i].size = s->tensors[i].size;
        const size_t h = s->cfg.heads, rows = s->tensors[i].rows, cols = s->tensors[i].cols;
        out[i].rank = rows == 1 ? 2 : 3; // (heads, cols) for a vector per head, else (heads, rows, cols)
        out[i].dims[0] = h, out[i].dims[1] = rows == 1 ? cols : rows, out[i].dims[2] = rows == 1 ? 0 : cols;
        // fixed random tables (R, R1, R2 when not trainable) get no gradient
        const char *leaf = s->tensors[i].name;
        for (const char *p = leaf; *p; p++)
            if (*p == '.') leaf = p + 1;
        out[i].trainable = s->cfg.trainable || leaf[0] != 'R';
    }
    return s->n_tensors;
}

static void bind(aw_attn_form *f, float *params, float *grads) { synthesizer_bind(f->synth, params, grads); }

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    return aw_size_mul(T, f->C); // the recomputed forward's output
}

static int forward(aw_attn_form *f, float *out, float *att, const float *x, const float *q, const float *k,
                   const float *v, size_t T, size_t Tk) {
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"%s\" is self-attention only (%zu queries, %zu keys)",
                                f->form->name, T, Tk);
    return synthesizer_forward(f->synth, out, att, x, v, f->uses_qk ? q : NULL, f->uses_qk ? k : NULL, T, f->C, f->C,
                               f->causal);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *att, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)att;
    const float *qq = f->uses_qk ? q : NULL, *kk = f->uses_qk ? k : NULL;
    int st = forward(f, work, NULL, x, q, k, v, T, Tk); // the layer saved only the last sequence
    if (st) return st;
    return synthesizer_backward(f->synth, dx, dv, f->uses_qk ? dq : NULL, f->uses_qk ? dk : NULL, dout, x, v, qq, kk);
}

// state: the keys (L, C) and values (L, C) so far, then the step's scratch.
static size_t step_floats(const aw_attn_form *f, size_t L) {
    return aw_size_add(aw_size_mul3(2, L, f->C), synthesizer_step_floats(f->synth));
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    const size_t C = f->C;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past maxLen = %zu", pos, L);
    float *kc = state, *vc = state + L * C, *scratch = vc + L * C;
    if (f->uses_qk) memcpy(kc + pos * C, k, C * sizeof(float));
    memcpy(vc + pos * C, v, C * sizeof(float));
    const int st = synthesizer_step(f->synth, out, scratch, x, f->uses_qk ? q : NULL, kc, vc, pos, C, f->uses_qk ? C : 0);
    return st == AW_ERR_NONFINITE ? aw_fail(st, "a synthesized logit is NaN or infinite") : st;
}

#define SYNTH_FORM(NAME, VARIANT, FLAGS)                                                                           \
    {                                                                                                              \
        .name = NAME, .family = "synthesizer", .cross = "softmax",                                                 \
        .flags = (FLAGS) | AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_PARAMS | AW_FORM_STEP, .variant = VARIANT,  \
        .options = AW_OPT_TRAINABLE | AW_OPT_A | AW_OPT_B | AW_OPT_K | AW_OPT_COMPONENTS,                         \
        .init = init, .release = release, .param_group = "synth", .tensors = tensors, .bind = bind,                \
        .work_floats = work_floats, .forward = forward, .backward = backward, .step_floats = step_floats,          \
        .step = step                                                                                               \
    }

const aw_form AW_FORM_SYNTH_DENSE_DESC = SYNTH_FORM("synth:dense", AW_SYNTH_DENSE, AW_FORM_USES_X);
const aw_form AW_FORM_SYNTH_RANDOM_DESC = SYNTH_FORM("synth:random", AW_SYNTH_RANDOM, 0);
const aw_form AW_FORM_SYNTH_FACTORIZED_DENSE_DESC =
    SYNTH_FORM("synth:factorized-dense", AW_SYNTH_FACTORIZED_DENSE, AW_FORM_USES_X);
const aw_form AW_FORM_SYNTH_FACTORIZED_RANDOM_DESC = SYNTH_FORM("synth:factorized-random", AW_SYNTH_FACTORIZED_RANDOM, 0);
// a mixture reads X and Q, K when its components do (aw_attn_form.uses_qk)
const aw_form AW_FORM_SYNTH_MIXTURE_DESC = SYNTH_FORM("synth:mixture", AW_SYNTH_MIXTURE, AW_FORM_USES_X | AW_FORM_USES_QK);
