// ablation-estimate.test.js: model.ablationEstimate (src/model/attribution.c ablation_estimate), the
// ablation grid's cost of each head to first order from one forward and one backward per span. The
// estimate is the derivative of the exact cost along the way to the ablated z: moving head h's z a
// fraction alpha toward its ablated value (runWithHooks: scale by 1 - alpha, plus alpha x the mean
// for mean ablation) costs alpha x the estimate as alpha -> 0. On the shipped induction model with a
// phrase read twice it ranks the heads as the exact grid does (Pearson, printed); an inference load
// gives the trainable load's numbers; the call leaves the heap as it found it; bad inputs are
// Errors naming the argument.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, expectError } from './helpers.js';
import { ablationGrid, agreement, copies, estimateAblation, spanBits } from '../../lab/circuits.js';
import { phrasePeriod, phraseTwice } from '../../lab/heads.js';

const FILE = new URL('../../web/models/fortunes-induction.safetensors', import.meta.url);
const BYTES = readFileSync(FILE);
const PHRASES = ['the lamplighter walked the road', 'a quiet river under the old bridge', 'she kept the letters in a tin box'];
const { lib } = builds[0];

const setup = (model, phrase) => {
  const text = phraseTwice(phrase, model.config.maxLen);
  const period = phrasePeriod([...text]);
  return { period, ids: lib.charsTokenizer.encode(text) };
};

// The cost of a span (targets [from, to): lab/circuits.js's convention) with head (layer, head)'s z
// moved a fraction alpha toward its ablated value: z + alpha (ablated - z), in bits per token, minus
// the clean run's.
function partialCost(model, ids, span, { layer, head, mode }, alpha, mean) {
  const name = `blocks.${layer}.attn.hook_z`;
  const opts = { scale: [{ name, heads: [head], factor: 1 - alpha }] };
  if (mode === 'mean') opts.add = [{ name, heads: [head], vector: mean, scale: alpha }];
  const { vocab } = model.config;
  const clean = spanBits(model.runWithHooks(ids, {}).logits, ids, vocab, ...span);
  return spanBits(model.runWithHooks(ids, opts).logits, ids, vocab, ...span) - clean;
}

test('ablationEstimate: the exact cost of moving z a fraction alpha toward its ablation, over alpha, tends to the estimate', () => {
  const model = lib.loadModel(BYTES, { training: false });
  const { layers, heads, dModel } = model.config, hd = dModel / heads;
  const { ids, period } = setup(model, PHRASES[0]);
  const n = ids.length, span = copies(n, period).second;
  const est = model.ablationEstimate(ids, { spans: [[span[0] - 1, span[1] - 1]] });
  assert.deepEqual(est.shape, [2, 1, layers, heads]);
  // each layer's z means over the positions, as a per-head add vector (heads x dHead)
  const { cache } = model.runWithCache(ids, { names: Array.from({ length: layers }, (_, l) => `blocks.${l}.attn.hook_z`) });
  const means = Array.from({ length: layers }, (_, l) => {
    const z = cache[`blocks.${l}.attn.hook_z`].data, m = new Float32Array(heads * hd);
    for (let i = 0; i < heads * hd; i++) {
      let s = 0;
      for (let p = 0; p < n; p++) s += z[p * heads * hd + i];
      m[i] = s / n;
    }
    return m;
  });
  est.modes.forEach((mode, k) => {
    // the three heads with the largest estimates in size
    const cells = [];
    for (let layer = 0; layer < layers; layer++)
      for (let head = 0; head < heads; head++) cells.push({ layer, head, mode, e: est.data[(k * layers + layer) * heads + head] });
    cells.sort((a, b) => Math.abs(b.e) - Math.abs(a.e));
    for (const c of cells.slice(0, 3)) {
      const ratios = [0.1, 1e-2, 3e-3].map((alpha) => {
        // central difference: the second-order term cancels
        const slope = (partialCost(model, ids, span, c, alpha, means[c.layer]) - partialCost(model, ids, span, c, -alpha, means[c.layer])) / (2 * alpha);
        return { alpha, ratio: slope / c.e };
      });
      console.log(`# ${mode} L${c.layer}H${c.head}: estimate ${c.e.toFixed(5)} bits/token; exact slope / estimate ${ratios.map((r) => `${r.ratio.toFixed(6)} (alpha ${r.alpha})`).join(', ')}`);
      const small = ratios.at(-1); // at alpha 1e-2 the third-order term still shows (~1e-3)
      assert.ok(Math.abs(small.ratio - 1) < 1e-3, `${mode} L${c.layer}H${c.head}: ratio ${small.ratio} at alpha ${small.alpha}`);
    }
  });
  model.dispose();
});

