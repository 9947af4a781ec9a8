// forms.js: the attention forms the playground knows, how to call each through the package, and
// which of them the loaded library actually has. A form appears only when a probe call on tiny
// inputs succeeds, so families show up as the library grows (no list to keep in step by hand).
// Used by the page (heatmaps) and by the worker (timings).

const SYNTH_VARIANTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'mixture'];

// The formulas, as text, from docs/attention-forms.md (sections 1-3).
const FORMULAS = {
  softmax: `A = softmax(Q Kᵀ · s + M)
s = 1/√d_head
M = 0 where allowed, −∞ where masked
    (causal: masked where j > i)
O = A V

Time O(n² d). Without weights the fast
path streams over the keys (online
softmax) and never stores A.`,
  local: `A = softmax(Q Kᵀ · s + M_w)
M_w = 0 inside the band, −∞ outside:
  causal: i − w < j ≤ i  (last w keys)
  centred: |i − j| ≤ w / 2
O = A V        (here w = 4)

Time O(n w d): linear in n for a
fixed window (Longformer's local band).`,
  strided: `A = softmax(Q Kᵀ · s + M)
M = 0 on the band (the last w keys)
    and on every key j with |i − j| a
    multiple of the stride, −∞ elsewhere
O = A V     (here w = 4, stride 3)

Time O(n (w + n/stride) d): the Sparse
Transformer's local + strided pattern.`,
  'linear:elu+1': `φ(x) = elu(x) + 1
     = x + 1 for x > 0, eˣ otherwise
A_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j')

O_i = φ(q_i) S / (φ(q_i)·z)
S = Σ_j φ(k_j)ᵀ v_j    (d × dv)
z = Σ_j φ(k_j)

Time O(n d dv): linear in n. Causal:
S_i, z_i are running sums (an RNN).`,
  'linear:relu': `φ(x) = max(x, 0)
A_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j')

O_i = φ(q_i) S / (φ(q_i)·z)
S = Σ_j φ(k_j)ᵀ v_j    (d × dv)
z = Σ_j φ(k_j)

A row whose similarities are all zero
stays all zero. Time O(n d dv).`,
  'linear:efficient': `A = softmax₂(Q) · softmax₁(K)ᵀ
softmax₂: Q over its feature axis
softmax₁: K over the positions

O = softmax₂(Q) (softmax₁(K)ᵀ V)

Rows sum to 1 by construction.
No causal form. Time O(n d dv).`,
  'linear:taylor': `sim(q, k) = 1 + q̂·k̂     (eˣ ≈ 1 + x)
q̂ = q/|q|,  k̂ = k/|k|
A_ij = sim(q_i, k_j) / Σ_j' sim(q_i, k_j')

O_i = (Σ_j v_j + q̂_i S) / (m + q̂_i·Σ_j k̂_j)
S = Σ_j k̂_jᵀ v_j

Time O(n d dv): linear in n.`,
  retention: `A_ij = (q_i·k_j) s γ^(i−j)  for j ≤ i
O = A V        no softmax, no normaliser
γ_h = 1 − 2^(−5−h)   (RetNet: one decay
                      per head)
Recurrent:  S_i = γ S_{i−1} + k_iᵀ v_i
            o_i = s q_i S_i
Parallel, recurrent and chunked forms
give the same numbers. Generation keeps
one d × d state: time O(n d²).
Shown: |A_ij| (scores can be negative).`,
  linformer: `K' = E K,  V' = F V
E, F: k × L learned  (here k = 8)
A = softmax(Q K'ᵀ · s)     (n × k)
O = A V'

Shown: |A F|, the implied n × n matrix.
Time O(n k d): linear in n. No causal
form: each row of E K mixes every
position, later ones included.`,
  'synth:dense': `B = relu(X W₁ + b₁) W₂ + b₂
W₁: d × d,  W₂: d × L  (first n columns)
A = softmax(B)
O = A V,  V = X W_v

No token-to-token dot product: row i
of A comes from token i alone.`,
  'synth:random': `B = R    (R: L × L, random;
          top-left n × n block)
A = softmax(B)
O = A V

A does not depend on the input: what
to attend to depends on position only.`,
  'synth:factorized-dense': `B_a: dense head (n × a)
B_b: dense head (n × b),  a · b = L
B[i, j] = B_a[i, ⌊j/b⌋] · B_b[i, j mod b]
A = softmax(B)
O = A V

Here L = 128 = 8 · 16 (a = 8, b = 16).`,
  'synth:factorized-random': `B = R₁ R₂ᵀ    (R₁, R₂: L × k, random;
              here k = 8)
A = softmax(B)
O = A V

A low-rank attention pattern that does
not depend on the input.`,
  'synth:mixture': `B = Σ_i α_i B_i   over synthesizer
    logits and Q Kᵀ · s
α = softmax(w), w learnable (Σ α = 1)
A = softmax(B)
O = A V

Here: random R mixed with Q Kᵀ · s.`,
};

