// api_model.c: the tiny Transformer (src/model) for the wrapper (wasm/model.js). A model is a
// handle (the aw_model pointer). A config is built field by field from the names users write
// (src/model/config.h): no positional arrays cross the boundary, and every bound and message is
// C's. Numbers that JS passes as sizes arrive as doubles, so 2^32 + 5 is seen as what it is.
// Metrics come back as float64 [loss, accuracy, grad_norm, count].
#include "api.h"

#include "../model/checkpoint.h"
#include "../model/config.h"
#include "../model/transformer.h"
#include "../kernels/kernels.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// A new config builder with the defaults; NULL when out of memory.
AW_API aw_config_builder *aw_config_new(void) {
    aw_clear_error();
    aw_config_builder *b = malloc(sizeof *b);
    if (b) config_builder_init(b);
    return b;
}

AW_API void aw_config_free(aw_config_builder *b) { free(b); }

// Sets one field by its name from its text (see config_builder_set).
AW_API int aw_config_set(aw_config_builder *b, const char *key, const char *value) {
    aw_clear_error();
    return api_done(config_builder_set(b, key, value));
}

// *handle = a new model from the builder's fields.
AW_API int aw_model_create(aw_model **handle, aw_config_builder *b) {
    aw_clear_error();
    aw_model_config c;
    *handle = NULL;
    const int st = config_builder_finish(b, &c);
    return api_done(st ? st : model_create(handle, &c));
}

// Checks the builder's fields as aw_model_create would, allocating nothing (loadHuggingFace checks a
// config.json before it reads any weights).
AW_API int aw_config_check(aw_config_builder *b) {
    aw_clear_error();
    aw_model_config c;
    return api_done(config_builder_finish(b, &c));
}

// inference = 1: parameters only (no gradients or AdamW state): a quarter of the memory;
// 2 (AW_CREATE_UNINITIALISED): parameters only, not initialised: the caller writes every one (loadHuggingFace).
AW_API int aw_model_create_ex(aw_model **handle, aw_config_builder *b, int32_t inference) {
    aw_clear_error();
    aw_model_config c;
    *handle = NULL;
    const int st = config_builder_finish(b, &c);
    if (!st && (inference < 0 || inference > AW_CREATE_UNINITIALISED)) return aw_fail(AW_ERR_ARG, "inference must be 0, 1 or 2");
    return api_done(st ? st : model_create_ex(handle, &c, inference));
}

// An inference model with its decoder matrices quantized from the start, every float left for the
// caller to write and every matrix to fill (aw_model_quantize_fill), as loadHuggingFace does with
// quantize: format "q8_0" or "q4_0"; group NaN: the format's default.
AW_API int aw_model_create_quantized(aw_model **handle, aw_config_builder *b, const char *format, double group) {
    aw_clear_error();
    aw_model_config c;
    *handle = NULL;
    if (!isnan(group) && !(group >= 1 && group <= 1 << 20 && group == floor(group)))
        return api_done(aw_fail(AW_ERR_ARG, "quantize: groupSize must be a positive integer, got %g", group));
    const int st = config_builder_finish(b, &c);
    return api_done(st ? st : model_create_quantized(handle, &c, format, isnan(group) ? 0 : (size_t)group));
}

// Fills rows first .. first + rows - 1 (outputs) of a model_create_quantized model's matrix i
// (aw_model_qmat's order) from src: the matrix's float32 values (in, out) for a linear layer; 0 for a
// tied classifier (from wte, once wte is written).
AW_API int aw_model_quantize_fill(aw_model *m, int32_t i, const float *src, int32_t first, int32_t rows) {
    aw_clear_error();
    if (i < 0 || first < 0 || rows < 0)
        return api_done(aw_fail(AW_ERR_ARG, "quantize: matrix %d, rows %d + %d: negative", (int)i, (int)first, (int)rows));
    return api_done(model_quantize_fill(m, (size_t)i, src, (size_t)first, (size_t)rows));
}

AW_API void aw_model_destroy(aw_model *m) { model_destroy(m); }

