// llama2c.js: llama2.c's model and tokenizer files (Karpathy's llama2.c, run.c and export.py's
// "legacy" version 0), read into the library's model and written from it (docs/model.md).
//
// model.bin: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a
// negative vocab_size means the classifier is not the embedding), then float32 tensors in this
// order, each as PyTorch's nn.Linear keeps it (out, in): the token embedding (vocab, dim); per
// layer stacked: the attention RMSNorm (L, dim), wq (L, dim, dim), wk, wv (L, kv_dim, dim), wo
// (L, dim, dim), the FFN RMSNorm (L, dim), w1 (L, hidden, dim), w2 (L, dim, hidden), w3 (L,
// hidden, dim); the final RMSNorm (dim); two rotary tables (seq_len, head_size / 2) each, which
// run.c skips (it computes the angles itself); the classifier (vocab, dim) when not shared.
// tokenizer.bin: int32 max_token_length, then per token: float32 score, int32 length, bytes.
//
// Version 2 (export.py --version 2, what runq.c reads): a 256-byte header (uint32 magic "ak42", int32
// version 2, the 7 sizes with a positive vocab_size, uint8 shared_classifier, int32 group_size, zeros),
// the norms in float32 (rms_att of every layer, rms_ffn of every layer, rms_final), then each matrix
// as int8 values followed by its float32 scales, one per group_size values: the token embedding; wq,
// wk, wv, wo, w1, w2, w3 of each layer (per layer: values then scales); wcls when not shared.
// loadLlama2c reads it into a q8_0 model holding the file's integers and scales as they are (the
// float32 weights it keeps, the embedding and the norms, are the file's dequantized values, as runq.c
// computes them); model.saveLlama2c({ version: 2, groupSize }) writes one from a float32 model.
import { bytesOf, checkBool, checkKeys, describe, fail, isIntIn } from './core.js';
import { readSafetensors, writeSafetensors } from './safetensors.js';

const MAGIC_V1 = 0x616b3432; // "ak42": export.py's versions 1 and 2 (this reader takes version 2)
// what loadLlama2c reads, for its refusals
const found2c = () => 'loadLlama2c reads llama2.c\'s legacy model .bin: 7 int32 sizes, then float32 weights';

// The bytes as a plain Uint8Array over the same memory (bytesOf: never a Node Buffer's subclass).
function asBytes(what, bytes) {
  return bytesOf(bytes) ?? fail(`${what} must be a Uint8Array or ArrayBuffer (the file's bytes), got ${describe(bytes)}`);
}

// The model-file formats sniffModelFile tells apart, in the order it tries them.
export const MODEL_FILE_FORMATS = Object.freeze([
  { format: 'llama2c-export', label: 'llama2.c\'s export in a version other than 2 (magic "ak42"; version 1 is float32)' },
  { format: 'safetensors', label: 'safetensors (a little-endian u64 header length, then a JSON header)' },
  { format: 'hf-index', label: 'Hugging Face\'s model.safetensors.index.json (a weight_map)' },
  { format: 'hf-config', label: 'Hugging Face\'s config.json (model_type, hidden_size, ...)' },
  { format: 'hf-tokenizer', label: 'Hugging Face\'s tokenizer.json (model, added_tokens, ...)' },
  { format: 'llama2c', label: 'llama2.c\'s model .bin (7 int32 sizes, then float32 weights; or version 2, runq.c\'s 8-bit: magic "ak42", version 2)' },
  { format: 'llama2c-tokenizer', label: 'llama2.c\'s tokenizer.bin (an int32 max_token_length, then score, length and bytes per piece)' },
]);

// Sizes no llama2.c header holds (the largest published models stay far inside them): a header past
// any of these is some other file's bytes read as int32.
const PLAUSIBLE = { dim: 1 << 16, hidden_dim: 1 << 20, n_layers: 1 << 12, n_heads: 1 << 12, n_kv_heads: 1 << 12, vocab_size: 1 << 24, seq_len: 1 << 24 };
const HEADER_NAMES = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];

// The first bytes as a reader would see them: text (its opening, quoted) or binary.
function looksLike(u8) {
  const head = u8.subarray(0, 512);
  let text = 0;
  for (const b of head) if (b === 9 || b === 10 || b === 13 || (b >= 32 && b !== 127)) text++;
  if (head.length && text === head.length) {
    const line = new TextDecoder().decode(head).split(/\r?\n/)[0].slice(0, 40);
    return `text starting ${JSON.stringify(line)}`;
  }
  return head.length ? 'binary data of another kind' : 'empty';
}

// A llama2.c header's seven int32 sizes, or null when they are not all plausible.
function plausibleHeader(u8) {
  if (u8.length < 28) return null;
  const dv = new DataView(u8.buffer, u8.byteOffset, 28);
  const h = Array.from({ length: 7 }, (_, i) => dv.getInt32(4 * i, true));
  const ok = h.every((v, i) => { const a = i === 5 ? Math.abs(v) : v; return a >= 1 && a <= PLAUSIBLE[HEADER_NAMES[i]]; });
  return ok && h[3] <= h[0] && h[4] <= h[3] ? h : null;
}

/**
 * What a model file's bytes are, from their opening (the first 64 KiB are plenty; size: the whole
 * file's length when only its opening is given): { format, label } with format one of
 * MODEL_FILE_FORMATS' (label: what it is), or { format: null, label: what it looks like, tried }
 * when it is none of them (tried: the labels of every format tried, in order).
 */
