// mla.test.js: multi-head latent attention (src/attention/mla.c, docs/attention-forms.md 4d): the
// absorbed path gives the plain path's outputs (layers, with and without a query latent) and a
// model's logits; generation over the latent cache (the absorbed step) picks the tokens the full
// forward picks; gradients with a query latent (qRank > 0, which the conformance suite's default
// options leave out); the positional encodings MLA refuses, with messages; the cache per token;
// PyTorch's module reproduces the logits to 1e-5 on both paths. The conformance suite checks the
// rest (float64 reference, gradients with the mutation check, threads, step, save/load, options).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builds, expectError, maxErr, rand, relMaxErr, TOL } from './helpers.js';
import { mlaF64 } from './reference.js';

const TOL_MLA = TOL.mla;

for (const { name, lib } of builds) {
  test(`${name}: MLA's absorbed path gives the plain path's outputs (layers: qRank 0 and > 0, ropeDim 0, causal or not)`, (t) => {
    let worst = 0, cases = 0;
    for (const [n, d, heads] of [[1, 8, 2], [9, 16, 4], [23, 24, 3]])
      for (const causal of [true, false])
        for (const opts of [{}, { kvRank: 3, ropeDim: 2, qRank: 5 }, { kvRank: 12, ropeDim: 0 }, { ropeDim: 8, qRank: 2 }]) {
          const x = rand(n * d, n + d + 1), v = rand(n * d, 5);
          const run = (path) => {
            const layer = lib.attentionLayer('mla', { n, d, heads, causal, seed: 4, attentionOptions: { ...opts, path } });
            const out = layer.forward({ x, q: v, k: v, v }).output;
            const ref = mlaF64({ x, n, d, heads, causal, options: layer.options, params: tensors(layer) });
            layer.dispose();
            return { out, ref };
          };
          const plain = run('plain'), absorbed = run('absorbed');
          const e = relMaxErr(absorbed.out, plain.out), eRef = relMaxErr(absorbed.out, absorbed.ref);
          assert.ok(e <= TOL_MLA, `n=${n} d=${d} heads=${heads} ${JSON.stringify(opts)}: absorbed vs plain ${e}`);
          assert.ok(eRef <= TOL_MLA, `n=${n} ${JSON.stringify(opts)}: absorbed vs float64 ${eRef}`);
          worst = Math.max(worst, e, eRef), cases++;
        }
    t.diagnostic(`${cases} layers: absorbed vs plain and vs float64, worst rel err ${worst.toExponential(2)} (tol ${TOL_MLA})`);
  });

  test(`${name}: MLA in a model: absorbed logits = plain logits, and generation over the latent cache picks the full forward's tokens`, (t) => {
    const base = { vocab: 17, dModel: 32, heads: 4, layers: 2, maxLen: 24, attention: 'mla', seed: 11 };
    const tokens = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8];
    let worst = 0;
    for (const attentionOptions of [{}, { kvRank: 4, ropeDim: 6, qRank: 8 }]) {
      const plain = lib.createModel({ ...base, attentionOptions: { ...attentionOptions, path: 'plain' } });
      const absorbed = lib.createModel({ ...base, attentionOptions: { ...attentionOptions, path: 'absorbed' } });
      const batch = { inputs: [tokens.slice(0, -1)], targets: [tokens.slice(1)] };
      for (let s = 0; s < 3; s++) plain.trainStep({ ...batch, lr: 1e-2 }), absorbed.trainStep({ ...batch, lr: 1e-2 });
      const a = plain.forward(tokens).logits, b = absorbed.forward(tokens).logits;
      const e = maxErr(b, a);
      worst = Math.max(worst, e);
      assert.ok(e <= TOL_MLA, `${JSON.stringify(attentionOptions)}: absorbed vs plain logits ${e}`);
      // the step (absorbed, cached latents) against the full forward re-run at every token
      // the sublayer has only Wo around the form: MLA makes its own queries, keys and values
      const bytes = plain.save(), hlen = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
      const names = Object.keys(JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen))));
      const own = names.filter((k) => k.startsWith('dec.0.self.') && !k.includes('.ln.'));
      assert.deepEqual(own.filter((k) => !k.startsWith('dec.0.self.mla.')).sort(), ['dec.0.self.bo', 'dec.0.self.wo']);
      const cached = plain.generate([3, 1, 4], { maxTokens: 16 }), rerun = plain.generate([3, 1, 4], { maxTokens: 16, cache: false });
      assert.deepEqual([...cached], [...rerun], `${JSON.stringify(attentionOptions)}: cached generation vs re-running the forward`);
      plain.dispose(), absorbed.dispose();
    }
    t.diagnostic(`model logits, absorbed vs plain: max err ${worst.toExponential(2)} (tol ${TOL_MLA}); greedy generation with the latent cache = without`);
  });

  test(`${name}: MLA gradients with a query latent (qRank > 0) match central differences`, (t) => {
    const n = 6, d = 12, heads = 3, seed = 21;
    const layer = lib.attentionLayer('mla', { n, d, heads, causal: true, seed, attentionOptions: { kvRank: 5, ropeDim: 2, qRank: 4 } });
    const x = rand(n * d, seed + 1), v = rand(n * d, seed + 2), dout = rand(n * d, seed + 3);
    const P0 = layer.params.map((p, i) => p + 0.1 * Math.sin(i)); // away from the initialisation's symmetry
    layer.setParams(P0);
    const loss = (xs) => layer.forward({ x: xs, q: v, k: v, v }).output.reduce((s, o, i) => s + o * dout[i], 0);
    layer.forward({ x, q: v, k: v, v });
    const g = layer.backward({ x, q: v, k: v, v, dout });
    const eps = 1e-2;
    let worst = 0, checked = 0;
    const probe = (what, grad, at) => { // the gradient along three coordinates of this tensor
      for (const i of [0, Math.floor(grad.length / 2), grad.length - 1]) {
        const fd = (at(i, eps) - at(i, -eps)) / (2 * eps);
        const e = Math.abs(fd - grad[i]) / Math.max(1e-3, Math.abs(fd));
        worst = Math.max(worst, e), checked++;
        assert.ok(e <= TOL.grad_check_tensor, `d${what}[${i}]: analytic ${grad[i]} vs central difference ${fd}`);
      }
    };
    probe('x', g.dx, (i, h) => { const xs = x.slice(); xs[i] += h; return loss(xs); });
    let off = 0;
    for (const tn of layer.tensors) {
      const o = off;
      probe(tn.name, g.dparams.subarray(o, o + tn.size), (i, h) => {
        const p = P0.slice();
        p[o + i] += h;
        layer.setParams(p);
        const f = loss(x);
        layer.setParams(P0);
        return f;
      });
      off += tn.size;
    }
    assert.deepEqual(layer.tensors.map((tn) => tn.name), ['w_dkv', 'w_uk', 'w_uv', 'w_kr', 'w_dq', 'w_uq', 'w_qr']);
    layer.dispose();
    t.diagnostic(`${checked} coordinates (x and 7 tensors), worst rel err ${worst.toExponential(2)} (tol ${TOL.grad_check_tensor})`);
  });
}