// Against the exact ablation grid (lab/circuits.js ablationGrid) on a phrase read twice: the clean
// span losses agree, and the Pearson correlation over the heads is printed, not asserted. Measured
// (docs/interpretability.md): 0.64, -0.29 and -0.13 on the second copy for zero ablation on the three
// phrases. The second copy is predicted almost surely (0.13 to 0.27 bits per character), so log p
// sits where it saturates and its gradient is small, while switching the induction head (L1H2) off
// costs about 2.9 bits: a first-order estimate of a step that large misses it (the derivative itself
// is checked above). The page therefore keeps its ablation grid exact.
test('ablationEstimate: on a phrase read twice, the clean span losses are the exact grid\'s (the agreement over heads printed)', () => {
  const model = lib.loadModel(BYTES, { training: false });
  for (const phrase of PHRASES) {
    const { ids, period } = setup(model, phrase);
    const exact = ablationGrid(model, ids, period), est = estimateAblation(model, ids, period);
    assert.equal(est.rows.length, exact.rows.length);
    assert.ok(Math.abs(est.clean.first - exact.clean.first) < 1e-4 && Math.abs(est.clean.second - exact.clean.second) < 1e-4,
      `clean bits: estimate ${est.clean.first}, ${est.clean.second}; exact ${exact.clean.first}, ${exact.clean.second}`);
    for (const mode of ['zero', 'mean']) {
      const pick = (g, key) => g.rows.filter((r) => r.mode === mode).map((r) => r[key]);
      exact.rows.forEach((r, i) => assert.ok(r.layer === est.rows[i].layer && r.head === est.rows[i].head && r.mode === est.rows[i].mode));
      const second = agreement(pick(est, 'second'), pick(exact, 'second'));
      const first = agreement(pick(est, 'first'), pick(exact, 'first'));
      console.log(`# "${phrase}" ${mode}: Pearson second copy ${second.pearson.toFixed(3)} (top-3 shared ${second.shared}), first copy ${first.pearson?.toFixed(3)}`);
    }
  }
  model.dispose();
});

test('ablationEstimate: spans are independent (one call with several equals a call per span, overlaps allowed)', () => {
  const model = lib.loadModel(BYTES, { training: false });
  const { ids } = setup(model, PHRASES[1]);
  const spans = [[0, 10], [5, 20], [ids.length - 4, ids.length - 1]];
  const all = model.ablationEstimate(ids, { spans });
  const per = model.config.layers * model.config.heads;
  spans.forEach((sp, s) => {
    const one = model.ablationEstimate(ids, { spans: [sp] });
    for (let k = 0; k < 2; k++)
      assert.deepEqual(all.data.subarray((k * spans.length + s) * per, (k * spans.length + s + 1) * per), one.data.subarray(k * per, (k + 1) * per), `span ${s} mode ${k}`);
    assert.equal(all.clean[s], one.clean[0]);
  });
  const mean = model.ablationEstimate(ids, { spans, modes: ['mean'] });
  assert.deepEqual(mean.modes, ['mean']);
  assert.deepEqual(mean.data, all.data.subarray(spans.length * per));
  model.dispose();
});

