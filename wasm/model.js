// model.js: lib.createModel / lib.loadModel, the tiny Transformer of docs/attention-forms.md section 5
// (C side: src/model, exported by src/api/api_model.c; docs/model.md). The model lives in the
// wasm heap; this wrapper checks every argument before any wasm runs and turns C statuses into
// Errors that say what to change.
import { INT32_MAX, INT32_MIN, checkBool, checkFiniteNumber, checkInt, checkKeys, checkSeed, describe, fail, formOptionText, isIntIn, readForms } from './core.js';
import { llama2cLegacyToV2, safetensorsToLlama2c } from './llama2c.js';
import { installHooks } from './hooks.js';

// The types of createModel's options. Only types are checked here: the names of forms, tasks and
// enums, every range and every rule between fields are C's (src/model/config.c), which says
// what is wrong in its own message.
const CONFIG_TYPES = {
  vocab: 'number', dModel: 'number', heads: 'number', layers: 'number', dFF: 'number', maxLen: 'number',
  attention: 'string', positional: 'string', norm: 'string', arch: 'string', seed: 'number',
  block: 'string', normType: 'string', ffn: 'string', bias: 'boolean', tieEmbeddings: 'boolean', kvHeads: 'number',
  ropeTheta: 'number', normEps: 'number', qkvBias: 'boolean', headDim: 'number',
};
// ropeScaling: Llama 3.1's rotary scaling, an object of four numbers (C checks them together)
const ROPE_SCALING_KEYS = ['factor', 'lowFreqFactor', 'highFreqFactor', 'originalMaxLen'];
// The text C parses for one config field, after its type is checked.
function fieldText(what, value, type) {
  if (typeof value !== type) fail(`${what} must be a ${type}, got ${describe(value)}`);
  if (type === 'number' && !Number.isFinite(value)) fail(`${what} must be a finite number, got ${value}`);
  return String(value);
}

/**
 * createModel's options as [key, text] pairs for C's config builder (src/model/config.h). forms:
 * lib.forms, whose option declarations give each attentionOptions field its JS type (which form
 * reads which option, its range and its messages are C's).
 */
function configFields(config, forms) {
  const what = 'createModel';
  checkKeys(what, config, [...Object.keys(CONFIG_TYPES), 'attentionOptions', 'layerForms', 'ropeScaling']);
  const fields = [];
  for (const [key, type] of Object.entries(CONFIG_TYPES))
    if (config[key] !== undefined) fields.push([key, fieldText(`${what}: ${key}`, config[key], type)]);
  if (config.ropeScaling !== undefined) {
    const rs = config.ropeScaling;
    if (rs === null || typeof rs !== 'object' || Array.isArray(rs))
      fail(`${what}: ropeScaling must be an object { ${ROPE_SCALING_KEYS.join(', ')} }, got ${describe(rs)}`);
    checkKeys(`${what}: ropeScaling`, rs, ROPE_SCALING_KEYS);
    for (const k of ROPE_SCALING_KEYS)
      if (rs[k] !== undefined) fields.push([`ropeScaling.${k}`, fieldText(`${what}: ropeScaling.${k}`, rs[k], 'number')]);
  }
  const declared = new Map(forms.flatMap((f) => f.options).map((opt) => [opt.name, opt]));
  // attentionOptions (the model's, or one layer's: name and key say which) as fields
  const options = (name, key, o) => {
    checkKeys(`${what}: ${name}`, o, [...declared.keys()]);
    for (const [k, opt] of declared)
      if (o[k] !== undefined) fields.push([`${key}.${k}`, formOptionText(`${what}: ${name}.${k}`, opt, o[k])]);
  };
  if (config.attentionOptions !== undefined) options('attentionOptions', 'attentionOptions', config.attentionOptions);
  // layerForms: its length, then each entry's form and options (C checks the length against
  // layers, the names and the options, and refuses attention beside it)
  if (config.layerForms !== undefined) {
    const lf = config.layerForms;
    if (!Array.isArray(lf)) fail(`${what}: layerForms must be an array of { attention, attentionOptions }, one per layer, got ${describe(lf)}`);
    fields.push(['layerForms', String(lf.length)]);
    lf.forEach((entry, l) => {
      checkKeys(`${what}: layerForms[${l}]`, entry, ['attention', 'attentionOptions']);
      if (entry.attention !== undefined)
        fields.push([`layerForms.${l}.attention`, fieldText(`${what}: layerForms[${l}].attention`, entry.attention, 'string')]);
      if (entry.attentionOptions !== undefined)
        options(`layerForms[${l}].attentionOptions`, `layerForms.${l}.attentionOptions`, entry.attentionOptions);
    });
  }
  return fields;
}

// The architectures that read a source sequence (an encoder), and the RNN baselines (src/model/rnn.h).
const hasSource = (arch) => arch !== 'decoder';
const isRnn = (arch) => arch === 'gru' || arch === 'gru-attention';
const SOURCE_ONLY = 'source is for models with an encoder (arch "encoder-decoder", "gru" or "gru-attention") only';
const needsSource = (arch) => `${arch === 'encoder-decoder' ? 'an encoder-decoder' : `a "${arch}"`} model needs`;

/** A JS number for C (NaN: use the default), after its type is checked. */
function numberArg(what, value) {
  if (value === undefined) return NaN;
  if (typeof value !== 'number' || Number.isNaN(value)) fail(`${what} must be a number, got ${describe(value)}`);
  return value;
}

/** Token ids as an Int32Array: an array or typed array of integers (C checks them against the vocabulary). */
// A rolling cache's window: a whole number that fits the call (C checks it against maxLen and
// says so; a number past int32 would reach it wrapped, so the range is named here too).
function checkWindow(what, window, maxLen) {
  checkInt(`${what}: window`, window, undefined, undefined, { expected: `an integer in [1, maxLen = ${maxLen}]`, accepted: '' });
}

// A rolling cache's sinks (the first tokens it keeps): C checks them against the window.
const checkSinks = (what, sinks) => checkInt(`${what}: sinks`, sinks, 0, INT32_MAX, { expected: 'an integer >= 0' });

function checkTokens(what, tokens) {
  const ok = Array.isArray(tokens) || (ArrayBuffer.isView(tokens) && !(tokens instanceof DataView));
  if (!ok) fail(`${what} must be an array of token ids, got ${describe(tokens)}`);
  if (tokens.length === 0) fail(`${what} is empty; give at least one token`);
  const out = new Int32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!isIntIn(t, INT32_MIN, INT32_MAX)) fail(`${what}[${i}] is ${describe(t)}; token ids must be integers in [0, vocab)`);
    out[i] = t;
  }
  return out;
}

