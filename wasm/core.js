// core.js: what every family module shares: argument checks that throw clear Errors, the
// status-code-to-Error map, and the wasm heap (allocation, copies in and out, fresh views).
// Nothing here knows about a particular attention form.

const PREFIX = 'attention-wasm: ';

/** Throws an Error whose message starts with the package name. */
export function fail(message) {
  throw new Error(PREFIX + message);
}

// One place maps C status codes (src/kernels/status.h) to messages.
const STATUS_MESSAGES = {
  1: 'an argument was rejected by the C core',
  2: 'out of memory: the wasm heap could not grow to hold this call',
  3: 'the object is not in a state that allows this call',
  4: 'the bytes are not in the expected format',
  5: 'a NaN or Infinity was met',
};

export const MAX_HEAP = 2 ** 31; // -sMAXIMUM_MEMORY=2GB in build.sh

export const INT32_MIN = -(2 ** 31), INT32_MAX = 2 ** 31 - 1, UINT32_MAX = 2 ** 32 - 1;

/** x is a whole number in [min, max] that is exact in a double (never wrapped, never rounded). */
export function isIntIn(x, min, max) {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= min && x <= max;
}

/**
 * The one check of every integer the public API passes to C (int32_t, uint32_t, size_t): a JS
 * number past the C type would reach C wrapped (2^32 + 300 as 300, 2^53 as 0), so it is refused
 * here, before it becomes one. what names the argument; [min, max] is what gets through (the C
 * type's range, or a range the caller already knows). The message is "<what> must be <expected>,
 * got <value>; accepted: <accepted>": expected defaults to "an integer in [min, max]" (then
 * nothing follows); accepted, to that same range; accepted '' leaves it out (expected says it),
 * and a range C checks further (the int32 guard passes it on) is given as accepted's text.
 */
export function checkInt(what, value, min = INT32_MIN, max = INT32_MAX, { expected, accepted } = {}) {
  if (isIntIn(value, min, max)) return value;
  const range = `an integer in [${min}, ${max}]`;
  const tail = expected === undefined ? '' : accepted === '' ? '' : `; accepted: ${accepted ?? range}`;
  return fail(`${what} must be ${expected ?? range}, got ${describe(value)}${tail}`);
}

/** `name` must be a positive integer (a size). */
export function checkSize(name, value) {
  return checkInt(name, value, 1, INT32_MAX, { expected: 'a positive integer' });
}

export function checkBool(name, value) {
  if (typeof value !== 'boolean') fail(`${name} must be true or false, got ${describe(value)}`);
  return value;
}

export function checkOneOf(name, value, allowed) {
  if (!allowed.includes(value))
    fail(`${name} must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}, got ${describe(value)}`);
  return value;
}