for (const { name, lib: L } of builds) {
  test(`ablationEstimate [${name}]: an inference load gives the trainable load's grids, and the heap is back where it was`, () => {
    const ex = L[Symbol.for('attention-wasm.exports')];
    const h0 = ex.aw_heap_in_use();
    const inf = L.loadModel(BYTES, { training: false }), tr = L.loadModel(BYTES, { training: true });
    const ids = L.charsTokenizer.encode(phraseTwice(PHRASES[2], inf.config.maxLen));
    const spans = [[0, 12], [12, ids.length - 1]];
    const a = inf.ablationEstimate(ids, { spans }), b = tr.ablationEstimate(ids, { spans });
    assert.deepEqual(a.data, b.data);
    assert.deepEqual(a.clean, b.clean);
    assert.ok(a.data.every(Number.isFinite) && a.data.some((x) => x !== 0));
    // a GPT-2 layout through loadHuggingFace, inference vs trainable
    const made = L.createModel({ vocab: 50, dModel: 32, heads: 4, layers: 2, maxLen: 32, seed: 9, ffn: 'gelu', positional: 'learned', tieEmbeddings: true });
    const files = made.saveHuggingFace();
    made.dispose();
    const hi = L.loadHuggingFace(files), ht = L.loadHuggingFace({ ...files, training: true });
    const IDS = Array.from({ length: 20 }, (_, i) => (i * 7 + 3) % 50);
    assert.deepEqual(hi.ablationEstimate(IDS, { spans: [[2, 19]] }).data, ht.ablationEstimate(IDS, { spans: [[2, 19]] }).data);
    hi.dispose(), ht.dispose();
    // the heap: the activations of this length stay with the model, the call's gradients do not
    inf.forward(ids);
    const before = ex.aw_heap_in_use();
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(inf.ablationEstimate(ids, { spans }).data, a.data);
      assert.equal(ex.aw_heap_in_use(), before, `heap in use after call ${i + 1}`);
    }
    inf.ablationEstimate(ids.slice(0, 6), { spans: [[0, 5]] });
    assert.equal(ex.aw_heap_in_use(), before, 'heap in use after a shorter call');
    // errors free what they took too
    expectError(() => inf.ablationEstimate(ids, { spans: [[0, ids.length]] }), /spans\[0\]/);
    assert.equal(ex.aw_heap_in_use(), before, 'heap in use after an Error');
    inf.dispose(), tr.dispose();
    assert.equal(ex.aw_heap_in_use(), h0, 'heap in use after dispose');
  });
}

test('ablationEstimate: bad inputs are Errors naming the argument', () => {
  const model = lib.loadModel(BYTES, { training: false });
  const ids = lib.charsTokenizer.encode('the cat sat. the cat sat'), n = ids.length, V = model.config.vocab;
  const E = (opts, re, i = ids) => expectError(() => model.ablationEstimate(i, opts), re);
  E(undefined, /ablationEstimate: spans must be a non-empty array of \[from, to\) position ranges, got undefined/);
  E({ spans: [] }, /spans must be a non-empty array/);
  E({ spans: [0, 3] }, /spans\[0\] must be a \[from, to\) pair of positions, got 0/);
  E({ spans: [[0]] }, /spans\[0\] must be a \[from, to\) pair/);
  E({ spans: [[0.5, 3]] }, /spans\[0\]\[0\] must be an integer/);
  E({ spans: [[0, '3']] }, /spans\[0\]\[1\]/);
  E({ spans: [[1, 3], [0, n]] }, new RegExp(`spans\\[1\\] is \\[0, ${n}\\): expected 0 <= from < to <= n - 1 = ${n - 1}`));
  E({ spans: [[-1, 3]] }, /spans\[0\] is \[-1, 3\)/);
  E({ spans: [[3, 3]] }, /spans\[0\] is \[3, 3\)/);
  E({ spans: [[4, 2]] }, /spans\[0\] is \[4, 2\)/);
  E({ spans: [[0, 3]], modes: ['zero', 'resample'] }, /modes must be a non-empty array of distinct "zero", "mean", got/);
  E({ spans: [[0, 3]], modes: [] }, /modes must be a non-empty array/);
  E({ spans: [[0, 3]], modes: ['zero', 'zero'] }, /modes must be a non-empty array of distinct/);
  E({ spans: [[0, 3]], span: 1 }, /ablationEstimate.*span/);
  E({ spans: [[0, 1]] }, /ids has 1 token: expected at least 2/, [3]);
  E({ spans: [[0, 1]] }, new RegExp(`ids\\[1\\] is ${V}, outside the vocabulary \\[0, ${V}\\)`), [3, V, 4]);
  E({ spans: [[0, 1]] }, /ids/, [3, 1.5, 4]);
  E({ spans: [[0, 1]] }, /maxLen/, new Array(model.config.maxLen + 1).fill(3));
  // the C checks too (the JS ones above stand in front of them)
  const ex = lib[Symbol.for('attention-wasm.exports')];
  assert.ok(typeof ex.aw_hooks_ablation_estimate === 'function');
  // quantized: refused as attributionPatching is
  const llama = lib.createModel({ vocab: 50, dModel: 32, heads: 4, layers: 2, maxLen: 32, seed: 9, block: 'llama', dFF: 64 });
  const q4 = lib.loadHuggingFace(llama.saveHuggingFace());
  q4.quantize('q4_0');
  expectError(() => q4.ablationEstimate([1, 2, 3, 4], { spans: [[0, 3]] }), /ablationEstimate: its backward needs the float32 weights, and this model was quantized to q4_0/);
  q4.dispose(), llama.dispose();
  model.dispose();
  expectError(() => model.ablationEstimate(ids, { spans: [[0, 3]] }), /ablationEstimate/);
});
