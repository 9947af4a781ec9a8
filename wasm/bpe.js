// bpe.js: the byte-level BPE tokenizer (src/model/bpe.h, docs/tokenizers.md): lib.trainTokenizer
// and lib.loadTokenizer, and the two files it reads and writes: Hugging Face's tokenizer.json and
// llama2.c's tokenizer.bin. A tokenizer is its merges (left, right, result ids in rank order)
// and its pieces' bytes, kept here; the C side is stateless and gets the merges with each call.
import { INT32_MAX, INT32_MIN, bytesOf, checkInt, checkKeys, describe, fail, isIntIn } from './core.js';
import { BYTE_CHAR, CHAR_BYTE, hfTokenizerFrom } from './hf-tokenizer.js';
import { jsonStart, refuseJsonTokenizer } from './llama2c.js';

const FIRST_BYTE = 3, FIRST_MERGE = 259;
const SPECIALS = ['<unk>', '<s>', '</s>']; // ids 0, 1, 2 (tokenizer.json)
const LLAMA2C_SPECIALS = ['<unk>', '\n<s>\n', '\n</s>\n']; // their llama2.c pieces, as llama2.c's own
// A special's llama2.c score: at or below run.c's starting best score (-1e10), so run.c never merges into one.
const NO_MERGE_SCORE = -1e10;

// BYTE_CHAR: GPT-2's byte-to-unicode table (Radford et al. 2019, encoder.py bytes_to_unicode,
// hf-tokenizer.js): printable bytes stand for themselves; the others (space, control bytes, ...)
// become U+0100 onwards, so every piece is a string of visible characters in tokenizer.json (a
// space is "Ġ", "\n" is "Ċ").
const toByteLevel = (bytes) => { let s = ''; for (const b of bytes) s += BYTE_CHAR[b]; return s; };
function fromByteLevel(what, s) {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const b = CHAR_BYTE.get(s[i]);
    if (b === undefined) fail(`${what}: ${JSON.stringify(s)} holds ${JSON.stringify(s[i])}, which is not one of the 256 characters of the byte-level alphabet`);
    out[i] = b;
  }
  return out;
}

const utf8 = new TextEncoder();
const concat = (a, b) => { const c = new Uint8Array(a.length + b.length); c.set(a); c.set(b, a.length); return c; };

function textBytes(what, text) {
  if (typeof text === 'string') return utf8.encode(text);
  if (text instanceof Uint8Array) return text;
  return fail(`${what}: text must be a string or a Uint8Array of bytes, got ${describe(text)}`);
}

const asBytes = bytesOf;

/**
 * The tokenizer object over pieces (Uint8Array per id), byteIds (Int32Array(256)) and merges
 * (Int32Array (n, 3): left, right, result, in rank order).
 */
