// transformer.h: the tiny Transformer of docs/attention-forms.md section 5, in the llm.c manner:
// a config, one allocation each for parameters, gradients, activations (and their gradients)
// and AdamW state, carved by a size table; a forward that saves what the backward needs, a
// backward for every op, AdamW with global-norm clipping; deterministic from the seed.
//
// Shapes: B batch, T decoder positions, S encoder positions, C = d_model, F = d_ff,
// V = vocab, H = heads, L = max_len. Tokens are int32 ids in [0, V).
#ifndef AW_MODEL_TRANSFORMER_H
#define AW_MODEL_TRANSFORMER_H

#include "../attention/linear_attention.h"
#include "../attention/synthesizer.h"
#include "forms.h"
#include "layers.h"
#include "positional.h"
#include "rnn.h"
#include "tasks.h"

#include <stddef.h>
#include <stdint.h>

enum aw_norm { AW_NORM_PRE = 0, AW_NORM_POST = 1 };
enum aw_norm_type { AW_NORMTYPE_LAYER = 0, AW_NORMTYPE_RMS = 1 };
// GELU: GPT-2's tanh approximation ("gelu_new"): 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))
enum aw_ffn { AW_FFN_RELU = 0, AW_FFN_SWIGLU = 1, AW_FFN_GELU = 2, AW_FFN_COUNT = 3 };
// A preset of the block's switches (config.c): classic (the 2017 block) or llama (RMSNorm,
// SwiGLU, rotary positions, no biases); fields given explicitly override it.
enum aw_block { AW_BLOCK_CLASSIC = 0, AW_BLOCK_LLAMA = 1 };
// gru and gru-attention: the RNN baselines of src/model/rnn.h (one GRU layer each for the encoder
// and the decoder; no attention forms, no positions, no LayerNorm)
enum aw_arch { AW_ARCH_DECODER = 0, AW_ARCH_ENCODER_DECODER = 1, AW_ARCH_GRU = 2, AW_ARCH_GRU_ATTENTION = 3, AW_ARCH_COUNT = 4 };
// 1 for the architectures that read a source sequence (an encoder), 1 for the RNN ones.
static inline int aw_arch_has_source(int arch) { return arch != AW_ARCH_DECODER; }
static inline int aw_arch_is_rnn(int arch) { return arch == AW_ARCH_GRU || arch == AW_ARCH_GRU_ATTENTION; }
enum { AW_MAX_LAYERS = 32, AW_MAX_TENSORS = 1024 };

typedef struct aw_model_config {
    int32_t vocab, d_model, heads, layers, d_ff, max_len;
    int32_t form;       // the attention form of every self-attention: an index into the registry
                        // (forms.h; aw_form_find(name) gives it); with layerForms, layer 0's
    aw_form_values attn; // the form's attentionOptions, by its own option list (forms.h)
    // layerForms (decoder only): 1 when each decoder layer names its own form and options in
    // layer_form[l], layer_attn[l] (form and attn then hold layer 0's); 0: every layer has form, attn
    int32_t layer_forms;
    int32_t layer_form[AW_MAX_LAYERS];
    aw_form_values layer_attn[AW_MAX_LAYERS];
    int32_t positional; // a row of AW_POSITIONALS (positional.h)
    int32_t norm;       // enum aw_norm
    int32_t norm_type;  // enum aw_norm_type: LayerNorm or RMSNorm
    int32_t ffn;        // enum aw_ffn: relu(x W1 + b1) W2 + b2, or (silu(x W1) * x W3) W2
    int32_t no_bias;    // 1: the linear layers have no biases (0, the default, keeps them)
    int32_t tie;        // 1: the classifier is the token embedding transposed (no out.w)
    int32_t kv_heads;   // K/V heads (grouped-query attention): divides heads; heads (or 0): every
                        // head has its own, 1: multi-query
    float rope_theta;   // rotary positions' base (0: 10000)
    // Llama 3.1's rotary scaling ("rope_type": "llama3"): factor 0 is none; else each frequency
    // below original_len / low_freq of a wavelength is divided by factor, those above
    // original_len / high_freq are kept, and the band between is blended (positional.c)
    float rope_factor, rope_low_freq, rope_high_freq;
    int32_t rope_original_len;
    float norm_eps;     // the epsilon of every LayerNorm / RMSNorm (0: 1e-5)
    int32_t head_dim;   // each head's width (0: d_model / heads); with another width (Qwen3-0.6B's 128
                        // where 1024 / 16 = 64) q, k, v and the heads' output have heads x head_dim
                        // columns: Wq (C, A), Wo (A, C) with A = heads head_dim (decoder softmax only)
    int32_t qkv_bias;   // 1: q, k and v keep their biases even when no_bias (Qwen2)
    int32_t block;      // enum aw_block: the preset the defaults came from (for display)
    int32_t arch;       // enum aw_arch; encoder-decoder has `layers` encoder and `layers` decoder blocks;
                        // gru, gru-attention: layers must be 1, heads, attention, positional, norm and
                        // dFF are ignored
    uint32_t seed;
} aw_model_config;

