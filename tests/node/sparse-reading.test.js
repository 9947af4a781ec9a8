// sparse-reading.test.js: model.sparseReading (issue 48, "which tokens were read"), on both builds.
// The dense attention it returns against a float64 softmax of the queries and keys runWithCache
// records (no rotation: the model's positions are added to the embeddings); its weights against
// forward's; DSA's selection as its rule says (the top k of each query, shared by the heads, every
// key while t < k) and NSA's (the first, previous and current block always, the window); the share of
// dense mass kept against a sum over the returned arrays; lib.forms' selects against the forms it reads;
// a hybrid's dense layer and the other bad inputs as Errors naming what was expected, the model usable after.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds } from './helpers.js';

const TOKENS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3];

// float64 causal softmax of q k^T / sqrt(hd) per head, from hook_q and hook_k (n, H, hd)
function denseF64(q, k, n, H, hd) {
  const out = Array.from({ length: H }, () => new Float64Array(n * n));
  for (let h = 0; h < H; h++)
    for (let t = 0; t < n; t++) {
      const row = [];
      for (let s = 0; s <= t; s++) {
        let d = 0;
        for (let i = 0; i < hd; i++) d += q[(t * H + h) * hd + i] * k[(s * H + h) * hd + i];
        row.push(d / Math.sqrt(hd));
      }
      const top = Math.max(...row), e = row.map((x) => Math.exp(x - top)), sum = e.reduce((a, b) => a + b, 0);
      e.forEach((x, s) => (out[h][t * n + s] = x / sum));
    }
  return out;
}

const rowOf = (a, t, n) => Array.from(a.subarray(t * n, (t + 1) * n));

function checkCommon(lib, model, layer) {
  const r = model.sparseReading(TOKENS, { layer });
  const n = TOKENS.length, H = model.config.heads, hd = model.config.dModel / H;
  assert.equal(r.n, n);
  assert.equal(r.heads, H);
  const { cache } = model.runWithCache(TOKENS);
  const dense = denseF64(cache[`blocks.${layer}.attn.hook_q`].data, cache[`blocks.${layer}.attn.hook_k`].data, n, H, hd);
  const fwd = model.forward(TOKENS).attention[layer];
  let err = 0;
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < n * n; i++) err = Math.max(err, Math.abs(r.dense[h][i] - dense[h][i]));
    assert.deepEqual(Array.from(r.weights[h]), Array.from(fwd[h]), 'weights are forward\'s');
    for (let t = 0; t < n; t++) {
      const sel = rowOf(r.selected[h], t, n);
      assert.ok(sel.every((x, s) => (s > t ? x === 0 : x === 0 || x === 1)), `head ${h} query ${t}: 0/1, nothing ahead`);
      const kept = sel.reduce((a, x, s) => a + x * r.dense[h][t * n + s], 0);
      assert.ok(Math.abs(kept - r.kept[h][t]) < 1e-6, `kept ${r.kept[h][t]} against ${kept}`);
    }
  }
  assert.ok(err < 1e-6, `dense against float64: ${err}`);
  return r;
}

