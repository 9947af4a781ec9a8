// features.js: what a sparse autoencoder's features do on held-out text (the page's feature browser,
// web/features-worker.js, and its tests). Pure functions over the library's calls; double precision
// for the sums.
//   studyFeatures({ model, sae, hook, ids, unembed })  every feature's top-activating contexts on
//     held-out ids (windows of at most 128 tokens read through runWithCache), its activation
//     histogram and density, and the tokens its decoder direction promotes (the direction through the
//     final norm's gain and the classifier: direct logit attribution); and the SAE's held-out FVU
//   continueGreedy({ model, ids, tokens, hooks })  a greedy continuation, each step one runWithHooks
//     (hooks(ids) -> runWithHooks options, or null for none)
//   featureDirections(sae)  each feature's decoder direction (dSae x dIn): the decoder's rows

export const TOP = 8; // contexts kept per feature
export const BINS = 12; // histogram bins over (0, the feature's largest activation]

/** Each feature's decoder direction (what decode adds per unit of it): the SAE's dec.w, dSae x dIn. */
// tokens per forward when reading a text: a long window of a large model costs memory for every
// position's activations (GPT-2 small's 1024 tokens do not fit the wasm32 heap), and a short one
// only splits the context
const WINDOW = 128;

export function featureDirections(sae) {
  return sae.params()['dec.w'];
}

/**
 * The hook's rows for ids, a window of `window` tokens (at most maxLen) at a time, each forward
 * stopped once the hook is computed (runWithCache's stopAfter: no later block, no logits): { data (n x dIn), n, dIn }.
 */
export function activations(model, hook, ids, window = WINDOW) {
  const L = Math.min(model.config.maxLen, window), parts = [];
  let dIn = 0;
  for (let s = 0; s < ids.length; s += L) {
    const win = Int32Array.from(ids.slice(s, Math.min(ids.length, s + L)));
    const { data, shape } = model.runWithCache(win, { names: [hook], stopAfter: true }).cache[hook];
    dIn = shape[shape.length - 1];
    parts.push(data);
  }
  const data = new Float32Array(ids.length * dIn);
  let at = 0;
  for (const p of parts) data.set(p, at), (at += p.length);
  return { data, n: ids.length, dIn };
}

/**
 * unembed: { weight (V x dIn, the classifier), gain (dIn, the final norm's) , limit (tokens shown:
 * the tokenizer's size) } or null; directions: featureDirections(sae) when the caller has them. Returns { fvu, features: [{ id, density, max, mean, hist, top:
 * [{ pos, value }], promoted: [{ token, logit }] (24, largest first) }] } (top: positions in ids, largest first).
 */
export function studyFeatures({ model, sae, hook, ids, unembed = null, directions = null, top = TOP }) {
  const { dSae, dIn, k } = sae.config;
  const { data, n } = activations(model, hook, ids);
  const code = sae.encode(data);
  // held-out FVU: the reconstruction's squared error over the activations' variance about their mean
  const z = new Float32Array(n * dSae);
  for (let r = 0; r < n; r++) for (let t = 0; t < k; t++) {
    const v = code.values[r * k + t];
    if (v > 0) z[r * dSae + code.indices[r * k + t]] = v;
  }
  const xhat = sae.decode(z);
  const mean = new Float64Array(dIn);
  for (let r = 0; r < n; r++) for (let i = 0; i < dIn; i++) mean[i] += data[r * dIn + i] / n;
  let err = 0, total = 0;
  for (let r = 0; r < n; r++) for (let i = 0; i < dIn; i++) {
    const x = data[r * dIn + i];
    err += (x - xhat[r * dIn + i]) ** 2;
    total += (x - mean[i]) ** 2;
  }
  const features = Array.from({ length: dSae }, (_, id) => ({ id, fires: 0, max: 0, sum: 0, top: [] }));
  for (let r = 0; r < n; r++) for (let t = 0; t < k; t++) {
    const v = code.values[r * k + t];
    if (!(v > 0)) continue;
    const f = features[code.indices[r * k + t]];
    f.fires++;
    f.sum += v;
    if (v > f.max) f.max = v;
    if (f.top.length < top || v > f.top[f.top.length - 1].value) {
      f.top.push({ pos: r, value: v });
      f.top.sort((a, b) => b.value - a.value);
      if (f.top.length > top) f.top.pop();
    }
  }
  for (const f of features) {
    f.hist = new Array(BINS).fill(0);
    f.density = f.fires / n;
    f.mean = f.fires ? f.sum / f.fires : 0;
    delete f.sum;
  }
  for (let r = 0; r < n; r++) for (let t = 0; t < k; t++) {
    const v = code.values[r * k + t];
    if (!(v > 0)) continue;
    const f = features[code.indices[r * k + t]];
    f.hist[Math.min(BINS - 1, Math.floor((v / f.max) * BINS))]++;
  }
  if (unembed) {
    const dirs = directions ?? featureDirections(sae);
    const { weight, gain, limit } = unembed, V = weight.length / dIn;
    const shown = Math.min(V, limit ?? V);
    for (const f of features) {
      const d = dirs.subarray(f.id * dIn, (f.id + 1) * dIn);
      const logits = new Float64Array(shown);
      for (let v = 0; v < shown; v++) {
        let s = 0;
        for (let i = 0; i < dIn; i++) s += weight[v * dIn + i] * gain[i] * d[i];
        logits[v] = s;
      }
      f.promoted = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a]).slice(0, 24).map((token) => ({ token, logit: logits[token] }));
    }
  }
  return { fvu: total > 0 ? err / total : 0, n, features };
}

/** A greedy continuation of ids (at most the model's maxLen in all), tokens long; hooks(ids) gives runWithHooks' options. */
export function continueGreedy({ model, ids, tokens, limit, hooks = () => null }) {
  const out = Array.from(ids);
  const { vocab, maxLen } = model.config;
  for (let s = 0; s < tokens && out.length < maxLen; s++) {
    const win = Int32Array.from(out);
    const opts = hooks(win);
    const { logits } = opts ? model.runWithHooks(win, opts) : model.forward(win);
    const row = logits.subarray((win.length - 1) * vocab, win.length * vocab);
    let best = 1; // token 0 is the unknown token of every tokenizer here: never generated
    for (let v = 2; v < Math.min(vocab, limit ?? vocab); v++) if (row[v] > row[best]) best = v;
    out.push(best);
  }
  return out.slice(ids.length);
}
