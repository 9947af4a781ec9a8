// forms.js: the attention forms the playground knows, how to call each through the package, and
// which of them the loaded library actually has. The list, the words (label, formula, summary,
// paper, cost) and the options are the library's own registry (lib.forms, from the C descriptors):
// a form added in C appears here with nothing to edit. A form appears only when a probe call on
// tiny inputs succeeds. Used by the page (heatmaps) and by the worker (timings).

// The page's sandbox sizes, by option name: a form gets one only if it declares that option
// (the labels and formulas of the registry quote these sizes: w = 4, stride 3, k = 8). Options
// not named here keep their C defaults (a factorized-dense layer's a and b, a mixture's components).
const SANDBOX_OPTIONS = { window: 4, stride: 3, k: 8 };

/** Group labels of the form picker, by family (a family not named here shows its own name). */
export const FAMILY_LABELS = { softmax: 'Softmax', local: 'Local (sliding window)', linear: 'Linear attention', synthesizer: 'Synthesizer',
  retention: 'Retention', gated: 'Gated linear attention (a decay gate)', gla: 'Gated linear attention (GLA)',
  delta: 'DeltaNet (a state that overwrites)', linformer: 'Linformer',
  mla: 'Multi-head latent attention (MLA)' };

// The registry entry of a form: a form object from probeForms (which carries it), or a name looked up in lib.forms.
function entryOf(form, registry) {
  if (form && typeof form === 'object') return form.entry ?? form;
  return registry?.find((f) => f.name === form) ?? null;
}

/** The formula text of a form (a form from probeForms or a registry entry). */
export function formulaOf(form) {
  const entry = entryOf(form);
  return entry?.formula || `(no formula text for ${entry?.name ?? form})`;
}

/** The attentionOptions a form gets in the sandbox: SANDBOX_OPTIONS, for the options it declares. */
export function sandboxOptions(form) {
  const opts = {};
  // only a form's own sizes (an option with a default: local's window, ...), never a switch that is
  // off unless set (softmax's window, which makes it a sliding window and refuses non-causal calls)
  for (const o of form.options ?? []) if (o.name in SANDBOX_OPTIONS && o.default !== null) opts[o.name] = SANDBOX_OPTIONS[o.name];
  return opts;
}

// What a form's weights are when they are not a distribution (form.signed: no softmax, so rows
// need not sum to 1 and entries can pass 1), by family; the heatmaps' legend says it.
const NOT_A_DISTRIBUTION = {
  retention: 'query-key products decayed by γ^(i−j)',
  gated: 'query-key products decayed by a learned gate from j to i',
  gla: 'query-key products decayed by the gates from j to i',
  delta: 'query-key products through a state that each step partly overwrites (the delta rule)',
  linformer: 'products with k projected keys, spread back over the positions',
};

/**
 * One sentence for the legend of a form whose weights are not probabilities (null for a form whose
 * rows are distributions): what the colours are instead. form: a form from probeForms or a registry entry.
 */
export function weightsMeaning(form, registry) {
  const entry = entryOf(form, registry);
  if (!entry?.signed) return null;
  const what = NOT_A_DISTRIBUTION[entry.family] ?? 'signed, unnormalised query-key products';
  return `Not probabilities: the colours are |A|, magnitudes of ${what}; rows need not sum to 1 and values can pass 1.`;
}

/**
 * A model's weights for display: magnitudes for a form whose scores are signed (form.signed: no
 * softmax makes them positive, and the heatmaps' colour scale starts at 0). form: a form from
 * probeForms, a registry entry, or a name with registry = lib.forms.
 */
export function displayWeights(form, weights, registry) {
  return entryOf(form, registry)?.signed ? weights.map(Math.abs) : weights;
}

// What a layer reports besides its output: a mixture's weights alpha over its components, per head
// (softmax over each head's row of the tensor 'alphaLogits'; the components are the layer's option).
function mixtureOf(layer) {
  const components = layer.options?.components;
  let offset = 0;
  for (const t of layer.tensors) {
    if (t.name === 'alphaLogits' && Array.isArray(components) && components.length) {
      const c = components.length;
      const logits = layer.params.subarray(offset, offset + t.size);
      const alphas = new Float32Array(t.size);
      for (let h = 0; h + c <= t.size; h += c) {
        const row = logits.subarray(h, h + c);
        const max = Math.max(...row);
        let sum = 0;
        for (let i = 0; i < c; i++) sum += (alphas[h + i] = Math.exp(row[i] - max));
        for (let i = 0; i < c; i++) alphas[h + i] /= sum;
      }
      return { alphas, components: [...components] };
    }
    offset += t.size;
  }
  return {};
}