export function sniffModelFile(bytes, size) {
  const u8 = asBytes('sniffModelFile: bytes', bytes);
  if (size !== undefined && !(Number.isSafeInteger(size) && size >= u8.length))
    fail(`sniffModelFile: size must be the whole file's length in bytes, an integer >= the ${u8.length} bytes given, got ${describe(size)}`);
  const total = size ?? u8.length;
  const found = (format) => MODEL_FILE_FORMATS.find((f) => f.format === format);
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  if (u8.length >= 8 && dv.getUint32(0, true) === MAGIC_V1) return found(dv.getInt32(4, true) === 2 ? 'llama2c' : 'llama2c-export');
  if (u8.length >= 9) {
    const n = dv.getBigUint64(0, true);
    if (n >= 2n && n <= BigInt(total) - 8n && u8[8] === 123) return found('safetensors');
  }
  const at = jsonStart(u8);
  if (at >= 0 && u8[at] === 123) {
    const text = new TextDecoder().decode(u8.subarray(at, at + 65536));
    if (/"weight_map"\s*:/.test(text)) return found('hf-index');
    if (/"(model_type|architectures|hidden_size|n_embd|num_hidden_layers)"\s*:/.test(text)) return found('hf-config');
    if (/"(added_tokens|pre_tokenizer|normalizer|model)"\s*:/.test(text)) return found('hf-tokenizer');
    return { format: null, label: `JSON of another kind, starting ${JSON.stringify(text.slice(0, 40))}`, tried: MODEL_FILE_FORMATS.map((f) => f.label) };
  }
  if (plausibleHeader(u8)) return found('llama2c');
  if (u8.length >= 12) {
    const maxLen = dv.getInt32(0, true), score = dv.getFloat32(4, true), len = dv.getInt32(8, true);
    if (maxLen >= 1 && maxLen <= 0xffff && Number.isFinite(score) && len >= 0 && len <= maxLen) return found('llama2c-tokenizer');
  }
  return { format: null, label: looksLike(u8), tried: MODEL_FILE_FORMATS.map((f) => f.label) };
}

/** The Error message for bytes that are none of the model-file formats: which were tried, what it looks like. */
export function notAModelFile(name, sniffed) {
  return `${name} is none of the formats a model is opened from: tried ${sniffed.tried.join('; ')}. It looks like ${sniffed.label}.`;
}

/** The header of a llama2.c model file, checked: { dim, hidden, layers, heads, kvHeads, vocab, seqLen, shared }. */
export function llama2cHeader(bytes, what = 'loadLlama2c') {
  const u8 = asBytes(`${what}: bytes`, bytes);
  if (u8.length < 28) fail(`${what}: ${u8.length} bytes is too short for a llama2.c model (its header alone is 28 bytes)`);
  const dv = new DataView(u8.buffer, u8.byteOffset, 28);
  const h = Array.from({ length: 7 }, (_, i) => dv.getInt32(4 * i, true));
  if (dv.getUint32(0, true) === MAGIC_V1)
    fail(`${what}: this is a version-${u8.length >= 8 ? dv.getInt32(4, true) : '?'} export (magic "ak42"); this reader ` +
      'takes llama2.c\'s legacy format (export.py --version 0, the format of the published stories*.bin files) and version 2 (runq.c\'s)');
  const [dim, hidden, layers, heads, kvHeads, vocabSigned, seqLen] = h;
  const names = HEADER_NAMES;
  // another format's bytes (safetensors, JSON, text such as a CSV): said before any size is read
  const sniffed = sniffModelFile(u8);
  if (/^(safetensors|hf-)/.test(sniffed.format ?? '')) // formats with a signature (a tokenizer.bin has none to trust)
    fail(`${what}: these bytes are ${sniffed.label}, not a llama2.c model file (${found2c()})`);
  h.forEach((v, i) => { if (i !== 5 && !(v > 0)) fail(`${what}: the header's ${names[i]} is ${v}; every size must be positive (is this a llama2.c model file?)`); });
  if (vocabSigned === 0) fail(`${what}: the header's vocab_size is 0`);
  // (n_layers is left to the file-size check, which says how many layers the bytes hold: a bit flip)
  h.forEach((v, i) => {
    const limit = PLAUSIBLE[names[i]];
    if (i !== 2 && Math.abs(v) > limit)
      fail(`${what}: the header's ${names[i]} is ${v}, more than any llama2.c model's (at most ${limit} here): this is not a ` +
        `llama2.c model file; it looks like ${sniffed.label}`);
  });
  if (heads > dim || kvHeads > heads)
    fail(`${what}: the header has n_heads ${heads} for dim ${dim} and n_kv_heads ${kvHeads}; a llama2.c model has ` +
      `n_kv_heads <= n_heads <= dim: this is not a llama2.c model file; it looks like ${sniffed.label}`);
  if (dim % heads) fail(`${what}: the header's dim (${dim}) is not divisible by n_heads (${heads})`);
  if (heads % kvHeads) fail(`${what}: the header's n_heads (${heads}) is not divisible by n_kv_heads (${kvHeads})`);
  if ((dim / heads) % 2) fail(`${what}: the head size dim / n_heads = ${dim / heads} is odd; rotary positions need it even`);
  return { dim, hidden, layers, heads, kvHeads, vocab: Math.abs(vocabSigned), seqLen, shared: vocabSigned > 0 };
}

// The tensors of the file in its order, as [our name, llama2.c's name, shape (out, in)] per layer
// or whole; `stack` = 1 for the per-layer stacks.
function layout(h) {
  const { dim, hidden, layers, vocab, seqLen } = h, kvDim = (dim / h.heads) * h.kvHeads, half = dim / h.heads / 2;
  const per = (ours, theirs, shape) => Array.from({ length: layers }, (_, l) => [`dec.${l}.${ours}`, `${theirs}[${l}]`, shape]);
  return [
    ['wte', 'token_embedding_table', [vocab, dim]],
    ...per('self.ln.w', 'rms_att_weight', [dim]),
    ...per('self.wq', 'wq', [dim, dim]),
    ...per('self.wk', 'wk', [kvDim, dim]),
    ...per('self.wv', 'wv', [kvDim, dim]),
    ...per('self.wo', 'wo', [dim, dim]),
    ...per('ffn.ln.w', 'rms_ffn_weight', [dim]),
    ...per('ffn.w1', 'w1', [hidden, dim]),
    ...per('ffn.w2', 'w2', [dim, hidden]),
    ...per('ffn.w3', 'w3', [hidden, dim]),
    ['lnf.w', 'rms_final_weight', [dim]],
    [null, 'freq_cis_real', [seqLen, half]],
    [null, 'freq_cis_imag', [seqLen, half]],
    ...(h.shared ? [] : [['out.w', 'wcls', [vocab, dim]]]),
  ];
}

