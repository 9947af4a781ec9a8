// circuits.test.js: the interventions the page's "What does this head do?" panel runs (lab/circuits.js)
// on the shipped model with induction heads (web/models/fortunes-induction.safetensors), on a
// phrase read twice. The measures equal a computation from runWithHooks written here apart; and the
// mechanism shows by intervention: switching off the heads the probe names "induction" costs the
// second copy bits and leaves the first nearly as it was, the patch that restores a corrupted
// guess is the token after the earlier occurrence, and the induction head's output promotes it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds } from './helpers.js';
import { ablationGrid, agreement, copies, corruptFirstCopy, estimatePatching, lensTable, logProb, patchTarget, patchingCells, patchingGrids,
  promotedTokens, spanBits, topCells } from '../../lab/circuits.js';
import { NAMED_AT, phrasePeriod, phraseTwice, probeLetters, scoreHeads } from '../../lab/heads.js';

const FILE = new URL('../../web/models/fortunes-induction.safetensors', import.meta.url);
const { lib } = builds[0];
const model = lib.loadModel(readFileSync(FILE), { training: false });
const { layers, heads, vocab } = model.config;
const TEXTS = ['the lamplighter walked the road', 'a quiet river under the old bridge', 'she kept the letters in a tin box'];

const setup = (phrase) => {
  const text = phraseTwice(phrase, model.config.maxLen);
  const period = phrasePeriod([...text]);
  return { text, period, ids: lib.charsTokenizer.encode(text) };
};

test('circuits: spanBits and copies are the mean -log2 p of their targets', () => {
  const V = 3, ids = [0, 1, 2, 1];
  const logits = Float32Array.from([0, 1, 2, 2, 0, 1, 1, 1, 1, 5, 5, 5]);
  const want = [[0, 1, 2], [2, 0, 1], [1, 1, 1]].map((r, i) => {
    const m = Math.max(...r), z = r.reduce((a, x) => a + Math.exp(x - m), 0);
    return -(r[ids[i + 1]] - m - Math.log(z)) / Math.LN2;
  });
  assert.ok(Math.abs(spanBits(logits, ids, V, 1, 4) - (want[0] + want[1] + want[2]) / 3) < 1e-12);
  assert.ok(Math.abs(spanBits(logits, ids, V, 2, 3) - want[1]) < 1e-12);
  assert.deepEqual(copies(10, 5), { first: [1, 5], second: [5, 10] });
  assert.throws(() => copies(10, 10), /period must be an integer in \[2, n = 10\), got 10/);
  assert.ok(Math.abs(logProb(Float32Array.from([0, 0]), 1) - Math.log(0.5)) < 1e-12);
});

test('circuits: the ablation grid (one C call) equals each head ablated alone through runWithHooks', () => {
  const { ids, period } = setup(TEXTS[0]);
  const span = copies(ids.length, period);
  const grid = ablationGrid(model, ids, period);
  assert.equal(grid.rows.length, 2 * layers * heads);
  const clean = model.runWithHooks(ids, { ablate: [] }).logits;
  assert.ok(Math.abs(grid.clean.second - spanBits(clean, ids, vocab, ...span.second)) < 1e-4);
  let max = 0;
  for (const r of grid.rows) {
    const l = model.runWithHooks(ids, { ablate: [{ layer: r.layer, head: r.head, mode: r.mode }] }).logits;
    max = Math.max(max, Math.abs(r.second - (spanBits(l, ids, vocab, ...span.second) - grid.clean.second)),
      Math.abs(r.first - (spanBits(l, ids, vocab, ...span.first) - grid.clean.first)));
  }
  console.log(`# ablation grid against single runs: max difference ${max.toExponential(2)} bits`);
  assert.ok(max < 1e-4, `max ${max}`);
});

