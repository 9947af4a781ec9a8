// positional.h: the positional encodings as a table, one row per encoding (docs/attention-forms.md
// section 5, "How to add a positional encoding"). The model, generation, streaming, the config
// parser, checkpoints and the JS listing (lib.positionals) read the rows; none names an encoding.
// A row reads only its sizes and options (aw_positional_cfg) and its own tables, not the model.
#pragma once

#include <stddef.h>

struct aw_form;

enum aw_positional_flag {
    AW_POSITIONAL_PARAMS = 1u << 0,  // has parameters: an (L, C) table wpe, trained with the model
    AW_POSITIONAL_BY_SLOT = 1u << 1, // positions a rolling cache's slots can stand for: streams past maxLen
};

// What a row reads of the model, which fills it from its config: the sizes and the encoding's own options.
typedef struct aw_positional_cfg {
    size_t max_len, width, head_dim; // L positions, C = d_model (the embeddings' width), each head's width hd
    int head_dim_given;              // 1: hd is the config's headDim, 0: dModel / heads (for messages)
    double rope_theta;               // rope: the base
    double rope_llama3[4];           // rope: Llama 3.1's scaling (factor, low_freq, high_freq, original_len); factor 0: none
} aw_positional_cfg;

// What a row's tables function builds and its embed and rotate_qk read (owned by the model:
// aw_positional_free).
typedef struct aw_positional_tables {
    float *sin;                 // (L, C) the sinusoid, or NULL
    float *rope_cos, *rope_sin; // (L, hd / 2) each: the rotation's angles, or NULL
    size_t head_dim;            // hd, the width rope_apply turns pairs in
} aw_positional_tables;

typedef struct aw_positional {
    const char *name;  // "rope": createModel's positional, checkpoints' metadata
    const char *label; // "rotary (RoPE)": a short name for a list
    const char *words; // what it does, for a learner
    const char *paper; // where it comes from
    unsigned flags;    // enum aw_positional_flag
    // AW_OK when the model's sizes fit the encoding (f: its attention form), else a message; NULL: always
    int (*check)(const aw_positional_cfg *p, const struct aw_form *f);
    // builds what embed and rotate_qk read into t (zeroed by the caller); NULL: nothing to build.
    int (*tables)(aw_positional_tables *t, const aw_positional_cfg *p);
    // the (L, C) table added to the token embeddings, row p at position p (params: the row's own
    // parameters, wpe, when it has AW_POSITIONAL_PARAMS, else NULL); NULL: nothing added
    const float *(*embed)(const aw_positional_tables *t, const float *params);
    // rotates the heads of x (B, T, width) in place, row t at position pos0 + t (inverse: back, the
    // backward's); NULL: queries and keys stay as they are
    void (*rotate_qk)(const aw_positional_tables *t, float *x, size_t B, size_t T, size_t pos0, size_t width, int inverse);
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
// Frees what a row's tables function built and zeroes t.
void aw_positional_free(aw_positional_tables *t);
