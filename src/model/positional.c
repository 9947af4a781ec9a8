// positional.c: the table of positional encodings (positional.h). Each row is what one encoding
// does to the model: a table added to the embeddings (sinusoidal, learned), a rotation of the
// self-attention's queries and keys (rope), a bias on its scores (alibi), or nothing (none).
// Adding an encoding: its functions here (or in a file of its own) and one row in AW_POSITIONALS.
#include "positional.h"

#include "../kernels/size.h"
#include "../kernels/status.h"
#include "forms.h"
#include "layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- sinusoidal: PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C)), added ----

static int sinusoidal_tables(aw_positional_tables *t, const aw_positional_cfg *p) {
    t->sin = aw_alloc_floats(aw_size_mul(p->max_len, p->width));
    if (!t->sin) return aw_fail(AW_ERR_NOMEM, "out of memory for the sinusoidal positions' table");
    sinusoidal_encoding(t->sin, p->max_len, p->width);
    return AW_OK;
}

static const float *sinusoidal_embed(const aw_positional_tables *t, const float *params) {
    (void)params;
    return t->sin;
}

// ---- learned: an (L, C) table of parameters wpe, added --------------------------------------------

static const float *learned_embed(const aw_positional_tables *t, const float *params) {
    (void)t;
    return params;
}

// ---- rope: each head's adjacent column pairs turn by the angle p theta^(-2i/hd) ------------------

// The names of the rows that neither rotate queries and keys nor bias scores: what fits any form.
static int plain(const aw_positional *p) { return !p->rotate_qk && !p->score_bias; }

static void names_where(char *out, size_t cap, int (*keep)(const aw_positional *), unsigned flags, int or_last) {
    size_t n = 0, k = 0;
    for (int i = 0; i < AW_POSITIONAL_COUNT; i++)
        n += (!keep || keep(&AW_POSITIONALS[i])) && (AW_POSITIONALS[i].flags & flags) == flags;
    out[0] = '\0';
    for (int i = 0; i < AW_POSITIONAL_COUNT; i++) {
        const aw_positional *p = &AW_POSITIONALS[i];
        if ((keep && !keep(p)) || (p->flags & flags) != flags) continue;
        const size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s\"%s\"", k == 0 ? "" : or_last && k == n - 1 ? " or " : ", ", p->name);
        k++;
    }
}

void aw_positional_names(char *out, size_t cap, unsigned flags, int or_last) {
    names_where(out, cap, NULL, flags, or_last);
}

static int rope_check(const aw_positional_cfg *p, const aw_form *f) {
    if (p->head_dim % 2)
        return aw_fail(AW_ERR_ARG, "positional \"rope\" turns pairs of a head's columns: the head width %s must be "
                                   "even, got %d", p->head_dim_given ? "headDim" : "dModel / heads", (int)p->head_dim);
    if (!(f->flags & AW_FORM_USES_QK)) {
        char list[128];
        names_where(list, sizeof list, plain, 0, 1);
        return aw_fail(AW_ERR_ARG, "positional \"rope\" rotates queries and keys, and attention \"%s\" reads "
                                   "neither: use positional %s with it", f->name, list);
    }
    return AW_OK;
}

static int rope_tables(aw_positional_tables *t, const aw_positional_cfg *p) {
    const size_t L = p->max_len, hd = p->head_dim, half = hd / 2;
    t->rope_cos = aw_alloc_floats(aw_size_mul(L, half ? half : 1));
    t->rope_sin = aw_alloc_floats(aw_size_mul(L, half ? half : 1));
    if (!t->rope_cos || !t->rope_sin) return aw_fail(AW_ERR_NOMEM, "out of memory for the rotary positions' table");
    t->head_dim = hd;
    rope_table(t->rope_cos, t->rope_sin, L, hd, p->rope_theta, p->rope_llama3[0] > 0.0 ? p->rope_llama3 : NULL);
    return AW_OK;
}

static void rope_rotate(const aw_positional_tables *t, float *x, size_t B, size_t T, size_t pos0, size_t width,
                        int inverse) {
    rope_apply(x, t->rope_cos, t->rope_sin, B, T, pos0, width, t->head_dim, inverse);
}

