// model.js: lib.createModel / lib.loadModel, the tiny Transformer of docs/attention-forms.md section 5
// (C side: src/model, exported by src/api/api_model.c; docs/model.md). The model lives in the
// wasm heap; this wrapper checks every argument before any wasm runs and turns C statuses into
// Errors that say what to change.
import { checkBool, checkFiniteNumber, checkKeys, checkOneOf, checkSize, describe, fail } from './core.js';

/** Attention forms by id (as in the playground): [form, linear feature, synthesizer variant]. */
const FORMS = {
  softmax: [0, 0, 0],
  'linear:elu+1': [1, 0, 0],
  'linear:relu': [1, 1, 0],
  'linear:efficient': [1, 2, 0],
  'linear:taylor': [1, 3, 0],
  'synth:dense': [2, 0, 0],
  'synth:random': [2, 0, 1],
  'synth:factorized-dense': [2, 0, 2],
  'synth:factorized-random': [2, 0, 3],
  'synth:mixture': [2, 0, 4],
};
const FORM_IDS = Object.keys(FORMS);
const SYNTH_VARIANTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'mixture', 'dot'];
const MIXTURE_COMPONENTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'dot'];
const LINEAR_FEATURES = ['elu+1', 'relu', 'efficient', 'taylor'];
const POSITIONAL = ['sinusoidal', 'learned'];
const NORMS = ['pre', 'post'];
const ARCHS = ['decoder', 'encoder-decoder'];
export const TASKS = ['copy', 'reverse', 'sort', 'recall', 'translate', 'chars'];
const TASK_DEFAULTS = {
  copy: { length: 16, symbols: 10 },
  reverse: { length: 16, symbols: 10 },
  sort: { length: 16, symbols: 10 },
  recall: { length: 8, symbols: 20 },
  translate: { length: 4, symbols: 0 },
  chars: { length: 64, symbols: 0 },
};
const CONFIG_KEYS = ['vocab', 'dModel', 'heads', 'layers', 'dFF', 'maxLen', 'attention', 'attentionOptions',
  'positional', 'norm', 'arch', 'seed'];
const ATTENTION_OPTION_KEYS = ['trainable', 'a', 'b', 'k', 'components'];
const MAX_LAYERS = 16;
const MAX_COMPONENTS = 5;

function checkSeed(what, seed) {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    fail(`${what} must be an integer in [0, 2^32 - 1], got ${describe(seed)}`);
  return seed;
}

function checkRange(what, value, lo, hi) {
  checkSize(what, value);
  if (value < lo || value > hi) fail(`${what} must be in [${lo}, ${hi}], got ${value}`);
  return value;
}

