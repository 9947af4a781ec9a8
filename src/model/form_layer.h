// form_layer.h: one attention sublayer's lifecycle around a form of the registry (forms.h): init
// (with the form's options, defaults when none are given), free, and the helpers forms with
// parameters or input gates share. Apart from forms.c so the registry's table calls nothing.
#ifndef AW_MODEL_FORM_LAYER_H
#define AW_MODEL_FORM_LAYER_H

#include "forms.h"

#include <stddef.h>

// For forms whose parameters are one block of their own until the model's arena takes them:
// bind copies the n floats into params, zeroes grads and frees the form's block; release frees the
// block (if still owned) and the form's own state.
void attn_form_bind_params(aw_attn_form *f, float *params, float *grads, size_t n);
void attn_form_release_params(aw_attn_form *f);

// For forms whose gates come from the sublayer input through a per-head projection, W (H, C) as
// nn.Linear(C, H) keeps it and b (H): z (T, H) = x W^T + b; and its backward, dx += dz W and, when
// dW is not NULL, dW += dz^T x, db += the column sums of dz.
void attn_form_project(float *z, const float *x, const float *W, const float *b, size_t T, size_t C, size_t H);
void attn_form_project_backward(float *dx, float *dW, float *db, const float *dz, const float *x, const float *W,
                                size_t T, size_t C, size_t H);

// The sublayer's lifecycle: checks the form can serve (causal needs AW_FORM_CAUSAL,
// with a message naming the form), then calls its init.
int attn_form_init(aw_attn_form *f, const aw_form *form, const aw_form_setup *setup);
void attn_form_free(aw_attn_form *f);

#endif
