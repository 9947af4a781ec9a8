// forms.h: the registry of attention forms. Every consumer (the model, generation, checkpoints,
// the native trainer, the exported C ABI, hence the JS wrapper and the playground) loops over the
// table in forms.c (aw_form_at, aw_form_find) instead of switching on a family. A new form is a
// descriptor in its own file (form_<family>.c: its flags, options, words and functions), or one
// more row in the file of a form it varies (form_linear.c holds four, form_gated.c two); its
// kernel in src/attention/; its declaration and its line in the table in forms.c; its module in
// scripts/torch_model.py and its reference in tests/node/reference.js (tests/node/conformance.test.js
// then checks it with every other form); docs/attention-forms.md describes every form. The
// sublayer's lifecycle around a form is form_layer.h.
//
// A form turns one sequence's projections into the attention output: q (T, C), k, v (Tk, C),
// x (T, C) the sublayer input (for forms that read it), out (T, C), att (H, T, Tk) or NULL.
// Heads split the C columns as everywhere in the library.
#ifndef AW_MODEL_FORMS_H
#define AW_MODEL_FORMS_H

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
    AW_FORM_FIXED_LENGTH = 1u << 8,  // its parameters are sized by maxLen: sequences up to maxLen only
    AW_FORM_SCORE_BIAS = 1u << 9,    // takes a score bias by distance (aw_attn_form.score_slopes: ALiBi's)
    AW_FORM_OWN_V = 1u << 10,        // makes its own values from X (MLA's latent): its sublayer has no Wv, bv
    AW_FORM_NO_GRADS_OK = 1u << 12,  // its parameters run without gradients bound (its backward
                                     // skips them when f->grads is NULL): inference-only models keep none
    AW_FORM_KV_GROUPS = 1u << 11,    // its step keeps the K/V heads only under grouped-query attention
                                     // (aw_attn_form.KC): generation hands it k, v of KC columns
    AW_FORM_SELECTS = 1u << 13,      // selects the keys each query reads (it has a selection below: NSA,
                                     // DSA), so model.sparseReading reads its layers (lib.forms' selects)
};

typedef struct aw_form aw_form;

// A form owns its options: each descriptor lists them (name, kind, range, default, checkpoint
// key, help), and everything else follows from that list: createModel's attentionOptions and the
// trainer's flags are parsed and range-checked by it (form_options.c), configs and checkpoints
// store them by it, lib.forms[i].options and the TypeScript types describe them from it. A form
// reads its values in init (aw_option_int and friends); shared code never names an option.
enum aw_option_kind {
    AW_OPTION_INT,    // an integer in [lo, hi]
    AW_OPTION_BOOL,   // true or false
    AW_OPTION_CHOICE, // one of `words`, or (when lo < hi) a number in the open interval (lo, hi)
    AW_OPTION_LIST,   // a comma list of distinct items of `words`, 1 to AW_OPTION_MAX_ITEMS of them
};
enum { AW_OPTION_MAX_ITEMS = 8, AW_MAX_FORM_OPTIONS = 6, AW_OPTION_TEXT = 96 };

typedef struct {
    const char *name;   // attentionOptions.<name>; the trainer's --<name>
    int kind;           // enum aw_option_kind
    double lo, hi;      // the range (see the kinds)
    const char *const *words; // CHOICE: its words; LIST: its items (NULL-terminated)
    const char *def;    // the default as users write it; NULL: none (the form's finish derives it or
                        // leaves it unset, when it does not apply to this form's settings)
    const char *key;    // its key in a checkpoint's __metadata__
    const char *help;   // one line for lib.forms, the trainer's --help and the page
} aw_form_option;

// The values of a form's options, in the order of its list, as canonical text ("8", "true",
// "retnet", "0.9", "random,dot"); "" when unset. given: bit i set when option i was written.
typedef struct {
    char text[AW_MAX_FORM_OPTIONS][AW_OPTION_TEXT];
    unsigned given;
} aw_form_values;

// A parameter tensor of a form, as the model's table lists it ("<sublayer>.<group>.<name>").
typedef struct {
    char name[24];
    size_t size;    // floats
    size_t dims[3]; // its shape as checkpoints store it, e.g. R (heads, L, L)
    int rank;
    int trainable;  // 0: fixed (no gradient, no weight decay), e.g. a fixed random Synthesizer table
    int no_decay;   // 1: trained without weight decay (a decay's logit, which decay would pull to 1/2)
    int side;       // 1: trained by its form's side loss alone (DSA's indexer): its gradient is that of
                    // aw_attn_form.side_loss, and gradient checks compare it with that loss' differences
} aw_form_tensor;

