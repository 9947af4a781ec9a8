// quantize.c: a decoder's per-token matrices in 8 or 4 bits (formats and kernels: src/kernels/quant.h).
// model_quantize turns q, k, v, o, the FFN's matrices and the classifier into rows of a format,
// in place: each matrix's values and scales take the room its float32 copy leaves in the arena,
// the other tensors pack before them, and the arena shrinks, so the heap never holds both. The
// embedding table stays float32 for the lookup (a tied classifier gets a quantized copy of it); a
// q4_0 model keeps its classifier in q8_0 (AW_QFORMATS[].classifier). The forward, generation and
// streaming read the quantized matrices through model_linear (quant_model.c); training, saving and
// the tools that read weights directly refuse such a model.
// model_create_quantized makes such a model from the start for a loader (loadHuggingFace's quantize,
// and its dtype 'bf16': the same matrices kept as BF16, in their float32 layout, with no scales):
// the matrices are reserved before the float32 arena is allocated, and the loader fills them one at a
// time (model_quantize_fill), so the whole model is never held in float32.
#include "transformer.h"

#include "config.h"

#include "../kernels/quant.h"
#include "../kernels/size.h"
#include "../kernels/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant_model.h"

// One matrix to quantize: src float32, `in` inputs and `out` outputs, stored (in, out) (x W, the
// model's linear layers) or (out, in) (the tied embedding); its tensor leaves the arena unless it stays.
typedef struct {
    const float *src;
    size_t in, out;
    int in_out;
    const char *name;
    aw_tensor_info *tensor; // NULL: the tensor stays (the tied wte)
    const aw_qmat **slot;
    int format;             // the model's format, or its row's classifier format for the classifier
} qsource;

// The matrices to quantize, named in names. creating (model_create_quantized): the floats are not
// bound yet, so a matrix is listed when its tensor exists, with no source (model_quantize_fill gives it).
static size_t list_sources(aw_model *m, qsource *s, char names[][48], int format, int creating) {
    const aw_model_config *c = &m->cfg;
    const size_t C = (size_t)c->d_model, A = model_attn_cols(c), KC = model_kv_cols(m), F = (size_t)c->d_ff;
    size_t n = 0;
    for (int l = 0; l < c->layers; l++) {
        aw_attn_weights *a = &m->w.dec[l].self;
        aw_ffn_weights *f = &m->w.dec[l].ffn;
        const struct { float *w; const char *leaf, *sub; size_t in, out; const aw_qmat **slot; } rows[] = {
            {a->wq, "wq", "self", C, A, &a->qq}, {a->wk, "wk", "self", C, KC, &a->qk}, {a->wv, "wv", "self", C, KC, &a->qv},
            {a->wo, "wo", "self", A, C, &a->qo}, {f->w1, "w1", "ffn", C, F, &f->q1}, {f->w2, "w2", "ffn", F, C, &f->q2},
            {f->w3, "w3", "ffn", C, F, &f->q3}};
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            snprintf(names[n], 48, "dec.%d.%s.%s", l, rows[r].sub, rows[r].leaf);
            aw_tensor_info *t = (aw_tensor_info *)model_find_tensor(m, names[n]);
            if (!rows[r].w && !(creating && t)) continue;
            s[n] = (qsource){rows[r].w, rows[r].in, rows[r].out, 1, names[n], t, rows[r].slot, format};
            n++;
        }
    }
    const int cls = AW_QFORMATS[format].classifier;
    snprintf(names[n], 48, "%s", c->tie ? "wte" : "out.w");
    if (c->tie) s[n] = (qsource){m->w.wte, C, (size_t)c->vocab, 0, names[n], NULL, &m->w.q_out, cls};
    else s[n] = (qsource){m->w.w_out, C, (size_t)c->vocab, 1, names[n], (aw_tensor_info *)model_find_tensor(m, "out.w"),
                          &m->w.q_out, cls};
    return n + 1;
}

