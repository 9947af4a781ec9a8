// fuzz_model.c: the model through the C ABI (src/api/api_model.c): a config built from named
// fields decoded from the input (names and values both fuzzed, within small sizes), then a
// sequence of operations: train steps on tasks and on own batches, forward, generate,
// evaluate, save / load, the gradient check, and finally destroy. Invariants: failures have a
// message; a forward that returns AW_OK gives finite logits and attention rows that sum to 1 or
// 0; a saved model loads back and gives the same logits.
#include "fuzz_common.h"

#include "../../src/model/checkpoint.h"
#include "../../src/model/config.h"

aw_config_builder *aw_config_new(void);
void aw_config_free(aw_config_builder *b);
int aw_config_set(aw_config_builder *b, const char *key, const char *value);
int aw_model_create(aw_model **handle, aw_config_builder *b);
int aw_model_train_step(aw_model *m, const char *task, double length, double symbols, double batch, const double *hyper,
                        double *metrics);
int aw_model_train_batch(aw_model *m, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                         const int32_t *src, double B, double T, double S, const double *hyper, double *metrics);
int aw_model_evaluate(aw_model *m, const char *task, double length, double symbols, double batch, double batches,
                      double seed, double *metrics);
int aw_model_forward(aw_model *m, const int32_t *tokens, int32_t T, const int32_t *src, int32_t S, float *logits,
                     float *self_att, float *cross_att, float *enc_att);
int aw_model_generate(aw_model *m, int32_t *out, int32_t *n_out, int32_t max_new, const int32_t *prompt, int32_t np,
                      const int32_t *src, int32_t ns, float temperature, int32_t top_k, uint32_t seed,
                      int32_t stop_token, int32_t use_cache);
int aw_model_grad_check(aw_model *m, int32_t B, int32_t T, int32_t S, uint32_t seed, const char *mutate, double factor,
                        double *out, char *names);
void aw_model_destroy(aw_model *m);

static const char *const FORMS[] = {"softmax", "local", "strided", "linear:elu+1", "linear:relu", "linear:efficient", "linear:taylor",
                                    "synth:dense", "synth:random", "synth:factorized-dense", "synth:factorized-random",
                                    "synth:mixture", "retention", "linformer", "cosine"};
enum { N_FORMS = sizeof FORMS / sizeof FORMS[0] };
static const char *const DECAYS[] = {"retnet", "learned", "0.5", "0.999", "1", "0", "x"};
static const char *const TASKS[] = {"copy", "reverse", "sort", "recall", "translate", "chars", "parity"};
static const char *const COMPONENTS[] = {"random,dot", "dense", "factorized-random,dense", "dot,dot", "", "mixture"};

// Logits finite; attention rows summing to 1 or 0, except the signed scores of retention and
// Linformer (finite).
static void check_forward(aw_model *m, const int32_t *tok, int32_t T, const int32_t *src, int32_t S) {
    const char *family = aw_form_at((size_t)m->cfg.form)->family;
    int signed_scores = !strcmp(family, "retention") || !strcmp(family, "linformer");
    for (int l = 0; m->cfg.layer_forms && l < m->cfg.layers; l++) // layerForms: any layer's (rows are not told apart)
        signed_scores |= !strcmp(m->self_form[l].form->family, "retention");
    const size_t V = (size_t)m->cfg.vocab, H = (size_t)m->cfg.heads, L = (size_t)m->cfg.layers;
    float *logits = malloc(T * V * 4 + 4), *att = malloc(L * H * T * T * 4 + 4);
    float *cross = malloc(L * H * T * (S + 1) * 4 + 4), *enc = malloc(L * H * (S + 1) * (S + 1) * 4 + 4);
    aw_clear_error();
    const int st = aw_model_forward(m, tok, T, src, S, logits, att, cross, enc);
    FUZZ_STATUS(st);
    if (st == AW_OK) {
        FUZZ_ASSERT(all_finite(logits, (size_t)T * V), "forward: non-finite logits with AW_OK");
        const int rnn = aw_arch_is_rnn(m->cfg.arch); // a GRU model has no self-attention to check
        if (!rnn) FUZZ_ASSERT(all_finite(att, L * H * (size_t)T * T), "forward: non-finite attention with AW_OK");
        for (size_t r = 0; r < L * H * (size_t)T && !signed_scores && !rnn; r++) {
            double s = 0.0;
            for (int32_t j = 0; j < T; j++) s += att[r * T + j];
            FUZZ_ASSERT(s == 0.0 || fabs(s - 1.0) < 1e-3, "an attention row sums to %g", s);
        }
    }
    free(logits), free(att), free(cross), free(enc);
}