// The parameter tensors, for a reader that writes them in place (loadHuggingFace): their count,
// each one's name, and its place: out[0..7] = offset (floats into aw_model_params), rows, cols
// (as kept here: a linear layer's weight (in, out)), transposed (1: stored (out, in) in
// checkpoints), rank, and the checkpoint shape dims[0..2]. Writing through them is the caller's
// promise to write finite floats only; the forward checks them.
AW_API int32_t aw_model_tensor_count(const aw_model *m) { return (int32_t)m->n_tensors; }
AW_API const char *aw_model_tensor_name(const aw_model *m, int32_t i) {
    return i >= 0 && (size_t)i < m->n_tensors ? m->tensors[i].name : NULL;
}
AW_API int aw_model_tensor_info(const aw_model *m, int32_t i, double *out) {
    aw_clear_error();
    if (i < 0 || (size_t)i >= m->n_tensors) return aw_fail(AW_ERR_ARG, "tensor %d: the model has %zu", (int)i, m->n_tensors);
    const aw_tensor_info *t = &m->tensors[i];
    if (t->quantized) { // its floats are gone: whatever reads them (saveHuggingFace) is refused
        char what[64];
        snprintf(what, sizeof what, "reading tensor %s", t->name);
        return model_refuse_quantized(m, what);
    }
    out[0] = (double)t->offset, out[1] = (double)t->rows, out[2] = (double)t->cols, out[3] = t->transposed;
    out[4] = t->rank, out[5] = (double)t->dims[0], out[6] = (double)t->dims[1], out[7] = (double)t->dims[2];
    return AW_OK;
}
AW_API float *aw_model_params(aw_model *m) { return m->params; }

// The model's config as JSON into buf (cap bytes); returns the length it needs (without the NUL).
AW_API int32_t aw_model_config_json(const aw_model *m, char *buf, int32_t cap) {
    return (int32_t)config_json(&m->cfg, buf, cap > 0 ? (size_t)cap : 0);
}

AW_API double aw_model_parameter_count(const aw_model *m) { return (double)m->n_params; }

AW_API int aw_model_step_count(const aw_model *m) { return (int)m->step; }

// out (layers doubles): the floats generation keeps per decoder layer (model_generation_floats).
AW_API int aw_model_generation_floats(const aw_model *m, double *out) {
    aw_clear_error();
    return api_done(model_generation_floats(m, out));
}

// An integer size in [lo, hi] (NaN: the default def) from a JS number.
static int size_arg(const char *what, double v, double lo, double hi, double def, size_t *out) {
    if (isnan(v)) v = def;
    if (!(v >= lo && v <= hi) || v != floor(v))
        return aw_fail(AW_ERR_ARG, "%s must be an integer in [%.0f, %.0f], got %.17g", what, lo, hi, v);
    *out = (size_t)v;
    return AW_OK;
}

// The task spec from a name and JS numbers (NaN: the task's default). Defaults: length 16 and
// 10 symbols for copy/reverse/sort, 8 pairs of 20 symbols for recall, 4 digits for translate,
// min(64, maxLen) characters for chars, up to 12 of 24 symbols twice for repeat, 8 pairs of 20
// symbols for mqar.
static int task_spec(aw_task_spec *spec, const aw_model *m, const char *task, double length, double symbols) {
    const int t = task_find(task);
    if (t < 0)
        return aw_fail(AW_ERR_ARG, "task must be one of \"copy\", \"reverse\", \"sort\", \"recall\", \"translate\", "
                                   "\"chars\", \"repeat\", \"mqar\", got \"%.40s\"", task);
    static const double def_len[AW_TASK_COUNT] = {16, 16, 16, 8, 4, 64, 12, 8};
    static const double def_sym[AW_TASK_COUNT] = {10, 10, 10, 20, 0, 0, 24, 20};
    double dl = def_len[t];
    if (t == AW_TASK_CHARS && m && dl > m->cfg.max_len) dl = m->cfg.max_len;
    memset(spec, 0, sizeof *spec);
    spec->task = t;
    int st = size_arg("length", length, 1, 4096, dl, &spec->length);
    if (!st) st = size_arg("symbols", symbols, 0, 1 << 20, def_sym[t], &spec->symbols);
    return st ? st : task_check(spec);
}

// dims = [T, S] of the task for this model (the decoder and encoder positions).
AW_API int aw_model_task_dims(const aw_model *m, const char *task, double length, double symbols, int32_t *dims) {
    aw_clear_error();
    aw_task_spec spec;
    size_t T = 0, S = 0;
    int st = task_spec(&spec, m, task, length, symbols);
    if (!st) st = model_task_dims(m, &spec, &T, &S);
    dims[0] = (int32_t)T, dims[1] = (int32_t)S;
    return api_done(st);
}