function makeTokenizer(core, pieces, byteIds, merges) {
  const ex = core.exports, nMerges = merges.length / 3, vocabSize = pieces.length;
  const llamaLayout = byteIds.every((id, b) => id === b + FIRST_BYTE) && vocabSize === FIRST_MERGE + nMerges &&
    Array.from({ length: nMerges }, (_, r) => merges[3 * r + 2] === FIRST_MERGE + r).every(Boolean);

  // opts.merges = k: only the first k merges (ranks 0..k-1) apply; C checks 0 <= k <= nMerges
  const encode = (text, opts = {}) => {
    const bytes = textBytes('tokenizer.encode', text);
    checkKeys('tokenizer.encode', opts, ['merges']);
    const use = opts.merges ?? nMerges;
    checkInt('tokenizer.encode: merges', use, INT32_MIN, INT32_MAX, { expected: `an integer (how many merges apply, 0..${nMerges})`, accepted: '' });
    if (bytes.length === 0 && use >= 0 && use <= nMerges) return new Int32Array(0);
    return core.withBuffers('tokenizer.encode', [
      { name: 'ids', bytes: 4 * bytes.length }, { name: 'count', bytes: 4 }, { name: 'text', bytes: bytes.length, from: bytes },
      { name: 'byte ids', bytes: 1024, from: byteIds }, { name: 'merges', bytes: merges.byteLength, from: merges },
    ], ([ids, count, t, b, m]) => {
      core.check(ex.aw_bpe_encode_text(ids, count, t, bytes.length, b, m, nMerges, vocabSize, use), 'tokenizer.encode');
      const n = core.i32[count >> 2];
      return new Int32Array(core.memory.buffer.slice(ids, ids + 4 * n));
    });
  };
  const decodeBytes = (ids) => {
    const ok = Array.isArray(ids) || (ArrayBuffer.isView(ids) && !(ids instanceof DataView));
    if (!ok) fail(`tokenizer.decode: ids must be an array of token ids, got ${describe(ids)}`);
    let n = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!isIntIn(id, 0, vocabSize - 1)) fail(`tokenizer.decode: ids[${i}] is ${describe(id)}, outside [0, ${vocabSize})`);
      n += pieces[id].length;
    }
    const out = new Uint8Array(n);
    for (let i = 0, at = 0; i < ids.length; i++) out.set(pieces[ids[i]], at), at += pieces[ids[i]].length;
    return out;
  };
  const spelled = Object.freeze(pieces.map(toByteLevel));

  return Object.freeze({
    /** the number of pieces: a model reading these ids needs vocab >= this */
    vocabSize,
    /** every piece as tokenizer.json spells it: one character per byte, GPT-2's alphabet ("Ġ" a space, "Ċ" a newline) */
    pieces: spelled,
    /** the merges in rank order as [left id, right id, result id] */
    merges: Object.freeze(Array.from({ length: nMerges }, (_, r) => Object.freeze([merges[3 * r], merges[3 * r + 1], merges[3 * r + 2]]))),
    /**
     * text (a string, as UTF-8, or a Uint8Array of any bytes) -> ids; { merges: k } applies only
     * the first k merges (0..merges.length; 0 gives the bytes), as the tokenizer was after k merges
     */
    encode,
    /** ids -> their bytes joined: the exact inverse of encode on bytes */
    decodeBytes,
    /** ids -> text (the bytes as UTF-8; the exact inverse of encode on any string without lone surrogates) */
    decode: (ids) => new TextDecoder().decode(decodeBytes(ids)),
    /** the bytes of one piece */
    pieceBytes(id) {
      if (!isIntIn(id, 0, vocabSize - 1)) fail(`tokenizer.pieceBytes: id is ${describe(id)}, outside [0, ${vocabSize})`);
      return pieces[id].slice();
    },
    /** Hugging Face's tokenizer.json as an object (JSON.stringify it to write the file) */
    toJSON() {
      const vocab = {};
      spelled.forEach((p, id) => { vocab[p] = id; });
      return {
        version: '1.0',
        truncation: null,
        padding: null,
        added_tokens: [],
        normalizer: null,
        pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
        post_processor: null,
        decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
        model: {
          type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
          fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab,
          merges: Array.from({ length: nMerges }, (_, r) => `${spelled[merges[3 * r]]} ${spelled[merges[3 * r + 1]]}`),
        },
      };
    },
    /**
     * llama2.c's tokenizer.bin: the same ids (<unk>, <s>, </s>, the bytes at 3..258 as the raw
     * byte, the merges' pieces), merge r scored -r so run.c's highest-score-first merging takes
     * them in rank order; the specials scored -1e10 so run.c never merges into one.
     */
    toLlama2c() {
      if (!llamaLayout)
        fail('tokenizer.toLlama2c: this tokenizer\'s ids are not in llama2.c\'s layout (<unk>, <s>, </s> at 0..2, the ' +
          'bytes at 3..258, merge r making piece 259 + r); only tokenizers trained here (or read from their files) have it');
      const bins = pieces.map((p, id) => (id < FIRST_BYTE ? utf8.encode(LLAMA2C_SPECIALS[id]) : p));
      const out = new Uint8Array(4 + bins.reduce((n, p) => n + 8 + p.length, 0));
      const dv = new DataView(out.buffer);
      dv.setInt32(0, Math.max(...bins.map((p) => p.length)), true);
      let at = 4;
      bins.forEach((p, id) => {
        dv.setFloat32(at, id < FIRST_BYTE ? NO_MERGE_SCORE : id < FIRST_MERGE ? 0 : -(id - FIRST_MERGE), true);
        dv.setInt32(at + 4, p.length, true);
        out.set(p, at + 8);
        at += 8 + p.length;
      });
      return out;
    },
  });
}

