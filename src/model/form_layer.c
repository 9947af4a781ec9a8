// form_layer.c: an attention sublayer's lifecycle around its form (form_layer.h): init with the
// form's options, free, bind and release of a form's own parameters, the gates' projection.
#include "form_layer.h"

#include "../kernels/kernels.h"
#include "../kernels/status.h"

#include <stdlib.h>
#include <string.h>

int attn_form_init(aw_attn_form *f, const aw_form *form, const aw_form_setup *setup) {
    memset(f, 0, sizeof *f);
    if (!form) return aw_fail(AW_ERR_ARG, "no attention form given");
    if (setup->causal && !(form->flags & AW_FORM_CAUSAL)) return attn_form_refuse_causal(form);
    if (!setup->causal && !(form->flags & AW_FORM_NONCAUSAL))
        return aw_fail(AW_ERR_ARG, "attention \"%s\" has no non-causal form", form->name);
    f->form = form, f->causal = setup->causal, f->C = setup->C, f->H = setup->H, f->L = setup->L;
    f->KC = (form->flags & AW_FORM_KV_GROUPS) && setup->kv_heads && setup->kv_heads < setup->H
                ? setup->kv_heads * (setup->C / setup->H) : setup->C;
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
    if (params != f->params) memcpy(params, f->params, n * sizeof(float)); // equal: moved there already (quantize.c)
    if (grads) memset(grads, 0, n * sizeof(float)); // NULL: an inference-only model's (AW_FORM_NO_GRADS_OK)
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
