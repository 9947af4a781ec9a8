// safetensors.js: the checkpoint container (an 8-byte little-endian header length, a JSON header,
// raw little-endian tensors), its header checked for every reader (huggingface.js reads any dtype
// through safetensorsHeader), and F32 files read and written in JS for the converters (llama2c.js). The model's
// own save and load are C's (src/model/checkpoint.c); docs/model.md lists the tensors.
import { bytesOf, describe, fail } from './core.js';

/** Bytes per element of each safetensors dtype. */
export const ELEMENT_BYTES = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1, F8_E4M3: 1, F8_E5M2: 1 };

function asBytes(what, bytes) {
  return bytesOf(bytes) ?? fail(`${what} must be a Uint8Array or ArrayBuffer (a .safetensors file's bytes), got ${describe(bytes)}`);
}

// ---- safetensors headers ------------------------------------------------------------------------

/**
 * One safetensors file's header, checked against its bytes: { tensors: Map(name -> { dtype,
 * shape, begin, end, bytes }) with begin/end absolute byte offsets into `bytes`, meta: its
 * __metadata__ ({} when absent) }. Refuses a header longer than the
 * file, offsets past the end, overlapping or out-of-order ranges, a size that disagrees with the
 * shape and dtype, and an unknown dtype.
 */
export function safetensorsHeader(bytes, what) {
  const u8 = asBytes(what, bytes);
  if (u8.length < 8) fail(`${what}: ${u8.length} bytes is too short for a safetensors file (its header length alone is 8)`);
  const dv = new DataView(u8.buffer, u8.byteOffset, 8);
  const n = dv.getBigUint64(0, true);
  if (n > BigInt(u8.length - 8)) fail(`${what}: the header says it is ${n} bytes long and the file has ${u8.length - 8} after its length`);
  const len = Number(n);
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(u8.subarray(8, 8 + len)));
  } catch (e) {
    fail(`${what}: the header is not JSON text (${e.message}); is this a .safetensors file?`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) fail(`${what}: the header must be a JSON object`);
  const base = 8 + len, data = u8.length - base, out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const where = `${what}: tensor "${name}"`;
    if (t === null || typeof t !== 'object') fail(`${where} must be { dtype, shape, data_offsets }`);
    if (!(t.dtype in ELEMENT_BYTES)) fail(`${where} has dtype ${describe(t.dtype)}, which is not a safetensors dtype (${Object.keys(ELEMENT_BYTES).join(', ')})`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      fail(`${where} has shape ${describe(t.shape)}; a shape is a list of non-negative integers`);
    const o = t.data_offsets;
    if (!Array.isArray(o) || o.length !== 2 || !o.every((x) => Number.isSafeInteger(x) && x >= 0) || o[1] < o[0])
      fail(`${where} has data_offsets ${describe(o)}; expected [begin, end] with 0 <= begin <= end`);
    if (o[1] > data) fail(`${where} ends at byte ${o[1]} of the data, and the file holds ${data} bytes of data: the header lies or the file is cut short`);
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count * ELEMENT_BYTES[t.dtype] !== o[1] - o[0])
      fail(`${where}: shape [${t.shape}] of ${t.dtype} is ${count * ELEMENT_BYTES[t.dtype]} bytes, and its data_offsets span ${o[1] - o[0]}`);
    out.set(name, { dtype: t.dtype, shape: t.shape, begin: base + o[0], end: base + o[1], bytes: u8 });
  }
  // the ranges, in order of their start, must not overlap (each tensor its own bytes)
  const ranges = [...out.entries()].filter(([, t]) => t.end > t.begin).sort((a, b) => a[1].begin - b[1].begin);
  for (let i = 1; i < ranges.length; i++)
    if (ranges[i][1].begin < ranges[i - 1][1].end)
      fail(`${what}: tensors "${ranges[i - 1][0]}" and "${ranges[i][0]}" overlap (bytes ${ranges[i - 1][1].begin - base}-${ranges[i - 1][1].end - base} and ` +
        `${ranges[i][1].begin - base}-${ranges[i][1].end - base} of the data): the header lies`);
  return { tensors: out, meta: header.__metadata__ ?? {} };
}

/**
 * Reads a safetensors file of F32 tensors: { meta, tensors: Map(name -> { shape, data }) } (data
 * a Float32Array copy), in the file's order. On top of safetensorsHeader's checks, the tensors tile
 * the data (as checkpoint.c checks): no gap, no trailing bytes.
 */
export function readSafetensors(bytes, what = 'safetensors') {
  const { tensors: found, meta } = safetensorsHeader(bytes, what);
  const u8 = asBytes(what, bytes), base = 8 + Number(new DataView(u8.buffer, u8.byteOffset, 8).getBigUint64(0, true));
  const entries = [...found].sort((a, b) => a[1].begin - b[1].begin), tensors = new Map();
  let at = base; // in order of their offsets, the tensors tile the data
  for (const [name, t] of entries) {
    if (t.dtype !== 'F32') fail(`${what}: tensor ${name} is ${t.dtype}; only F32 is read`);
    if (t.begin !== at) fail(`${what}: tensor ${name} begins at byte ${t.begin - base} and the tensors before it end at ${at - base}: its bytes leave a gap`);
    at = t.end;
    const data = new Float32Array((t.end - t.begin) / 4);
    new Uint8Array(data.buffer).set(u8.subarray(t.begin, t.end));
    tensors.set(name, { shape: t.shape, data });
  }
  if (at !== u8.length) fail(`${what}: ${u8.length - at} bytes follow the last tensor`);
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
