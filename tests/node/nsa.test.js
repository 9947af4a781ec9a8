// nsa.test.js: Native Sparse Attention's rules by hand on small cases (src/attention/nsa.c,
// docs/attention-forms.md 4e): a block enters the compressed branch only once complete; block 0,
// the current and the previous block are always selected, plus topBlocks more by importance (the
// C's choice = the float64 reference's); with blocks of one key, every block selected and a window
// over the whole past, each branch is causal softmax; gradients where the choice matters, with the
// choice held (layer.selection the same on both sides of each difference); bad options are Errors
// and the library works after; a model trains and generates with the cache as without. The heads of
// a K/V group sharing their choice is tests/native/test_nsa.c (the standalone layer has no K/V
// heads). The conformance suite checks the rest (reference, threads, step, save/load, options).
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError, rand, relMaxErr, softmaxAttentionF64, stepThrough } from './helpers.js';
import { nsaF64 } from './reference.js';

const tensorsOf = (layer, p = layer.params) => {
  const out = {};
  let o = 0;
  for (const t of layer.tensors) out[t.name] = p.slice(o, (o += t.size));
  return out;
};

// Gate parameters: W = 0 and bias (cmp, slc, win) for every head.
const gateParams = (layer, [bc, bs, bw]) => {
  const p = new Float32Array(layer.params.length), H = layer.heads, bias = p.subarray(3 * H * layer.d);
  for (let h = 0; h < H; h++) bias.set([bc, bs, bw], 3 * h);
  layer.setParams(p);
};