static int train_config(aw_train_config *tc, const double *h) {
    *tc = (aw_train_config){(float)h[0], (float)h[1], (float)h[2], (float)h[3], (float)h[4], (float)h[5]};
    if (!(h[0] > 0)) return aw_fail(AW_ERR_ARG, "lr must be > 0, got %g", h[0]);
    if (!(h[1] >= 0 && h[1] < 1) || !(h[2] >= 0 && h[2] < 1))
        return aw_fail(AW_ERR_ARG, "beta1 and beta2 must be in [0, 1), got %g and %g", h[1], h[2]);
    if (!(h[3] > 0 && h[3] < 1)) return aw_fail(AW_ERR_ARG, "eps must be in (0, 1), got %g", h[3]);
    if (!(h[4] >= 0 && h[4] < 1e3)) return aw_fail(AW_ERR_ARG, "weightDecay must be in [0, 1000), got %g", h[4]);
    if (!(h[5] < 1e30)) return aw_fail(AW_ERR_ARG, "clip must be finite (<= 0: no clipping), got %g", h[5]);
    return AW_OK;
}

// A NaN or Infinity met inside a training step of a model that has taken steps: earlier updates
// made it (lr too high for the model: the weights grew until some sublayer overflowed), so the
// step says the training diverged and names lr, with the place it was met after that.
static int training_diverged(const aw_model *m, int st, double lr) {
    if (st != AW_ERR_NONFINITE || m->step == 0) return st;
    char inner[300];
    snprintf(inner, sizeof inner, "%s", aw_error_message());
    if (strncmp(inner, "the training diverged", 21) == 0) return st;
    aw_clear_error();
    return aw_fail(st, "the training diverged at lr = %g: after %ld steps, %s; create the model again or load a "
                       "checkpoint, then train with a lower lr or clip > 0", lr, (long)m->step, inner);
}

// One training step on a fresh batch; hyper = [lr, beta1, beta2, eps, weight_decay, clip];
// metrics = [loss, accuracy, grad_norm, count, side_loss] (side_loss: the forms' side losses, DSA's
// indexer KL; 0 for forms without one).
AW_API int aw_model_train_step(aw_model *m, const char *task, double length, double symbols, double batch,
                               const double *hyper, double *metrics) {
    aw_clear_error();
    aw_task_spec spec;
    aw_train_config tc;
    size_t B = 0;
    int st = task_spec(&spec, m, task, length, symbols);
    if (!st) st = size_arg("batchSize", batch, 1, 65536, 32, &B);
    if (!st) st = train_config(&tc, hyper);
    if (st) return api_done(st);
    aw_metrics mt = {0};
    const long before = m->step;
    st = model_train_step(m, &spec, B, &tc, &mt);
    metrics[0] = mt.loss, metrics[1] = mt.accuracy, metrics[2] = mt.grad_norm, metrics[3] = (double)mt.count, metrics[4] = mt.side_loss;
    if (st == AW_ERR_NONFINITE && m->step == before) st = training_diverged(m, st, (double)tc.lr);
    return api_done(st);
}

AW_API int aw_model_evaluate(aw_model *m, const char *task, double length, double symbols, double batch,
                             double batches, double seed, double *metrics) {
    aw_clear_error();
    aw_task_spec spec;
    size_t B = 0, nb = 0, sd = 0;
    int st = task_spec(&spec, m, task, length, symbols);
    if (!st) st = size_arg("batchSize", batch, 1, 65536, 64, &B);
    if (!st) st = size_arg("batches", batches, 1, 1 << 20, 8, &nb);
    if (!st) st = size_arg("seed", seed, 0, 4294967295.0, 12345, &sd);
    if (st) return api_done(st);
    aw_metrics mt = {0};
    st = model_evaluate(m, &spec, B, nb, sd, &mt);
    metrics[0] = mt.loss, metrics[1] = mt.accuracy, metrics[2] = 0.0, metrics[3] = (double)mt.count;
    if (!st && !isfinite(mt.loss))
        return aw_fail(AW_ERR_NONFINITE, "the model's loss is NaN or Infinity: its parameters have diverged");
    return api_done(st);
}

