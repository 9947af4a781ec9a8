// form_synthesizer.c: the Synthesizer variants as registry rows (docs/attention-forms.md
// section 3). Each sublayer owns a synthesizer layer whose parameters live in the model's arena
// (bound after the arena is carved). A synthesizer makes square position-to-position logits, so
// it serves self-attention only: an encoder-decoder built with it cross-attends with softmax.
// The layer keeps only the last sequence's activations: the backward redoes that sequence's
// forward first (into the work buffer).
#include "forms.h"

#include "../attention/synthesizer.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// The mixture's component kinds in the order of enum aw_synth_variant, "mixture" left out.
static const char *const KINDS[] = {"dense", "random", "factorized-dense", "factorized-random", "dot", NULL};
static int kind_of(int word) { return word == 4 ? AW_SYNTH_DOT : word; }

static const aw_form_option OPTIONS[] = {
    {"trainable", AW_OPTION_BOOL, 0, 0, NULL, "true", "synth_trainable",
     "false keeps the random tables R (random, factorized-random) fixed at their initial values"},
    {"a", AW_OPTION_INT, 1, 4096, NULL, NULL, "synth_a",
     "factorized-dense: the logits are (a, b) outer products, a * b = maxLen (default: the most square split)"},
    {"b", AW_OPTION_INT, 1, 4096, NULL, NULL, "synth_b", "factorized-dense: see a"},
    {"k", AW_OPTION_INT, 1, 4096, NULL, "8", "synth_k", "factorized-random: the rank of R1 R2^T"},
    {"components", AW_OPTION_LIST, 0, 0, KINDS, "random,dot", "synth_components",
     "synth:mixture: the kinds it mixes with learned weights"},
};
enum { O_TRAINABLE, O_A, O_B, O_K, O_COMPONENTS, N_OPTIONS };

// The options that apply to this variant (its components', for a mixture); a * b = maxLen.
static int finish(const aw_form *form, aw_form_values *v, size_t max_len) {
    const int mixture = form->variant == AW_SYNTH_MIXTURE;
    int fd = form->variant == AW_SYNTH_FACTORIZED_DENSE, fr = form->variant == AW_SYNTH_FACTORIZED_RANDOM;
    if (!mixture && (v->given & (1u << O_COMPONENTS)))
        return aw_fail(AW_ERR_ARG, "attentionOptions.components applies to \"synth:mixture\" only");
    if (!mixture) v->text[O_COMPONENTS][0] = '\0';
    int items[AW_OPTION_MAX_ITEMS];
    const size_t n = aw_option_list(form, v, "components", items);
    for (size_t i = 0; i < n; i++)
        fd |= kind_of(items[i]) == AW_SYNTH_FACTORIZED_DENSE, fr |= kind_of(items[i]) == AW_SYNTH_FACTORIZED_RANDOM;
    if (fd && !v->text[O_A][0] && !v->text[O_B][0]) { // the most square split of maxLen
        size_t a = (size_t)sqrt((double)max_len);
        a = a ? a : 1;
        while (a > 1 && max_len % a) a--;
        snprintf(v->text[O_A], AW_OPTION_TEXT, "%zu", a);
        snprintf(v->text[O_B], AW_OPTION_TEXT, "%zu", max_len / a);
    }
    const long long a = aw_option_int(form, v, "a"), b = aw_option_int(form, v, "b");
    if (fd && (long long)max_len != a * b)
        return aw_fail(AW_ERR_ARG, "factorized-dense needs attentionOptions.a * b = maxLen (%zu), got %lld * %lld",
                       max_len, a, b);
    if (!fd) v->text[O_A][0] = v->text[O_B][0] = '\0';
    if (!fr) v->text[O_K][0] = '\0';
    return AW_OK;
}

#define SYNTH(f) ((aw_synthesizer *)(f)->own)

static int init(aw_attn_form *f, const aw_form_setup *setup) {
    const aw_form *form = f->form;
    aw_synthesizer_config sc = {0};
    sc.variant = form->variant, sc.d = setup->C, sc.max_len = setup->L, sc.heads = setup->H, sc.seed = setup->seed;
    sc.trainable = (int)aw_option_int(form, setup->opts, "trainable");
    sc.a = (size_t)aw_option_int(form, setup->opts, "a"), sc.b = (size_t)aw_option_int(form, setup->opts, "b");
    sc.k = (size_t)aw_option_int(form, setup->opts, "k");
    int items[AW_OPTION_MAX_ITEMS];
    const size_t n = aw_option_list(form, setup->opts, "components", items);
    if (n > AW_SYNTH_MAX_COMPONENTS) return aw_fail(AW_ERR_ARG, "attentionOptions.components: too many");
    sc.n_components = sc.variant == AW_SYNTH_MIXTURE ? n : 0;
    for (size_t i = 0; i < sc.n_components; i++) sc.components[i] = kind_of(items[i]);
    f->uses_qk = 0;
    for (size_t c = 0; c < sc.n_components; c++) f->uses_qk |= sc.components[c] == AW_SYNTH_DOT;
    aw_synthesizer *s = NULL;
    const int st = synthesizer_create(&s, &sc);
    f->own = s;
    return st;
}

