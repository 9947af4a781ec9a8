// api_form.c: any form of the registry standalone (lib.attention, lib.attentionLayer): the same
// descriptor, options, forward, backward and step the model runs, on one sequence's Q, K, V
// (T, C) and Tk keys. No form is named here.
#include "api.h"

#include "../kernels/size.h"
#include "../model/form_layer.h"
#include "../model/forms.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const aw_form *form;
    aw_form_values values;
    aw_attn_form f;
    int ready, causal;
    size_t C, H, L;
    uint32_t seed;
    float *params, *grads; // the form's tensors, one block (NULL when it has none)
    size_t n_params, n_tensors;
    aw_form_tensor tensors[16];
    float *saved;          // what the last forward saved for the backward (saved_floats(T, Tk))
    size_t saved_T, saved_Tk;
    float *state;          // generation: step_floats(L) floats
    size_t next_pos;       // generation: the position step takes next (0 always starts a new sequence)
} aw_form_layer;

AW_API int aw_form_layer_new(aw_form_layer **out, int32_t form, int32_t C, int32_t H, int32_t L, int32_t causal,
                             uint32_t seed) {
    *out = NULL;
    const aw_form *f = form >= 0 ? aw_form_at((size_t)form) : NULL;
    if (!f) return aw_fail(AW_ERR_ARG, "attention: unknown form %d", (int)form);
    if (C < 1 || H < 1 || C % H) return aw_fail(AW_ERR_ARG, "d (%d) must be a positive multiple of heads (%d)", (int)C, (int)H);
    if (L < 1 || L > 1 << 20) return aw_fail(AW_ERR_ARG, "maxLen must be in [1, 2^20], got %d", (int)L);
    aw_form_layer *l = calloc(1, sizeof *l);
    if (!l) return aw_fail(AW_ERR_NOMEM, "out of memory for the attention layer");
    l->form = f, l->C = (size_t)C, l->H = (size_t)H, l->L = (size_t)L, l->causal = causal != 0, l->seed = seed;
    *out = l;
    return AW_OK;
}

// Option `name` of the layer's form from its text, as createModel's attentionOptions.<name>.
AW_API int aw_form_layer_option(aw_form_layer *l, const char *name, const char *text) {
    if (l->ready) return aw_fail(AW_ERR_STATE, "options are set before the first call");
    const int i = aw_option_find(l->form, name);
    if (i < 0) return aw_option_refuse(l->form, name);
    return api_done(aw_option_set(l->form, &l->values, (size_t)i, text));
}

AW_API void aw_form_layer_free(aw_form_layer *l) {
    if (!l) return;
    if (l->ready) attn_form_free(&l->f);
    free(l->params), free(l->saved), free(l->state);
    free(l);
}

// Finishes the options and sets the form up (its parameters from the seed).
AW_API int aw_form_layer_ready(aw_form_layer *l) {
    if (l->ready) return AW_OK;
    int st = aw_option_finish(l->form, &l->values, l->L);
    const aw_form_setup su = {.C = l->C, .H = l->H, .L = l->L, .causal = l->causal, .opts = &l->values, .seed = l->seed};
    if (!st) st = attn_form_init(&l->f, l->form, &su);
    if (st) {
        attn_form_free(&l->f);
        return api_done(st);
    }
    l->ready = 1;
    if (l->form->tensors) {
        l->n_tensors = l->form->tensors(&l->f, l->tensors, 16);
        if (l->n_tensors > 16) return aw_fail(AW_ERR_ARG, "attention \"%s\" has more than 16 tensors", l->form->name);
        size_t n = 0;
        for (size_t i = 0; i < l->n_tensors; i++) n = aw_size_add(n, l->tensors[i].size);
        if (n) {
            l->params = aw_alloc_floats(aw_size_mul(n, 2));
            if (!l->params) return aw_fail(AW_ERR_NOMEM, "out of memory for the form's parameters");
            l->grads = l->params + n, l->n_params = n;
            l->form->bind(&l->f, l->params, l->grads);
        }
    }
    return AW_OK;
}

AW_API const char *aw_form_layer_options_json(aw_form_layer *l) {
    static char buf[1024];
    aw_option_json(l->form, &l->values, buf, sizeof buf);
    return buf;
}
AW_API int32_t aw_form_layer_param_count(const aw_form_layer *l) { return (int32_t)l->n_params; }
AW_API float *aw_form_layer_params(aw_form_layer *l) { return l->params; }
AW_API float *aw_form_layer_grads(aw_form_layer *l) { return l->grads; }
AW_API int32_t aw_form_layer_tensor_count(const aw_form_layer *l) { return (int32_t)l->n_tensors; }
AW_API const char *aw_form_layer_tensor_name(const aw_form_layer *l, int32_t i) {
    return i >= 0 && (size_t)i < l->n_tensors ? l->tensors[i].name : "";
}
AW_API int32_t aw_form_layer_tensor_size(const aw_form_layer *l, int32_t i) {
    return i >= 0 && (size_t)i < l->n_tensors ? (int32_t)l->tensors[i].size : 0;
}
AW_API int32_t aw_form_layer_tensor_trainable(const aw_form_layer *l, int32_t i) {
    return i >= 0 && (size_t)i < l->n_tensors ? l->tensors[i].trainable : 0;
}