/** Resolves defaults and checks a createModel config; returns the full config (plain values). */
export function resolveConfig(config = {}) {
  const what = 'createModel';
  checkKeys(what, config, CONFIG_KEYS);
  const c = {
    vocab: checkRange(`${what}: vocab`, config.vocab ?? 64, 2, 1 << 20),
    dModel: checkRange(`${what}: dModel`, config.dModel ?? 64, 1, 4096),
    heads: checkRange(`${what}: heads`, config.heads ?? 4, 1, 4096),
    layers: checkRange(`${what}: layers`, config.layers ?? 2, 1, MAX_LAYERS),
    dFF: checkRange(`${what}: dFF`, config.dFF ?? 4 * (config.dModel ?? 64), 1, 16384),
    maxLen: checkRange(`${what}: maxLen`, config.maxLen ?? 64, 2, 4096),
    attention: checkOneOf(`${what}: attention`, config.attention ?? 'softmax', FORM_IDS),
    positional: checkOneOf(`${what}: positional`, config.positional ?? 'sinusoidal', POSITIONAL),
    norm: checkOneOf(`${what}: norm`, config.norm ?? 'pre', NORMS),
    arch: checkOneOf(`${what}: arch`, config.arch ?? 'decoder', ARCHS),
    seed: checkSeed(`${what}: seed`, config.seed ?? 1),
  };
  if (c.dModel % c.heads) fail(`${what}: dModel (${c.dModel}) must be divisible by heads (${c.heads})`);
  if (c.attention === 'linear:efficient')
    fail(`${what}: attention "linear:efficient" has no causal form (softmax over every key position, future ones ` +
      'included), and the decoder\'s self-attention is causal; use "linear:elu+1", "linear:relu" or "linear:taylor"');
  const o = config.attentionOptions ?? {};
  checkKeys(`${what}: attentionOptions`, o, ATTENTION_OPTION_KEYS);
  const synth = c.attention.startsWith('synth:') ? c.attention.slice(6) : null;
  if (!synth && Object.keys(o).length)
    fail(`${what}: attentionOptions (${Object.keys(o).join(', ')}) apply to "synth:*" attention only, not "${c.attention}"`);
  if (synth) {
    const opts = { trainable: checkBool(`${what}: attentionOptions.trainable`, o.trainable ?? true) };
    const usesFactorDense = synth === 'factorized-dense' || (synth === 'mixture' && o.components?.includes('factorized-dense'));
    const usesFactorRandom = synth === 'factorized-random' || (synth === 'mixture' && o.components?.includes('factorized-random'));
    if (usesFactorDense) {
      let { a, b } = o;
      if (a === undefined && b === undefined) { // the most square split of maxLen
        a = Math.floor(Math.sqrt(c.maxLen));
        while (c.maxLen % a) a--;
        b = c.maxLen / a;
      }
      checkSize(`${what}: attentionOptions.a`, a), checkSize(`${what}: attentionOptions.b`, b);
      if (a * b !== c.maxLen) fail(`${what}: factorized-dense needs attentionOptions.a * b = maxLen (${c.maxLen}), got ${a} * ${b}`);
      Object.assign(opts, { a, b });
    }
    if (usesFactorRandom) opts.k = checkRange(`${what}: attentionOptions.k`, o.k ?? 8, 1, 4096);
    if (synth === 'mixture') {
      const comps = o.components ?? ['random', 'dot'];
      if (!Array.isArray(comps) || comps.length === 0 || comps.length > MAX_COMPONENTS)
        fail(`${what}: attentionOptions.components must be an array of 1 to ${MAX_COMPONENTS} of ${MIXTURE_COMPONENTS.join(', ')}, got ${describe(comps)}`);
      comps.forEach((x, i) => checkOneOf(`${what}: attentionOptions.components[${i}]`, x, MIXTURE_COMPONENTS));
      if (new Set(comps).size !== comps.length) fail(`${what}: attentionOptions.components must be distinct, got ${comps.join(', ')}`);
      opts.components = [...comps];
    }
    c.attentionOptions = opts;
  }
  return c;
}

function configToInts(c, length) {
  const v = new Int32Array(length);
  const [form, feature, variant] = FORMS[c.attention];
  const o = c.attentionOptions ?? {};
  v.set([c.vocab, c.dModel, c.heads, c.layers, c.dFF, c.maxLen, form, feature, POSITIONAL.indexOf(c.positional),
    NORMS.indexOf(c.norm), ARCHS.indexOf(c.arch), c.seed | 0, variant, o.trainable === false ? 0 : 1, o.a ?? 0,
    o.b ?? 0, o.k ?? 0, o.components?.length ?? 0]);
  (o.components ?? []).forEach((x, i) => { v[18 + i] = SYNTH_VARIANTS.indexOf(x); });
  return v;
}

function intsToConfig(v) {
  const form = v[6];
  const attention = form === 0 ? 'softmax' : form === 1 ? `linear:${LINEAR_FEATURES[v[7]]}` : `synth:${SYNTH_VARIANTS[v[12]]}`;
  const c = {
    vocab: v[0], dModel: v[1], heads: v[2], layers: v[3], dFF: v[4], maxLen: v[5], attention,
    positional: POSITIONAL[v[8]], norm: NORMS[v[9]], arch: ARCHS[v[10]], seed: v[11] >>> 0,
  };
  if (form === 2) {
    const variant = SYNTH_VARIANTS[v[12]];
    const opts = { trainable: v[13] !== 0 };
    const comps = variant === 'mixture' ? [...v.slice(18, 18 + v[17])].map((i) => SYNTH_VARIANTS[i]) : [];
    if (variant === 'factorized-dense' || comps.includes('factorized-dense')) Object.assign(opts, { a: v[14], b: v[15] });
    if (variant === 'factorized-random' || comps.includes('factorized-random')) opts.k = v[16];
    if (variant === 'mixture') opts.components = comps;
    c.attentionOptions = opts;
  }
  return c;
}

