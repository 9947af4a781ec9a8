// mutate.mjs: the JS fuzzer's seeded mutator (no dependency): byte-level edits for any file, edits
// of the header fields the readers trust (boundary integers and floats at the offsets a target
// names), and JSON-aware edits for JSON files and safetensors headers (a value's type changed, keys
// dropped or duplicated, deep nesting, huge ids, long strings, pathological regular expressions).
// Every choice comes from one xorshift stream, so a seed and an iteration count replay a run.

/** A seeded generator: int(n) in [0, n), pick(list), chance(p). */
export function rng(seed) {
  let s = (seed >>> 0) || 0x9e3779b9;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  const r = {
    next,
    int: (n) => (n <= 0 ? 0 : Math.floor((next() / 2 ** 32) * n)),
    pick: (list) => list[r.int(list.length)],
    chance: (p) => next() / 2 ** 32 < p,
  };
  return r;
}

const enc = new TextEncoder(), dec = new TextDecoder();
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
};

// values a size, count, id or offset field should be checked against
const INTS = [0, 1, -1, 2, 3, 7, 8, 255, 256, 0x7fff, 0xffff, 0x10000, 2 ** 31 - 1, -(2 ** 31), 2 ** 30, 2 ** 24, 1 << 16, -2, 64, 4096];
const FLOATS = [NaN, Infinity, -Infinity, 0, -0, 1e38, -1e38, 3.4e38, 1e-45, -1e10, 1e10];
const BIGS = [0n, 1n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 53n + 1n, 2n ** 31n];
// numbers a JSON field should be checked against (1e999 parses to Infinity)
const JSON_NUMBERS = ['0', '-1', '1', '2147483647', '2147483648', '4294967296', '-2147483649', '9007199254740993', '1e999', '-1e999',
  '1e308', '0.5', '-0', '1e-320', '65536', '16777216', '1000000000'];
// regular expressions that backtrack for ever on some input, or are not valid in JavaScript
const REGEXES = ['(a+)+$', '(.*)*x', '(\\s*)*$', '(a|a)*b', '(?:\\p{L}+)+\\d', '([a-z]+)*!', '[', '(?<=a', '(?i)abc', '\\p{Foo}',
  '(?<name>a)\\k<name>', '\\G', '(?>a)', 'a{1,99999}', '\\', '', '.*', '(?u)x', '\\x{1F600}', '[[:alpha:]]'];
const STRINGS = ['', ' ', 'Ġ', '▁', '<unk>', '<s>', '</s>', '<0x41>', 'a b', '\u0000', '\ud800', '💥', 'BPE', 'Split', 'ByteLevel',
  'Metaspace', 'Sequence', 'F32', 'BF16', 'F16', 'I64', 'llama', 'gpt2', 'LlamaForCausalLM', '__metadata__'];

function int32Bytes(v) { const b = new Uint8Array(4); new DataView(b.buffer).setInt32(0, v, true); return b; }
function float32Bytes(v) { const b = new Uint8Array(4); new DataView(b.buffer).setFloat32(0, v, true); return b; }
function u64Bytes(v) { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, v, true); return b; }

/** One random byte-level edit of u8 (a new array). fields: byte offsets of header fields to favour. */
export function mutateBytes(r, u8, fields = []) {
  const n = u8.length, at = r.int(n + 1), len = 1 + r.int(Math.min(64, Math.max(1, n - at)));
  const write = (bytes, where) => {
    const out = u8.slice();
    if (where + bytes.length > n) return concat(u8.subarray(0, where), bytes);
    out.set(bytes, where);
    return out;
  };
  const field = () => (fields.length && r.chance(0.7) ? r.pick(fields) : 4 * r.int(Math.max(1, n >> 2)));
  switch (r.int(11)) {
    case 0: { // flip bits
      const out = u8.slice();
      for (let k = 1 + r.int(4); k-- && n;) out[r.int(n)] ^= 1 << r.int(8);
      return out;
    }
    case 1: { const out = u8.slice(); if (n) out[r.int(n)] = r.pick([0, 0xff, 0x7f, 0x80, 0x22, 0x7b, 0x7d, 0x5c, r.int(256)]); return out; }
    case 2: return concat(u8.subarray(0, at), Uint8Array.from({ length: 1 + r.int(16) }, () => r.int(256)), u8.subarray(at)); // insert
    case 3: return concat(u8.subarray(0, at), u8.subarray(Math.min(n, at + len))); // delete a range
    case 4: return concat(u8.subarray(0, at + len), u8.subarray(at, at + len), u8.subarray(Math.min(n, at + len))); // duplicate a range
    case 5: return u8.slice(0, r.int(n)); // cut short
    case 6: return write(int32Bytes(r.pick(INTS) + (r.chance(0.2) ? r.int(3) - 1 : 0)), field());
    case 7: return write(float32Bytes(r.pick(FLOATS)), field());
    case 8: return write(u64Bytes(r.pick(BIGS)), fields.length && r.chance(0.5) ? r.pick(fields) : 0);
    case 9: return concat(u8, Uint8Array.from({ length: 1 + r.int(64) }, () => r.int(256))); // trailing bytes
    default: { // an ASCII token where one may be read
      return write(enc.encode(r.pick(['{', '}', '"', '[]', 'null', '-1', '1e999', '{"a":', '\\u0000', 'ak42', '\u00ef\u00bb\u00bf'])), at);
    }
  }
}