// The group: the asked one checked against every matrix's input width, or the format's default
// (halved until it divides them all, as llama2.c's export.py does).
static int choose_group(const aw_qformat *f, size_t asked, const qsource *s, size_t n, size_t *group) {
    if (f->fixed_group && asked && asked != f->fixed_group)
        return aw_fail(AW_ERR_ARG, "quantize: groupSize must be %zu for %s (ggml's block of %zu values), got %zu",
                       f->fixed_group, f->name, f->fixed_group, asked);
    if (!f->fixed_group && asked && (asked % 16 || asked > AW_QGROUP_MAX))
        return aw_fail(AW_ERR_ARG, "quantize: groupSize must be a multiple of 16 from 16 to %d for %s, got %zu",
                       AW_QGROUP_MAX, f->name, asked);
    size_t g = f->fixed_group ? f->fixed_group : asked ? asked : f->default_group;
    for (;;) {
        size_t i = 0;
        while (i < n && s[i].in % g == 0) i++;
        if (i == n) break;
        if (asked || f->fixed_group || g <= 16)
            return aw_fail(AW_ERR_ARG, "quantize: groupSize %zu does not divide the rows of %s (%zu inputs); %s needs a "
                                       "group that divides dModel, dFF and heads x headDim", g, s[i].name, s[i].in, f->name);
        g /= 2;
    }
    *group = g;
    return AW_OK;
}

// Quantizes rows (outputs) first .. end - 1 of s into q: the (in, out) layout is read 16 columns at a
// time into t (16 in).
static void quantize_rows(aw_qmat *q, const qsource *s, float *t, size_t first, size_t end) {
    const aw_qformat *f = &AW_QFORMATS[q->format];
    if (q->format == AW_QF_BF16) { // the float32 layout kept: columns first .. end of (in, out), or rows of (out, in)
        if (s->in_out)
            for (size_t i = 0; i < s->in; i++)
                f->quantize_row(q->q + 2 * (i * s->out + first), NULL, s->src + i * s->out + first, end - first, 0);
        else f->quantize_row(q->q + 2 * first * s->in, NULL, s->src + first * s->in, (end - first) * s->in, 0);
        return;
    }
    const size_t ng = s->in / q->group, rb = f->row_bytes(s->in);
    for (size_t j0 = first; j0 < end; j0 += 16) {
        const size_t nj = end - j0 < 16 ? end - j0 : 16;
        for (size_t jj = 0; jj < nj; jj++) {
            const float *row = s->src + (j0 + jj) * s->in;
            if (s->in_out) {
                for (size_t i = 0; i < s->in; i++) t[jj * s->in + i] = s->src[i * s->out + j0 + jj];
                row = t + jj * s->in;
            }
            f->quantize_row(q->q + (j0 + jj) * rb, q->s + (j0 + jj) * ng, row, s->in, q->group);
        }
    }
}

// Where each matrix's values and scales sit in the block of them all: from at_q[i] its values,
// from at_s[i] its scales, 16-byte aligned pieces in the order of the list; at_q[count] the block's size.
typedef struct {
    size_t at_q[QMATS + 1], at_s[QMATS];
} qlayout;

// Points matrix i at its values and scales, laid out as in the block, from at.
static void quant_place(aw_quant *q, size_t i, uint8_t *at, const qlayout *lay) {
    q->mats[i].q = at;
    q->mats[i].s = (float *)(at + lay->at_s[i] - lay->at_q[i]);
}

