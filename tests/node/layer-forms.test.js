// layer-forms.test.js: createModel's layerForms, a form and its options per decoder layer (hybrid
// stacks such as Qwen3-Next's 3 Gated DeltaNet : 1 softmax, and window/global patterns). Every
// check names the layer and the rule; a hybrid trains, passes the gradient check (and a 10% error
// in a layer's form fails it), generates with each layer's own cache or state as the full forward
// does, saves and loads to the same logits, round-trips through model.config, runs bit-identically
// on 1 and 2 threads, and PyTorch (scripts/torch_model.py) reproduces its logits.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAttention } from '../../wasm/index.js';
import { TOL, builds, expectError, maxErr } from './helpers.js';

const small = { vocab: 12, dModel: 16, heads: 4, dFF: 24, maxLen: 16, seed: 5 };
// Qwen3-Next-like: three Gated DeltaNet layers, then softmax
const QWEN = [{ attention: 'gated-delta' }, { attention: 'gated-delta' }, { attention: 'gated-delta' }, { attention: 'softmax' }];
// three kinds of generation state: a KV cache, the delta rule's state, linear attention's state
const MIXED = [{ attention: 'softmax' }, { attention: 'gated-delta', attentionOptions: { mode: 'recurrent' } }, { attention: 'linear:elu+1' }];
// window/global: local softmax over the last 4 keys, then full softmax, twice
const ALTERNATING = [{ attention: 'local', attentionOptions: { window: 4 } }, { attention: 'softmax' },
  { attention: 'local', attentionOptions: { window: 4 } }, { attention: 'softmax' }];
const batch = { inputs: [[1, 2, 3, 4, 5, 6, 7, 8], [8, 7, 6, 5, 4, 3, 2, 1]], targets: [[2, 3, 4, 5, 6, 7, 8, 9], [7, 6, 5, 4, 3, 2, 1, 0]] };
const label = (c) => JSON.stringify(c.layerForms.map((f) => f.attention));
const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

