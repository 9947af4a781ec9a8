// transformer_train.c: a training step and what it draws on: the AdamW update with global-norm
// clipping, the task's batches, and evaluation on held-out batches.
#include "transformer.h"

#include "form_layer.h"

#include "../kernels/kernels.h"
#include "../kernels/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- the update -------------------------------------------------------------------------------

// The arena's range of a form that trains alone ([*lo, *hi)), or 0 when it does not.
static int trains_alone(const aw_model *m, int l, size_t *lo, size_t *hi) {
    const aw_attn_form *f = &m->self_form[l];
    if (aw_arch_is_rnn(m->cfg.arch) || !f->trains_alone) return 0;
    *lo = m->form_offset[1][l], *hi = *lo;
    aw_form_tensor ft[AW_SYNTH_MAX_TENSORS];
    const size_t nt = f->form->tensors(f, ft, AW_SYNTH_MAX_TENSORS);
    for (size_t i = 0; i < nt && i < AW_SYNTH_MAX_TENSORS; i++) *hi += ft[i].size;
    return 1;
}

double model_update(aw_model *m, const aw_train_config *tc) {
    const aw_adamw_config ac = {tc->lr, tc->beta1, tc->beta2, tc->eps, tc->weight_decay};
    int alone = 0;
    size_t lo, hi;
    m->revision++; // the weights change: open generation sessions may not continue
    for (int l = 0; l < m->cfg.layers; l++) alone |= trains_alone(m, l, &lo, &hi);
    if (!alone) {
        const double norm = clip_grad_norm(m->grads, m->n_params, tc->clip);
        m->step++;
        adamw_update(m->params, m->adam_m, m->adam_v, m->grads, m->decay, m->n_params, &ac, m->step);
        return norm;
    }
    // only the forms that train alone learn: every other gradient is zeroed, so the clipping norm is
    // theirs, and AdamW runs over their ranges only (the frozen parameters and their moments stay)
    size_t kept = 0;
    for (int l = 0; l < m->cfg.layers; l++)
        if (trains_alone(m, l, &lo, &hi)) {
            memset(m->grads + kept, 0, (lo - kept) * sizeof(float));
            kept = hi;
        }
    memset(m->grads + kept, 0, (m->n_params - kept) * sizeof(float));
    const double norm = clip_grad_norm(m->grads, m->n_params, tc->clip);
    m->step++;
    for (int l = 0; l < m->cfg.layers; l++)
        if (trains_alone(m, l, &lo, &hi))
            adamw_update(m->params + lo, m->adam_m + lo, m->adam_v + lo, m->grads + lo, m->decay ? m->decay + lo : NULL,
                         hi - lo, &ac, m->step);
    return norm;
}

// ---- tasks ------------------------------------------------------------------------------------

// The decoder positions T and encoder positions S one example of the task takes on this model.
static void task_positions(const aw_model *m, const aw_task_spec *spec, size_t *T, size_t *S) {
    const size_t ns = task_src_len(spec), nt = task_tgt_len(spec);
    if (m->cfg.arch == AW_ARCH_DECODER) *T = ns + (size_t)task_uses_separator(spec) + nt - 1, *S = 0;
    else *T = nt, *S = ns;
}

int model_task_dims(const aw_model *m, const aw_task_spec *spec, size_t *T, size_t *S) {
    int st = task_check(spec);
    if (st) return st;
    if (task_min_vocab(spec) > m->cfg.vocab)
        return aw_fail(AW_ERR_ARG, "task \"%s\" with these symbols needs vocab >= %d, and this model has %d",
                       task_name(spec->task), task_min_vocab(spec), (int)m->cfg.vocab);
    if (m->cfg.arch != AW_ARCH_DECODER && task_is_lm(spec))
        return aw_fail(AW_ERR_ARG, "task \"%s\" is language modelling: it needs a decoder-only model",
                       task_name(spec->task));
    task_positions(m, spec, T, S);
    const size_t max_len = (size_t)m->cfg.max_len, need = *T > *S ? *T : *S;
    if (need <= max_len) return AW_OK;
    // The longest length that fits, found by the same count of positions (shorter examples never
    // take more positions), so the advice cannot drift from the rule.
    aw_task_spec shorter = *spec;
    const size_t least = spec->task == AW_TASK_REPEAT ? 2 : 1;
    size_t fits = 0;
    for (shorter.length = spec->length - 1; !fits && shorter.length >= least; shorter.length--) {
        size_t t, s;
        task_positions(m, &shorter, &t, &s);
        if (t <= max_len && s <= max_len) fits = shorter.length;
    }
    if (fits)
        return aw_fail(AW_ERR_ARG, "task \"%s\" at length %zu needs %zu positions, more than maxLen = %d: pass "
                                   "{ length: %zu } (the longest that fits) or less, or create the model with "
                                   "maxLen >= %zu", task_name(spec->task), spec->length, need, (int)max_len, fits, need);
    return aw_fail(AW_ERR_ARG, "task \"%s\" at length %zu needs %zu positions, more than maxLen = %d, and no "
                               "length fits: create the model with maxLen >= %zu",
                   task_name(spec->task), spec->length, need, (int)max_len, need);
}