const LABELS = {
  softmax: 'Softmax (scaled dot-product)',
  local: 'Local (sliding window, w = 4)',
  strided: 'Strided sparse (w = 4, every 3rd key)',
  'linear:elu+1': 'Linear, φ = elu + 1',
  'linear:relu': 'Linear, φ = relu',
  'linear:efficient': 'Linear, efficient attention',
  'linear:taylor': 'Linear, Taylor (1 + q̂·k̂)',
  retention: 'Retention (RetNet, decayed linear)',
  linformer: 'Linformer (k = 8 projected rows)',
  'synth:dense': 'Synthesizer, dense',
  'synth:random': 'Synthesizer, random',
  'synth:factorized-dense': 'Synthesizer, factorized dense',
  'synth:factorized-random': 'Synthesizer, factorized random',
  'synth:mixture': 'Synthesizer, mixture',
};

export const FAMILY_LABELS = { softmax: 'Softmax', local: 'Local (sliding window)', linear: 'Linear attention', synth: 'Synthesizer',
  retention: 'Retention', linformer: 'Linformer' };

/** The formula text of a form id (also for ids this file does not list). */
export function formulaOf(id) {
  return FORMULAS[id] ?? `(no formula text for ${id})`;
}

// The largest divisor of L that is at most sqrt(L): factorized-dense needs a * b = L.
function splitLength(L) {
  let a = Math.floor(Math.sqrt(L));
  while (L % a) a--;
  return a;
}

/** The options createSynthesizer gets for a variant (the extra sizes some variants need). */
export function synthOptions(variant, { d, heads, n, maxLen, seed }) {
  const L = maxLen ?? n;
  const opts = { variant, d, maxLen: L, heads, seed };
  if (variant === 'factorized-dense') Object.assign(opts, { a: splitLength(L), b: L / splitLength(L) });
  if (variant === 'factorized-random') opts.k = Math.min(8, L);
  if (variant === 'mixture') opts.components = ['random', 'dot'];
  return opts;
}

// How each family of the C registry is called through the package. run(inp, cache?) takes
// inp: { n, d, heads, q, k, v, x (n*d each), causal, weights (boolean), seed, maxLen? } and returns the
// library's result ({ output, weights? }, plus alphas and components for a mixture). Synthesizer layers
// are created on the call (maxLen defaults to n) and kept in cache when one is given, else disposed.
const LOCAL_WINDOW = 4; // the sandbox's band: 4 keys, visible at every sentence length
const LOCAL_STRIDE = 3; // strided: every 3rd key as well
const LINFORMER_ROWS = 8; // Linformer's k
// Retention's scores and Linformer's implied matrix are signed (no softmax makes them positive):
// the heatmaps, whose colour scale starts at 0, show their magnitudes (the formula text says so).
function magnitudes(result) {
  if (result.weights) result.weights = result.weights.map(Math.abs);
  return result;
}
/** The families whose weights are signed scores rather than probabilities (shown as magnitudes). */
export const SIGNED_FAMILIES = ['retention', 'linformer'];
/** A model's weights for display: magnitudes for a signed form (see magnitudes). */
export function displayWeights(formId, weights) {
  return SIGNED_FAMILIES.some((f) => formId === f || formId.startsWith(`${f}:`)) ? weights.map(Math.abs) : weights;
}
const RUNNERS = {
  softmax: (lib) => (inp) => lib.softmaxAttention({
    q: inp.q, k: inp.k, v: inp.v, n: inp.n, d: inp.d, heads: inp.heads, causal: inp.causal, returnWeights: inp.weights,
  }),
  local: (lib, name) => (inp) => lib.localAttention({
    q: inp.q, k: inp.k, v: inp.v, n: inp.n, d: inp.d, heads: inp.heads, causal: inp.causal, window: LOCAL_WINDOW,
    stride: name === 'strided' ? LOCAL_STRIDE : undefined, returnWeights: inp.weights,
  }),
  linear: (lib, name) => (inp) => lib.linearAttention({
    q: inp.q, k: inp.k, v: inp.v, n: inp.n, d: inp.d, heads: inp.heads, causal: inp.causal,
    feature: name.slice('linear:'.length), returnWeights: inp.weights,
  }),
  // without weights, the causal form runs chunked (linear in n); the weights come from the parallel form
  retention: (lib) => (inp) => magnitudes(lib.retention({
    q: inp.q, k: inp.k, v: inp.v, n: inp.n, d: inp.d, heads: inp.heads, causal: inp.causal, returnWeights: inp.weights,
    mode: inp.causal && !inp.weights ? 'chunked' : 'parallel',
  })),
  // E, F from the seed, over maxLen (default n) columns; causal throws, so the form is marked non-causal
  linformer: (lib) => (inp) => magnitudes(lib.linformer({
    q: inp.q, k: inp.k, v: inp.v, n: inp.n, d: inp.d, heads: inp.heads, causal: inp.causal, proj: LINFORMER_ROWS,
    maxLen: inp.maxLen ?? inp.n, seed: inp.seed ?? 1, returnWeights: inp.weights,
  })),
  synthesizer: (lib, name) => {
    const variant = name.slice('synth:'.length);
    // A synthesizer holds weights sized by maxLen: make one per (variant, d, heads, L, seed) and keep it.
    return (inp, cache) => {
      const key = `${variant}/${inp.d}/${inp.heads}/${inp.maxLen ?? inp.n}/${inp.seed}`;
      let synth = cache?.get(key);
      if (!synth) {
        synth = lib.createSynthesizer(synthOptions(variant, inp));
        cache?.set(key, synth);
      }
      try {
        const args = { x: inp.x, v: inp.v, n: inp.n, causal: inp.causal, returnWeights: inp.weights };
        if (variant === 'mixture') Object.assign(args, { q: inp.q, k: inp.k });
        const result = synth.forward(args);
        // A mixture also reports its weights alpha over the components, per head.
        if (synth.alphas) Object.assign(result, { alphas: Float32Array.from(synth.alphas), components: [...synth.components] });
        return result;
      } finally {
        if (!cache) synth.dispose();
      }
    };
  },
};

