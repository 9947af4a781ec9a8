// form_nsa.c: Native Sparse Attention (Yuan et al. 2025) as a registry row (docs/attention-forms.md
// section 4e; kernel src/attention/nsa.c), causal. Three branches per head read the past: one key and
// value per complete block (compressed: the block's means, or with compress 'mlp' a learned MLP over
// its keys plus a position embedding, pe, wk1, wk2, wv1, wv2), the blocks chosen by the compressed branch's
// weights (selected, shared by the heads of a K/V group) and the last `window` keys; gates from the
// sublayer input mix them, W (3 H, C) and b (3 H) as nn.Linear(C, 3 H) keeps and initialises them,
// row 3h + 0, 1, 2 the compressed, selected and window gate of head h (fla's layout). The forward
// saves the gates, each branch's output and log-sum-exp and the selected blocks (linear in T); the
// backward takes that selection as fixed. Generation keeps every key and value and the complete
// blocks' keys and values, and runs the forward's row (nsa_row) on them.
#include "form_layer.h"
#include "forms.h"
#include "layers.h"

#include "../attention/nsa.h"
#include "../kernels/size.h"
#include "../kernels/status.h"
#include "tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const COMPRESS[] = {"mean", "mlp", NULL};
static const aw_form_option OPTIONS[] = {
    {"blockSize", AW_OPTION_INT, 1, 4096, NULL, NULL, "nsa_block",
     "the block length: the compressed branch's means and the selection's unit; it divides maxLen (default: 4, or "
     "the largest divisor of maxLen below 4)"},
    {"topBlocks", AW_OPTION_INT, 1, 4096, NULL, "2", "nsa_top",
     "the blocks selected by importance besides block 0, the current and the previous block"},
    {"window", AW_OPTION_INT, 1, 4096, NULL, "8", "nsa_window", "the sliding window branch's width: the last w keys"},
    {"compress", AW_OPTION_CHOICE, 0, 0, COMPRESS, "mean", "nsa_compress",
     "how a block becomes one key and value: their means, or a learned MLP over its keys plus a position embedding"},
};
enum { N_OPTIONS = sizeof OPTIONS / sizeof OPTIONS[0] };

// The sequence is cut into whole blocks: blockSize divides maxLen (unset: 4, or the largest divisor of maxLen
// below it).
static int finish(const aw_form *form, aw_form_values *v, size_t max_len) {
    if (!aw_option_is_set(form, v, "blockSize")) {
        size_t b = max_len < 4 ? max_len : 4;
        while (b > 1 && max_len % b) b--;
        snprintf(v->text[aw_option_find(form, "blockSize")], AW_OPTION_TEXT, "%zu", b ? b : 1);
    }
    const long long b = aw_option_int(form, v, "blockSize");
    if (max_len % (size_t)b)
        return aw_fail(AW_ERR_ARG, "attentionOptions.blockSize (%lld) must divide maxLen (%zu): the sequence is cut "
                                   "into whole blocks", b, max_len);
    return AW_OK;
}

typedef struct {
    aw_nsa_desc ds;
} nsa_own;

#define DESC(f) (&((nsa_own *)(f)->own)->ds)

// The gates' floats, W (3H, C) and b (3H), which come first; the learned compression's follow.
static size_t gate_floats(const aw_attn_form *f) { return 3 * f->H * (f->C + 1); }
static size_t param_floats(const aw_attn_form *f) {
    return gate_floats(f) + (DESC(f)->mean ? 0 : nsa_mlp_floats(DESC(f)));
}

// The learned compression's weights (or gradients) in a block of the form's parameters.
static aw_nsa_mlp mlp_in(const aw_attn_form *f, float *block) {
    aw_nsa_mlp w;
    nsa_mlp_at(&w, block + gate_floats(f), DESC(f));
    return w;
}