// The fields set that are not the attention's (a layerForms config sets them again on a fresh builder).
typedef struct {
    const char *key[16];
    char value[16][32];
    size_t n;
} fields_kept;

static int set_field(aw_config_builder *b, fields_kept *kept, const char *key, const char *value) {
    if (strncmp(key, "attention", 9) != 0 && kept->n < 16) {
        kept->key[kept->n] = key;
        snprintf(kept->value[kept->n++], sizeof kept->value[0], "%s", value);
    }
    return aw_config_set(b, key, value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size};
    aw_config_builder *b = aw_config_new();
    char value[32];
    fields_kept kept = {0};
    // named fields with small values (and now and then a value the builder must refuse)
    struct { const char *key; size_t lo, hi; } ints[] = {
        {"vocab", 1, 40}, {"dModel", 1, 16}, {"heads", 1, 4}, {"layers", 1, 2}, {"dFF", 1, 16}, {"maxLen", 1, 16},
        {"seed", 0, 1000}, {"attentionOptions.k", 0, 5}, {"attentionOptions.window", 0, 20}, {"attentionOptions.a", 0, 8},
        {"attentionOptions.stride", 0, 10}};
    const uint8_t fields = take_u8(&in);
    for (size_t f = 0; f < sizeof ints / sizeof ints[0]; f++)
        if (fields & (1u << (f % 8)) || f == 1) {
            snprintf(value, sizeof value, "%zu", take_size(&in, ints[f].lo, ints[f].hi));
            if (!(take_u8(&in) & 7)) snprintf(value, sizeof value, "%s", (take_u8(&in) & 1) ? "1e40" : "x");
            aw_clear_error();
            FUZZ_STATUS(set_field(b, &kept, ints[f].key, value));
        }
    aw_config_set(b, "attention", FORMS[take_u8(&in) % N_FORMS]);
    if (take_u8(&in) & 1) aw_config_set(b, "attentionOptions.decay", DECAYS[take_u8(&in) % 7]);
    static const char *const ARCHS[] = {"decoder", "encoder-decoder", "gru", "gru-attention"};
    if (take_u8(&in) & 1) set_field(b, &kept, "arch", ARCHS[take_u8(&in) % 4]);
    if (take_u8(&in) & 1) set_field(b, &kept, "norm", (take_u8(&in) & 1) ? "post" : "pre");
    if (take_u8(&in) & 1) set_field(b, &kept, "positional", (take_u8(&in) & 1) ? "learned" : "sinusoidal");
    if (take_u8(&in) & 1) aw_config_set(b, "attentionOptions.components", COMPONENTS[take_u8(&in) % 6]);
    if (take_u8(&in) & 1) aw_config_set(b, "attentionOptions.trainable", (take_u8(&in) & 1) ? "false" : "true");
    if ((take_u8(&in) & 3) == 1) { // layerForms: a length near layers, each entry a form, now and then an option
        // in place of the model's attention and attentionOptions (refused beside it): the other fields again
        aw_config_free(b);
        b = aw_config_new();
        for (size_t i = 0; i < kept.n; i++) aw_config_set(b, kept.key[i], kept.value[i]);
        snprintf(value, sizeof value, "%zu", take_size(&in, 0, 3));
        aw_clear_error();
        FUZZ_STATUS(aw_config_set(b, "layerForms", value));
        for (size_t l = 0, n = take_size(&in, 0, 3); l < n; l++) {
            char key[64];
            snprintf(key, sizeof key, "layerForms.%zu.attention", l);
            aw_clear_error();
            FUZZ_STATUS(aw_config_set(b, key, FORMS[take_u8(&in) % N_FORMS]));
            snprintf(key, sizeof key, "layerForms.%zu.attentionOptions.window", l);
            snprintf(value, sizeof value, "%zu", take_size(&in, 0, 20));
            if (take_u8(&in) & 1) aw_config_set(b, key, value);
        }
    }
    aw_model *m = NULL;
    aw_clear_error();
    int st = aw_model_create(&m, b);
    FUZZ_STATUS(st);
    aw_config_free(b);
    if (st != AW_OK) return 0;
    const int encdec = aw_arch_has_source(m->cfg.arch);
    const int32_t V = m->cfg.vocab, L = m->cfg.max_len;
    const double hyper[6] = {1e-2, 0.9, 0.98, 1e-8, 0.01, 1.0};
    double metrics[8];
    int32_t tok[64], tgt[64], src[64], out[32];
    int checked = 0; // one gradient check per input at most: it runs hundreds of forwards
    for (int op = 0; op < 8 && in.left; op++) {
        const int32_t T = (int32_t)take_size(&in, 1, (size_t)L + 1), S = encdec ? (int32_t)take_size(&in, 1, (size_t)L) : 0;
        for (int i = 0; i < 64; i++) {
            tok[i] = (int32_t)take_size(&in, 0, (size_t)V) - (take_u8(&in) == 7); // now and then -1 or V
            tgt[i] = (int32_t)take_size(&in, 0, (size_t)V) - 1;
            src[i] = (int32_t)(i % V);
        }
        aw_clear_error();
        switch (take_u8(&in) % 7) {
        case 0:
            st = aw_model_train_step(m, TASKS[take_u8(&in) % 7], (double)take_size(&in, 0, 20),
                                     (double)take_size(&in, 0, 40), (double)take_size(&in, 1, 4), hyper, metrics);
            FUZZ_STATUS(st);
            break;
        case 1: {
            const int32_t B = (int32_t)take_size(&in, 1, 2), TT = T > 16 ? 16 : T, SS = S > 16 ? 16 : S;
            st = aw_model_train_batch(m, tok, tgt, NULL, encdec ? src : NULL, B, TT, SS, hyper, metrics);
            FUZZ_STATUS(st);
            break;
        }
        case 2: check_forward(m, tok, T > 32 ? 32 : T, encdec ? src : NULL, S); break;
        case 3: {
            int32_t n = 0;
            st = aw_model_generate(m, out, &n, (int32_t)take_size(&in, 0, 8), tok, T > 16 ? 16 : T, encdec ? src : NULL, S,
                                   (take_u8(&in) & 1) ? 0.8f : 0.0f, (int32_t)take_size(&in, 0, 3), 7, -1, take_u8(&in) & 1);
            FUZZ_STATUS(st);
            for (int32_t i = 0; st == AW_OK && i < n; i++) FUZZ_ASSERT(out[i] >= 0 && out[i] < V, "a generated id out of range");
            break;
        }
        case 4:
            st = aw_model_evaluate(m, TASKS[take_u8(&in) % 7], NAN, NAN, 2, 1, 3, metrics);
            FUZZ_STATUS(st);
            break;
        case 5: { // save and load with the optimizer state: the same logits after
            size_t bytes = 0;
            if (checkpoint_size(m, 1, &bytes) != AW_OK) break;
            uint8_t *buf = malloc(bytes);
            aw_model *r = NULL;
            FUZZ_ASSERT(checkpoint_write(m, 1, buf, bytes) == AW_OK && checkpoint_read(&r, buf, bytes) == AW_OK,
                        "save and load: %s", aw_error_message());
            FUZZ_ASSERT(memcmp(r->params, m->params, m->n_params * 4) == 0, "parameters round-trip");
            model_destroy(r);
            free(buf);
            break;
        }
        default: {
            if (checked++) break;
            double o[6];
            char names[80];
            st = aw_model_grad_check(m, 1, T > 3 ? 3 : T, encdec ? 2 : 0, 5, NULL, 1.0, o, names);
            FUZZ_STATUS(st);
        }
        }
    }
    aw_model_destroy(m);
    return 0;
}