for (const { name, lib } of builds) {
  test(`layerForms [${name}]: bad entries are Errors naming the layer and the rule; the library stays usable`, () => {
    const two = (a, b) => ({ ...small, layers: 2, layerForms: [a, b] });
    const soft = { attention: 'softmax' };
    const cases = [
      [{ ...small, layers: 3, layerForms: [soft, soft] }, /layerForms has 2 entries and layers is 3: give one entry per layer/],
      [{ ...small, layerForms: [soft, soft, soft] }, /layerForms has 3 entries and layers is 2/], // layers' default
      [{ ...small, layers: 2, layerForms: [] }, /layerForms has 0 entries; it must have one per layer, 1 to 32/],
      [{ ...small, layers: 32, layerForms: Array(33).fill(soft) }, /layerForms has 33 entries; it must have one per layer, 1 to 32/],
      [{ ...small, layerForms: 'softmax' }, /layerForms must be an array of \{ attention, attentionOptions \}, one per layer, got "softmax"/],
      [two(soft, { attention: 'nope' }), /layerForms\[1\]\.attention must be one of "softmax", "local", .*"gated-delta".*, got "nope"/],
      [two(soft, {}), /layerForms\[1\]\.attention is missing: each entry names its form, one of "softmax"/],
      [two(soft, { attention: 3 }), /layerForms\[1\]\.attention must be a string, got 3/],
      [two(soft, { attention: 'softmax', heads: 2 }), /layerForms\[1\]: unknown option "heads" \(known: attention, attentionOptions\)/],
      [{ ...two(soft, soft), attention: 'softmax' }, /attention and layerForms are both given: with layerForms each layer names its own attention/],
      [{ ...two({ attention: 'local' }, soft), attentionOptions: { window: 3 } }, /attentionOptions and layerForms are both given/],
      [two(soft, { attention: 'softmax', attentionOptions: { window: 3, decay: 'retnet' } }), /layerForms\[1\]: attentionOptions\.(window|decay) does not apply to attention "softmax"/],
      [two({ attention: 'local', attentionOptions: { window: 0 } }, soft), /layerForms\[0\]: attentionOptions\.window must be an integer in \[1, /],
      [two(soft, { attention: 'gated-delta', attentionOptions: { mode: 'fast' } }), /layerForms\[1\]: attentionOptions\.mode must be one of/],
      [two(soft, { attention: 'local', attentionOptions: { nonsense: 1 } }), /layerForms\[1\]\.attentionOptions: unknown option "nonsense"/],
      [{ ...two(soft, { attention: 'synth:random' }), positional: 'rope' }, /layerForms\[1\]: positional "rope" rotates queries and keys, and attention "synth:random" reads neither/],
      [{ ...two(soft, { attention: 'linear:elu+1' }), positional: 'alibi' }, /layerForms\[1\]: positional "alibi" adds a distance bias to softmax scores, and attention "linear:elu\+1" has none/],
      [{ ...two(soft, { attention: 'synth:dense' }), kvHeads: 2 }, /layerForms\[1\]: kvHeads \(2\) applies to forms that read queries and keys/],
      [{ ...two(soft, { attention: 'linformer' }) }, /layerForms\[1\]: .*linformer/],
      [{ ...two(soft, soft), arch: 'encoder-decoder' }, /layerForms applies to arch "decoder" only/],
      [{ vocab: 12, dModel: 16, arch: 'gru', layers: 1, layerForms: [soft] }, /layerForms does not apply to arch "gru"/],
    ];
    for (const [cfg, re] of cases) {
      expectError(() => lib.createModel(cfg), re);
      const ok = lib.createModel({ ...small, layers: 2, layerForms: [soft, { attention: 'gated' }] }); // still usable
      assert.ok(ok.forward([1, 2, 3]).logits.every(Number.isFinite));
      ok.dispose();
    }
    // kvHeads with forms that all read keys is grouped-query attention in every layer
    const gqa = lib.createModel({ ...small, layers: 3, kvHeads: 2, positional: 'rope', layerForms: MIXED });
    assert.equal(gqa.config.kvHeads, 2);
    gqa.dispose();
  });

  test(`layerForms [${name}]: model.config lists every layer with its options and createModel(model.config) makes the same model`, () => {
    for (const layerForms of [QWEN, ALTERNATING, MIXED]) {
      const m = lib.createModel({ ...small, layers: layerForms.length, layerForms });
      const c = m.config;
      assert.equal(c.attention, undefined, 'no model-wide attention beside layerForms');
      assert.equal(c.attentionOptions, undefined);
      assert.deepEqual(c.layerForms.map((f) => f.attention), layerForms.map((f) => f.attention));
      if (layerForms === QWEN) assert.deepEqual(c.layerForms[0].attentionOptions, { mode: 'chunked', chunk: 16 }, 'defaults filled in');
      if (layerForms === ALTERNATING) assert.equal(c.layerForms[2].attentionOptions.window, 4);
      const again = lib.createModel(c);
      assert.deepEqual(again.config, c);
      assert.ok(same(again.forward([1, 2, 3, 4]).logits, m.forward([1, 2, 3, 4]).logits), `${label(c)}: the same model`);
      m.dispose(), again.dispose();
    }
    // sixteen layers (Gemma 3's five local : one global, repeated): a config longer than the first
    // buffer model.config reads it into, still whole
    const gemma = Array.from({ length: 16 }, (_, l) => (l % 6 === 5 ? { attention: 'softmax' } : { attention: 'local', attentionOptions: { window: 4 } }));
    const big = lib.createModel({ ...small, dModel: 8, heads: 2, dFF: 8, layers: 16, layerForms: gemma });
    assert.ok(JSON.stringify(big.config).length > 1024);
    assert.deepEqual(big.config.layerForms.map((f) => f.attention), gemma.map((f) => f.attention));
    const bigAgain = lib.createModel(big.config);
    assert.deepEqual(bigAgain.config, big.config);
    big.dispose(), bigAgain.dispose();
    // a model without layerForms keeps its config as it was
    const plain = lib.createModel(small);
    assert.equal(plain.config.attention, 'softmax');
    assert.equal(plain.config.layerForms, undefined);
    plain.dispose();
    // each layer is its own form: a hybrid differs from both of its pure models, and its
    // softmax layer's parameters are those of the same layer of a pure softmax model
    const hybrid = lib.createModel({ ...small, layers: 2, layerForms: [{ attention: 'gated-delta' }, { attention: 'softmax' }] });
    const soft = lib.createModel({ ...small, layers: 2 }), delta = lib.createModel({ ...small, layers: 2, attention: 'gated-delta' });
    const h = hybrid.forward([1, 2, 3]).logits;
    assert.ok(!same(h, soft.forward([1, 2, 3]).logits) && !same(h, delta.forward([1, 2, 3]).logits));
    assert.ok(hybrid.parameterCount > soft.parameterCount && hybrid.parameterCount < delta.parameterCount,
      `the delta rule's gate and beta in one layer of two: ${soft.parameterCount} < ${hybrid.parameterCount} < ${delta.parameterCount}`);
    hybrid.dispose(), soft.dispose(), delta.dispose();
  });

  test(`layerForms [${name}]: a hybrid trains, and its gradient check passes (a 10% error in a layer's form fails it)`, (t) => {
    for (const layerForms of [QWEN, MIXED, ALTERNATING]) {
      const m = lib.createModel({ ...small, layers: layerForms.length, layerForms });
      const g = m.gradientCheck();
      t.diagnostic(`${label(m.config)}: gradient error ${g.error.toExponential(2)}, worst ${g.worstTensor} ${g.worstTensorError.toExponential(2)}`);
      assert.ok(g.error <= TOL.grad_check, `${label(m.config)}: gradient error ${g.error}`);
      assert.ok(g.worstTensorError <= TOL.grad_check_tensor, `${label(m.config)}: ${g.worstTensor} ${g.worstTensorError}`);
      assert.equal(g.zeroGradTensors, 0, `${label(m.config)}: ${g.firstZeroGradTensor} has no gradient`);
      const first = m.trainStep({ ...batch, lr: 1e-2 }).loss;
      let last = first;
      for (let s = 0; s < 40; s++) last = m.trainStep({ ...batch, lr: 1e-2 }).loss;
      t.diagnostic(`${label(m.config)}: loss ${first.toFixed(3)} -> ${last.toFixed(3)} in 41 steps`);
      assert.ok(last < 0.5 * first, `${label(m.config)}: the loss falls (${first} -> ${last})`);
      m.dispose();
    }
    const m = lib.createModel({ ...small, layers: 4, layerForms: QWEN });
    for (const tensor of ['dec.1.self.delta.beta_weight', 'dec.2.self.delta.gate_weight', 'dec.3.self.wq', 'dec.0.self.wk']) {
      const bad = m.gradientCheck({ mutate: { tensor, factor: 1.1 } });
      t.diagnostic(`${tensor} x 1.1: error ${bad.worstTensorError.toExponential(2)}`);
      assert.ok(bad.worstTensorError > TOL.grad_check_tensor, `a 10% error in ${tensor}'s gradient passes (${bad.worstTensorError})`);
    }
    m.dispose();
  });

  test(`layerForms [${name}]: cached generation (each layer its own cache or state) equals the full forward`, () => {
    for (const extra of [{}, { kvHeads: 2, positional: 'rope' }, { kvHeads: 1, block: 'llama' }]) {
      for (const layerForms of [MIXED, QWEN, ALTERNATING]) {
        const m = lib.createModel({ ...small, layers: layerForms.length, layerForms, ...extra });
        for (let s = 0; s < 3; s++) m.trainStep({ ...batch, lr: 0.05 }); // away from init
        for (const o of [{}, { temperature: 1, seed: 9 }, { temperature: 0.8, topK: 4, seed: 3 }]) {
          for (const prompt of [[3], [3, 1, 4, 1, 5]]) {
            const cached = m.generate(prompt, { maxTokens: 30, ...o });
            const full = m.generate(prompt, { maxTokens: 30, ...o, cache: false });
            assert.equal(cached.length, 16 - prompt.length + 1, 'generation runs to maxLen');
            assert.deepEqual(cached, full, `${label(m.config)} ${JSON.stringify({ ...extra, ...o, prompt })}`);
          }
        }
        m.dispose();
      }
    }
  });

  test(`layerForms [${name}]: save and load give the same model (version 3); streaming and llama2.c name the layer they cannot hold`, () => {
    const m = lib.createModel({ ...small, layers: 4, kvHeads: 2, positional: 'rope', layerForms: [
      { attention: 'gated-delta', attentionOptions: { chunk: 4 } }, { attention: 'retention', attentionOptions: { decay: 'learned' } },
      { attention: 'local', attentionOptions: { window: 3 } }, { attention: 'softmax' }] });
    m.trainStep({ ...batch, lr: 1e-2 });
    const bytes = m.save({ optimizer: true });
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true)))));
    assert.equal(header.__metadata__.version, '3');
    assert.equal(header.__metadata__['layer.1.attention'], 'retention');
    assert.equal(header.__metadata__['layer.1.decay'], 'learned');
    assert.equal(header.__metadata__['layer.0.delta_chunk'], '4');
    const back = lib.loadModel(bytes);
    assert.deepEqual(back.config, m.config);
    assert.ok(same(back.forward([1, 2, 3, 4, 5]).logits, m.forward([1, 2, 3, 4, 5]).logits), 'the same logits');
    assert.deepEqual(back.trainStep({ ...batch, lr: 1e-2 }), m.trainStep({ ...batch, lr: 1e-2 }), 'training resumes the same');
    // a file whose layer names an unknown form, or lacks a layer, is refused (the library stays usable)
    const text = new TextDecoder().decode(bytes);
    for (const [from, to] of [['"layer.2.attention":"local"', '"layer.2.attention":"lokal"'], ['"layer.3.attention":"softmax"', '"layer.3.attentiox":"softmax"']]) {
      assert.ok(text.includes(from));
      const broken = new TextEncoder().encode(text.replace(from, to));
      expectError(() => lib.loadModel(broken), /checkpoint/);
    }
    // a model without layerForms stays a version-2 file
    const plain = lib.createModel(small);
    const p = plain.save();
    assert.match(new TextDecoder().decode(p.subarray(0, 200)), /"version":"2"/);
    plain.dispose();
    // streaming keeps a softmax KV cache in every layer
    const rope = lib.createModel({ ...small, layers: 2, positional: 'rope', layerForms: [{ attention: 'softmax' }, { attention: 'gated-delta' }] });
    expectError(() => rope.generate([1, 2], { window: 8 }), /every layer, and layerForms\[1\] is attention "gated-delta": give every layer attention "softmax"/);
    expectError(() => rope.streamLosses([1, 2, 3, 4], { window: 2 }), /layerForms\[1\] is attention "gated-delta"/);
    const allSoft = lib.createModel({ ...small, layers: 2, positional: 'rope', layerForms: [{ attention: 'softmax' }, { attention: 'softmax' }] });
    assert.equal(allSoft.generate([1, 2], { window: 8, maxTokens: 20 }).length, 20, 'softmax in every layer streams');
    // llama2.c: plain softmax in every layer only
    const llama = { ...small, layers: 2, block: 'llama' };
    expectError(() => lib.createModel({ ...llama, layerForms: [{ attention: 'softmax' }, { attention: 'linear:elu+1' }] }).saveLlama2c(),
      /llama2\.c cannot run this model: layerForms\[1\] is attention "linear:elu\+1"/);
    const fine = lib.createModel({ ...llama, layerForms: [{ attention: 'softmax' }, { attention: 'softmax' }] });
    const file = fine.saveLlama2c();
    const fromFile = lib.loadLlama2c(file);
    assert.ok(maxErr(fromFile.forward([1, 2, 3]).logits, fine.forward([1, 2, 3]).logits) <= 1e-6, 'plain softmax layers export');
    // hooks: a layer that reads no keys has no hook_k; the softmax layer has
    const hooked = lib.createModel({ ...small, layers: 2, layerForms: [{ attention: 'synth:dense' }, { attention: 'softmax' }] });
    expectError(() => hooked.runWithCache([1, 2, 3], { names: ['blocks.0.attn.hook_k'] }), /attention "synth:dense" reads no queries or keys, so this layer has no such point/);
    assert.deepEqual(hooked.runWithCache([1, 2, 3], { names: ['blocks.1.attn.hook_k'] }).cache['blocks.1.attn.hook_k'].shape, [3, 4, 4]);
    for (const x of [m, back, rope, allSoft, fine, fromFile, hooked]) x.dispose();
  });
}