struct aw_qmat;  // src/kernels/quant.h
struct aw_quant; // quant_model.h

typedef struct {
    char name[40];       // e.g. "dec.0.self.wq"; synthesizer tensors "dec.0.self.synth.W1"
    size_t offset;       // floats into the arena (params, grads, adam_m, adam_v share the layout)
    size_t rows, cols;   // shape (rows, cols); cols = 0 for a vector of `rows`
    int of_form;         // 1: a parameter of an attention form (the form initialises it)
    int trainable;       // 0: fixed (no gradient expected, no weight decay)
    int no_decay;        // 1: trained without weight decay (a form's tensor that asks for it)
    int side;            // 1: trained by its form's side loss alone (aw_form_tensor.side: DSA's indexer)
    size_t dims[3];      // the shape checkpoints store (PyTorch's conventions, docs/model.md)
    int rank;
    int transposed;      // 1: a linear layer's weight, kept (in, out) for x W here and stored
                         // (out, in) in checkpoints, as nn.Linear keeps it
    int quantized;       // 1: its values left the arena for m->quant (quantize.c); offset means nothing
} aw_tensor_info;

typedef struct {
    float *ln_w, *ln_b; // (C) the sublayer's LayerNorm
    float *wq, *bq;     // (C, C), (C); NULL for a synthesizer without a dot component
    float *wk, *bk;     // (C, C), (C); idem
    float *wv, *bv;     // (C, C), (C)
    float *wo, *bo;     // (C, C), (C)
    const struct aw_qmat *qq, *qk, *qv, *qo; // a quantized model's wq .. wo (their float pointers then
                                             // NULL; quantize.c), or NULL
} aw_attn_weights;
// Grouped-query attention: wk, wv are (C, KC) with KC = kv_heads * C / heads; every bias may be
// NULL (no_bias), and ln_b is NULL with RMSNorm.

typedef struct {
    float *ln_w, *ln_b; // (C)
    float *w1, *b1;     // (C, F), (F)
    float *w2, *b2;     // (F, C), (C)
    float *w3, *b3;     // (C, F), (F): SwiGLU's up projection, or NULL
    const struct aw_qmat *q1, *q2, *q3; // a quantized model's w1, w2, w3 (idem), or NULL
} aw_ffn_weights;

typedef struct {
    aw_attn_weights self, cross; // cross: decoder blocks of encoder-decoder only
    aw_ffn_weights ffn;
} aw_block_weights;

typedef struct {
    float *wte;                     // (V, C)
    float *wpe;                     // (L, C) learned positions, or NULL
    aw_block_weights enc[AW_MAX_LAYERS], dec[AW_MAX_LAYERS];
    float *enc_lnf_w, *enc_lnf_b;   // (C) pre-norm encoder's final LayerNorm
    float *lnf_w, *lnf_b;           // (C) pre-norm decoder's final LayerNorm
    float *w_out, *b_out;           // (C, V), (V)
    const struct aw_qmat *q_out;    // a quantized model's classifier (out.w's, or the tied wte's: wte itself
                                    // stays float32 for the lookup), or NULL
    aw_gru_weights enc_gru, dec_gru; // gru archs: the encoder's and the decoder's GRU
    aw_additive_attn_weights attn;  // gru-attention: Bahdanau's additive attention
} aw_weights;

