// The tiny Transformer through the wasm wrapper (lib.createModel / lib.loadModel), on both builds:
// argument errors, gradient checks for every attention form, native vs wasm loss curves, the
// safetensors round trip, cached vs full generation, and training reverse to >= 99%.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { TOL, builds, expectError } from './helpers.js';

const small = { vocab: 12, dModel: 8, heads: 2, layers: 2, dFF: 12, maxLen: 8, seed: 5 };

// Every attention form the model wires in, as createModel configs (over `small`).
const FORMS = [
  { attention: 'softmax' },
  { attention: 'softmax', norm: 'post', positional: 'learned' },
  { attention: 'softmax', arch: 'encoder-decoder' },
  { attention: 'local', attentionOptions: { window: 3 } },
  { attention: 'local', attentionOptions: { window: 2 }, arch: 'encoder-decoder', norm: 'post' },
  { attention: 'strided', attentionOptions: { window: 2, stride: 3 } },
  { attention: 'strided', attentionOptions: { window: 2, stride: 2 }, arch: 'encoder-decoder' },
  { attention: 'linear:elu+1' },
  { attention: 'linear:relu' },
  { attention: 'linear:taylor' },
  { attention: 'linear:elu+1', arch: 'encoder-decoder', norm: 'post' },
  { attention: 'linear:relu', arch: 'encoder-decoder' },
  { attention: 'linear:taylor', arch: 'encoder-decoder', positional: 'learned' },
  { attention: 'synth:dense' },
  { attention: 'synth:random' },
  { attention: 'synth:random', attentionOptions: { trainable: false } },
  { attention: 'synth:factorized-dense' },
  { attention: 'synth:factorized-random', attentionOptions: { k: 3 } },
  { attention: 'synth:mixture', attentionOptions: { components: ['random', 'dot'] } },
  { attention: 'synth:mixture', attentionOptions: { components: ['dense', 'factorized-random'], k: 2 } },
  { attention: 'synth:dense', arch: 'encoder-decoder' },
  { attention: 'retention' },
  { attention: 'retention', attentionOptions: { decay: 'learned' }, arch: 'encoder-decoder' },
  { attention: 'retention', attentionOptions: { decay: 0.8 }, norm: 'post' },
  { attention: 'linformer', attentionOptions: { k: 3 }, arch: 'encoder-decoder' },
  { attention: 'gated' },
  { attention: 'gla' },
  { attention: 'gla', attentionOptions: { mode: 'recurrent' }, norm: 'post' },
  { attention: 'delta' },
  { attention: 'gated-delta', norm: 'post' },
  { attention: 'kda', attentionOptions: { mode: 'recurrent' } },
  { attention: 'kda', attentionOptions: { gateRank: 3 }, norm: 'post' },
  { attention: 'gated', attentionOptions: { mode: 'recurrent' }, norm: 'post', positional: 'learned' },
  { attention: 'mla', attentionOptions: { kvRank: 3, ropeDim: 2 }, positional: 'none' },
  { attention: 'mla', attentionOptions: { kvRank: 4, ropeDim: 2, qRank: 3, path: 'absorbed' }, arch: 'encoder-decoder', norm: 'post' },
  { attention: 'nsa', attentionOptions: { blockSize: 2, topBlocks: 1, window: 3 } },
  { attention: 'nsa', attentionOptions: { blockSize: 2, topBlocks: 1, window: 2, compress: 'mlp' }, norm: 'post' },
  { attention: 'dsa', attentionOptions: { topK: 3, indexDim: 4 } },
  { attention: 'dsa', attentionOptions: { topK: 2, stage: 'warmup' }, norm: 'post' },
];
// The registry decides what must be covered: every form with a causal form (a decoder can use
// it) is in the list above as a decoder, and every form an encoder-decoder can use (a non-causal
// form for its encoder, and a causal one or a decoderForm for its decoder) as an encoder-decoder;
// so a form added to src/model/forms.c without tests fails here.
test('every registry form a model can use has gradient-check configs above', () => {
  for (const form of builds[0].lib.forms.filter((f) => f.causal || f.decoderForm)) {
    const archs = [...(form.causal ? ['decoder'] : []), ...(form.nonCausal && (form.causal || form.decoderForm) ? ['encoder-decoder'] : [])];
    for (const arch of archs)
      if (form.family !== 'synthesizer' || arch === 'decoder' || form.name === 'synth:dense')
        assert.ok(FORMS.some((f) => f.attention === form.name && (f.arch ?? 'decoder') === arch), `${form.name} ${arch} is untested`);
  }
  assert.deepEqual(builds[0].lib.forms.map((f) => f.name), builds[1].lib.forms.map((f) => f.name), 'both builds list the same forms');
});
const label = (f) => Object.entries(f).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');