// Rows of token ids (an array of arrays or typed arrays) as one (rows, cols) Int32Array; ragged
// rows and non-integers are Errors naming the row (the vocabulary is C's to check).
function tokenRows(what, rows, like = null) {
  if (!Array.isArray(rows) || rows.length === 0)
    fail(`${what} must be a non-empty array of rows of token ids (one row per sequence), got ${describe(rows)}`);
  const cols = rows[0]?.length;
  const out = new Int32Array(rows.length * (cols ?? 0));
  rows.forEach((row, r) => {
    const ok = Array.isArray(row) || (ArrayBuffer.isView(row) && !(row instanceof DataView));
    if (!ok) fail(`${what}[${r}] must be an array of token ids, got ${describe(row)}`);
    if (row.length === 0) fail(`${what}[${r}] is empty`);
    if (like && row.length !== like.cols)
      fail(`${what}[${r}] has ${row.length} tokens, and ${like.name}[${r}] has ${like.cols}: they must match`);
    if (row.length !== cols) fail(`${what}[${r}] has ${row.length} tokens and row 0 has ${cols}: every row must have the same length`);
    for (let c = 0; c < cols; c++) {
      const t = row[c];
      if (!isIntIn(t, INT32_MIN, INT32_MAX)) fail(`${what}[${r}][${c}] is ${describe(t)}; token ids must be integers in [0, vocab)`);
      out[r * cols + c] = t;
    }
  });
  return { ids: out, rows: rows.length, cols };
}

// The caller's batch of trainStep / evaluate: { inputs, targets, mask?, source? } -> the arrays C takes.
function ownBatch(what, opts, arch) {
  const encdec = hasSource(arch);
  const inputs = tokenRows(`${what}: inputs`, opts.inputs);
  if (opts.targets === undefined) fail(`${what}: targets are required with inputs (the token each position should predict)`);
  if (opts.targets.length !== inputs.rows)
    fail(`${what}: targets has ${opts.targets?.length} rows, inputs has ${inputs.rows}: they must match`);
  const targets = tokenRows(`${what}: targets`, opts.targets, { name: 'inputs', cols: inputs.cols });
  let mask = null; // 0/1 per position, to C (which checks targets against the vocabulary and the mask)
  if (opts.mask !== undefined) {
    mask = new Uint8Array(inputs.rows * inputs.cols);
    if (!Array.isArray(opts.mask) || opts.mask.length !== inputs.rows) fail(`${what}: mask must have one row per input row (${inputs.rows}), got ${describe(opts.mask)}`);
    opts.mask.forEach((row, r) => {
      if (!row || row.length !== inputs.cols) fail(`${what}: mask[${r}] has ${row?.length} entries, inputs[${r}] has ${inputs.cols}`);
      for (let c = 0; c < inputs.cols; c++) {
        const x = row[c];
        if (!(x === 0 || x === 1 || x === true || x === false)) fail(`${what}: mask[${r}][${c}] is ${describe(x)}; expected 0 or 1`);
        mask[r * inputs.cols + c] = x ? 1 : 0;
      }
    });
  }
  if (!encdec && opts.source !== undefined) fail(`${what}: ${SOURCE_ONLY}`);
  if (encdec && opts.source === undefined) fail(`${what}: ${needsSource(arch)} source rows (one per input row)`);
  let source = null;
  if (encdec) {
    if (!Array.isArray(opts.source) || opts.source.length !== inputs.rows) fail(`${what}: source must have one row per input row (${inputs.rows}), got ${describe(opts.source)}`);
    source = tokenRows(`${what}: source`, opts.source);
  }
  return { inputs, targets, mask, source };
}

/** The key under which modelMethods hands Model.prototype to the families that add methods to it. */
export const MODEL_PROTOTYPE = Symbol('attention-wasm.Model.prototype');
/** The key of the config check (createModel's, with no model made) that loaders call before reading weights. */
export const CHECK_CONFIG = Symbol('attention-wasm.checkConfig');
/** createModel's opts[UNINITIALISED] = true (with training: false): parameters left zero for a loader to write. */
export const UNINITIALISED = Symbol('attention-wasm.uninitialised');
/**
 * createModel's opts[QUANTIZED] = { format, group, what } (with UNINITIALISED): the decoder's matrices
 * quantized from the start (group NaN: the format's default), for a loader to fill one at a time
 * (aw_model_quantize_fill); Errors start with `what`.
 */
export const QUANTIZED = Symbol('attention-wasm.quantized');

/**
 * An optional signal, which must be a real AbortSignal: { aborted: false } has no abort event and its
 * flag may never change, so a duck-typed check would take an object that can never stop the loop.
 * The tag check accepts an AbortSignal of another realm (an iframe's), where instanceof fails.
 */
function checkSignal(what, signal) {
  if (signal === undefined) return undefined;
  const real = (typeof AbortSignal === 'function' && signal instanceof AbortSignal) ||
    Object.prototype.toString.call(signal) === '[object AbortSignal]';
  if (!real) fail(`${what}: signal must be an AbortSignal, got ${describe(signal)}; give an AbortController's .signal (an object with an aborted flag is not one)`);
  return signal;
}

// Frees the C model of a Model that was garbage-collected without dispose().
const forgotten = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ core, handle }) => core.exports.aw_model_destroy(handle))
  : null;

// Frees the C session of a generation that was garbage-collected without dispose() (and forgets it
// in its model's set of open ones; aw_generation_end reads nothing of the model).
const unfinished = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ core, record, open }) => {
    if (record.handle) core.exports.aw_generation_end(record.handle);
    record.handle = 0;
    open.delete(record);
  })
  : null;