// ---- alibi: -m_h |i - j| on every self-attention score, m_h = 2^(-8h/H) for heads h = 1..H ----------

static int alibi_check(const aw_positional_cfg *p, const aw_form *f) {
    (void)p;
    if (!(f->flags & AW_FORM_SCORE_BIAS))
        return aw_fail(AW_ERR_ARG, "positional \"alibi\" adds a distance bias to softmax scores, and attention \"%s\" "
                                   "has none to bias: use attention \"softmax\" with it, or positional \"rope\"", f->name);
    return AW_OK;
}

static void alibi_slopes(float *slopes, size_t H) {
    for (size_t h = 0; h < H; h++) slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)H);
}

// ---- the table ------------------------------------------------------------------------------------
// The order is the listing's (lib.positionals) and the index config.positional holds.
const aw_positional AW_POSITIONALS[AW_POSITIONAL_COUNT] = {
    [AW_POS_SINUSOIDAL] = {
        .name = "sinusoidal", .label = "sinusoidal",
        .words = "Adds a fixed table to each token's embedding: position p's row holds sines and cosines of p at "
                 "wavelengths from 2 pi to 10000 2 pi, so nearby positions look alike and any offset is a rotation.",
        .paper = "Vaswani et al. 2017, Attention Is All You Need (section 3.5)",
        .tables = sinusoidal_tables, .embed = sinusoidal_embed},
    [AW_POS_LEARNED] = {
        .name = "learned", .label = "learned",
        .words = "Adds a trained vector per position (wpe, maxLen rows) to each token's embedding, as GPT-2 does: "
                 "the model learns what each position means, and knows no position past maxLen.",
        .paper = "Gehring et al. 2017, Convolutional Sequence to Sequence Learning; Radford et al. 2019 (GPT-2)",
        .flags = AW_POSITIONAL_PARAMS, .embed = learned_embed},
    [AW_POS_ROPE] = {
        .name = "rope", .label = "rotary (RoPE)",
        .words = "Turns each pair of a head's query and key columns by an angle proportional to the position, so "
                 "a query-key score depends on their distance only; nothing is added to the embeddings.",
        .paper = "Su et al. 2021, RoFormer: Enhanced Transformer with Rotary Position Embedding",
        .flags = AW_POSITIONAL_BY_SLOT, .check = rope_check, .tables = rope_tables, .rotate_qk = rope_rotate},
    [AW_POS_ALIBI] = {
        .name = "alibi", .label = "ALiBi",
        .words = "Subtracts m_h |i - j| from every self-attention score, a fixed slope per head (2^(-8h/H)): "
                 "far keys weigh less, and the model reads sequences longer than it was trained on.",
        .paper = "Press, Smith, Lewis 2022, Train Short, Test Long: Attention with Linear Biases (ALiBi)",
        .flags = AW_POSITIONAL_BY_SLOT, .check = alibi_check, .score_bias = alibi_slopes},
    [AW_POS_NONE] = {
        .name = "none", .label = "none",
        .words = "No positions at all: a causal model still tells them apart through its mask (each position sees "
                 "a different number of tokens); a non-causal one sees a bag of tokens.",
        .paper = "Haviv et al. 2022, Transformer Language Models without Positional Encodings Still Learn "
                 "Positional Information",
        .flags = AW_POSITIONAL_BY_SLOT},
};

const aw_positional *aw_positional_at(int i) {
    return i >= 0 && i < AW_POSITIONAL_COUNT ? &AW_POSITIONALS[i] : NULL;
}

const aw_positional *aw_positional_find(const char *name, int *index) {
    for (int i = 0; i < AW_POSITIONAL_COUNT; i++)
        if (strcmp(AW_POSITIONALS[i].name, name) == 0) {
            if (index) *index = i;
            return &AW_POSITIONALS[i];
        }
    return NULL;
}

void aw_positional_free(aw_positional_tables *t) {
    free(t->sin);
    free(t->rope_cos);
    free(t->rope_sin);
    memset(t, 0, sizeof *t);
}
