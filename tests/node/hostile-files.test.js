// hostile-files.test.js: files and arguments that lie (issue 55). Every size a llama2.c header
// (versions 0 and 2) or an SAE's metadata states is checked against the file's own length before
// anything is built from it; a missing SAE tensor is named; sniffModelFile's size,
// writeLlama2cTokenizer's scores, trainSAE's ids, runWithHooks' scale heads and the signals of
// quantizedCopy and train are checked, each an Error naming the argument, the library usable after.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { builds, expectError } from './helpers.js';

const { lib } = builds[0];
const LLAMA = { vocab: 20, dModel: 16, heads: 2, layers: 2, maxLen: 8, block: 'llama', seed: 3 };
const HEADER_NAMES = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];

// Each case's loadLlama2c in a worker: a reader that grows a list with n_layers before checking
// it never returns and cannot be interrupted in this thread, so the worker is stopped instead
// (after a minute, or when it passes 512 MB) and the case fails. Resolves to each case's message.
function loadInWorker(cases) {
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.index).then(async ({ loadAttention }) => {
      const lib = await loadAttention();
      for (const bytes of workerData.cases) {
        try { lib.loadLlama2c(bytes).dispose(); parentPort.postMessage('loaded'); } catch (e) { parentPort.postMessage(e.message); }
      }
    });`;
  const worker = new Worker(code, { eval: true, workerData: { index: new URL('../../wasm/index.js', import.meta.url).href, cases },
    resourceLimits: { maxOldGenerationSizeMb: 512 } });
  const got = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { worker.terminate(); reject(new Error(`no answer after ${got.length} of ${cases.length} cases in 60 s: the reader hangs`)); }, 60000);
    worker.on('message', (m) => { got.push(m); if (got.length === cases.length) clearTimeout(timer), worker.terminate(), resolve(got); });
    worker.on('error', (e) => { clearTimeout(timer); reject(new Error(`the worker died after ${got.length} of ${cases.length} cases: ${e.message}`)); });
  });
}

test('hostile files: a llama2.c header with any size at 2^31 - 1 is refused at once, naming it (versions 0 and 2)', async () => {
  const m = lib.createModel(LLAMA);
  const files = { 0: m.saveLlama2c(), 2: m.saveLlama2c({ version: 2, groupSize: 16 }) };
  m.dispose();
  for (const [version, bin] of Object.entries(files)) {
    const first = version === '2' ? 8 : 0; // the sizes follow the magic and version in version 2
    const cases = HEADER_NAMES.map((field, i) => {
      const bad = bin.slice();
      new DataView(bad.buffer).setInt32(first + 4 * i, 2 ** 31 - 1, true);
      return bad;
    });
    const got = await loadInWorker([...cases, bin]);
    HEADER_NAMES.forEach((field, i) => // each field's own refusal, or the byte count the header asks for against the file's
      assert.match(got[i], new RegExp(`^attention-wasm: loadLlama2c: .*(${field}|needs \\d+ bytes and the file has ${bin.length})`), `version ${version}, ${field}`));
    // n_layers in particular says how many layers the bytes hold
    assert.match(got[2], /n_layers is 2147483647 \(\d+ bytes each\) and the file holds 2 layers of these sizes/);
    assert.equal(got[7], 'loaded', `version ${version}: the good file loads after the refusals`);
  }
});

// An SAE file with its safetensors header edited (the data kept as it was).
function editHeader(bytes, edit) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const json = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  edit(json);
  let text = JSON.stringify(json);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const head = new TextEncoder().encode(text), out = new Uint8Array(8 + head.length + bytes.length - 8 - n);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  out.set(bytes.subarray(8 + n), 8 + head.length);
  return out;
}

test('hostile files: loadSAE names a missing tensor, and refuses sizes its bytes do not hold before allocating', () => {
  const sae = lib.createSAE({ dIn: 6, dSae: 16, k: 2 });
  const good = sae.save();
  sae.free();
  for (const name of ['enc.w', 'enc.b', 'dec.w', 'b_pre'])
    expectError(() => lib.loadSAE(editHeader(good, (h) => delete h[name])), new RegExp(`loadSAE: the file has no tensor "${name.replace('.', '\\.')}"`));
  for (const [key, value] of [['d_sae', 2 ** 31 - 1], ['d_in', 2 ** 31 - 1]])
    expectError(() => lib.loadSAE(editHeader(good, (h) => { h.__metadata__[key] = String(value); })),
      new RegExp(`loadSAE: __metadata__'s d_in \\d+ and d_sae \\d+ need \\d+ bytes of float32 parameters and the file has \\d+ bytes in all`));
  const back = lib.loadSAE(good); // still usable
  assert.equal(back.config.dSae, 16);
  back.free();
});

