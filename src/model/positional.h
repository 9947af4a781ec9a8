// positional.h: the positional encodings as a table, one row per encoding (docs/attention-forms.md
// section 5, "How to add a positional encoding"). The model, generation, streaming, the config
// parser, checkpoints and the JS listing (lib.positionals) read the rows; none names an encoding.
#pragma once

#include <stddef.h>

struct aw_model;
struct aw_model_config;
struct aw_form;

enum aw_positional_flag {
    AW_POSITIONAL_PARAMS = 1u << 0,  // has parameters: an (L, C) table wpe, trained with the model
    AW_POSITIONAL_BY_SLOT = 1u << 1, // positions a rolling cache's slots can stand for: streams past maxLen
};

typedef struct aw_positional {
    const char *name;  // "rope": createModel's positional, checkpoints' metadata
    const char *label; // "rotary (RoPE)": a short name for a list
    const char *words; // what it does, for a learner
    const char *paper; // where it comes from
    unsigned flags;    // enum aw_positional_flag
    // AW_OK when the model's config fits the encoding (f: its attention form), else a message; NULL: always
    int (*check)(const struct aw_model_config *c, const struct aw_form *f);
    // builds what embed, rotate_qk and the score bias read (owned by the model, freed by
    // model_destroy); NULL: nothing to build. Runs after the parameters are bound.
    int (*tables)(struct aw_model *m);
    // the (L, C) table added to the token embeddings, row p at position p; NULL: nothing added
    const float *(*embed)(const struct aw_model *m);
    // rotates the heads of x (B, T, width) in place, row t at position pos0 + t (inverse: back, the
    // backward's); NULL: queries and keys stay as they are
    void (*rotate_qk)(const struct aw_model *m, float *x, size_t B, size_t T, size_t pos0, size_t width, int inverse);
    // the score bias -slopes[h] |i - j| on self-attention's scores: fills slopes (H); NULL: none
    void (*score_bias)(float *slopes, size_t H);
} aw_positional;

// The rows' indices (config.positional), for presets and tests; the table's order.
enum aw_positional_index { AW_POS_SINUSOIDAL, AW_POS_LEARNED, AW_POS_ROPE, AW_POS_ALIBI, AW_POS_NONE,
                           AW_POSITIONAL_COUNT };
extern const aw_positional AW_POSITIONALS[AW_POSITIONAL_COUNT];

// Row i, or NULL when i is out of range.
const aw_positional *aw_positional_at(int i);
// The row named name, its index in *index (may be NULL); NULL when none is.
const aw_positional *aw_positional_find(const char *name, int *index);
// Writes the rows' names quoted and comma-separated ("\"sinusoidal\", \"learned\", ...") into out
// (cap bytes), only the rows with every bit of flags; the last pair is joined by " or " when or_last.
void aw_positional_names(char *out, size_t cap, unsigned flags, int or_last);