for (const { name, lib } of builds) {
  test(`${name}: DSA's reading: its top-k shared by the heads, every key while t < k, no weight outside it`, () => {
    const topK = 5;
    const model = lib.createModel({ vocab: 16, dModel: 32, heads: 2, layers: 2, maxLen: 16, attention: 'dsa',
      attentionOptions: { topK }, seed: 3 });
    for (const layer of [0, 1]) {
      const r = checkCommon(lib, model, layer);
      for (let t = 0; t < r.n; t++) {
        const s0 = rowOf(r.selected[0], t, r.n), s1 = rowOf(r.selected[1], t, r.n);
        assert.deepEqual(s0, s1, 'the heads share the selection');
        assert.equal(s0.reduce((a, b) => a + b, 0), Math.min(t + 1, topK), `query ${t} reads min(t + 1, topK) keys`);
        if (t < topK) assert.ok(Math.abs(r.kept[0][t] - 1) < 1e-6, 'every key read: all the mass kept');
        for (let h = 0; h < 2; h++)
          assert.ok(rowOf(r.weights[h], t, r.n).every((w, s) => s0[s] === 1 || w === 0), 'no weight on a key not read');
      }
      const mean = r.kept[0].reduce((a, b) => a + b, 0) / r.n;
      assert.ok(mean > 0 && mean <= 1 + 1e-9, `mean kept ${mean}`);
    }
    model.dispose();
  });

  test(`${name}: NSA's reading: the first, previous and current block and the window always read`, (t) => {
    if (!lib.forms.some((f) => f.name === 'nsa')) return t.skip('no nsa form in this build');
    const bs = 2, window = 3;
    const model = lib.createModel({ vocab: 16, dModel: 32, heads: 2, layers: 1, maxLen: 16, attention: 'nsa',
      attentionOptions: { blockSize: bs, topBlocks: 1, window }, seed: 4 });
    const r = checkCommon(lib, model, 0);
    for (let h = 0; h < 2; h++)
      for (let q = 0; q < r.n; q++) {
        const sel = rowOf(r.selected[h], q, r.n), cur = Math.floor(q / bs);
        const must = new Set([0, cur, cur - 1].filter((b) => b >= 0));
        for (let s = 0; s <= q; s++) {
          if (must.has(Math.floor(s / bs))) assert.equal(sel[s], 1, `head ${h} query ${q}: key ${s} of a forced block`);
          if (s > q - window) assert.equal(sel[s], 1, `head ${h} query ${q}: key ${s} in the window`);
        }
        // besides those: topBlocks more whole blocks at most
        const extra = new Set();
        for (let s = 0; s <= q; s++) if (sel[s] && !must.has(Math.floor(s / bs)) && s <= q - window) extra.add(Math.floor(s / bs));
        assert.ok(extra.size <= 1, `query ${q}: ${extra.size} blocks beyond the forced ones and the window`);
      }
    model.dispose();
  });

  test(`${name}: lib.forms' selects is set for exactly nsa and dsa, the causal forms whose layers sparseReading reads`, () => {
    assert.deepEqual(lib.forms.filter((f) => f.selects).map((f) => f.name), ['nsa', 'dsa']);
    for (const f of lib.forms.filter((x) => x.causal)) {
      const model = lib.createModel({ vocab: 16, dModel: 16, heads: 2, layers: 1, maxLen: 8, attention: f.name });
      const read = () => model.sparseReading([1, 2, 3], { layer: 0 });
      if (f.selects) assert.equal(read().n, 3, f.name);
      else assert.throws(read, /reads every key its mask allows/, f.name);
      model.dispose();
    }
  });

  test(`${name}: sparseReading's bad inputs are Errors naming what was expected; the model works after`, () => {
    const model = lib.createModel({ vocab: 16, dModel: 16, heads: 2, layers: 2, maxLen: 8,
      layerForms: [{ attention: 'softmax' }, { attention: 'dsa', attentionOptions: { topK: 2 } }] });
    assert.throws(() => model.sparseReading([1, 2, 3], { layer: 0 }), /layer 0's attention "softmax" reads every key its mask allows: sparseReading needs a sparse form/);
    assert.throws(() => model.sparseReading([1, 2, 3], { layer: 2 }), /sparseReading: layer must be an integer in \[0, 1\], got 2/);
    assert.throws(() => model.sparseReading([1, 2, 3], { layer: 1.5 }), /sparseReading: layer must be an integer in \[0, 1\], got 1\.5/);
    assert.throws(() => model.sparseReading([1, 2, 3], { layers: 1 }), /unknown option "layers"/);
    assert.throws(() => model.sparseReading(Array(9).fill(1), { layer: 1 }), /tokens must hold 1 to maxLen = 8 tokens, got 9/);
    assert.throws(() => model.sparseReading([], { layer: 1 }), /tokens/);
    assert.throws(() => model.sparseReading([1, 99], { layer: 1 }), /99/);
    const r = model.sparseReading([1, 2, 3, 4], { layer: 1 });
    assert.equal(r.selected[0].reduce((a, b) => a + b, 0), 1 + 2 + 2 + 2, 'topK 2: 1, 2, 2, 2 keys');
    assert.equal(model.forward([1, 2, 3]).logits.length, 3 * 16);
    model.dispose();
    assert.throws(() => model.sparseReading([1, 2], { layer: 1 }), /disposed|freed/);
  });
}
