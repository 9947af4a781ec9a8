// api_model.c: the tiny Transformer (src/model) for the wrapper (wasm/model.js). A model is a
// handle (the aw_model pointer). Configs travel as an int32 array in the order of CFG_* below;
// metrics come back as float64 [loss, accuracy, grad_norm, count].
#include "api.h"

#include "../model/checkpoint.h"
#include "../model/transformer.h"

#include <stdlib.h>
#include <string.h>

enum {
    CFG_VOCAB, CFG_D_MODEL, CFG_HEADS, CFG_LAYERS, CFG_D_FF, CFG_MAX_LEN, CFG_ATTENTION, CFG_FEATURE, CFG_POSITIONAL,
    CFG_NORM, CFG_ARCH, CFG_SEED, CFG_SYNTH_VARIANT, CFG_SYNTH_TRAINABLE, CFG_SYNTH_A, CFG_SYNTH_B, CFG_SYNTH_K,
    CFG_SYNTH_N_COMPONENTS, CFG_SYNTH_COMPONENTS, // 5 entries
    CFG_COUNT = CFG_SYNTH_COMPONENTS + AW_SYNTH_MAX_COMPONENTS
};

static int config_from_ints(aw_model_config *c, const int32_t *v) {
    memset(c, 0, sizeof *c);
    c->vocab = v[CFG_VOCAB], c->d_model = v[CFG_D_MODEL], c->heads = v[CFG_HEADS], c->layers = v[CFG_LAYERS];
    c->d_ff = v[CFG_D_FF], c->max_len = v[CFG_MAX_LEN], c->attention = v[CFG_ATTENTION], c->feature = v[CFG_FEATURE];
    c->positional = v[CFG_POSITIONAL], c->norm = v[CFG_NORM], c->arch = v[CFG_ARCH], c->seed = (uint32_t)v[CFG_SEED];
    if (v[CFG_SYNTH_A] < 0 || v[CFG_SYNTH_B] < 0 || v[CFG_SYNTH_K] < 0 || v[CFG_SYNTH_N_COMPONENTS] < 0 ||
        v[CFG_SYNTH_N_COMPONENTS] > AW_SYNTH_MAX_COMPONENTS)
        return AW_ERR_ARG;
    c->synth.variant = v[CFG_SYNTH_VARIANT], c->synth.trainable = v[CFG_SYNTH_TRAINABLE] != 0;
    c->synth.a = (size_t)v[CFG_SYNTH_A], c->synth.b = (size_t)v[CFG_SYNTH_B], c->synth.k = (size_t)v[CFG_SYNTH_K];
    c->synth.n_components = (size_t)v[CFG_SYNTH_N_COMPONENTS];
    for (int i = 0; i < AW_SYNTH_MAX_COMPONENTS; i++) c->synth.components[i] = v[CFG_SYNTH_COMPONENTS + i];
    return AW_OK;
}

static void config_to_ints(int32_t *v, const aw_model_config *c) {
    memset(v, 0, CFG_COUNT * sizeof(int32_t));
    v[CFG_VOCAB] = c->vocab, v[CFG_D_MODEL] = c->d_model, v[CFG_HEADS] = c->heads, v[CFG_LAYERS] = c->layers;
    v[CFG_D_FF] = c->d_ff, v[CFG_MAX_LEN] = c->max_len, v[CFG_ATTENTION] = c->attention, v[CFG_FEATURE] = c->feature;
    v[CFG_POSITIONAL] = c->positional, v[CFG_NORM] = c->norm, v[CFG_ARCH] = c->arch, v[CFG_SEED] = (int32_t)c->seed;
    v[CFG_SYNTH_VARIANT] = c->synth.variant, v[CFG_SYNTH_TRAINABLE] = c->synth.trainable;
    v[CFG_SYNTH_A] = (int32_t)c->synth.a, v[CFG_SYNTH_B] = (int32_t)c->synth.b, v[CFG_SYNTH_K] = (int32_t)c->synth.k;
    v[CFG_SYNTH_N_COMPONENTS] = (int32_t)c->synth.n_components;
    for (int i = 0; i < AW_SYNTH_MAX_COMPONENTS; i++) v[CFG_SYNTH_COMPONENTS + i] = c->synth.components[i];
}

// The length of the config array.
AW_API int aw_model_config_length(void) { return CFG_COUNT; }

// *handle = a new model from the config array (CFG_COUNT int32).
AW_API int aw_model_create(aw_model **handle, const int32_t *config) {
    aw_model_config c;
    *handle = NULL;
    if (config_from_ints(&c, config)) return AW_ERR_ARG;
    return model_create(handle, &c);
}

