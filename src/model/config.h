// config.h: a model config built from named fields, the one way every front end makes one: the
// JS wrapper (createModel's options, through src/api/api_model.c), the native trainer's flags
// and checkpoints' metadata all set fields by the names users write ("dModel", "attention",
// "attentionOptions.components", ...), and C owns the defaults, the bounds and the messages.
#ifndef AW_MODEL_CONFIG_H
#define AW_MODEL_CONFIG_H

#include "transformer.h"

#include <stddef.h>

// attentionOptions as written, for the model (8) and for each of layerForms' entries (a form's
// options, and two over so that one too many is the form's Error, not the buffer's)
enum { AW_MAX_PENDING_OPTIONS = 8 + AW_MAX_LAYERS * (AW_MAX_FORM_OPTIONS + 2) };

typedef struct {
    aw_model_config cfg;
    unsigned given; // bit per field set explicitly (the rest take defaults)
    // attentionOptions.<name> as written, parsed by the form's own option list at finish (when
    // the form is known, whatever the order the fields came in)
    struct {
        char name[32];
        char text[AW_OPTION_TEXT];
        int layer; // -1: attentionOptions.<name>; l: layerForms.<l>.attentionOptions.<name>
    } pending[AW_MAX_PENDING_OPTIONS];
    size_t n_pending;
    // layerForms: its length ("layerForms", given with the "layerForms" bit), each entry's form
    // ("layerForms.<l>.attention"; bit l of layer_named when given)
    int32_t n_layer_forms;
    int32_t layer_form[AW_MAX_LAYERS];
    unsigned layer_named;
} aw_config_builder;

// The names users write for the config's enums, and a name's index (-1 when absent); the
// positional encodings' names are their table's (positional.h).
extern const char *const AW_NORM_TYPE_NAMES[2];
extern const char *const AW_FFN_NAMES[AW_FFN_COUNT];
extern const char *const AW_BLOCK_NAMES[2];
extern const char *const AW_NORM_NAMES[2];
extern const char *const AW_ARCH_NAMES[AW_ARCH_COUNT];
int name_index(const char *const *names, int count, const char *name);

// The defaults: vocab 64, dModel 64, heads 4, layers 2, dFF 4 dModel, maxLen 64, softmax,
// sinusoidal, pre-norm, decoder, seed 1; block "classic" (LayerNorm, ReLU FFN, biases, an untied
// classifier, kvHeads = heads); block "llama" makes the defaults RMSNorm, SwiGLU (dFF 8/3 dModel,
// to a multiple of 8), no biases and rotary positions; the form's options as its list says; layers 1 for the
// gru archs (the only value they take).
void config_builder_init(aw_config_builder *b);
// Sets the field `key` from its text (a number in decimal, true/false, a name, or a comma list).
// layerForms: "layerForms" is its length (one entry per layer), "layerForms.<l>.attention" layer
// l's form and "layerForms.<l>.attentionOptions.<name>" its options; with layerForms, the model's
// attention and attentionOptions are refused (each layer names its own).
// AW_ERR_ARG with a message naming the field for an unknown key or a bad value.
int config_builder_set(aw_config_builder *b, const char *key, const char *value);
// Fills the derived defaults (dFF = 4 dModel; the form's, by its finish), rejects options that
// do not apply to the form, and checks the whole config.
int config_builder_finish(aw_config_builder *b, aw_model_config *out);
// The config as JSON, in the JS option names ({"vocab":64,...,"attentionOptions":{...}}).
// Returns the length (without the NUL); writes at most cap bytes including the NUL.
size_t config_json(const aw_model_config *c, char *buf, size_t cap);
#endif