const count = (shape) => shape.reduce((a, b) => a * b, 1);

// The bytes a header asks for, exact (BigInt): need = 28 + fixed + n_layers * perLayer, where
// fixed covers the embedding, the final norm, the rotary tables and the classifier; layout()'s order.
function fileBytes(h) {
  const [dim, hidden, layers, vocab, seqLen] = [h.dim, h.hidden, h.layers, h.vocab, h.seqLen].map(BigInt);
  const hs = dim / BigInt(h.heads), kvDim = hs * BigInt(h.kvHeads);
  const perLayer = 4n * (2n * dim + 2n * dim * dim + 2n * kvDim * dim + 3n * hidden * dim);
  const fixed = 4n * (vocab * dim * (h.shared ? 1n : 2n) + dim + seqLen * hs);
  return { need: 28n + fixed + layers * perLayer, fixed, perLayer };
}

// The library's checkpoint metadata for a llama2.c model (docs/model.md).
function metadata(h) {
  const meta = {
    format: 'attention-wasm-model', version: '2', vocab: String(h.vocab), d_model: String(h.dim), heads: String(h.heads),
    layers: String(h.layers), d_ff: String(h.hidden), max_len: String(h.seqLen), attention: 'softmax', positional: 'rope',
    norm: 'pre', arch: 'decoder', seed: '0', step: '0', block: 'llama', norm_type: 'rmsnorm', ffn: 'swiglu', bias: '0',
    rope_theta: '10000',
  };
  if (h.shared) meta.tie_embeddings = '1';
  if (h.kvHeads !== h.heads) meta.kv_heads = String(h.kvHeads);
  return meta;
}

/** llama2.c's model file as the library's safetensors checkpoint (for loadModel). */
export function llama2cToSafetensors(bytes, what = 'loadLlama2c') {
  const u8 = asBytes(`${what}: bytes`, bytes);
  const h = llama2cHeader(u8, what);
  if (h.seqLen > 4096) fail(`${what}: seq_len ${h.seqLen} is more than this library's maxLen limit of 4096`);
  // the file's size against the header's before anything grows with a header field (a flipped
  // bit in n_layers must not build a billion-entry tensor list first); BigInt, as products of
  // int32 fields pass 2^53
  const { need, fixed, perLayer } = fileBytes(h);
  if (BigInt(u8.length) !== need) {
    const len = BigInt(u8.length), room = len - 28n - fixed;
    const fits = room < 0n ? 'not even the tensors outside the layers' : `${room / perLayer} layers of these sizes`;
    fail(`${what}: the header (dim ${h.dim}, hidden_dim ${h.hidden}, ${h.layers} layers, ${h.heads} heads, ` +
      `${h.kvHeads} kv heads, vocab ${h.vocab}${h.shared ? '' : ' unshared'}, seq_len ${h.seqLen}) needs ${need} bytes ` +
      `and the file has ${u8.length}${len < need ? ': it is cut short' : ''}; the header's n_layers is ${h.layers} ` +
      `(${perLayer} bytes each) and the file holds ${fits}`);
  }
  const parts = layout(h);
  const floats = Number((need - 28n) / 4n);
  // float32 views where the bytes are 4-aligned, else one aligned copy
  const src = (u8.byteOffset % 4) ? u8.slice() : u8;
  const all = new Float32Array(src.buffer, src.byteOffset + 28, floats);
  const tensors = [];
  let at = 0;
  for (const [ours, , shape] of parts) {
    const n = count(shape);
    if (ours) tensors.push([ours, { shape, data: all.subarray(at, at + n) }]);
    at += n;
  }
  return { header: h, checkpoint: writeSafetensors(metadata(h), tensors) };
}

// ---- version 2 ---------------------------------------------------------------------------------

const V2_HEADER = 256;

// The matrices of a version 2 file in its order: [our tensor, rows, cols] (rows x cols values each).
function v2Matrices(h) {
  const { dim, hidden, layers, vocab } = h, kvDim = (dim / h.heads) * h.kvHeads;
  const per = (ours, rows, cols) => Array.from({ length: layers }, (_, l) => [`dec.${l}.${ours}`, rows, cols]);
  return [['wte', vocab, dim], ...per('self.wq', dim, dim), ...per('self.wk', kvDim, dim), ...per('self.wv', kvDim, dim),
    ...per('self.wo', dim, dim), ...per('ffn.w1', hidden, dim), ...per('ffn.w2', dim, hidden), ...per('ffn.w3', hidden, dim),
    ...(h.shared ? [] : [['out.w', vocab, dim]])];
}

/** True when the bytes start with a version 2 header (magic "ak42", version 2). */
export function isLlama2cV2(u8) {
  if (u8.length < 8) return false;
  const dv = new DataView(u8.buffer, u8.byteOffset, 8);
  return dv.getUint32(0, true) === MAGIC_V1 && dv.getInt32(4, true) === 2;
}

/**
 * A version 2 file as a legacy file (its float32 values dequantized, q s, as runq.c computes them)
 * and its integers: { legacy, header, group, matrices: Map(our tensor -> { q: Int8Array, s: Float32Array }) }.
 * Every size the header gives is checked against the file's length before anything is allocated.
 */
