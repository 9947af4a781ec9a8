// dsa.test.js: DeepSeek Sparse Attention (src/attention/dsa.c, src/model/form_dsa.c) by hand on small
// cases, on both builds: top-k over every earlier key is the dense causal softmax; the keys it reads
// are the indexer's top k (ties to the lower index) on a case worked out by hand and against the
// float64 reference (tests/node/reference.js); the warm-up's indexer gradient against float64 finite
// differences of the KL loss; the warm-up freezes all but the indexer; in sparse training the KL
// reaches neither q, k nor x; option errors; and a tiny model trained in both stages, then generating
// with the cache as by recomputing.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectError, rand, relMaxErr, softmaxAttentionF64, stepThrough } from './helpers.js';
import { dsaF64, dsaIndexF64, dsaTopK } from './reference.js';
import { safetensorsHeader } from '../../wasm/safetensors.js';

/** name -> Float32Array of each tensor of a layer. */
function tensorMap(layer, params = layer.params) {
  const out = {};
  let o = 0;
  for (const t of layer.tensors) out[t.name] = params.slice(o, (o += t.size));
  return out;
}

/** name -> Float32Array of each tensor of a model, from its checkpoint. */
function modelTensors(model) {
  const bytes = model.save();
  const h = safetensorsHeader(bytes, 'save');
  const out = {};
  for (const [name, t] of h.tensors) out[name] = new Float32Array(bytes.slice(t.begin, t.end).buffer);
  return out;
}

const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