export function modelMethods(core) {
  const ex = core.exports;
  const TASK_NAMES = Array.from({ length: ex.aw_task_count() }, (_, i) => core.cString(ex.aw_task_name(i)));

  // The task part of trainStep / evaluate / example: { task, length, symbols } (types checked
  // here; names, defaults and ranges in C).
  function taskArgs(what, opts) {
    if (typeof opts.task !== 'string') fail(`${what}: task must be one of ${TASK_NAMES.map((t) => JSON.stringify(t)).join(', ')}, got ${describe(opts.task)}`);
    return { task: opts.task, length: numberArg(`${what}: length`, opts.length), symbols: numberArg(`${what}: symbols`, opts.symbols) };
  }

  function hyper(what, opts) {
    const h = [['lr', 2e-3], ['beta1', 0.9], ['beta2', 0.98], ['eps', 1e-8], ['weightDecay', 0.01], ['clip', 1]];
    return Float64Array.from(h, ([k, def]) => checkFiniteNumber(`${what}: ${k}`, opts[k] ?? def));
  }

  // generate's and startGeneration's options, checked: { p, maxTokens, temperature, topK, seed, stop, cache, src }
  function generateArgs(what, c, prompt, opts) {
    checkKeys(what, opts, ['maxTokens', 'temperature', 'topK', 'seed', 'stop', 'source', 'cache', 'window', 'sinks']);
    const encdec = hasSource(c.arch);
    const p = checkTokens(`${what}: prompt`, prompt ?? (encdec ? [0] : prompt));
    const maxTokens = opts.maxTokens !== undefined ? opts.maxTokens : 16;
    checkInt(`${what}: maxTokens`, maxTokens, 0, 1 << 20, { expected: 'an integer >= 0' });
    const temperature = checkFiniteNumber(`${what}: temperature`, opts.temperature !== undefined ? opts.temperature : 0);
    if (temperature < 0) fail(`${what}: temperature must be >= 0 (0 = greedy), got ${temperature}`);
    const topK = opts.topK !== undefined ? opts.topK : 0;
    checkInt(`${what}: topK`, topK, 0, INT32_MAX, { expected: 'an integer >= 0 (0 = all)' });
    const seed = checkSeed(`${what}: seed`, opts.seed !== undefined ? opts.seed : 1);
    const stop = opts.stop !== undefined ? opts.stop : -1;
    if (stop !== -1) checkInt(`${what}: stop`, stop, 0, c.vocab - 1, { expected: `a token id in [0, ${c.vocab})`, accepted: '' });
    const cache = checkBool(`${what}: cache`, opts.cache !== undefined ? opts.cache : true);
    if (!encdec && opts.source !== undefined) fail(`${what}: ${SOURCE_ONLY}`);
    const src = encdec ? checkTokens(`${what}: source`, opts.source !== undefined ? opts.source : fail(`${what}: ${needsSource(c.arch)} { source }`)) : null;
    return { p, maxTokens, temperature, topK, seed, stop, cache, src };
  }

  const STOP_REASONS = [null, 'stop', 'maxTokens', 'maxLen']; // C's AW_GEN_* (src/model/transformer.h)

  // model.startGeneration's session. model: the Model; record: { handle, modelDisposed } (the model's set `open` holds it,
  // so model.dispose frees the C session); limit: the most tokens it can make (maxTokens, or what maxLen leaves).
  class Generation {
    #model; // held so the model outlives its sessions (its C session points at the C model)
    #record;
    #open;
    #limit;
    #tokens = new Int32Array(16);
    #count = 0;
    #ended = 0;

    constructor(model, record, open, limit) {
      this.#model = model, this.#record = record, this.#open = open, this.#limit = limit;
      if (limit === 0) this.#ended = STOP_REASONS.indexOf('maxTokens'); // maxTokens 0: C's begin ended it too
      unfinished?.register(this, { core, record, open }, this);
    }

    /** true once it ended (stopReason says why); next then returns no tokens */
    get done() { return this.#ended !== 0; }

    /** null while it runs; 'stop' (the stop token, included), 'maxTokens' (it made maxTokens), 'maxLen' (the sequence filled maxLen) */
    get stopReason() { return STOP_REASONS[this.#ended]; }

    /** every token made so far (a copy) */
    get tokens() { return this.#tokens.slice(0, this.#count); }

    /** Makes up to count (a positive integer, default 1) more tokens and returns them; an empty Int32Array once done. */
    next(count = 1) {
      const what = 'next';
      if (this.#record.handle === 0)
        fail(this.#record.modelDisposed ? `${what}: this generation's model was disposed (model.dispose() frees the generations started on it)`
          : `${what}: this generation was disposed`);
      checkInt(`${what}: count`, count, 1, 1 << 20, { expected: 'a positive integer' });
      if (this.#ended) return new Int32Array(0);
      const k = Math.min(count, this.#limit - this.#count);
      const specs = [{ name: 'out', bytes: k * 4 }, { name: 'info', bytes: 8 }];
      const made = core.withBuffers(what, specs, ([op, ip]) => {
        core.check(ex.aw_generation_next(this.#record.handle, op, k, ip), what);
        const [n, ended] = new Int32Array(core.memory.buffer, ip, 2);
        this.#ended = ended;
        return new Int32Array(core.memory.buffer, op, n).slice();
      });
      if (this.#count + made.length > this.#tokens.length) {
        const grown = new Int32Array(Math.max(2 * this.#tokens.length, this.#count + made.length));
        grown.set(this.#tokens.subarray(0, this.#count));
        this.#tokens = grown;
      }
      this.#tokens.set(made, this.#count);
      this.#count += made.length;
      return made;
    }

    /** Frees the session's wasm memory (its caches); later next calls throw. Safe to call twice. */
    dispose() {
      const r = this.#record;
      if (r.handle) {
        unfinished?.unregister(this);
        ex.aw_generation_end(r.handle);
        r.handle = 0;
        this.#open.delete(r);
      }
    }
  }

  class Model {
    #token = {};
    #open = new Set(); // the records of its generations not yet disposed (startGeneration)

    constructor(handle) {
      this.handle = handle;
      this.#readConfig();
      this.parameterCount = ex.aw_model_parameter_count(handle);
      forgotten?.register(this, { core, handle }, this.#token);
    }

    #live(what) {
      if (this.handle === 0) fail(`${what}: this model was disposed`);
    }

    /** this.config from C's JSON (its length first when longer than a first guess: layerForms of many layers) */
    #readConfig() {
      const read = (bytes) => core.withBuffers('model.config', [{ name: 'config', bytes }], ([p]) => {
        const len = ex.aw_model_config_json(this.handle, p, bytes);
        return len < bytes ? core.cString(p).slice(0, len) : read(len + 1);
      });
      this.config = Object.freeze(JSON.parse(read(1024)));
    }

    /**
     * Changes attentionOptions of a built model, for the options a form lets change once built (DSA's
     * stage, between its dense warm-up and sparse training); every layer whose form has the option
     * takes it, and config (so save) shows it. Other options are Errors naming them, and the model is
     * then unchanged. Returns the new config.
     */
    setAttentionOptions(opts) {
      const what = 'setAttentionOptions';
      this.#live(what);
      if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) fail(`${what}: expected an object of attentionOptions, got ${describe(opts)}`);
      const declared = new Map(readForms(core).flatMap((f) => f.options).map((o) => [o.name, o]));
      checkKeys(what, opts, [...declared.keys()]);
      for (const [k, value] of Object.entries(opts)) {
        if (value === undefined) continue;
        const text = formOptionText(`${what}: attentionOptions.${k}`, declared.get(k), value);
        core.withStrings(what, [k, text], ([kp, tp]) => core.check(ex.aw_model_set_attention_option(this.handle, kp, tp), what));
      }
      this.#readConfig();
      return this.config;
    }

    /** false for a model loaded with { training: false } (parameters only: it runs, it does not train) */
    get training() {
      this.#live('training');
      return !ex.aw_model_inference(this.handle);
    }

    /**
     * How many ids generate and streamGenerate may pick: the vocabulary, or fewer when the model's
     * tokenizer has fewer ids than its checkpoint's padded vocabulary (loadHuggingFace sets it then).
     * Set it to an integer in [1, vocab].
     */
    get sampleVocab() {
      this.#live('sampleVocab');
      return ex.aw_model_sample_vocab(this.handle);
    }

    set sampleVocab(n) {
      this.#live('sampleVocab');
      if (!Number.isInteger(n)) fail(`sampleVocab must be an integer in [1, ${this.config.vocab}], got ${describe(n)}`);
      core.check(ex.aw_model_set_sample_vocab(this.handle, n), 'sampleVocab');
    }

    /** AdamW steps taken (restored by loadModel). */
    get steps() {
      this.#live('steps');
      return ex.aw_model_step_count(this.handle);
    }

    /**
     * What this library's generation keeps for one sequence of maxLen, per decoder layer: the bytes of
     * its KV cache or recurrent state as generate allocates them (the step's scratch included; null: a
     * form with no step, whose generation recomputes), and their total. C counts them.
     */
    generationBytes() {
      const what = 'generationBytes';
      this.#live(what);
      const n = this.config.layers;
      const floats = core.withBuffers(what, [{ name: 'floats', bytes: 8 * n }], ([p]) => {
        core.check(ex.aw_model_generation_floats(this.handle, p), what);
        return Array.from(new Float64Array(core.memory.buffer, p, n));
      });
      const layers = floats.map((f) => (f < 0 ? null : 4 * f));
      return { layers, total: layers.reduce((s, b) => s + (b ?? 0), 0) };
    }

    /**
     * Quantizes every matrix the decoder reads per token (q, k, v, o, the FFN's and the classifier)
     * to format 'q8_0' (int8, one float32 scale per groupSize values, llama2.c's runq.c) or 'q4_0'
     * (ggml's 4-bit values in groups of 32, float32 scales), and frees their float32 copies. Forward,
     * generate and streamLosses then run integer dot products; training and saving are Errors. An
     * inference-only decoder ({ training: false }). groupSize: q8_0's default is 64, halved until it
     * divides dModel, dFF and heads x headDim.
     */
    quantize(format, opts = {}) {
      const what = 'quantize';
      this.#live(what);
      if (typeof format !== 'string') fail(`${what}: format must be "q8_0" or "q4_0", got ${describe(format)}`);
      checkKeys(what, opts, ['groupSize']);
      const group = opts.groupSize === undefined ? NaN : numberArg(`${what}: groupSize`, opts.groupSize);
      core.withStrings(what, [format], ([fp]) => core.check(ex.aw_model_quantize(this.handle, fp, group), what));
      return this.weightBytes;
    }

    /**
     * A quantized copy of this model, for inference (this model stays as it is): the same matrices
     * model.quantize(format, { groupSize }) would make, bit for bit, quantized in pieces of about a
     * million values with a macrotask between them, so a page stays responsive; the float32 weights
     * are never copied whole. signal (an AbortSignal) stops it (the copy is freed). Resolves to the copy.
     */
    quantizedCopy(format, opts = {}) {
      this.#live('quantizedCopy');
      return quantizedCopy(this, format, opts, () => this.#live('quantizedCopy'));
    }

    /**
     * The weights' bytes: { format ('fp32', 'q8_0', 'q4_0', or 'bf16': loadHuggingFace's dtype), groupSize
     * (0 for fp32 and bf16), fp32 (their bytes in float32, before quantize), bytes (held now: the float32
     * tensors left plus the quantized values and scales, or the BF16 matrices) }.
     */
    get weightBytes() {
      this.#live('weightBytes');
      const v = core.withBuffers('weightBytes', [{ name: 'bytes', bytes: 32 }], ([p]) => {
        ex.aw_model_weight_bytes(this.handle, p);
        return Array.from(new Float64Array(core.memory.buffer, p, 4));
      });
      return { format: ['fp32', 'q8_0', 'q4_0', 'bf16'][v[2]], groupSize: v[3], fp32: v[0], bytes: v[1] };
    }

    /** Runs fn(ptrs) with the caller's batch in the heap: [tokens, targets, mask (0 when none), source]. */
    #withOwnBatch(what, batch, fn) {
      const { inputs, targets, mask, source } = batch;
      return core.withBuffers(what, [
        { name: 'inputs', bytes: inputs.ids.length * 4, from: inputs.ids },
        { name: 'targets', bytes: targets.ids.length * 4, from: targets.ids },
        { name: 'mask', bytes: mask ? mask.length : 0, from: mask ?? undefined },
        { name: 'source', bytes: source ? source.ids.length * 4 : 0, from: source?.ids },
      ], fn);
    }

    /**
     * One AdamW step. On a fresh batch of a built-in task ({ task, ... }: drawn in C from the
     * model's seeded stream), or on the caller's own batch ({ inputs, targets, mask, source }:
     * rows of token ids, position i of inputs[r] predicting targets[r][i]; mask 0 = no loss there;
     * source rows for an encoder-decoder).
     */
    trainStep(opts) {
      const what = 'trainStep';
      this.#live(what);
      if (opts && typeof opts === 'object' && opts.inputs !== undefined) {
        checkKeys(what, opts, ['inputs', 'targets', 'mask', 'source', 'lr', 'beta1', 'beta2', 'eps', 'weightDecay', 'clip']);
        const batch = ownBatch(what, opts, this.config.arch);
        const h = hyper(what, opts);
        return this.#withOwnBatch(what, batch, ([tp, gp, kp, sp]) =>
          core.withBuffers(what, [{ name: 'hyper', bytes: 48, from: h }, { name: 'metrics', bytes: 40 }], ([hp, mp]) => {
            core.check(ex.aw_model_train_batch(this.handle, tp, gp, kp, sp, batch.inputs.rows, batch.inputs.cols,
              batch.source?.cols ?? 0, hp, mp), what);
            const m = new Float64Array(core.memory.buffer, mp, 5);
            return { loss: m[0], accuracy: m[1], gradNorm: m[2], sideLoss: m[4] };
          }));
      }
      checkKeys(what, opts, ['task', 'batchSize', 'length', 'symbols', 'lr', 'beta1', 'beta2', 'eps', 'weightDecay', 'clip']);
      const t = taskArgs(what, opts);
      const batch = numberArg(`${what}: batchSize`, opts.batchSize);
      const h = hyper(what, opts);
      return core.withStrings(what, [t.task], ([tp]) =>
        core.withBuffers(what, [{ name: 'hyper', bytes: 48, from: h }, { name: 'metrics', bytes: 40 }], ([hp, mp]) => {
          core.check(ex.aw_model_train_step(this.handle, tp, t.length, t.symbols, batch, hp, mp), what);
          const m = new Float64Array(core.memory.buffer, mp, 5);
          return { loss: m[0], accuracy: m[1], gradNorm: m[2], sideLoss: m[4] };
        }));
    }

    /**
     * Mean loss and token accuracy: over `batches` batches of a task drawn from a fixed seed (the
     * same every call), or on the caller's own batch ({ inputs, targets, mask, source }).
     */
    evaluate(opts) {
      const what = 'evaluate';
      this.#live(what);
      if (opts && typeof opts === 'object' && opts.inputs !== undefined) {
        checkKeys(what, opts, ['inputs', 'targets', 'mask', 'source']);
        const batch = ownBatch(what, opts, this.config.arch);
        return this.#withOwnBatch(what, batch, ([tp, gp, kp, sp]) =>
          core.withBuffers(what, [{ name: 'metrics', bytes: 32 }], ([mp]) => {
            core.check(ex.aw_model_evaluate_batch(this.handle, tp, gp, kp, sp, batch.inputs.rows, batch.inputs.cols,
              batch.source?.cols ?? 0, mp), what);
            const m = new Float64Array(core.memory.buffer, mp, 4);
            return { loss: m[0], accuracy: m[1], tokens: m[3] };
          }));
      }
      checkKeys(what, opts, ['task', 'batches', 'batchSize', 'length', 'symbols', 'seed']);
      const t = taskArgs(what, opts);
      const args = ['batchSize', 'batches', 'seed'].map((k) => numberArg(`${what}: ${k}`, opts[k]));
      return core.withStrings(what, [t.task], ([tp]) =>
        core.withBuffers(what, [{ name: 'metrics', bytes: 32 }], ([mp]) => {
          core.check(ex.aw_model_evaluate(this.handle, tp, t.length, t.symbols, ...args, mp), what);
          const m = new Float64Array(core.memory.buffer, mp, 4);
          const out = { loss: m[0], accuracy: m[1], tokens: m[3] };
          if (t.task === 'chars') out.bitsPerChar = m[0] / Math.LN2;
          return out;
        }));
    }

    /**
     * One forward pass. tokens: decoder input ids (1..maxLen). Encoder-decoder, gru, gru-attention:
     * { source } too. Returns logits (T*V, row-major) and attention[layer][head] (T*T Float32Arrays);
     * encoder-decoder adds crossAttention[layer][head] (T*S) and encoderAttention[layer][head] (S*S).
     * gru-attention: attention [] (no self-attention) and crossAttention [[a]], its alignment
     * weights a_ij (T*S) as one layer with one head; gru: attention [] and noAttention, the reason.
     */
    forward(tokens, opts = {}) {
      const what = 'forward';
      this.#live(what);
      checkKeys(what, opts, ['source']);
      const c = this.config;
      const tok = checkTokens(`${what}: tokens`, tokens);
      const encdec = c.arch === 'encoder-decoder', rnn = isRnn(c.arch);
      if (!hasSource(c.arch) && opts.source !== undefined) fail(`${what}: ${SOURCE_ONLY}`);
      const src = hasSource(c.arch) ? checkTokens(`${what}: source`, opts.source !== undefined ? opts.source : fail(`${what}: ${needsSource(c.arch)} { source }`)) : null;
      // longer than maxLen: C says so before these buffers are needed, so size them for at most maxLen
      const T = Math.min(tok.length, c.maxLen), S = src ? Math.min(src.length, c.maxLen) : 0, V = c.vocab;
      // the GRU archs: no self-attention; gru-attention's alignment as one layer of one head
      const H = rnn ? 1 : c.heads, L = rnn ? (c.arch === 'gru-attention' ? 1 : 0) : c.layers, LS = rnn ? 0 : L;
      const specs = [
        { name: 'tokens', bytes: tok.length * 4, from: tok },
        { name: 'source', bytes: src ? src.length * 4 : 0, from: src },
        { name: 'logits', bytes: T * V * 4 },
        { name: 'attention', bytes: LS * H * T * T * 4 },
        { name: 'crossAttention', bytes: L * H * T * S * 4 },
        { name: 'encoderAttention', bytes: L * H * S * S * 4 },
      ];
      return core.withBuffers(what, specs, ([tp, sp, lp, ap, cp, ep]) => {
        core.check(ex.aw_model_forward(this.handle, tp, tok.length, sp, src ? src.length : 0, lp, ap, cp, ep), what);
        const split = (ptr, rows, cols, layers = L) =>
          Array.from({ length: layers }, (_, l) => Array.from({ length: H }, (_, h) => core.readF32(ptr + ((l * H + h) * rows * cols) * 4, rows * cols)));
        const out = { logits: core.readF32(lp, T * V), attention: split(ap, T, T, LS) };
        if (encdec) Object.assign(out, { crossAttention: split(cp, T, S), encoderAttention: split(ep, S, S) });
        if (c.arch === 'gru-attention') out.crossAttention = split(cp, T, S);
        if (c.arch === 'gru') out.noAttention = 'arch "gru" has no attention weights: its decoder reads one fixed context vector (the encoder\'s final state) at every step';
        return out;
      });
    }

    /**
     * Which keys a sparse layer read (a decoder layer of a form that selects, such as nsa or dsa), on
     * tokens (1..maxLen): { layer, heads, n, selected, dense, weights, kept }. selected[h][t*n + s] is 1
     * where head h's query t read key s through its selection (else 0); dense[h] the causal softmax of
     * the same queries and keys, the dense attention the selection replaces; weights[h] the layer's
     * weights as forward returns them; kept[h][t] the share of dense[h]'s row t on the selected keys.
     */
    sparseReading(tokens, opts = {}) {
      const what = 'sparseReading';
      this.#live(what);
      checkKeys(what, opts, ['layer']);
      const c = this.config;
      const tok = checkTokens(`${what}: tokens`, tokens);
      const layer = opts.layer !== undefined ? opts.layer : 0;
      checkInt(`${what}: layer`, layer, 0, Math.max(0, (c.layers ?? 1) - 1), { expected: `an integer in [0, ${(c.layers ?? 1) - 1}]`, accepted: '' });
      const T = Math.min(tok.length, c.maxLen), H = c.heads, size = H * T * T * 4;
      const specs = [{ name: 'tokens', bytes: tok.length * 4, from: tok }, { name: 'selected', bytes: size },
        { name: 'dense', bytes: size }, { name: 'weights', bytes: size }];
      return core.withBuffers(what, specs, ([tp, sp, dp, wp]) => {
        core.check(ex.aw_model_sparse_reading(this.handle, tp, tok.length, layer, sp, dp, wp), what);
        const heads = (ptr) => Array.from({ length: H }, (_, h) => core.readF32(ptr + h * T * T * 4, T * T));
        const selected = heads(sp), dense = heads(dp), weights = heads(wp);
        const kept = dense.map((d, h) => Float64Array.from({ length: T }, (_, t) => {
          let k = 0;
          for (let j = 0; j <= t; j++) if (selected[h][t * T + j]) k += d[t * T + j];
          return k;
        }));
        return { layer, heads: H, n: T, selected, dense, weights, kept };
      });
    }

    /**
     * Continues `prompt` (decoder) or, for encoder-decoder, gru and gru-attention, decodes { source }
     * starting from prompt (default [0], the separator). Returns the new tokens (Int32Array). temperature 0 (default):
     * greedy. cache: true (default) runs each form's incremental step (KV cache for softmax, the
     * recurrent state for causal linear attention); forms without one re-run the full forward.
     */
    generate(prompt, opts = {}) {
      const what = 'generate';
      this.#live(what);
      const c = this.config;
      const { p, maxTokens, temperature, topK, seed, stop, cache, src } = generateArgs(what, c, prompt, opts);
      if (opts.window !== undefined || opts.sinks !== undefined) { // a rolling cache: past maxLen
        if (opts.window === undefined) fail(`${what}: sinks needs a window (the rolling cache's size)`);
        if (opts.cache === false) fail(`${what}: window and sinks are a cache's; they do not go with cache: false`);
        const window = opts.window, sinks = opts.sinks !== undefined ? opts.sinks : 0;
        checkWindow(what, window, c.maxLen);
        checkSinks(what, sinks);
        const specs = [{ name: 'out', bytes: Math.max(maxTokens, 1) * 4 }, { name: 'count', bytes: 4 },
          { name: 'prompt', bytes: p.length * 4, from: p }];
        return core.withBuffers(what, specs, ([op, np, pp]) => {
          core.check(ex.aw_model_stream_generate(this.handle, op, np, maxTokens, pp, p.length, window, sinks, temperature,
            topK, seed, stop), what);
          const count = new Int32Array(core.memory.buffer, np, 1)[0];
          return new Int32Array(core.memory.buffer, op, count).slice();
        });
      }
      const n = Math.max(0, Math.min(maxTokens, c.maxLen - p.length + 1));
      const specs = [
        { name: 'out', bytes: Math.max(n, 1) * 4 }, { name: 'count', bytes: 4 },
        { name: 'prompt', bytes: p.length * 4, from: p }, { name: 'source', bytes: src ? src.length * 4 : 0, from: src },
      ];
      return core.withBuffers(what, specs, ([op, np, pp, sp]) => {
        core.check(ex.aw_model_generate(this.handle, op, np, n, pp, p.length, sp, src ? src.length : 0, temperature, topK,
          seed, stop, cache ? 1 : 0), what);
        const count = new Int32Array(core.memory.buffer, np, 1)[0];
        return new Int32Array(core.memory.buffer, op, count).slice();
      });
    }

    /**
     * Generation in steps: the session generate(prompt, opts) runs in one call, here made a few
     * tokens at a time by next(count), so a caller can show each token as it comes and stop between
     * any two. The tokens are generate's with the same options, bit for bit. window and sinks (the
     * rolling cache past maxLen) are generate's alone. The session holds its own caches; it refuses
     * to continue once the model changed (trainStep, quantize, setAttentionOptions, sampleVocab) or
     * was disposed (which frees it too).
     */
    startGeneration(prompt, opts = {}) {
      const what = 'startGeneration';
      this.#live(what);
      const c = this.config;
      const { p, maxTokens, temperature, topK, seed, stop, cache, src } = generateArgs(what, c, prompt, opts);
      if (opts.window !== undefined || opts.sinks !== undefined)
        fail(`${what}: window and sinks (a rolling cache past maxLen) are generate's own path; a generation in steps stays within maxLen = ${c.maxLen}: leave them out, or call generate with them`);
      const specs = [{ name: 'handle', bytes: 4 }, { name: 'prompt', bytes: p.length * 4, from: p },
        { name: 'source', bytes: src ? src.length * 4 : 0, from: src }];
      const handle = core.withBuffers(what, specs, ([hp, pp, sp]) => {
        core.check(ex.aw_generation_begin(hp, this.handle, maxTokens, pp, p.length, sp, src ? src.length : 0,
          temperature, topK, seed, stop, cache ? 1 : 0), what);
        return new Uint32Array(core.memory.buffer, hp, 1)[0];
      });
      // what the model frees on dispose; the session's object reads it (0 once freed)
      const record = { handle, modelDisposed: false };
      this.#open.add(record);
      return new Generation(this, record, this.#open, Math.min(maxTokens, c.maxLen - p.length + 1));
    }

    /**
     * The loss (nats) of every next token of a token stream of any length, read with a rolling
     * cache of `window` positions that keeps the first `sinks` tokens (StreamingLLM; positions are
     * cache slots), or, with recompute, by a fresh forward over the last `window` tokens at every
     * position. Returns a Float32Array of tokens.length - 1 losses. Softmax decoders with
     * positional 'rope' or 'none'.
     */
    streamLosses(tokens, opts = {}) {
      const what = 'streamLosses';
      this.#live(what);
      checkKeys(what, opts, ['window', 'sinks', 'recompute']);
      const t = checkTokens(`${what}: tokens`, tokens);
      const window = opts.window !== undefined ? opts.window : this.config.maxLen, sinks = opts.sinks !== undefined ? opts.sinks : 0;
      checkWindow(what, window, this.config.maxLen);
      checkSinks(what, sinks);
      const recompute = checkBool(`${what}: recompute`, opts.recompute !== undefined ? opts.recompute : false);
      if (recompute && opts.sinks) fail(`${what}: recompute reads the last window tokens afresh; it keeps no sinks`);
      const specs = [{ name: 'tokens', bytes: t.length * 4, from: t }, { name: 'losses', bytes: Math.max(t.length - 1, 1) * 4 }];
      return core.withBuffers(what, specs, ([tp, lp]) => {
        core.check(ex.aw_model_stream_losses(this.handle, tp, t.length, window, sinks, recompute ? 1 : 0, lp), what);
        return new Float32Array(core.memory.buffer, lp, t.length - 1).slice();
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
      const t = taskArgs(what, opts);
      const seed = numberArg(`${what}: seed`, opts.seed);
      return core.withStrings(what, [t.task], ([tp]) => {
        const [ns, nt] = core.withBuffers(what, [{ name: 'dims', bytes: 8 }, { name: 'lens', bytes: 8 }], ([dp, lp]) => {
          core.check(ex.aw_model_task_dims(this.handle, tp, t.length, t.symbols, dp), what); // fits this model?
          core.check(ex.aw_model_task_lengths(this.handle, tp, t.length, t.symbols, lp), what);
          return [...new Int32Array(core.memory.buffer, lp, 2)];
        });
        return core.withBuffers(what, [{ name: 'src', bytes: Math.max(ns, 1) * 4 }, { name: 'tgt', bytes: nt * 4 }, { name: 'real', bytes: 4 }],
          ([sp, gp, rp]) => {
            core.check(ex.aw_model_example(this.handle, tp, t.length, t.symbols, seed, sp, gp, rp), what);
            const real = new Int32Array(core.memory.buffer, rp, 1)[0];
            const source = new Int32Array(core.memory.buffer, sp, ns).slice();
            const target = new Int32Array(core.memory.buffer, gp, real).slice();
            if (t.task === 'chars' || t.task === 'repeat') return { source, target, prompt: target.slice(0, 1) };
            const decoderPrompt = t.task === 'recall' || t.task === 'mqar' ? source : Int32Array.from([...source, 0]);
            const prompt = this.config.arch === 'decoder' ? decoderPrompt : Int32Array.of(0);
            return { source, target, prompt };
          });
      });
    }

    /**
     * The parameters as safetensors bytes (config and step count in __metadata__; PyTorch's
     * layout, docs/model.md). { optimizer: true } adds AdamW's moments and the batch stream's
     * state, so that training resumes exactly where it stopped.
     */
    save(opts = {}) {
      const what = 'save';
      this.#live(what);
      checkKeys(what, opts, ['optimizer']);
      const optim = checkBool(`${what}: optimizer`, opts.optimizer !== undefined ? opts.optimizer : false) ? 1 : 0;
      const bytes = core.withBuffers(what, [{ name: 'size', bytes: 4 }], ([sp]) => {
        core.check(ex.aw_model_save_size(this.handle, optim, sp), what);
        return new Int32Array(core.memory.buffer, sp, 1)[0];
      });
      return core.withBuffers(what, [{ name: 'checkpoint', bytes }], ([bp]) => {
        core.check(ex.aw_model_save(this.handle, optim, bp, bytes), what);
        return new Uint8Array(core.memory.buffer, bp, bytes).slice();
      });
    }

    /**
     * The model as llama2.c's model file (export.py's legacy format, what run.c reads): only a
     * model llama2.c can run (block 'llama': softmax, rotary positions with base 10000, RMSNorm
     * before each sublayer, SwiGLU, no biases; decoder-only); any other is an Error naming the part
     * llama2.c lacks. A tied classifier writes a positive vocab_size, an untied one a negative one.
     */
    saveLlama2c(opts = {}) {
      const what = 'saveLlama2c';
      this.#live(what);
      checkKeys(what, opts, ['version', 'groupSize']);
      const version = opts.version ?? 0;
      if (version !== 0 && version !== 2) fail(`${what}: version must be 0 (the legacy float32 file, run.c's) or 2 (int8, runq.c's), got ${describe(version)}`);
      if (version === 0 && opts.groupSize !== undefined) fail(`${what}: groupSize goes with version 2`);
      const v0 = safetensorsToLlama2c(this.save(), this.config, what);
      return version === 2 ? llama2cLegacyToV2(v0, opts.groupSize, what) : v0;
    }

    /**
     * Finite-difference gradient check of the whole model on a random batch (for tests; the
     * procedure is src/model/gradcheck.c, shared with the native suite): every tensor along its
     * gradient and along a random direction. Parameters are restored. `mutate: { tensor, factor }`
     * scales one tensor's analytic gradient first, to show what error the check can see.
     * Returns { error, worstTensor, worstTensorError, checked, skipped, zeroGradTensors,
     * firstZeroGradTensor, fixedWithGrad }.
     */
    gradientCheck(opts = {}) {
      const what = 'gradientCheck';
      this.#live(what);
      checkKeys(what, opts, ['batchSize', 'length', 'sourceLength', 'seed', 'mutate']);
      const c = this.config;
      const int = (k, def) => {
        const v = opts[k] ?? def;
        return checkInt(`${what}: ${k}`, v, 1, 4096);
      };
      const B = int('batchSize', 2), T = int('length', Math.min(6, c.maxLen));
      const S = hasSource(c.arch) ? int('sourceLength', Math.min(5, c.maxLen)) : 0;
      const seed = checkSeed(`${what}: seed`, opts.seed !== undefined ? opts.seed : 77);
      const mutate = opts.mutate !== undefined ? opts.mutate : null;
      if (mutate !== null) {
        checkKeys(`${what}: mutate`, mutate, ['tensor', 'factor']);
        if (typeof mutate.tensor !== 'string') fail(`${what}: mutate.tensor must be a tensor name, got ${describe(mutate.tensor)}`);
        checkFiniteNumber(`${what}: mutate.factor`, mutate.factor);
      }
      return core.withStrings(what, [mutate?.tensor ?? ''], ([mp]) =>
        core.withBuffers(what, [{ name: 'out', bytes: 48 }, { name: 'names', bytes: 80 }], ([op, np]) => {
          core.check(ex.aw_model_grad_check(this.handle, B, T, S, seed, mutate ? mp : 0, mutate?.factor ?? 1, op, np), what);
          const o = new Float64Array(core.memory.buffer, op, 6);
          return { error: o[0], worstTensorError: o[1], worstTensor: core.cString(np), checked: o[2], skipped: o[3],
            zeroGradTensors: o[4], firstZeroGradTensor: core.cString(np + 40), fixedWithGrad: o[5] };
        }));
    }

    /**
     * Many steps without blocking: await model.train({ steps, onProgress, signal, ...step }) where
     * step is trainStep's options (a task, or the caller's batch), or batch: (step) => those
     * options for every step (your own data stream). lr may be a function of the step (a
     * schedule). Between every `yieldEvery` steps (default 10) it hands the thread back (a page
     * stays responsive) and calls onProgress({ step, steps, loss, accuracy, gradNorm }); an
     * aborted signal stops it with the signal's reason (an AbortError). Resolves to the last
     * step's metrics and the step count.
     */
    async train(opts) {
      const what = 'train';
      this.#live(what);
      if (opts === null || typeof opts !== 'object') fail(`${what} expects an options object, got ${describe(opts)}`);
      const { steps, onProgress, signal, batch, yieldEvery = 10, lr, ...step } = opts;
      checkInt(`${what}: steps`, steps, 1, Number.MAX_SAFE_INTEGER, { expected: 'an integer >= 1' });
      if (onProgress !== undefined && typeof onProgress !== 'function') fail(`${what}: onProgress must be a function, got ${describe(onProgress)}`);
      if (batch !== undefined && typeof batch !== 'function') fail(`${what}: batch must be a function (step) => trainStep options, got ${describe(batch)}`);
      checkSignal(what, signal);
      checkInt(`${what}: yieldEvery`, yieldEvery, 1, Number.MAX_SAFE_INTEGER, { expected: 'an integer >= 1' });
      if (lr !== undefined && typeof lr !== 'function') checkFiniteNumber(`${what}: lr`, lr);
      let last = null;
      for (let s = 0; s < steps; s++) {
        if (signal?.aborted) throw signal.reason ?? new DOMException('train was aborted', 'AbortError');
        const o = { ...(batch ? batch(s) : step) };
        if (lr !== undefined) o.lr = typeof lr === 'function' ? lr(s) : lr;
        last = this.trainStep(o);
        if ((s + 1) % yieldEvery === 0 || s + 1 === steps) {
          onProgress?.({ step: s + 1, steps, ...last });
          await new Promise((resolve) => setTimeout(resolve, 0));
        }
      }
      return { ...last, steps };
    }

    /** Frees the model's wasm memory; later calls throw. Safe to call twice. */
    dispose() {
      if (this.handle) {
        for (const record of this.#open) { // its generations first: they point at the model
          ex.aw_generation_end(record.handle);
          record.handle = 0, record.modelDisposed = true;
        }
        this.#open.clear();
        forgotten?.unregister(this.#token);
        ex.aw_model_destroy(this.handle);
      }
      this.handle = 0;
    }
  }

  // runWithCache, runWithHooks, logitLens, headAttribution, ablationGrid (hooks.js)
  installHooks(core, Model.prototype, checkTokens);

  function fromHandle(what, status, handlePtr) {
    core.check(status, what);
    return new Model(new Uint32Array(core.memory.buffer, handlePtr, 1)[0]);
  }

  // A model's tensors: name -> { offset (floats into its arena; null for a quantized one), floats }.
  function tensorsOf(model, what) {
    const out = new Map(), quantized = new Set();
    core.withBuffers(what, [{ name: 'info', bytes: 64 }], ([p]) => {
      for (let i = 0; ; i++) { // the quantized matrices (a tied classifier's "wte" stays float32 too)
        const np = ex.aw_model_qmat(model.handle, i, p);
        if (!np) break;
        quantized.add(core.cString(np));
      }
      const n = ex.aw_model_tensor_count(model.handle);
      for (let i = 0; i < n; i++) {
        const name = core.cString(ex.aw_model_tensor_name(model.handle, i));
        if (quantized.has(name) && name !== 'wte') {
          out.set(name, { offset: null });
          continue;
        }
        core.check(ex.aw_model_tensor_info(model.handle, i, p), what);
        const v = new Float64Array(core.memory.buffer, p, 3);
        out.set(name, { offset: v[0], floats: v[1] * (v[2] || 1) });
      }
    });
    return out;
  }

  // model.quantizedCopy: the copy made quantized from the start, its float32 tensors copied over, then
  // its matrices filled from the source's in pieces of about PIECE values, a macrotask apart.
  const PIECE = 2 ** 20;
  async function quantizedCopy(source, format, opts, live) {
    const what = 'quantizedCopy';
    if (typeof format !== 'string') fail(`${what}: format must be "q8_0" or "q4_0", got ${describe(format)}`);
    if (format === 'bf16') fail(`${what}: "bf16" is not a quantized format here; a BF16 checkpoint loads in 16 bits with loadHuggingFace({ ..., dtype: 'bf16' })`);
    checkKeys(what, opts, ['groupSize', 'signal']);
    const group = opts.groupSize === undefined ? NaN : numberArg(`${what}: groupSize`, opts.groupSize);
    const signal = checkSignal(what, opts.signal);
    const fp32 = () => {
      live();
      const held = source.weightBytes.format;
      if (held !== 'fp32') fail(`${what}: this model's weights are ${held}; a quantized copy is made from float32 weights`);
    };
    fp32();
    const copy = api.createModel(source.config, { training: false, [UNINITIALISED]: true, [QUANTIZED]: { format, group, what } });
    try {
      const from = tensorsOf(source, what), to = tensorsOf(copy, what);
      const base = (m) => ex.aw_model_params(m.handle) / 4;
      const f32 = new Float32Array(core.memory.buffer), sb = base(source), cb = base(copy);
      for (const [name, t] of to) {
        if (t.offset === null) continue;
        const s = from.get(name);
        if (!s || s.floats !== t.floats) fail(`${what}: internal: tensor ${name} differs between the model and its copy`);
        f32.copyWithin(cb + t.offset, sb + s.offset, sb + s.offset + t.floats);
      }
      const mats = [];
      core.withBuffers(what, [{ name: 'info', bytes: 48 }], ([p]) => {
        for (let i = 0; ; i++) {
          const np = ex.aw_model_qmat(copy.handle, i, p);
          if (!np) break;
          const v = new Float64Array(core.memory.buffer, p, 3);
          mats.push({ i, name: core.cString(np), rows: v[1], cols: v[2] });
        }
      });
      const tied = copy.config.tieEmbeddings;
      for (const { i, name, rows, cols } of mats) {
        const step = Math.max(1, Math.floor(PIECE / cols));
        for (let first = 0; first < rows; first += step) {
          await new Promise((r) => setTimeout(r, 0));
          if (signal?.aborted) throw signal.reason ?? new DOMException(`${what} was aborted`, 'AbortError');
          fp32(); // still open, and still float32 (quantize moves its tensors)
          // the tied classifier from the copy's own embedding; every other matrix from the source's tensor
          const src = name === 'wte' && tied ? 0 : ex.aw_model_params(source.handle) + from.get(name).offset * 4;
          core.check(ex.aw_model_quantize_fill(copy.handle, i, src, first, Math.min(step, rows - first)), what);
        }
      }
    } catch (e) {
      copy.dispose();
      throw e;
    }
    return copy;
  }

  const api = {
    // for the families that add Model methods (huggingface.js); not enumerable on lib
    [MODEL_PROTOTYPE]: Model.prototype,
    /** A new model; see ModelConfig in model.d.ts for the options and their defaults. */
    /** Checks createModel's options as createModel would, allocating no model (for loaders). */
    [CHECK_CONFIG](config, what) {
      const fields = configFields(config, readForms(core));
      const builder = ex.aw_config_new();
      if (!builder) core.check(2, what);
      try {
        for (const [key, text] of fields) core.withStrings(what, [key, text], ([kp, vp]) => core.check(ex.aw_config_set(builder, kp, vp), what));
        core.check(ex.aw_config_check(builder), what);
      } finally {
        ex.aw_config_free(builder);
      }
    },
    createModel(config = {}, opts = {}) {
      const what = 'createModel';
      checkKeys(`${what}: opts`, opts, ['training']);
      const training = opts.training === undefined ? true : checkBool(`${what}: training`, opts.training);
      const fields = configFields(config, readForms(core));
      const builder = ex.aw_config_new();
      if (!builder) core.check(2, what);
      const q = opts[QUANTIZED];
      try {
        for (const [key, text] of fields) core.withStrings(what, [key, text], ([kp, vp]) => core.check(ex.aw_config_set(builder, kp, vp), what));
        if (q) return core.withStrings(q.what, [q.format], ([fp]) => core.withBuffers(q.what, [{ name: 'handle', bytes: 4 }],
          ([hp]) => fromHandle(q.what, ex.aw_model_create_quantized(hp, builder, fp, q.group), hp)));
        return core.withBuffers(what, [{ name: 'handle', bytes: 4 }],
          ([hp]) => fromHandle(what, training ? ex.aw_model_create(hp, builder) : ex.aw_model_create_ex(hp, builder, opts[UNINITIALISED] ? 2 : 1), hp));
      } finally {
        ex.aw_config_free(builder);
      }
    },

    /**
     * A model from save()'s bytes (or the native trainer's .safetensors file). opts.training
     * (default true): false keeps the parameters only, no gradients or optimizer state (a quarter
     * of the memory; trainStep and gradientCheck are then Errors).
     */
    loadModel(bytes, opts = {}) {
      const what = 'loadModel';
      checkKeys(what, opts, ['training']);
      const training = opts.training === undefined ? true : checkBool(`${what}: training`, opts.training);
      let u8;
      if (bytes instanceof Uint8Array) u8 = bytes;
      else if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
      else if (ArrayBuffer.isView(bytes)) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      else fail(`${what}: bytes must be a Uint8Array or ArrayBuffer (a safetensors checkpoint), got ${describe(bytes)}`);
      if (u8.length < 8) fail(`${what}: ${u8.length} bytes is too short for a safetensors checkpoint`);
      return core.withBuffers(what, [{ name: 'handle', bytes: 4 }, { name: 'checkpoint', bytes: u8.length, from: u8 }],
        ([hp, bp]) => fromHandle(what, ex.aw_model_load_ex(hp, bp, u8.length, training ? 1 : 0), hp));
    },

    /** The task names, from the C core. */
    tasks: Object.freeze(TASK_NAMES),

    /** The chars task's tokenizer: text -> ids (1 + index in the charset, lower-cased; 0 for others) and back. */
    charsTokenizer: {
      vocab: ex.aw_model_chars_vocab(),
      encode: (text) => {
        if (typeof text !== 'string') fail(`charsTokenizer.encode: text must be a string, got ${describe(text)}`);
        return Int32Array.from(text, (ch) => (ch.charCodeAt(0) < 256 ? ex.aw_model_char_token(ch.charCodeAt(0)) : 0));
      },
      /** ids -> text; an id outside [0, vocab) is an Error naming it (as charTokenizer().decode) */
      decode: (ids) => {
        const vocab = ex.aw_model_chars_vocab();
        const ok = Array.isArray(ids) || (ArrayBuffer.isView(ids) && !(ids instanceof DataView));
        if (!ok) fail(`charsTokenizer.decode: ids must be an array of token ids, got ${describe(ids)}`);
        let s = '';
        for (let i = 0; i < ids.length; i++) {
          const t = ids[i];
          if (!isIntIn(t, 0, vocab - 1)) fail(`charsTokenizer.decode: ids[${i}] is ${describe(t)}, outside [0, ${vocab})`);
          s += String.fromCharCode(ex.aw_model_token_char(t) || 0xfffd);
        }
        return s;
      },
    },
  };
  return api;
}