typedef struct {
    float *ln, *ln_mean, *ln_rstd; // (N, C), (N), (N): LayerNorm of the input (pre) or of res (post)
    float *q;                      // (N, C)
    float *k, *v;                  // (Nk, C)
    float *att;                    // (B, H, T, Tk) attention weights, for display only (keep_attention;
                                   // else NULL: no form keeps an n x m matrix for training)
    float *saved;                  // (B, the form's saved_floats(T, Tk)): what its backward reads
    float *kv;                     // (Nk, 2 KC): K and V of the K/V heads before they are
                                   // shared out to the query heads (grouped-query only, else NULL)
    float *o;                      // (N, C) concatenated heads, before Wo
    float *res;                    // (N, C) in + o Wo + bo
} aw_attn_acts;

typedef struct {
    float *ln, *ln_mean, *ln_rstd; // (N, C), (N), (N)
    float *h, *r;                  // (N, F) pre-activation and ReLU (SwiGLU: silu(h) u)
    float *u;                      // (N, F) SwiGLU's up projection, or NULL
    float *res;                    // (N, C) in + r W2 + b2
} aw_ffn_acts;

typedef struct {
    float *x0, *e0;                // (B*T, C) decoder, (B*S, C) encoder embeddings
    aw_attn_acts enc_attn[AW_MAX_LAYERS], dec_self[AW_MAX_LAYERS], dec_cross[AW_MAX_LAYERS];
    aw_ffn_acts enc_ffn[AW_MAX_LAYERS], dec_ffn[AW_MAX_LAYERS];
    float *enc_lnf, *enc_lnf_mean, *enc_lnf_rstd; // (B*S, C), (B*S), (B*S)
    float *lnf, *lnf_mean, *lnf_rstd;             // (B*T, C), (B*T), (B*T)
    float *logits, *probs;         // (B*T, V)
    float *losses;                 // (B*T)
    aw_rnn_acts rnn;               // gru archs (x0 then holds the decoder states, batch-major)
} aw_acts;

typedef struct {
    double loss;      // mean cross-entropy over target tokens (nats)
    double accuracy;  // fraction of target tokens whose argmax is right
    double grad_norm; // global gradient norm before clipping (train steps)
    size_t count;     // target tokens counted
    double side_loss; // the forms' side losses (DSA's indexer KL), each a mean over the batch's queries; 0: none
} aw_metrics;

typedef struct {
    float lr, beta1, beta2, eps, weight_decay, clip; // clip <= 0: none
} aw_train_config;

struct aw_hooks; // hooks.h

typedef struct aw_model {
    aw_model_config cfg;
    size_t n_tensors;
    aw_tensor_info tensors[AW_MAX_TENSORS];
    size_t n_params;            // floats in the arena (every tensor, the forms' included)
    float *params, *grads;      // (n_params) each
    float *adam_m, *adam_v;     // (n_params) each
    int inference;              // 1: made for inference only: grads, adam_m, adam_v are NULL (a
                                // quarter of the memory); backward and training are Errors
    uint8_t *decay;             // (n_params) 1 where weight decay applies
    aw_weights w, g;            // pointers into params and grads
    const aw_positional *pos;   // the positional encoding's row (positional.h)
    const float *pe;            // (L, C) the table added to the embeddings (pos->embed: wpe, the sinusoid), or NULL
    aw_positional_tables pos_tables; // what pos->tables built (the sinusoid, rotary angles; owned)
    float *score_slopes;        // (H) the score bias' slopes (pos->score_bias: ALiBi's; owned), or NULL
    aw_attn_form enc_form[AW_MAX_LAYERS], self_form[AW_MAX_LAYERS], cross_form[AW_MAX_LAYERS];
    size_t form_offset[3][AW_MAX_LAYERS]; // where each sublayer's form parameters start in the arena
    int keep_attention;         // 1: forward stores every form's weights in acts.att (for display;
                                // set before model_reserve, which carves acts.att only then; no
                                // backward follows such a forward, so the forms save nothing);
                                // 0: only softmax does (its backward needs them), so linear
                                // attention stays O(n) in memory while training
    struct aw_sparse_probe *probe; // NULL, or what one forward reads out of a sparse layer (model_sparse_probe)
    struct aw_hooks *hooks;     // NULL, or the named points' callback for one hooked forward (hooks.h;
                                // set by hook_run_forward around model_forward only)
    int last_logits_only;       // 1: forward computes the logits of each sequence's last position
                                // only (no probabilities or loss): generation's prefill
    int params_checked;         // 1: the caller has just checked the parameters are finite (generation's
                                // prefill): forward skips its own pass over them
    struct aw_quant *quant;     // NULL, or the quantized matrices (quantize.c): their tensors left the arena
    size_t sample_vocab;        // 0, or n < vocab: generation picks ids below n only (a tokenizer with fewer
                                // ids than a checkpoint's padded vocabulary: model_sample_vocab)
    long step;                  // AdamW steps taken
    uint64_t revision;          // bumped by whatever changes what generation reads between tokens (an AdamW
                                // step, quantize, an attention option, sampleVocab): a generation session
                                // (generate.c) refuses to continue once it moved
    aw_rng data_rng;            // training batches
    // activations for the current (B, T, S); grown, never shrunk
    size_t B, T, S, act_floats, act_cap;
    float *act_mem, *dact_mem;  // (act_cap) each; an inference-only model's dact_mem is NULL but between
                                // model_reserve_dacts and model_release_dacts (act_floats then)
    aw_acts a, da;
    int32_t *tokens, *targets, *src; // (B*T), (B*T), (B*S)
    size_t tok_cap;
    float *scratch;             // the attention backward's work: the largest work_floats of any
    size_t scratch_cap;         // sublayer's form at the reserved (T, S)
} aw_model;