// kb, vb (nb, C) from k, v (T, C): the blocks' means or their learned compression
static void compress(const aw_attn_form *f, float *kb, float *vb, const float *k, const float *v, size_t T,
                     float *scratch) {
    const aw_nsa_desc *ds = DESC(f);
    if (ds->mean) {
        nsa_block_means(kb, vb, k, v, T, ds);
    } else {
        const aw_nsa_mlp w = mlp_in(f, f->params);
        nsa_block_mlp(kb, vb, k, v, T, &w, scratch, ds);
    }
}

static size_t compress_scratch_floats(const aw_attn_form *f) { return DESC(f)->mean ? 0 : nsa_mlp_scratch_floats(DESC(f)); }

static int init(aw_attn_form *f, const aw_form_setup *su) {
    nsa_own *o = calloc(1, sizeof *o);
    if (!o) return AW_ERR_NOMEM;
    f->own = o;
    const size_t C = f->C, H = f->H, KH = su->kv_heads && su->kv_heads < H ? su->kv_heads : H;
    o->ds = (aw_nsa_desc){C, H, H / KH, (size_t)aw_option_int(f->form, su->opts, "blockSize"),
                          (size_t)aw_option_int(f->form, su->opts, "topBlocks"),
                          (size_t)aw_option_int(f->form, su->opts, "window"), 1.0f / sqrtf((float)(C / H)),
                          aw_option_word(f->form, su->opts, "compress") == 0};
    const size_t d = C / H, in = aw_size_mul(o->ds.block, d);
    const size_t n = aw_size_add(aw_size_mul(3 * H, aw_size_add(C, 1)), o->ds.mean ? 0 : nsa_mlp_floats(&o->ds));
    if (n == AW_SIZE_INVALID || !(f->params = aw_alloc_floats(n))) return AW_ERR_NOMEM;
    f->owns_params = 1;
    // nn.Linear's initialisation, uniform in +-1/sqrt(fan_in): the gates' W and b (fan_in C), the
    // compression's first layers and the position embedding (bs d), its second layers (d)
    aw_rng rng;
    aw_rng_seed(&rng, ((uint64_t)su->seed << 20) ^ 0x45Au);
    aw_nsa_mlp w = {0};
    if (!o->ds.mean) w = mlp_in(f, f->params);
    const struct { float *p; size_t size, fan_in; } parts[] = {
        {f->params, gate_floats(f), C}, {w.pe, in, in}, {w.wk1, d * in, in}, {w.wk2, d * d, d}, {w.wv1, d * in, in},
        {w.wv2, d * d, d},
    };
    for (size_t p = 0; p < (o->ds.mean ? 1 : sizeof parts / sizeof parts[0]); p++)
        for (size_t i = 0; i < parts[p].size; i++)
            parts[p].p[i] = (2.0f * aw_rng_uniform(&rng) - 1.0f) / sqrtf((float)parts[p].fan_in);
    return AW_OK;
}

static void release(aw_attn_form *f) { attn_form_release_params(f); }

// A trainable tensor of (rows, cols), or of (rows) when cols is 0 (then without weight decay: a bias).
static void tensor(aw_form_tensor *t, const char *name, size_t rows, size_t cols) {
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->size = rows * (cols ? cols : 1), t->dims[0] = rows, t->dims[1] = cols, t->rank = cols ? 2 : 1;
    t->trainable = 1, t->no_decay = cols == 0;
}

// The gates' weight and bias; with compress 'mlp' the compression's pe, wk1, wk2, wv1, wv2 after them.
static size_t tensors(const aw_attn_form *f, aw_form_tensor *out, size_t cap) {
    const size_t G = 3 * f->H, d = f->C / f->H, in = DESC(f)->block * d;
    aw_form_tensor t[7];
    size_t n = 0;
    tensor(&t[n++], "weight", G, f->C);
    tensor(&t[n++], "bias", G, 0);
    if (!DESC(f)->mean) {
        tensor(&t[n++], "pe", DESC(f)->block, d);
        tensor(&t[n++], "wk1", d, in);
        tensor(&t[n++], "wk2", d, d);
        tensor(&t[n++], "wv1", d, in);
        tensor(&t[n++], "wv2", d, d);
    }
    for (size_t i = 0; i < n && i < cap; i++) out[i] = t[i];
    return n;
}