test('circuits: switching off the induction heads costs the second copy, not the first (Olsson et al. 2022)', () => {
  const probe = lib.charsTokenizer.encode(probeLetters());
  const induction = scoreHeads(model.forward(probe).attention, [...probe]).filter((h) => h.scores.induction >= NAMED_AT);
  assert.ok(induction.length >= 1, 'the shipped model has induction heads on the probe');
  for (const phrase of TEXTS) {
    const { ids, period } = setup(phrase);
    const span = copies(ids.length, period);
    const bits = (ablate) => {
      const l = model.runWithHooks(ids, { ablate }).logits;
      return { first: spanBits(l, ids, vocab, ...span.first), second: spanBits(l, ids, vocab, ...span.second) };
    };
    const clean = bits([]);
    for (const mode of ['zero', 'mean']) {
      const off = bits(induction.map((h) => ({ layer: h.layer, head: h.head, mode })));
      console.log(`# "${phrase}", ${mode}: first ${clean.first.toFixed(2)} -> ${off.first.toFixed(2)}, second ${clean.second.toFixed(2)} -> ${off.second.toFixed(2)} bits/char`);
      assert.ok(off.second - clean.second > 1, `the second copy costs over a bit more (${clean.second} -> ${off.second})`);
      assert.ok(Math.abs(off.first - clean.first) < 0.3, `the first copy changes little (${clean.first} -> ${off.first})`);
    }
  }
});

test('circuits: patching restores a corrupted guess from the token after the earlier occurrence, and the induction head promotes it', async () => {
  for (const phrase of TEXTS) {
    const { text, ids, period } = setup(phrase);
    const bad = lib.charsTokenizer.encode(corruptFirstCopy(text, period));
    assert.equal(bad.length, ids.length);
    const at = patchTarget(model, ids, bad, period, vocab);
    assert.ok(at.clean - at.corrupted > 1, `the corruption costs the guess (${at.clean} vs ${at.corrupted})`);
    const n = at.pos + 1;
    const p = await patchingGrids(model, ids.subarray(0, n), bad.subarray(0, n), at.target, { layers, heads, vocab });
    assert.ok(Math.abs(p.clean - at.clean) < 1e-5 && Math.abs(p.corrupted - at.corrupted) < 1e-5);
    // the last layer's input: the position that restores most is the one after the earlier occurrence
    const last = p.resid[layers - 1];
    const best = last.indexOf(Math.max(...last));
    console.log(`# "${phrase}": guess of ids[${at.pos + 1}] restored ${last[best].toFixed(2)} by layer ${layers}'s input at ${best}; heads ${p.z.map((r) => Array.from(r, (x) => x.toFixed(2)).join(' ')).join(' | ')}`);
    assert.equal(best, at.pos - period + 1);
    assert.ok(last[best] > 0.5);
    // the head whose clean output restores most promotes the answer at that position
    let top = { layer: 0, head: 0, x: -Infinity };
    p.z.forEach((r, layer) => r.forEach((x, head) => { if (x > top.x) top = { layer, head, x }; }));
    const promoted = promotedTokens(model, ids.subarray(0, n), { layers, heads, limit: lib.charsTokenizer.vocab });
    assert.ok(promoted[top.layer][top.head][at.pos].some((t) => t.token === at.target),
      `L${top.layer + 1}H${top.head + 1} promotes ${at.target}: ${JSON.stringify(promoted[top.layer][top.head][at.pos])}`);
  }
});

test('circuits: the lens table reads each layer; its last layer is the model\'s own guess', () => {
  const { ids } = setup(TEXTS[1]);
  const table = lensTable(model.logitLens(ids), ids);
  assert.equal(table.length, layers);
  const { logits } = model.forward(ids);
  for (let i = 0; i + 1 < ids.length; i++) {
    const row = logits.subarray(i * vocab, (i + 1) * vocab);
    assert.ok(Math.abs(table[layers - 1][i].pNext - Math.exp(logProb(row, ids[i + 1]))) < 1e-5);
  }
  assert.ok(Number.isNaN(table[0][ids.length - 1].pNext));
});