// What every way of quantizing checks, then the matrices, the group and the layout of the block of
// their values and scales (the caller places it: nothing quantized yet); src receives the sources.
static int quant_new(aw_model *m, const char *format, size_t group, int creating, aw_quant **out, qsource *src,
                     qlayout *lay) {
    *out = NULL;
    const int fid = aw_qformat_find(format);
    if (fid == AW_QF_NONE)
        return aw_fail(AW_ERR_ARG, "quantize: format must be one of \"q8_0\", \"q4_0\", got \"%.40s\"", format);
    const int bf16 = fid == AW_QF_BF16;
    if (bf16 && !creating)
        return aw_fail(AW_ERR_ARG, "quantize: \"bf16\" is not a quantization of a loaded model (its float32 values "
                                   "would be rounded to 8 bits of mantissa); load a BF16 checkpoint with "
                                   "loadHuggingFace({ ..., dtype: 'bf16' }) to keep it in 16 bits");
    if (m->quant)
        return aw_fail(AW_ERR_STATE, "quantize: this model is already quantized to %s; load it again to quantize it "
                                     "another way", AW_QFORMATS[m->quant->format].name);
    if (m->cfg.arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "quantize: quantizes a decoder-only transformer's matrices, and this model's arch is "
                                   "\"%s\"", AW_ARCH_NAMES[m->cfg.arch]);
    if (!m->inference)
        return aw_fail(AW_ERR_STATE, "quantize: needs a model made for inference ({ training: false }, or loaded with "
                                     "it); this one keeps gradients and AdamW state (a model whose attention form has "
                                     "parameters of its own keeps them even with training: false)");
    const aw_qformat *f = &AW_QFORMATS[fid];
    aw_quant *q = calloc(1, sizeof *q);
    if (!q) return aw_fail(AW_ERR_NOMEM, "out of memory for quantize");
    const size_t n = list_sources(m, src, q->names, fid, creating);
    size_t G = 0;
    int st = bf16 ? AW_OK : choose_group(f, group, src, n, &G);
    if (st) {
        quant_free(q);
        return st;
    }
    size_t bytes = 0, widest = 0;
    for (size_t i = 0; i < n; i++) {
        lay->at_q[i] = bytes;
        const aw_qformat *fi = &AW_QFORMATS[src[i].format];
        bytes = aw_size_add(bytes, aw_size_add(aw_size_mul(src[i].out, fi->row_bytes(src[i].in)), 15) / 16 * 16);
        lay->at_s[i] = bytes;
        if (!bf16) bytes = aw_size_add(bytes, aw_size_add(aw_size_mul3(src[i].out, src[i].in / G, sizeof(float)), 15) / 16 * 16);
        widest = src[i].in > widest ? src[i].in : widest;
    }
    lay->at_q[n] = bytes;
    // bf16 needs no activation workspace (its kernels read x as float32); 16 bytes keep the check below one
    q->work = bytes == AW_SIZE_INVALID ? NULL : aw_alloc(bf16 ? 16 : aw_qact_bytes(widest, G), 1);
    if (!q->work) {
        quant_free(q);
        return aw_fail(AW_ERR_NOMEM, "out of memory: quantize needs %.1f MiB for the %s matrices", (double)bytes / 1048576.0,
                       f->name);
    }
    q->format = fid, q->group = G, q->count = n, q->bytes = bytes, q->fp32_bytes = (double)m->n_params * sizeof(float);
    for (size_t i = 0; i < n; i++) {
        q->mats[i] = (aw_qmat){src[i].format, src[i].out, src[i].in, G, NULL, NULL};
        q->in_out[i] = (unsigned char)src[i].in_out, q->slot[i] = src[i].slot;
    }
    *out = q;
    return AW_OK;
}

