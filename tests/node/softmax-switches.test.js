// softmax-switches.test.js: softmax's 2025 switches (attentionOptions window, softcap,
// learnedSinks, outputGate, qkNorm; docs/attention-forms.md section 1b), alone and together, on
// both builds: the layer against the float64 reference (tests/node/reference.js) with settings the
// conformance suite's random options do not reach (a window, a small cap); finite-difference
// gradients of q, k, v, x and every parameter, with a 10% error caught; step = forward; 1/2/4
// threads bit-identical; models with GQA and each positional encoding: gradient checks, cached
// generation = full forward, checkpoints; and the Errors.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectError, rand, relMaxErr, stepThrough } from './helpers.js';
import { REFERENCES } from './reference.js';
import { loadAttention } from '../../wasm/index.js';
import { readSafetensors } from '../../wasm/safetensors.js';

const SETS = [
  { window: 3 },
  { softcap: 1.5 },
  { learnedSinks: true },
  { outputGate: true },
  { qkNorm: true },
  { window: 2, softcap: 2, learnedSinks: true, outputGate: true, qkNorm: true },
];
const label = (o) => JSON.stringify(o);

function tensorMap(layer, params = layer.params) {
  const out = {};
  let o = 0;
  for (const t of layer.tensors) out[t.name] = params.slice(o, (o += t.size));
  return out;
}
function perturb(layer, seed, scale = 0.3) {
  const p = layer.params;
  if (!p.length) return p;
  const noise = rand(p.length, seed, -scale, scale);
  const out = p.map((x, i) => x + noise[i]);
  layer.setParams(out);
  return out;
}
const ref = (layer, data) => REFERENCES.softmax({ ...data, n: layer.n, m: layer.m, d: layer.d, heads: layer.heads,
  causal: true, options: layer.options, params: tensorMap(layer), maxLen: layer.maxLen });