// One attention sublayer's instance of a form.
typedef struct {
    const aw_form *form;
    int causal;
    int uses_qk;           // 1 when Q and K are read (the sublayer then has Wq, Wk)
    size_t C, H, L;        // width, heads and the longest sequence
    size_t KC;             // the K/V columns its step state keeps and step and prefill take: C, or the
                           // K/V heads' kvHeads x dHead for a form with AW_FORM_KV_GROUPS in a model
                           // with grouped-query attention
    void *own;             // the form's own state (its options as it reads them, its layer), set up
                           // by init and freed by release
    float *params, *grads; // the form's parameters: its own block until bind, then the model's
                           // arena (grads NULL until bind)
    int owns_params;
    const float *score_slopes; // (H) the score bias' slopes for this sublayer (a positional row's
                               // score_bias, self-attention of a form with AW_FORM_SCORE_BIAS), or NULL
    int switches;          // 1 when its options change what the plain kernel computes (softmax's window,
                           // sinks, gate, QK-norm, soft-cap): generation's grouped-query cache and
                           // streaming, which call the plain kernel themselves, must go through the form
    // A side loss of the form's own (DSA's indexer KL), apart from the model's loss: the model sets
    // side_weight (1 / batch) before a forward, which then (when it saves for a backward) adds
    // side_weight times each sequence's side loss to side_loss, and backward adds its gradient into
    // the form's parameters' gradients. 0 (the standalone layer): neither, backward is the gradient of
    // the output alone.
    float side_weight;
    double side_loss;
    int trains_alone;      // 1: a training step updates this form's parameters only and leaves every other
                           // parameter of the model as it is (DSA's dense warm-up: the indexer learns alone)
} aw_attn_form;

// What a form needs to be set up in a model: the width, heads, longest sequence, its options'
// values (checked) and the seed of this sublayer.
typedef struct {
    size_t C, H, L;
    size_t kv_heads; // the model's K/V heads (grouped-query attention); 0: H
    int causal;
    const aw_form_values *opts;
    uint32_t seed;
    const float *score_slopes; // (H) the score bias' slopes (positional.h score_bias), or NULL
    float norm_eps;            // the model's normEps, for a form's own norms (0: 1e-5)
} aw_form_setup;

// What a form says about itself: lib.forms carries it, the playground shows it.
typedef struct {
    const char *label;    // short, for a menu: "Softmax (full)"
    const char *formula;  // a few lines of plain-text formula
    const char *summary;  // a few plain sentences: what it does, when it wins
    const char *cost;     // its time in n: "O(n² d)"
    const char *paper;    // "Title. Authors, year."
    const char *url;      // the paper's address
    int year;
    int signed_scores;    // 1: its attention weights can be negative (shown as |A|)
} aw_form_words;

struct aw_form {
    const char *name;    // "linear:elu+1": what users write, what checkpoints store
    const char *family;  // its kernel's family: "softmax", "local", "linear", "synthesizer",
                         // "retention", "gated", "gla", "delta", "linformer" (for grouping only: no
                         // code branches on it)
    aw_form_words words;
    const char *cross;   // the form of cross-attention in an encoder-decoder built with this one
    const char *decoder; // a form without a causal form: the decoder's self-attention in an
                         // encoder-decoder built with it (NULL: it cannot serve such a model)
    const char *why_not_causal; // a form without a causal form: the reason, for the error message
    unsigned flags;      // enum aw_form_flag
    int variant;         // the file's own id for its rows: linear feature map, synthesizer variant,
                         // gate width (form_gated.c), delta rule with or without a gate
    const aw_form_option *options; // its attentionOptions (n_options of them)
    size_t n_options;
    // Derives the defaults that depend on other values (maxLen included) and checks values that
    // constrain each other; AW_ERR_ARG with a message naming the option. NULL: nothing to do.
    int (*finish)(const aw_form *form, aw_form_values *v, size_t max_len);
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
    // Floats the forward saves for the backward, per sequence of (T, Tk) (NULL: none). Linear in
    // T and Tk for every form: no form keeps an n x m matrix for its backward.
    size_t (*saved_floats)(const aw_attn_form *f, size_t T, size_t Tk);
    // out (T, C); att (H, T, Tk): the weights for display, or NULL (then no form builds them);
    // saved: saved_floats(T, Tk) floats for the backward, or NULL when no backward follows.
    int (*forward)(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk);
    // Accumulates (+=) dx, dq, dk, dv (and the form's parameter gradients) from dout; saved is
    // what the forward of these inputs saved; work has work_floats(T, Tk) floats.
    int (*backward)(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk);
    // Generation: floats of state for sequences up to L, and one step at position pos: adds
    // (k, v) (and x) of the new token and writes its output row (C). NULL when the form has no
    // incremental step (generation then re-runs the full forward: AW_FORM_STEP unset).
    size_t (*step_floats)(const aw_attn_form *f, size_t L);
    int (*step)(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q,
                const float *k, const float *v, size_t pos);
    // Generation's prefill: puts positions 0..T-1 of one sequence, whose k, v (T, C) a batched
    // forward computed, into a fresh step state, as T steps would. NULL: the prompt is stepped
    // through one token at a time.
    void (*prefill)(aw_attn_form *f, float *state, size_t L, const float *k, const float *v, size_t T);
    // The keys a step attends over when fewer than all earlier ones: the last `window` (softmax's
    // sliding window), 0 for all; NULL: all. Generation then keeps only a ring of the last window
    // positions' rows (generate.c) and runs step on a view of it; step and prefill are unchanged.
    size_t (*step_window)(const aw_attn_form *f);
    // Before the positional rotation (NULL: nothing): transforms q (T, C) and k (Tk, kc) in place
    // (softmax's QK-norm), k of kc columns (the K/V heads' in generation, C otherwise); saved: the
    // form's saved_floats(T, Tk) of this sequence when a backward follows (kc = C then), else NULL.
    // qk_backward turns dq (T, C), dk (Tk, C) at its outputs into the gradients at its inputs, in
    // place, after the rotation's backward; work: the form's work_floats(T, Tk).
    int (*qk_forward)(aw_attn_form *f, float *saved, float *q, float *k, size_t T, size_t Tk, size_t kc);
    void (*qk_backward)(aw_attn_form *f, float *dq, float *dk, float *work, const float *saved, size_t T, size_t Tk);
    // Sparse forms (NSA, DSA): which keys each query's fine-grained reading took, for the same inputs as forward
    // (after qk_forward and the rotation, as forward sees them): sel (H, T, Tk) gets 1 where head h's query t read
    // key s through its selected tokens or blocks (NSA: the top blocks and the window; DSA: the indexer's top-k),
    // else 0. NULL: the form reads every key its mask allows.
    int (*selection)(aw_attn_form *f, float *sel, const float *x, const float *q, const float *k, const float *v,
                     size_t T, size_t Tk);
    // Applies option `name`'s new value in v to a built sublayer (DSA's stage, between its two stages of
    // training): 1 when it did, 0 when that option is fixed once the form is built. NULL: every option is.
    int (*retune)(aw_attn_form *f, const aw_form_values *v, const char *name);
};