export function checkFiniteNumber(name, value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${name} must be a finite number, got ${describe(value)}`);
  return value;
}

/**
 * `name` must be a Float32Array of exactly `length` finite values; `shape` explains the length.
 * With { scan: false } only the type and length are checked here: the caller then passes the
 * array to Core.withBuffers with `finite: true`, which checks the values in wasm after the copy
 * (about 15x cheaper than this JS pass) with the same message.
 */
export function checkF32(name, arr, length, shape, { scan = true } = {}) {
  if (!(arr instanceof Float32Array))
    fail(`${name} must be a Float32Array of ${shape} = ${length} values, got ${describe(arr)}`);
  if (arr.length !== length) fail(`${name} has ${arr.length} values, expected ${shape} = ${length}`);
  if (!scan) return arr;
  // x * 0 is NaN exactly for NaN and +-Infinity, so one branch-free pass decides (about twice
  // as fast as testing each value); only a failing array is scanned again to name the index.
  let acc = 0;
  for (let i = 0; i < arr.length; i++) acc += arr[i] * 0;
  if (acc !== 0)
    for (let i = 0; i < arr.length; i++) {
      const x = arr[i];
      if (x - x !== 0) nonFinite(name, i, x);
    }
  return arr;
}

function nonFinite(name, index, value) {
  fail(`${name}[${index}] is ${value}; inputs must be finite (no NaN or Infinity)`);
}

/** A 0/1 mask of `length` entries: Uint8Array, or an array of 0/1/booleans. Returns a Uint8Array. */
export function checkMask(name, mask, length) {
  const ok = mask instanceof Uint8Array || Array.isArray(mask) || mask instanceof Int32Array;
  if (!ok) fail(`${name} must be a Uint8Array (or array) of ${length} zeros and ones, got ${describe(mask)}`);
  if (mask.length !== length) fail(`${name} has ${mask.length} entries, expected ${length}`);
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    const x = mask[i];
    if (x === 1 || x === true) out[i] = 1;
    else if (!(x === 0 || x === false)) fail(`${name}[${i}] is ${describe(x)}; expected 0 or 1`);
  }
  return out;
}

/** Rejects option keys the caller may have misspelt. */
/**
 * The bytes of a Uint8Array, an ArrayBuffer or any typed array (a view, no copy), or null. Always a
 * plain Uint8Array: a Node Buffer (what readFileSync gives) is a Uint8Array whose slice() shares
 * memory where Uint8Array's copies, and a small one sits at an offset in Node's shared pool, so the
 * readers never call a subclass's methods.
 */
export function bytesOf(x) {
  if (x instanceof Uint8Array) return x.constructor === Uint8Array ? x : new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x) && !(x instanceof DataView)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  return null;
}

export function checkKeys(what, opts, allowed) {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) fail(`${what} expects an options object, got ${describe(opts)}`);
  for (const key of Object.keys(opts))
    if (!allowed.includes(key)) fail(`${what}: unknown option "${key}" (known: ${allowed.join(', ')})`);
  return opts;
}

/**
 * The text C parses for a form's option value (option: its lib.forms declaration), after the JS
 * type its kind takes is checked; name names it in the message. Ranges and words are C's to check.
 */
export function formOptionText(name, option, value) {
  if (option.kind === 'list') {
    if (!Array.isArray(value) || !value.every((x) => typeof x === 'string' && !x.includes(',')))
      fail(`${name} must be an array of names, got ${describe(value)}`);
    return value.join(',');
  }
  if (option.kind === 'bool') {
    if (typeof value !== 'boolean') fail(`${name} must be true or false, got ${describe(value)}`);
    return String(value);
  }
  if (option.kind === 'int' && typeof value !== 'number') fail(`${name} must be an integer, got ${describe(value)}`);
  if (option.kind === 'choice' && typeof value !== 'string' && !(option.above !== undefined && typeof value === 'number'))
    fail(`${name} must be ${option.above !== undefined ? 'a number or ' : ''}one of ${option.words.map((w) => JSON.stringify(w)).join(', ')}, got ${describe(value)}`);
  if (typeof value === 'number' && !Number.isFinite(value)) fail(`${name} must be a finite number, got ${value}`);
  return String(value);
}

/** A seed: an integer in [0, 2^32 - 1] (createSynthesizer, linformer, createModel's calls). */
export function checkSeed(name, seed) {
  return checkInt(name, seed, 0, UINT32_MAX, { expected: 'an integer in [0, 2^32 - 1]', accepted: '' });
}

export function describe(x) {
  if (x === null) return 'null';
  if (x === undefined) return 'undefined';
  if (ArrayBuffer.isView(x)) return `${x.constructor.name}(${x.length})`;
  if (Array.isArray(x)) return `Array(${x.length})`;
  if (typeof x === 'string') return JSON.stringify(x.length > 40 ? x.slice(0, 40) + '...' : x);
  if (typeof x === 'object') return x.constructor?.name ?? 'object';
  return String(x);
}

const mib = (b) => (b / 2 ** 20).toFixed(1);

/** The wasm instance plus heap helpers. One per loaded library. */
export class Core {
  /** memory: the imported (shared) memory of the threaded build; else the instance's own. */
  constructor(instance, memory = instance.exports.memory) {
    this.exports = instance.exports;
    this.memory = memory;
  }

  get f32() {
    return new Float32Array(this.memory.buffer);
  }

  get u8() {
    return new Uint8Array(this.memory.buffer);
  }

  get i32() {
    return new Int32Array(this.memory.buffer);
  }

  /**
   * Throws for a non-zero status; `what` names the call. The message is C's (aw_error: it names
   * the argument and what was expected); the generic text per status is only a fallback.
   */
  check(status, what) {
    if (status === 0) return;
    const detail = this.cString(this.exports.aw_error());
    this.exports.aw_error_clear(); // a later failure must not find this message
    let message = detail || STATUS_MESSAGES[status] || `unknown status ${status}`;
    if (status === 2 && !/memory|address space/.test(detail)) message = `${STATUS_MESSAGES[2]}${detail ? ` (${detail})` : ''}`;
    if (/out of memory/.test(message)) message += this.liveObjectsNote();
    // C names its own function in some messages ("linformer: ..."); when that is the call's own
    // name, the prefix is said once
    if (message.startsWith(`${what}: `)) message = message.slice(what.length + 2);
    fail(`${what}: ${message}`);
  }

  /** Appended to out-of-memory errors: what the live objects hold and how to free it. */
  liveObjectsNote() {
    const inUse = this.exports.aw_heap_in_use();
    return `; live objects hold ${mib(inUse)} MiB of the ${mib(MAX_HEAP)} MiB heap: dispose() models, ` +
      'layers and states you no longer need';
  }

  /** The NUL-terminated UTF-8 string at ptr in the heap. */
  cString(ptr) {
    if (!ptr) return '';
    const u8 = this.u8;
    let end = ptr;
    while (u8[end] !== 0) end++;
    return new TextDecoder().decode(u8.slice(ptr, end)); // a copy: browsers refuse to decode shared memory
  }

  /** Runs fn(ptrs) with each string copied into the heap as NUL-terminated UTF-8. */
  withStrings(what, strings, fn) {
    const bytes = strings.map((s) => new TextEncoder().encode(`${s}\0`));
    return this.withBuffers(what, bytes.map((b, i) => ({ name: `string ${i}`, bytes: b.length, from: b })), fn);
  }

  /**
   * Allocates every buffer in `specs` ({ name, bytes, from?: TypedArray, finite?: boolean }),
   * copies the `from` arrays in, runs fn(ptrs), frees them all whatever happens. A spec with
   * `finite: true` (a Float32Array checked by checkF32 with { scan: false }) has its values
   * checked in wasm before fn runs. `what` names the call in every message.
   */
  withBuffers(what, specs, fn) {
    const total = specs.reduce((s, b) => s + b.bytes, 0);
    const oom = () =>
      fail(
        `${what}: out of memory: needs ${mib(total)} MiB of wasm heap for its buffers ` +
          `(${specs.filter((b) => b.bytes > 0).map((b) => `${b.name} ${mib(b.bytes)} MiB`).join(', ')}), ` +
          `and the heap can grow to at most ${mib(MAX_HEAP)} MiB; use smaller sizes${this.liveObjectsNote()}`,
      );
    if (total >= MAX_HEAP) oom();
    // an input that is itself a view into this heap would be detached when malloc grows the
    // memory: copy it out first
    specs = specs.map((b) => (b.from && b.from.buffer === this.memory.buffer ? { ...b, from: b.from.slice() } : b));
    const ptrs = [];
    try {
      for (const b of specs) {
        if (b.bytes === 0) {
          ptrs.push(0);
          continue;
        }
        const p = this.exports.malloc(b.bytes);
        if (p === 0) oom();
        ptrs.push(p);
      }
      for (let i = 0; i < specs.length; i++) {
        const src = specs[i].from;
        // bytes for bytes: src may be a Node Buffer, whose constructor over a memory is the deprecated Buffer()
        if (src) new Uint8Array(this.memory.buffer, ptrs[i], src.byteLength).set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
        if (specs[i].finite) {
          const bad = this.exports.aw_first_nonfinite(ptrs[i], src.length);
          if (bad >= 0) nonFinite(`${what}: ${specs[i].name}`, bad, src[bad]);
        }
      }
      return fn(ptrs);
    } finally {
      for (const p of ptrs) if (p) this.exports.free(p);
    }
  }

  /**
   * Copies `length` floats out of the heap at `ptr` into a new Float32Array, as bytes: V8 copies a
   * Uint8Array into a fresh array several times faster than TypedArray.prototype.slice does
   * (measured at 256 KiB: 7.5 against 95 us, and 31 against 57 us from the threaded build's
   * shared memory), and the output copy runs on one thread whatever the thread count.
   */
  readF32(ptr, length) {
    const out = new Float32Array(length);
    new Uint8Array(out.buffer).set(new Uint8Array(this.memory.buffer, ptr, length * 4));
    return out;
  }
}

// Bits of a form's flags (src/model/forms.h, enum aw_form_flag).
const FORM_FLAGS = { causal: 1, nonCausal: 2, step: 4, usesQK: 8, usesX: 16, hasParams: 32, cross: 64, fixedLength: 256,
  selects: 8192 };

const formsCache = new WeakMap(); // core -> its frozen registry

/**
 * The registry of attention forms as the loaded module has it (src/model/forms.c, written by C
 * as JSON): [{ name, family, crossForm, decoderForm, whyNotCausal, causal, nonCausal, step,
 * usesQK, usesX, hasParams, cross, fixedLength, selects, label, formula, summary, cost,
 * paper: { cite, url, year }, signed, options: [{ name, kind, min?, max?, above?, below?,
 * words?, default, key, help }] }], frozen.
 */
export function readForms(core) {
  if (formsCache.has(core)) return formsCache.get(core);
  const ex = core.exports;
  const need = ex.aw_forms_json_write(0, 0);
  const text = core.withBuffers('forms', [{ name: 'the registry', bytes: need + 1 }], ([p]) => {
    ex.aw_forms_json_write(p, need + 1);
    return core.cString(p);
  });
  const deepFreeze = (x) => {
    if (x && typeof x === 'object') for (const v of Object.values(x)) deepFreeze(v);
    return Object.freeze(x);
  };
  const forms = JSON.parse(text).map(({ flags, ...form }) => {
    for (const [k, bit] of Object.entries(FORM_FLAGS)) form[k] = (flags & bit) !== 0;
    return form;
  });
  const frozen = deepFreeze(forms);
  formsCache.set(core, frozen);
  return frozen;
}

/**
 * The positional encodings as the loaded module's table has them (src/model/positional.c), in
 * order: [{ name, label, words, paper }], frozen. createModel's positional takes the names.
 */
export function readPositionals(core) {
  const ex = core.exports;
  const fields = ['name', 'label', 'words', 'paper'];
  return Object.freeze(Array.from({ length: ex.aw_positional_count() }, (_, i) =>
    Object.freeze(Object.fromEntries(fields.map((f, k) => [f, core.cString(ex.aw_positional_info(i, k))])))));
}
