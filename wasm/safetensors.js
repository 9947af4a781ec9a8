// safetensors.js: the checkpoint container (an 8-byte little-endian header length, a JSON header,
// raw little-endian tensors), its header checked for every reader (huggingface.js reads any dtype
// through safetensorsHeader), and F32 files read and written in JS for the converters (llama2c.js). The model's
// own save and load are C's (src/model/checkpoint.c); docs/model.md lists the tensors.
import { bytesOf, describe, fail } from './core.js';

/** Bytes per element of each safetensors dtype. */
export const ELEMENT_BYTES = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1, F8_E4M3: 1, F8_E5M2: 1 };

// The safetensors format's own bound on its header (the Rust crate's MAX_HEADER_SIZE).
const MAX_HEADER = 100_000_000;

// A plain Uint8Array view of the bytes (bytesOf: never a Node Buffer, whose slice() shares memory).
function asBytes(what, bytes) {
  return bytesOf(bytes) ?? fail(`${what} must be a Uint8Array or ArrayBuffer (a .safetensors file's bytes), got ${describe(bytes)}`);
}

// The first key an object of `text` (JSON that parses) holds twice, with the top-level key it sits
// under, or null. JSON.parse keeps the last of equal keys, so a header naming a tensor twice would
// silently read one of two sets of bytes; safetensors' own reader refuses it, and so does this one.
// Keys are compared decoded ("a\u0062" is "ab").
function duplicateKey(text) {
  const open = []; // per open container: its keys (an object) or null (an array)
  let expectKey = false, top = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 34) { // '"': a string, to its closing quote
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 34) j += text.charCodeAt(j) === 92 ? 2 : 1;
      if (expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)), keys = open[open.length - 1];
        if (keys.has(key)) return { key, under: open.length > 1 ? top : null };
        keys.add(key);
        if (open.length === 1) top = key;
        expectKey = false;
      }
      i = j;
    } else if (ch === 123) open.push(new Set()), expectKey = true; // '{'
    else if (ch === 91) open.push(null); // '['
    else if (ch === 125 || ch === 93) open.pop(); // '}' ']'
    else if (ch === 44) expectKey = open[open.length - 1] !== null; // ','
  }
  return null;
}

// ---- safetensors headers ------------------------------------------------------------------------

/**
 * One safetensors file's header, checked against its bytes: { tensors: Map(name -> { dtype,
 * shape, begin, end, bytes }) with begin/end absolute byte offsets into `bytes` (a plain
 * Uint8Array view of the bytes given), meta: its __metadata__ ({} when absent) }. Refuses, naming
 * the tensor and the numbers: a header length past the file (JSON text such as an index file is
 * named as such) or past safetensors' 100 MB, a key twice, an unknown dtype, a byte size that
 * disagrees with the shape and dtype, and data_offsets that do not tile the data (in order of
 * their offsets the tensors start at 0, each where the one before ends, and the last ends where
 * the file does): a header length one byte off fails here, not as wrong numbers later.
 */