// tokenizer.json (an object) -> makeTokenizer's arguments.
function fromJSON(what, json) {
  const m = json.model;
  if (m === null || typeof m !== 'object') fail(`${what}: a tokenizer.json has a "model" object; this one has ${describe(m)}`);
  if (m.type !== 'BPE') fail(`${what}: model.type is ${describe(m.type)}; expected "BPE" (a byte-level BPE tokenizer.json)`);
  const pre = json.pre_tokenizer;
  if (!pre || pre.type !== 'ByteLevel')
    fail(`${what}: pre_tokenizer is ${describe(pre?.type ?? pre)}; expected a ByteLevel pre-tokenizer (GPT-2's), the only one this encoder runs`);
  if (pre.add_prefix_space) fail(`${what}: pre_tokenizer.add_prefix_space is true; this encoder adds no prefix space (expected false)`);
  if (pre.use_regex === false) fail(`${what}: pre_tokenizer.use_regex is false; this encoder splits with GPT-2's pattern (expected true)`);
  if (json.normalizer) fail(`${what}: normalizer is ${describe(json.normalizer.type ?? json.normalizer)}; expected null (this encoder does not normalise)`);
  for (const key of ['continuing_subword_prefix', 'end_of_word_suffix'])
    if (m[key]) fail(`${what}: model.${key} is ${describe(m[key])}; expected null for a byte-level BPE`);
  if (m.ignore_merges) fail(`${what}: model.ignore_merges is true (a whole word in the vocabulary skips the merges); this encoder always merges`);
  if (m.dropout) fail(`${what}: model.dropout is ${describe(m.dropout)}; expected null (dropout makes encoding random)`);
  if (m.vocab === null || typeof m.vocab !== 'object' || Array.isArray(m.vocab)) fail(`${what}: model.vocab must be an object of piece: id, got ${describe(m.vocab)}`);
  if (!Array.isArray(m.merges)) fail(`${what}: model.merges must be an array, got ${describe(m.merges)}`);
  const entries = Object.entries(m.vocab), V = entries.length;
  const pieces = new Array(V), ids = new Map();
  for (const [p, id] of entries) {
    if (!isIntIn(id, 0, V - 1)) fail(`${what}: model.vocab[${JSON.stringify(p)}] is ${describe(id)}; ids must be 0..${V - 1}, each once`);
    if (pieces[id]) fail(`${what}: model.vocab gives id ${id} to two pieces`);
    pieces[id] = fromByteLevel(`${what}: model.vocab`, p);
    ids.set(p, id);
  }
  const byteIds = new Int32Array(256);
  for (let b = 0; b < 256; b++) {
    const id = ids.get(BYTE_CHAR[b]);
    if (id === undefined) fail(`${what}: model.vocab has no piece for byte ${b} (${JSON.stringify(BYTE_CHAR[b])}); a byte-level BPE has all 256`);
    byteIds[b] = id;
  }
  const merges = new Int32Array(3 * m.merges.length), seen = new Set();
  m.merges.forEach((mg, r) => {
    const parts = typeof mg === 'string' ? mg.split(' ') : mg;
    if (!Array.isArray(parts) || parts.length !== 2 || !parts.every((x) => typeof x === 'string'))
      fail(`${what}: model.merges[${r}] is ${describe(mg)}; expected "left right" or [left, right]`);
    const [a, b] = parts.map((p) => {
      const id = ids.get(p);
      if (id === undefined) fail(`${what}: model.merges[${r}] names ${JSON.stringify(p)}, which is not in model.vocab`);
      return id;
    });
    const joined = parts[0] + parts[1], z = ids.get(joined);
    if (z === undefined) fail(`${what}: model.merges[${r}] joins to ${JSON.stringify(joined)}, which is not in model.vocab`);
    const key = `${a},${b}`;
    if (seen.has(key)) fail(`${what}: model.merges[${r}] repeats the merge ${JSON.stringify(mg)}`);
    seen.add(key);
    merges.set([a, b, z], 3 * r);
  });
  return { pieces, byteIds, merges };
}