for (const { name: build, lib } of builds) {
  test(`dsa [${build}]: with topK >= every query's keys it is the dense causal softmax (both stages)`, (t) => {
    let worst = 0;
    for (const [n, heads, topK] of [[1, 1, 1], [6, 2, 6], [9, 4, 16]])
      for (const stage of ['warmup', 'sparse']) {
        const d = 8, seed = 40 + n;
        // topK 16 with 9 keys: a layer of maxLen 16 (a query never has more than maxLen keys: topK <= maxLen)
        const layer = lib.attentionLayer('dsa', { n, d, heads, causal: true, maxLen: Math.max(n, topK), seed, attentionOptions: { topK, stage } });
        const data = { q: rand(n * d, seed + 1), k: rand(n * d, seed + 2), v: rand(n * d, seed + 3), x: rand(n * d, seed + 4) };
        const got = layer.forward({ ...data, returnWeights: true });
        const want = softmaxAttentionF64({ ...data, n, d, heads, causal: true });
        const e = Math.max(relMaxErr(got.output, want.output), relMaxErr(got.weights, want.weights));
        worst = Math.max(worst, e);
        assert.ok(e <= TOL.attention, `n=${n} heads=${heads} topK=${topK} ${stage}: rel err ${e}`);
        layer.dispose();
      }
    t.diagnostic(`dense when topK >= t + 1: worst rel err ${worst.toExponential(2)} (tol ${TOL.attention})`);
  });

  test(`dsa [${build}]: each query reads the top k of I by hand (ties to the lower index; one set for every head)`, (t) => {
    // one indexer head of width 1: q^I_t = x_t0, k^I_s = x_s1, w_t = x_t0; with x_t0 = 1, I_ts = ReLU(x_s1)
    const n = 8, d = 4, heads = 2, topK = 3;
    const col1 = [0.5, -1, 0.5, 2, 0, 0.25, 2, -0.5]; // ties (0.5, 0.5; 2, 2) and ReLU's zeros (-1, 0, -0.5)
    const x = new Float32Array(n * d);
    for (let s = 0; s < n; s++) x[s * d] = 1, x[s * d + 1] = col1[s], x[s * d + 2] = 0.3 * s, x[s * d + 3] = -0.2;
    const layer = lib.attentionLayer('dsa', { n, d, heads, causal: true, maxLen: n, seed: 3, attentionOptions: { indexHeads: 1, indexDim: 1, topK } });
    const e = (i) => Float32Array.from({ length: d }, (_, c) => (c === i ? 1 : 0));
    layer.setParams(Float32Array.from([...e(0), ...e(1), ...e(0)])); // w_qi, w_ki, w_w
    // by hand: the 3 largest ReLU(col1[s]) for s <= t, ties to the lower index
    // e.g. t = 6: scores 0.5 0 0.5 2 0 0.25 2 -> 3 and 6 (2, the tie both kept), then 0 (0.5: the lower of 0 and 2)
    const byHand = [[0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 2, 3], [0, 2, 3], [0, 3, 6], [0, 3, 6]];
    const data = { q: rand(n * d, 5), k: rand(n * d, 6), v: rand(n * d, 7), x };
    const got = layer.forward({ ...data, returnWeights: true });
    for (let h = 0; h < heads; h++)
      for (let q = 0; q < n; q++) {
        const read = [];
        for (let s = 0; s < n; s++) if (got.weights[(h * n + q) * n + s] > 0) read.push(s);
        assert.deepEqual(read, byHand[q], `head ${h} query ${q}: reads ${read}, by hand ${byHand[q]}`);
      }
    // the reference computes I directly: its scores are ReLU(col1) here, and its output agrees
    const ref = dsaF64({ ...data, n, d, heads, options: layer.options, params: tensorMap(layer) });
    const I = dsaIndexF64({ x, n, d, options: layer.options, params: tensorMap(layer) });
    I.forEach((row, q) => row.forEach((v, s) => assert.equal(v, Math.max(col1[s], 0), `I[${q}][${s}]`)));
    assert.deepEqual(ref.sets, byHand);
    const err = relMaxErr(got.output, ref.output);
    assert.ok(err <= TOL.attention, `output vs reference: ${err}`);
    layer.dispose();
    t.diagnostic(`hand case: sets ${JSON.stringify(byHand)} read by both heads; output vs reference ${err.toExponential(2)}`);
  });

  test(`dsa [${build}]: the keys read are the reference's top k of I on random inputs, and the output matches`, (t) => {
    let worst = 0, smallestGap = Infinity, cases = 0, largest = 0;
    for (const [n, heads, topK, J, D] of [[12, 2, 3, 2, 8], [16, 4, 5, 3, 4], [20, 1, 1, 1, 2]]) {
      const d = 8, seed = 300 + n;
      const layer = lib.attentionLayer('dsa', { n, d, heads, causal: true, maxLen: n, seed, attentionOptions: { topK, indexHeads: J, indexDim: D } });
      const data = { q: rand(n * d, seed + 1), k: rand(n * d, seed + 2), v: rand(n * d, seed + 3), x: rand(n * d, seed + 4) };
      const params = tensorMap(layer);
      const I = dsaIndexF64({ x: data.x, n, d, options: layer.options, params });
      // a choice the float32 indexer could make differently from the float64 one needs two scores
      // within rounding of each other across the cut: measure the margin at the k-th key
      I.forEach((row) => {
        largest = Math.max(largest, ...row.map(Math.abs));
        const sorted = [...row].sort((a, b) => b - a);
        if (sorted.length > topK && sorted[topK - 1] !== sorted[topK]) smallestGap = Math.min(smallestGap, sorted[topK - 1] - sorted[topK]);
      });
      const got = layer.forward({ ...data, returnWeights: true });
      for (let q = 0; q < n; q++) {
        const want = dsaTopK(I[q], topK);
        for (let h = 0; h < heads; h++) {
          const read = [];
          for (let s = 0; s < n; s++) if (got.weights[(h * n + q) * n + s] > 0) read.push(s);
          assert.deepEqual(read, want, `n=${n} head ${h} query ${q}`);
        }
      }
      const e = relMaxErr(got.output, dsaF64({ ...data, n, d, heads, options: layer.options, params }).output);
      worst = Math.max(worst, e), cases++;
      assert.ok(e <= TOL.attention, `n=${n}: output rel err ${e}`);
      layer.dispose();
    }
    // float32 index scores are within a few ulps of float64's: 64 ulps of the largest is far above that
    const rounding = 64 * 2 ** -23 * (1 + largest);
    assert.ok(smallestGap > rounding, `a near-tie at the cut (${smallestGap} <= ${rounding}) would make this case depend on rounding`);
    t.diagnostic(`${cases} cases: sets equal the reference's, output rel err ${worst.toExponential(2)}; smallest margin at the k-th key ${smallestGap.toExponential(2)} (64 ulps of the largest |I|: ${rounding.toExponential(2)})`);
  });

  test(`dsa [${build}]: step with the cache equals the causal forward with k < t (both stages)`, (t) => {
    let worst = 0;
    for (const stage of ['warmup', 'sparse']) {
      const n = 14, d = 8, heads = 2, seed = 77;
      const layer = lib.attentionLayer('dsa', { n, d, heads, causal: true, maxLen: n, seed, attentionOptions: { topK: 4, stage } });
      const data = { q: rand(n * d, seed + 1), k: rand(n * d, seed + 2), v: rand(n * d, seed + 3), x: rand(n * d, seed + 4) };
      const full = layer.forward(data).output;
      const steps = stepThrough(layer, data, n, d);
      const e = relMaxErr(steps, full);
      worst = Math.max(worst, e);
      assert.ok(e <= 1e-5, `${stage}: step vs forward ${e}`);
      layer.dispose();
    }
    t.diagnostic(`step vs forward with topK 4 of 14: worst rel err ${worst.toExponential(2)}`);
  });

  // A one-layer model without rotary positions (its hooks then show q, k as the form reads them).
  const tiny = (stage, extra = {}) => lib.createModel({ attention: 'dsa', vocab: 12, dModel: 8, heads: 2, layers: 1, dFF: 16, maxLen: 8,
    positional: 'learned', seed: 11, attentionOptions: { stage, topK: 3, indexHeads: 2, indexDim: 3 }, ...extra });
  // the first AdamW step with beta1 = beta2 = 0 moves each parameter by -lr g / (|g| + eps): g from it
  const HYPER = { lr: 2 ** -7, beta1: 0, beta2: 0, eps: 0.5, weightDecay: 0, clip: 0 };
  const gradFromStep = (before, after) => Float64Array.from(before, (p, i) => {
    const dp = after[i] - p, a = Math.abs(dp);
    return -Math.sign(dp) * a * HYPER.eps / (HYPER.lr - a);
  });
  const inputs = [[1, 5, 3, 7, 2, 9]], targets = [[5, 3, 7, 2, 9, 4]];

  test(`dsa [${build}]: warm-up: the indexer's gradient is that of its KL loss (float64 finite differences); the rest stays frozen`, (t) => {
    for (const stage of ['warmup', 'sparse']) {
      const m = tiny(stage);
      const n = inputs[0].length, d = 8, heads = 2;
      const P = modelTensors(m);
      const { cache } = m.runWithCache(inputs[0]);
      // the form's input x: the pre-norm LayerNorm of the block's input (eps 1e-5), in float64
      const r = cache['blocks.0.hook_resid_pre'].data, x = new Float64Array(n * d);
      for (let i = 0; i < n; i++) {
        let mu = 0, v = 0;
        for (let c = 0; c < d; c++) mu += r[i * d + c] / d;
        for (let c = 0; c < d; c++) v += (r[i * d + c] - mu) ** 2 / d;
        for (let c = 0; c < d; c++) x[i * d + c] = ((r[i * d + c] - mu) / Math.sqrt(v + 1e-5)) * P['dec.0.self.ln.w'][c] + P['dec.0.self.ln.b'][c];
      }
      const q = cache['blocks.0.attn.hook_q'].data, k = cache['blocks.0.attn.hook_k'].data, v = cache['blocks.0.attn.hook_v'].data;
      const options = m.config.attentionOptions;
      const names = ['w_qi', 'w_ki', 'w_w'];
      const params = Object.fromEntries(names.map((s) => [s, Float64Array.from(P[`dec.0.self.dsa.${s}`])]));
      const kl = () => dsaF64({ q, k, v, x, n, d, heads, options, params }).indexerLoss;
      const r0 = m.trainStep({ inputs, targets, ...HYPER });
      assert.ok(Math.abs(r0.sideLoss - kl()) <= 1e-5 * (1 + kl()), `${stage}: the reported indexer loss ${r0.sideLoss} vs the float64 KL ${kl()}`);
      const P1 = modelTensors(m);
      let worst = 0;
      for (const s of names) {
        const name = `dec.0.self.dsa.${s}`, p = params[s];
        const fd = Float64Array.from(p, (_, i) => {
          const h = 1e-6, x0 = p[i];
          p[i] = x0 + h; const up = kl();
          p[i] = x0 - h; const down = kl();
          p[i] = x0;
          return (up - down) / (2 * h);
        });
        const g = gradFromStep(P[name], P1[name]);
        const e = Math.hypot(...g.map((z, i) => z - fd[i])) / Math.hypot(...fd);
        worst = Math.max(worst, e);
        assert.ok(Math.hypot(...fd) > 1e-4, `${stage} ${name}: the KL moves with it`);
        assert.ok(e <= 1e-2, `${stage} ${name}: gradient vs float64 finite differences of the KL: rel err ${e}`);
      }
      // warm-up: nothing but the indexer moved; sparse: everything trains
      const moved = Object.keys(P).filter((name) => !same(P[name], P1[name]));
      if (stage === 'warmup') assert.deepEqual(moved, names.map((s) => `dec.0.self.dsa.${s}`), 'warm-up: only the indexer moves');
      else assert.ok(moved.includes('dec.0.self.wq') && moved.includes('wte') && moved.length > 10, `sparse: the model trains (${moved})`);
      t.diagnostic(`${stage}: indexer loss ${r0.sideLoss.toFixed(5)} (float64 ${kl().toFixed(5)}); indexer gradient vs float64 FD of the KL worst rel err ${worst.toExponential(2)}; ${moved.length} tensors moved`);
      m.dispose();
    }
  });

  test(`dsa [${build}]: sparse training: the KL reaches neither q, k nor x (only the indexer's parameters)`, (t) => {
    // only position 0 is scored: its one key has weight 1, so the language-modelling loss gives q and
    // k (wq, bq, wk, bk) no gradient, nor positions 1.. of the input (their wpe rows, and the
    // embeddings of tokens seen only there); the indexer's KL covers every query
    const m = tiny('sparse');
    const P = modelTensors(m);
    const r = m.trainStep({ inputs, targets, mask: [[1, 0, 0, 0, 0, 0]], ...HYPER });
    const P1 = modelTensors(m);
    assert.ok(r.sideLoss > 0);
    for (const name of ['dec.0.self.wq', 'dec.0.self.bq', 'dec.0.self.wk', 'dec.0.self.bk'])
      assert.ok(same(P[name], P1[name]), `${name} moved: the KL's gradient reached q or k`);
    const d = 8;
    assert.ok(same(P.wpe.slice(d, 6 * d), P1.wpe.slice(d, 6 * d)), 'wpe rows 1..5 moved: the KL reached x');
    for (const tok of [5, 3, 7, 2, 9])
      assert.ok(same(P.wte.slice(tok * d, tok * d + d), P1.wte.slice(tok * d, tok * d + d)), `wte row ${tok} moved: the KL reached x`);
    for (const s of ['w_qi', 'w_ki', 'w_w']) assert.ok(!same(P[`dec.0.self.dsa.${s}`], P1[`dec.0.self.dsa.${s}`]), `${s} learns`);
    assert.ok(!same(P['dec.0.self.wv'], P1['dec.0.self.wv']), 'the scored position trains v');
    m.dispose();
    t.diagnostic('sparse stage, loss on position 0 only: wq, bq, wk, bk, wpe[1..5] and the later tokens\' embeddings unchanged; the indexer and wv moved');
  });

  test(`dsa [${build}]: bad options are Errors naming them, and the library stays usable`, () => {
    const shape = { n: 4, d: 8, heads: 2, causal: true, maxLen: 8, q: rand(32, 1), k: rand(32, 2), v: rand(32, 3) };
    for (const [opt, value] of [['indexDim', 0], ['topK', 0], ['indexHeads', 0], ['topK', 2.5], ['stage', 'dense']])
      expectError(() => lib.attention('dsa', { ...shape, attentionOptions: { [opt]: value } }), new RegExp(`attentionOptions\\.${opt}`));
    // a top-k beyond maxLen (issue 48): a query never has more keys than that to choose from
    expectError(() => lib.attention('dsa', { ...shape, attentionOptions: { topK: 9 } }), /attentionOptions\.topK \(9\) must be at most maxLen \(8\)/);
    expectError(() => lib.createModel({ attention: 'dsa', vocab: 12, dModel: 8, heads: 2, layers: 1, maxLen: 8, attentionOptions: { topK: 12 } }),
      /attentionOptions\.topK \(12\) must be at most maxLen \(8\): a query never has more keys than that to choose from/);
    const short = lib.attentionLayer('dsa', { n: 4, d: 8, heads: 2, causal: true, maxLen: 5 });
    assert.equal(short.options.topK, 5, 'unset: 16, or maxLen when shorter');
    short.dispose();
    expectError(() => lib.attention('dsa', { ...shape, causal: false }), /dsa/);
    expectError(() => lib.createModel({ attention: 'dsa', vocab: 12, dModel: 8, heads: 2, layers: 1, maxLen: 8, attentionOptions: { indexDim: 0 } }),
      /attentionOptions\.indexDim/);
    const m = tiny('warmup');
    expectError(() => m.setAttentionOptions({ topK: 2 }), /attentionOptions\.topK of attention "dsa" is fixed when the model is created/);
    expectError(() => m.setAttentionOptions({ stage: 'later' }), /attentionOptions\.stage/);
    expectError(() => m.setAttentionOptions({ window: 2 }), /window/);
    assert.equal(m.config.attentionOptions.stage, 'warmup', 'a refused change leaves the model as it was');
    const soft = lib.createModel({ vocab: 12, dModel: 8, heads: 2, layers: 1, maxLen: 8 });
    expectError(() => soft.setAttentionOptions({ stage: 'sparse' }), /stage/);
    soft.dispose();
    assert.equal(m.setAttentionOptions({ stage: 'sparse' }).attentionOptions.stage, 'sparse');
    assert.ok(Number.isFinite(m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 }).loss));
    m.dispose();
  });

  test(`dsa [${build}]: a tiny model trains 20 warm-up steps (the indexer's KL falls), then 30 sparse steps (the loss falls), and generates with the cache as by recomputing`, (t) => {
    const m = lib.createModel({ attention: 'dsa', vocab: 16, dModel: 16, heads: 2, layers: 2, dFF: 32, maxLen: 16, seed: 4,
      attentionOptions: { stage: 'warmup', topK: 4 } });
    const task = { task: 'reverse', length: 5, symbols: 10, batchSize: 16, lr: 1e-2 };
    const mean = (a) => a.reduce((s, z) => s + z, 0) / a.length;
    const warm = Array.from({ length: 20 }, () => m.trainStep(task));
    const klFirst = mean(warm.slice(0, 3).map((r) => r.sideLoss)), klLast = mean(warm.slice(-3).map((r) => r.sideLoss));
    assert.ok(klLast < 0.8 * klFirst, `warm-up: the indexer's KL falls (${klFirst} -> ${klLast})`);
    m.setAttentionOptions({ stage: 'sparse' });
    const sparse = Array.from({ length: 30 }, () => m.trainStep(task));
    const lossFirst = mean(sparse.slice(0, 3).map((r) => r.loss)), lossLast = mean(sparse.slice(-3).map((r) => r.loss));
    assert.ok(lossLast < 0.9 * lossFirst, `sparse: the loss falls (${lossFirst} -> ${lossLast})`);
    const prompt = [3, 7, 1, 9, 4, 0];
    const cached = m.generate(prompt, { maxTokens: 8 }), recomputed = m.generate(prompt, { maxTokens: 8, cache: false });
    assert.deepEqual([...cached], [...recomputed]);
    t.diagnostic(`warm-up KL ${klFirst.toFixed(4)} -> ${klLast.toFixed(4)} (20 steps); sparse loss ${lossFirst.toFixed(3)} -> ${lossLast.toFixed(3)} (30 steps); generated ${[...cached]} both ways`);
    m.dispose();
  });

  test(`dsa [${build}]: model gradient check in both stages (the indexer against its KL's differences; a 10% error is caught)`, (t) => {
    for (const stage of ['warmup', 'sparse']) {
      const m = tiny(stage);
      const g = m.gradientCheck();
      assert.ok(g.error <= TOL.grad_check, `${stage}: error ${g.error} (${g.worstTensor})`);
      assert.equal(g.zeroGradTensors, 0, `${stage}: ${g.firstZeroGradTensor} has no gradient`);
      const bad = m.gradientCheck({ mutate: { tensor: 'dec.0.self.dsa.w_ki', factor: 1.1 } });
      assert.ok(bad.error > TOL.grad_check, `${stage}: a 10% error in w_ki is not caught (${bad.error})`);
      t.diagnostic(`${stage}: gradient check error ${g.error.toExponential(2)} (worst ${g.worstTensor}); w_ki x1.1 gives ${bad.error.toExponential(2)}`);
      m.dispose();
    }
  });
}
