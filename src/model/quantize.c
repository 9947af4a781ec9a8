// quantize.c: a decoder's per-token matrices in 8 or 4 bits (formats and kernels: src/kernels/quant.h).
// model_quantize turns q, k, v, o, the FFN's matrices and the classifier into rows of a format,
// then moves every other tensor into a smaller arena (model_compact_params) so the float32 copies
// are really gone. The embedding table stays float32 for the lookup (a tied classifier gets a
// quantized copy of it); a q4_0 model keeps its classifier in q8_0 (AW_QFORMATS[].classifier). The
// forward, generation and streaming read the quantized matrices through model_linear (quant_model.c); training,
// saving and the tools that read weights directly refuse such a model.
// model_create_quantized makes such a model from the start for a loader (loadHuggingFace's quantize):
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

// What every way of quantizing checks, then the matrices, the group and one block for their values
// and scales (each matrix placed in it, nothing quantized yet); src receives the sources.
static int quant_new(aw_model *m, const char *format, size_t group, int creating, aw_quant **out, qsource *src) {
    *out = NULL;
    const int fid = aw_qformat_find(format);
    if (fid == AW_QF_NONE)
        return aw_fail(AW_ERR_ARG, "quantize: format must be one of \"q8_0\", \"q4_0\", got \"%.40s\"", format);
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
    int st = choose_group(f, group, src, n, &G);
    if (st) {
        quant_free(q);
        return st;
    }
    // one block: each matrix's values then its scales, 16-byte aligned pieces
    size_t bytes = 0, at_q[QMATS], at_s[QMATS], widest = 0;
    for (size_t i = 0; i < n; i++) {
        at_q[i] = bytes;
        const aw_qformat *fi = &AW_QFORMATS[src[i].format];
        bytes = aw_size_add(bytes, aw_size_add(aw_size_mul(src[i].out, fi->row_bytes(src[i].in)), 15) / 16 * 16);
        at_s[i] = bytes;
        bytes = aw_size_add(bytes, aw_size_add(aw_size_mul3(src[i].out, src[i].in / G, sizeof(float)), 15) / 16 * 16);
        widest = src[i].in > widest ? src[i].in : widest;
    }
    if (bytes != AW_SIZE_INVALID) q->mem = aw_alloc(bytes, 1), q->work = aw_alloc(aw_qact_bytes(widest, G), 1);
    if (!q->mem || !q->work) {
        quant_free(q);
        return aw_fail(AW_ERR_NOMEM, "out of memory: quantize needs %.1f MiB for the %s matrices", (double)bytes / 1048576.0,
                       f->name);
    }
    q->format = fid, q->group = G, q->count = n, q->bytes = bytes, q->fp32_bytes = (double)m->n_params * sizeof(float);
    for (size_t i = 0; i < n; i++) {
        q->mats[i] = (aw_qmat){src[i].format, src[i].out, src[i].in, G, q->mem + at_q[i], (float *)(q->mem + at_s[i])};
        q->in_out[i] = (unsigned char)src[i].in_out, q->slot[i] = src[i].slot;
    }
    *out = q;
    return AW_OK;
}

int model_quantize(aw_model *m, const char *format, size_t group) {
    qsource src[QMATS];
    aw_quant *q;
    int st = quant_new(m, format, group, 0, &q, src);
    if (st) return st;
    if ((st = model_check_params(m))) { // the weights it would quantize are finite
        quant_free(q);
        return st;
    }
    size_t widest = 0;
    for (size_t i = 0; i < q->count; i++) widest = src[i].in > widest ? src[i].in : widest;
    float *t = aw_alloc_floats(aw_size_mul(16, widest));
    if (!t) {
        quant_free(q);
        return aw_fail(AW_ERR_NOMEM, "out of memory: quantize needs %zu floats of scratch", aw_size_mul(16, widest));
    }
    for (size_t i = 0; i < q->count; i++) quantize_rows(&q->mats[i], &src[i], t, 0, src[i].out);
    free(t);
    for (size_t i = 0; i < q->count; i++)
        if (src[i].tensor) src[i].tensor->quantized = 1;
    if ((st = model_compact_params(m))) { // nothing moved: the float32 weights stay in use
        for (size_t i = 0; i < q->count; i++)
            if (src[i].tensor) src[i].tensor->quantized = 0;
        quant_free(q);
        return st;
    }
    m->quant = q;
    quant_bind(m); // the walk left their float pointers NULL
    return AW_OK;
}

int model_create_quantized(aw_model **out, const aw_model_config *cfg, const char *format, size_t group) {
    int st = model_create_layout(out, cfg, AW_CREATE_UNINITIALISED);
    if (st) return st;
    // the matrices' values and scales reserved before the arena is made: their tensors leave it
    qsource src[QMATS];
    aw_quant *q;
    if ((st = quant_new(*out, format, group, 1, &q, src))) {
        model_destroy(*out);
        *out = NULL;
        return st;
    }
    for (size_t i = 0; i < q->count; i++)
        if (src[i].tensor) src[i].tensor->quantized = 1;
    (*out)->quant = q;
    return model_create_arena(out, AW_CREATE_UNINITIALISED);
}

int model_quantize_fill(aw_model *m, size_t i, const float *src, size_t first, size_t rows) {
    aw_quant *q = m->quant;
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