// llama2.c's tokenizer.bin -> makeTokenizer's arguments (the merges recovered from the pieces in C).
function fromLlama2c(core, what, u8) {
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  if (u8.length < 4) fail(`${what}: ${u8.length} bytes is too short for llama2.c's tokenizer.bin`);
  refuseJsonTokenizer(what, u8, 'give its text or its object, or its bytes without anything before the "{"');
  const pieces = [];
  for (let at = 4; at < u8.length;) {
    if (at + 8 > u8.length) fail(`${what}: the file ends inside the header of piece ${pieces.length}`);
    const len = dv.getInt32(at + 4, true);
    if (len < 0 || at + 8 + len > u8.length) fail(`${what}: piece ${pieces.length} has length ${len}, past the end of the file`);
    pieces.push(u8.slice(at + 8, at + 8 + len)); // a copy: bytesOf gives a plain Uint8Array, never a Buffer
    at += 8 + len;
  }
  if (pieces.length < FIRST_MERGE) fail(`${what}: the file holds ${pieces.length} pieces; a byte-level BPE's has at least ${FIRST_MERGE} (<unk>, <s>, </s> and the 256 bytes)`);
  // the specials as tokenizer.json spells them
  for (let i = 0; i < FIRST_BYTE; i++) pieces[i] = utf8.encode(SPECIALS[i]);
  const offsets = new Uint32Array(pieces.length + 1);
  pieces.forEach((p, i) => { offsets[i + 1] = offsets[i] + p.length; });
  const all = new Uint8Array(offsets[pieces.length]);
  pieces.forEach((p, i) => all.set(p, offsets[i]));
  const nMerges = pieces.length - FIRST_MERGE;
  const merges = core.withBuffers(what, [
    { name: 'merges', bytes: 12 * nMerges }, { name: 'pieces', bytes: all.length, from: all },
    { name: 'offsets', bytes: offsets.byteLength, from: offsets },
  ], ([m, p, o]) => {
    core.check(core.exports.aw_bpe_merges_of_pieces(m, p, o, pieces.length), what);
    return new Int32Array(core.memory.buffer.slice(m, m + 12 * nMerges));
  });
  return { pieces, byteIds: Int32Array.from({ length: 256 }, (_, b) => b + FIRST_BYTE), merges };
}

/**
 * A tokenizer.json with a part this library's own writer never writes (added tokens, a normalizer,
 * a post-processor, a pre-tokenizer other than ByteLevel, byte fallback, ignore_merges): Hugging
 * Face's families (GPT-2, Llama 2/3, Qwen, Gemma), which hf-tokenizer.js reads. Everything else
 * stays with the C reader, its checks and its messages.
 */
function isForeignJSON(json) {
  const m = json.model, pre = json.pre_tokenizer;
  return (Array.isArray(json.added_tokens) && json.added_tokens.length > 0) || (json.normalizer ?? null) !== null ||
    (json.post_processor ?? null) !== null || ['Sequence', 'Split', 'Metaspace'].includes(pre?.type) ||
    m?.byte_fallback === true || m?.ignore_merges === true;
}