for (const { name, lib } of builds) {
  test(`${name}: nsa: a block enters the compressed branch only once complete, its keys weighted alike`, (t) => {
    let rows = 0;
    for (const [n, heads, blockSize] of [[11, 2, 3], [9, 1, 4], [7, 2, 1]]) {
      const d = 4 * heads;
      const layer = lib.attentionLayer('nsa', { n, d, heads, causal: true, maxLen: Math.ceil(n / blockSize) * blockSize, attentionOptions: { blockSize, window: 1 } });
      gateParams(layer, [10, -30, -30]); // the compressed branch alone (the others' gates ~1e-13)
      const q = rand(n * d, 3), k = rand(n * d, 4), v = rand(n * d, 5);
      const { weights } = layer.forward({ q, k, v, returnWeights: true });
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < n; i++) {
          const row = weights.subarray((h * n + i) * n, (h * n + i + 1) * n);
          for (let j = 0; j < n; j++) {
            const b = Math.floor(j / blockSize), complete = (b + 1) * blockSize - 1 <= i;
            if (complete) {
              assert.ok(row[j] > 1e-4, `n=${n} bs=${blockSize} query ${i}: key ${j} of complete block ${b} has weight ${row[j]}`);
              assert.ok(Math.abs(row[j] - row[b * blockSize]) <= 1e-6 * row[j], `query ${i}: block ${b}'s keys weighted apart`);
            } else assert.ok(row[j] < 1e-9, `n=${n} bs=${blockSize} query ${i}: key ${j} of incomplete block ${b} has weight ${row[j]}`);
          }
          rows++;
        }
      layer.dispose();
    }
    t.diagnostic(`${rows} query rows: complete blocks only, a block's keys weighted alike`);
  });

  test(`${name}: nsa: block 0, the current and the previous block always selected, plus topBlocks by importance (the reference's choice)`, (t) => {
    let rows = 0, chosenByImportance = 0;
    for (const [n, heads, blockSize, topBlocks, seed, compress] of [[20, 2, 2, 2, 1, 'mean'], [17, 1, 3, 1, 2, 'mean'], [24, 4, 2, 3, 3, 'mean'], [12, 2, 5, 1, 4, 'mean'], [20, 2, 2, 2, 5, 'mlp']]) {
      const d = 2 * heads;
      const layer = lib.attentionLayer('nsa', { n, d, heads, causal: true, seed, maxLen: Math.ceil(n / blockSize) * blockSize, attentionOptions: { blockSize, topBlocks, window: 1, compress } });
      const q = rand(n * d, seed + 10, -3, 3), k = rand(n * d, seed + 11), v = rand(n * d, seed + 12), x = rand(n * d, seed + 13);
      const sel = layer.selection({ q, k, v, x });
      const ref = nsaF64({ q, k, v, x, n, d, heads, options: layer.options, params: tensorsOf(layer) });
      assert.deepEqual([...sel], [...ref.selection], `n=${n} bs=${blockSize} top=${topBlocks}: the C's selection differs from the reference's`);
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < n; i++) {
          const row = sel.subarray((h * n + i) * n, (h * n + i + 1) * n);
          const cur = Math.floor(i / blockSize), visible = Math.floor((i + 1) / blockSize);
          const forced = new Set([0, cur, ...(cur > 0 ? [cur - 1] : [])]);
          for (const b of forced)
            for (let j = b * blockSize; j < Math.min((b + 1) * blockSize, i + 1); j++) assert.equal(row[j], 1, `query ${i}: key ${j} of forced block ${b} not selected`);
          for (let j = i + 1; j < n; j++) assert.equal(row[j], 0, `query ${i}: future key ${j} selected`);
          const blocks = new Set();
          for (let j = 0; j <= i; j++) if (row[j]) blocks.add(Math.floor(j / blockSize));
          const others = [...Array(visible).keys()].filter((b) => !forced.has(b)).length;
          assert.equal(blocks.size, forced.size + Math.min(topBlocks, others), `query ${i}: ${blocks.size} blocks selected`);
          chosenByImportance += blocks.size - forced.size;
          rows++;
        }
      layer.dispose();
    }
    t.diagnostic(`${rows} query rows: forced blocks present, ${chosenByImportance} blocks chosen by importance, all as the float64 reference chose`);
  });

  test(`${name}: nsa: blocks of one key, every block selected and a window over the whole past: each branch is causal softmax`, (t) => {
    let worst = 0;
    for (const [n, heads] of [[1, 1], [8, 2], [13, 4]]) {
      const d = 4 * heads;
      const layer = lib.attentionLayer('nsa', { n, d, heads, causal: true, attentionOptions: { blockSize: 1, topBlocks: n, window: n } });
      gateParams(layer, [0, 0, 0]); // every gate 1/2
      const q = rand(n * d, 7), k = rand(n * d, 8), v = rand(n * d, 9);
      const got = layer.forward({ q, k, v }).output;
      const dense = softmaxAttentionF64({ q, k, v, n, d, heads, causal: true }).output;
      const e = relMaxErr(got, dense.map((z) => 1.5 * z));
      worst = Math.max(worst, e);
      assert.ok(e <= 1e-5, `n=${n} heads=${heads}: out vs 1.5 softmax (three gates of 1/2): rel err ${e}`);
      assert.ok(layer.selection({ q, k, v }).every((s, i) => s === (i % n <= Math.floor(i / n) % n ? 1 : 0)), 'selection: every key j <= t');
      layer.dispose();
    }
    t.diagnostic(`out = (g_cmp + g_slc + g_win) softmax_causal: worst rel err ${worst.toExponential(2)} (tol 1e-5)`);
  });

  for (const compress of ['mean', 'mlp'])
  test(`${name}: nsa: gradients match central differences where the choice matters (choice held on both sides; compress ${compress})`, (t) => {
    const n = 12, d = 8, heads = 2, seed = 21;
    const layer = lib.attentionLayer('nsa', { n, d, heads, causal: true, seed, attentionOptions: { blockSize: 2, topBlocks: 1, window: 3, compress } });
    const base = { q: rand(n * d, seed + 1), k: rand(n * d, seed + 2), v: rand(n * d, seed + 3), x: rand(n * d, seed + 4) };
    const dout = rand(n * d, seed + 5);
    const P0 = layer.params.map((z, i) => z + 0.3 * Math.sin(i));
    layer.setParams(P0);
    const sel0 = layer.selection(base);
    // the choice does matter here: some query skips a visible block
    const ref = nsaF64({ ...base, n, d, heads, options: layer.options, params: tensorsOf(layer) });
    assert.ok(ref.blocks.some((bl, i) => bl.length < Math.floor((i % n) / 2) + 1), 'every block selected: the test would not exercise the choice');
    layer.forward(base);
    const g = layer.backward({ ...base, dout });
    const loss = (data, p) => {
      layer.setParams(p);
      const o = layer.forward(data).output;
      return o.reduce((s, z, i) => s + z * dout[i], 0);
    };
    let worst = 0, held = 0, flipped = 0;
    // every input, and each parameter tensor alone (the compression's too, with 'mlp')
    const targets = [['q', g.dq], ['k', g.dk], ['v', g.dv], ['x', g.dx]];
    let off = 0;
    for (const tn of layer.tensors) targets.push([tn.name, g.dparams, off, tn.size]), off += tn.size;
    for (const [key, grad, o0, size] of targets)
      for (let s = 0; s < 3; s++) {
        const param = o0 !== undefined, x0 = param ? P0 : base[key];
        if (s === 0) assert.ok((param ? grad.slice(o0, o0 + size) : grad).some((z) => z !== 0), `d${key} is all zero: nothing to check`);
        // a unit direction (a parameter's: in its own tensor only), a step of 1e-2 along it
        const u = rand(x0.length, 100 * s + key.length + 1).map((z, i) => (!param || (i >= o0 && i < o0 + size) ? z : 0)), h = 1e-2 / Math.hypot(...u);
        const plus = x0.map((z, i) => z + h * u[i]), minus = x0.map((z, i) => z - h * u[i]);
        const at = (xs) => (param ? [base, xs] : [{ ...base, [key]: xs }, P0]);
        layer.setParams(P0);
        const same = ['plus', 'minus'].every((side) => {
          const [data, p] = at(side === 'plus' ? plus : minus);
          layer.setParams(p);
          const sl = layer.selection(data);
          layer.setParams(P0);
          return sl.every((z, i) => z === sel0[i]);
        });
        if (!same) { flipped++; continue; }
        const fd = loss(...at(plus)) - loss(...at(minus));
        let an = 0;
        for (let i = 0; i < u.length; i++) an += grad[i] * (plus[i] - minus[i]);
        const e = Math.abs(fd - an) / Math.max(Math.abs(fd), Math.abs(an), 1e-9);
        worst = Math.max(worst, e), held++;
        assert.ok(e <= 0.03, `d${key} direction ${s}: central difference ${fd} vs analytic ${an} (rel err ${e})`);
      }
    layer.setParams(P0);
    assert.ok(held >= targets.length * 3 - 3, `only ${held} of ${targets.length * 3} directions kept the choice`);
    t.diagnostic(`${targets.length} tensors, ${held} directions with the choice held (${flipped} flipped it, skipped): worst rel err ${worst.toExponential(2)} (tol 0.03)`);
    layer.dispose();
  });

  test(`${name}: nsa: compress 'mlp': generation step by step equals the causal forward (blocks compressed as they complete)`, (t) => {
    let worst = 0;
    for (const [n, heads, blockSize] of [[13, 2, 3], [10, 1, 2]]) {
      const d = 4 * heads;
      const layer = lib.attentionLayer('nsa', { n, d, heads, causal: true, seed: 4, maxLen: Math.ceil(n / blockSize) * blockSize, attentionOptions: { blockSize, topBlocks: 1, window: 2, compress: 'mlp' } });
      const data = { q: rand(n * d, 1), k: rand(n * d, 2), v: rand(n * d, 3), x: rand(n * d, 4) };
      const full = layer.forward(data).output, steps = stepThrough(layer, data, n, d);
      const e = relMaxErr(steps, full);
      worst = Math.max(worst, e);
      assert.ok(e <= 1e-5, `n=${n} bs=${blockSize}: step vs forward rel err ${e}`);
      assert.deepEqual(layer.tensors.map((x) => x.name), ['weight', 'bias', 'pe', 'wk1', 'wk2', 'wv1', 'wv2']);
      layer.dispose();
    }
    t.diagnostic(`step vs forward worst rel err ${worst.toExponential(2)} (tol 1e-5)`);
  });

  test(`${name}: nsa: bad options are Errors naming the option, and the library works after`, () => {
    const shape = { n: 4, d: 8, heads: 2, causal: true };
    const data = { q: rand(32, 1), k: rand(32, 2), v: rand(32, 3) };
    for (const [opt, value] of [['blockSize', 0], ['window', 0], ['topBlocks', 0], ['blockSize', 1.5], ['topBlocks', -1], ['compress', 'max']]) {
      expectError(() => lib.attention('nsa', { ...shape, ...data, attentionOptions: { [opt]: value } }), new RegExp(`attentionOptions\\.${opt}`));
      expectError(() => lib.createModel({ vocab: 8, dModel: 8, heads: 2, layers: 1, maxLen: 8, attention: 'nsa', attentionOptions: { [opt]: value } }), new RegExp(`attentionOptions\\.${opt}`));
    }
    // a block size that does not divide maxLen (issue 48): the sequence is cut into whole blocks
    expectError(() => lib.createModel({ vocab: 8, dModel: 8, heads: 2, layers: 1, maxLen: 10, attention: 'nsa', attentionOptions: { blockSize: 4 } }),
      /attentionOptions\.blockSize \(4\) must divide maxLen \(10\): the sequence is cut into whole blocks/);
    expectError(() => lib.attention('nsa', { ...shape, ...data, maxLen: 6, attentionOptions: { blockSize: 4 } }), /blockSize \(4\) must divide maxLen \(6\)/);
    // unset, it is 4 or the largest divisor of maxLen below it
    for (const [maxLen, bs] of [[8, 4], [6, 3], [10, 2], [7, 1]]) {
      const l = lib.attentionLayer('nsa', { ...shape, maxLen });
      assert.equal(l.options.blockSize, bs, `maxLen ${maxLen}`);
      l.dispose();
    }
    expectError(() => lib.attention('nsa', { ...shape, ...data, causal: false }), /no non-causal form/);
    const dense = lib.attentionLayer('softmax', shape);
    expectError(() => dense.selection(data), /"softmax" has no selection/);
    dense.dispose();
    const out = lib.attention('nsa', { ...shape, ...data }).output;
    assert.ok(out.length === 32 && out.every(Number.isFinite));
  });

  test(`${name}: nsa: a model (kvHeads 2 of 4 heads) trains 30 steps with a falling loss and generates with the cache as without`, (t) => {
    const m = lib.createModel({ vocab: 12, dModel: 32, heads: 4, kvHeads: 2, layers: 2, maxLen: 24, seed: 3, attention: 'nsa', attentionOptions: { blockSize: 2, topBlocks: 1, window: 4 } });
    const seq = [1, 5, 3, 7, 2, 9, 4, 11, 6, 8, 10, 1, 5, 3, 7, 2, 9, 4];
    const batch = { inputs: [seq.slice(0, -1)], targets: [seq.slice(1)], lr: 1e-2 };
    const losses = [];
    for (let s = 0; s < 30; s++) losses.push(m.trainStep(batch).loss);
    const first = losses.slice(0, 3).reduce((a, b) => a + b) / 3, last = losses.slice(-3).reduce((a, b) => a + b) / 3;
    assert.ok(losses.every(Number.isFinite), 'a loss is not finite');
    assert.ok(last < 0.5 * first, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}: not falling by half`);
    const cached = m.generate([1, 5, 3], { maxTokens: 18 }), rerun = m.generate([1, 5, 3], { maxTokens: 18, cache: false });
    assert.deepEqual([...cached], [...rerun], 'cached generation vs re-running the forward');
    t.diagnostic(`loss ${first.toFixed(3)} (first 3 steps) -> ${last.toFixed(3)} (last 3); greedy generation of 18 tokens with the cache = without`);
    m.dispose();
  });
}