AW_API void aw_model_destroy(aw_model *m) { model_destroy(m); }

// config (CFG_COUNT int32) = the model's config; returns the parameter count (all groups).
AW_API int aw_model_info(const aw_model *m, int32_t *config) {
    config_to_ints(config, &m->cfg);
    size_t n = m->n_params;
    for (size_t i = 0; i < m->n_synth; i++) n += m->synths[i]->n_params;
    return (int)n;
}

AW_API int aw_model_step_count(const aw_model *m) { return (int)m->step; }

// dims = [T, S, min_vocab] of the task for this model; AW_ERR_ARG when it does not fit.
AW_API int aw_model_task_dims(const aw_model *m, int32_t task, int32_t length, int32_t symbols, int32_t *dims) {
    if (length <= 0 || symbols < 0) return AW_ERR_ARG;
    const aw_task_spec spec = {task, (size_t)length, (size_t)symbols, 0};
    size_t T = 0, S = 0;
    dims[2] = task_check(&spec) ? -1 : task_min_vocab(&spec);
    const int st = model_task_dims(m, &spec, &T, &S);
    dims[0] = (int32_t)T, dims[1] = (int32_t)S;
    return st;
}

// One training step on a fresh batch; hyper = [lr, beta1, beta2, eps, weight_decay, clip];
// metrics = [loss, accuracy, grad_norm, count].
AW_API int aw_model_train_step(aw_model *m, int32_t task, int32_t length, int32_t symbols, int32_t batch,
                               const float *hyper, double *metrics) {
    if (length <= 0 || symbols < 0 || batch <= 0) return AW_ERR_ARG;
    const aw_task_spec spec = {task, (size_t)length, (size_t)symbols, 0};
    const aw_train_config tc = {hyper[0], hyper[1], hyper[2], hyper[3], hyper[4], hyper[5]};
    aw_metrics mt = {0};
    const int st = model_train_step(m, &spec, (size_t)batch, &tc, &mt);
    metrics[0] = mt.loss, metrics[1] = mt.accuracy, metrics[2] = mt.grad_norm, metrics[3] = (double)mt.count;
    return st;
}

AW_API int aw_model_evaluate(aw_model *m, int32_t task, int32_t length, int32_t symbols, int32_t batch,
                             int32_t batches, uint32_t seed, double *metrics) {
    if (length <= 0 || symbols < 0 || batch <= 0 || batches <= 0) return AW_ERR_ARG;
    const aw_task_spec spec = {task, (size_t)length, (size_t)symbols, 0};
    aw_metrics mt = {0};
    const int st = model_evaluate(m, &spec, (size_t)batch, (size_t)batches, seed, &mt);
    metrics[0] = mt.loss, metrics[1] = mt.accuracy, metrics[2] = 0.0, metrics[3] = (double)mt.count;
    return st;
}

// One example of a task: src (task source length), tgt (task target length); *real = the
// target tokens that carry meaning (translate pads with 0s). Drawn from a generator seeded by seed.
AW_API int aw_model_example(int32_t task, int32_t length, int32_t symbols, uint32_t seed, int32_t *src, int32_t *tgt,
                            int32_t *real) {
    if (length <= 0 || symbols < 0) return AW_ERR_ARG;
    const aw_task_spec spec = {task, (size_t)length, (size_t)symbols, 0};
    if (task_check(&spec)) return AW_ERR_ARG;
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    *real = (int32_t)task_example(src, tgt, &spec, &rng);
    return AW_OK;
}

// lens = [source length, target length] of a task (0 and 0 when the spec is invalid).
AW_API int aw_model_task_lengths(int32_t task, int32_t length, int32_t symbols, int32_t *lens) {
    const aw_task_spec spec = {task, length > 0 ? (size_t)length : 0, symbols > 0 ? (size_t)symbols : 0, 0};
    lens[0] = lens[1] = 0;
    if (length <= 0 || symbols < 0 || task_check(&spec)) return AW_ERR_ARG;
    lens[0] = (int32_t)task_src_len(&spec), lens[1] = (int32_t)task_tgt_len(&spec);
    return AW_OK;
}

