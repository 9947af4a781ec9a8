// generate-stream.test.js: model.startGeneration (wasm/model.js; C: model_generation_begin / next /
// end in src/model/generate.c, exported as aw_generation_* by src/api/api_model.c).
//   - the tokens of next(1) calls, and of next(5) chunks, put together equal generate()'s with the same
//     options, bit for bit: every shipped model (web/models), greedy and sampled (seed, temperature,
//     topK), with a stop token, up to maxLen, with and without the cache; a Llama-shaped model read by
//     loadHuggingFace, the same quantized (q8_0); the encoder-decoder, gru and gru-attention archs
//   - done and stopReason say why it ended ('stop', 'maxTokens', 'maxLen'); next then returns nothing
//   - two sessions on one model, their next calls interleaved (and a forward between), each make
//     generate()'s tokens: a session keeps its own caches
//   - next after dispose, after model.dispose, after trainStep / quantize / setAttentionOptions /
//     sampleVocab is an Error that says which; dispose twice is fine; bad arguments are Errors naming them
//   - the heap returns to its level after dispose and after model.dispose of a model with open sessions
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { loadAttention } from '../../wasm/index.js';
import { expectError } from './helpers.js';

const lib = await loadAttention();
const ex = lib[Symbol.for('attention-wasm.exports')];
const MODELS = new URL('../../web/models/', import.meta.url);
const SHIPPED = readdirSync(MODELS).filter((f) => f.endsWith('.safetensors')).sort();
const load = (file) => lib.loadModel(readFileSync(new URL(file, MODELS)), { training: false });
const arr = (a) => Array.from(a);

// A prompt of n ids in [1, vocab) drawn from a seed (never 0, so a stop token of 0 is not in it).
function prompt(vocab, n, seed) {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => 1 + ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8) % (vocab - 1));
}

// Runs a session to its end with next(step) and checks each chunk, done and stopReason on the way.
function stepped(model, p, opts, step) {
  const g = model.startGeneration(p, opts);
  const out = [];
  assert.equal(g.stopReason, null);
  for (let i = 0; !g.done; i++) {
    const chunk = g.next(step);
    assert.ok(chunk instanceof Int32Array);
    assert.ok(chunk.length >= 1 && chunk.length <= step, `chunk ${i}: ${chunk.length} tokens for next(${step})`);
    if (!g.done) assert.equal(chunk.length, step, 'a chunk short of count only at the end');
    out.push(...chunk);
    assert.deepEqual(arr(g.tokens), out, 'tokens: all made so far');
    assert.ok(i < 1 << 12, 'it ends');
  }
  assert.equal(g.next(3).length, 0, 'nothing after the end');
  const reason = g.stopReason;
  g.dispose();
  return { tokens: out, reason };
}

// The reason generate's tokens imply for these options (what the session must report).
function expectedReason(model, p, opts, tokens) {
  const maxTokens = opts.maxTokens ?? 16;
  if (opts.stop !== undefined && tokens.at(-1) === opts.stop) return 'stop';
  if (tokens.length === maxTokens) return 'maxTokens';
  assert.equal(p.length + tokens.length, model.config.maxLen + 1, 'generate stopped at maxLen');
  return 'maxLen';
}

// next(1) and next(5) against generate for each option set; returns how many cases ran.
function checkModel(name, model, cases) {
  for (const [label, p, opts] of cases) {
    const want = arr(model.generate(p, opts));
    for (const step of [1, 5]) {
      const got = stepped(model, p, opts, step);
      assert.deepEqual(got.tokens, want, `${name}, ${label}, next(${step}): generate's tokens`);
      assert.equal(got.reason, expectedReason(model, p, opts, want), `${name}, ${label}, next(${step}): stopReason`);
    }
  }
}

// The option sets: greedy; sampled; a stop token the model does make; up to maxLen; without the cache.
function casesFor(model, src) {
  const c = model.config, V = c.vocab, L = c.maxLen;
  const base = src ? { source: src } : {};
  const p = src ? [0] : prompt(V, Math.min(6, L - 1), 11);
  const sampled = { ...base, maxTokens: 12, temperature: 0.9, topK: Math.min(5, V), seed: 7 };
  const free = model.generate(p, sampled);
  const out = [
    ['greedy', p, { ...base, maxTokens: 10 }],
    ['sampled', p, sampled],
    ['sampled, all tokens', p, { ...base, maxTokens: 9, temperature: 1.3, seed: 3 }],
    // the fourth sampled token as the stop token: it ends there (or earlier, where it came before)
    ['stop token', p, { ...sampled, stop: free[Math.min(3, free.length - 1)] }],
    ['to maxLen', p, { ...base, maxTokens: L + 4, temperature: 0.7, seed: 5 }],
    ['a one-token prompt', src ? p : p.slice(0, 1), { ...base, maxTokens: 4 }],
  ];
  out.push(['cache: false', p, { ...base, maxTokens: 6, temperature: 0.8, seed: 9, cache: false }]);
  return out;
}