static int check_sizes(const aw_form_layer *l, int32_t T, int32_t Tk) {
    if (!l->ready) return aw_fail(AW_ERR_STATE, "the layer is not set up");
    if (T < 1 || Tk < 1) return aw_fail(AW_ERR_ARG, "n and m must be at least 1, got %d and %d", (int)T, (int)Tk);
    if (T != Tk && !(l->form->flags & AW_FORM_CROSS))
        return aw_fail(AW_ERR_ARG, "attention \"%s\" is self-attention only: m (%d) must equal n (%d)", l->form->name,
                       (int)Tk, (int)T);
    if (((l->form->flags & AW_FORM_FIXED_LENGTH) && (size_t)T > l->L))
        return aw_fail(AW_ERR_ARG, "n = %d is longer than maxLen = %zu (attention \"%s\" fixes its length when created)",
                       (int)T, l->L, l->form->name);
    return AW_OK;
}

// A form that transforms q and k first (qk_forward: softmax's QK-norm; there is no rotation here)
// runs on copies: *qn, *kn (T, C) and (Tk, C), freed by the caller; q, k themselves when it has none.
static int qk_copies(aw_form_layer *l, float *saved, const float *q, const float *k, size_t T, size_t Tk,
                     const float **qn, const float **kn, float **mem) {
    *qn = q, *kn = k, *mem = NULL;
    if (!l->form->qk_forward || !l->f.switches) return AW_OK;
    const size_t nq = aw_size_mul(T, l->C), nk = aw_size_mul(Tk, l->C);
    float *m = aw_alloc_floats(aw_size_add(nq, nk));
    if (!m) return aw_fail(AW_ERR_NOMEM, "out of memory for the normalised queries and keys");
    memcpy(m, q, nq * sizeof(float)), memcpy(m + nq, k, nk * sizeof(float));
    const int st = l->form->qk_forward(&l->f, saved, m, m + nq, T, Tk, l->C);
    *qn = m, *kn = m + nq, *mem = m;
    return st;
}

// out (T, C); att (H, T, Tk) or NULL; x (T, C) read by forms that read the input. keep: 1 when a
// backward may follow (the form then saves what it needs), 0 for a forward alone (lib.attention).
AW_API int aw_form_layer_forward(aw_form_layer *l, float *out, float *att, const float *x, const float *q,
                                 const float *k, const float *v, int32_t T, int32_t Tk, int32_t keep) {
    int st = check_sizes(l, T, Tk);
    if (st) return st;
    const size_t n_saved = keep && l->form->saved_floats ? l->form->saved_floats(&l->f, (size_t)T, (size_t)Tk) : 0;
    if (n_saved == AW_SIZE_INVALID) return aw_fail(AW_ERR_NOMEM, "what the forward saves does not fit");
    if (n_saved && !(l->saved && l->saved_T == (size_t)T && l->saved_Tk == (size_t)Tk)) {
        free(l->saved);
        l->saved_T = l->saved_Tk = 0;
        if (!(l->saved = aw_alloc_floats(n_saved))) return aw_fail(AW_ERR_NOMEM, "out of memory for the backward's stash");
    }
    if (l->saved && !n_saved) l->saved_T = l->saved_Tk = 0; // a forward alone leaves nothing for a backward
    const float *qn, *kn;
    float *mem;
    st = qk_copies(l, n_saved ? l->saved : NULL, q, k, (size_t)T, (size_t)Tk, &qn, &kn, &mem);
    if (!st) st = l->form->forward(&l->f, out, att, n_saved ? l->saved : NULL, x, qn, kn, v, (size_t)T, (size_t)Tk);
    free(mem);
    if (!st && n_saved) l->saved_T = (size_t)T, l->saved_Tk = (size_t)Tk;
    return api_done(st);
}