// lens = [source length, target length] of a task for this model (m may be NULL).
AW_API int aw_model_task_lengths(const aw_model *m, const char *task, double length, double symbols, int32_t *lens) {
    aw_clear_error();
    aw_task_spec spec;
    lens[0] = lens[1] = 0;
    const int st = task_spec(&spec, m, task, length, symbols);
    if (st) return api_done(st);
    lens[0] = (int32_t)task_src_len(&spec), lens[1] = (int32_t)task_tgt_len(&spec);
    return AW_OK;
}

// One example of a task: src (source length), tgt (target length); *real = the target tokens
// that carry meaning (translate pads with 0s). Drawn from a generator seeded by seed.
AW_API int aw_model_example(const aw_model *m, const char *task, double length, double symbols, double seed,
                            int32_t *src, int32_t *tgt, int32_t *real) {
    aw_clear_error();
    aw_task_spec spec;
    size_t sd = 0;
    int st = task_spec(&spec, m, task, length, symbols);
    if (!st) st = size_arg("seed", seed, 0, 4294967295.0, 1, &sd);
    if (st) return api_done(st);
    aw_rng rng;
    aw_rng_seed(&rng, sd);
    *real = (int32_t)task_example(src, tgt, &spec, &rng);
    return AW_OK;
}

// One forward pass over a single sequence: tokens (T), src (S, encoder-decoder only).
// logits (T, V); self_att (layers, H, T, T); cross_att (layers, H, T, S) and enc_att
// (layers, H, S, S) for encoder-decoder (else may be NULL). gru-attention: cross_att (T, S) the
// alignment weights (one layer, one head); gru: logits only.
AW_API int aw_model_forward(aw_model *m, const int32_t *tokens, int32_t T, const int32_t *src, int32_t S,
                            float *logits, float *self_att, float *cross_att, float *enc_att) {
    aw_clear_error();
    const int encdec = m->cfg.arch == AW_ARCH_ENCODER_DECODER, has_src = aw_arch_has_source(m->cfg.arch);
    if (T <= 0 || S < 0) return aw_fail(AW_ERR_ARG, "tokens must not be empty");
    m->keep_attention = 1; // every form's weights, for the caller (model_reserve carves room for them)
    int st = model_reserve(m, 1, (size_t)T, has_src ? (size_t)S : 0);
    if (st) {
        m->keep_attention = 0;
        return api_done(st);
    }
    memcpy(m->tokens, tokens, (size_t)T * sizeof(int32_t));
    for (int32_t i = 0; i < T; i++) m->targets[i] = -1;
    if (has_src) memcpy(m->src, src, (size_t)S * sizeof(int32_t));
    st = model_forward(m, NULL);
    m->keep_attention = 0;
    if (st) return api_done(st);
    const size_t V = (size_t)m->cfg.vocab, H = (size_t)m->cfg.heads, t = (size_t)T, s = (size_t)S;
    if (aw_find_nonfinite(m->a.logits, t * V) != t * V)
        return aw_fail(AW_ERR_NONFINITE, "the model's logits are NaN or Infinity: its parameters have diverged; "
                                         "create it again or load a checkpoint from before");
    memcpy(logits, m->a.logits, t * V * sizeof(float));
    // gru-attention: the alignment a_ij as the cross-attention of one layer with one head (T, S);
    // gru has none (its decoder reads one fixed context vector)
    if (m->cfg.arch == AW_ARCH_GRU_ATTENTION) memcpy(cross_att, m->a.rnn.att, t * s * sizeof(float));
    if (aw_arch_is_rnn(m->cfg.arch)) return AW_OK;
    for (int l = 0; l < m->cfg.layers; l++) {
        memcpy(self_att + (size_t)l * H * t * t, m->a.dec_self[l].att, H * t * t * sizeof(float));
        if (encdec) {
            memcpy(cross_att + (size_t)l * H * t * s, m->a.dec_cross[l].att, H * t * s * sizeof(float));
            memcpy(enc_att + (size_t)l * H * s * s, m->a.enc_attn[l].att, H * s * s * sizeof(float));
        }
    }
    return AW_OK;
}