// The GRU archs' view of the model's tensors (rnn.h): the same arena, named for rnn.c.
static inline aw_rnn_weights model_rnn_weights(const aw_weights *w) {
    return (aw_rnn_weights){w->wte, w->w_out, w->b_out, w->enc_gru, w->dec_gru, w->attn};
}

// Each head's width, and the attention's width A = heads x head width (d_model unless headDim says
// otherwise): q, k, v and the heads' output have A columns (the K/V heads' kv_heads x head width).
static inline size_t model_head_dim(const aw_model_config *c) {
    return c->head_dim ? (size_t)c->head_dim : (size_t)(c->d_model / c->heads);
}
static inline size_t model_attn_cols(const aw_model_config *c) { return (size_t)c->heads * model_head_dim(c); }

// Decoder layer l's self-attention form (the registry's row; NULL for an unknown index) and, in
// *opts when opts is not NULL, its options: layer_form[l] with layerForms, else the model's form.
const aw_form *model_layer_form(const aw_model_config *c, int l, const aw_form_values **opts);

// The last failure's message prefixed with "layerForms[l]: " (the layer whose form or options it
// is about); returns st.
int model_layer_error(int l, int st);

// The columns of K and of V: kv_heads * d_model / heads (d_model without grouped-query heads).
size_t model_kv_cols(const aw_model *m);
// The block's norm (LayerNorm or RMSNorm, by cfg.norm_type) over N rows of d_model; mean is
// unused by RMSNorm, b and db are NULL with it.
void norm_forward(const aw_model *m, float *out, float *mean, float *rstd, const float *x, const float *w,
                  const float *b, size_t N);
void norm_backward(const aw_model *m, float *dx, float *dw, float *db, const float *dout, const float *x,
                   const float *w, const float *mean, const float *rstd, size_t N);

// Checks cfg (sizes, d_model % heads, known enums, the form's options). AW_OK, or AW_ERR_ARG with
// a message naming the field and its limit (aw_error_message).
int model_check_config(const aw_model_config *cfg);
// Allocates and initialises a model from cfg (deterministic from cfg->seed).
int model_create(aw_model **out, const aw_model_config *cfg);
void model_destroy(aw_model *m);
// inference = 1: only the parameters are allocated (no gradients or AdamW state; a model whose
// form has parameters of its own keeps them anyway). model_refuse_inference: the Error for `what`
// (training, a gradient check, saving the optimizer state) on such a model.
// inference: 0 a trainable model; 1 parameters only (no gradients, AdamW state or decay mask);
// AW_CREATE_UNINITIALISED parameters only, not initialised: the caller writes every one (loadHuggingFace)
enum { AW_CREATE_UNINITIALISED = 2 };
int model_create_ex(aw_model **out, const aw_model_config *cfg, int inference);
// model_create_ex in two steps, for model_create_quantized: layout makes the model and records its
// tensors (no arena; m->inference set), arena allocates and binds the floats of every tensor not
// marked quantized. Each frees the model and sets *out NULL on an Error.
int model_create_layout(aw_model **out, const aw_model_config *cfg, int inference);
int model_create_arena(aw_model **out, int inference);
int model_refuse_inference(const aw_model *m, const char *what);