export function llama2cV2ToLegacy(bytes, what = 'loadLlama2c') {
  const u8 = asBytes(`${what}: bytes`, bytes);
  if (u8.length < V2_HEADER) fail(`${what}: ${u8.length} bytes is too short for a version 2 llama2.c file (its header alone is ${V2_HEADER} bytes)`);
  const dv = new DataView(u8.buffer, u8.byteOffset, V2_HEADER);
  const h7 = Array.from({ length: 7 }, (_, i) => dv.getInt32(8 + 4 * i, true));
  const sharedByte = dv.getUint8(36), group = dv.getInt32(37, true);
  const names = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];
  h7.forEach((v, i) => { if (!(v > 0)) fail(`${what}: the version 2 header's ${names[i]} is ${v}; every size must be positive`); });
  const [dim, hidden, layers, heads, kvHeads, vocab, seqLen] = h7;
  if (sharedByte > 1) fail(`${what}: the version 2 header's shared_classifier byte is ${sharedByte}; it must be 0 or 1`);
  if (dim % heads) fail(`${what}: the header's dim (${dim}) is not divisible by n_heads (${heads})`);
  if (heads % kvHeads) fail(`${what}: the header's n_heads (${heads}) is not divisible by n_kv_heads (${kvHeads})`);
  if ((dim / heads) % 2) fail(`${what}: the head size dim / n_heads = ${dim / heads} is odd; rotary positions need it even`);
  if (seqLen > 4096) fail(`${what}: seq_len ${seqLen} is more than this library's maxLen limit of 4096`);
  if (!(group >= 16 && group <= 256 && group % 16 === 0))
    fail(`${what}: the version 2 header's group_size is ${group}; this library's q8_0 takes a multiple of 16 from 16 to 256`);
  if (dim % group || hidden % group)
    fail(`${what}: the version 2 header's group_size ${group} does not divide dim (${dim}) and hidden_dim (${hidden}): ` +
      'its groups would run across rows, which this library\'s q8_0 does not hold');
  const h = { dim, hidden, layers, heads, kvHeads, vocab, seqLen, shared: sharedByte === 1 };
  // the file's size against the header's, in closed form and BigInt, before anything grows with a
  // header field (v2Matrices lists 7 matrices per layer: a flipped bit in n_layers must not build
  // billions of entries first). Every matrix has a multiple of group_size values (group_size
  // divides dim and hidden_dim), each value 1 byte and each group a float32 scale.
  const [D, H, L, V, KV] = [dim, hidden, layers, vocab, (dim / heads) * kvHeads].map(BigInt), G = BigInt(group);
  const values = (n) => n + (4n * n) / G;
  const fixed = BigInt(V2_HEADER) + 4n * D + values(V * D * (h.shared ? 1n : 2n)); // header, rms_final, embedding, wcls
  const perLayer = 4n * 2n * D + values(2n * D * D + 2n * KV * D + 3n * H * D); // rms_att, rms_ffn, wq wk wv wo w1 w2 w3
  const need = fixed + L * perLayer, len = BigInt(u8.length);
  if (len !== need) {
    const room = len - fixed;
    fail(`${what}: the version 2 header (dim ${dim}, hidden_dim ${hidden}, ${layers} layers, ${heads} heads, ${kvHeads} kv heads, ` +
      `vocab ${vocab}${h.shared ? '' : ' unshared'}, group_size ${group}) needs ${need} bytes and the file has ${u8.length}` +
      `${len < need ? ': it is cut short' : ''}; the header's n_layers is ${layers} (${perLayer} bytes each) and the file holds ` +
      `${room < 0n ? 'not even the tensors outside the layers' : `${room / perLayer} layers of these sizes`}`);
  }
  const mats = v2Matrices(h);
  const f32 = (at, n) => new Float32Array(u8.slice(at, at + 4 * n).buffer);
  let at = V2_HEADER;
  const rmsAtt = f32(at, layers * dim); at += 4 * layers * dim;
  const rmsFfn = f32(at, layers * dim); at += 4 * layers * dim;
  const rmsFinal = f32(at, dim); at += 4 * dim;
  const matrices = new Map(), deq = new Map();
  for (const [name, r, c] of mats) {
    const n = r * c, q = new Int8Array(u8.slice(at, at + n).buffer), s = f32(at + n, n / group);
    at += n + 4 * (n / group);
    matrices.set(name, { q, s });
    const w = new Float32Array(n);
    for (let i = 0; i < n; i++) w[i] = q[i] * s[Math.floor(i / group)];
    deq.set(name, w);
  }
  // the legacy layout (llama2cToSafetensors reads it): its per-layer stacks, rotary tables of zeros
  const stack = (leaf) => { const parts = Array.from({ length: layers }, (_, l) => deq.get(`dec.${l}.${leaf}`)); return parts; };
  const arrays = [deq.get('wte'), rmsAtt, ...stack('self.wq'), ...stack('self.wk'), ...stack('self.wv'), ...stack('self.wo'), rmsFfn,
    ...stack('ffn.w1'), ...stack('ffn.w2'), ...stack('ffn.w3'), rmsFinal, new Float32Array(seqLen * (dim / heads)),
    ...(h.shared ? [] : [deq.get('out.w')])];
  const floats = arrays.reduce((n, a) => n + a.length, 0);
  const legacy = new Uint8Array(28 + 4 * floats), ldv = new DataView(legacy.buffer);
  [dim, hidden, layers, heads, kvHeads, h.shared ? vocab : -vocab, seqLen].forEach((v, i) => ldv.setInt32(4 * i, v, true));
  const out = new Float32Array(legacy.buffer, 28);
  let o = 0;
  for (const a of arrays) out.set(a, o), (o += a.length);
  return { legacy, header: h, group, matrices };
}