// Which keys a sparse layer read (aw_sparse_probe, transformer.h), for one sequence of T tokens of a decoder:
// sel, dense and att (H, T, T) of decoder layer `layer`: its selection, the dense causal softmax of the same
// queries and keys, and its weights as the forward returns them.
AW_API int aw_model_sparse_reading(aw_model *m, const int32_t *tokens, int32_t T, int32_t layer, float *sel,
                                   float *dense, float *att) {
    aw_clear_error();
    if (m->cfg.arch != AW_ARCH_DECODER)
        return aw_fail(AW_ERR_ARG, "sparseReading reads a decoder's self-attention; this model is not a decoder");
    if (layer < 0 || layer >= m->cfg.layers)
        return aw_fail(AW_ERR_ARG, "layer must be an integer in [0, %d], got %d", (int)m->cfg.layers - 1, (int)layer);
    const aw_attn_form *f = &m->self_form[layer];
    if (!f->form->selection)
        return aw_fail(AW_ERR_ARG, "layer %d's attention \"%s\" reads every key its mask allows: sparseReading needs a "
                       "sparse form (one that selects what each query reads, such as nsa or dsa)", (int)layer, f->form->name);
    if (T <= 0 || T > m->cfg.max_len)
        return aw_fail(AW_ERR_ARG, "tokens must hold 1 to maxLen = %d tokens, got %d", (int)m->cfg.max_len, (int)T);
    aw_sparse_probe probe = {layer, sel, dense, 0};
    m->probe = &probe;
    m->keep_attention = 1;
    int st = model_reserve(m, 1, (size_t)T, 0);
    if (!st) {
        memcpy(m->tokens, tokens, (size_t)T * sizeof(int32_t));
        for (int32_t i = 0; i < T; i++) m->targets[i] = -1;
        st = model_forward(m, NULL);
    }
    m->keep_attention = 0;
    m->probe = NULL;
    if (st) return api_done(st);
    if (!probe.done) return aw_fail(AW_ERR_STATE, "sparseReading: layer %d was not read", (int)layer);
    const size_t H = (size_t)m->cfg.heads, t = (size_t)T;
    memcpy(att, m->a.dec_self[layer].att, H * t * t * sizeof(float));
    return AW_OK;
}

// topK keeps the k likeliest tokens: at most the vocabulary (0 keeps them all).
static int check_top_k(const aw_model *m, int32_t top_k) {
    if (top_k < 0 || top_k > m->cfg.vocab)
        return aw_fail(AW_ERR_ARG, "topK must be an integer in [0, vocab = %d] (0 = all), got %d", (int)m->cfg.vocab,
                       (int)top_k);
    return AW_OK;
}

// A rolling cache's sizes, named, before they become size_t (the rest: model_stream_check).
static int check_window(const aw_model *m, int32_t window, int32_t sinks) {
    if (window < 1)
        return aw_fail(AW_ERR_ARG, "window must be an integer in [1, maxLen = %d], got %d", (int)m->cfg.max_len, (int)window);
    if (sinks < 0) return aw_fail(AW_ERR_ARG, "sinks must be an integer >= 0, got %d", (int)sinks);
    return AW_OK;
}

// Generation (see model_generate): out (max_new), *n_out tokens written.
AW_API int aw_model_generate(aw_model *m, int32_t *out, int32_t *n_out, int32_t max_new, const int32_t *prompt,
                             int32_t np, const int32_t *src, int32_t ns, float temperature, int32_t top_k, uint32_t seed,
                             int32_t stop_token, int32_t use_cache) {
    aw_clear_error();
    if (max_new < 0 || np <= 0 || ns < 0) return aw_fail(AW_ERR_ARG, "generate: bad sizes");
    if (check_top_k(m, top_k)) return AW_ERR_ARG;
    size_t n = 0;
    const int st = model_generate(m, out, &n, (size_t)max_new, prompt, (size_t)np, src, (size_t)ns, temperature, top_k,
                                  seed, stop_token, use_cache);
    *n_out = (int32_t)n;
    return api_done(st);
}

// Generation in pieces (model_generation_begin / next / end): *handle = a session over m with
// generate's arguments (max_new: the most tokens it makes in all). The wrapper ends a model's sessions
// before it destroys the model.
AW_API int aw_generation_begin(aw_generation **handle, aw_model *m, int32_t max_new, const int32_t *prompt, int32_t np,
                               const int32_t *src, int32_t ns, float temperature, int32_t top_k, uint32_t seed,
                               int32_t stop_token, int32_t use_cache) {
    aw_clear_error();
    *handle = NULL;
    if (max_new < 0 || np <= 0 || ns < 0) return aw_fail(AW_ERR_ARG, "startGeneration: bad sizes");
    if (check_top_k(m, top_k)) return AW_ERR_ARG;
    return api_done(model_generation_begin(handle, m, (size_t)max_new, prompt, (size_t)np, src, (size_t)ns, temperature,
                                           top_k, seed, stop_token, use_cache));
}