// Forward over a batch already in m->tokens (B, T) (and m->src (B, S) for encoder-decoder) with
// m->targets (B, T) (-1 = no loss); saves every activation. Call model_reserve(B, T, S) first.
int model_reserve(aw_model *m, size_t B, size_t T, size_t S);
int model_forward(aw_model *m, aw_metrics *metrics);
// The activations' gradients (m->da) for the reserved (B, T, S): a trainable model's model_reserve
// made them already; an inference-only model gets them here, act_floats floats (no parameter
// gradients), until model_release_dacts frees them (a no-op on a trainable model) or the next
// model_reserve does.
int model_reserve_dacts(aw_model *m);
void model_release_dacts(aw_model *m);
// The name of the tensor that holds flat parameter index i ("?" past the end).
const char *model_tensor_at(const aw_model *m, size_t i);
// AW_OK, or AW_ERR_NONFINITE naming the first tensor whose parameters hold NaN or Infinity (the
// message every call that meets a diverged model gives: forward, generate, trainStep, save).
int model_check_params(const aw_model *m);
// Backward of the last forward's mean loss into m->grads (zeroed first) and the synthesizers' grads.
int model_backward(aw_model *m);
// The same backward seeded with dlogits (B*T, V), the gradient of any function of the last
// forward's logits (attribution.c's metric), in place of the mean loss's: m->da then holds that
// function's gradient of every activation, m->grads of every parameter. On an inference-only
// float32 transformer (no m->grads; call model_reserve_dacts first) m->da alone: the parameters'
// gradients are skipped. Quantized models are an Error (their float32 matrices are gone).
int model_backward_from_logits(aw_model *m, const float *dlogits);
// Global-norm clipping and one AdamW step over every parameter, or, when a sublayer's form trains
// alone (aw_attn_form.trains_alone: DSA's warm-up), over those forms' parameters only (the others'
// gradients are zeroed first, so the norm is theirs). Returns the norm before clipping.
double model_update(aw_model *m, const aw_train_config *tc);
// Sets attentionOptions.<name> to `text` on a built model: every decoder layer whose form has that
// option and can change it once built (the form's retune: DSA's stage) takes it, and the config (so
// save) records it. AW_ERR_ARG naming the option when no layer's form has it, a bad value, or a form
// that fixes it at creation; the model is then unchanged.
int model_set_attention_option(aw_model *m, const char *name, const char *text);

// The sequence layout of a task for this model's architecture: T (decoder positions) and S
// (encoder positions, 0 for decoder-only). AW_ERR_ARG when the task does not fit (too long for
// max_len, vocab too small, chars with an encoder-decoder).
int model_task_dims(const aw_model *m, const aw_task_spec *spec, size_t *T, size_t *S);
// Fills m->tokens / m->targets / m->src with B examples drawn from rng (reserves the buffers).
int model_make_batch(aw_model *m, const aw_task_spec *spec, size_t B, aw_rng *rng);
// One training step on a fresh batch from m->data_rng: forward, backward, clip, AdamW.
int model_train_step(aw_model *m, const aw_task_spec *spec, size_t B, const aw_train_config *tc,
                     aw_metrics *metrics);
// Mean metrics over `batches` batches of B drawn from a generator seeded with `seed` (held-out
// data: for chars, the last 10% of the text, which training never draws from).
int model_evaluate(aw_model *m, const aw_task_spec *spec, size_t B, size_t batches, uint64_t seed,
                   aw_metrics *metrics);

// out (layers): the floats generation keeps per decoder layer for a sequence of maxLen (its KV cache or
// recurrent state with the step's scratch; -1: no step, generation recomputes). generate.c.
int model_generation_floats(const aw_model *m, double *out);

// Autoregressive generation. Decoder: continues prompt (np tokens). Encoder-decoder: encodes
// src (ns tokens) and continues prompt (np >= 1 tokens, usually the separator 0). Writes up to
// max_new tokens into out and returns how many through *n_out; stops early at stop_token (>= 0,
// included in out) or at max_len. temperature <= 0: greedy; top_k > 0 keeps the k largest.
// use_cache: 1 = incremental (KV cache for softmax, recurrent state for causal linear; a
// synthesizer recomputes), 0 = re-run the full forward for every token (the reference).
int model_generate(aw_model *m, int32_t *out, size_t *n_out, size_t max_new, const int32_t *prompt, size_t np,
                   const int32_t *src, size_t ns, float temperature, int top_k, uint64_t seed, int stop_token,
                   int use_cache);