/** Tokens as an Int32Array: an array or typed array of integers in [0, vocab), 1..maxLen long. */
function checkTokens(what, tokens, vocab, maxLen, hint = '') {
  const ok = Array.isArray(tokens) || (ArrayBuffer.isView(tokens) && !(tokens instanceof DataView));
  if (!ok) fail(`${what} must be an array of token ids, got ${describe(tokens)}`);
  if (tokens.length === 0) fail(`${what} is empty; give at least one token`);
  if (tokens.length > maxLen)
    fail(`${what} has ${tokens.length} tokens, more than this model's maxLen (${maxLen})${hint}`);
  const out = new Int32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!Number.isInteger(t) || t < 0 || t >= vocab) fail(`${what}[${i}] is ${describe(t)}; token ids must be integers in [0, ${vocab})`);
    out[i] = t;
  }
  return out;
}

export function modelMethods(core) {
  const ex = core.exports;
  const CFG_LEN = ex.aw_model_config_length();

  // The task spec of trainStep / evaluate / example: { id, length, symbols }.
  function taskSpec(what, opts, model) {
    const task = checkOneOf(`${what}: task`, opts.task, TASKS);
    const def = TASK_DEFAULTS[task];
    let length = opts.length ?? def.length;
    if (task === 'chars' && opts.length === undefined && model) length = Math.min(def.length, model.config.maxLen);
    checkSize(`${what}: length`, length);
    const symbols = opts.symbols ?? def.symbols;
    if (!Number.isInteger(symbols) || symbols < 0) fail(`${what}: symbols must be a non-negative integer, got ${describe(symbols)}`);
    const id = TASKS.indexOf(task);
    if ((task === 'copy' || task === 'reverse' || task === 'sort') && symbols < 2) fail(`${what}: ${task} needs symbols >= 2, got ${symbols}`);
    if (task === 'recall' && (symbols < 4 || symbols > 4096 || length > Math.floor(symbols / 2)))
      fail(`${what}: recall draws ${length} distinct keys from symbols / 2 = ${Math.floor(symbols / 2)}: needs 4 <= symbols <= 4096 and length <= symbols / 2`);
    return { task, id, length, symbols };
  }

  // Throws a specific Error when the task does not fit the model; returns { T, S }.
  function taskDims(what, model, spec) {
    return core.withBuffers(what, [{ name: 'dims', bytes: 12 }, { name: 'lens', bytes: 8 }], ([dims, lens]) => {
      const st = ex.aw_model_task_dims(model.handle, spec.id, spec.length, spec.symbols, dims);
      if (st === 0) {
        const d = new Int32Array(core.memory.buffer, dims, 2);
        return { T: d[0], S: d[1] };
      }
      const minVocab = new Int32Array(core.memory.buffer, dims, 3)[2];
      if (ex.aw_model_task_lengths(spec.id, spec.length, spec.symbols, lens) !== 0)
        fail(`${what}: task ${spec.task} with length ${spec.length} is not valid (length at most 4096; for chars, shorter than a tenth of the text, the held-out part)`);
      const [ns, nt] = new Int32Array(core.memory.buffer, lens, 2);
      const c = model.config;
      if (minVocab > c.vocab)
        fail(`${what}: task ${spec.task}${spec.symbols ? ` with symbols ${spec.symbols}` : ''} needs vocab >= ${minVocab}, this model has ${c.vocab}`);
      if (c.arch === 'encoder-decoder' && spec.task === 'chars')
        fail(`${what}: task chars is plain language modelling (no source sequence); it needs arch "decoder"`);
      const sep = spec.task === 'chars' || spec.task === 'recall' ? 0 : 1; // src, [0], tgt (task_uses_separator)
      const T = c.arch === 'decoder' ? ns + sep + nt - 1 : nt;
      const S = c.arch === 'decoder' ? 0 : ns;
      fail(`${what}: task ${spec.task} with length ${spec.length} needs ${Math.max(T, S)} positions, more than this ` +
        `model's maxLen (${c.maxLen}); pass a smaller length or create the model with a larger maxLen`);
    });
  }

  function hyper(what, opts) {
    const lr = checkFiniteNumber(`${what}: lr`, opts.lr ?? 2e-3);
    const beta1 = checkFiniteNumber(`${what}: beta1`, opts.beta1 ?? 0.9);
    const beta2 = checkFiniteNumber(`${what}: beta2`, opts.beta2 ?? 0.98);
    const eps = checkFiniteNumber(`${what}: eps`, opts.eps ?? 1e-8);
    const wd = checkFiniteNumber(`${what}: weightDecay`, opts.weightDecay ?? 0.01);
    const clip = checkFiniteNumber(`${what}: clip`, opts.clip ?? 1);
    if (!(lr > 0)) fail(`${what}: lr must be > 0, got ${lr}`);
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) fail(`${what}: beta1 and beta2 must be in [0, 1)`);
    if (!(eps > 0) || wd < 0) fail(`${what}: eps must be > 0 and weightDecay >= 0`);
    return new Float32Array([lr, beta1, beta2, eps, wd, clip]);
  }

  // Status 5 after training went wrong deserves its own advice.
  function checkFinite(st, what) {
    if (st === 5) fail(`${what}: the model produced NaN or Infinity (its parameters diverged, e.g. after too large an lr); create a new model or load a checkpoint`);
    core.check(st, what);
  }

  class Model {
    constructor(handle) {
      this.handle = handle;
      this.config = core.withBuffers('createModel', [{ name: 'config', bytes: CFG_LEN * 4 }], ([p]) => {
        this.parameterCount = ex.aw_model_info(handle, p);
        return intsToConfig(new Int32Array(core.memory.buffer, p, CFG_LEN));
      });
      Object.freeze(this.config);
    }

    #live(what) {
      if (this.handle === 0) fail(`${what}: this model was disposed`);
    }

    /** AdamW steps taken (restored by loadModel). */
    get steps() {
      this.#live('steps');
      return ex.aw_model_step_count(this.handle);
    }

    /** One AdamW step on a fresh batch of the task (drawn in C from the model's seeded stream). */
    trainStep(opts) {
      const what = 'trainStep';
      this.#live(what);
      checkKeys(what, opts, ['task', 'batchSize', 'length', 'symbols', 'lr', 'beta1', 'beta2', 'eps', 'weightDecay', 'clip']);
      const spec = taskSpec(what, opts, this);
      const batch = checkRange(`${what}: batchSize`, opts.batchSize ?? 32, 1, 65536);
      const h = hyper(what, opts);
      taskDims(what, this, spec);
      return core.withBuffers(what, [{ name: 'hyper', bytes: 24, from: h }, { name: 'metrics', bytes: 32 }], ([hp, mp]) => {
        const st = ex.aw_model_train_step(this.handle, spec.id, spec.length, spec.symbols, batch, hp, mp);
        if (st === 5) fail(`${what}: the loss or the gradients became NaN or Infinity; lower lr (now ${h[0]}) or keep clip > 0`);
        core.check(st, what);
        const m = new Float64Array(core.memory.buffer, mp, 4);
        return { loss: m[0], accuracy: m[1], gradNorm: m[2] };
      });
    }

    /** Mean loss and token accuracy over `batches` batches drawn from a fixed seed (the same every call). */
    evaluate(opts) {
      const what = 'evaluate';
      this.#live(what);
      checkKeys(what, opts, ['task', 'batches', 'batchSize', 'length', 'symbols', 'seed']);
      const spec = taskSpec(what, opts, this);
      const batches = checkRange(`${what}: batches`, opts.batches ?? 8, 1, 1 << 20);
      const batch = checkRange(`${what}: batchSize`, opts.batchSize ?? 64, 1, 65536);
      const seed = checkSeed(`${what}: seed`, opts.seed ?? 12345);
      taskDims(what, this, spec);
      return core.withBuffers(what, [{ name: 'metrics', bytes: 32 }], ([mp]) => {
        checkFinite(ex.aw_model_evaluate(this.handle, spec.id, spec.length, spec.symbols, batch, batches, seed, mp), what);
        const m = new Float64Array(core.memory.buffer, mp, 4);
        const out = { loss: m[0], accuracy: m[1], tokens: m[3] };
        if (spec.task === 'chars') out.bitsPerChar = m[0] / Math.LN2;
        return out;
      });
    }

    /**
     * One forward pass. tokens: decoder input ids (1..maxLen). Encoder-decoder: { source } too.
     * Returns logits (T*V, row-major) and attention[layer][head] (T*T Float32Arrays); encoder-decoder
     * adds crossAttention[layer][head] (T*S) and encoderAttention[layer][head] (S*S).
     */
    forward(tokens, opts = {}) {
      const what = 'forward';
      this.#live(what);
      checkKeys(what, opts, ['source']);
      const c = this.config;
      const hint = c.attention.startsWith('synth:') ? ' (a Synthesizer fixes its length when created)' : '';
      const tok = checkTokens(`${what}: tokens`, tokens, c.vocab, c.maxLen, hint);
      const encdec = c.arch === 'encoder-decoder';
      if (!encdec && opts.source !== undefined) fail(`${what}: source is for arch "encoder-decoder" models only`);
      const src = encdec ? checkTokens(`${what}: source`, opts.source ?? fail(`${what}: an encoder-decoder model needs { source }`), c.vocab, c.maxLen, hint) : null;
      const T = tok.length, S = src ? src.length : 0, H = c.heads, L = c.layers, V = c.vocab;
      const specs = [
        { name: 'tokens', bytes: T * 4, from: tok },
        { name: 'source', bytes: S * 4, from: src },
        { name: 'logits', bytes: T * V * 4 },
        { name: 'attention', bytes: L * H * T * T * 4 },
        { name: 'crossAttention', bytes: L * H * T * S * 4 },
        { name: 'encoderAttention', bytes: L * H * S * S * 4 },
      ];
      return core.withBuffers(what, specs, ([tp, sp, lp, ap, cp, ep]) => {
        checkFinite(ex.aw_model_forward(this.handle, tp, T, sp, S, lp, ap, cp, ep), what);
        const split = (ptr, rows, cols) =>
          Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, h) => core.readF32(ptr + ((l * H + h) * rows * cols) * 4, rows * cols)));
        const out = { logits: core.readF32(lp, T * V), attention: split(ap, T, T) };
        if (encdec) Object.assign(out, { crossAttention: split(cp, T, S), encoderAttention: split(ep, S, S) });
        return out;
      });
    }

    /**
     * Continues `prompt` (decoder) or, for encoder-decoder, decodes { source } starting from prompt
     * (default [0], the separator). Returns the new tokens (Int32Array). temperature 0 (default):
     * greedy. cache: true (default) uses the KV cache (softmax) or the recurrent state (causal linear).
     */
    generate(prompt, opts = {}) {
      const what = 'generate';
      this.#live(what);
      checkKeys(what, opts, ['maxTokens', 'temperature', 'topK', 'seed', 'stop', 'source', 'cache']);
      const c = this.config;
      const encdec = c.arch === 'encoder-decoder';
      const p = checkTokens(`${what}: prompt`, prompt ?? (encdec ? [0] : prompt), c.vocab, c.maxLen,
        ' (the prompt must leave room for the generated tokens)');
      const maxTokens = opts.maxTokens ?? 16;
      if (!Number.isInteger(maxTokens) || maxTokens < 0 || maxTokens > 1 << 20) fail(`${what}: maxTokens must be an integer >= 0, got ${describe(maxTokens)}`);
      const temperature = checkFiniteNumber(`${what}: temperature`, opts.temperature ?? 0);
      if (temperature < 0) fail(`${what}: temperature must be >= 0 (0 = greedy), got ${temperature}`);
      const topK = opts.topK ?? 0;
      if (!Number.isInteger(topK) || topK < 0) fail(`${what}: topK must be an integer >= 0 (0 = all), got ${describe(topK)}`);
      const seed = checkSeed(`${what}: seed`, opts.seed ?? 1);
      const stop = opts.stop ?? -1;
      if (stop !== -1 && (!Number.isInteger(stop) || stop < 0 || stop >= c.vocab)) fail(`${what}: stop must be a token id in [0, ${c.vocab}), got ${describe(stop)}`);
      const cache = checkBool(`${what}: cache`, opts.cache ?? true);
      if (!encdec && opts.source !== undefined) fail(`${what}: source is for arch "encoder-decoder" models only`);
      const src = encdec ? checkTokens(`${what}: source`, opts.source ?? fail(`${what}: an encoder-decoder model needs { source }`), c.vocab, c.maxLen) : null;
      const n = Math.min(maxTokens, c.maxLen - p.length + 1);
      const specs = [
        { name: 'out', bytes: Math.max(n, 1) * 4 }, { name: 'count', bytes: 4 },
        { name: 'prompt', bytes: p.length * 4, from: p }, { name: 'source', bytes: src ? src.length * 4 : 0, from: src },
      ];
      return core.withBuffers(what, specs, ([op, np, pp, sp]) => {
        checkFinite(ex.aw_model_generate(this.handle, op, np, n, pp, p.length, sp, src ? src.length : 0, temperature, topK,
          seed, stop, cache ? 1 : 0), what);
        const count = new Int32Array(core.memory.buffer, np, 1)[0];
        return new Int32Array(core.memory.buffer, op, count).slice();
      });
    }

    /**
     * One example of a task, laid out for this model: { source, target, prompt } where prompt is
     * what generate() continues (decoder: source then the separator 0, or the source alone for
     * recall, whose query predicts the value; encoder-decoder: [0] with source going to the
     * encoder) and target the tokens it should produce.
     */
    example(opts) {
      const what = 'example';
      this.#live(what);
      checkKeys(what, opts, ['task', 'length', 'symbols', 'seed']);
      const spec = taskSpec(what, opts, this);
      const seed = checkSeed(`${what}: seed`, opts.seed ?? 1);
      taskDims(what, this, spec);
      return core.withBuffers(what, [{ name: 'lens', bytes: 8 }], ([lp]) => {
        core.check(ex.aw_model_task_lengths(spec.id, spec.length, spec.symbols, lp), what);
        const [ns, nt] = new Int32Array(core.memory.buffer, lp, 2);
        return core.withBuffers(what, [{ name: 'src', bytes: Math.max(ns, 1) * 4 }, { name: 'tgt', bytes: nt * 4 }, { name: 'real', bytes: 4 }],
          ([sp, tp, rp]) => {
            core.check(ex.aw_model_example(spec.id, spec.length, spec.symbols, seed, sp, tp, rp), what);
            const real = new Int32Array(core.memory.buffer, rp, 1)[0];
            const source = new Int32Array(core.memory.buffer, sp, ns).slice();
            const target = new Int32Array(core.memory.buffer, tp, real).slice();
            if (spec.task === 'chars') return { source, target, prompt: target.slice(0, 1) };
            const decoderPrompt = spec.task === 'recall' ? source : Int32Array.from([...source, 0]);
            const prompt = this.config.arch === 'decoder' ? decoderPrompt : Int32Array.of(0);
            return { source, target, prompt };
          });
      });
    }

    /** The parameters as safetensors bytes (config and step count in __metadata__). */
    save() {
      const what = 'save';
      this.#live(what);
      const bytes = core.withBuffers(what, [{ name: 'size', bytes: 4 }], ([sp]) => {
        core.check(ex.aw_model_save_size(this.handle, sp), what);
        return new Int32Array(core.memory.buffer, sp, 1)[0];
      });
      return core.withBuffers(what, [{ name: 'checkpoint', bytes }], ([bp]) => {
        core.check(ex.aw_model_save(this.handle, bp, bytes), what);
        return new Uint8Array(core.memory.buffer, bp, bytes).slice();
      });
    }

    /**
     * Finite-difference gradient check of the whole model on a random batch (for tests; the
     * procedure is src/model/gradcheck.c, shared with the native suite). Parameters are restored.
     * Returns { error, worstTensor, worstTensorError, checked, skipped, zeroGradTensors, fixedWithGrad }.
     */
    gradientCheck(opts = {}) {
      const what = 'gradientCheck';
      this.#live(what);
      checkKeys(what, opts, ['batchSize', 'length', 'sourceLength', 'seed', 'perTensor']);
      const c = this.config;
      const B = checkRange(`${what}: batchSize`, opts.batchSize ?? 2, 1, 64);
      const T = checkRange(`${what}: length`, opts.length ?? Math.min(6, c.maxLen), 1, c.maxLen);
      const S = c.arch === 'encoder-decoder' ? checkRange(`${what}: sourceLength`, opts.sourceLength ?? Math.min(5, c.maxLen), 1, c.maxLen) : 0;
      const seed = checkSeed(`${what}: seed`, opts.seed ?? 77);
      const per = checkRange(`${what}: perTensor`, opts.perTensor ?? 6, 1, 1 << 20);
      return core.withBuffers(what, [{ name: 'out', bytes: 48 }, { name: 'names', bytes: 80 }], ([op, np]) => {
        core.check(ex.aw_model_grad_check(this.handle, B, T, S, seed, per, op, np), what);
        const o = new Float64Array(core.memory.buffer, op, 6);
        const name = (p) => {
          const u8 = new Uint8Array(core.memory.buffer, p, 40);
          return new TextDecoder().decode(u8.subarray(0, u8.indexOf(0) < 0 ? 40 : u8.indexOf(0)));
        };
        return { error: o[0], worstTensorError: o[1], worstTensor: name(np), checked: o[2], skipped: o[3],
          zeroGradTensors: o[4], firstZeroGradTensor: name(np + 40), fixedWithGrad: o[5] };
      });
    }

    /** Frees the model's wasm memory; later calls throw. Safe to call twice. */
    dispose() {
      if (this.handle) ex.aw_model_destroy(this.handle);
      this.handle = 0;
    }
  }

  function fromHandle(what, status, handlePtr) {
    const handle = new Uint32Array(core.memory.buffer, handlePtr, 1)[0];
    if (status === 4) fail(`${what}: the bytes are not an attention-wasm model checkpoint (safetensors with the model's metadata and tensors)`);
    if (status === 1) fail(`${what}: the config was rejected by the C core (check the sizes and the attention options)`);
    core.check(status, what);
    return new Model(handle);
  }

  return {
    /** A new model; see ModelConfig in model.d.ts for the options and their defaults. */
    createModel(config = {}) {
      const c = resolveConfig(config);
      const ints = configToInts(c, CFG_LEN);
      return core.withBuffers('createModel', [{ name: 'handle', bytes: 4 }, { name: 'config', bytes: CFG_LEN * 4, from: ints }],
        ([hp, cp]) => fromHandle('createModel', ex.aw_model_create(hp, cp), hp));
    },

    /** A model from save()'s bytes (or the native trainer's .safetensors file). */
    loadModel(bytes) {
      const what = 'loadModel';
      let u8;
      if (bytes instanceof Uint8Array) u8 = bytes;
      else if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
      else if (ArrayBuffer.isView(bytes)) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      else fail(`${what}: bytes must be a Uint8Array or ArrayBuffer (a safetensors checkpoint), got ${describe(bytes)}`);
      if (u8.length < 8) fail(`${what}: ${u8.length} bytes is too short for a safetensors checkpoint`);
      return core.withBuffers(what, [{ name: 'handle', bytes: 4 }, { name: 'checkpoint', bytes: u8.length, from: u8 }],
        ([hp, bp]) => fromHandle(what, ex.aw_model_load(hp, bp, u8.length), hp));
    },

    /** The chars task's tokenizer: text -> ids (1 + index in the charset, lower-cased; 0 for others) and back. */
    charsTokenizer: {
      vocab: ex.aw_model_chars_vocab(),
      encode: (text) => {
        if (typeof text !== 'string') fail(`charsTokenizer.encode: text must be a string, got ${describe(text)}`);
        return Int32Array.from(text, (ch) => (ch.charCodeAt(0) < 256 ? ex.aw_model_char_token(ch.charCodeAt(0)) : 0));
      },
      decode: (ids) => Array.from(ids, (t) => String.fromCharCode(ex.aw_model_token_char(t) || 0xfffd)).join(''),
    },
  };
}