// runq.c's quantize (export.py's): s = max|w| / 127, q = round(w / s) (C's round: half away from zero)
function quantizeQ80(w, G) {
  const q = new Int8Array(w.length), s = new Float32Array(w.length / G);
  for (let g = 0; g < s.length; g++) {
    let m = 0;
    for (let i = g * G; i < (g + 1) * G; i++) m = Math.max(m, Math.abs(w[i]));
    const scale = Math.fround(m / 127);
    s[g] = scale;
    for (let i = g * G; i < (g + 1) * G; i++) {
      const v = scale > 0 ? Math.fround(w[i] / scale) : 0;
      q[i] = Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
    }
  }
  return [new Uint8Array(q.buffer), new Uint8Array(s.buffer)];
}

/**
 * A legacy llama2.c file (saveLlama2c's bytes) as a version 2 file: groups of groupSize (default: 64
 * halved until it divides dim and hidden_dim; export.py halves until it divides dim).
 */
export function llama2cLegacyToV2(bytes, groupSize, what = 'saveLlama2c') {
  const v0 = asBytes(`${what}: bytes`, bytes);
  const h = llama2cHeader(v0, what);
  let G = groupSize;
  if (G === undefined) for (G = 64; G > 16 && (h.dim % G || h.hidden % G); G /= 2);
  if (!isIntIn(G, 16, 256) || G % 16) fail(`${what}: groupSize must be a multiple of 16 from 16 to 256, got ${describe(G)}`);
  if (h.dim % G || h.hidden % G) fail(`${what}: groupSize ${G} does not divide dim (${h.dim}) and hidden_dim (${h.hidden})`);
  const f = new Float32Array(v0.slice(28).buffer);
  const tensors = new Map();
  let at = 0;
  for (const [ours, , shape] of layout(h)) {
    const n = count(shape);
    if (ours) tensors.set(ours, f.subarray(at, at + n));
    at += n;
  }
  const header = new Uint8Array(V2_HEADER), dv = new DataView(header.buffer);
  dv.setUint32(0, MAGIC_V1, true), dv.setInt32(4, 2, true);
  [h.dim, h.hidden, h.layers, h.heads, h.kvHeads, h.vocab, h.seqLen].forEach((v, i) => dv.setInt32(8 + 4 * i, v, true));
  dv.setUint8(36, h.shared ? 1 : 0), dv.setInt32(37, G, true);
  const norms = (leaf) => Array.from({ length: h.layers }, (_, l) => new Uint8Array(tensors.get(`dec.${l}.${leaf}`).slice().buffer));
  const parts = [header, ...norms('self.ln.w'), ...norms('ffn.ln.w'), new Uint8Array(tensors.get('lnf.w').slice().buffer)];
  for (const [name] of v2Matrices(h)) parts.push(...quantizeQ80(tensors.get(name), G));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) out.set(p, o), (o += p.length);
  return out;
}

/** What llama2.c's run.c cannot run of a model with this config: null when it can run all of it. */
export function llama2cRefusal(c) {
  if (c.arch !== 'decoder') return `arch "${c.arch}": llama2.c runs decoder-only models`;
  // layerForms: plain softmax in every layer is what llama2.c runs (a switch set on is not)
  const switched = (f) => Object.entries(f.attentionOptions ?? {}).filter(([, v]) => v !== false && v !== null).map(([k]) => k);
  const other = c.layerForms?.findIndex((f) => f.attention !== 'softmax' || switched(f).length > 0) ?? -1;
  if (other >= 0) {
    const f = c.layerForms[other], on = switched(f);
    return f.attention !== 'softmax' ? `layerForms[${other}] is attention "${f.attention}": llama2.c runs softmax attention only, in every layer`
      : `layerForms[${other}].attentionOptions.${on[0]}: llama2.c runs plain softmax attention in every layer`;
  }
  if (!c.layerForms && c.attention !== 'softmax') return `attention "${c.attention}": llama2.c runs softmax attention only`;
  if (c.positional !== 'rope') return `positional "${c.positional}": llama2.c uses rotary positions (positional "rope")`;
  if (c.ropeTheta !== 10000) return `ropeTheta ${c.ropeTheta}: run.c fixes the rotary base at 10000`;
  if (c.normType !== 'rmsnorm') return `normType "${c.normType}": llama2.c uses RMSNorm`;
  if (c.norm !== 'pre') return `norm "${c.norm}": llama2.c normalises before each sublayer (norm "pre")`;
  if (c.ffn !== 'swiglu') return `ffn "${c.ffn}": llama2.c's feed-forward is SwiGLU`;
  if (c.bias) return 'bias true: llama2.c\'s linear layers have no biases';
  if (c.qkvBias) return 'qkvBias: llama2.c\'s linear layers have no biases';
  if (c.headDim) return `headDim ${c.headDim}: llama2.c's heads are dim / n_heads wide`;
  if (c.ropeScaling) return 'ropeScaling: run.c computes unscaled rotary frequencies';
  if (c.normEps !== undefined && c.normEps !== 1e-5) return `normEps ${c.normEps}: run.c's RMSNorm uses 1e-5`;
  const o = c.attentionOptions ?? {}; // softmax's 2025 switches: run.c has none of them
  const on = ['window', 'softcap', 'learnedSinks', 'outputGate', 'qkNorm'].find((k) => o[k] !== undefined && o[k] !== false && o[k] !== 'off');
  if (on) return `attentionOptions.${on}: llama2.c's attention has no ${on}`;
  return null;
}

