// attention.js: lib.attention and lib.attentionLayer, every form of the registry (lib.forms) on
// its own, through the same C descriptor the model runs (src/api/api_form.c). The per-family
// functions (softmaxAttention, linearAttention, ...) stay, with the options only their family
// has (masks, modes, states); these two take any form by name and its options as the form
// declares them. No form is named here.
import { checkBool, checkF32, checkInt, checkKeys, checkSeed, checkSize, describe, fail, formOptionText, readForms } from './core.js';

const SHAPE_KEYS = ['n', 'm', 'd', 'heads', 'causal', 'maxLen', 'seed', 'attentionOptions'];

const leaked = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ core, handle }) => core.exports.aw_form_layer_free(handle))
  : null;

export function attentionMethods(core) {
  const ex = core.exports;
  const forms = readForms(core);

  function formOf(what, name) {
    const i = forms.findIndex((f) => f.name === name);
    if (i < 0) fail(`${what}: name must be one of ${forms.map((f) => JSON.stringify(f.name)).join(', ')}, got ${describe(name)}`);
    return [i, forms[i]];
  }

  /** A set-up C layer for form `name` with opts' sizes and options. */
  function makeLayer(what, name, opts, dataKeys) {
    const [index, form] = formOf(what, name);
    if (opts === null || typeof opts !== 'object') fail(`${what}: options must be an object, got ${describe(opts)}`);
    checkKeys(what, opts, [...SHAPE_KEYS, ...dataKeys]);
    const given = opts.attentionOptions !== undefined ? opts.attentionOptions : {};
    if (given === null || typeof given !== 'object' || Array.isArray(given))
      fail(`${what}: attentionOptions must be an object, got ${describe(given)}`);
    const n = checkSize(`${what}: n`, opts.n);
    const m = checkSize(`${what}: m`, opts.m !== undefined ? opts.m : n);
    const d = checkSize(`${what}: d`, opts.d);
    const heads = checkSize(`${what}: heads`, opts.heads !== undefined ? opts.heads : 1);
    if (d % heads) fail(`${what}: d (${d}) must be divisible by heads (${heads})`);
    const causal = checkBool(`${what}: causal`, opts.causal !== undefined ? opts.causal : false);
    const maxLen = checkSize(`${what}: maxLen`, opts.maxLen !== undefined ? opts.maxLen : Math.max(n, m));
    const seed = checkSeed(`${what}: seed`, opts.seed !== undefined ? opts.seed : 1);
    if (causal && !form.causal) fail(`${what}: attention "${name}" has no causal form${form.whyNotCausal ? ` (${form.whyNotCausal})` : ''}`);
    if (!causal && !form.nonCausal) fail(`${what}: attention "${name}" has no non-causal form`);
    if (m !== n && causal) fail(`${what}: causal attention needs m = n, got n = ${n}, m = ${m}`);
    const handle = core.withBuffers(what, [{ name: 'handle', bytes: 4 }], ([hp]) => {
      core.check(ex.aw_form_layer_new(hp, index, d, heads, maxLen, causal ? 1 : 0, seed >>> 0), what);
      return new Uint32Array(core.memory.buffer, hp, 1)[0];
    });
    try {
      // every key goes to C, which says which forms read an option this form does not
      for (const [key, value] of Object.entries(given)) {
        if (value === undefined) continue;
        const o = form.options.find((x) => x.name === key);
        const text = o ? formOptionText(`${what}: attentionOptions.${key}`, o, value) : '';
        core.withStrings(what, [key, text], ([np, vp]) => core.check(ex.aw_form_layer_option(handle, np, vp), what));
      }
      core.check(ex.aw_form_layer_ready(handle), what);
    } catch (e) {
      ex.aw_form_layer_free(handle);
      throw e;
    }
    return { handle, form, n, m, d, heads, causal, maxLen };
  }

  // The inputs' checks and copies: q (n*d), k, v (m*d), x (n*d, default q).
  function inputs(what, L, data) {
    const { n, m, d } = L;
    checkF32(`${what}: q`, data.q, n * d, `n * d = ${n} * ${d}`, { scan: false });
    checkF32(`${what}: k`, data.k, m * d, `m * d = ${m} * ${d}`, { scan: false });
    checkF32(`${what}: v`, data.v, m * d, `m * d = ${m} * ${d}`, { scan: false });
    if (data.x !== undefined) checkF32(`${what}: x`, data.x, n * d, `n * d = ${n} * ${d}`, { scan: false });
    const x = data.x !== undefined ? data.x : data.q;
    return [
      { name: 'x', bytes: x.byteLength, from: x, finite: true },
      { name: 'q', bytes: data.q.byteLength, from: data.q, finite: true },
      { name: 'k', bytes: data.k.byteLength, from: data.k, finite: true },
      { name: 'v', bytes: data.v.byteLength, from: data.v, finite: true },
    ];
  }

  // keep: a backward may follow (layer.forward), so the form saves what it needs; lib.attention not
  function forward(what, L, data, returnWeights, keep) {
    const { n, m, d, heads } = L;
    const specs = [...inputs(what, L, data), { name: 'output', bytes: n * d * 4 },
      { name: 'weights', bytes: returnWeights ? heads * n * m * 4 : 0 }];
    return core.withBuffers(what, specs, ([xp, qp, kp, vp, op, wp]) => {
      core.check(ex.aw_form_layer_forward(L.handle, op, wp, xp, qp, kp, vp, n, m, keep ? 1 : 0), what);
      const result = { output: core.readF32(op, n * d) };
      if (returnWeights) result.weights = core.readF32(wp, heads * n * m);
      return result;
    });
  }

  return {
    /**
     * Runs the registry form `name` standalone: { output (n*d), weights? (heads*n*m) } from q
     * (n*d), k, v (m*d) and, for forms that read the input (usesX), x (n*d, default q). Options:
     * n, m (default n), d, heads (1), causal (false), maxLen (default max(n, m): the length of
     * forms whose parameters are sized by it), seed (1: their initial parameters), returnWeights,
     * and attentionOptions: the form's own options (lib.forms[i].options), as createModel takes them. The weights are the matrix A with
     * O = A V per head (for signed forms, the signed scores).
     */
    attention(name, opts) {
      const what = `attention("${typeof name === 'string' ? name : '?'}")`;
      const returnWeights = checkBool(`${what}: returnWeights`, opts?.returnWeights !== undefined ? opts?.returnWeights : false);
      const L = makeLayer(what, name, opts, ['q', 'k', 'v', 'x', 'returnWeights']);
      try {
        return forward(what, L, opts, returnWeights, false);
      } finally {
        ex.aw_form_layer_free(L.handle);
      }
    },

    /**
     * A layer of form `name` that keeps its parameters: forward({ q, k, v, x?, returnWeights }),
     * backward({ q, k, v, x?, dout }) -> { dq, dk, dv, dx, dparams } (the gradients of
     * sum(dout * output); dparams one Float32Array over every tensor, in tensors' order), step(pos,
     * { q, k, v, x }) -> the output row (generation; causal layers of forms with a step: pos 0 starts
     * a sequence, then 1, 2, ... in order; C refuses any other pos), selection({ q, k, v, x? }) ->
     * (heads, n, m) 1 or 0, the keys a sparse form's selection read (NSA's blocks and window), params
     * (a copy; setParams writes them), tensors [{ name, size, trainable }], options (as finished:
     * defaults and derived values filled in), dispose(). Sizes and options as lib.attention.
     */
    attentionLayer(name, opts) {
      const what = `attentionLayer("${typeof name === 'string' ? name : '?'}")`;
      const L = makeLayer(what, name, opts, []);
      const token = {};
      leaked?.register(token, { core, handle: L.handle }, token);
      let live = true;
      const alive = (call) => {
        if (!live) fail(`${what}.${call}: this layer was disposed`);
      };
      const count = ex.aw_form_layer_param_count(L.handle);
      const tensors = Object.freeze(Array.from({ length: ex.aw_form_layer_tensor_count(L.handle) }, (_, i) => Object.freeze({
        name: core.cString(ex.aw_form_layer_tensor_name(L.handle, i)),
        size: ex.aw_form_layer_tensor_size(L.handle, i),
        trainable: ex.aw_form_layer_tensor_trainable(L.handle, i) !== 0,
      })));
      const options = JSON.parse(`{${core.cString(ex.aw_form_layer_options_json(L.handle)).slice(1)}}`);
      return {
        name, n: L.n, m: L.m, d: L.d, heads: L.heads, causal: L.causal, maxLen: L.maxLen, tensors, options,
        forward(data) {
          alive('forward');
          checkKeys(`${what}.forward`, data, ['q', 'k', 'v', 'x', 'returnWeights']);
          return forward(`${what}.forward`, L, data, checkBool(`${what}.forward: returnWeights`, data.returnWeights !== undefined ? data.returnWeights : false), true);
        },
        backward(data) {
          alive('backward');
          const w = `${what}.backward`;
          checkKeys(w, data, ['q', 'k', 'v', 'x', 'dout']);
          const { n, m, d } = L;
          checkF32(`${w}: dout`, data.dout, n * d, `n * d = ${n} * ${d}`, { scan: false });
          const specs = [...inputs(w, L, data), { name: 'dout', bytes: n * d * 4, from: data.dout, finite: true },
            { name: 'dx', bytes: n * d * 4 }, { name: 'dq', bytes: n * d * 4 }, { name: 'dk', bytes: m * d * 4 },
            { name: 'dv', bytes: m * d * 4 }];
          return core.withBuffers(w, specs, ([xp, qp, kp, vp, gp, dxp, dqp, dkp, dvp]) => {
            core.check(ex.aw_form_layer_backward(L.handle, dxp, dqp, dkp, dvp, gp, xp, qp, kp, vp, n, m), w);
            return {
              dx: core.readF32(dxp, n * d), dq: core.readF32(dqp, n * d), dk: core.readF32(dkp, m * d),
              dv: core.readF32(dvp, m * d), dparams: count ? core.readF32(ex.aw_form_layer_grads(L.handle), count) : new Float32Array(0),
            };
          });
        },
        step(pos, data) {
          alive('step');
          const w = `${what}.step`;
          checkKeys(w, data, ['q', 'k', 'v', 'x']);
          const { d } = L;
          for (const key of ['q', 'k', 'v']) checkF32(`${w}: ${key}`, data[key], d, `d = ${d}`);
          if (data.x !== undefined) checkF32(`${w}: x`, data.x, d, `d = ${d}`);
          checkInt(`${w}: pos`, pos, 0, L.maxLen - 1, { expected: `an integer in [0, maxLen = ${L.maxLen})`, accepted: '' });
          const x = data.x !== undefined ? data.x : data.q;
          return core.withBuffers(w, [{ name: 'x', bytes: d * 4, from: x }, { name: 'q', bytes: d * 4, from: data.q },
            { name: 'k', bytes: d * 4, from: data.k }, { name: 'v', bytes: d * 4, from: data.v }, { name: 'out', bytes: d * 4 }],
          ([xp, qp, kp, vp, op]) => {
            core.check(ex.aw_form_layer_step(L.handle, op, xp, qp, kp, vp, pos), w);
            return core.readF32(op, d);
          });
        },
        selection(data) {
          alive('selection');
          const w = `${what}.selection`;
          checkKeys(w, data, ['q', 'k', 'v', 'x']);
          const { n, m, heads } = L;
          return core.withBuffers(w, [...inputs(w, L, data), { name: 'selection', bytes: heads * n * m * 4 }], ([xp, qp, kp, vp, sp]) => {
            core.check(ex.aw_form_layer_selection(L.handle, sp, xp, qp, kp, vp, n, m), w);
            return core.readF32(sp, heads * n * m);
          });
        },
        get params() {
          alive('params');
          return count ? core.readF32(ex.aw_form_layer_params(L.handle), count) : new Float32Array(0);
        },
        setParams(values) {
          alive('setParams');
          checkF32(`${what}.setParams: values`, values, count, `the layer's ${count} parameters`);
          if (count) new Float32Array(core.memory.buffer, ex.aw_form_layer_params(L.handle), count).set(values);
        },
        dispose() {
          if (!live) return;
          live = false;
          leaked?.unregister(token);
          ex.aw_form_layer_free(L.handle);
        },
      };
    },
  };
}
