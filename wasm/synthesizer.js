// synthesizer.js: lib.createSynthesizer, Synthesizer attention layers (docs/attention-forms.md section 3;
// docs/synthesizer.md). A layer's parameters live in the wasm heap, in one block owned by the C
// layer (src/attention/synthesizer.h); layer.params hands out Float32Array views into it.
import { checkBool, checkF32, checkKeys, checkOneOf, checkSeed, checkSize, describe, fail } from './core.js';

const VARIANTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'mixture'];
const COMPONENTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'dot'];
const KIND_ID = { dense: 0, random: 1, 'factorized-dense': 2, 'factorized-random': 3, mixture: 4, dot: 5 };
const CREATE_OPTIONS = ['variant', 'd', 'maxLen', 'heads', 'seed', 'trainable', 'a', 'b', 'k', 'components'];
const FORWARD_OPTIONS = ['x', 'v', 'n', 'q', 'k', 'causal', 'returnWeights', 'reference'];
const MAX_HEAP = 2 ** 31;

// Shape of each tensor (per the C size table), by its name without the "<component>." prefix.
function tensorShape(base, { heads, d, maxLen, a, b, k, components }) {
  const shapes = {
    W1: [d, d], b1: [d], W2: [d, maxLen], b2: [maxLen], R: [maxLen, maxLen],
    W1a: [d, d], b1a: [d], W2a: [d, a], W1b: [d, d], b1b: [d], W2b: [d, b],
    R1: [maxLen, k], R2: [maxLen, k], alphaLogits: [components.length],
  };
  return [heads, ...shapes[base]];
}

// Floats of parameters per logits source (for the heap bound checked before any wasm runs).
function kindFloats(kind, { heads, d, maxLen, a, b, k }) {
  const per = {
    dense: d * d + d + d * maxLen + maxLen,
    random: maxLen * maxLen,
    'factorized-dense': 2 * (d * d + d) + d * a + d * b,
    'factorized-random': 2 * maxLen * k,
    dot: 0,
  }[kind];
  return heads * per;
}

function readCString(core, ptr) {
  return core.cString(ptr);
}

// Resolves and checks createSynthesizer's options; returns the layer's configuration.
function checkConfig(opts) {
  const what = 'createSynthesizer';
  checkKeys(what, opts, CREATE_OPTIONS);
  const variant = checkOneOf(`${what}: variant`, opts.variant, VARIANTS);
  const d = checkSize(`${what}: d`, opts.d);
  const maxLen = checkSize(`${what}: maxLen`, opts.maxLen);
  const heads = checkSize(`${what}: heads`, opts.heads !== undefined ? opts.heads : 1);
  const seed = checkSeed(`${what}: seed`, opts.seed !== undefined ? opts.seed : 0);
  let components = [variant];
  if (variant === 'mixture') {
    const c = opts.components;
    if (!Array.isArray(c) || c.length === 0)
      fail(`${what}: components must be a non-empty array of ${COMPONENTS.map((x) => `'${x}'`).join(', ')} ` +
        `for variant 'mixture', got ${describe(c)}`);
    c.forEach((x, i) => checkOneOf(`${what}: components[${i}]`, x, COMPONENTS));
    const dup = c.find((x, i) => c.indexOf(x) !== i);
    if (dup !== undefined) fail(`${what}: components lists '${dup}' twice; each component may appear once`);
    components = [...c];
  } else if (opts.components !== undefined) {
    fail(`${what}: components applies only to variant 'mixture' (variant is '${variant}')`);
  }
  const uses = (kind) => components.includes(kind);
  const only = (name, kinds) => {
    if (opts[name] !== undefined && !kinds.some(uses))
      fail(`${what}: ${name} applies only to ${kinds.map((x) => `'${x}'`).join(' or ')} (variant is '${variant}'` +
        `${variant === 'mixture' ? ` with components ${components.join(', ')}` : ''})`);
  };
  only('a', ['factorized-dense']);
  only('b', ['factorized-dense']);
  only('k', ['factorized-random']);
  only('trainable', ['random', 'factorized-random']);
  let a = 0, b = 0, k = 0;
  if (uses('factorized-dense')) {
    if (opts.a === undefined || opts.b === undefined)
      fail(`${what}: factorized-dense needs a and b (positive integers with a * b = maxLen = ${maxLen})`);
    a = checkSize(`${what}: a`, opts.a);
    b = checkSize(`${what}: b`, opts.b);
    if (a * b !== maxLen) fail(`${what}: a * b must equal maxLen: a = ${a}, b = ${b}, a * b = ${a * b}, maxLen = ${maxLen}`);
  }
  if (uses('factorized-random')) {
    if (opts.k === undefined) fail(`${what}: factorized-random needs k (a positive integer: the rank of R1 R2^T)`);
    k = checkSize(`${what}: k`, opts.k);
  }
  const trainable = checkBool(`${what}: trainable`, opts.trainable !== undefined ? opts.trainable : true);
  const cfg = { variant, d, maxLen, heads, seed, components, a, b, k, trainable };
  let floats = components.reduce((s, kind) => s + kindFloats(kind, cfg), 0);
  if (variant === 'mixture') floats += heads * components.length;
  const bytes = floats * 2 * 4; // parameters and their gradients
  if (bytes >= MAX_HEAP)
    fail(`${what}: the parameters and their gradients need ${(bytes / 2 ** 20).toFixed(0)} MiB, more than the ` +
      `${MAX_HEAP / 2 ** 20} MiB wasm heap; use a smaller maxLen${uses('dense') || uses('factorized-dense') ? ', d' : ''}` +
      `${uses('factorized-random') ? ', k' : ''} or heads`);
  return cfg;
}

