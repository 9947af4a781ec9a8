// form_linear.c: linear attention's four feature maps as registry rows (docs/attention-forms.md
// section 2). The backward recomputes what it needs (nothing is saved, so training stays O(n)
// in memory); generation keeps the constant-size recurrent state (S, z) per head.
#include "forms.h"

#include "../attention/linear_attention.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

static aw_linear_attention_desc desc(const aw_attn_form *f, size_t T, size_t Tk) {
    return (aw_linear_attention_desc){T, Tk, f->C, f->C, f->H, f->form->variant, f->causal, AW_LINEAR_PARALLEL};
}

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)f, (void)T, (void)Tk;
    return 0; // linear_attention_backward plans its own O((T + Tk) d) workspace
}

static int forward(aw_attn_form *f, float *out, float *att, const float *x, const float *q, const float *k,
                   const float *v, size_t T, size_t Tk) {
    (void)x;
    const aw_linear_attention_desc ds = desc(f, T, Tk);
    return linear_attention_forward(out, att, q, k, v, &ds);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *att, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)dx, (void)work, (void)att, (void)x;
    const aw_linear_attention_desc ds = desc(f, T, Tk);
    return linear_attention_backward(dq, dk, dv, dout, q, k, v, &ds);
}

// state: an aw_linear_state laid out in place, rounded up to whole 16-byte blocks
static size_t step_floats(const aw_attn_form *f, size_t L) {
    (void)L;
    const size_t bytes = linear_state_bytes(f->C, f->C, f->H, f->form->variant);
    return bytes == 0 || bytes == (size_t)-1 ? (size_t)-1 : (bytes + 15) / 16 * 4;
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    (void)x, (void)L;
    // position 0 starts a new sequence: lay out a fresh (zero) state
    aw_linear_state *st = pos == 0 ? linear_state_place(state, f->C, f->C, f->H, f->form->variant)
                                   : (aw_linear_state *)(void *)state;
    if (!st) return aw_fail(AW_ERR_ARG, "attention \"%s\" has no recurrent state", f->form->name);
    return linear_state_step(out, st, q, k, v);
}

#define LINEAR_FORM(NAME, FEATURE, FLAGS)                                                                           \
    {                                                                                                              \
        .name = NAME, .family = "linear", .cross = NAME, .flags = (FLAGS) | AW_FORM_NONCAUSAL | AW_FORM_USES_QK |    \
                                                                  AW_FORM_CROSS,                                   \
        .variant = FEATURE, .work_floats = work_floats, .forward = forward, .backward = backward,                   \
        .step_floats = ((FLAGS) & AW_FORM_STEP) ? step_floats : NULL, .step = ((FLAGS) & AW_FORM_STEP) ? step : NULL \
    }

const aw_form AW_FORM_LINEAR_ELU1_DESC = LINEAR_FORM("linear:elu+1", AW_LINEAR_ELU1, AW_FORM_CAUSAL | AW_FORM_STEP);
const aw_form AW_FORM_LINEAR_RELU_DESC = LINEAR_FORM("linear:relu", AW_LINEAR_RELU, AW_FORM_CAUSAL | AW_FORM_STEP);
// efficient attention normalises K over every position, future ones included: no causal form
const aw_form AW_FORM_LINEAR_EFFICIENT_DESC = LINEAR_FORM("linear:efficient", AW_LINEAR_EFFICIENT, 0);
const aw_form AW_FORM_LINEAR_TAYLOR_DESC = LINEAR_FORM("linear:taylor", AW_LINEAR_TAYLOR, AW_FORM_CAUSAL | AW_FORM_STEP);