int model_make_batch(aw_model *m, const aw_task_spec *spec, size_t B, aw_rng *rng) {
    size_t T, S;
    int st = model_task_dims(m, spec, &T, &S);
    if (st || (st = model_reserve(m, B, T, S))) return st;
    const size_t ns = task_src_len(spec), nt = task_tgt_len(spec);
    int32_t *buf = malloc((ns + nt + 1) * sizeof(int32_t));
    if (!buf) return AW_ERR_NOMEM;
    int32_t *src = buf, *tgt = buf + ns;
    for (size_t b = 0; b < B; b++) {
        const size_t real = task_example(src, tgt, spec, rng);
        int32_t *tok = m->tokens + b * T, *trg = m->targets + b * T;
        if (aw_arch_has_source(m->cfg.arch)) {
            memcpy(m->src + b * S, src, ns * sizeof(int32_t));
            tok[0] = 0; // the separator starts the decoder
            for (size_t i = 0; i < T; i++) {
                if (i) tok[i] = tgt[i - 1];
                trg[i] = i < real && task_target_scored(spec, i) ? tgt[i] : -1;
            }
        } else { // seq = src, [0], tgt (the separator only when the task uses one): predict tgt
            const size_t sep = (size_t)task_uses_separator(spec), start = ns + sep; // tgt's first index in seq
            for (size_t i = 0; i < T; i++) {
                tok[i] = i < ns ? src[i] : i < start ? 0 : tgt[i - start];
                const size_t next = i + 1; // position i predicts seq[next]
                trg[i] = (next >= start && next - start < real && task_target_scored(spec, next - start)) ? tgt[next - start] : -1;
            }
        }
    }
    free(buf);
    return AW_OK;
}

int model_train_step(aw_model *m, const aw_task_spec *spec, size_t B, const aw_train_config *tc, aw_metrics *mt) {
    int st = model_make_batch(m, spec, B, &m->data_rng);
    if (st || (st = model_forward(m, mt)) || (st = model_backward(m))) return st;
    mt->grad_norm = model_update(m, tc);
    return isfinite(mt->grad_norm) ? AW_OK
                                   : aw_fail(AW_ERR_NONFINITE, "the gradients became NaN or Infinity (lr %g), so the "
                                                               "weights are now unusable: create the model again or "
                                                               "load a checkpoint, then train with a lower lr or clip > 0",
                                             (double)tc->lr);
}

int model_evaluate(aw_model *m, const aw_task_spec *train_spec, size_t B, size_t batches, uint64_t seed,
                   aw_metrics *mt) {
    aw_task_spec held = *train_spec;
    held.heldout = 1; // chars: text the training batches never show
    const aw_task_spec *spec = &held;
    aw_rng rng;
    aw_rng_seed(&rng, seed);
    double loss = 0.0, correct = 0.0;
    size_t count = 0;
    for (size_t i = 0; i < batches; i++) {
        aw_metrics one;
        int st = model_make_batch(m, spec, B, &rng);
        if (st || (st = model_forward(m, &one))) return st;
        loss += one.loss * (double)one.count, correct += one.accuracy * (double)one.count, count += one.count;
    }
    mt->loss = count ? loss / (double)count : 0.0;
    mt->accuracy = count ? correct / (double)count : 0.0;
    mt->count = count, mt->grad_norm = 0.0;
    return AW_OK;
}