// Generation in pieces, for a caller that takes the tokens as they are made (generate.c). begin checks
// the arguments as model_generate does, seeds the sampler, sets up the decode state and reads the
// prompt (the prefill); next makes up to count more tokens into out (*n_out of them) and says in
// *ended whether it ended (0, or AW_GEN_STOP / AW_GEN_MAX_TOKENS / AW_GEN_MAX_LEN; once ended it makes
// none); end frees the session (NULL: nothing; it reads nothing of the model, so it may also come after the
// model's destroy, which next must not). model_generate is begin, next(max_new) and end: the same tokens.
// next refuses (AW_ERR_STATE) once m->revision moved since begin (the weights or options changed), and
// after a next that failed.
typedef struct aw_generation aw_generation;
enum { AW_GEN_STOP = 1, AW_GEN_MAX_TOKENS = 2, AW_GEN_MAX_LEN = 3 };
int model_generation_begin(aw_generation **out, aw_model *m, size_t max_new, const int32_t *prompt, size_t np,
                           const int32_t *src, size_t ns, float temperature, int top_k, uint64_t seed, int stop_token,
                           int use_cache);
int model_generation_next(aw_generation *g, int32_t *out, size_t count, size_t *n_out, int *ended);
void model_generation_end(aw_generation *g);

// One position through generation's pieces (generate.c), shared with streaming (stream.c):
// decode_attend: softmax over n cached positions, keys kc and values vc (n, KH hd), head h reading
// K/V head h / (H / KH), with the score bias -slopes[h] (distance from the last position) when
// slopes (H, a positional row's score_bias: ALiBi's) is given; scores has n floats of scratch. decode_ffn: the feed-forward sublayer of one row x (C),
// in place (ln, res: C floats; h, u, r: F). decode_logits: the final norm and the classifier.
void decode_attend(float *out, float *scores, const float *q, const float *kc, const float *vc, size_t n, size_t H,
                   size_t KH, size_t hd, const float *slopes);
void decode_ffn(const aw_model *m, const aw_ffn_weights *w, float *x, float *ln, float *h, float *u, float *r,
                float *res);
void decode_logits(const aw_model *m, float *logits, const float *x, float *ln);

// ---- quantized weights (quantize.c; formats and kernels in src/kernels/quant.h) ----
// Quantizes every matrix a decoder reads per token (q, k, v, o, the FFN's, the classifier) into
// `format` ("q8_0", "q4_0") with `group` values per scale (0: the format's default), and frees their
// float32 copies. An inference-only decoder; Errors name the argument and leave the model as it was.
int model_quantize(aw_model *m, const char *format, size_t group);
// An inference model whose decoder matrices are quantized from the start (quantize.c): format and
// group as model_quantize takes them; their values and scales are reserved and the float32 arena
// holds only the other tensors (uninitialised), so a loader never holds the whole model in float32.
// The caller writes every float32 tensor, then fills every matrix with model_quantize_fill: rows
// (outputs) first .. first + rows - 1 of matrix i (model_qmat's order) from src, the whole matrix's
// float32 values laid out as the model keeps them ((in, out) for a linear layer), or from its tensor
// in the arena when src is NULL (a tied classifier's wte). Filling in pieces lets a page yield between.
int model_create_quantized(aw_model **out, const aw_model_config *cfg, const char *format, size_t group);
int model_quantize_fill(aw_model *m, size_t i, const float *src, size_t first, size_t rows);
// quant_model.c: points m->w's quantized slots at m->quant's matrices (again after a walk).
void quant_bind(aw_model *m);
// out[0] the bytes of the weights in float32, out[1] the bytes held now (arena + quantized values
// and scales), out[2] the format (enum aw_qformat_id; 0: float32), out[3] the group.
void model_weight_bytes(const aw_model *m, double *out);
// out (N, OC) = x (N, IC) W + b: W float32 (IC, OC), or its quantized form q when q is not NULL.
void model_linear(const aw_model *m, float *out, const float *x, const float *w, const struct aw_qmat *q,
                  const float *b, size_t N, size_t IC, size_t OC);