static void bind(aw_attn_form *f, float *params, float *grads) { attn_form_bind_params(f, params, grads, param_floats(f)); }

// g (T, 3H) = sigmoid(x W^T + b)
static void gates(float *g, const aw_attn_form *f, const float *x, size_t T) {
    const size_t G = 3 * f->H;
    attn_form_project(g, x, f->params, f->params + G * f->C, T, f->C, G);
    for (size_t i = 0; i < T * G; i++) g[i] = aw_sigmoidf(g[i]);
}

// saved: the gates g (T, 3H), the branches' outputs (T, 3, C), their log-sum-exps (T, H, 3) and the
// selected blocks (T, H, S)
static size_t saved_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    const size_t H = f->H, per_row = 3 * H + 3 * f->C + 3 * H + H * nsa_max_selected(DESC(f));
    return aw_size_mul(T, per_row);
}

typedef struct {
    float *g, *branch, *lse, *sel;
} saved_parts;

static saved_parts parts_of(const aw_attn_form *f, float *saved, size_t T) {
    const size_t H = f->H;
    saved_parts p;
    p.g = saved, p.branch = p.g + T * 3 * H, p.lse = p.branch + T * 3 * f->C, p.sel = p.lse + T * H * 3;
    return p;
}

// work: the gates' gradients (T, 3H), the blocks' keys and values and their gradients (4 of (T / bs,
// C)), the compression's scratch
static size_t work_floats(const aw_attn_form *f, size_t T, size_t Tk) {
    (void)Tk;
    return aw_size_add(aw_size_add(aw_size_mul3(3, T, f->H), aw_size_mul3(4, nsa_blocks(DESC(f), T), f->C)),
                       compress_scratch_floats(f));
}

static int forward(aw_attn_form *f, float *out, float *att, float *saved, const float *x, const float *q,
                   const float *k, const float *v, size_t T, size_t Tk) {
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"nsa\" is self-attention only (%zu queries, %zu keys)", T, Tk);
    const aw_nsa_desc *ds = DESC(f);
    const size_t C = f->C, H = f->H, nb = nsa_blocks(ds, T);
    // kb, vb (nb, C); the gates (T, 3H) when nothing is saved; one row's scratch, then the compression's
    const size_t n = aw_size_add(aw_size_add(aw_size_add(aw_size_mul3(2, nb, C), saved ? 0 : aw_size_mul3(3, T, H)),
                                             nsa_row_scratch_floats(ds, T)), compress_scratch_floats(f));
    float *work = aw_alloc_floats(n);
    if (!work) return aw_fail(AW_ERR_NOMEM, "NSA: out of memory for %zu positions", T);
    float *kb = work, *vb = kb + nb * C, *g = saved ? saved : vb + nb * C, *scratch = saved ? vb + nb * C : g + T * 3 * H;
    const saved_parts sp = saved ? parts_of(f, saved, T) : (saved_parts){g, NULL, NULL, NULL};
    gates(g, f, x, T);
    compress(f, kb, vb, k, v, T, scratch + nsa_row_scratch_floats(ds, T));
    if (att) memset(att, 0, H * T * Tk * sizeof(float));
    const size_t S = nsa_max_selected(ds);
    for (size_t t = 0; t < T; t++)
        nsa_row(out + t * C, saved ? sp.branch + t * 3 * C : NULL, saved ? sp.lse + t * H * 3 : NULL,
                saved ? sp.sel + t * H * S : NULL, att ? att + t * Tk : NULL, T * Tk, q + t * C, k, v, kb, vb,
                g + t * 3 * H, t, scratch, ds);
    free(work);
    return AW_OK;
}