for (const { name, lib } of builds) {
  test(`model [${name}]: bad configs and inputs throw clear errors, and the library stays usable`, () => {
    expectError(() => lib.createModel({ attention: 'cosine' }), /attention must be one of "softmax", .*"linear:elu\+1".*got "cosine"/);
    expectError(() => lib.createModel({ dModel: 30, heads: 4 }), /dModel \(30\) must be divisible by heads \(4\)/);
    expectError(() => lib.createModel({ attention: 'linear:efficient' }), /no causal form/);
    expectError(() => lib.createModel({ attention: 'linformer' }),
      /attention "linformer" has no causal form.*mixes every position, later ones included.*use arch "encoder-decoder": it then serves the encoder, and the decoder's self-attention is softmax/);
    expectError(() => lib.createModel({ attention: 'retention', attentionOptions: { decay: 2 } }),
      /attentionOptions.decay must be "retnet", "learned" or a number in \(0, 1\), got 2/);
    expectError(() => lib.createModel({ attentionOptions: { decay: 0.5 } }),
      /attentionOptions.decay does not apply to attention "softmax" \(it is an option of "retention"\)/);
    expectError(() => lib.createModel({ attention: 'linformer', arch: 'encoder-decoder', attentionOptions: { window: 3 } }),
      /attentionOptions.window does not apply to attention "linformer"/);
    expectError(() => lib.createModel({ layers: 40 }), /layers must be an integer in \[1, 32\], got 40/);
    expectError(() => lib.createModel({ dmodel: 8 }), /unknown option "dmodel"/);
    expectError(() => lib.createModel({ attention: 'softmax', attentionOptions: { k: 2 } }), /attentionOptions\.k does not apply to attention "softmax" \(it is an option of "synth:dense", .*"linformer"\)/);
    expectError(() => lib.createModel({ attention: 'synth:factorized-dense', maxLen: 12, attentionOptions: { a: 5, b: 2 } }),
      /a \* b = maxLen \(12\), got 5 \* 2/);
    expectError(() => lib.createModel({ attention: 'synth:mixture', attentionOptions: { components: ['random', 'random'] } }), /distinct/);
    const m = lib.createModel(small);
    expectError(() => m.forward([1, 2, 12]), /tokens\[2\] is 12, outside the vocabulary \[0, 12\)/);
    expectError(() => m.forward([1, 2.5]), /tokens\[1\] is 2\.5/);
    expectError(() => m.forward([]), /tokens is empty/);
    expectError(() => m.forward(new Array(9).fill(1)), /the sequence has 9 positions; this model takes 1 to maxLen = 8/);
    expectError(() => m.generate(new Array(9).fill(1)), /prompt must have 1 to maxLen = 8 tokens, got 9/);
    expectError(() => m.generate([1], { temperature: -1 }), /temperature must be >= 0/);
    expectError(() => m.trainStep({ task: 'parity' }), /task must be one of "copy", "reverse".*got "parity"/);
    expectError(() => m.trainStep({ task: 'reverse' }), /task "reverse" at length 16 needs 32 positions, more than maxLen = 8: pass \{ length: 4 \}/);
    expectError(() => m.trainStep({ task: 'reverse', length: 3, symbols: 12 }), /needs vocab >= 13, and this model has 12/);
    expectError(() => m.trainStep({ task: 'chars', length: 4 }), /needs vocab >= 50, and this model has 12/);
    expectError(() => m.trainStep({ task: 'recall', length: 3, symbols: 4 }), /3 pairs need distinct keys, and symbols = 4 gives only 2/);
    expectError(() => m.trainStep({ task: 'reverse', length: 3, lr: -1 }), /lr must be > 0, got -1/);
    expectError(() => m.trainStep({ task: 'reverse', length: 3, batchsize: 4 }), /unknown option "batchsize"/);
    expectError(() => m.forward([1], { source: [1] }), /source is for models with an encoder \(arch "encoder-decoder", "gru" or "gru-attention"\) only/);
    const synth = lib.createModel({ ...small, attention: 'synth:random' });
    expectError(() => synth.forward(new Array(9).fill(1)), /maxLen = 8 \(attention "synth:random" fixes its length when created\)/);
    synth.dispose();
    const ed = lib.createModel({ ...small, arch: 'encoder-decoder', vocab: 64 });
    expectError(() => ed.forward([0, 1]), /encoder-decoder model needs \{ source \}/);
    expectError(() => ed.trainStep({ task: 'chars', length: 4 }), /task "chars" is language modelling: it needs a decoder-only model/);
    ed.dispose();
    expectError(() => lib.loadModel(new Uint8Array(20)), /not an attention-wasm model checkpoint/);
    expectError(() => lib.loadModel('weights'), /bytes must be a Uint8Array or ArrayBuffer/);
    const wild = lib.createModel(small); // a diverging run says what went wrong
    expectError(() => { for (let i = 0; i < 200; i++) wild.trainStep({ task: 'reverse', length: 3, lr: 1e4, clip: 0 }); },
      /NaN or Infinity.*create the model again or load a checkpoint/);
    expectError(() => wild.evaluate({ task: 'reverse', length: 3 }), /parameters hold NaN or Infinity \(in wte\): they have diverged \(lowering lr cannot repair them\); create the model again or load a checkpoint/);
    wild.dispose();
    const r = m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 }); // still usable
    assert.ok(Number.isFinite(r.loss) && r.loss > 0);
    m.dispose();
    m.dispose();
    expectError(() => m.trainStep({ task: 'reverse', length: 3 }), /this model was disposed/);
  });

  test(`model [${name}]: finite-difference gradient checks for every attention form`, (t) => {
    for (const f of FORMS) {
      const m = lib.createModel({ ...small, ...f });
      const g = m.gradientCheck();
      t.diagnostic(`${label(f)}: error ${g.error.toExponential(2)} (tol ${TOL.grad_check}), worst tensor ${g.worstTensor} ` +
        `${g.worstTensorError.toExponential(2)} (tol ${TOL.grad_check_tensor}), ${g.checked} entries, ${g.skipped} at kinks`);
      assert.ok(g.error <= TOL.grad_check, `${label(f)}: gradient error ${g.error}`);
      assert.ok(g.worstTensorError <= TOL.grad_check_tensor, `${label(f)}: ${g.worstTensor} error ${g.worstTensorError}`);
      assert.equal(g.zeroGradTensors, 0, `${label(f)}: ${g.firstZeroGradTensor} has no gradient`);
      assert.equal(g.fixedWithGrad, 0);
      assert.ok(g.skipped * 4 <= g.checked, `${label(f)}: ${g.skipped} of ${g.checked + g.skipped} entries at kinks`);
      m.dispose();
    }
  });

  const bin = new URL(`../../build/native/test_model${name === 'simd' ? '' : '_scalar'}`, import.meta.url).pathname;
  // npm run test:quick builds nothing native: there, a checkout that never ran bash build.sh native skips this
  const noNative = process.env.AW_TEST_QUICK && !existsSync(bin) && `${bin} is not built (npm test builds it; bash build.sh native)`;
  test(`model [${name}]: the same seed gives the native build's loss curve`, { skip: noNative }, (t) => {
    assert.ok(existsSync(bin), `${bin} is missing: run bash build.sh native`);
    const r = spawnSync(bin, ['--curve'], { encoding: 'utf8', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' } });
    assert.equal(r.status, 0, r.stderr);
    const native = r.stdout.trim().split('\n').map(Number);
    // the same config, task and hyperparameters as print_curve in tests/native/test_model.c
    const m = lib.createModel({ vocab: 16, dModel: 32, heads: 4, layers: 2, dFF: 64, maxLen: 24, seed: 3 });
    const wasm = native.map(() => m.trainStep({ task: 'sort', length: 8, symbols: 10, batchSize: 8, lr: 3e-3 }).loss);
    m.dispose();
    let worst = 0;
    for (let i = 0; i < native.length; i++) worst = Math.max(worst, Math.abs(wasm[i] - native[i]) / (1 + Math.abs(native[i])));
    t.diagnostic(`30 steps: loss ${native[0].toFixed(4)} -> ${native.at(-1).toFixed(4)}; max err wasm vs native ${worst.toExponential(2)} (tol ${TOL.model_native_vs_wasm})`);
    assert.equal(native.length, 30);
    assert.ok(native.at(-1) < native[0] * 0.8, 'the loss falls');
    assert.ok(worst <= TOL.model_native_vs_wasm, `loss curves differ by ${worst}`);
  });

  test(`model [${name}]: save/load round-trips bit-exactly`, () => {
    for (const f of [{ attention: 'softmax', positional: 'learned' }, { attention: 'synth:mixture' },
      { attention: 'linear:taylor', arch: 'encoder-decoder', norm: 'post' }]) {
      const m = lib.createModel({ ...small, ...f });
      for (let i = 0; i < 3; i++) m.trainStep({ task: 'copy', length: 3, symbols: 6, batchSize: 4 });
      const bytes = m.save();
      const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true)))));
      assert.equal(header.__metadata__.format, 'attention-wasm-model');
      assert.equal(header.__metadata__.step, '3');
      const r = lib.loadModel(bytes);
      assert.deepEqual(r.config, m.config);
      assert.equal(r.steps, 3);
      assert.deepEqual(r.save(), bytes, `${label(f)}: re-saved bytes differ`);
      const source = f.arch ? [1, 2, 3] : undefined;
      const a = m.forward([0, 4, 5], source ? { source } : {}), b = r.forward([0, 4, 5], source ? { source } : {});
      assert.deepEqual(b.logits, a.logits);
      m.dispose(), r.dispose();
    }
  });

  test(`model [${name}]: cached generation equals generation by the full forward`, () => {
    for (const f of [{ attention: 'softmax' }, { attention: 'softmax', norm: 'post' }, { attention: 'linear:elu+1' },
      { attention: 'linear:relu' }, { attention: 'softmax', arch: 'encoder-decoder' }, { attention: 'linear:taylor', arch: 'encoder-decoder' }]) {
      const m = lib.createModel({ ...small, maxLen: 16, ...f });
      for (let i = 0; i < 5; i++) m.trainStep({ task: 'copy', length: 4, symbols: 8, batchSize: 8 });
      const encdec = f.arch === 'encoder-decoder';
      const prompt = encdec ? [0] : [3, 1, 4];
      const source = encdec ? { source: [3, 1, 4, 1] } : {};
      for (const o of [{}, { temperature: 0.8, topK: 4, seed: 9 }]) {
        const cached = m.generate(prompt, { maxTokens: 30, ...o, ...source });
        const full = m.generate(prompt, { maxTokens: 30, ...o, ...source, cache: false });
        assert.equal(cached.length, 16 - prompt.length + 1, 'generation runs to maxLen');
        assert.deepEqual(cached, full, `${label(f)} ${JSON.stringify(o)}`);
      }
      m.dispose();
    }
  });

  test(`model [${name}]: forward returns logits and per-layer, per-head attention rows that sum to 1 (every family)`, () => {
    const m = lib.createModel({ ...small, vocab: 64, arch: 'encoder-decoder' });
    const { logits, attention, crossAttention, encoderAttention } = m.forward([0, 5, 6], { source: [1, 2, 3, 4] });
    assert.equal(logits.length, 3 * 64);
    assert.equal(attention.length, 2);
    assert.equal(attention[0].length, 2);
    assert.equal(attention[1][1].length, 9);
    assert.equal(crossAttention[0][0].length, 12);
    assert.equal(encoderAttention[1][0].length, 16);
    for (let i = 0; i < 3; i++) {
      const row = attention[0][1].subarray(i * 3, i * 3 + 3);
      assert.ok(Math.abs(row.reduce((s, x) => s + x, 0) - 1) < 1e-5);
      for (let j = i + 1; j < 3; j++) assert.equal(row[j], 0, 'causal');
    }
    m.dispose();
    for (const attention of ['linear:elu+1', 'linear:taylor', 'synth:random', 'synth:dense']) {
      const d = lib.createModel({ ...small, attention });
      const w = d.forward([1, 2, 3, 4]).attention[1][0];
      for (let i = 0; i < 4; i++) {
        const row = w.subarray(i * 4, i * 4 + 4);
        assert.ok(Math.abs(row.reduce((s, x) => s + x, 0) - 1) < 1e-5, `${attention} row ${i} sums to 1`);
        for (let j = i + 1; j < 4; j++) assert.equal(row[j], 0, `${attention}: causal`);
      }
      d.dispose();
    }
  });

  test(`model [${name}]: every form and task trains (the loss falls in a few steps)`, (t) => {
    const tasks = [['reverse', {}, { length: 4, symbols: 6 }], ['recall', {}, { length: 3, symbols: 8 }],
      ['chars', {}, { length: 12 }], ['translate', { arch: 'encoder-decoder', maxLen: 24 }, { length: 2 }]];
    for (const attention of ['softmax', 'linear:elu+1', 'synth:dense', 'synth:random']) {
      for (const [task, cfg, opts] of tasks) {
        const m = lib.createModel({ vocab: 64, dModel: 16, heads: 2, layers: 1, dFF: 32, maxLen: 24, seed: 2, attention, ...cfg });
        const first = m.evaluate({ task, ...opts, batches: 2, batchSize: 16 });
        for (let i = 0; i < 25; i++) m.trainStep({ task, ...opts, batchSize: 16, lr: 1e-2 });
        const after = m.evaluate({ task, ...opts, batches: 2, batchSize: 16 });
        t.diagnostic(`${attention} ${task}: loss ${first.loss.toFixed(3)} -> ${after.loss.toFixed(3)}`);
        assert.ok(after.loss < first.loss * 0.85, `${attention} ${task}: loss ${first.loss} -> ${after.loss}`);
        m.dispose();
      }
    }
  });

  if (name === 'simd')
    test(`model [${name}]: softmax attention learns reverse (length 16, 10 symbols) to >= 99% token accuracy`, (t) => {
      const m = lib.createModel({ vocab: 16, dModel: 64, heads: 4, layers: 2, dFF: 256, maxLen: 40, seed: 1 });
      const t0 = performance.now();
      let acc = 0, steps = 0;
      while (acc < 0.99 && steps < 600) {
        for (let i = 0; i < 50; i++, steps++) m.trainStep({ task: 'reverse', batchSize: 32, lr: steps < 100 ? 2e-3 * (steps + 1) / 100 : 2e-3 });
        acc = m.evaluate({ task: 'reverse', batches: 8 }).accuracy;
        t.diagnostic(`step ${steps}: held-out token accuracy ${acc.toFixed(4)}`);
      }
      const seconds = (performance.now() - t0) / 1000;
      t.diagnostic(`reverse: ${(acc * 100).toFixed(2)}% after ${steps} steps, ${seconds.toFixed(1)} s wall (one thread, ${(1000 * seconds / steps).toFixed(1)} ms/step)`);
      assert.ok(acc >= 0.99, `accuracy ${acc} after ${steps} steps`);
      const ex = m.example({ task: 'reverse', seed: 42 });
      assert.deepEqual(m.generate(ex.prompt, { maxTokens: 16 }), ex.target, 'the trained model reverses a held-out sequence');
      m.dispose();
    });
}

