// config.h: a model config built from named fields, the one way every front end makes one: the
// JS wrapper (createModel's options, through src/api/api_model.c), the native trainer's flags
// and checkpoints' metadata all set fields by the names users write ("dModel", "attention",
// "attentionOptions.components", ...), and C owns the defaults, the bounds and the messages.
#ifndef AW_MODEL_CONFIG_H
#define AW_MODEL_CONFIG_H

#include "transformer.h"

#include <stddef.h>

typedef struct {
    aw_model_config cfg;
    unsigned given; // bit per field set explicitly (the rest take defaults)
} aw_config_builder;

// The defaults: vocab 64, dModel 64, heads 4, layers 2, dFF 4 dModel, maxLen 64, softmax,
// sinusoidal, pre-norm, decoder, seed 1; synth options trainable, k 8, components random,dot;
// layers 1 for the gru archs (the only value they take).
void config_builder_init(aw_config_builder *b);
// Sets the field `key` from its text (a number in decimal, true/false, a name, or a comma list).
// AW_ERR_ARG with a message naming the field for an unknown key or a bad value.
int config_builder_set(aw_config_builder *b, const char *key, const char *value);
// Fills the derived defaults (dFF = 4 dModel, factorized-dense a * b = maxLen as square as it
// goes), rejects options that do not apply to the form, and checks the whole config.
int config_builder_finish(aw_config_builder *b, aw_model_config *out);
// The config as JSON, in the JS option names ({"vocab":64,...,"attentionOptions":{...}}).
// Returns the length (without the NUL); writes at most cap bytes including the NUL.
size_t config_json(const aw_model_config *c, char *buf, size_t cap);
// Retention's decay as users and checkpoints write it: "retnet" (the schedule: decay 0, not
// learned), "learned" (logits from the schedule) or one decay in (0, 1). 1 when text is one of those.
int config_parse_decay(const char *text, float *decay, int32_t *learned);

#endif