// One caller for a registry form. run(inp, cache?) takes inp: { n, d, heads, q, k, v, x (n*d each),
// causal, weights (boolean), seed, maxLen? (default n) } and returns { output, weights? } (weights as
// magnitudes for a signed form; a mixture adds alphas and components). A form with parameters runs
// through a layer, made per (form, d, heads, maxLen, seed, n, causal) and kept in cache when one is
// given (clearCache releases it), else disposed after the call; the others through lib.attention.
function caller(lib, form) {
  const keep = form.hasParams || form.fixedLength;
  const attentionOptions = sandboxOptions(form);
  return (inp, cache) => {
    const maxLen = inp.maxLen ?? inp.n;
    const seed = inp.seed ?? 1;
    const shape = { n: inp.n, d: inp.d, heads: inp.heads, causal: Boolean(inp.causal), maxLen, seed, attentionOptions };
    const data = { q: inp.q, k: inp.k, v: inp.v, returnWeights: Boolean(inp.weights) };
    if (inp.x) data.x = inp.x;
    let result;
    if (!keep) {
      result = lib.attention(form.name, { ...shape, ...data });
    } else {
      const key = `${form.name}/${inp.d}/${inp.heads}/${maxLen}/${seed}/${inp.n}/${shape.causal}`;
      let layer = cache?.get(key);
      if (!layer) {
        layer = lib.attentionLayer(form.name, shape);
        cache?.set(key, layer);
      }
      try {
        result = Object.assign(layer.forward(data), mixtureOf(layer));
      } finally {
        if (!cache) layer.dispose();
      }
    }
    if (form.signed && result.weights) result.weights = result.weights.map(Math.abs);
    return result;
  };
}

/** Releases the layers a cache holds. */
export function clearCache(cache) {
  for (const layer of cache.values()) layer.dispose();
  cache.clear();
}

/**
 * The forms this library can run, found by calling each on tiny inputs.
 * Returns { forms: [{ id, family, label, causal: boolean (has a causal form), decoderForm, crossForm, signed,
 *   entry (the registry entry: words, paper, cost, options), run(inp, cache?) }],
 *   skipped: [{ id, reason }] } (skipped: the library has the form, but its probe failed).
 */
export function probeForms(lib) {
  const n = 4, d = 4;
  const tiny = (seed) => Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 1.7 + seed));
  const inp = { n, d, heads: 1, q: tiny(1), k: tiny(2), v: tiny(3), x: tiny(4), seed: 1, weights: true };
  const found = [];
  const skipped = [];
  if (typeof lib.attention !== 'function' || !Array.isArray(lib.forms)) {
    return { forms: found, skipped: [{ id: '(all)', reason: 'this build of the library has no lib.attention / lib.forms' }] };
  }
  for (const entry of lib.forms) {
    // decoderForm: the form a decoder's self-attention uses instead when this one has no causal form
    // (null: none, so no model with a decoder can use it); crossForm: the form of cross-attention
    const form = { id: entry.name, family: entry.family, label: entry.label || entry.name, signed: Boolean(entry.signed),
      nonCausal: entry.nonCausal !== false,
      decoderForm: entry.decoderForm ?? null, crossForm: entry.crossForm ?? null, entry, run: caller(lib, entry) };
    try {
      const r = form.run({ ...inp, causal: !entry.nonCausal });
      if (r?.weights?.length !== n * n || r.output?.length !== n * d) {
        skipped.push({ id: form.id, reason: 'the probe call returned no n*n weights or no n*d output' });
        continue;
      }
    } catch (e) {
      skipped.push({ id: form.id, reason: e.message });
      continue;
    }
    let causal = false;
    if (entry.causal) {
      try {
        form.run({ ...inp, causal: true });
        causal = true;
      } catch {
        causal = false;
      }
    }
    found.push({ ...form, causal });
  }
  return { forms: found, skipped };
}