test('next(1) and next(5) make generate\'s tokens on every shipped model', () => {
  assert.ok(SHIPPED.length >= 40, `the shipped models (${SHIPPED.length})`);
  for (const file of SHIPPED) {
    const m = load(file);
    checkModel(file, m, casesFor(m));
    m.dispose();
  }
});

test('a maxLen prompt: one token, then maxLen; maxTokens 0: done at once', () => {
  const m = load('chars-softmax.safetensors');
  const L = m.config.maxLen, p = prompt(m.config.vocab, L, 4);
  const g = m.startGeneration(p, { maxTokens: 5 });
  assert.deepEqual(arr(g.next(5)), arr(m.generate(p, { maxTokens: 5 })));
  assert.equal(g.tokens.length, 1);
  assert.equal(g.stopReason, 'maxLen');
  g.dispose();
  const z = m.startGeneration(p.slice(0, 3), { maxTokens: 0 });
  assert.equal(z.done, true);
  assert.equal(z.stopReason, 'maxTokens');
  assert.equal(z.next().length, 0);
  z.dispose();
  m.dispose();
});

// A Llama-shaped model (grouped-query heads, RoPE, RMSNorm, SwiGLU) written and read back as Hugging
// Face files, float32 and quantized.
const LLAMA = { vocab: 60, dModel: 32, dFF: 64, heads: 4, kvHeads: 2, layers: 2, maxLen: 24, seed: 7, block: 'llama' };
function llamaFiles() {
  const made = lib.createModel(LLAMA, { training: false });
  const files = made.saveHuggingFace();
  made.dispose();
  return files;
}

test('loadHuggingFace Llama and its q8_0 quantization: next equals generate', () => {
  const files = llamaFiles();
  const m = lib.loadHuggingFace(files);
  checkModel('llama', m, casesFor(m));
  m.quantize('q8_0');
  checkModel('llama q8_0', m, casesFor(m));
  m.dispose();
  const q = lib.loadHuggingFace({ ...files, quantize: 'q8_0' });
  checkModel('llama loaded q8_0', q, casesFor(q));
  q.dispose();
});

test('encoder-decoder, gru and gru-attention: next equals generate with a source', () => {
  for (const arch of ['encoder-decoder', 'gru', 'gru-attention']) {
    const shape = arch === 'encoder-decoder' ? { heads: 2, layers: 2, dFF: 32 } : { layers: 1 };
    const m = lib.createModel({ vocab: 20, dModel: 16, maxLen: 12, seed: 3, arch, ...shape });
    for (let s = 0; s < 5; s++) m.trainStep({ task: 'reverse', length: 5, batchSize: 4, lr: 1e-2 }); // logits not flat
    checkModel(arch, m, casesFor(m, prompt(20, 6, 2)));
    m.dispose();
  }
});

test('two sessions on one model, interleaved (and other calls between): each makes generate\'s tokens', () => {
  for (const file of ['chars-softmax.safetensors', 'chars-gla.safetensors', 'chars-nsa.safetensors', 'chars-dsa.safetensors',
    'chars-mla.safetensors', 'chars-local.safetensors', 'chars-synth-dense.safetensors', 'fortunes-llama.safetensors']) {
    const m = load(file), V = m.config.vocab;
    const pa = prompt(V, 5, 1), pb = prompt(V, 9, 2);
    const oa = { maxTokens: 14, temperature: 0.8, seed: 4 }, ob = { maxTokens: 11 };
    const wantA = arr(m.generate(pa, oa)), wantB = arr(m.generate(pb, ob));
    const a = m.startGeneration(pa, oa), b = m.startGeneration(pb, ob);
    const gotA = [], gotB = [];
    while (!a.done || !b.done) {
      gotA.push(...a.next(1));
      m.forward(prompt(V, 7, gotA.length)); // other work on the model between tokens
      gotB.push(...b.next(2));
      m.generate(pb, { maxTokens: 2 });
    }
    assert.deepEqual(gotA, wantA, `${file}: the first session`);
    assert.deepEqual(gotB, wantB, `${file}: the second session`);
    a.dispose(), b.dispose();
    m.dispose();
  }
});