test('MLA and the model\'s positions: rope and alibi are refused with a message, the embeddings\' positions are taken', (t) => {
  const { lib } = builds[0];
  const base = { vocab: 9, dModel: 16, heads: 2, layers: 1, maxLen: 8, attention: 'mla' };
  expectError(() => lib.createModel({ ...base, positional: 'rope' }), /positional "rope".*"mla"/);
  expectError(() => lib.createModel({ ...base, positional: 'alibi' }), /"mla"/);
  expectError(() => lib.createModel({ ...base, attentionOptions: { ropeDim: 3 } }), /attentionOptions\.ropeDim must be even/);
  expectError(() => lib.createModel({ ...base, kvHeads: 1 }), /kvHeads/);
  for (const positional of ['none', 'sinusoidal', 'learned']) {
    const m = lib.createModel({ ...base, positional });
    assert.ok(m.forward([1, 2, 3]).logits.every(Number.isFinite), positional);
    m.dispose();
  }
  t.diagnostic('positional rope, alibi and kvHeads refused with mla; none, sinusoidal and learned run');
});

test('MLA\'s generation cache per token and layer: kvRank + ropeDim floats, against 2 dModel for softmax', (t) => {
  // counted from the model's finished options (the step state's layout is mla_step_floats in
  // src/attention/mla.c: the cache of L (kvRank + ropeDim) floats, then one row's scratch)
  const { lib } = builds[0];
  const rows = [];
  for (const dModel of [32, 64, 128]) {
    const m = lib.createModel({ vocab: 9, dModel, heads: 4, layers: 1, maxLen: 8, attention: 'mla' });
    const { kvRank, ropeDim } = m.config.attentionOptions;
    assert.ok(Number.isInteger(kvRank) && Number.isInteger(ropeDim), JSON.stringify(m.config.attentionOptions));
    rows.push(`dModel ${dModel}: MLA ${kvRank} + ${ropeDim} = ${kvRank + ropeDim} floats, softmax 2 x ${dModel} = ${2 * dModel} (${(2 * dModel / (kvRank + ropeDim)).toFixed(1)}x smaller)`);
    assert.ok(kvRank + ropeDim < 2 * dModel);
    m.dispose();
  }
  t.diagnostic(rows.join('; '));
});