static void release(aw_attn_form *f) {
    synthesizer_destroy(SYNTH(f));
    f->own = NULL;
}

static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const aw_synthesizer *s = SYNTH(f);
    for (size_t i = 0; i < s->n_tensors && i < cap; i++) {
        snprintf(out[i].name, sizeof out[i].name, "%s", s->tensors[i].name);
        out[i].size = s->tensors[i].size;
        const size_t h = s->cfg.heads, rows = s->tensors[i].rows, cols = s->tensors[i].cols;
        out[i].rank = rows == 1 ? 2 : 3; // (heads, cols) for a vector per head, else (heads, rows, cols)
        out[i].dims[0] = h, out[i].dims[1] = rows == 1 ? cols : rows, out[i].dims[2] = rows == 1 ? 0 : cols;
        // fixed random tables (R, R1, R2 when not trainable) get no gradient
        const char *leaf = s->tensors[i].name;
        for (const char *p = leaf; *p; p++)
            if (*p == '.') leaf = p + 1;
        out[i].trainable = s->cfg.trainable || leaf[0] != 'R';
    }
    return s->n_tensors;
}

static void bind(aw_attn_form *f, float *params, float *grads) { synthesizer_bind(SYNTH(f), params, grads); }

static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    return aw_size_mul(T, f->C); // the recomputed forward's output
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    (void)saved; // the layer keeps the last sequence's activations itself (the backward redoes it)
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"%s\" is self-attention only (%zu queries, %zu keys)",
                                f->form->name, T, Tk);
    return synthesizer_forward(SYNTH(f), out, att, x, v, f->uses_qk ? q : NULL, f->uses_qk ? k : NULL, T, f->C, f->C,
                               f->causal);
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)saved;
    const float *qq = f->uses_qk ? q : NULL, *kk = f->uses_qk ? k : NULL;
    int st = forward(f, work, NULL, NULL, x, q, k, v, T, Tk); // the layer saved only the last sequence
    if (st) return st;
    return synthesizer_backward(SYNTH(f), dx, dv, f->uses_qk ? dq : NULL, f->uses_qk ? dk : NULL, dout, x, v, qq, kk);
}

// state: the keys (L, C) and values (L, C) so far, then the step's scratch.
static size_t step_floats(const aw_attn_form *f, size_t L) {
    return aw_size_add(aw_size_mul3(2, L, f->C), synthesizer_step_floats(SYNTH(f)));
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    const size_t C = f->C;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past maxLen = %zu", pos, L);
    float *kc = state, *vc = state + L * C, *scratch = vc + L * C;
    if (f->uses_qk) memcpy(kc + pos * C, k, C * sizeof(float));
    memcpy(vc + pos * C, v, C * sizeof(float));
    const int st = synthesizer_step(SYNTH(f), out, scratch, x, f->uses_qk ? q : NULL, kc, vc, pos, C, f->uses_qk ? C : 0);
    return st == AW_ERR_NONFINITE ? aw_fail(st, "a synthesized logit is NaN or infinite") : st;
}

#define SYNTH_FORM(NAME, VARIANT, FLAGS, ...)                                                                           \
    {                                                                                                              \
        .name = NAME, .family = "synthesizer", .cross = "softmax",                                                 \
        .flags = (FLAGS) | AW_FORM_CAUSAL | AW_FORM_NONCAUSAL | AW_FORM_PARAMS | AW_FORM_STEP | AW_FORM_FIXED_LENGTH,      \
        .variant = VARIANT,  \
        .options = OPTIONS, .n_options = N_OPTIONS, .finish = finish,                                              \
        .init = init, .release = release, .param_group = "synth", .tensors = tensors, .bind = bind,                \
        .work_floats = work_floats, .forward = forward, .backward = backward, .step_floats = step_floats,          \
        .step = step, .words = __VA_ARGS__                                                                         \
    }

const aw_form AW_FORM_SYNTH_DENSE_DESC = SYNTH_FORM("synth:dense", AW_SYNTH_DENSE, AW_FORM_USES_X,
    {
        .label = "Synthesizer, dense",
        .formula = "B = relu(X W₁ + b₁) W₂ + b₂\n"
            "W₁: d × d,  W₂: d × L  (first n columns)\n"
            "A = softmax(B)\n"
            "O = A V,  V = X W_v\n"
            "\n"
            "No token-to-token dot product: row i\n"
            "of A comes from token i alone.",
        .summary = "No query-key comparison at all: each token's own vector goes through a small MLP that writes "
            "its whole row of attention logits. It can learn position patterns that depend on the token; "
            "the paper finds it competitive with softmax on several tasks, though it cannot compare two "
            "tokens. A layer fixes its longest length L when created.",
        .cost = "O(n² d)",
        .paper = "Synthesizer: Rethinking Self-Attention in Transformer Models. Tay et al., 2020.",
        .url = "https://arxiv.org/abs/2005.00743",
        .year = 2020,
        .signed_scores = 0,
    });