// ---- JSON -------------------------------------------------------------------------------------

// [parent, key] places in a JSON value (the root has parent null), at most `limit`, chosen evenly;
// half the time only the structural ones (not inside a container of more than 64 items, such as
// a vocab or merges), which would otherwise be a few among thousands
function paths(root, r, limit = 4000) {
  const structural = r.chance(0.5);
  const out = [[null, null]];
  const stack = [root];
  let seen = 0;
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    const keys = Array.isArray(v) ? [...v.keys()] : Object.keys(v);
    if (structural && keys.length > 64) continue;
    for (const k of keys) {
      if (v[k] !== null && typeof v[k] === 'object') stack.push(v[k]);
      seen++;
      // reservoir-style thinning for huge objects (a vocab of 100k pieces)
      if (out.length < limit) out.push([v, k]);
      else if (r.int(seen) < limit) out[r.int(limit)] = [v, k];
    }
  }
  return out;
}

function randomValue(r, depth = 0) {
  switch (r.int(depth > 2 ? 5 : 7)) {
    case 0: return null;
    case 1: return r.chance(0.5);
    case 2: return JSON.parse(r.pick(JSON_NUMBERS));
    case 3: return r.pick(STRINGS);
    case 4: return r.pick(REGEXES);
    case 5: return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1));
    default: return Object.fromEntries(Array.from({ length: r.int(3) }, () => [r.pick(STRINGS), randomValue(r, depth + 1)]));
  }
}

/** One JSON-aware edit of the value (in place when it can; returns the new root). other: a second JSON value to splice from. */
export function mutateJson(r, root, other) {
  const all = paths(root, r);
  const [parent, key] = r.pick(all);
  const get = () => (parent === null ? root : parent[key]);
  const set = (v) => { if (parent === null) root = v; else parent[key] = v; };
  const v = get();
  switch (r.int(12)) {
    case 0: set(randomValue(r)); break; // another type
    case 1: if (parent !== null) { if (Array.isArray(parent)) parent.splice(key, 1); else delete parent[key]; } break; // drop
    case 2: set(JSON.parse(r.pick(JSON_NUMBERS))); break; // boundary number (huge ids, -1, Infinity)
    case 3: if (typeof v === 'number') set(r.chance(0.5) ? String(v) : v + r.pick([-1, 1, 0.5, 2 ** 31, -(2 ** 31)])); else set(r.pick(JSON_NUMBERS)); break;
    case 4: set(r.pick(REGEXES)); break; // a pattern where a string was
    case 5: { // a long string (at most a million units)
      const s = typeof v === 'string' && v ? v : 'a';
      set(s.repeat(Math.max(1, Math.min(1 + r.int(20000), Math.floor(1e6 / s.length)))));
      break;
    }
    case 6: { // deep nesting
      let d = v;
      for (let i = 0, n = 1 + r.int(500); i < n; i++) d = r.chance(0.5) ? [d] : { a: d };
      set(d);
      break;
    }
    case 7: if (Array.isArray(v) && v.length) v.push(...v.slice(0, 1 + r.int(v.length))); else if (v && typeof v === 'object') Object.assign(v, { [r.pick(STRINGS)]: randomValue(r) }); break;
    case 8: if (Array.isArray(v)) v.reverse(); else if (typeof v === 'string') set(v.split('').reverse().join('')); break;
    case 9: { // splice a subtree of another value (or of this one) in
      const src = other ?? root;
      const [p2, k2] = r.pick(paths(src, r));
      const sub = p2 === null ? src : p2[k2];
      try { set(sub === undefined ? null : structuredClone(sub)); } catch { set(null); } // (nested past the stack)
      break;
    }
    case 10: { // a Split pre-tokenizer with a pathological pattern
      if (root && typeof root === 'object' && !Array.isArray(root)) {
        const split = { type: 'Split', pattern: { Regex: r.pick(REGEXES) }, behavior: r.pick(['Isolated', 'Removed', 'MergedWithPrevious', 'Contiguous']), invert: false };
        const pre = root.pre_tokenizer;
        root.pre_tokenizer = pre && typeof pre === 'object' ? { type: 'Sequence', pretokenizers: [split, pre] } : split;
      }
      break;
    }
    default: if (typeof v === 'string') set(v + r.pick(STRINGS)); else if (typeof v === 'number') set(-v); else set(r.pick(STRINGS));
  }
  return root;
}