// The page's estimate-first patching (issue 54 item 3): the grids estimated by attributionPatching,
// the exact patches of the largest cells only, and how the two agree.
test('circuits: topCells picks the largest in size, ties in reading order; agreement is Pearson and the shared top k', () => {
  const grid = [[0.1, -0.9, 0.3], [0.9, 0, -0.5]];
  assert.deepEqual(topCells(grid, 3), [{ layer: 0, index: 1, value: -0.9 }, { layer: 1, index: 0, value: 0.9 }, { layer: 1, index: 2, value: -0.5 }]);
  assert.equal(topCells(grid, 16).length, 6, 'every cell when there are fewer than k');
  assert.throws(() => topCells(grid, 0), /topCells: k must be an integer >= 1, got 0/);
  // (1, 2, 3, 4) against (2, 4, 5, 4): deviations (-1.5, -0.5, 0.5, 1.5) and (-1.75, 0.25, 1.25, 0.25), products
  // summing to 3.5, squares to 5 and 4.75; the top 2 in size: cells 3, 2 and cells 2, 1 (the tie at 4: the earlier)
  const a = agreement([1, 2, 3, 4], [2, 4, 5, 4], 2);
  assert.ok(Math.abs(a.pearson - 3.5 / Math.sqrt(5 * 4.75)) < 1e-12, `pearson ${a.pearson}`);
  assert.deepEqual({ cells: a.cells, k: a.k, shared: a.shared }, { cells: 4, k: 2, shared: 1 });
  assert.equal(agreement([3, 1, 2], [30, 10, 20], 2).shared, 2);
  assert.ok(Math.abs(agreement([3, 1, 2], [30, 10, 20]).pearson - 1) < 1e-12);
  assert.equal(agreement([1, 2], [2, 1]).pearson, null, 'two cells: no correlation to speak of');
  assert.equal(agreement([1, 1, 1], [2, 1, 3]).pearson, null, 'no spread');
  assert.equal(agreement([1, 2], [2, 1], 5).k, 2);
  assert.throws(() => agreement([1, 2], [1]), /agreement: 2 estimates and 1 exact values/);
});

test('circuits: estimatePatching is attributionPatching as patchingGrids\' fractions; patchingCells is patchingGrids cell by cell', async () => {
  const trained = lib.loadModel(readFileSync(FILE), { training: true });
  const { text, ids, period } = setup(TEXTS[2]);
  const bad = lib.charsTokenizer.encode(corruptFirstCopy(text, period));
  const at = patchTarget(trained, ids, bad, period, vocab);
  const n = at.pos + 1, clean = ids.subarray(0, n), corrupt = bad.subarray(0, n);
  const est = estimatePatching(trained, clean, corrupt, at.target, { layers, heads });
  const exact = await patchingGrids(trained, clean, corrupt, at.target, { layers, heads, vocab });
  assert.ok(Math.abs(est.clean - exact.clean) < 1e-4 && Math.abs(est.corrupted - exact.corrupted) < 1e-4);
  assert.deepEqual([est.z.length, est.z[0].length, est.resid.length, est.resid[0].length], [layers, heads, layers, n]);
  // the head grid is the library's grid over every position, divided by the gap
  const whole = trained.attributionPatching(corrupt, clean, { metric: { target: at.target }, names: ['attn.hook_z'] }).grids['attn.hook_z'].data;
  const gap = est.clean - est.corrupted;
  est.z.forEach((row, l) => row.forEach((x, h) => assert.ok(Math.abs(x * gap - whole[l * heads + h]) < 1e-4, `L${l}H${h}: ${x * gap} vs ${whole[l * heads + h]}`)));
  // the page's cells: the estimate's 5 largest heads and 5 largest (layer, position) cells, patched exactly
  const cells = [...topCells(est.z, 5).map((c) => ({ grid: 'z', ...c })), ...topCells(est.resid, 5).map((c) => ({ grid: 'resid', ...c }))];
  const seen = [];
  const got = await patchingCells(trained, clean, corrupt, at.target, cells, { layers, vocab, onCell: (c, x, done, total) => seen.push([done, total]) });
  assert.deepEqual(seen.map(([d]) => d), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  cells.forEach((c, i) => assert.ok(Math.abs(got.values[i] - exact[c.grid][c.layer][c.index]) < 1e-9, `${c.grid} ${c.layer} ${c.index}`));
  const zs = cells.slice(0, 5);
  const agree = agreement(zs.map((c) => c.value), got.values.slice(0, 5));
  console.log(`# "${TEXTS[2]}": top 5 heads estimated ${zs.map((c) => `L${c.layer + 1}H${c.index + 1} ${c.value.toFixed(2)}`).join(', ')}; `
    + `exact ${got.values.slice(0, 5).map((x) => x.toFixed(2)).join(', ')}; Pearson ${agree.pearson.toFixed(3)}, top 3 shared ${agree.shared}`);
  assert.ok(agree.pearson > 0.5, `the estimate follows exact patching on its top heads: ${agree.pearson}`);
  // an inference-only copy of the same checkpoint gives the same estimate (its backward computes the
  // activations' gradients alone)
  assert.deepEqual(estimatePatching(model, clean, corrupt, at.target, { layers, heads }), est);
  trained.dispose();
});