// In place: the arena ends as [the float32 tensors left, packed] [the block of the matrices], cut to
// that size, so the heap never holds the float32 model and its quantized copy at once. With K the
// floats left, P0 those before the first matrix (wte, wpe: they never move), the arena in bytes:
//   1. in the walk's order, each float tensor moves down to a cursor and each matrix is quantized
//      into a buffer of one matrix, then copied down to the cursor (over its own floats, read by
//      then): every write lands below what is still to be read, and the pieces follow the list's
//      order (the walk's);
//   2. the float tensors after P0 go to a stash (the arena's free tail, else an allocation), the
//      matrices move up to qstart + at_q[i], last first (each moves up, onto nothing unread), and
//      the stash lands after P0;
//   3. a tied classifier's copy is quantized from wte, which stayed, into its place after the others
//      (its own allocation when what the matrices free cannot hold it), and the arena shrinks
//      (realloc keeps the block and frees its tail).
// The values and scales are those quantize_rows writes from the same floats in any order.
int model_quantize(aw_model *m, const char *format, size_t group) {
    qsource src[QMATS];
    qlayout lay;
    aw_quant *q;
    m->revision++; // the weights change (or may, part-way): open generation sessions may not continue
    int st = quant_new(m, format, group, 0, &q, src, &lay);
    if (st) return st;
    if ((st = model_check_params(m))) { // the weights it would quantize are finite
        quant_free(q);
        return st;
    }
    const size_t n = q->count, nt = m->n_tensors, arena = m->n_params * sizeof(float);
    int mat_of[AW_MAX_TENSORS]; // each tensor's matrix, or -1 for a tensor that stays float32
    for (size_t k = 0; k < nt; k++) mat_of[k] = -1;
    size_t widest = 0, largest = 0, first = nt; // first: the first matrix's tensor
    for (size_t i = 0; i < n; i++) {
        const size_t k = src[i].tensor ? (size_t)(src[i].tensor - m->tensors) : nt;
        if (k < nt) mat_of[k] = (int)i, first = k < first ? k : first;
        widest = src[i].in > widest ? src[i].in : widest;
        if (k < nt && lay.at_q[i + 1] - lay.at_q[i] > largest) largest = lay.at_q[i + 1] - lay.at_q[i];
    }
    size_t kept = 0, after = 0; // float32 bytes left, and those after the first matrix
    for (size_t k = 0; k < nt; k++) {
        const size_t b = model_tensor_size(&m->tensors[k]) * sizeof(float);
        if (mat_of[k] < 0) kept += b, after += k > first ? b : 0;
    }
    // the block's matrices fit where their floats were (a block takes at most 1.25 bytes a weight and
    // 30 of padding, a weight 4 bytes); the classifier's copy of a tied wte has no floats of its own:
    // when what the others free cannot hold it, it takes an allocation of its own
    const int tied = src[n - 1].tensor == NULL;
    const size_t qstart = (kept + 15) / 16 * 16, copy = tied ? lay.at_q[n] - lay.at_q[n - 1] : 0;
    const int own_copy = tied && qstart + lay.at_q[n] > arena;
    const size_t end = qstart + lay.at_q[n] - (own_copy ? copy : 0);
    const int own_stash = end + after > arena;
    uint8_t *own = own_copy ? aw_alloc(copy, 1) : NULL, *stash = own_stash ? aw_alloc(after, 1) : NULL;
    uint8_t *buf = aw_alloc(largest, 1);
    float *t = aw_alloc_floats(aw_size_mul(16, widest));
    if (!buf || !t || (own_copy && !own) || (own_stash && !stash)) {
        free(buf), free(t), free(stash), free(own);
        quant_free(q);
        return aw_fail(AW_ERR_NOMEM, "out of memory: quantize needs %.1f MiB of scratch",
                       (double)(largest + 16 * widest * sizeof(float) + (own_stash ? after : 0) + (own_copy ? copy : 0)) /
                           1048576.0);
    }
    uint8_t *base = (uint8_t *)m->params;
    size_t at[AW_MAX_TENSORS], c = 0; // 1: each tensor's place in the packed sequence
    for (size_t k = 0; k < nt; k++) {
        const int i = mat_of[k];
        at[k] = c;
        if (i < 0) {
            const size_t b = model_tensor_size(&m->tensors[k]) * sizeof(float);
            memmove(base + c, base + m->tensors[k].offset * sizeof(float), b);
            c += b;
            continue;
        }
        quant_place(q, i, buf, &lay);
        quantize_rows(&q->mats[i], &src[i], t, 0, src[i].out);
        memcpy(base + c, buf, lay.at_q[i + 1] - lay.at_q[i]);
        c += lay.at_q[i + 1] - lay.at_q[i];
    }
    free(buf);
    if (!stash) stash = base + end; // 2
    size_t s = 0;
    for (size_t k = first + 1; k < nt; k++) {
        if (mat_of[k] < 0) {
            const size_t b = model_tensor_size(&m->tensors[k]) * sizeof(float);
            memcpy(stash + s, base + at[k], b);
            s += b;
        }
    }
    for (size_t k = nt; k-- > 0;)
        if (mat_of[k] >= 0)
            memmove(base + qstart + lay.at_q[mat_of[k]], base + at[k], lay.at_q[mat_of[k] + 1] - lay.at_q[mat_of[k]]);
    memcpy(base + kept - after, stash, after);
    if (own_stash) free(stash);
    if (tied) { // 3
        quant_place(q, n - 1, own ? own : base + qstart + lay.at_q[n - 1], &lay);
        quantize_rows(&q->mats[n - 1], &src[n - 1], t, 0, src[n - 1].out);
    }
    free(t);
    q->mem = own; // NULL: every matrix sits in the arena
    float *shrunk = realloc(m->params, end);
    if (shrunk) base = (uint8_t *)shrunk; // else the block stays whole
    for (size_t i = 0; i < n; i++) {
        if (src[i].tensor) src[i].tensor->quantized = 1;
        if (!own || i < n - 1) quant_place(q, i, base + qstart + lay.at_q[i], &lay);
    }
    model_bind_packed(m, (float *)base);
    m->quant = q;
    quant_bind(m); // the walk left their float pointers NULL
    return AW_OK;
}