// Gradients of sum(dout * out) into dx, dq, dk, dv (overwritten) and the form's parameter
// gradients (overwritten: aw_form_layer_grads). A form whose backward reads what its forward
// saved needs the forward of the same inputs first.
AW_API int aw_form_layer_backward(aw_form_layer *l, float *dx, float *dq, float *dk, float *dv, const float *dout,
                                  const float *x, const float *q, const float *k, const float *v, int32_t T, int32_t Tk) {
    int st = check_sizes(l, T, Tk);
    if (st) return st;
    const int saves = l->form->saved_floats != NULL;
    if (saves && !(l->saved && l->saved_T == (size_t)T && l->saved_Tk == (size_t)Tk))
        return aw_fail(AW_ERR_STATE, "backward needs a forward of the same n and m first (attention \"%s\" reads what "
                                     "its forward saved)", l->form->name);
    const size_t C = l->C, nq = (size_t)T * C, nk = (size_t)Tk * C;
    memset(dx, 0, nq * sizeof(float)), memset(dq, 0, nq * sizeof(float));
    memset(dk, 0, nk * sizeof(float)), memset(dv, 0, nk * sizeof(float));
    if (l->grads) memset(l->grads, 0, l->n_params * sizeof(float));
    const size_t wf = l->form->work_floats(&l->f, (size_t)T, (size_t)Tk);
    if (wf == AW_SIZE_INVALID) return aw_fail(AW_ERR_NOMEM, "the backward's scratch does not fit");
    float *work = wf ? aw_alloc_floats(wf) : NULL;
    if (wf && !work) return aw_fail(AW_ERR_NOMEM, "out of memory for the backward's scratch");
    const float *qn, *kn;
    float *mem;
    st = qk_copies(l, NULL, q, k, (size_t)T, (size_t)Tk, &qn, &kn, &mem); // the forward's q, k again
    if (!st) st = l->form->backward(&l->f, dx, dq, dk, dv, work, dout, saves ? l->saved : NULL, x, qn, kn, v, (size_t)T, (size_t)Tk);
    if (!st && mem) l->form->qk_backward(&l->f, dq, dk, work, l->saved, (size_t)T, (size_t)Tk);
    free(mem);
    free(work);
    return api_done(st);
}

// Generation, one token at a time: position pos's output row (C) from its x, q, k, v rows; pos 0
// starts a new sequence, and after it positions come in order (1, 2, ...): a step reads the state
// the steps before it left, so any other position is refused. AW_ERR_STATE for a form without a
// step (flag AW_FORM_STEP unset).
AW_API int aw_form_layer_step(aw_form_layer *l, float *out, const float *x, const float *q, const float *k,
                              const float *v, int32_t pos) {
    if (!l->ready) return aw_fail(AW_ERR_STATE, "the layer is not set up");
    if (!(l->form->flags & AW_FORM_STEP) || !l->form->step)
        return aw_fail(AW_ERR_STATE, "attention \"%s\" has no step (generation re-runs its full forward)", l->form->name);
    if (!l->causal) return aw_fail(AW_ERR_STATE, "step needs a causal layer (causal: true)");
    if (pos < 0 || (size_t)pos >= l->L) return aw_fail(AW_ERR_ARG, "pos must be in [0, maxLen = %zu), got %d", l->L, (int)pos);
    if (pos != 0 && (size_t)pos != l->next_pos)
        return aw_fail(AW_ERR_ARG, "pos %d is out of order: the next position is %zu (steps run 0, 1, 2, ... in order; "
                                   "pos 0 starts a new sequence)", (int)pos, l->next_pos);
    if (!l->state) {
        const size_t n = l->form->step_floats(&l->f, l->L);
        if (n == AW_SIZE_INVALID || !(l->state = aw_alloc_floats(n ? n : 1)))
            return aw_fail(AW_ERR_NOMEM, "out of memory for the generation state");
    }
    const float *qn, *kn;
    float *mem;
    int st = qk_copies(l, NULL, q, k, 1, 1, &qn, &kn, &mem);
    if (!st) st = l->form->step(&l->f, l->state, l->L, out, x, qn, kn, v, (size_t)pos);
    free(mem);
    l->next_pos = st ? 0 : (size_t)pos + 1; // after a failed step only a new sequence is safe
    return api_done(st);
}

// The keys each query's fine-grained reading took (forms.h selection: NSA's selected blocks and
// window): sel (H, T, Tk) 1 or 0, from the same inputs as forward. AW_ERR_STATE for a form that
// reads every key its mask allows (no selection).
AW_API int aw_form_layer_selection(aw_form_layer *l, float *sel, const float *x, const float *q, const float *k,
                                   const float *v, int32_t T, int32_t Tk) {
    int st = check_sizes(l, T, Tk);
    if (st) return st;
    if (!l->form->selection)
        return aw_fail(AW_ERR_STATE, "attention \"%s\" has no selection (it reads every key its mask allows)", l->form->name);
    const float *qn, *kn;
    float *mem;
    st = qk_copies(l, NULL, q, k, (size_t)T, (size_t)Tk, &qn, &kn, &mem);
    if (!st) st = l->form->selection(&l->f, sel, x, qn, kn, v, (size_t)T, (size_t)Tk);
    free(mem);
    return api_done(st);
}