/** lib.trainTokenizer and lib.loadTokenizer. */
export function bpeMethods(core) {
  // trainTokenizer's vocabSize range, read from the C that checks it (aw_bpe_train_text)
  const VOCAB = Object.freeze({ min: core.exports.aw_bpe_vocab_min(), max: core.exports.aw_bpe_vocab_max(), default: 512 });
  return {
    /** trainTokenizer's vocabSize range and default, from the C trainer: { min: 259, max: 8192, default: 512 }. */
    tokenizerVocabSize: VOCAB,
    /**
     * A byte-level BPE trained on text (a string, or a Uint8Array of bytes): 3 specials, 256
     * bytes, then merges by pair count until vocabSize pieces (259..8192; default 512), or fewer
     * when the text has no pair left to merge.
     */
    trainTokenizer(text, opts = {}) {
      const what = 'trainTokenizer';
      checkKeys(what, opts, ['vocabSize']);
      const bytes = textBytes(what, text);
      const vocabSize = opts.vocabSize ?? VOCAB.default;
      // C checks [VOCAB.min, VOCAB.max] (aw_bpe_train_text); here only that the number reaches it as itself
      checkInt(`${what}: vocabSize`, vocabSize, INT32_MIN, INT32_MAX, { expected: 'an integer', accepted: `an integer in [${VOCAB.min}, ${VOCAB.max}]` });
      const cap = Math.max(0, Math.min(vocabSize, VOCAB.max) - FIRST_MERGE); // C checks the range
      const pairs = core.withBuffers(what, [
        { name: 'merges', bytes: 8 * cap }, { name: 'count', bytes: 4 }, { name: 'text', bytes: bytes.length, from: bytes },
      ], ([m, count, t]) => {
        core.check(core.exports.aw_bpe_train_text(m, count, t, bytes.length, vocabSize), what);
        const n = core.i32[count >> 2];
        return new Int32Array(core.memory.buffer.slice(m, m + 8 * n));
      });
      const pieces = [...SPECIALS.map((s) => utf8.encode(s)), ...Array.from({ length: 256 }, (_, b) => Uint8Array.of(b))];
      const merges = new Int32Array(pairs.length / 2 * 3);
      for (let r = 0; r < pairs.length / 2; r++) {
        const a = pairs[2 * r], b = pairs[2 * r + 1];
        merges.set([a, b, FIRST_MERGE + r], 3 * r);
        pieces.push(concat(pieces[a], pieces[b]));
      }
      return makeTokenizer(core, pieces, Int32Array.from({ length: 256 }, (_, b) => b + FIRST_BYTE), merges);
    },
    /**
     * A tokenizer read back: a tokenizer.json (an object, its text, or its bytes) or llama2.c's
     * tokenizer.bin (bytes) of a byte-level BPE. opts.trustPatterns: a Hugging Face file's split
     * patterns that hf-tokenizer.js does not know run (with a bound on their work) instead of being refused.
     */
    loadTokenizer(source, opts = {}) {
      const what = 'loadTokenizer';
      checkKeys(what, opts, ['trustPatterns']);
      let json = null;
      const u8 = asBytes(source);
      if (u8) {
        const at = jsonStart(u8);
        if (at < 0 || u8[at] !== 123) { // not "{" (after a byte-order mark): llama2.c's tokenizer.bin
          const { pieces, byteIds, merges } = fromLlama2c(core, `${what} (tokenizer.bin)`, u8);
          return makeTokenizer(core, pieces, byteIds, merges);
        }
        source = new TextDecoder().decode(u8.subarray(at));
      }
      if (typeof source === 'string') {
        if (source.charCodeAt(0) === 0xfeff) source = source.slice(1); // a byte-order mark: not part of the JSON
        try {
          json = JSON.parse(source);
        } catch (e) {
          fail(`${what}: the text is not JSON (${e.message}); expected a tokenizer.json`);
        }
      } else if (source !== null && typeof source === 'object' && !Array.isArray(source)) json = source;
      if (json === null || typeof json !== 'object' || Array.isArray(json))
        fail(`${what}: source must be a tokenizer.json (object, text or bytes) or tokenizer.bin bytes, got ${describe(source)}`);
      if (isForeignJSON(json)) return hfTokenizerFrom(what, json, undefined, opts);
      const { pieces, byteIds, merges } = fromJSON(`${what} (tokenizer.json)`, json);
      return makeTokenizer(core, pieces, byteIds, merges);
    },
  };
}