// The registry, in the order users see it.
size_t aw_form_count_all(void);
const aw_form *aw_form_at(size_t i);        // NULL past the end
const aw_form *aw_form_find(const char *name); // NULL when no form has this name
int aw_form_index(const aw_form *f);        // its position in the registry

// A number written in decimal, the one syntax every config field, option and checkpoint value is
// read in: an optional '-', digits, an optional fraction and exponent ("8", "-1", "0.9", "1e3");
// no leading space or '+', no hex ("0x8"), no "inf" or "nan". 1 with *out set, or 0.
int aw_parse_decimal(const char *text, double *out);

// Options (form_options.c). A form's option by name: its index in form->options, or -1.
int aw_option_find(const aw_form *form, const char *name);
// The Error for option `name` given to a form that does not read it: the forms that do, and the
// options this one takes ("unknown option" when no form has it). Returns AW_ERR_ARG.
int aw_option_refuse(const aw_form *form, const char *name);
// Parses `text` for option i of form into its canonical text in v (marks it given); AW_ERR_ARG
// with a message naming "attentionOptions.<name>" and what it must be.
int aw_option_set(const aw_form *form, aw_form_values *v, size_t i, const char *text);
// The defaults of every option, then finish: values as a form with nothing given has them.
void aw_option_defaults(const aw_form *form, aw_form_values *v);
// Fills the defaults of the options not given, runs the form's finish and re-checks every set
// value (so a config made in C or read from a checkpoint is checked as users' options are).
int aw_option_finish(const aw_form *form, aw_form_values *v, size_t max_len);
// For a form's init: option `name`'s value (its schema must have it). int/bool: the number;
// choice: the index of its word, or -1 for a number (then aw_option_number); list: the count of
// items, each written to items (indices into words) when items is not NULL.
long long aw_option_int(const aw_form *form, const aw_form_values *v, const char *name);
double aw_option_number(const aw_form *form, const aw_form_values *v, const char *name);
int aw_option_word(const aw_form *form, const aw_form_values *v, const char *name);
size_t aw_option_list(const aw_form *form, const aw_form_values *v, const char *name, int *items);
int aw_option_is_set(const aw_form *form, const aw_form_values *v, const char *name);
// Appends the set values as JSON members ("window":8,"decay":"retnet","components":["random"]),
// each preceded by a comma; returns the length it would write (snprintf's contract).
size_t aw_option_json(const aw_form *form, const aw_form_values *v, char *buf, size_t cap);

// The whole registry as JSON, for lib.forms: each form's name, family, crossForm, decoderForm,
// whyNotCausal, flags, words and options. Returns the length it would write (snprintf's contract).
size_t aw_forms_json(char *buf, size_t cap);

// The error for a causal use of a form without a causal form: why, and where it can serve.
int attn_form_refuse_causal(const aw_form *form);

#endif