test('hostile files: sniffModelFile refuses a size that is no file length, and knows a model.safetensors.index.json', () => {
  const bytes = new Uint8Array(64);
  for (const size of [NaN, -1, 1.5, '100', 63, Infinity])
    expectError(() => lib.sniffModelFile(bytes, size), /sniffModelFile: size must be the whole file's length in bytes, an integer >= the 64 bytes given, got /);
  const index = { metadata: { total_size: 123456 }, weight_map: { 'model.embed_tokens.weight': 'model-00001-of-00002.safetensors' } };
  const text = new TextEncoder().encode(JSON.stringify(index, null, 2));
  assert.equal(lib.sniffModelFile(text).format, 'hf-index');
  assert.equal(lib.sniffModelFile(text.subarray(0, text.length - 8), text.length).format, 'hf-index', 'from its opening, with the whole size');
});

test('hostile files: writeLlama2cTokenizer refuses NaN scores and a score list of another length, by name', () => {
  const pieces = ['<unk>', '<s>', '</s>', 'a'];
  expectError(() => lib.writeLlama2cTokenizer(pieces, NaN), /scores must be an array of 4 numbers, one per piece .*got NaN/);
  expectError(() => lib.writeLlama2cTokenizer(pieces, [0, 0, 0]), /scores must be an array of 4 numbers, one per piece/);
  expectError(() => lib.writeLlama2cTokenizer(pieces, [0, 0, 0, 0, 0]), /scores must be an array of 4 numbers, one per piece/);
  expectError(() => lib.writeLlama2cTokenizer(pieces, [0, NaN, 0, 0]), /scores\[1\] is NaN; scores must be numbers finite in float32/);
  assert.equal(lib.writeLlama2cTokenizer(pieces).length, lib.writeLlama2cTokenizer(pieces, [0, 0, 0, 0]).length);
});

test('hostile files: trainSAE takes integer ids in [0, vocab) only, from ids or a tokenizer', async () => {
  const model = lib.createModel({ vocab: 16, dModel: 8, heads: 2, layers: 1, maxLen: 8, seed: 1 });
  const opts = { model, hook: 'blocks.0.hook_resid_post', dSae: 16, k: 2, steps: 1, batch: 2 };
  await assert.rejects(lib.trainSAE({ ...opts, ids: [1, 1.5, 2] }), /trainSAE: ids\[1\] is 1\.5; expected an integer token id in \[0, 16\)/);
  await assert.rejects(lib.trainSAE({ ...opts, ids: [1, 16] }), /trainSAE: ids\[1\] is 16; expected an integer token id in \[0, 16\)/);
  await assert.rejects(lib.trainSAE({ ...opts, ids: Int32Array.of(3, -1) }), /trainSAE: ids\[1\] is -1/);
  const tokenizer = { encode: () => [1, 2, 40] };
  await assert.rejects(lib.trainSAE({ ...opts, text: 'x', tokenizer }), /trainSAE: tokenizer\.encode\(text\)\[2\] is 40; expected an integer token id in \[0, 16\)/);
  const sae = await lib.trainSAE({ ...opts, ids: [1, 2, 3] }); // still usable
  assert.equal(sae.steps, 1);
  sae.free();
  model.dispose();
});

test('hostile files: trainSAE stops with an Error when onProgress disposes its model', async () => {
  // windows of 64 rows and batches of 2: one window feeds 32 steps, so rows were left over when
  // the model went away, and training on them would not touch the model
  const model = lib.createModel({ vocab: 16, dModel: 8, heads: 2, layers: 1, maxLen: 64, seed: 1 });
  const ids = Array.from({ length: 64 }, (_, i) => (i * 5) % 16);
  const seen = [];
  await assert.rejects(lib.trainSAE({ model, hook: 'blocks.0.hook_resid_post', ids, dSae: 16, k: 2, steps: 20, batch: 2,
    onProgress: ({ step }) => { seen.push(step); if (step === 10) model.dispose(); } }),
  /trainSAE: the model was disposed during training, after step 10 of 20/);
  assert.deepEqual(seen, [10], 'no step after the disposal');
  const other = lib.createModel({ vocab: 16, dModel: 8, heads: 2, layers: 1, maxLen: 8, seed: 1 }); // still usable
  const sae = await lib.trainSAE({ model: other, hook: 'blocks.0.hook_resid_post', ids, dSae: 16, k: 2, steps: 2, batch: 2 });
  assert.equal(sae.steps, 2);
  sae.free();
  other.dispose();
});

test('hostile files: runWithHooks refuses a head or position that scale or add lists twice, naming it', () => {
  const model = lib.createModel({ vocab: 16, dModel: 16, heads: 4, layers: 1, maxLen: 8, block: 'llama', seed: 2 });
  const IDS = [1, 2, 3, 4];
  expectError(() => model.runWithHooks(IDS, { scale: [{ name: 'blocks.0.attn.hook_z', heads: [1, 3, 1], factor: 2 }] }),
    /runWithHooks: scale\[0\]: heads\[0\] and heads\[2\] are both 1: list each once/);
  expectError(() => model.runWithHooks(IDS, { scale: [{ name: 'hook_embed', positions: [2, 2], factor: 2 }] }),
    /runWithHooks: scale\[0\]: positions\[0\] and positions\[1\] are both 2/);
  expectError(() => model.runWithHooks(IDS, { add: [{ name: 'blocks.0.attn.hook_z', heads: [0, 0], vector: new Float32Array(16) }] }),
    /runWithHooks: add\[0\]: heads\[0\] and heads\[1\] are both 0/);
  const once = model.runWithHooks(IDS, { scale: [{ name: 'blocks.0.attn.hook_z', heads: [1, 3], factor: 2 }] }); // still usable
  assert.equal(once.logits.length, IDS.length * 16);
  model.dispose();
});

test('hostile files: quantizedCopy and train take a real AbortSignal only', async () => {
  const model = lib.createModel({ vocab: 16, dModel: 16, heads: 2, layers: 1, maxLen: 8, seed: 2 });
  for (const signal of [{ aborted: false }, { aborted: false, reason: undefined, addEventListener() {} }, null]) {
    await assert.rejects(model.quantizedCopy('q8_0', { signal }), /quantizedCopy: signal must be an AbortSignal, got /);
    await assert.rejects(model.train({ steps: 1, task: 'copy', length: 3, symbols: 5, signal }), /train: signal must be an AbortSignal, got /);
  }
  const copy = await model.quantizedCopy('q8_0', { signal: new AbortController().signal }); // a real one is taken
  assert.equal(copy.weightBytes.format, 'q8_0');
  copy.dispose();
  await model.train({ steps: 1, task: 'copy', length: 3, symbols: 5, signal: AbortSignal.timeout(60000) });
  assert.equal(model.steps, 1);
  model.dispose();
});

// lib.loadModel (the C reader) names a file's faults as the file's: JSON text given as a checkpoint
// (it would read as a header length of 7e18 bytes), and a NaN or Infinity among the weights, which
// forward would otherwise report as "the parameters have diverged". loadLlama2c goes through it too.
test('loadModel: JSON text is named as JSON, and a non-finite weight as the file\'s, by its tensor', () => {
  const m = lib.createModel({ vocab: 32, dModel: 16, heads: 2, layers: 1, maxLen: 8, block: 'llama' });
  const file = m.save(), bin = m.saveLlama2c();
  m.dispose();
  const index = new TextEncoder().encode(JSON.stringify({ metadata: { total_size: 1 }, weight_map: { 'lm_head.weight': 'model-00001-of-00002.safetensors' } }));
  expectError(() => lib.loadModel(index), /loadModel: the bytes are JSON text.*model\.safetensors\.index\.json/);
  const n = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
  for (const bad of [NaN, Infinity]) {
    const f = file.slice();
    new DataView(f.buffer).setFloat32(8 + n + 4 * 5, bad, true);
    expectError(() => lib.loadModel(f), new RegExp(`tensor \\S+ holds ${String(bad).toLowerCase().slice(0, 3)}.*must be finite`));
    const b = (bin.model ?? bin).slice();
    new DataView(b.buffer).setFloat32(28 + 4 * 5, bad, true);
    expectError(() => lib.loadLlama2c(b), /holds .*must be finite/);
  }
  assert.ok(lib.loadModel(file).generate([1, 2], { maxTokens: 2 }).length > 0, 'the library still loads a good file');
});
