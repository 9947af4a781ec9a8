// safetensors.js: the checkpoint container (an 8-byte little-endian header length, a JSON header,
// raw little-endian float32), read and written in JS for the converters (llama2c.js). The model's
// own save and load are C's (src/model/checkpoint.c); docs/model.md lists the tensors.
import { fail } from './core.js';

/**
 * Reads a safetensors file of F32 tensors: { meta, tensors: Map(name -> { shape, data }) } (data
 * a Float32Array copy), in the file's order.
 */
export function readSafetensors(bytes, what = 'safetensors') {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (u8.length < 8) fail(`${what}: ${u8.length} bytes is too short for a safetensors file`);
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const n = Number(dv.getBigUint64(0, true));
  if (n > u8.length - 8) fail(`${what}: the header says ${n} bytes and the file has ${u8.length - 8} after it`);
  let header;
  try {
    header = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + n)));
  } catch (e) {
    fail(`${what}: the header is not JSON (${e.message})`);
  }
  const base = 8 + n, meta = header.__metadata__ ?? {}, tensors = new Map();
  const entries = Object.entries(header).filter(([k]) => k !== '__metadata__')
    .sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0]);
  let at = 0; // in order of their offsets, the tensors tile the data (as checkpoint.c checks)
  for (const [name, t] of entries) {
    const [b0, b1] = t.data_offsets;
    if (t.dtype !== 'F32') fail(`${what}: tensor ${name} is ${t.dtype}; only F32 is read`);
    if (!(Number.isSafeInteger(b0) && Number.isSafeInteger(b1) && b0 >= 0 && b1 >= b0 && base + b1 <= u8.length))
      fail(`${what}: tensor ${name} lies outside the file`);
    if (b0 !== at) fail(`${what}: tensor ${name} begins at byte ${b0} and the tensors before it end at ${at}: its bytes ${b0 < at ? 'overlap theirs' : 'leave a gap'}`);
    at = b1;
    const data = new Float32Array((b1 - b0) / 4);
    new Uint8Array(data.buffer).set(u8.subarray(base + b0, base + b1));
    tensors.set(name, { shape: t.shape, data });
  }
  if (at !== u8.length - base) fail(`${what}: ${u8.length - base - at} bytes follow the last tensor`);
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