test('model [simd]: an encoder-decoder learns translate and generates the number words', (t) => {
  const { lib } = builds[0];
  const m = lib.createModel({ vocab: lib.charsTokenizer.vocab, dModel: 32, heads: 2, layers: 2, dFF: 64, maxLen: 24,
    arch: 'encoder-decoder', seed: 1 });
  const t0 = performance.now();
  let acc = 0, steps = 0;
  while (acc < 0.99 && steps < 600) {
    for (let i = 0; i < 50; i++, steps++) m.trainStep({ task: 'translate', batchSize: 32, lr: 3e-3 });
    acc = m.evaluate({ task: 'translate', batches: 4 }).accuracy;
  }
  t.diagnostic(`translate: ${(acc * 100).toFixed(2)}% after ${steps} steps, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  assert.ok(acc >= 0.99, `accuracy ${acc}`);
  const source = lib.charsTokenizer.encode('3051');
  const out = m.generate([0], { source, maxTokens: 24, stop: 0 });
  assert.equal(lib.charsTokenizer.decode(out.subarray(0, out.length - 1)), 'three zero five one');
  m.dispose();
});

test('model: the shipped checkpoints (web/models) load, fit their catalogue entries, and work', () => {
  const { lib } = builds[0];
  const dir = new URL('../../web/models/', import.meta.url);
  const { models } = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8'));
  let total = 0;
  for (const e of models) {
    const bytes = readFileSync(new URL(e.file, dir));
    total += bytes.length;
    const m = lib.loadModel(bytes);
    for (const [k, v] of Object.entries(e.config)) assert.equal(m.config[k], v, `${e.file}: config.${k}`);
    assert.equal(m.steps, e.steps, `${e.file}: steps`);
    if (e.task === 'reverse' && e.attention === 'softmax') {
      const ex = m.example({ task: 'reverse', length: e.length, symbols: e.symbols, seed: 99 });
      assert.deepEqual(m.generate(ex.prompt, { maxTokens: e.length }), ex.target, 'the shipped reverse model reverses');
    }
    m.dispose();
  }
  assert.ok(total < 5 * 2 ** 20, `web/models holds ${total} bytes of checkpoints (limit 5 MiB)`);
});

test('model: a checkpoint read with readFileSync (a Node Buffer) loads without a warning on stderr', () => {
  // a Buffer's constructor over the wasm memory is the deprecated Buffer() (DEP0005): copied as bytes
  const script = `import { readFileSync } from 'node:fs';
    import { loadAttention } from './wasm/index.js';
    const lib = await loadAttention();
    const m = lib.loadModel(readFileSync('web/models/' + JSON.parse(readFileSync('web/models/index.json', 'utf8')).models[0].file));
    m.forward([1, 2, 3]); m.dispose();
    await new Promise((r) => setTimeout(r, 50));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: new URL('../../', import.meta.url), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '', 'nothing on stderr');
});

