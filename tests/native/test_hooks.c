// Native tests of the hook points (src/model/hooks.c) under ASan + UBSan, 64- and 32-bit: every
// point cached, edits, the logit lens, attribution and the ablation grid over several model
// shapes (grouped-query, post-norm, tied), their identities against model_forward's logits, and
// every refusal leaving the model's parameters as they were. tests/node/hooks.test.js and
// hooks-torch.test.js hold the same points against forward and PyTorch through the wasm build.
#include "../../src/kernels/status.h"
#include "../../src/model/hooks.h"
#include "test.h"

#include <string.h>

static aw_model_config config(const char *form, int norm, int kv_heads, int tie) {
    aw_model_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 12, c.max_len = 8, c.seed = 3;
    c.form = aw_form_index(aw_form_find(form));
    c.norm = norm, c.kv_heads = kv_heads, c.tie = tie;
    return c;
}

static const int32_t IDS[6] = {1, 4, 2, 7, 1, 4};

// log p(next[p]) at each p < n - 1 from the last run's logits, as hooks.c reads them
static void target_logprobs(const aw_model *m, float *out, const int32_t *next, size_t n) {
    const size_t V = (size_t)m->cfg.vocab;
    for (size_t p = 0; p + 1 < n; p++) {
        const float *row = m->a.logits + p * V;
        float mx = row[0];
        for (size_t v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
        double z = 0.0;
        for (size_t v = 0; v < V; v++) z += exp((double)(row[v] - mx));
        out[p] = (float)((double)(row[next[p]] - mx) - log(z));
    }
}

// model_forward's logits of IDS (as the API's forward runs it: keep_attention on)
static void clean_logits(aw_model *m, float *out) {
    m->keep_attention = 1;
    CHECK(model_reserve(m, 1, 6, 0) == AW_OK, "reserve");
    memcpy(m->tokens, IDS, sizeof IDS);
    for (int i = 0; i < 6; i++) m->targets[i] = -1;
    CHECK(model_forward(m, NULL) == AW_OK, "forward");
    m->keep_attention = 0;
    memcpy(out, m->a.logits, 6 * (size_t)m->cfg.vocab * sizeof(float));
}

static void one_model(const char *label, aw_model_config cfg) {
    aw_model *m;
    CHECK(model_create(&m, &cfg) == AW_OK, "%s: create: %s", label, aw_error_message());
    const size_t V = (size_t)cfg.vocab, n = 6, L = (size_t)cfg.layers, H = (size_t)cfg.heads;
    float ref[6 * 9], logits[6 * 9];
    clean_logits(m, ref);
    float *params = malloc(m->n_params * sizeof(float));
    memcpy(params, m->params, m->n_params * sizeof(float));

    aw_hook_run r;
    CHECK(hook_run_init(&r, m, n) == AW_OK, "%s: init", label);
    CHECK(hook_run_keep(&r, -1, -1) == AW_OK, "%s: keep all", label);
    CHECK(hook_run_forward(&r, IDS, logits) == AW_OK, "%s: run: %s", label, aw_error_message());
    CHECK(memcmp(logits, ref, sizeof ref) == 0, "%s: the cached run's logits are forward's", label);
    // a clean patch of every position of resid_pre 0 and of every z: the same logits bit for bit
    size_t dims[3], floats;
    hook_shape(m, AW_HOOK_RESID_PRE, n, dims, &floats);
    CHECK(hook_run_patch(&r, AW_HOOK_RESID_PRE, 0, NULL, -1, NULL, -1, r.cache[AW_HOOK_RESID_PRE][1], floats) == AW_OK, "%s: patch", label);
    hook_shape(m, AW_HOOK_Z, n, dims, &floats);
    CHECK(hook_run_patch(&r, AW_HOOK_Z, 1, NULL, -1, NULL, -1, r.cache[AW_HOOK_Z][2], floats) == AW_OK, "%s: patch z", label);
    CHECK(hook_run_forward(&r, IDS, logits) == AW_OK && memcmp(logits, ref, sizeof ref) == 0, "%s: clean patches", label);
    // a zero ablation changes the logits after the first position only where it reaches
    hook_run_clear_edits(&r);
    CHECK(hook_run_ablate(&r, 1, 1, AW_HOOK_ZERO, NULL, -1) == AW_OK, "%s: ablate", label);
    CHECK(hook_run_forward(&r, IDS, logits) == AW_OK, "%s: ablated run", label);
    CHECK(memcmp(logits, ref, sizeof ref) != 0, "%s: the ablation changed the logits", label);
    // refusals, each naming its range
    const int32_t bad_pos = 6, bad_head = 2;
    CHECK(hook_run_ablate(&r, 2, 0, AW_HOOK_ZERO, NULL, -1) == AW_ERR_ARG && strstr(aw_error_message(), "[0, 2)"), "%s: layer", label);
    aw_clear_error();
    CHECK(hook_run_ablate(&r, 0, 0, AW_HOOK_MEAN, &bad_pos, 1) == AW_ERR_ARG && strstr(aw_error_message(), "[0, 6)"), "%s: position", label);
    aw_clear_error();
    CHECK(hook_run_patch(&r, AW_HOOK_Z, 0, NULL, -1, &bad_head, 1, r.cache[AW_HOOK_Z][1], floats) == AW_ERR_ARG, "%s: head", label);
    aw_clear_error();
    CHECK(hook_run_patch(&r, AW_HOOK_Z, 0, NULL, -1, NULL, -1, r.cache[AW_HOOK_Z][1], floats - 1) == AW_ERR_ARG, "%s: shape", label);
    aw_clear_error();
    CHECK(hook_run_patch(&r, AW_HOOK_PATTERN, 0, NULL, -1, NULL, -1, NULL, 0) == AW_ERR_ARG, "%s: pattern", label);
    aw_clear_error();
    int point, layer;
    CHECK(hook_parse(m, "blocks.1.attn.hook_k", &point, &layer) == AW_OK && point == AW_HOOK_K && layer == 1, "%s: parse", label);
    CHECK(hook_parse(m, "blocks.2.attn.hook_k", &point, &layer) == AW_ERR_ARG, "%s: parse layer", label);
    aw_clear_error();
    CHECK(hook_parse(m, "blocks.1.attn.hook_k.x", &point, &layer) == AW_ERR_ARG, "%s: parse junk", label);
    aw_clear_error();
    hook_run_free(&r);

    // the logit lens's last layer is forward's logits
    float *lens = malloc(L * n * V * sizeof(float));
    CHECK(hook_logit_lens(m, IDS, n, lens) == AW_OK, "%s: lens", label);
    CHECK(memcmp(lens + (L - 1) * n * V, ref, sizeof ref) == 0, "%s: the lens's last layer", label);
    free(lens);
    // attribution sums to the logit (pre-norm)
    if (cfg.norm == AW_NORM_PRE) {
        int32_t tgt[6];
        for (size_t p = 0; p < n; p++) tgt[p] = IDS[(p + 1) % n];
        float heads[2 * 2 * 6], mlp[2 * 6], embed[6], rest[6], logit[6], sum[6];
        CHECK(hook_attribution(m, IDS, n, tgt, heads, mlp, embed, rest, logit) == AW_OK, "%s: attribution", label);
        for (size_t p = 0; p < n; p++) {
            double s = embed[p] + rest[p];
            for (size_t l = 0; l < L; l++) {
                s += mlp[l * n + p];
                for (size_t h = 0; h < H; h++) s += heads[(l * H + h) * n + p];
            }
            sum[p] = (float)s;
            CHECK(logit[p] == ref[p * V + (size_t)tgt[p]], "%s: the clean logit", label);
        }
        char name[64];
        snprintf(name, sizeof name, "%s: attribution sum vs logit", label);
        REPORT(name, max_err(sum, logit, n), TOL_ATTENTION);
    } else {
        int32_t tgt[6] = {0};
        float buf[64];
        CHECK(hook_attribution(m, IDS, n, tgt, buf, buf, buf, buf, buf) == AW_ERR_ARG, "%s: post-norm attribution", label);
        aw_clear_error();
    }
    float grid[2 * 2 * 2 * 5], clean[5];
    CHECK(hook_ablation_grid(m, IDS, n, 3, grid, clean) == AW_OK, "%s: grid", label);
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) CHECK(grid[i] <= 0.0f && isfinite(grid[i]), "%s: grid[%zu] a log-probability", label, i);
    // the patching grid of resid_pre (the other input's stream into IDS) against single runs, bit for bit
    {
        static const int32_t OTHER[6] = {1, 5, 2, 7, 3, 4};
        aw_hook_run o;
        CHECK(hook_run_init(&o, m, n) == AW_OK, "%s: other init", label);
        for (size_t l = 0; l < L; l++) CHECK(hook_run_keep(&o, AW_HOOK_RESID_PRE, (int)l) == AW_OK, "%s: keep", label);
        CHECK(hook_run_forward(&o, OTHER, NULL) == AW_OK, "%s: other run", label);
        float *from = malloc(L * n * (size_t)cfg.d_model * sizeof(float));
        for (size_t l = 0; l < L; l++)
            memcpy(from + l * n * (size_t)cfg.d_model, o.cache[AW_HOOK_RESID_PRE][l + 1], n * (size_t)cfg.d_model * sizeof(float));
        hook_run_free(&o);
        float pgrid[2 * 6 * 5], pclean[5], single[5];
        CHECK(hook_patching_grid(m, IDS, n, AW_HOOK_RESID_PRE, from, IDS + 1, pgrid, pclean) == AW_OK, "%s: patching grid", label);
        for (size_t l = 0; l < L; l++)
            for (size_t q = 0; q < n; q++) {
                aw_hook_run one;
                const int32_t pos = (int32_t)q;
                CHECK(hook_run_init(&one, m, n) == AW_OK, "%s: one", label);
                CHECK(hook_run_patch(&one, AW_HOOK_RESID_PRE, (int)l, &pos, 1, NULL, -1, from + l * n * (size_t)cfg.d_model,
                                     n * (size_t)cfg.d_model) == AW_OK, "%s: one patch", label);
                CHECK(hook_run_forward(&one, IDS, NULL) == AW_OK, "%s: one run", label);
                target_logprobs(m, single, IDS + 1, n);
                CHECK(memcmp(single, pgrid + (l * n + q) * 5, sizeof single) == 0, "%s: patching grid cell (%zu, %zu)", label, l, q);
                hook_run_free(&one);
            }
        free(from);
    }
    CHECK(memcmp(params, m->params, m->n_params * sizeof(float)) == 0, "%s: the parameters are untouched", label);
    clean_logits(m, logits);
    CHECK(memcmp(logits, ref, sizeof ref) == 0, "%s: forward after the hooked runs", label);
    CHECK(m->hooks == NULL, "%s: no hooks left on the model", label);
    free(params);
    model_destroy(m);
}

int main(void) {
    one_model("softmax", config("softmax", AW_NORM_PRE, 0, 0));
    one_model("softmax, 1 K/V head, tied", config("softmax", AW_NORM_PRE, 1, 1));
    one_model("linear:elu+1, post-norm", config("linear:elu+1", AW_NORM_POST, 0, 0));
    one_model("gated-delta", config("gated-delta", AW_NORM_PRE, 0, 0));
    aw_model_config ed = config("softmax", AW_NORM_PRE, 0, 0);
    ed.arch = AW_ARCH_ENCODER_DECODER;
    aw_model *m;
    CHECK(model_create(&m, &ed) == AW_OK, "encoder-decoder");
    aw_hook_run r;
    CHECK(hook_run_init(&r, m, 4) == AW_ERR_ARG && strstr(aw_error_message(), "decoder-only"), "encoder-decoder refused");
    aw_clear_error();
    hook_run_free(&r);
    model_destroy(m);
    printf("%s\n", test_failures ? "FAILED" : "ok");
    return test_failures != 0;
}