test('layerForms: 1 and 2 threads train and generate bit-identically', async () => {
  const two = await loadAttention({ threads: 2 });
  const run = () => {
    const m = two.createModel({ ...small, layers: 3, layerForms: MIXED });
    const losses = [];
    for (let s = 0; s < 3; s++) losses.push(m.trainStep({ ...batch, lr: 1e-2 }).loss);
    const out = { losses, logits: m.forward([1, 2, 3, 4, 5, 6]).logits, gen: [...m.generate([1, 2], { maxTokens: 8, temperature: 1, seed: 4 })] };
    m.dispose();
    return out;
  };
  two.setThreads(1);
  const one = run();
  two.setThreads(2);
  const both = run();
  assert.deepEqual(both.losses, one.losses);
  assert.ok(same(both.logits, one.logits));
  assert.deepEqual(both.gen, one.gen);
});

const PYTHON = '/usr/bin/python3'; // Debian's, where python3-torch installs
const SCRIPT = new URL('../../scripts/torch_model.py', import.meta.url).pathname;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;

test('layerForms: PyTorch builds each layer\'s form and reproduces the logits to 1e-5, and back', { skip: haveTorch ? false : 'python3-torch is missing' }, (t) => {
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-layers-'));
  try {
    const configs = [{ layers: 4, layerForms: QWEN }, { layers: 4, layerForms: ALTERNATING },
      { layers: 3, kvHeads: 2, positional: 'rope', layerForms: MIXED },
      { layers: 2, layerForms: [{ attention: 'retention', attentionOptions: { decay: 'learned' } }, { attention: 'synth:random', attentionOptions: { trainable: false } }] }];
    const cases = configs.map((cfg, i) => {
      const m = lib.createModel({ ...small, maxLen: 10, ...cfg });
      for (let s = 0; s < 2; s++) m.trainStep({ ...batch, lr: 1e-2 });
      const checkpoint = join(dir, `m${i}.safetensors`);
      writeFileSync(checkpoint, m.save());
      const tokens = [3, 1, 4, 1, 5, 9, 2];
      const c = { name: label(m.config), checkpoint, tokens, logits: [...m.forward(tokens).logits], batch, out: join(dir, `t${i}.safetensors`) };
      m.dispose();
      return c;
    });
    writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
    const r = spawnSync(PYTHON, [SCRIPT, 'check', join(dir, 'cases.json')], { encoding: 'utf8', maxBuffer: 1 << 26 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    for (const [i, c] of cases.entries()) {
      const rep = report[i];
      const back = lib.loadModel(readFileSync(c.out));
      const err = maxErr(back.forward(c.tokens).logits, Float32Array.from(rep.trained_logits));
      t.diagnostic(`${c.name}: library vs PyTorch logits ${rep.logits_error.toExponential(2)}; PyTorch trained 3 steps, loaded back ${err.toExponential(2)}`);
      assert.ok(rep.logits_error <= 1e-5, `${c.name}: PyTorch reproduces the logits to ${rep.logits_error}`);
      assert.ok(err <= 1e-5, `${c.name}: the library reads PyTorch's checkpoint to ${err}`);
      assert.ok(rep.losses[2] < rep.losses[0], `${c.name}: PyTorch's training lowers the loss`);
      back.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('layerForms: softmax switches on one layer only act there when streaming and generating (layer 0 has none)', () => {
  const { lib } = builds[0];
  const sw = { learnedSinks: true, softcap: 2, window: 4, outputGate: true, qkNorm: true };
  const c = { ...small, block: 'llama', kvHeads: 2, layers: 2, layerForms: [{ attention: 'softmax' }, { attention: 'softmax', attentionOptions: sw }] };
  const m = lib.createModel(c);
  m.trainStep({ inputs: [[1, 2, 3, 4, 5, 6, 7, 8]], targets: [[2, 3, 4, 5, 6, 7, 8, 9]], lr: 0.05 });
  // a rolling cache as long as the text evicts nothing: streaming reads as one forward does (its
  // losses from the logits), with layer 1's switches, which a cache sized by layer 0 ignored
  const toks = Array.from({ length: 14 }, (_, i) => 1 + ((i * 7) % 11));
  const stream = m.streamLosses(toks, { window: small.maxLen });
  const { logits } = m.forward(toks);
  let err = 0;
  for (let i = 0; i + 1 < toks.length; i++) {
    const row = logits.subarray(i * small.vocab, (i + 1) * small.vocab);
    const mx = Math.max(...row), lse = mx + Math.log(row.reduce((a, x) => a + Math.exp(x - mx), 0));
    err = Math.max(err, Math.abs(stream[i] - (lse - row[toks[i + 1]])));
  }
  assert.ok(err < 2e-5, `streaming vs forward ${err}`);
  // cached generation (each layer's own cache: grouped-query softmax for layer 0, the form's step for
  // layer 1) is the full forward's argmax at every step
  const out = [...m.generate([1, 2, 3], { maxTokens: 10 })];
  let seq = [1, 2, 3];
  for (let i = 0; i < 10; i++) {
    const l = m.forward(seq).logits;
    const row = l.subarray((seq.length - 1) * small.vocab, seq.length * small.vocab);
    seq = [...seq, row.indexOf(Math.max(...row))];
  }
  assert.deepEqual(out, seq.slice(3));
  m.dispose();
});
