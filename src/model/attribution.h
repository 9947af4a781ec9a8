// attribution.h: attribution patching (Nanda 2023; Syed, Rager and Conmy 2023, "Attribution
// Patching Outperforms Automated Circuit Discovery"): the effect of patching each activation of a
// clean run with a corrupted run's, estimated to first order from one clean forward, one corrupted
// forward and one backward: (corrupt - clean) . d metric / d activation, at the named points of
// hooks.h, every layer, every position (and every head of the per-head points).
#ifndef AW_MODEL_ATTRIBUTION_H
#define AW_MODEL_ATTRIBUTION_H

#include "transformer.h"

#include <stddef.h>
#include <stdint.h>

// The metric of the clean run's logits: log p(target) at position (nats, patchingGrid's number
// there) when versus < 0, else logit[target] - logit[versus] at position.
typedef struct {
    int32_t target, position, versus;
} aw_attr_metric;

// points (n_points): hook points of the blocks (hooks.h: q, k, v, z, resid_pre, attn_out,
// resid_mid, mlp_out, resid_post). out: for each point in turn (layers, G, n) floats, G its heads
// (hook_has_heads: H for q and z, kv_heads for k and v) or 1: the estimate for patching that
// head's (or row's) activation at that one position; a head's sums its dHead columns. values[0],
// values[1]: the metric of the clean and of the corrupted run. A float32 decoder, trainable or
// inference-only: a trainable one's backward writes the parameters' gradients too (overwriting
// them), an inference-only one's computes the activations' gradients alone, in a buffer of the
// call's length freed before it returns. Quantized models are an Error saying so (the backward
// reads the float32 matrices they freed). Overwrites the model's activations.
int attribution_patching(aw_model *m, const int32_t *clean, const int32_t *corrupt, size_t n, const int *points,
                         size_t n_points, const aw_attr_metric *metric, float *out, float *values);

// The ablation grid's (hooks.h hook_ablation_grid) cost of each head, estimated to first order from
// one clean forward and one backward per span: zero-ablating head h's z changes the span's metric by
// about sum over positions of (0 - z) . g, mean-ablating by (mean(z) - z) . g, g = d metric / d z.
// ids (n >= 2); spans (n_spans pairs from, to): positions p in [from, to), 0 <= from < to <= n - 1,
// each with the metric sum_p log p(ids[p + 1] | ids[0..p]). out (modes set: bit 0 zero, bit 1 mean;
// n_spans, layers, H): the estimated change of the span's loss in bits per token, ablated minus
// clean (lab/circuits.js ablationGrid's deltas); clean (n_spans): the span's loss in bits per token.
// The same models as attribution_patching (inference-only included, quantized an Error).
int ablation_estimate(aw_model *m, const int32_t *ids, size_t n, const int32_t *spans, size_t n_spans, int modes,
                      float *out, float *clean);

#endif
