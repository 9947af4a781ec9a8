// forms.c: the registry's one table (see forms.h), and the sublayer lifecycle every form shares.
#include "forms.h"

#include "../kernels/kernels.h"
#include "../kernels/status.h"

#include <stdlib.h>
#include <string.h>

// The rows, each defined in its form's file (form_<family>.c). A new form: its file, one line
// here and one in the table, and its tests.
extern const aw_form AW_FORM_SOFTMAX_DESC, AW_FORM_LOCAL_DESC, AW_FORM_STRIDED_DESC;
extern const aw_form AW_FORM_LINEAR_ELU1_DESC, AW_FORM_LINEAR_RELU_DESC, AW_FORM_LINEAR_EFFICIENT_DESC,
    AW_FORM_LINEAR_TAYLOR_DESC;
extern const aw_form AW_FORM_SYNTH_DENSE_DESC, AW_FORM_SYNTH_RANDOM_DESC, AW_FORM_SYNTH_FACTORIZED_DENSE_DESC,
    AW_FORM_SYNTH_FACTORIZED_RANDOM_DESC, AW_FORM_SYNTH_MIXTURE_DESC;
extern const aw_form AW_FORM_RETENTION_DESC, AW_FORM_LINFORMER_DESC, AW_FORM_GATED_DESC, AW_FORM_DELTA_DESC,
    AW_FORM_GATED_DELTA_DESC, AW_FORM_GLA_DESC;

static const aw_form *const FORMS[] = {
    &AW_FORM_SOFTMAX_DESC,
    &AW_FORM_LOCAL_DESC,
    &AW_FORM_STRIDED_DESC,
    &AW_FORM_LINEAR_ELU1_DESC,
    &AW_FORM_LINEAR_RELU_DESC,
    &AW_FORM_LINEAR_EFFICIENT_DESC,
    &AW_FORM_LINEAR_TAYLOR_DESC,
    &AW_FORM_SYNTH_DENSE_DESC,
    &AW_FORM_SYNTH_RANDOM_DESC,
    &AW_FORM_SYNTH_FACTORIZED_DENSE_DESC,
    &AW_FORM_SYNTH_FACTORIZED_RANDOM_DESC,
    &AW_FORM_SYNTH_MIXTURE_DESC,
    &AW_FORM_RETENTION_DESC,
    &AW_FORM_GATED_DESC,
    &AW_FORM_GLA_DESC,
    &AW_FORM_DELTA_DESC,
    &AW_FORM_GATED_DELTA_DESC,
    &AW_FORM_LINFORMER_DESC,
};
enum { N_FORMS = sizeof FORMS / sizeof FORMS[0] };

size_t aw_form_count_all(void) { return N_FORMS; }

const aw_form *aw_form_at(size_t i) { return i < N_FORMS ? FORMS[i] : NULL; }

const aw_form *aw_form_find(const char *name) {
    for (size_t i = 0; name && i < N_FORMS; i++)
        if (strcmp(FORMS[i]->name, name) == 0) return FORMS[i];
    return NULL;
}

int aw_form_index(const aw_form *f) {
    for (size_t i = 0; i < N_FORMS; i++)
        if (FORMS[i] == f) return (int)i;
    return -1;
}

int attn_form_refuse_causal(const aw_form *form) {
    return aw_fail(AW_ERR_ARG, "attention \"%s\" has no causal form, and a decoder's self-attention is causal%s%s%s%s%s",
                   form->name, form->why_not_causal ? " (" : "", form->why_not_causal ? form->why_not_causal : "",
                   form->why_not_causal ? ")" : "",
                   form->decoder ? "; use arch \"encoder-decoder\": it then serves the encoder, and the decoder's "
                                   "self-attention is " : "",
                   form->decoder ? form->decoder : "");
}

int attn_form_init(aw_attn_form *f, const aw_form *form, const aw_form_setup *setup) {
    memset(f, 0, sizeof *f);
    if (!form) return aw_fail(AW_ERR_ARG, "no attention form given");
    if (setup->causal && !(form->flags & AW_FORM_CAUSAL)) return attn_form_refuse_causal(form);
    if (!setup->causal && !(form->flags & AW_FORM_NONCAUSAL))
        return aw_fail(AW_ERR_ARG, "attention \"%s\" has no non-causal form", form->name);
    f->form = form, f->causal = setup->causal, f->C = setup->C, f->H = setup->H, f->L = setup->L;
    f->uses_qk = (form->flags & AW_FORM_USES_QK) != 0;
    f->score_slopes = (form->flags & AW_FORM_SCORE_BIAS) ? setup->score_slopes : NULL;
    // the options a form reads are its own: a setup without them takes the defaults
    aw_form_values defaults;
    aw_form_setup su = *setup;
    if (!su.opts) {
        aw_option_defaults(form, &defaults);
        const int st = aw_option_finish(form, &defaults, setup->L);
        if (st) return st;
        su.opts = &defaults;
    }
    return form->init ? form->init(f, &su) : 0;
}

void attn_form_free(aw_attn_form *f) {
    if (f->form && f->form->release) f->form->release(f);
    memset(f, 0, sizeof *f);
}

void attn_form_bind_params(aw_attn_form *f, float *params, float *grads, size_t n) {
    memcpy(params, f->params, n * sizeof(float));
    memset(grads, 0, n * sizeof(float));
    if (f->owns_params) free(f->params);
    f->params = params, f->grads = grads, f->owns_params = 0;
}

void attn_form_release_params(aw_attn_form *f) {
    if (f->owns_params) free(f->params);
    free(f->own);
    f->own = NULL, f->params = f->grads = NULL, f->owns_params = 0;
}

void attn_form_project(float *z, const float *x, const float *W, const float *b, size_t T, size_t C, size_t H) {
    aw_matmul_nt(z, x, W, T, H, C, C, C, H, 0);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) z[t * H + h] += b[h];
}

void attn_form_project_backward(float *dx, float *dW, float *db, const float *dz, const float *x, const float *W,
                                size_t T, size_t C, size_t H) {
    aw_matmul_nn(dx, dz, W, T, C, H, H, C, C, 1); // dx += dz W
    if (!dW) return;
    aw_matmul_tn(dW, dz, x, H, C, T, H, C, C, 1); // dW += dz^T x
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++) db[h] += dz[t * H + h];
}