/** The library's checkpoint (save()'s bytes) of a llama-style model as llama2.c's model file. */
export function safetensorsToLlama2c(checkpoint, config, what = 'saveLlama2c') {
  const why = llama2cRefusal(config);
  if (why) fail(`${what}: llama2.c cannot run this model: ${why}. Create it with block: 'llama' (and no other changes to what llama2.c runs)`);
  const { tensors } = readSafetensors(checkpoint, what);
  const h = { dim: config.dModel, hidden: config.dFF, layers: config.layers, heads: config.heads, kvHeads: config.kvHeads,
    vocab: config.vocab, seqLen: config.maxLen, shared: config.tieEmbeddings };
  const parts = layout(h);
  const floats = parts.reduce((n, p) => n + count(p[2]), 0);
  const out = new Uint8Array(28 + 4 * floats);
  const dv = new DataView(out.buffer);
  [h.dim, h.hidden, h.layers, h.heads, h.kvHeads, h.shared ? h.vocab : -h.vocab, h.seqLen]
    .forEach((v, i) => dv.setInt32(4 * i, v, true));
  const all = new Float32Array(out.buffer, 28, floats);
  const hs = h.dim / h.heads;
  let at = 0;
  for (const [ours, theirs, shape] of parts) {
    const n = count(shape);
    if (ours) {
      const t = tensors.get(ours);
      if (!t || t.data.length !== n) fail(`${what}: the checkpoint has no tensor ${ours} of shape [${shape}]`);
      all.set(t.data, at);
    } else { // the rotary tables export.py writes (run.c skips them): cos and sin of p 10000^(-2i/hs)
      const imag = theirs === 'freq_cis_imag';
      for (let p = 0; p < h.seqLen; p++)
        for (let i = 0; i < hs / 2; i++) {
          const angle = p * 10000 ** (-(2 * i) / hs);
          all[at + p * (hs / 2) + i] = imag ? Math.sin(angle) : Math.cos(angle);
        }
    }
    at += n;
  }
  return out;
}

// ---- the tokenizer ----------------------------------------------------------------------------

const latin1 = (u8) => { let s = ''; for (const b of u8) s += String.fromCharCode(b); return s; };

// No merge scores at or below this one happen (run.c's best_score starts here).
const NO_MERGE = -1e10;

/**
 * run.c's merges, in O(n log n): repeatedly merge the adjacent pair whose joined piece has the
 * highest score, ties to the leftmost pair; the same tokens as rescanning all pairs each time
 * (tests/node/llama2c-safety.test.js keeps that rescan as the reference). As sentencepiece does:
 * the tokens are a doubly linked list, candidate pairs sit in a binary max-heap ordered by
 * (score, then the left token's original index, which stays in list order as merges keep the
 * left token), and a candidate is dropped when popped if either token changed since it was pushed.
 */
function mergePairs(tokens, scores, pair) {
  const n = tokens.length;
  if (n < 2) return tokens;
  const tok = Int32Array.from(tokens), next = new Int32Array(n), prev = new Int32Array(n), ver = new Int32Array(n);
  for (let i = 0; i < n; i++) next[i] = i + 1 < n ? i + 1 : -1, prev[i] = i - 1;
  // the candidates: every pair pushed at most once per version of its two tokens, so at most
  // n - 1 at the start and two per merge. The heap holds each candidate's score and left index
  // beside it (hScore, hLeft), so sifting reads neighbouring memory only.
  const cap = 3 * n;
  const cRight = new Int32Array(cap), cVerL = new Int32Array(cap), cVerR = new Int32Array(cap), cId = new Int32Array(cap);
  const hScore = new Float64Array(cap), hLeft = new Int32Array(cap), hC = new Int32Array(cap);
  let used = 0, size = 0;
  const push = (l) => {
    const r = next[l];
    if (r < 0) return;
    const id = pair(tok[l], tok[r]);
    if (id < 0 || !(scores[id] > NO_MERGE)) return;
    const c = used++, score = scores[id];
    cRight[c] = r, cVerL[c] = ver[l], cVerR[c] = ver[r], cId[c] = id;
    let i = size++;
    while (i > 0) { // sift up: higher score first, then the leftmost
      const p = (i - 1) >> 1;
      if (!(score > hScore[p] || (score === hScore[p] && l < hLeft[p]))) break;
      hScore[i] = hScore[p], hLeft[i] = hLeft[p], hC[i] = hC[p], i = p;
    }
    hScore[i] = score, hLeft[i] = l, hC[i] = c;
  };
  const pop = () => { // removes the top; the caller has read hLeft[0] and hC[0]
    const last = --size, score = hScore[last], l = hLeft[last];
    let i = 0;
    for (;;) { // sift down
      let k = 2 * i + 1;
      if (k >= size) break;
      if (k + 1 < size && (hScore[k + 1] > hScore[k] || (hScore[k + 1] === hScore[k] && hLeft[k + 1] < hLeft[k]))) k++;
      if (!(hScore[k] > score || (hScore[k] === score && hLeft[k] < l))) break;
      hScore[i] = hScore[k], hLeft[i] = hLeft[k], hC[i] = hC[k], i = k;
    }
    hScore[i] = score, hLeft[i] = l, hC[i] = hC[last];
  };
  for (let i = 0; i + 1 < n; i++) push(i);
  while (size > 0) {
    const l = hLeft[0], c = hC[0], r = cRight[c];
    pop();
    if (ver[l] !== cVerL[c] || ver[r] !== cVerR[c]) continue; // a token of this pair changed or merged away
    tok[l] = cId[c];
    ver[l]++, ver[r]++; // r is gone: every candidate naming it is stale
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    if (prev[l] >= 0) push(prev[l]);
    push(l);
  }
  const out = [];
  for (let i = 0; i >= 0; i = next[i]) out.push(tok[i]);
  return out;
}

/**
 * llama2.c's tokenizer.bin for a model of `vocab` tokens: { vocab, maxTokenLength, pieces
 * (strings, one char per byte), scores, encode(text, { bos, eos }), decode(ids), piece(id) }.
 * encode is run.c's: an optional BOS (1), the dummy prefix " " when the text is not empty, each
 * UTF-8 character as its piece or as byte tokens (byte + 3), then the highest-scoring merge of
 * two neighbours while one exists, and an optional EOS (2). decode is run.c's too: a piece after
 * BOS loses its leading space, and <0xXX> pieces are the raw byte; BOS and EOS print nothing.
 */