test('next after dispose or model.dispose is an Error naming which; dispose twice is fine', () => {
  const m = load('chars-softmax.safetensors');
  const g = m.startGeneration([1, 2, 3], { maxTokens: 8 });
  g.next();
  g.dispose();
  g.dispose();
  expectError(() => g.next(), /next: this generation was disposed/);
  const h = m.startGeneration([1, 2, 3], { maxTokens: 8 });
  h.next(2);
  m.dispose();
  expectError(() => h.next(), /next: this generation's model was disposed/);
  h.dispose(); // after its model's dispose: nothing left to free, no Error
  assert.equal(h.tokens.length, 2);
  expectError(() => m.startGeneration([1]), /startGeneration: this model was disposed/);
});

test('next after the model changed (trainStep, quantize, setAttentionOptions, sampleVocab) is an Error', () => {
  const changed = /next: the model changed since this generation began.*start a new generation/;
  const t = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 1, dFF: 32, maxLen: 16, seed: 1 });
  const g = t.startGeneration([1, 2], { maxTokens: 8 });
  g.next();
  t.trainStep({ task: 'copy', length: 4, batchSize: 2 });
  expectError(() => g.next(), changed);
  expectError(() => g.next(), changed); // still
  g.dispose();
  const fresh = t.startGeneration([1, 2], { maxTokens: 3 }); // a new one runs on the new weights
  assert.deepEqual(arr(fresh.next(3)), arr(t.generate([1, 2], { maxTokens: 3 })));
  fresh.dispose();
  t.dispose();

  const q = load('chars-softmax.safetensors');
  const gq = q.startGeneration([1, 2], { maxTokens: 8 });
  gq.next();
  q.quantize('q8_0');
  expectError(() => gq.next(), changed);
  const gv = q.startGeneration([1, 2], { maxTokens: 8 });
  q.sampleVocab = 20;
  expectError(() => gv.next(), changed);
  q.dispose();

  const d = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 1, dFF: 32, maxLen: 16, seed: 1, attention: 'dsa',
    attentionOptions: { stage: 'warmup' } });
  const gd = d.startGeneration([1, 2], { maxTokens: 8 });
  d.setAttentionOptions({ stage: 'sparse' });
  expectError(() => gd.next(), changed);
  d.dispose();
});

test('bad arguments are Errors naming them', () => {
  const m = load('chars-softmax.safetensors');
  const g = m.startGeneration([1, 2], { maxTokens: 8 });
  for (const bad of [0, -1, 1.5, NaN, '2', 2 ** 31]) expectError(() => g.next(bad), /next: count must be a positive integer/);
  assert.equal(g.tokens.length, 0, 'a refused next makes nothing');
  assert.equal(g.next().length, 1, 'and the session goes on');
  g.dispose();
  expectError(() => m.startGeneration([1, 2], { window: 8 }), /startGeneration: window and sinks .* generate's own path/);
  expectError(() => m.startGeneration([1, 2], { sinks: 2 }), /startGeneration: window and sinks/);
  expectError(() => m.startGeneration([1, 2], { maxTokens: -1 }), /startGeneration: maxTokens must be an integer >= 0/);
  expectError(() => m.startGeneration([1, 2], { temperature: -1 }), /startGeneration: temperature must be >= 0/);
  expectError(() => m.startGeneration([1, 2], { topK: 1e9 }), /topK must be an integer in \[0, vocab/);
  expectError(() => m.startGeneration([1, 2], { stop: 1e6 }), /startGeneration: stop must be a token id/);
  expectError(() => m.startGeneration([1, 2], { colour: 1 }), /startGeneration: .*colour/);
  expectError(() => m.startGeneration([1, 1e6]), /prompt\[1\] is 1000000, outside the vocabulary/);
  expectError(() => m.startGeneration([]), /startGeneration: prompt/);
  expectError(() => m.startGeneration([1], { source: [1] }), /startGeneration: source is for models with an encoder/);
  m.dispose();
});

test('the heap returns to its level after dispose and after model.dispose with open sessions', () => {
  const bytes = readFileSync(new URL('chars-softmax.safetensors', MODELS));
  const m = lib.loadModel(bytes, { training: false });
  const p = prompt(m.config.vocab, 6, 3);
  m.generate(p, { maxTokens: 20 }); // the model's activations grow once, as they would for generate
  m.generate(p, { maxTokens: 4, cache: false });
  const before = ex.aw_heap_in_use();
  for (const cache of [true, false]) {
    const g = m.startGeneration(p, { maxTokens: 20, cache });
    g.next(3);
    assert.ok(ex.aw_heap_in_use() > before, 'a session holds memory');
    g.dispose();
    assert.equal(ex.aw_heap_in_use(), before, `cache: ${cache}: the session's bytes are freed`);
  }
  m.dispose();
  const level = ex.aw_heap_in_use();
  const n = lib.loadModel(bytes, { training: false });
  n.startGeneration(p).next();
  n.startGeneration(p, { temperature: 1 });
  n.dispose();
  assert.equal(ex.aw_heap_in_use(), level, 'model.dispose frees its open sessions');
});