// Up to count tokens into out; info[0] = how many, info[1] = 0 or why it ended (AW_GEN_STOP,
// AW_GEN_MAX_TOKENS, AW_GEN_MAX_LEN).
AW_API int aw_generation_next(aw_generation *g, int32_t *out, int32_t count, int32_t *info) {
    aw_clear_error();
    info[0] = 0, info[1] = 0;
    if (count < 0) return aw_fail(AW_ERR_ARG, "next: count must be an integer >= 0, got %d", (int)count);
    size_t n = 0;
    int ended = 0;
    const int st = model_generation_next(g, out, (size_t)count, &n, &ended);
    info[0] = (int32_t)n, info[1] = ended;
    return api_done(st);
}

AW_API void aw_generation_end(aw_generation *g) { model_generation_end(g); }

// Streaming past maxLen (src/model/stream.c): the losses of tokens (n) into losses (n - 1), and
// generation with a rolling cache of `window` positions keeping the first `sinks`.
AW_API int aw_model_stream_losses(aw_model *m, const int32_t *tokens, int32_t n, int32_t window, int32_t sinks,
                                  int32_t recompute, float *losses) {
    aw_clear_error();
    if (n < 0) return aw_fail(AW_ERR_ARG, "streamLosses: bad sizes");
    if (check_window(m, window, sinks)) return AW_ERR_ARG;
    return api_done(model_stream_losses(m, tokens, (size_t)n, (size_t)window, (size_t)sinks, recompute != 0, losses));
}

AW_API int aw_model_stream_generate(aw_model *m, int32_t *out, int32_t *n_out, int32_t max_new, const int32_t *prompt,
                                    int32_t np, int32_t window, int32_t sinks, float temperature, int32_t top_k,
                                    uint32_t seed, int32_t stop_token) {
    aw_clear_error();
    if (max_new < 0 || np <= 0) return aw_fail(AW_ERR_ARG, "generate: bad sizes");
    if (check_window(m, window, sinks) || check_top_k(m, top_k)) return AW_ERR_ARG;
    size_t n = 0;
    const int st = model_stream_generate(m, out, &n, (size_t)max_new, prompt, (size_t)np, (size_t)window, (size_t)sinks,
                                         temperature, top_k, seed, stop_token);
    *n_out = (int32_t)n;
    return api_done(st);
}

// *bytes = the size of the safetensors checkpoint (optim: with AdamW's state).
AW_API int aw_model_save_size(const aw_model *m, int32_t optim, int32_t *bytes) {
    aw_clear_error();
    size_t n = 0;
    const int st = checkpoint_size(m, optim != 0, &n);
    *bytes = (int32_t)(n > 0x7fffffff ? 0 : n);
    if (!st && n > 0x7fffffff) return aw_fail(AW_ERR_NOMEM, "the checkpoint would exceed 2 GiB");
    return api_done(st);
}

AW_API int aw_model_save(const aw_model *m, int32_t optim, uint8_t *buf, int32_t cap) {
    aw_clear_error();
    return cap < 0 ? aw_fail(AW_ERR_ARG, "save: negative capacity") : checkpoint_write(m, optim != 0, buf, (size_t)cap);
}

AW_API int aw_model_load(aw_model **handle, const uint8_t *buf, int32_t len) {
    aw_clear_error();
    *handle = NULL;
    return len < 0 ? aw_fail(AW_ERR_ARG, "load: negative length") : checkpoint_read(handle, buf, (size_t)len);
}

// training = 0: the parameters only (no gradients or optimizer state), for inference.
AW_API int aw_model_load_ex(aw_model **handle, const uint8_t *buf, int32_t len, int32_t training) {
    aw_clear_error();
    *handle = NULL;
    return len < 0 ? aw_fail(AW_ERR_ARG, "load: negative length") : checkpoint_read_ex(handle, buf, (size_t)len, !training);
}