for (const { name: build, lib } of builds) {
  test(`softmax switches [${build}]: the layer matches the float64 reference, and each switch changes the output`, (t) => {
    let worst = 0;
    for (const set of SETS)
      for (const [n, heads] of [[1, 1], [7, 2], [70, 4]]) {
        const d = 8, seed = 40 + n;
        const layer = lib.attentionLayer('softmax', { n, d, heads, causal: true, maxLen: n + 3, seed, attentionOptions: set });
        perturb(layer, seed + 1);
        const data = { q: rand(n * d, seed + 2, -2, 2), k: rand(n * d, seed + 3, -2, 2), v: rand(n * d, seed + 4), x: rand(n * d, seed + 5) };
        const got = layer.forward(data).output, want = ref(layer, data);
        const e = relMaxErr(got, want);
        worst = Math.max(worst, e);
        assert.ok(e <= 1e-5, `${label(set)} n=${n} heads=${heads}: rel err ${e}`);
        if (n === 70) { // the switch does something: the plain layer differs
          const plain = lib.attention('softmax', { n, d, heads, causal: true, ...data }).output;
          assert.ok(relMaxErr(got, plain) > 1e-3, `${label(set)}: the output equals plain softmax's`);
        }
        // the weights for display are the same rows (a sink's rows sum to less than 1)
        const w = layer.forward({ ...data, returnWeights: true });
        assert.ok(relMaxErr(w.output, got) <= 1e-5, `${label(set)}: the weights path's output`);
        if (set.window) {
          for (let h = 0; h < heads; h++)
            for (let i = 0; i < n; i++)
              for (let j = 0; j <= i - set.window; j++) assert.equal(w.weights[h * n * n + i * n + j], 0, `weight (${h}, ${i}, ${j}) is outside the window`);
        }
        layer.dispose();
      }
    t.diagnostic(`${build}: ${SETS.length} switch sets x 3 shapes, worst rel err vs float64 ${worst.toExponential(2)}`);
  });

  test(`softmax switches [${build}]: gradients of q, k, v, x and every parameter match central differences; x1.1 is caught`, (t) => {
    let worst = 0;
    for (const set of SETS) {
      const n = 6, d = 8, heads = 2, seed = 300;
      const layer = lib.attentionLayer('softmax', { n, d, heads, causal: true, maxLen: 8, seed, attentionOptions: set });
      const P0 = perturb(layer, seed + 1);
      const base = { q: rand(n * d, seed + 2, -2, 2), k: rand(n * d, seed + 3, -2, 2), v: rand(n * d, seed + 4), x: rand(n * d, seed + 5) };
      const dout = rand(n * d, seed + 6);
      const loss = (data) => {
        const o = layer.forward(data).output;
        let s = 0;
        for (let i = 0; i < o.length; i++) s += dout[i] * o[i];
        return s;
      };
      layer.forward(base);
      const g = layer.backward({ ...base, dout });
      const targets = ['q', 'k', 'v', ...(set.outputGate ? ['x'] : [])].map((key) => ({ key, grad: g[`d${key}`] }));
      let off = 0;
      for (const tn of layer.tensors) {
        targets.push({ key: tn.name, param: true, off, size: tn.size, grad: g.dparams.slice(off, off + tn.size) });
        off += tn.size;
      }
      if (!set.outputGate) assert.ok(g.dx.every((z) => z === 0), `${label(set)}: dx without the gate is zero`);
      for (const tg of targets) {
        const x0 = tg.param ? P0.slice(tg.off, tg.off + tg.size) : base[tg.key];
        const at = (xs) => {
          if (!tg.param) return loss({ ...base, [tg.key]: xs });
          const p = P0.slice();
          p.set(xs, tg.off);
          layer.setParams(p);
          const f = loss(base);
          layer.setParams(P0);
          return f;
        };
        const gn = Math.hypot(...tg.grad);
        assert.ok(gn > 0, `${label(set)} d${tg.key} is zero`);
        const u = Float64Array.from(tg.grad, (z) => z / gn);
        const eps = 1e-2;
        const plus = Float32Array.from(x0, (z, i) => z + eps * u[i]), minus = Float32Array.from(x0, (z, i) => z - eps * u[i]);
        let an = 0;
        for (let i = 0; i < u.length; i++) an += tg.grad[i] * (plus[i] - minus[i]);
        const fd = at(plus) - at(minus);
        const e = Math.abs(fd - an) / Math.max(Math.abs(an), 1e-12), e11 = Math.abs(fd - 1.1 * an) / Math.max(Math.abs(1.1 * an), 1e-12);
        worst = Math.max(worst, e);
        assert.ok(e <= 0.03, `${label(set)} d${tg.key}: fd ${fd} vs analytic ${an} (rel ${e})`);
        assert.ok(e11 > 0.03, `${label(set)} d${tg.key}: a 10% error passes (rel ${e11})`);
      }
      layer.dispose();
    }
    t.diagnostic(`${build}: gradients of ${SETS.length} switch sets, worst rel err ${worst.toExponential(2)} (tol 0.03)`);
  });

  test(`softmax switches [${build}]: step by step equals the causal forward`, () => {
    for (const set of SETS) {
      const n = 11, d = 8, heads = 2, seed = 600;
      const layer = lib.attentionLayer('softmax', { n, d, heads, causal: true, maxLen: n, seed, attentionOptions: set });
      perturb(layer, seed + 1);
      const data = { q: rand(n * d, seed + 2, -2, 2), k: rand(n * d, seed + 3, -2, 2), v: rand(n * d, seed + 4), x: rand(n * d, seed + 5) };
      const full = layer.forward(data).output, steps = stepThrough(layer, data, n, d);
      assert.ok(relMaxErr(steps, full) <= 1e-5, `${label(set)}: step vs forward ${relMaxErr(steps, full)}`);
      layer.dispose();
    }
  });

  const small = { vocab: 12, dModel: 16, heads: 4, layers: 2, maxLen: 10, seed: 5 };
  const MODELS = [
    { attentionOptions: SETS[5] },
    { block: 'llama', kvHeads: 2, attentionOptions: SETS[5] }, // rope, GQA
    { block: 'llama', kvHeads: 1, attentionOptions: { qkNorm: true, window: 3 } },
    { positional: 'alibi', kvHeads: 2, attentionOptions: { window: 4, learnedSinks: true, softcap: 3 } },
    { positional: 'none', attentionOptions: { outputGate: true, qkNorm: true } },
    { positional: 'learned', norm: 'post', attentionOptions: { learnedSinks: true, window: 2 } },
  ];
  test(`softmax switches [${build}]: models (GQA, every positional) pass the gradient check; cached generation = full forward; checkpoints`, (t) => {
    for (const c of MODELS) {
      const m = lib.createModel({ ...small, ...c });
      const g = m.gradientCheck();
      t.diagnostic(`${label(c)}: gradient error ${g.error.toExponential(2)}, worst ${g.worstTensor} ${g.worstTensorError.toExponential(2)}`);
      assert.ok(g.error <= TOL.grad_check, `${label(c)}: gradient error ${g.error}`);
      assert.ok(g.worstTensorError <= TOL.grad_check_tensor, `${label(c)}: ${g.worstTensor} ${g.worstTensorError}`);
      assert.equal(g.zeroGradTensors, 0, `${label(c)}: ${g.firstZeroGradTensor} has no gradient`);
      m.trainStep({ inputs: [[1, 2, 3, 4, 5, 6, 7, 8]], targets: [[2, 3, 4, 5, 6, 7, 8, 9]], lr: 0.05 });
      const opts = { maxTokens: 7, temperature: 1, seed: 9 };
      assert.deepEqual([...m.generate([1, 2, 3], opts)], [...m.generate([1, 2, 3], { ...opts, cache: false })], `${label(c)}: generation`);
      const back = lib.loadModel(m.save());
      assert.deepEqual(back.config, m.config);
      assert.deepEqual(back.config.attentionOptions, c.attentionOptions, 'the options travel in the checkpoint');
      assert.deepEqual([...back.forward([1, 5, 2, 7, 3]).logits], [...m.forward([1, 5, 2, 7, 3]).logits]);
      back.dispose();
      m.dispose();
    }
    // the tensors' names and shapes, and a mutated gradient of each is caught
    const m = lib.createModel({ ...small, attentionOptions: { learnedSinks: true, outputGate: true, qkNorm: true } });
    const ts = readSafetensors(m.save()).tensors;
    assert.deepEqual(ts.get('dec.0.self.attn.sinks').shape, [4]);
    assert.deepEqual(ts.get('dec.0.self.attn.gate').shape, [16, 16]);
    assert.deepEqual(ts.get('dec.1.self.attn.q_norm').shape, [4]);
    assert.deepEqual(ts.get('dec.1.self.attn.k_norm').shape, [4]);
    for (const tensor of ['dec.0.self.attn.sinks', 'dec.1.self.attn.gate', 'dec.0.self.attn.q_norm', 'dec.1.self.attn.k_norm']) {
      const bad = m.gradientCheck({ mutate: { tensor, factor: 1.1 } });
      assert.ok(bad.worstTensorError > TOL.grad_check_tensor, `a 10% error in ${tensor}'s gradient passes (${bad.worstTensorError})`);
    }
    m.dispose();
  });

  test(`softmax switches [${build}]: a window layer generates from a ring of 2 window rows, as from a full cache`, () => {
    // window 5 of maxLen 48: the prompt (12 tokens, past the window) goes into the ring by the batched
    // prefill, and 36 new tokens wrap it seven times; GQA + rope, and ALiBi (its bias counts distances
    // within the ring's view), with every other switch on, with every head's K/V and with the K/V heads'
    // only (grouped-query attention: the ring keeps kvHeads x dHead columns, and the step reads them)
    for (const c of [{ block: 'llama', kvHeads: 2, attentionOptions: { window: 5, qkNorm: true, outputGate: true } },
      { positional: 'alibi', attentionOptions: { window: 5, learnedSinks: true, softcap: 3 } },
      { positional: 'alibi', kvHeads: 1, attentionOptions: { window: 5, learnedSinks: true, softcap: 3 } }]) {
      const m = lib.createModel({ ...small, maxLen: 48, ...c });
      m.trainStep({ inputs: [[1, 2, 3, 4, 5, 6, 7, 8]], targets: [[2, 3, 4, 5, 6, 7, 8, 9]], lr: 0.05 });
      const KC = (c.kvHeads ?? small.heads) * (small.dModel / small.heads);
      assert.deepEqual(m.generationBytes().layers, [4 * 2 * 10 * KC, 4 * 2 * 10 * KC], `${label(c)}: 2 x window rows of the K/V heads' K and V`);
      const prompt = Array.from({ length: 12 }, (_, i) => 1 + ((i * 5) % 11));
      for (const seed of [1, 2, 3]) {
        const opts = { maxTokens: 36, temperature: 1, seed };
        assert.deepEqual([...m.generate(prompt, opts)], [...m.generate(prompt, { ...opts, cache: false })], `${label(c)}: seed ${seed}`);
      }
      m.dispose();
    }
  });

  test(`softmax switches [${build}]: streaming past maxLen (rolling cache) reads as a fresh forward of the last window tokens`, () => {
    // with a sliding window W in each of 2 layers a token's logits read at most 2 (W - 1) + 1 tokens
    // back: with W <= 4 the rolling cache of 8 evicts nothing they read, so streaming must equal a
    // fresh forward of the last 8 tokens exactly (without the window, the deeper layers' cached
    // keys remember evicted tokens, and the two differ by design)
    for (const c of [MODELS[1], MODELS[2], { block: 'llama', positional: 'alibi', kvHeads: 2, attentionOptions: { learnedSinks: true, softcap: 2, window: 4, outputGate: true } }]) {
      const m = lib.createModel({ ...small, ...c });
      m.trainStep({ inputs: [[1, 2, 3, 4, 5, 6, 7, 8]], targets: [[2, 3, 4, 5, 6, 7, 8, 9]], lr: 0.05 });
      const toks = Array.from({ length: 30 }, (_, i) => 1 + ((i * 7) % 11));
      const win = m.streamLosses(toks, { window: 8 }), rc = m.streamLosses(toks, { window: 8, recompute: true });
      const err = Math.max(...rc.map((x, i) => Math.abs(x - win[i])));
      assert.ok(err < 2e-5, `${label(c)}: streaming vs recompute ${err}`);
      const plain = lib.createModel({ ...small, ...c, attentionOptions: {} });
      assert.ok(Math.max(...plain.streamLosses(toks, { window: 8 }).map((x, i) => Math.abs(x - win[i]))) > 1e-3, 'the switches act while streaming');
      const g = m.generate([1, 2, 3], { maxTokens: 25, window: 8, sinks: 2, temperature: 1, seed: 4 });
      assert.equal(g.length, 25);
      assert.deepEqual([...m.generate([1, 2, 3], { maxTokens: 5, window: 10 })], [...m.generate([1, 2, 3], { maxTokens: 5 })],
        'within the window, streaming generation is the cached generation');
      plain.dispose(), m.dispose();
    }
  });

  test(`softmax switches [${build}]: Errors naming the option and the conflict`, () => {
    const mk = (o, extra = {}) => () => lib.createModel({ ...small, ...extra, attentionOptions: o });
    expectError(mk({ window: 11 }), /attentionOptions\.window \(11\) must be at most maxLen \(10\)/);
    expectError(mk({ window: 0 }), /attentionOptions\.window must be an integer in \[1, /);
    expectError(mk({ softcap: 0 }), /attentionOptions\.softcap must be "off" or a number in \(0, /);
    expectError(mk({ softcap: -2 }), /attentionOptions\.softcap/);
    expectError(mk({ softcap: NaN }), /attentionOptions\.softcap/);
    expectError(mk({ learnedSinks: 'yes' }), /attentionOptions\.learnedSinks must be true or false/);
    expectError(mk({ outputGate: true }, { arch: 'encoder-decoder' }), /attentionOptions\.outputGate applies to causal self-attention/);
    expectError(mk({ window: 3 }, { arch: 'encoder-decoder' }), /attentionOptions\.window applies to causal self-attention/);
    expectError(() => lib.attention('softmax', { n: 2, d: 4, q: rand(8), k: rand(8), v: rand(8), attentionOptions: { qkNorm: true } }),
      /attentionOptions\.qkNorm applies to causal self-attention/);
    const m = lib.createModel({ ...small, block: 'llama', attentionOptions: { window: 4 } });
    expectError(() => m.saveLlama2c(), /llama2\.c cannot run this model: attentionOptions\.window/);
    m.dispose();
    const ok = lib.createModel({ ...small, attentionOptions: { window: 10, softcap: 'off' } }); // the edges are fine
    assert.ok(Number.isFinite(ok.forward([1, 2]).logits[0]));
    ok.dispose();
  });
}

test('softmax switches: outputs and gradients are bit-identical at 1, 2 and 4 threads', async () => {
  const lib = await loadAttention({ threads: 4 });
  const n = 300, d = 32, heads = 4, seed = 70;
  for (const set of [SETS[5], { window: 70, learnedSinks: true }, { softcap: 5, qkNorm: true }]) {
    const layer = lib.attentionLayer('softmax', { n, d, heads, causal: true, maxLen: n, seed, attentionOptions: set });
    perturb(layer, seed + 1);
    const data = { q: rand(n * d, seed + 2), k: rand(n * d, seed + 3), v: rand(n * d, seed + 4), x: rand(n * d, seed + 5) };
    const dout = rand(n * d, seed + 6);
    const runs = [1, 2, 4].map((th) => {
      lib.setThreads(th);
      return { o: layer.forward(data).output, ...layer.backward({ ...data, dout }) };
    });
    for (const r of runs.slice(1))
      for (const key of ['o', 'dq', 'dk', 'dv', 'dx', 'dparams'])
        assert.ok(r[key].every((x, i) => Object.is(x, runs[0][key][i])), `${label(set)}: ${key} differs across threads`);
    layer.dispose();
  }
});

test('softmax switches: a model trains to the same bits at 1 and 4 threads', async () => {
  const lib = await loadAttention({ threads: 4 });
  const run = (threads) => {
    lib.setThreads(threads);
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 4, kvHeads: 2, layers: 2, maxLen: 32, seed: 8, block: 'llama',
      attentionOptions: { window: 3, softcap: 4, learnedSinks: true, outputGate: true, qkNorm: true } });
    const losses = [];
    for (let s = 0; s < 3; s++) losses.push(m.trainStep({ task: 'reverse', batchSize: 4 }).loss);
    const logits = m.forward([1, 2, 3, 4, 5]).logits;
    m.dispose();
    return { losses, logits };
  };
  const a = run(1), b = run(4);
  lib.setThreads(4);
  assert.deepEqual(b.losses, a.losses);
  assert.ok(b.logits.every((x, i) => Object.is(x, a.logits[i])), 'logits differ across threads');
});