/** JSON text with an edit only text can make: a key written twice, or a value wrapped `depth` times. */
export function mutateJsonText(r, text) {
  if (r.chance(0.5)) { // duplicate a "key": value pair (JSON.parse keeps the last)
    const m = [...text.matchAll(/"([^"\\]{1,40})"\s*:\s*("[^"\\]{0,40}"|-?[0-9.eE+]+|null|true|false)/g)];
    if (m.length) {
      const pick = r.pick(m), at = pick.index + pick[0].length;
      return `${text.slice(0, at)}, "${pick[1]}": ${r.pick([...JSON_NUMBERS, '"x"', 'null', '[]', '{}'])}${text.slice(at)}`;
    }
  }
  const depth = 1000 + r.int(100000), at = text.indexOf(':') + 1;
  if (at <= 0) return '['.repeat(depth) + ']'.repeat(depth);
  const end = text.search(/[,}]/g);
  return `${text.slice(0, at)}${'['.repeat(depth)}1${']'.repeat(depth)}${text.slice(end > at ? end : at)}`;
}

/** A JSON file (bytes) mutated: parsed and edited as JSON most of the time, else as bytes. */
export function mutateJsonBytes(r, u8, other) {
  if (r.chance(0.2)) return mutateBytes(r, u8);
  const text = dec.decode(u8);
  if (r.chance(0.1)) return enc.encode(mutateJsonText(r, text));
  let v;
  try { v = JSON.parse(text); } catch { return mutateBytes(r, u8); }
  for (let k = 1 + (r.chance(0.3) ? r.int(4) : 0); k--;) v = mutateJson(r, v, other);
  try { return enc.encode(JSON.stringify(v)); } catch { return mutateBytes(r, u8); } // nested past the stack
}

// ---- safetensors --------------------------------------------------------------------------------

/** A safetensors file's header edited as JSON (and written back with a right or a wrong length), or its bytes edited. */
export function mutateSafetensors(r, u8) {
  if (u8.length < 8 || r.chance(0.3)) return mutateBytes(r, u8, [0, 4, 8]);
  const n = Number(new DataView(u8.buffer, u8.byteOffset, 8).getBigUint64(0, true));
  if (n > u8.length - 8) return mutateBytes(r, u8, [0, 4, 8]);
  let head;
  try { head = JSON.parse(dec.decode(u8.subarray(8, 8 + n))); } catch { return mutateBytes(r, u8, [0, 4]); }
  let text;
  if (r.chance(0.1)) text = mutateJsonText(r, JSON.stringify(head));
  else {
    // the fields the reader trusts most: offsets, shapes, dtypes, metadata
    for (let k = 1 + r.int(2); k--;) head = mutateJson(r, head);
    try { text = JSON.stringify(head); } catch { return mutateBytes(r, u8, [0, 4, 8]); } // nested past the stack
  }
  const h = enc.encode(text), data = u8.subarray(8 + n);
  const out = concat(new Uint8Array(8), h, data);
  const len = r.chance(0.9) ? BigInt(h.length) : r.pick([...BIGS, BigInt(h.length + 1), BigInt(Math.max(0, h.length - 1))]);
  new DataView(out.buffer).setBigUint64(0, len, true);
  return out;
}