AW_API int aw_model_inference(const aw_model *m) { return m->inference; }

// Generation picks ids below n only (n in [1, vocab]; vocab: every id again): a tokenizer with
// fewer ids than the checkpoint's padded vocabulary (Qwen2.5's 151,665 of 151,936).
AW_API int aw_model_set_sample_vocab(aw_model *m, int32_t n) {
    aw_clear_error();
    if (n < 1 || n > m->cfg.vocab)
        return aw_fail(AW_ERR_ARG, "sampleVocab must be an integer in [1, %d] (the model's vocabulary), got %d",
                       (int)m->cfg.vocab, (int)n);
    m->sample_vocab = (size_t)n;
    m->revision++; // what generation may pick changed: open generation sessions may not continue
    return AW_OK;
}

AW_API int32_t aw_model_sample_vocab(const aw_model *m) { return (int32_t)model_sample_vocab(m); }

// Quantizes the decoder's matrices (model_quantize): format "q8_0" or "q4_0"; group NaN: the format's default.
AW_API int aw_model_quantize(aw_model *m, const char *format, double group) {
    aw_clear_error();
    if (!isnan(group) && !(group >= 1 && group <= 1 << 20 && group == floor(group)))
        return api_done(aw_fail(AW_ERR_ARG, "quantize: groupSize must be a positive integer, got %g", group));
    return api_done(model_quantize(m, format, isnan(group) ? 0 : (size_t)group));
}

// out (4 doubles): the weights' bytes in float32, the bytes held now, the format id (0 float32), the group.
AW_API void aw_model_weight_bytes(const aw_model *m, double *out) { model_weight_bytes(m, out); }

// The chars tokenizer: token of a byte (0 when not in the charset), and the byte of a token.
AW_API int aw_model_char_token(int32_t c) { return c < 0 || c > 255 ? 0 : char_to_token((unsigned char)c); }
AW_API int aw_model_token_char(int32_t t) { return (unsigned char)token_to_char(t); }
AW_API int aw_model_chars_vocab(void) { return (int)chars_vocab(); }

// Finite-difference gradient check (src/model/gradcheck.c) on a random batch (B, T, S).
// out = [error, worst_tensor_error, checked, skipped, zero_grad_tensors, fixed_with_grad];
// names (80 bytes) = the worst tensor's name, then (at +40) the first zero-gradient tensor's.
// mutate (NULL or a tensor name): multiply that tensor's analytic gradient by factor first.
AW_API int aw_model_grad_check(aw_model *m, int32_t B, int32_t T, int32_t S, uint32_t seed, const char *mutate,
                               double factor, double *out, char *names) {
    aw_clear_error();
    if (B <= 0 || T <= 0 || S < 0) return aw_fail(AW_ERR_ARG, "gradientCheck: sizes must be positive");
    aw_grad_check gc;
    const int st = model_grad_check(m, (size_t)B, (size_t)T, (size_t)S, seed, mutate, factor, &gc);
    out[0] = gc.error, out[1] = gc.worst_tensor_error, out[2] = (double)gc.checked, out[3] = (double)gc.skipped;
    out[4] = (double)gc.zero_grad_tensors, out[5] = (double)gc.fixed_with_grad;
    memcpy(names, gc.worst_tensor, 40);
    memcpy(names + 40, gc.zero_grad_name, 40);
    return api_done(st);
}

// The built-in tasks, by index (the wrapper lists them from here).
AW_API int32_t aw_task_count(void) { return AW_TASK_COUNT; }
AW_API const char *aw_task_name(int32_t i) { return task_name(i); }

// ---- the caller's own batches -----------------------------------------------------------------