/** name -> Float32Array of each tensor of a layer. */
function tensors(layer) {
  const out = {}, p = layer.params;
  let o = 0;
  for (const tn of layer.tensors) out[tn.name] = p.slice(o, (o += tn.size));
  return out;
}

const PYTHON = '/usr/bin/python3';
const SCRIPT = new URL('../../scripts/torch_model.py', import.meta.url).pathname;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;

test('MLA in PyTorch (scripts/torch_model.py) gives the library\'s logits to 1e-5, plain and absorbed', { skip: haveTorch ? false : 'python3-torch is missing' }, (t) => {
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-mla-'));
  try {
    const cases = [];
    for (const attentionOptions of [{}, { path: 'absorbed' }, { kvRank: 4, ropeDim: 6, qRank: 8, path: 'absorbed' }, { kvRank: 16, ropeDim: 0 }])
      for (const extra of [{}, { arch: 'encoder-decoder', norm: 'post' }]) {
        const m = lib.createModel({ vocab: 13, dModel: 24, heads: 3, layers: 2, dFF: 32, maxLen: 12, seed: 5, attention: 'mla', attentionOptions, ...extra });
        const batch = { inputs: [[1, 2, 3, 4, 5, 6, 7]], targets: [[2, 3, 4, 5, 6, 7, 8]], ...(extra.arch ? { source: [[4, 3, 2, 1]] } : {}) };
        for (let s = 0; s < 2; s++) m.trainStep({ ...batch, lr: 1e-2 });
        const tokens = [5, 2, 9, 1, 7, 3, 11, 4, 6], source = extra.arch ? [4, 3, 2, 1] : undefined;
        const i = cases.length, checkpoint = join(dir, `m${i}.safetensors`);
        writeFileSync(checkpoint, m.save());
        const logits = [...m.forward(tokens, source ? { source } : {}).logits];
        cases.push({ name: JSON.stringify({ ...attentionOptions, ...extra }), checkpoint, tokens, source, logits, batch, out: join(dir, `t${i}.safetensors`) });
        m.dispose();
      }
    writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
    // one PyTorch process for every case: its logits error, then 3 training steps (checked in torch.test.js)
    const r = spawnSync(PYTHON, [SCRIPT, 'check', join(dir, 'cases.json')], { encoding: 'utf8', maxBuffer: 1 << 26 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    for (const [i, c] of cases.entries())
      assert.ok(report[i].logits_error <= TOL_MLA, `${c.name}: PyTorch vs library logits ${report[i].logits_error}`);
    t.diagnostic(`PyTorch vs library logits (tol ${TOL_MLA}): ${cases.map((c, i) => `${c.name} ${report[i].logits_error.toExponential(2)}`).join('; ')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
