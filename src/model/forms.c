// forms.c: the registry's one table (see forms.h); the sublayer's lifecycle is form_layer.c.
#include "forms.h"

#include "../kernels/status.h"

#include <string.h>

// The rows, each defined in its form's file (form_<family>.c; one file may hold several rows). A
// new form: its row (in a file of its own, or beside the forms it varies), its declaration below
// and its line in the table, then its PyTorch module and reference (forms.h says where).
extern const aw_form AW_FORM_SOFTMAX_DESC, AW_FORM_LOCAL_DESC, AW_FORM_STRIDED_DESC;
extern const aw_form AW_FORM_LINEAR_ELU1_DESC, AW_FORM_LINEAR_RELU_DESC, AW_FORM_LINEAR_EFFICIENT_DESC,
    AW_FORM_LINEAR_TAYLOR_DESC;
extern const aw_form AW_FORM_SYNTH_DENSE_DESC, AW_FORM_SYNTH_RANDOM_DESC, AW_FORM_SYNTH_FACTORIZED_DENSE_DESC,
    AW_FORM_SYNTH_FACTORIZED_RANDOM_DESC, AW_FORM_SYNTH_MIXTURE_DESC;
extern const aw_form AW_FORM_RETENTION_DESC, AW_FORM_LINFORMER_DESC, AW_FORM_GATED_DESC, AW_FORM_DELTA_DESC,
    AW_FORM_GATED_DELTA_DESC, AW_FORM_KDA_DESC, AW_FORM_GLA_DESC;
extern const aw_form AW_FORM_MLA_DESC;
extern const aw_form AW_FORM_NSA_DESC;
extern const aw_form AW_FORM_DSA_DESC;

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
    &AW_FORM_KDA_DESC,
    &AW_FORM_LINFORMER_DESC,
    &AW_FORM_MLA_DESC,
    &AW_FORM_NSA_DESC,
    &AW_FORM_DSA_DESC,
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
