// gated.js: lib.gatedLinearAttention and lib.deltaRule, the gated and delta-rule forms of linear
// attention with their gates and write strengths as inputs (docs/attention-forms.md section 4c;
// C side: src/attention/gated_linear.c, delta_rule.c). In a model the gates come from the token's
// input through a learned projection (lib.attention('gated' | 'delta' | 'gated-delta' | 'kda', ...)); here
// they are given, one value per head (or key channel) and position, so each form can be checked by hand.
import { checkBool, checkFiniteNumber, checkKeys, checkOneOf, checkSize, describe, fail } from './core.js';
import { checkAttentionShapes, runAttention } from './softmax.js';

const GATED_OPTIONS = ['q', 'k', 'v', 'n', 'd', 'dv', 'heads', 'gates', 'mode', 'chunk', 'scale', 'returnWeights'];
const GLA_OPTIONS = GATED_OPTIONS;
const DELTA_OPTIONS = ['q', 'k', 'v', 'n', 'd', 'dv', 'heads', 'beta', 'gates', 'mode', 'chunk', 'scale', 'returnWeights'];
const MODES = ['parallel', 'recurrent', 'chunked'];
const DELTA_MODES = ['recurrent', 'chunked'];

// (n, heads) values, position-major (x[t * heads + h]), each in [lo, hi] (open at lo when openLo);
// per: 'head' (the default) or 'channel' (GLA: (n, d), one per key channel).
function checkPerHead(name, x, n, heads, lo, hi, openLo, per = 'head') {
  const len = n * heads;
  if (!((Array.isArray(x) || x instanceof Float32Array || x instanceof Float64Array) && x.length === len))
    fail(`${name} must be ${len} numbers (n * ${per === 'head' ? 'heads' : 'd'} = ${n} * ${heads}: one per position and ${per}, position-major), got ${describe(x)}`);
  const range = `${openLo ? '(' : '['}${lo}, ${hi}]`;
  for (let i = 0; i < len; i++) {
    const a = x[i];
    if (!(typeof a === 'number' && (openLo ? a > lo : a >= lo) && a <= hi))
      fail(`${name}[${i}] (position ${Math.floor(i / heads)}, ${per} ${i % heads}) must be in ${range}, got ${describe(a)}`);
  }
  return x;
}