// One caller per form of the library's own registry (lib.forms, read from the wasm module): a form
// added in C appears here with no list to edit, as long as its family has a runner above. A library
// without lib.forms (an older build) is read through its family functions.
function callers(lib) {
  const registry = lib.forms ?? [
    { name: 'softmax', family: 'softmax' },
    ...['elu+1', 'relu', 'efficient', 'taylor'].map((f) => ({ name: `linear:${f}`, family: 'linear' })),
    ...SYNTH_VARIANTS.map((v) => ({ name: `synth:${v}`, family: 'synthesizer' })),
  ];
  const list = [];
  for (const form of registry) {
    const runner = RUNNERS[form.family];
    if (!runner) continue; // a family this page has no runner for yet
    // decoderForm: the form a decoder's self-attention uses instead when this one has no causal form
    // (null: none, so no model with a decoder can use it); crossForm: the form of cross-attention
    list.push({ id: form.name, family: form.family === 'synthesizer' ? 'synth' : form.family, run: runner(lib, form.name),
      decoderForm: form.decoderForm ?? null, crossForm: form.crossForm ?? null });
  }
  return list;
}

/** Releases the synthesizers a cache holds. */
export function clearCache(cache) {
  for (const synth of cache.values()) synth.dispose();
  cache.clear();
}

/**
 * The forms this library can run, found by calling each on tiny inputs.
 * Returns { forms: [{ id, family, label, causal: boolean (has a causal form), decoderForm, crossForm, run(inp, cache?) }],
 *   skipped: [{ id, reason }] } (skipped: the library has the family, but this form's probe failed).
 */
export function probeForms(lib) {
  const n = 4, d = 4;
  const tiny = (seed) => Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 1.7 + seed));
  const inp = { n, d, heads: 1, q: tiny(1), k: tiny(2), v: tiny(3), x: tiny(4), seed: 1, weights: true };
  const found = [];
  const skipped = [];
  for (const form of callers(lib)) {
    let causal = false;
    try {
      const r = form.run({ ...inp, causal: false });
      if (r?.weights?.length !== n * n || r.output?.length !== n * d) {
        skipped.push({ id: form.id, reason: 'the probe call returned no n*n weights or no n*d output' });
        continue;
      }
    } catch (e) {
      skipped.push({ id: form.id, reason: e.message });
      continue;
    }
    try {
      form.run({ ...inp, causal: true });
      causal = true;
    } catch {
      causal = false;
    }
    found.push({ ...form, label: LABELS[form.id] ?? form.id, causal });
  }
  return { forms: found, skipped };
}