export function llama2cTokenizer(bytes, vocab, what = 'tokenizer') {
  const u8 = asBytes(what, bytes);
  refuseJsonTokenizer(what, u8, 'load a tokenizer.json with lib.loadTokenizer');
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  if (u8.length < 4) fail(`${what}: ${u8.length} bytes is too short for llama2.c's tokenizer.bin`);
  const maxTokenLength = dv.getInt32(0, true);
  const pieces = new Array(vocab), scores = new Float32Array(vocab);
  let at = 4, longest = 0;
  for (let i = 0; i < vocab; i++) {
    if (at + 8 > u8.length)
      fail(`${what}: the file ends after ${i} of the model's ${vocab} tokens (is it the tokenizer of this model?)`);
    scores[i] = dv.getFloat32(at, true);
    const len = dv.getInt32(at + 4, true);
    if (len < 0 || at + 8 + len > u8.length) fail(`${what}: token ${i} has length ${len}, past the end of the file`);
    if (!Number.isFinite(scores[i])) fail(`${what}: token ${i}'s score is ${scores[i]}; merge scores must be finite numbers`);
    pieces[i] = latin1(u8.subarray(at + 8, at + 8 + len));
    longest = Math.max(longest, len);
    at += 8 + len;
  }
  if (at < u8.length) { // more pieces than the model has tokens, or bytes that are no piece at all
    let more = 0, end = at;
    while (end + 8 <= u8.length) {
      const len = dv.getInt32(end + 4, true);
      if (len < 0 || end + 8 + len > u8.length) break;
      end += 8 + len, more++;
    }
    if (end === u8.length)
      fail(`${what}: the file holds ${vocab + more} pieces and the model's vocab_size is ${vocab}; ` +
        'expected exactly one piece per token (is it the tokenizer of this model?)');
    fail(`${what}: ${u8.length - at} trailing bytes after the model's ${vocab} tokens; expected the file to end there`);
  }
  if (!(maxTokenLength >= Math.max(1, longest)))
    fail(`${what}: the header's max_token_length is ${maxTokenLength}; expected at least ${Math.max(1, longest)}, ` +
      'the byte length of the longest piece (and at least 1)');
  const ids = new Map();
  for (let i = vocab - 1; i >= 0; i--) ids.set(pieces[i], i); // the first id of a piece wins
  const space = ids.get(' ');
  const ascii = Array.from({ length: 128 }, (_, c) => ids.get(String.fromCharCode(c)));
  // the id of two tokens' joined piece, or -1: cached under a * vocab + b (exact below 2^53), as
  // joining and hashing strings is most of encode's time; the cache is dropped when it grows large
  const cache = new Map();
  const pair = (a, b) => {
    if (vocab > 2 ** 26) return ids.get(pieces[a] + pieces[b]) ?? -1;
    const key = a * vocab + b;
    let id = cache.get(key);
    if (id === undefined) {
      if (cache.size >= 1 << 20) cache.clear();
      cache.set(key, id = ids.get(pieces[a] + pieces[b]) ?? -1);
    }
    return id;
  };
  const utf8 = new TextEncoder();
  const encode = (text, opts = {}) => {
    if (typeof text !== 'string') fail(`tokenizer.encode: text must be a string, got ${describe(text)}`);
    checkKeys('tokenizer.encode', opts, ['bos', 'eos']);
    const bos = opts.bos === undefined ? true : checkBool('tokenizer.encode: bos', opts.bos);
    const eos = opts.eos === undefined ? false : checkBool('tokenizer.encode: eos', opts.eos);
    const tokens = [];
    if (bos) tokens.push(1);
    if (text.length) {
      if (space === undefined) fail('tokenizer.encode: this tokenizer has no " " piece for the dummy prefix');
      tokens.push(space);
    }
    const b = utf8.encode(text);
    for (let i = 0; i < b.length;) {
      let j = i + 1;
      while (j < b.length && (b[j] & 0xc0) === 0x80 && j - i < 4) j++; // one UTF-8 character (at most 4 bytes)
      const id = j === i + 1 && b[i] < 128 ? ascii[b[i]] : ids.get(latin1(b.subarray(i, j)));
      if (id !== undefined) tokens.push(id);
      else { // byte fallback: <0xXX> is token XX + 3
        if (vocab < 259)
          fail(`tokenizer.encode: ${JSON.stringify(new TextDecoder().decode(b.subarray(i, j)))} is not a piece and this ` +
            `tokenizer of ${vocab} tokens has no byte pieces (<0x00>..<0xFF> at ids 3..258) to spell it with`);
        for (let k = i; k < j; k++) tokens.push(b[k] + 3);
      }
      i = j;
    }
    const merged = mergePairs(tokens, scores, pair);
    if (eos) merged.push(2);
    return Int32Array.from(merged);
  };
  const pieceBytes = (id, prev) => {
    let p = pieces[id];
    if (prev === 1 && p[0] === ' ') p = p.slice(1);
    const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(p);
    return m ? [parseInt(m[1], 16)] : Array.from(p, (ch) => ch.charCodeAt(0));
  };
  const check = (id, i) => {
    if (!isIntIn(id, 0, vocab - 1)) fail(`tokenizer.decode: ids[${i}] is ${describe(id)}, outside [0, ${vocab})`);
  };
  const decode = (ids, prev = -1) => {
    const out = [];
    Array.from(ids).forEach((id, i) => {
      check(id, i);
      if (id !== 1 && id !== 2) out.push(...pieceBytes(id, i ? ids[i - 1] : prev)); // BOS and EOS mark, they do not print
    });
    return new TextDecoder().decode(Uint8Array.from(out));
  };
  /** One token as text for a label: its piece with <0xXX> as the byte, spaces kept, <s> and </s> as such. */
  const piece = (id) => {
    check(id, 0);
    return id === 1 ? '<s>' : id === 2 ? '</s>' : new TextDecoder().decode(Uint8Array.from(pieceBytes(id, -1)));
  };
  return { vocab, maxTokenLength, pieces, scores, encode, decode, piece };
}

