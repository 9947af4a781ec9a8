// bytes-containers.test.js: every entry point of the library that takes a file's bytes gives the
// same result whatever holds them (issue 55): a plain Uint8Array, an ArrayBuffer, a Node Buffer from
// readFileSync, a Buffer at a nonzero offset of a shared ArrayBuffer (as Node's 8 KiB pool places
// small ones: Buffer.from(arr)), and a Uint8Array or Buffer subarray at an odd offset. A Buffer's
// slice shares memory where a Uint8Array's copies, so a reader that slices sees the whole pool or
// file; and one that keeps a view of the caller's memory changes when the caller reuses it: each
// container is overwritten after loading and the loaded object must not change.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builds } from './helpers.js';

const { lib } = builds[0];
const dir = mkdtempSync(join(tmpdir(), 'aw-bytes-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const JUNK = 0xab; // the bytes around and, after loading, over each container's own
// A larger ArrayBuffer full of junk with the file at `at`: its view is how a small Buffer sits in Node's pool.
function inside(bytes, at, make) {
  const whole = make(bytes.length + at + 8).fill(JUNK);
  whole.set(bytes, at);
  return whole.subarray(at, at + bytes.length);
}
const CONTAINERS = {
  'Uint8Array': (b) => Uint8Array.from(b),
  'ArrayBuffer': (b) => Uint8Array.from(b).buffer,
  'Buffer from readFileSync': (b) => { const f = join(dir, `file-${files++}`); writeFileSync(f, b); return readFileSync(f); },
  'pooled Buffer (Buffer.from)': (b) => {
    // Node pools a Buffer.from of under 4 KiB at an offset of its 8 KiB pool; a larger file is put at
    // an offset of a larger buffer by hand, the same situation
    const buf = b.length < Buffer.poolSize >>> 1 ? Buffer.from(b) : inside(b, 8, (n) => Buffer.alloc(n));
    if (buf.byteOffset === 0) Buffer.from([1]); // the pool's first slot: take the next one
    return buf.byteOffset > 0 ? buf : Buffer.from(b);
  },
  'Uint8Array subarray at an odd offset': (b) => inside(b, 3, (n) => new Uint8Array(n)),
  'Buffer subarray at an odd offset': (b) => inside(b, 3, (n) => Buffer.alloc(n)),
};

// ---- the files --------------------------------------------------------------------------------

const model = lib.createModel({ vocab: 20, dModel: 16, heads: 2, layers: 1, maxLen: 8, block: 'llama', seed: 7 });
const IDS = [1, 5, 3, 9, 2];
const PIECES = ['<unk>', '<s>', '</s>', ' ', 'ab', ...'abcdefghijklmno'];
const FILES = {
  v0: model.saveLlama2c(),
  v2: model.saveLlama2c({ version: 2, groupSize: 16 }),
  v1: (() => { // export.py's version 1 (float32 with the "ak42" header), which this library refuses by name
    const b = new Uint8Array(256 + 64), dv = new DataView(b.buffer);
    dv.setUint32(0, 0x616b3432, true), dv.setInt32(4, 1, true);
    [16, 16, 1, 2, 2, 20, 8].forEach((v, i) => dv.setInt32(8 + 4 * i, v, true));
    return b;
  })(),
  tokenizerBin: lib.writeLlama2cTokenizer(PIECES, PIECES.map((p) => p.length)),
  checkpoint: model.save(),
  sae: (() => { const s = lib.createSAE({ dIn: 6, dSae: 16, k: 2, seed: 3 }); s.trainStep(Float32Array.from({ length: 24 }, (_, i) => Math.sin(i))); const b = s.save(); s.free(); return b; })(),
  hf: model.saveHuggingFace(),
  bpe: (() => {
    const tok = lib.trainTokenizer('the cat sat on the mat; the cat ate the rat. '.repeat(8), { vocabSize: 270 });
    return { json: new TextEncoder().encode(JSON.stringify(tok.toJSON())), bin: tok.toLlama2c() };
  })(),
  index: new TextEncoder().encode(JSON.stringify({ metadata: { total_size: 9 }, weight_map: { 'lm_head.weight': 'model-00001-of-00002.safetensors' } })),
};
model.dispose();

// What a model computes, what a tokenizer does, as plain values to compare.
const logits = (m) => Array.from(m.forward(IDS).logits);
const llamaTokenizer = (t) => ({ pieces: t.pieces, scores: Array.from(t.scores), ids: Array.from(t.encode('abc ab fab')) });
const bpeTokenizer = (t) => ({ ids: Array.from(t.encode('the rat sat')), text: t.decode(t.encode('the rat sat')), piece: Array.from(t.pieceBytes(t.vocabSize - 1)) });
const dispose = (x) => x?.dispose?.();

// Each entry point: load(wrap) gives the loaded object (wrap puts a file in the container under
// test), read(loaded) what it computes; an Error's message is the result when load throws.
const ROWS = [
  { name: 'sniffModelFile, llama2.c v0', load: (w) => lib.sniffModelFile(w(FILES.v0)), read: (x) => x },
  { name: 'sniffModelFile, llama2.c v2', load: (w) => lib.sniffModelFile(w(FILES.v2)), read: (x) => x },
  { name: 'sniffModelFile, tokenizer.bin', load: (w) => lib.sniffModelFile(w(FILES.tokenizerBin)), read: (x) => x },
  { name: 'sniffModelFile, safetensors', load: (w) => lib.sniffModelFile(w(FILES.checkpoint)), read: (x) => x },
  { name: 'sniffModelFile, model.safetensors.index.json', load: (w) => lib.sniffModelFile(w(FILES.index)), read: (x) => x },
  { name: 'loadLlama2c, version 0', load: (w) => lib.loadLlama2c(w(FILES.v0)), read: logits },
  { name: 'loadLlama2c, version 1 (refused)', load: (w) => lib.loadLlama2c(w(FILES.v1)), read: logits },
  { name: 'loadLlama2c, version 2', load: (w) => lib.loadLlama2c(w(FILES.v2)), read: logits },
  { name: 'loadLlama2c\'s tokenizer.bin reader', load: (w) => lib.loadLlama2c(FILES.v0, { tokenizer: w(FILES.tokenizerBin) }), read: (m) => llamaTokenizer(m.tokenizer) },
  { name: 'loadSAE', load: (w) => lib.loadSAE(w(FILES.sae)), read: (s) => Object.fromEntries(Object.entries(s.params()).map(([k, v]) => [k, Array.from(v)])) },
  { name: 'loadModel', load: (w) => lib.loadModel(w(FILES.checkpoint), { training: false }), read: logits },
  { name: 'loadTokenizer, tokenizer.json bytes', load: (w) => lib.loadTokenizer(w(FILES.bpe.json)), read: bpeTokenizer },
  { name: 'loadTokenizer, its own tokenizer.bin (toLlama2c)', load: (w) => lib.loadTokenizer(w(FILES.bpe.bin)), read: bpeTokenizer },
  { name: 'loadHuggingFace, model.safetensors', load: (w) => lib.loadHuggingFace({ config: FILES.hf.config, weights: w(FILES.hf.weights), maxLen: 8 }), read: logits },
];

// load then read, or the Error's message
function run(row, wrap) {
  let loaded;
  try {
    loaded = row.load(wrap);
  } catch (e) {
    return { loaded: null, result: { error: e.message } };
  }
  return { loaded, result: row.read(loaded) };
}

for (const row of ROWS) {
  test(`bytes containers: ${row.name} gives the same for every container`, row.todo ? { todo: row.todo } : {}, () => {
    const reference = run(row, (b) => Uint8Array.from(b));
    dispose(reference.loaded);
    if (!row.name.includes('refused')) assert.equal(reference.result.error, undefined, `the Uint8Array loads: ${reference.result.error}`);
    for (const [label, make] of Object.entries(CONTAINERS)) {
      const made = [];
      const wrap = (b) => { const c = make(b); made.push(c); return c; };
      const { loaded, result } = run(row, wrap);
      try {
        assert.deepEqual(result, reference.result, `${label}`);
        // the caller reuses its memory (a pooled Buffer's slot, a read buffer): what was loaded stays
        for (const c of made) new Uint8Array(c instanceof ArrayBuffer ? c : c.buffer, c.byteOffset ?? 0, c.byteLength).fill(JUNK);
        if (loaded) assert.deepEqual(row.read(loaded), reference.result, `${label}, after its bytes were overwritten`);
      } finally {
        dispose(loaded);
      }
    }
  });
}