static int backward(aw_attn_form *f, float *dx, float *dq, float *dk, float *dv, float *work, const float *dout,
                    const float *saved, const float *x, const float *q, const float *k, const float *v, size_t T,
                    size_t Tk) {
    (void)Tk;
    if (!saved) return aw_fail(AW_ERR_STATE, "NSA: backward without what its forward saved");
    const aw_nsa_desc *ds = DESC(f);
    const size_t C = f->C, H = f->H, G = 3 * H, nb = nsa_blocks(ds, T), S = nsa_max_selected(ds);
    const saved_parts sp = parts_of(f, (float *)saved, T);
    float *dz = work, *kb = dz + T * G, *vb = kb + nb * C, *dkb = vb + nb * C, *dvb = dkb + nb * C;
    float *scratch = dvb + nb * C;
    memset(dz, 0, T * G * sizeof(float));
    memset(dkb, 0, 2 * nb * C * sizeof(float));
    compress(f, kb, vb, k, v, T, scratch);
    for (size_t t = 0; t < T; t++)
        nsa_row_backward(dq + t * C, dk, dv, dkb, dvb, dz + t * G, dout + t * C, sp.branch + t * 3 * C,
                         sp.lse + t * H * 3, sp.sel + t * H * S, q + t * C, k, v, kb, vb, sp.g + t * G, t, ds);
    if (ds->mean) nsa_block_means_backward(dk, dv, dkb, dvb, T, ds);
    else {
        const aw_nsa_mlp w = mlp_in(f, f->params), gw = f->grads ? mlp_in(f, f->grads) : (aw_nsa_mlp){0};
        nsa_block_mlp_backward(dk, dv, f->grads ? &gw : NULL, dkb, dvb, k, v, T, &w, scratch, ds);
    }
    for (size_t i = 0; i < T * G; i++) dz[i] *= sp.g[i] * (1.0f - sp.g[i]); // g = sigmoid(z)
    attn_form_project_backward(dx, f->grads, f->grads ? f->grads + G * C : NULL, dz, x, f->params, T, C, G);
    return AW_OK;
}

// The keys each query's selected blocks and window read: sel (H, T, Tk) 1 or 0.
static int selection(aw_attn_form *f, float *sel, const float *x, const float *q, const float *k, const float *v,
                     size_t T, size_t Tk) {
    if (T != Tk) return aw_fail(AW_ERR_ARG, "attention \"nsa\" is self-attention only (%zu queries, %zu keys)", T, Tk);
    const aw_nsa_desc *ds = DESC(f);
    const size_t C = f->C, H = f->H, S = nsa_max_selected(ds), bs = ds->block;
    const size_t ns = saved_floats(f, T, Tk);
    float *mem = aw_alloc_floats(aw_size_add(ns, aw_size_mul(T, C)));
    if (!mem) return aw_fail(AW_ERR_NOMEM, "NSA: out of memory for the selection of %zu positions", T);
    const int st = forward(f, mem + ns, NULL, mem, x, q, k, v, T, Tk);
    const saved_parts sp = parts_of(f, mem, T);
    if (!st) {
        memset(sel, 0, H * T * Tk * sizeof(float));
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                float *row = sel + (h * T + t) * Tk;
                const float *blocks = sp.sel + (t * H + h) * S;
                for (size_t r = 0; r < S && blocks[r] >= 0.0f; r++)
                    for (size_t j = (size_t)blocks[r] * bs; j < ((size_t)blocks[r] + 1) * bs && j <= t; j++) row[j] = 1.0f;
                for (size_t j = t + 1 > ds->window ? t + 1 - ds->window : 0; j <= t; j++) row[j] = 1.0f;
            }
    }
    free(mem);
    return st;
}