// logits (N, V) of x (N, C): out.w, the tied embedding, or the quantized classifier.
void model_classifier(const aw_model *m, float *logits, const float *x, size_t N);
// Quantized matrix i (*out) and its tensor's name; NULL past the last (or on a float32 model).
const char *model_qmat(aw_model *m, size_t i, struct aw_qmat **out);
// The Error for `what` (saving, a hook that reads the weights) on a quantized model.
int model_refuse_quantized(const aw_model *m, const char *what);
// transformer.c: makes params the arena, its floats the tensors not marked quantized packed in the
// walk's order (quantize.c moves them there); binds m->w, the forms' parameters and the position table.
void model_bind_packed(aw_model *m, float *params);
void quant_free(struct aw_quant *q);

// Picks a token from logits (V; modified): greedy (temperature <= 0) or sampled from the top_k.
int32_t model_sample(float *logits, size_t V, float temperature, int top_k, aw_rng *rng);
// How many of the vocabulary's ids generation may pick: the vocabulary, or m->sample_vocab when set.
static inline size_t model_sample_vocab(const aw_model *m) {
    return m->sample_vocab && m->sample_vocab < (size_t)m->cfg.vocab ? m->sample_vocab : (size_t)m->cfg.vocab;
}

// Streaming past maxLen (stream.c; StreamingLLM, arXiv:2309.17453): a rolling KV cache of `window`
// positions that keeps the first `sinks` tokens, positions numbered by cache slot. Softmax
// decoders with positional rope or none. losses (n - 1): -log p(tokens[t + 1]) in nats, from the
// rolling cache, or (recompute) from a fresh forward over the last `window` tokens.
int model_stream_check(const aw_model *m, size_t window, size_t sinks);
int model_stream_losses(aw_model *m, const int32_t *tokens, size_t n, size_t window, size_t sinks, int recompute,
                        float *losses);
int model_stream_generate(aw_model *m, int32_t *out, size_t *n_out, size_t max_new, const int32_t *prompt, size_t np,
                          size_t window, size_t sinks, float temperature, int top_k, uint64_t seed, int stop_token);

// Finite-difference gradient check of the whole model on a random batch (B, T, S) drawn from
// seed: every tensor's gradient along its own direction and along a random one (gradcheck.c
// explains the measure). mutate_tensor (NULL: none): multiply that tensor's analytic gradient by
// mutate_factor first, so a test can show that an error of that size fails the check.
typedef struct {
    double error;              // the worst relative error of any direction of any tensor
    double worst_tensor_error; // the same, kept with the tensor's name
    char worst_tensor[40];
    size_t checked, skipped;   // directions compared; directions skipped at a kink
    size_t zero_grad_tensors;  // trainable tensors (not embeddings) whose gradient is all zero
    char zero_grad_name[40];   // the first of them
    size_t fixed_with_grad;    // fixed (non-trainable) tensors that got a gradient
    size_t redraws;            // batches drawn again because a ReLU sat at its kink
} aw_grad_check;
int model_grad_check(aw_model *m, size_t B, size_t T, size_t S, uint64_t seed, const char *mutate_tensor,
                     double mutate_factor, aw_grad_check *out);

// The tensor named `name`, or NULL; its data pointer (params or synthesizer params).
const aw_tensor_info *model_find_tensor(const aw_model *m, const char *name);
float *model_tensor_data(aw_model *m, const aw_tensor_info *t);
float *model_tensor_grad(aw_model *m, const aw_tensor_info *t);
size_t model_tensor_size(const aw_tensor_info *t);

// A sparse layer read out (NSA, DSA: forms with a selection function, forms.h): for one sequence of T
// tokens, the decoder's self-attention of `layer` writes sel (H, T, T), 1 where head h's query t read key s
// through its selection, and dense (H, T, T), the causal softmax of the same queries and keys (after the
// rotation, scaled by 1/sqrt(head width)): the dense attention the selection replaces.
typedef struct aw_sparse_probe {
    int layer;
    float *sel, *dense;
    int done; // set by the forward once written
} aw_sparse_probe; // set and read by aw_model_sparse_reading (api_model.c)

#endif
