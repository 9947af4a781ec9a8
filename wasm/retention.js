// retention.js: lib.retention (RetNet's decayed linear attention) and lib.linformer
// (docs/attention-forms.md section 4; C side: src/attention/retention.c, linformer.c).
import { MAX_HEAP, checkBool, checkFiniteNumber, checkKeys, checkOneOf, checkSeed, checkSize, describe, fail } from './core.js';
import { checkAttentionShapes, runAttention } from './softmax.js';

const RETENTION_OPTIONS = ['q', 'k', 'v', 'n', 'm', 'd', 'dv', 'heads', 'causal', 'gamma', 'mode', 'chunk', 'scale',
  'returnWeights', 'reference'];
const LINFORMER_OPTIONS = ['q', 'k', 'v', 'n', 'm', 'd', 'dv', 'heads', 'E', 'F', 'proj', 'maxLen', 'seed', 'causal',
  'scale', 'returnWeights', 'reference'];
const MODES = ['parallel', 'recurrent', 'chunked'];

/** RetNet's decays: gamma_h = 1 - 2^(-5-h). */
export function retnetGammas(heads) {
  return Float32Array.from({ length: heads }, (_, h) => 1 - 2 ** (-5 - h));
}

// gamma: a number for every head, or one per head (array or Float32Array), each in (0, 1].
function checkGammas(name, gamma, heads) {
  const list = typeof gamma === 'number' ? new Array(heads).fill(gamma) : gamma;
  if (!(Array.isArray(list) || list instanceof Float32Array) || list.length !== heads)
    fail(`${name} must be a number in (0, 1] or ${heads} of them (one per head), got ${describe(gamma)}`);
  for (let h = 0; h < heads; h++)
    if (!(typeof list[h] === 'number' && list[h] > 0 && list[h] <= 1))
      fail(`${name}[${h}] must be a number in (0, 1], got ${describe(list[h])}`);
  return Float32Array.from(list);
}

// E, F like nn.Linear(maxLen, proj) initialises its weight: uniform in +-1/sqrt(maxLen), from a
// seed in [0, 2^32 - 1] (mulberry32: every seed, 0 included, gives its own stream).
function projections(proj, maxLen, seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const bound = 1 / Math.sqrt(maxLen), make = () => Float32Array.from({ length: proj * maxLen }, () => (2 * next() - 1) * bound);
  return { E: make(), F: make() };
}

export function retentionMethods(core) {
  return {
    /**
     * Retention: O = (Q K^T * scale ⊙ D) V per head, D_ij = gamma^(i-j) for j <= i (causal, the
     * default) or gamma^|i-j|. mode 'parallel' | 'recurrent' (S_i = gamma S_{i-1} + k_i^T v_i) |
     * 'chunked' give the same numbers; weights are the decayed scores (no softmax).
     */
    retention(opts) {
      const what = 'retention';
      checkKeys(what, opts, RETENTION_OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, m, d, dv, heads } = shapes;
      if (m !== n) fail(`${what}: m (${m}) must equal n (${n}): retention is self-attention over one sequence`);
      const causal = checkBool(`${what}: causal`, opts.causal !== undefined ? opts.causal : true);
      const mode = checkOneOf(`${what}: mode`, opts.mode !== undefined ? opts.mode : 'parallel', MODES);
      if (!causal && mode !== 'parallel') fail(`${what}: mode "${mode}" needs causal: true (the recurrent and chunked forms run left to right)`);
      const chunk = opts.chunk === undefined ? 0 : checkSize(`${what}: chunk`, opts.chunk); // C: chunked mode only
      const gamma = opts.gamma === undefined ? null : checkGammas(`${what}: gamma`, opts.gamma, heads);
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const reference = checkBool(`${what}: reference`, opts.reference !== undefined ? opts.reference : false);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v, [g]) =>
        core.exports.aw_retention(out, w, q, k, v, g, n, d, dv, heads, causal ? 1 : 0, scale, MODES.indexOf(mode), chunk,
          reference ? 1 : 0),
      [{ name: 'gamma', bytes: gamma ? heads * 4 : 0, from: gamma }]);
    },

    /**
     * Linformer: O = softmax(Q (E K)^T * scale) (F V) per head, E and F (proj, maxLen) projecting
     * the n <= maxLen positions to proj rows. Without E and F, seeded random ones (as nn.Linear
     * initialises them). causal: true is an Error (no causal form exists). weights: the implied
     * (heads, n, n) matrix P F that multiplies V.
     */
    linformer(opts) {
      const what = 'linformer';
      checkKeys(what, opts, LINFORMER_OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, m, d, dv, heads } = shapes;
      if (m !== n) fail(`${what}: m (${m}) must equal n (${n}): E and F project the one sequence's keys and values`);
      const causal = checkBool(`${what}: causal`, opts.causal !== undefined ? opts.causal : false);
      const proj = checkSize(`${what}: proj`, opts.proj !== undefined ? opts.proj : 8);
      const maxLen = checkSize(`${what}: maxLen`, opts.maxLen !== undefined ? opts.maxLen : n);
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const reference = checkBool(`${what}: reference`, opts.reference !== undefined ? opts.reference : false);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      let { E, F } = opts;
      if ((E === undefined) !== (F === undefined)) fail(`${what}: give both E and F, or neither`);
      const seed = checkSeed(`${what}: seed`, opts.seed === undefined ? 1 : opts.seed);
      if (opts.seed !== undefined && opts.E !== undefined) fail(`${what}: seed seeds the default E and F; give E and F, or seed, not both`);
      // E and F hold proj * maxLen floats each: refuse sizes the heap cannot hold before any array is made
      const floats = proj * maxLen;
      if (2 * floats * 4 >= MAX_HEAP)
        fail(`${what}: maxLen = ${maxLen} with proj = ${proj} needs E and F of proj*maxLen = ${floats} floats each ` +
          `(${((2 * floats * 4) / 2 ** 20).toFixed(1)} MiB), more than the ${MAX_HEAP / 2 ** 20} MiB wasm heap: ` +
          'maxLen must be at least n and no larger than needed, or use a smaller proj');
      if (E === undefined) ({ E, F } = projections(proj, maxLen, seed));
      for (const [name, x] of [['E', E], ['F', F]])
        if (!(x instanceof Float32Array) || x.length !== proj * maxLen)
          fail(`${what}: ${name} must be a Float32Array of proj*maxLen = ${proj}*${maxLen} = ${proj * maxLen} values, got ${describe(x)}`);
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v, [e, f]) =>
        core.exports.aw_linformer(out, w, q, k, v, e, f, n, d, dv, heads, proj, maxLen, causal ? 1 : 0, scale, reference ? 1 : 0),
      [{ name: 'E', bytes: proj * maxLen * 4, from: E, finite: true }, { name: 'F', bytes: proj * maxLen * 4, from: F, finite: true }]);
    },
  };
}