export function safetensorsHeader(bytes, what) {
  const u8 = asBytes(what, bytes);
  if (u8.length < 8) fail(`${what}: ${u8.length} bytes is too short for a safetensors file (its header length alone is 8)`);
  const dv = new DataView(u8.buffer, u8.byteOffset, 8);
  const n = dv.getBigUint64(0, true);
  if (n > BigInt(u8.length - 8)) {
    if (/^\s*\{/.test(new TextDecoder().decode(u8.subarray(0, 16)).replace(/^\ufeff/, '')))
      fail(`${what}: these bytes are JSON text (they start with "{"), not a .safetensors file, which starts with an 8-byte header length`);
    fail(`${what}: the header says it is ${n} bytes long and the file has ${u8.length - 8} after its length`);
  }
  if (n > BigInt(MAX_HEADER)) fail(`${what}: the header says it is ${n} bytes long; a safetensors header is at most ${MAX_HEADER} bytes`);
  const len = Number(n);
  let header, text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(u8.subarray(8, 8 + len));
    header = JSON.parse(text);
  } catch (e) {
    fail(`${what}: the header is not JSON text (${e.message}); is this a .safetensors file?`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) fail(`${what}: the header must be a JSON object`);
  const twice = duplicateKey(text);
  if (twice) fail(`${what}: ${twice.under === null ? `the header names "${twice.key}"` : `the header's "${twice.under}" has "${twice.key}"`} twice; ` +
    'a JSON reader keeps only the last, so which one is meant is not known');
  const base = 8 + len, data = u8.length - base, out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const where = `${what}: tensor "${name}"`;
    if (t === null || typeof t !== 'object') fail(`${where} must be { dtype, shape, data_offsets }`);
    if (typeof t.dtype !== 'string' || !Object.hasOwn(ELEMENT_BYTES, t.dtype)) fail(`${where} has dtype ${describe(t.dtype)}, which is not a safetensors dtype (${Object.keys(ELEMENT_BYTES).join(', ')})`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      fail(`${where} has shape ${describe(t.shape)}; a shape is a list of non-negative integers`);
    const o = t.data_offsets;
    if (!Array.isArray(o) || o.length !== 2 || !o.every((x) => Number.isSafeInteger(x) && x >= 0) || o[1] < o[0])
      fail(`${where} has data_offsets ${describe(o)}; expected [begin, end] with 0 <= begin <= end`);
    if (o[1] > data) fail(`${where} ends at byte ${o[1]} of the data, and the file holds ${data} bytes of data: the header lies or the file is cut short`);
    // exact, in BigInt: a product of safe integers need not be one
    const size = t.shape.reduce((a, b) => a * BigInt(b), BigInt(ELEMENT_BYTES[t.dtype]));
    if (size !== BigInt(o[1] - o[0]))
      fail(`${where}: shape [${t.shape}] of ${t.dtype} is ${size} bytes, and its data_offsets [${o}] span ${o[1] - o[0]}`);
    out.set(name, { dtype: t.dtype, shape: t.shape, begin: base + o[0], end: base + o[1], bytes: u8 });
  }
  // in order of their offsets, the tensors tile the data: no overlap (said first: it leaves a gap
  // elsewhere), no gap, nothing after the last. Sorted by begin, no neighbours overlapping means
  // none do.
  const ranges = [...out].sort((a, b) => a[1].begin - b[1].begin || a[1].end - b[1].end);
  const span = (t) => `${t.begin - base}-${t.end - base}`;
  for (let i = 1; i < ranges.length; i++)
    if (ranges[i][1].begin < ranges[i - 1][1].end)
      fail(`${what}: tensors "${ranges[i - 1][0]}" and "${ranges[i][0]}" overlap (bytes ${span(ranges[i - 1][1])} and ${span(ranges[i][1])} of the data): the header lies`);
  let at = base, last = null;
  for (const [name, t] of ranges) {
    if (t.begin > at) fail(`${what}: tensor "${name}" begins at byte ${t.begin - base} of the data, and the tensors before it end at ${at - base}: safetensors data has no gaps`);
    at = t.end, last = name;
  }
  if (at !== u8.length)
    fail(`${what}: ${u8.length - at} byte(s) of the data's ${data} belong to no tensor: the tensors end at byte ${at - base}` +
      `${last === null ? '' : ` ("${last}")`}; the header length (${len}) is short by that much, or the header lies`);
  return { tensors: out, meta: header.__metadata__ ?? {} };
}

/**
 * Reads a safetensors file of F32 tensors: { meta, tensors: Map(name -> { shape, data }) } (data
 * a Float32Array copy), in the file's order, checked as safetensorsHeader checks it.
 */
export function readSafetensors(bytes, what = 'safetensors') {
  const { tensors: found, meta } = safetensorsHeader(bytes, what);
  const tensors = new Map();
  for (const [name, t] of [...found].sort((a, b) => a[1].begin - b[1].begin)) {
    if (t.dtype !== 'F32') fail(`${what}: tensor ${name} is ${t.dtype}; only F32 is read`);
    const data = new Float32Array((t.end - t.begin) / 4);
    new Uint8Array(data.buffer).set(t.bytes.subarray(t.begin, t.end));
    tensors.set(name, { shape: t.shape, data });
  }
  return { meta, tensors };
}

/** Writes meta (string values) and tensors (Map or entries of name -> { shape, data }) as safetensors. */
export function writeSafetensors(meta, tensors) {
  const header = { __metadata__: meta };
  let off = 0;
  const list = [...tensors];
  for (const [name, t] of list) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + t.data.length * 4] };
    off += t.data.length * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8); // the data starts 8-byte aligned
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const [, t] of list) {
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.length * 4), at);
    at += t.data.length * 4;
  }
  return out;
}