export function synthesizerMethods(core) {
  const ex = core.exports;

  function createLayer(cfg) {
    const what = 'createSynthesizer';
    const ids = Int32Array.from(cfg.variant === 'mixture' ? cfg.components.map((c) => KIND_ID[c]) : []);
    let handle = core.withBuffers(what, [
      { name: 'handle', bytes: 4 },
      { name: 'components', bytes: ids.length * 4, from: ids.length ? ids : undefined },
    ], ([out, comps]) => {
      const status = ex.aw_synth_create(out, KIND_ID[cfg.variant], cfg.d, cfg.maxLen, cfg.heads, cfg.seed,
        cfg.trainable ? 1 : 0, cfg.a, cfg.b, cfg.k, comps, ids.length);
      core.check(status, what); // C's message, e.g. out of memory: use a smaller maxLen, d or heads
      return core.i32[out >> 2];
    });

    const tensors = [];
    for (let i = 0, count = ex.aw_synth_tensor_count(handle); i < count; i++) {
      const name = readCString(core, ex.aw_synth_tensor_name(handle, i));
      const shape = tensorShape(name.slice(name.lastIndexOf('.') + 1), cfg);
      tensors.push({ name, offset: ex.aw_synth_tensor_offset(handle, i), size: ex.aw_synth_tensor_size(handle, i), shape });
    }
    const paramsPtr = ex.aw_synth_params(handle);
    const needsX = cfg.components.includes('dense') || cfg.components.includes('factorized-dense');
    const hasDot = cfg.components.includes('dot');
    const C = cfg.components.length;

    const alive = (where) => {
      if (!handle) fail(`${where}: this Synthesizer layer was disposed; create a new one with lib.createSynthesizer`);
    };

    // The parameters live in JS memory, one Float32Array per tensor that the caller may read and
    // write; every call copies them into the layer's wasm block first. So no array handed out ever
    // aliases wasm memory: one kept after dispose() writes only to itself, never into the heap
    // that later objects use.
    const params = {};
    for (const t of tensors) params[t.name] = core.readF32(paramsPtr + t.offset * 4, t.size);
    Object.freeze(params);
    const syncParams = () => {
      const heap = core.f32;
      for (const t of tensors) heap.set(params[t.name], (paramsPtr >> 2) + t.offset);
    };

    function forward(opts) {
      const fw = 'layer.forward';
      alive(fw);
      checkKeys(fw, opts, FORWARD_OPTIONS);
      const n = checkSize(`${fw}: n`, opts.n);
      if (n > cfg.maxLen)
        fail(`${fw}: n = ${n} is longer than maxLen = ${cfg.maxLen}, the maximum this layer was created for`);
      const v = opts.v;
      if (!(v instanceof Float32Array) || v.length === 0 || v.length % n)
        fail(`${fw}: v must be a Float32Array of n*dv values (n = ${n}, dv = v.length / n), got ${describe(v)}`);
      const dv = v.length / n;
      if (dv % cfg.heads) fail(`${fw}: dv = v.length / n = ${dv} must be divisible by heads (${cfg.heads})`);
      checkF32(`${fw}: v`, v, n * dv, `n*dv = ${n}*${dv}`);
      if (needsX && opts.x === undefined)
        fail(`${fw}: x (n*d = ${n}*${cfg.d} values) is required: the ${cfg.variant === 'mixture' ? 'mixture has a dense component whose' : `'${cfg.variant}'`} logits are computed from x`);
      if (opts.x !== undefined) checkF32(`${fw}: x`, opts.x, n * cfg.d, `n*d = ${n}*${cfg.d}`);
      let dqk = 0;
      if (hasDot && (opts.q === undefined || opts.k === undefined))
        fail(`${fw}: q and k (n*dqk values each) are required: the mixture has a 'dot' component`);
      if (opts.q !== undefined || opts.k !== undefined) {
        for (const name of ['q', 'k'])
          if (!(opts[name] instanceof Float32Array) || opts[name].length === 0 || opts[name].length % n)
            fail(`${fw}: ${name} must be a Float32Array of n*dqk values (n = ${n}), got ${describe(opts[name])}`);
        dqk = opts.q.length / n;
        if (opts.k.length !== opts.q.length) fail(`${fw}: k has ${opts.k.length} values, expected the same as q (n*dqk = ${n}*${dqk})`);
        if (dqk % cfg.heads) fail(`${fw}: dqk = q.length / n = ${dqk} must be divisible by heads (${cfg.heads})`);
        checkF32(`${fw}: q`, opts.q, n * dqk, `n*dqk = ${n}*${dqk}`);
        checkF32(`${fw}: k`, opts.k, n * dqk, `n*dqk = ${n}*${dqk}`);
      }
      const causal = checkBool(`${fw}: causal`, opts.causal !== undefined ? opts.causal : false);
      const returnWeights = checkBool(`${fw}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const reference = checkBool(`${fw}: reference`, opts.reference !== undefined ? opts.reference : false);
      const use = (name) => (name === 'x' ? needsX : hasDot) && opts[name] !== undefined;
      const specs = [
        { name: 'output', bytes: n * dv * 4 },
        { name: 'weights', bytes: returnWeights ? cfg.heads * n * n * 4 : 0 },
        { name: 'x', bytes: use('x') ? n * cfg.d * 4 : 0, from: use('x') ? opts.x : undefined },
        { name: 'v', bytes: n * dv * 4, from: v },
        { name: 'q', bytes: use('q') ? n * dqk * 4 : 0, from: use('q') ? opts.q : undefined },
        { name: 'k', bytes: use('k') ? n * dqk * 4 : 0, from: use('k') ? opts.k : undefined },
      ];
      return core.withBuffers(fw, specs, ([out, w, x, pv, q, k]) => {
        syncParams();
        const status = ex.aw_synth_forward(handle, out, w, x, pv, q, k, n, dv, hasDot ? dqk : 0, causal ? 1 : 0,
          reference ? 1 : 0);
        core.check(status, fw); // C says what went wrong: a non-finite logit, the workspace not fitting, ...
        const result = { output: core.readF32(out, n * dv) };
        if (returnWeights) result.weights = core.readF32(w, cfg.heads * n * n);
        return result;
      });
    }

    const layer = {
      variant: cfg.variant,
      d: cfg.d,
      maxLen: cfg.maxLen,
      heads: cfg.heads,
      seed: cfg.seed,
      components: Object.freeze([...cfg.components]),
      /** names of the parameter tensors, in their order in the parameter block */
      paramNames: Object.freeze(tensors.map((t) => t.name)),
      /** name -> shape (heads first), e.g. { W1: [heads, d, d], ... } */
      paramShapes: Object.freeze(Object.fromEntries(tensors.map((t) => [t.name, Object.freeze(t.shape)]))),
      params,
      forward,
      get disposed() {
        return handle === 0;
      },
      /** Frees the layer's wasm memory. Idempotent; any other use afterwards throws. */
      dispose() {
        if (handle) ex.aw_synth_destroy(handle);
        handle = 0;
      },
    };
    if (cfg.variant === 'factorized-dense' || cfg.components.includes('factorized-dense')) Object.assign(layer, { a: cfg.a, b: cfg.b });
    if (cfg.components.includes('factorized-random')) layer.k = cfg.k;
    if (cfg.components.includes('random') || cfg.components.includes('factorized-random')) layer.trainable = cfg.trainable;
    if (cfg.variant === 'mixture')
      Object.defineProperty(layer, 'alphas', {
        enumerable: true,
        /** (heads * C): softmax of alphaLogits per head, from the current params */
        get() {
          const where = 'layer.alphas';
          alive(where);
          return core.withBuffers(where, [{ name: 'alphas', bytes: cfg.heads * C * 4 }], ([p]) => {
            syncParams();
            const status = ex.aw_synth_alphas(handle, p);
            core.check(status, where);
            return core.readF32(p, cfg.heads * C);
          });
        },
      });
    return Object.freeze(layer);
  }

  return {
    /**
     * A Synthesizer attention layer: logits synthesized from each token alone (dense), learned
     * outright (random), factorized versions of both, or a learned mixture with dot-product logits.
     */
    createSynthesizer(opts) {
      return createLayer(checkConfig(opts));
    },
  };
}