// state: keys and values (L, C) each, the complete blocks' keys and values (L / bs, C) each, the gates
// (3H), one row's scratch and the compression's
static size_t step_floats(const aw_attn_form *f, size_t L) {
    const aw_nsa_desc *ds = DESC(f);
    return aw_size_add(aw_size_add(aw_size_mul3(2, L, f->C), aw_size_mul3(2, nsa_blocks(ds, L), f->C)),
                       aw_size_add(3 * f->H, aw_size_add(nsa_row_scratch_floats(ds, L), compress_scratch_floats(f))));
}

static int step(aw_attn_form *f, float *state, size_t L, float *out, const float *x, const float *q, const float *k,
                const float *v, size_t pos) {
    const aw_nsa_desc *ds = DESC(f);
    const size_t C = f->C, nb = nsa_blocks(ds, L), bs = ds->block;
    if (pos >= L) return aw_fail(AW_ERR_ARG, "generation: position %zu is past maxLen = %zu", pos, L);
    float *kc = state, *vc = kc + L * C, *kb = vc + L * C, *vb = kb + nb * C, *g = vb + nb * C, *scratch = g + 3 * f->H;
    memcpy(kc + pos * C, k, C * sizeof(float));
    memcpy(vc + pos * C, v, C * sizeof(float));
    if ((pos + 1) % bs == 0) { // block pos / bs is complete: its key and value, as the forward takes them
        const size_t b = pos / bs;
        compress(f, kb + b * C, vb + b * C, kc + b * bs * C, vc + b * bs * C, bs, scratch + nsa_row_scratch_floats(ds, L));
    }
    gates(g, f, x, 1);
    nsa_row(out, NULL, NULL, NULL, NULL, 0, q, kc, vc, kb, vb, g, pos, scratch, ds);
    return AW_OK;
}

const aw_form AW_FORM_NSA_DESC = {
    .name = "nsa",
    .family = "nsa",
    .cross = "softmax",
    .words = {
        .label = "NSA (native sparse attention)",
        .formula = "blocks of b keys; block j complete: j b + b − 1 ≤ t\n"
            "cmp: p = softmax_j(s q_t·K̄_j), o = Σ p_j V̄_j\n"
            "     K̄_j, V̄_j: the block's means, or an MLP\n"
            "slc: softmax over the keys of block 0, the\n"
            "     current and previous block and the top-n\n"
            "     blocks by p (summed over the K/V group)\n"
            "win: softmax over the last w keys\n"
            "o_t = g_cmp o_cmp + g_slc o_slc + g_win o_win\n"
            "g = sigmoid(x W + b), 3 per head\n"
            "Shown: the weight each key gets in o_t.",
        .summary = "Three readings of the past mixed by gates the token chooses: a coarse one over one key and "
            "value per complete block (their means, or a small learned compression), a fine one over the few blocks that coarse reading found most "
            "important (plus the first, current and previous block), and a sliding window over the last keys. "
            "Each query reads O(n / b + (k + 3) b + w) keys (k = topBlocks) instead of n, and the block choice is shared by the "
            "heads of a K/V group so a kernel loads each chosen block once. The choice itself gets no gradient; "
            "everything around it trains.",
        .cost = "O(n (n / b + k b + w) d)",
        .paper = "Native Sparse Attention: Hardware-Aligned and Natively Trainable Sparse Attention. Yuan et al., "
            "2025.",
        .url = "https://arxiv.org/abs/2502.11089",
        .year = 2025,
        .signed_scores = 0,
    },
    .flags = AW_FORM_CAUSAL | AW_FORM_STEP | AW_FORM_USES_QK | AW_FORM_USES_X | AW_FORM_PARAMS | AW_FORM_SELECTS,
    .options = OPTIONS,
    .n_options = N_OPTIONS,
    .finish = finish,
    .init = init,
    .release = release,
    .param_group = "nsa",
    .tensors = tensors,
    .bind = bind,
    .work_floats = work_floats,
    .saved_floats = saved_floats,
    .forward = forward,
    .backward = backward,
    .step_floats = step_floats,
    .step = step,
    .selection = selection,
};