export function gatedMethods(core) {
  return {
    /**
     * Decay-gated linear attention: per head S_t = a_t S_{t-1} + k_t^T v_t, o_t = scale q_t S_t,
     * causal. gates: a_t in (0, 1], (n, heads) position-major. mode 'parallel' (((Q K^T) ⊙ D) V,
     * D_ij = a_(j+1) ... a_i) | 'recurrent' | 'chunked' (chunk, default 64) give the same numbers.
     * weights: the signed matrix A with O = A V.
     */
    gatedLinearAttention(opts) {
      const what = 'gatedLinearAttention';
      checkKeys(what, opts, GATED_OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, d, dv, heads } = shapes;
      const gates = checkPerHead(`${what}: gates`, opts.gates, n, heads, 0, 1, true);
      const mode = checkOneOf(`${what}: mode`, opts.mode !== undefined ? opts.mode : 'chunked', MODES);
      const chunk = checkSize(`${what}: chunk`, opts.chunk !== undefined ? opts.chunk : 64);
      if (opts.chunk !== undefined && mode !== 'chunked') fail(`${what}: chunk applies to mode 'chunked' only (mode is '${mode}')`);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const g = Float32Array.from(gates, (a) => Math.log(a)); // the kernel takes log a: products become sums
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v, [pg]) =>
        core.exports.aw_gated_linear(out, w, q, k, v, pg, n, d, dv, heads, scale, MODES.indexOf(mode), chunk),
      [{ name: 'gates', bytes: g.length * 4, from: g }]);
    },

    /**
     * GLA: a decay gate per key channel. Per head S_t = diag(alpha_t) S_{t-1} + k_t^T v_t,
     * o_t = scale q_t S_t, causal. gates: alpha_t in (0, 1], (n, d) position-major (one per key
     * channel of every head). mode 'parallel' | 'recurrent' | 'chunked' (chunk, default 16) give the
     * same numbers. weights: the signed matrix A with O = A V.
     */
    gla(opts) {
      const what = 'gla';
      checkKeys(what, opts, GLA_OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, d, dv, heads } = shapes;
      const gates = checkPerHead(`${what}: gates`, opts.gates, n, d, 0, 1, true, 'channel');
      const mode = checkOneOf(`${what}: mode`, opts.mode !== undefined ? opts.mode : 'chunked', MODES);
      const chunk = checkSize(`${what}: chunk`, opts.chunk !== undefined ? opts.chunk : 16);
      if (opts.chunk !== undefined && mode !== 'chunked') fail(`${what}: chunk applies to mode 'chunked' only (mode is '${mode}')`);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const g = Float32Array.from(gates, (a) => Math.log(a));
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v, [pg]) =>
        core.exports.aw_gla(out, w, q, k, v, pg, n, d, dv, heads, scale, MODES.indexOf(mode), chunk),
      [{ name: 'gates', bytes: g.length * 4, from: g }]);
    },

    /**
     * The delta rule (DeltaNet; Gated DeltaNet and KDA with gates): per head, with k^_t = k_t / |k_t|,
     * S_t = (I - beta_t k^_t^T k^_t) diag(alpha_t) S_{t-1} + beta_t k^_t^T v_t, o_t = scale q_t S_t,
     * causal. beta: write strengths in [0, 1], (n, heads) position-major; gates: decays in (0, 1]
     * (omit for DeltaNet), either n * heads values (Gated DeltaNet: alpha_t = a_t, one per head) or
     * n * d (Kimi Delta Attention: one per key channel of every head), position-major. When
     * heads = d both readings coincide (a head of width 1). mode 'chunked' (the WY form, chunk
     * default 16) | 'recurrent' give the same numbers. weights: the matrix A with O = A V.
     */
    deltaRule(opts) {
      const what = 'deltaRule';
      checkKeys(what, opts, DELTA_OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, d, dv, heads } = shapes;
      const beta = Float32Array.from(checkPerHead(`${what}: beta`, opts.beta, n, heads, 0, 1, false));
      // a decay per head (n * heads values) or per key channel (n * d: KDA)
      const channel = opts.gates !== undefined && opts.gates !== null && opts.gates.length === n * d && n * d !== n * heads;
      if (opts.gates !== undefined && !channel && !((Array.isArray(opts.gates) || opts.gates instanceof Float32Array ||
        opts.gates instanceof Float64Array) && opts.gates.length === n * heads))
        fail(`${what}: gates must be ${n * heads} numbers (n * heads = ${n} * ${heads}: a decay per position and head, Gated DeltaNet) or ${n * d} (n * d = ${n} * ${d}: per position and key channel, KDA), position-major, got ${describe(opts.gates)}`);
      const gates = opts.gates === undefined ? null
        : Float32Array.from(checkPerHead(`${what}: gates`, opts.gates, n, channel ? d : heads, 0, 1, true, channel ? 'channel' : 'head'));
      const mode = checkOneOf(`${what}: mode`, opts.mode !== undefined ? opts.mode : 'chunked', DELTA_MODES);
      const chunk = checkSize(`${what}: chunk`, opts.chunk !== undefined ? opts.chunk : 16);
      if (opts.chunk !== undefined && mode !== 'chunked') fail(`${what}: chunk applies to mode 'chunked' only (mode is '${mode}')`);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v, [pb, pa]) =>
        core.exports.aw_delta_rule(out, w, q, k, v, pb, gates ? pa : 0, channel ? 1 : 0, n, d, dv, heads, scale, DELTA_MODES.indexOf(mode), chunk),
      [{ name: 'beta', bytes: beta.length * 4, from: beta }, { name: 'gates', bytes: gates ? gates.length * 4 : 0, from: gates }]);
    },
  };
}