// One forward pass over a single sequence: tokens (T), src (S, encoder-decoder only).
// logits (T, V); self_att (layers, H, T, T); cross_att (layers, H, T, S) and enc_att
// (layers, H, S, S) for encoder-decoder (else may be NULL).
AW_API int aw_model_forward(aw_model *m, const int32_t *tokens, int32_t T, const int32_t *src, int32_t S,
                            float *logits, float *self_att, float *cross_att, float *enc_att) {
    const int encdec = m->cfg.arch == AW_ARCH_ENCODER_DECODER;
    if (T <= 0 || S < 0 || (encdec && S <= 0)) return AW_ERR_ARG;
    int st = model_reserve(m, 1, (size_t)T, encdec ? (size_t)S : 0);
    if (st) return st;
    memcpy(m->tokens, tokens, (size_t)T * sizeof(int32_t));
    for (int32_t i = 0; i < T; i++) m->targets[i] = -1;
    if (encdec) memcpy(m->src, src, (size_t)S * sizeof(int32_t));
    m->keep_attention = 1; // every form's weights, for the caller
    st = model_forward(m, NULL);
    m->keep_attention = 0;
    if (st) return st;
    const size_t V = (size_t)m->cfg.vocab, H = (size_t)m->cfg.heads, t = (size_t)T, s = (size_t)S;
    memcpy(logits, m->a.logits, t * V * sizeof(float));
    for (int l = 0; l < m->cfg.layers; l++) {
        memcpy(self_att + (size_t)l * H * t * t, m->a.dec_self[l].att, H * t * t * sizeof(float));
        if (encdec) {
            memcpy(cross_att + (size_t)l * H * t * s, m->a.dec_cross[l].att, H * t * s * sizeof(float));
            memcpy(enc_att + (size_t)l * H * s * s, m->a.enc_attn[l].att, H * s * s * sizeof(float));
        }
    }
    return AW_OK;
}

// Generation (see model_generate): out (max_new), *n_out tokens written.
AW_API int aw_model_generate(aw_model *m, int32_t *out, int32_t *n_out, int32_t max_new, const int32_t *prompt,
                             int32_t np, const int32_t *src, int32_t ns, float temperature, int32_t top_k, uint32_t seed,
                             int32_t stop_token, int32_t use_cache) {
    if (max_new < 0 || np <= 0 || ns < 0 || top_k < 0) return AW_ERR_ARG;
    size_t n = 0;
    const int st = model_generate(m, out, &n, (size_t)max_new, prompt, (size_t)np, src, (size_t)ns, temperature, top_k,
                                  seed, stop_token, use_cache);
    *n_out = (int32_t)n;
    return st;
}

// *bytes = the size of the safetensors checkpoint.
AW_API int aw_model_save_size(const aw_model *m, int32_t *bytes) {
    size_t n = 0;
    const int st = checkpoint_size(m, &n);
    *bytes = (int32_t)n;
    return n > 0x7fffffff ? AW_ERR_NOMEM : st;
}

AW_API int aw_model_save(const aw_model *m, uint8_t *buf, int32_t cap) {
    return cap < 0 ? AW_ERR_ARG : checkpoint_write(m, buf, (size_t)cap);
}

AW_API int aw_model_load(aw_model **handle, const uint8_t *buf, int32_t len) {
    *handle = NULL;
    return len < 0 ? AW_ERR_ARG : checkpoint_read(handle, buf, (size_t)len);
}

// The chars tokenizer: token of a byte (0 when not in the charset), and the byte of a token.
AW_API int aw_model_char_token(int32_t c) { return c < 0 || c > 255 ? 0 : char_to_token((unsigned char)c); }
AW_API int aw_model_token_char(int32_t t) { return (unsigned char)token_to_char(t); }
AW_API int aw_model_chars_vocab(void) { return (int)chars_vocab(); }

// Finite-difference gradient check (src/model/gradcheck.c) on a random batch (B, T, S).
// out = [error, worst_tensor_error, checked, skipped, zero_grad_tensors, fixed_with_grad];
// names (80 bytes) = the worst tensor's name, then (at +40) the first zero-gradient tensor's.
AW_API int aw_model_grad_check(aw_model *m, int32_t B, int32_t T, int32_t S, uint32_t seed, int32_t per_tensor,
                               double *out, char *names) {
    if (B <= 0 || T <= 0 || S < 0 || per_tensor <= 0) return AW_ERR_ARG;
    aw_grad_check gc;
    const int st = model_grad_check(m, (size_t)B, (size_t)T, (size_t)S, seed, (size_t)per_tensor, &gc);
    out[0] = gc.error, out[1] = gc.worst_tensor_error, out[2] = (double)gc.checked, out[3] = (double)gc.skipped;
    out[4] = (double)gc.zero_grad_tensors, out[5] = (double)gc.fixed_with_grad;
    memcpy(names, gc.worst_tensor, 40);
    memcpy(names + 40, gc.zero_grad_name, 40);
    return st;
}