int model_create_quantized(aw_model **out, const aw_model_config *cfg, const char *format, size_t group) {
    int st = model_create_layout(out, cfg, AW_CREATE_UNINITIALISED);
    if (st) return st;
    // the matrices' values and scales reserved before the arena is made: their tensors leave it
    qsource src[QMATS];
    qlayout lay;
    aw_quant *q;
    if (!(st = quant_new(*out, format, group, 1, &q, src, &lay)) && !(q->mem = aw_alloc(q->bytes, 1))) {
        st = aw_fail(AW_ERR_NOMEM, "out of memory: quantize needs %.1f MiB for the %s matrices",
                     (double)q->bytes / 1048576.0, AW_QFORMATS[q->format].name);
        quant_free(q);
    }
    if (st) {
        model_destroy(*out);
        *out = NULL;
        return st;
    }
    for (size_t i = 0; i < q->count; i++) {
        quant_place(q, i, q->mem + lay.at_q[i], &lay);
        if (src[i].tensor) src[i].tensor->quantized = 1;
    }
    (*out)->quant = q;
    return model_create_arena(out, AW_CREATE_UNINITIALISED);
}

int model_quantize_fill(aw_model *m, size_t i, const float *src, size_t first, size_t rows) {
    aw_quant *q = m->quant;
    m->revision++; // the weights change: open generation sessions may not continue
    if (!q || i >= q->count)
        return aw_fail(AW_ERR_ARG, "quantize: matrix %zu: the model has %zu quantized matrices", i, q ? q->count : 0);
    if (first > q->mats[i].rows || rows > q->mats[i].rows - first)
        return aw_fail(AW_ERR_ARG, "quantize: rows %zu .. %zu of matrix %s, which has %zu", first, first + rows,
                       q->names[i], q->mats[i].rows);
    const aw_tensor_info *t = model_find_tensor(m, q->names[i]);
    if (!src && (!t || t->quantized))
        return aw_fail(AW_ERR_ARG, "quantize: matrix %s has no float32 tensor in the model; give its values", q->names[i]);
    const aw_qmat *mat = &q->mats[i];
    qsource s = {src ? src : model_tensor_data(m, t), mat->cols, mat->rows, q->in_out[i], q->names[i], NULL, NULL, mat->format};
    float *tmp = aw_alloc_floats(aw_size_mul(16, mat->cols));
    if (!tmp) return aw_fail(AW_ERR_NOMEM, "out of memory: quantize needs %zu floats of scratch", aw_size_mul(16, mat->cols));
    quantize_rows(&q->mats[i], &s, tmp, first, first + rows);
    free(tmp);
    return AW_OK;
}