// Copies a batch of the caller's tokens into the model: tokens, targets (B, T), mask (B, T) or NULL
// (0 = no loss at that position), src (B, S) for an encoder-decoder; every id checked against the
// vocabulary, named [row][col] (a target of -1 is an Error too: the mask is how a position is left
// out; -1 in m->targets is the model's own internal mark for it). A mask that leaves no position
// in the loss is an Error (the loss would be 0 and no step could learn anything).
static int own_batch(aw_model *m, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                     const int32_t *src, double B, double T, double S) {
    size_t b = 0, t = 0, s = 0;
    if (T > m->cfg.max_len) return aw_fail(AW_ERR_ARG, "inputs rows have %.0f tokens, more than maxLen = %d", T, (int)m->cfg.max_len);
    if (S > m->cfg.max_len) return aw_fail(AW_ERR_ARG, "source rows have %.0f tokens, more than maxLen = %d", S, (int)m->cfg.max_len);
    int st = size_arg("the number of rows", B, 1, 65536, NAN, &b);
    if (!st) st = size_arg("the row length", T, 1, (double)m->cfg.max_len, NAN, &t);
    if (!st) st = size_arg("the source length", S, 0, (double)m->cfg.max_len, NAN, &s);
    if (st) return api_done(st);
    const int32_t V = m->cfg.vocab;
    for (size_t i = 0; i < b * t; i++) {
        if (tokens[i] < 0 || tokens[i] >= V)
            return aw_fail(AW_ERR_ARG, "inputs[%zu][%zu] is %d, outside the vocabulary [0, %d)", i / t, i % t,
                           (int)tokens[i], (int)V);
        if (targets[i] < 0 || targets[i] >= V)
            return aw_fail(AW_ERR_ARG, "targets[%zu][%zu] is %d, outside the vocabulary [0, %d) (to leave a position "
                           "out of the loss, give mask 0 there)", i / t, i % t, (int)targets[i], (int)V);
    }
    for (size_t i = 0; i < b * s; i++)
        if (src[i] < 0 || src[i] >= V)
            return aw_fail(AW_ERR_ARG, "source[%zu][%zu] is %d, outside the vocabulary [0, %d)", i / s, i % s,
                           (int)src[i], (int)V);
    size_t kept = b * t;
    if (mask) {
        kept = 0;
        for (size_t i = 0; i < b * t; i++) kept += mask[i] != 0;
        if (kept == 0) return aw_fail(AW_ERR_ARG, "mask leaves no position in the loss: at least one entry must be 1");
    }
    if ((st = model_reserve(m, b, t, s))) return st;
    memcpy(m->tokens, tokens, b * t * sizeof(int32_t));
    for (size_t i = 0; i < b * t; i++) m->targets[i] = mask && !mask[i] ? -1 : targets[i];
    if (s) memcpy(m->src, src, b * s * sizeof(int32_t));
    return AW_OK;
}

// One AdamW step on the caller's batch: tokens (B, T) -> targets (B, T) (-1: no loss there),
// src (B, S) for an encoder-decoder (S = 0 otherwise); hyper and metrics as aw_model_train_step.
AW_API int aw_model_train_batch(aw_model *m, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                                const int32_t *src, double B, double T, double S, const double *hyper,
                                double *metrics) {
    aw_clear_error();
    aw_train_config tc;
    int st = train_config(&tc, hyper);
    if (st || (st = own_batch(m, tokens, targets, mask, src, B, T, S))) return st;
    aw_metrics mt = {0};
    if ((st = model_forward(m, &mt)) || (st = model_backward(m))) return training_diverged(m, st, (double)tc.lr);
    mt.grad_norm = model_update(m, &tc);
    metrics[0] = mt.loss, metrics[1] = mt.accuracy, metrics[2] = mt.grad_norm, metrics[3] = (double)mt.count, metrics[4] = mt.side_loss;
    if (!isfinite(mt.grad_norm))
        return aw_fail(AW_ERR_NONFINITE, "the gradients became NaN or Infinity (lr %g), so the weights are now "
                                         "unusable: create the model again or load a checkpoint, then train with a "
                                         "lower lr or clip > 0", (double)tc.lr);
    return AW_OK;
}

// Loss and accuracy on the caller's batch, no update.
AW_API int aw_model_evaluate_batch(aw_model *m, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                                   const int32_t *src, double B, double T, double S, double *metrics) {
    aw_clear_error();
    int st = own_batch(m, tokens, targets, mask, src, B, T, S);
    if (st) return api_done(st);
    aw_metrics mt = {0};
    st = model_forward(m, &mt);
    metrics[0] = mt.loss, metrics[1] = mt.accuracy, metrics[2] = 0.0, metrics[3] = (double)mt.count;
    return api_done(st);
}

// attentionOptions.<name> = text on a built model (model_set_attention_option: DSA's stage).
AW_API int aw_model_set_attention_option(aw_model *m, const char *name, const char *text) {
    aw_clear_error();
    return api_done(model_set_attention_option(m, name, text));
}
