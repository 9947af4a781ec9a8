// api_synthesizer.c: Synthesizer layers for the wrapper (wasm/synthesizer.js). A layer is an opaque
// handle (a pointer into the wasm heap); its parameters are one float block whose named tensors
// the wrapper finds through the tensor table (name, offset, size) exported here.
#include "api.h"

#include "../attention/synthesizer.h"

// *out = a new layer. variant: enum aw_synth_variant (0 dense, 1 random, 2 factorized-dense,
// 3 factorized-random, 4 mixture); components (n_components) for a mixture, each 0..3 or 5 (dot).
AW_API int aw_synth_create(aw_synthesizer **out, int32_t variant, int32_t d, int32_t max_len, int32_t heads,
                           uint32_t seed, int32_t trainable, int32_t a, int32_t b, int32_t k,
                           const int32_t *components, int32_t n_components) {
    aw_clear_error();
    if (!out || d <= 0 || max_len <= 0 || heads <= 0 || a < 0 || b < 0 || k < 0 || n_components < 0 ||
        n_components > AW_SYNTH_MAX_COMPONENTS || (n_components > 0 && !components))
        return aw_fail(AW_ERR_ARG, "createSynthesizer: sizes must be positive and 1 to %d components", AW_SYNTH_MAX_COMPONENTS);
    aw_synthesizer_config cfg = {variant, (size_t)d, (size_t)max_len, (size_t)heads, seed, trainable != 0,
                                 (size_t)a, (size_t)b, (size_t)k, (size_t)n_components, {0}};
    for (int32_t i = 0; i < n_components; i++) cfg.components[i] = components[i];
    const int st = synthesizer_create(out, &cfg);
    return st == AW_ERR_NOMEM ? aw_fail(st, "out of memory: the wasm heap could not grow to hold the parameters; use "
                                            "a smaller maxLen, d or heads")
                              : st;
}

AW_API void aw_synth_destroy(aw_synthesizer *s) { synthesizer_destroy(s); }

// The tensor table: count, then per index its name (NUL-terminated), offset and size in floats.
AW_API int32_t aw_synth_tensor_count(const aw_synthesizer *s) {
    aw_clear_error(); return s ? (int32_t)s->n_tensors : 0; }
AW_API const char *aw_synth_tensor_name(const aw_synthesizer *s, int32_t i) {
    return s && i >= 0 && (size_t)i < s->n_tensors ? s->tensors[i].name : 0;
}
AW_API int32_t aw_synth_tensor_offset(const aw_synthesizer *s, int32_t i) {
    aw_clear_error();
    return s && i >= 0 && (size_t)i < s->n_tensors ? (int32_t)s->tensors[i].offset : -1;
}
AW_API int32_t aw_synth_tensor_size(const aw_synthesizer *s, int32_t i) {
    aw_clear_error();
    return s && i >= 0 && (size_t)i < s->n_tensors ? (int32_t)s->tensors[i].size : -1;
}
AW_API float *aw_synth_params(const aw_synthesizer *s) { return s ? s->params : 0; }

// out (n, dv), weights (heads, n, n) or NULL, x (n, d) or NULL, v (n, dv), q, k (n, dqk) or NULL.
// path: 0 = fast, 1 = naive reference.
AW_API int aw_synth_forward(aw_synthesizer *s, float *out, float *weights, const float *x, const float *v,
                            const float *q, const float *k, int32_t n, int32_t dv, int32_t dqk, int32_t causal,
                            int32_t path) {
    aw_clear_error();
    if (!s || n <= 0 || dv <= 0 || dqk < 0) return aw_fail(AW_ERR_ARG, "synthesizer forward: n and dv must be positive");
    const int st = path == 1
                       ? synthesizer_forward_ref(s, out, weights, x, v, q, k, (size_t)n, (size_t)dv, (size_t)dqk, causal != 0)
                       : synthesizer_forward(s, out, weights, x, v, q, k, (size_t)n, (size_t)dv, (size_t)dqk, causal != 0);
    switch (st) { // the layer's own checks return bare statuses: say what they mean
    case AW_OK: return AW_OK;
    case AW_ERR_ARG:
        return aw_fail(st, "synthesizer forward: n must be at most maxLen (%zu), dv divisible by heads (%zu), x given "
                           "for a dense kind, q and k (dqk divisible by heads) for a dot component",
                       s->cfg.max_len, s->cfg.heads);
    case AW_ERR_NONFINITE: return aw_fail(st, "a logit is NaN or infinite; check the values written into layer.params");
    case AW_ERR_NOMEM:
        return aw_fail(st, "out of memory: the layer's workspace (heads * n * n floats, times the components + 1 for a "
                           "mixture) does not fit; use a smaller n");
    default: return aw_fail(st, "synthesizer forward failed");
    }
}

// alphas (heads, C): the mixture's softmax(alphaLogits) per head.
AW_API int aw_synth_alphas(const aw_synthesizer *s, float *alphas) {
    aw_clear_error();
    const int st = synthesizer_alphas(s, alphas);
    if (st == AW_ERR_NONFINITE) return aw_fail(st, "alphaLogits holds a NaN or an infinity");
    return st ? aw_fail(st, "alphas: a mixture only") : AW_OK;
}