/**
 * Where JSON text starts in u8 (after an optional UTF-8 byte-order mark and whitespace), when u8
 * is JSON rather than llama2.c's tokenizer.bin; -1 otherwise. A tokenizer.bin opens with its
 * int32 max_token_length (1 to 65535 in practice), so its bytes 2 and 3 are zero: a file that
 * opens with "{" or "[" and a larger (or negative) header is JSON.
 */
export function jsonStart(u8) {
  let i = u8[0] === 0xef && u8[1] === 0xbb && u8[2] === 0xbf ? 3 : 0;
  while (i < u8.length && (u8[i] === 32 || u8[i] === 9 || u8[i] === 10 || u8[i] === 13)) i++;
  if (u8[i] !== 123 && u8[i] !== 91) return -1;
  if (i > 0 || u8.length < 4) return i;
  const header = new DataView(u8.buffer, u8.byteOffset, 4).getInt32(0, true);
  return header < 1 || header > 0xffff ? i : -1;
}

/** The Error for JSON given to a tokenizer.bin reader, naming what it looks like and what to do. */
export function refuseJsonTokenizer(what, u8, instead) {
  const at = jsonStart(u8);
  if (at < 0) return;
  const bom = u8[0] === 0xef ? ' (after a UTF-8 byte-order mark)' : '';
  fail(`${what}: the bytes look like JSON${bom}, starting ${JSON.stringify(new TextDecoder().decode(u8.subarray(at, at + 24)))}: ` +
    `a tokenizer.json, not llama2.c's tokenizer.bin (an int32 max_token_length, then a score, length and bytes per piece); ${instead}`);
}

/** llama2.c's tokenizer.bin from pieces (strings, UTF-8 encoded) and scores (default 0). */
export function writeLlama2cTokenizer(pieces, scores) {
  if (!Array.isArray(pieces) || !pieces.every((p) => typeof p === 'string'))
    fail(`writeLlama2cTokenizer: pieces must be an array of strings, got ${describe(pieces)}`);
  if (scores !== undefined) { // one score per piece: a shorter list would give the rest 0 silently
    const list = Array.isArray(scores) || (ArrayBuffer.isView(scores) && !(scores instanceof DataView));
    if (!list || scores.length !== pieces.length)
      fail(`writeLlama2cTokenizer: scores must be an array of ${pieces.length} numbers, one per piece (or left out for all 0), got ${describe(scores)}`);
  }
  const enc = pieces.map((p) => new TextEncoder().encode(p));
  const out = new Uint8Array(4 + enc.reduce((n, e) => n + 8 + e.length, 0));
  const dv = new DataView(out.buffer);
  dv.setInt32(0, Math.max(1, ...enc.map((e) => e.length)), true);
  let at = 4;
  enc.forEach((e, i) => {
    const s = scores === undefined ? 0 : scores[i];
    if (typeof s !== 'number' || !Number.isFinite(Math.fround(s)))
      fail(`writeLlama2cTokenizer: scores[${i}] is ${describe(s)}; scores must be numbers finite in float32 (|s| < 3.4e38)`);
    dv.setFloat32(at, s, true);
    dv.setInt32(at + 4, e.length, true);
    out.set(e, at + 8);
    at += 8 + e.length;
  });
  return out;
}

/** lib.loadLlama2c and lib.writeLlama2cTokenizer (model.saveLlama2c is in model.js). */
export function llama2cMethods(core, lib) {
  const ex = core.exports;
  // quantize the model to q8_0 in the file's groups, then put the file's own integers and scales in
  // place of the ones quantize computed from their dequantized values (they agree but for a rounding)
  function installQ80(model, v2, what) {
    model.quantize('q8_0', { groupSize: v2.group });
    core.withBuffers(what, [{ name: 'matrix', bytes: 48 }], ([p]) => {
      for (let i = 0; ; i++) {
        const np = ex.aw_model_qmat(model.handle, i, p);
        if (!np) break;
        const [, rows, cols, , qp, sp] = new Float64Array(core.memory.buffer, p, 6);
        const m = v2.matrices.get(core.cString(np));
        if (!m || m.q.length !== rows * cols) fail(`${what}: the file has no ${rows} x ${cols} matrix for ${core.cString(np)}`);
        new Int8Array(core.memory.buffer, qp, m.q.length).set(m.q);
        new Float32Array(core.memory.buffer, sp, m.s.length).set(m.s);
      }
    });
  }
  return {
    /**
     * A llama2.c model file (and its tokenizer.bin) as a model of this library: block 'llama',
     * the file's sizes, loaded for inference ({ training: true } keeps gradients and AdamW state
     * too, four times the memory). model.tokenizer: the tokenizer (encode, decode, piece), when given.
     */
    loadLlama2c(bytes, opts = {}) {
      const what = 'loadLlama2c';
      checkKeys(what, opts, ['tokenizer', 'training']);
      const training = opts.training === undefined ? false : checkBool(`${what}: training`, opts.training);
      const u8 = asBytes(`${what}: bytes`, bytes);
      const v2 = isLlama2cV2(u8) ? llama2cV2ToLegacy(u8, what) : null;
      if (v2 && training) fail(`${what}: a version 2 file holds 8-bit weights, which do not train: load it with training false (the default)`);
      const { header, checkpoint } = llama2cToSafetensors(v2 ? v2.legacy : u8, what);
      const tokenizer = opts.tokenizer === undefined ? null : llama2cTokenizer(opts.tokenizer, header.vocab, `${what}: tokenizer`);
      const model = lib.loadModel(checkpoint, { training });
      if (v2) installQ80(model, v2, what);
      Object.defineProperty(model, 'tokenizer', { value: tokenizer, enumerable: true });
      return model;
    },
    writeLlama2cTokenizer,
    sniffModelFile,
  };
}