const aw_form AW_FORM_SYNTH_RANDOM_DESC = SYNTH_FORM("synth:random", AW_SYNTH_RANDOM, 0,
    {
        .label = "Synthesizer, random",
        .formula = "B = R    (R: L × L, random;\n"
            "          top-left n × n block)\n"
            "A = softmax(B)\n"
            "O = A V\n"
            "\n"
            "A does not depend on the input: what\n"
            "to attend to depends on position only.",
        .summary = "A learned (or fixed) table of logits, one per pair of positions, shared by every input: "
            "attention by position alone. It is enough for tasks like reverse, where what to attend to "
            "depends on position only, but it cannot find a token by its content (recall). It skips Q Kᵀ "
            "and any projection of x: what remains is the row softmax and A V.",
        .cost = "O(n² d)",
        .paper = "Synthesizer: Rethinking Self-Attention in Transformer Models. Tay et al., 2020.",
        .url = "https://arxiv.org/abs/2005.00743",
        .year = 2020,
        .signed_scores = 0,
    });
const aw_form AW_FORM_SYNTH_FACTORIZED_DENSE_DESC =
    SYNTH_FORM("synth:factorized-dense", AW_SYNTH_FACTORIZED_DENSE, AW_FORM_USES_X,
    {
        .label = "Synthesizer, factorized dense",
        .formula = "B_a: dense head (n × a)\n"
            "B_b: dense head (n × b),  a · b = L\n"
            "B[i, j] = B_a[i, ⌊j/b⌋] · B_b[i, j mod b]\n"
            "A = softmax(B)\n"
            "O = A V\n"
            "\n"
            "Here L = 128 = 8 · 16 (a = 8, b = 16).",
        .summary = "The dense Synthesizer with its row of L logits built from two shorter heads (a · b = L) "
            "multiplied together: fewer parameters for long maximum lengths. It has the same limits as the "
            "dense form: position patterns that depend on the token, and no comparison of two tokens.",
        .cost = "O(n² d)",
        .paper = "Synthesizer: Rethinking Self-Attention in Transformer Models. Tay et al., 2020.",
        .url = "https://arxiv.org/abs/2005.00743",
        .year = 2020,
        .signed_scores = 0,
    });
const aw_form AW_FORM_SYNTH_FACTORIZED_RANDOM_DESC = SYNTH_FORM("synth:factorized-random", AW_SYNTH_FACTORIZED_RANDOM, 0,
    {
        .label = "Synthesizer, factorized random",
        .formula = "B = R₁ R₂ᵀ    (R₁, R₂: L × k, random;\n"
            "              here k = 8)\n"
            "A = softmax(B)\n"
            "O = A V\n"
            "\n"
            "A low-rank attention pattern that does\n"
            "not depend on the input.",
        .summary = "The random table written as a product R₁ R₂ᵀ of two thin matrices: a low-rank position "
            "pattern with far fewer parameters than a full L × L table. Like the random form, it attends "
            "by position alone and cannot look a token up by its content.",
        .cost = "O(n² d)",
        .paper = "Synthesizer: Rethinking Self-Attention in Transformer Models. Tay et al., 2020.",
        .url = "https://arxiv.org/abs/2005.00743",
        .year = 2020,
        .signed_scores = 0,
    });
// a mixture reads X and Q, K when its components do (aw_attn_form.uses_qk)
const aw_form AW_FORM_SYNTH_MIXTURE_DESC = SYNTH_FORM("synth:mixture", AW_SYNTH_MIXTURE, AW_FORM_USES_X | AW_FORM_USES_QK,
    {
        .label = "Synthesizer, mixture",
        .formula = "B = Σ_i α_i B_i   over synthesizer\n"
            "    logits and Q Kᵀ · s\n"
            "α = softmax(w), w learnable (Σ α = 1)\n"
            "A = softmax(B)\n"
            "O = A V\n"
            "\n"
            "Here: random R mixed with Q Kᵀ · s.",
        .summary = "Adds weighted logits of several forms, here the random table and the dot product Q Kᵀ, with "
            "weights α it learns: position patterns plus content lookup. In the README's experiment this "
            "restores recall to 100%.",
        .cost = "O(n² d)",
        .paper = "Synthesizer: Rethinking Self-Attention in Transformer Models. Tay et al., 2020.",
        .url = "https://arxiv.org/abs/2005.00743",
        .year = 2020,
        .signed_scores = 0,
    });