test('model: data/chars.txt and the compiled corpus agree; the chars tokenizer round-trips', () => {
  const r = spawnSync(process.execPath, [new URL('../../scripts/gen_corpus.mjs', import.meta.url).pathname, '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const { lib } = builds[0];
  const ids = lib.charsTokenizer.encode('Hello, world!\n');
  assert.equal(lib.charsTokenizer.decode(ids), 'hello, world!\n');
  assert.ok([...ids].every((t) => t > 0 && t < lib.charsTokenizer.vocab));
});

for (const { name, lib } of builds) {
  test(`model [${name}]: trains and evaluates on the caller's own batches; clear Errors for bad ones`, async () => {
    const m = lib.createModel({ vocab: 8, dModel: 16, heads: 2, layers: 1, maxLen: 8, seed: 2 });
    // next-token prediction on two fixed sequences, the last position masked out
    const inputs = [[1, 2, 3, 4], [2, 3, 4, 5]], targets = [[2, 3, 4, 5], [3, 4, 5, 6]];
    const mask = [[1, 1, 1, 0], [1, 1, 1, 0]];
    const before = m.evaluate({ inputs, targets, mask });
    assert.equal(before.tokens, 6, 'the mask leaves 6 positions with a loss');
    const progress = [];
    const r = await m.train({ steps: 120, inputs, targets, mask, lr: 1e-2, yieldEvery: 40, onProgress: (p) => progress.push(p.step) });
    assert.deepEqual(progress, [40, 80, 120]);
    const after = m.evaluate({ inputs, targets, mask });
    assert.ok(after.accuracy === 1 && after.loss < before.loss / 10, `loss ${before.loss} -> ${after.loss}`);
    assert.equal(r.steps, 120);
    expectError(() => m.trainStep({ inputs: [[1, 2], [1]], targets: [[1, 2], [1]] }), /inputs\[1\] has 1 tokens and row 0 has 2: every row must have the same length/);
    expectError(() => m.trainStep({ inputs: [[1, 9]], targets: [[1, 2]] }), /trainStep: inputs\[0\]\[1\] is 9, outside the vocabulary \[0, 8\)/);
    expectError(() => m.trainStep({ inputs: [[1, 2]], targets: [[1, 8]] }), /trainStep: targets\[0\]\[1\] is 8, outside the vocabulary/);
    expectError(() => m.trainStep({ inputs: [new Array(9).fill(1)], targets: [new Array(9).fill(1)] }), /inputs rows have 9 tokens, more than maxLen = 8/);
    expectError(() => m.trainStep({ inputs: [[1, 2]], targets: [[1, 2, 3]] }), /targets\[0\] has 3 tokens, and inputs\[0\] has 2: they must match/);
    expectError(() => m.evaluate({ inputs: [[1, 2]] }), /targets are required with inputs/);
    expectError(() => m.trainStep({ inputs: [[1, 2]], targets: [[1, 2]], mask: [[1, 2]] }), /mask\[0\]\[1\] is 2; expected 0 or 1/);
    const ac = new AbortController();
    const run = m.train({ steps: 1e6, task: 'copy', length: 3, symbols: 5, signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    await assert.rejects(run, { name: 'AbortError' });
    assert.ok(m.steps > 120, 'steps ran until the abort');
    m.dispose();
    // an encoder-decoder takes source rows as well
    const ed = lib.createModel({ vocab: 8, dModel: 16, heads: 2, layers: 1, maxLen: 8, arch: 'encoder-decoder' });
    const src = [[3, 1, 2], [4, 2, 1]];
    const rr = ed.trainStep({ source: src, inputs: [[0, 2, 1], [0, 1, 2]], targets: [[2, 1, 3], [1, 2, 4]] });
    assert.ok(Number.isFinite(rr.loss));
    expectError(() => ed.trainStep({ inputs: [[0]], targets: [[1]] }), /needs source rows/);
    ed.dispose();
  });

  test(`model [${name}]: training resumes exactly from a checkpoint with the optimizer state`, () => {
    const cfg = { vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 8, seed: 7, attention: 'synth:mixture' };
    const once = lib.createModel(cfg), first = lib.createModel(cfg);
    const step = { task: 'reverse', length: 3, symbols: 6, batchSize: 4 };
    for (let i = 0; i < 6; i++) once.trainStep(step);
    for (let i = 0; i < 3; i++) first.trainStep(step);
    const resumed = lib.loadModel(first.save({ optimizer: true }));
    for (let i = 0; i < 3; i++) resumed.trainStep(step);
    assert.deepEqual(resumed.save(), once.save(), 'resumed == uninterrupted, bit for bit (and the step count)');
    const plain = lib.loadModel(first.save()); // without the moments, AdamW restarts: not the same
    for (let i = 0; i < 3; i++) plain.trainStep(step);
    assert.notDeepEqual(plain.save(), once.save());
    for (const m of [once, first, resumed, plain]) m.dispose();
  });
}

// The first release's files named a form by its family and the rest of its name ("feature" for
// linear attention, "synth_variant" for the Synthesizer); the registry maps them back to a form.
test('a checkpoint that names its form the first release\'s way (family + feature / synth_variant) loads as that form', async () => {
  const lib = builds[0].lib;
  const cases = [['linear:elu+1', { attention: 'linear', feature: 'elu+1' }], ['synth:random', { attention: 'synthesizer', synth_variant: 'random' }],
    [null, { attention: 'linear', feature: 'nope' }]];
  for (const [form, meta] of cases) {
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 16, attention: form ?? 'linear:relu' });
    const bytes = m.save();
    const logits = m.forward([1, 2, 3]).logits;
    m.dispose();
    const hlen = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen)));
    Object.assign(header.__metadata__, meta);
    const text = JSON.stringify(header);
    const h = new TextEncoder().encode(text.padEnd(Math.ceil(text.length / 8) * 8));
    const out = new Uint8Array(8 + h.length + bytes.length - 8 - hlen);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    out.set(bytes.subarray(8 + hlen), 8 + h.length);
    if (!form) {
      expectError(() => lib.loadModel(out), /loadModel: the checkpoint's __metadata__ is not an attention-wasm model config/);
      continue;
    }
    const back = lib.loadModel(out);
    assert.equal(back.config.attention, form);
    assert.deepEqual([...back.forward([1, 2, 3]).logits], [...logits]);
    back.dispose();
  }
});

// The backward recomputes softmax's probabilities from each row's log-sum-exp (FlashAttention-2),
// so what a training step holds grows like n: 4x the length, about 4x the bytes (an n x n matrix
// per head would make it about 16x). Bytes, not time: exact on any machine.
test('a softmax training step holds memory linear in n (no n x n matrix kept for the backward)', () => {
  const lib = builds[0].lib;
  const held = (n) => {
    const before = lib.heapInUse();
    const m = lib.createModel({ vocab: 16, dModel: 32, heads: 4, layers: 1, maxLen: n, dFF: 64 });
    const row = Array.from({ length: n }, (_, i) => (i * 7 + 3) % 16);
    const { loss } = m.trainStep({ inputs: [row], targets: [row.map((t) => (t + 1) % 16)] });
    assert.ok(Number.isFinite(loss));
    const bytes = lib.heapInUse() - before;
    m.dispose();
    return bytes;
  };
  const small = held(256), large = held(1024);
  assert.ok(large / small < 6, `4x the length held ${(large / small).toFixed(2)}x the bytes (${small} -> ${large})`);
});
