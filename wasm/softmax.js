// softmax.js: lib.softmaxAttention, scaled dot-product attention (docs/attention-forms.md section 1).
import { checkBool, checkF32, checkFiniteNumber, checkKeys, checkMask, checkSize, fail } from './core.js';

const OPTIONS = ['q', 'k', 'v', 'n', 'm', 'd', 'dv', 'heads', 'causal', 'keyMask', 'scale', 'returnWeights', 'reference'];

/**
 * Checks the shared shape arguments of an attention call: sizes are positive integers,
 * heads divide d and dv, q, k, v are Float32Arrays of the right length with finite values.
 * Returns the resolved sizes. The values of q, k, v are NOT scanned here: the caller must give
 * them to Core.withBuffers with `finite: true`. Family modules (linear) reuse it.
 */
export function checkAttentionShapes(what, opts) {
  const n = checkSize(`${what}: n`, opts.n);
  const m = checkSize(`${what}: m`, opts.m !== undefined ? opts.m : n);
  const d = checkSize(`${what}: d`, opts.d);
  const dv = checkSize(`${what}: dv`, opts.dv !== undefined ? opts.dv : d);
  const heads = checkSize(`${what}: heads`, opts.heads !== undefined ? opts.heads : 1);
  if (d % heads) fail(`${what}: d (${d}) must be divisible by heads (${heads})`);
  if (dv % heads) fail(`${what}: dv (${dv}) must be divisible by heads (${heads})`);
  // values are checked in wasm after the copy: pass q, k, v to withBuffers with finite: true
  checkF32(`${what}: q`, opts.q, n * d, `n*d = ${n}*${d}`, { scan: false });
  checkF32(`${what}: k`, opts.k, m * d, `m*d = ${m}*${d}`, { scan: false });
  checkF32(`${what}: v`, opts.v, m * dv, `m*dv = ${m}*${dv}`, { scan: false });
  return { n, m, d, dv, heads };
}

/**
 * Runs one attention call of the shape every family shares: q, k, v copied in (checked finite in
 * wasm), an (n, dv) output and, with returnWeights, (heads, n, m) weights read back. `call(out,
 * weights, q, k, v, extra)` runs the C export and returns its status; `extra` holds the pointers
 * of `extraSpecs` (a key mask). Returns { output, weights? }.
 */
export function runAttention(core, what, shapes, opts, returnWeights, call, extraSpecs = []) {
  const { n, m, d, dv, heads } = shapes;
  const specs = [
    { name: 'output', bytes: n * dv * 4 },
    { name: 'weights', bytes: returnWeights ? heads * n * m * 4 : 0 },
    { name: 'q', bytes: n * d * 4, from: opts.q, finite: true },
    { name: 'k', bytes: m * d * 4, from: opts.k, finite: true },
    { name: 'v', bytes: m * dv * 4, from: opts.v, finite: true },
    ...extraSpecs,
  ];
  return core.withBuffers(what, specs, ([out, w, q, k, v, ...extra]) => {
    core.check(call(out, w, q, k, v, extra), what);
    const result = { output: core.readF32(out, n * dv) };
    if (returnWeights) result.weights = core.readF32(w, heads * n * m);
    return result;
  });
}

export function softmaxMethods(core) {
  return {
    /**
     * O = softmax(Q K^T * scale + M) V, per head. Without returnWeights the tiled online-softmax
     * path runs and no n x m buffer exists; with it, weights (heads*n*m) come back too.
     */
    softmaxAttention(opts) {
      const what = 'softmaxAttention';
      checkKeys(what, opts, OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, m, d, dv, heads } = shapes;
      const causal = checkBool(`${what}: causal`, opts.causal !== undefined ? opts.causal : false);
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const reference = checkBool(`${what}: reference`, opts.reference !== undefined ? opts.reference : false);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      const mask = opts.keyMask === undefined ? null : checkMask(`${what}: keyMask`, opts.keyMask, m);
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v, [km]) =>
        core.exports.aw_softmax_attention(out, w, q, k, v, km, n, m, d, dv, heads, causal ? 1 : 0, scale, reference ? 1 : 0),
      [{ name: 'keyMask', bytes: mask ? m : 0, from: mask }]);
    },
  };
}
