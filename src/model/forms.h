// forms.h: the registry of attention forms. Every consumer (the model, generation, checkpoints,
// the native trainer, the exported C ABI, hence the JS wrapper and the playground) loops over the
// table in forms.c (aw_form_at, aw_form_find) instead of switching on a family. A new form is a
// descriptor in its own file (form_<family>.c), two lines in forms.c (its declaration and its row)
// and its tests; docs/attention-forms.md describes every form.
//
// A form turns one sequence's projections into the attention output: q (T, C), k, v (Tk, C),
// x (T, C) the sublayer input (for forms that read it), out (T, C), att (H, T, Tk) or NULL.
// Heads split the C columns as everywhere in the library.
#ifndef AW_MODEL_FORMS_H
#define AW_MODEL_FORMS_H

#include "../attention/synthesizer.h"

#include <stddef.h>
#include <stdint.h>

enum aw_form_flag {
    AW_FORM_CAUSAL = 1u << 0,        // has a causal form (so it can be a decoder's self-attention)
    AW_FORM_NONCAUSAL = 1u << 1,     // has a non-causal form (encoder self-attention)
    AW_FORM_STEP = 1u << 2,          // generation advances it one token at a time (step below)
    AW_FORM_USES_QK = 1u << 3,       // reads Q and K, so its sublayer has Wq, Wk (a mixture may
                                     // drop them: see aw_attn_form.uses_qk)
    AW_FORM_USES_X = 1u << 4,        // reads the sublayer input X (dense synthesizers)
    AW_FORM_PARAMS = 1u << 5,        // has parameters of its own (in the model's arena)
    AW_FORM_CROSS = 1u << 6,         // attends to another sequence (Tk != T): cross-attention
    AW_FORM_SAVES_WEIGHTS = 1u << 7, // its backward reads the forward's weights (H, T, Tk)
};

typedef struct aw_form aw_form;

// The options of createModel's attentionOptions a form reads (the rest are refused for it).
enum aw_form_option {
    AW_OPT_TRAINABLE = 1u << 0,
    AW_OPT_A = 1u << 1,
    AW_OPT_B = 1u << 2,
    AW_OPT_K = 1u << 3,
    AW_OPT_COMPONENTS = 1u << 4,
    AW_OPT_WINDOW = 1u << 5,
    AW_OPT_STRIDE = 1u << 6,
    AW_OPT_DECAY = 1u << 7,
};

// A parameter tensor of a form, as the model's table lists it ("<sublayer>.<group>.<name>").
typedef struct {
    char name[24];
    size_t size;    // floats
    size_t dims[3]; // its shape as checkpoints store it, e.g. R (heads, L, L)
    int rank;
    int trainable;  // 0: fixed (no gradient, no weight decay), e.g. a fixed random Synthesizer table
    int no_decay;   // 1: trained without weight decay (a decay's logit, which decay would pull to 1/2)
} aw_form_tensor;

// One attention sublayer's instance of a form.
typedef struct {
    const aw_form *form;
    int causal;
    int uses_qk;           // 1 when Q and K are read (the sublayer then has Wq, Wk)
    size_t C, H;           // width and heads
    size_t window;         // local attention: the band's width w
    size_t stride;         // strided sparse attention: every s-th key as well
    aw_synthesizer *synth; // forms with parameters: the layer, its params bound into the model's arena
    size_t k, L;           // Linformer: projected rows, and the projections' columns (max_len)
    float *gamma;          // retention: the heads' decays (H, owned)
    int learn_decay;       // retention: 1 when params holds the decays' logits (gamma = sigmoid)
    float *params, *grads; // the parameters of a form other than a synthesizer: its own block until
                           // bind, then the model's arena (grads NULL until bind)
    int owns_params;
} aw_attn_form;

// What a form needs to be set up in a model: the width, heads, longest sequence, the options of
// forms with parameters, and the seed of this sublayer.
typedef struct {
    size_t C, H, L;
    int causal;
    const aw_synthesizer_config *synth; // options of synth:* forms (variant comes from the form)
    size_t window;                      // local attention's w
    size_t stride;                      // strided attention's s
    float decay;                        // retention: one decay for every head; 0: RetNet's schedule
    int learn_decay;                    // retention: 1 to learn the decays (from the schedule or decay)
    size_t k;                           // Linformer's projected rows
    uint32_t seed;
} aw_form_setup;

struct aw_form {
    const char *name;    // "linear:elu+1": what users write, what checkpoints store
    const char *family;  // "softmax", "linear", "synthesizer"
    const char *cross;   // the form of cross-attention in an encoder-decoder built with this one
    const char *decoder; // a form without a causal form: the decoder's self-attention in an
                         // encoder-decoder built with it (NULL: it cannot serve such a model)
    const char *why_not_causal; // a form without a causal form: the reason, for the error message
    unsigned flags;      // enum aw_form_flag
    unsigned options;    // enum aw_form_option: the attentionOptions it reads
    int variant;         // the family's own id: linear feature map, synthesizer variant
    // Sets up f (f->form, causal, C, H already filled in). NULL: nothing to set up.
    int (*init)(aw_attn_form *f, const aw_form_setup *setup);
    void (*release)(aw_attn_form *f);
    // Forms with parameters: their tensors (up to cap; returns the count) in the order of one
    // contiguous block, and bind, which moves them into the model's arena (params, grads).
    const char *param_group; // the middle of their names: "synth" gives "dec.0.self.synth.W1"
    size_t (*tensors)(const aw_attn_form *f, aw_form_tensor *out, size_t cap);
    void (*bind)(aw_attn_form *f, float *params, float *grads);
    // Floats of scratch the backward needs for one sequence of (T, Tk); SIZE_MAX if it cannot fit.
    size_t (*work_floats)(const aw_attn_form *f, size_t T, size_t Tk);
    int (*forward)(aw_attn_form *f, float *out, float *att, const float *x, const float *q, const float *k,
                   const float *v, size_t T, size_t Tk);
    // Accumulates (+=) dx, dq, dk, dv (and the form's parameter gradients) from dout; att is the
    // forward's weights when the form saves them; work has work_floats(T, Tk) floats.
    int (*backward)(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *att, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk);
    // Generation: floats of state for sequences up to L, and one step at position pos: adds
    // (k, v) (and x) of the new token and writes its output row (C). NULL when the form has no
    // incremental step (generation then re-runs the full forward: AW_FORM_STEP unset).
    size_t (*step_floats)(const aw_attn_form *f, size_t L);
    int (*step)(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q,
                const float *k, const float *v, size_t pos);
};

// The registry, in the order users see it.
size_t aw_form_count_all(void);
const aw_form *aw_form_at(size_t i);        // NULL past the end
const aw_form *aw_form_find(const char *name); // NULL when no form has this name
int aw_form_index(const aw_form *f);        // its position in the registry

// The sublayer's lifecycle (forms.c): checks the form can serve (causal needs AW_FORM_CAUSAL,
// with a message naming the form), then calls its init.
int attn_form_init(aw_attn_form *f, const aw_form *form, const aw_form_setup *setup);
void attn_form_free(aw_attn_form *f);
// The error for a causal use of a form without a causal form: why, and where it can serve.
int attn_form_refuse_causal(const aw_form *form);

#endif
