// attribution-patching.test.js: model.attributionPatching (src/model/attribution.c, wasm/hooks.js):
// its gradients against central differences of the metric through runWithHooks adds, its estimate
// against exact patching of a fraction alpha of the way as alpha -> 0, its head grid against the
// exact per-head patching the page runs (lab/circuits.js patchingGrids) on the shipped induction
// model, and every bad input an Error that leaves the model usable.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, expectError } from './helpers.js';
import { corruptFirstCopy, patchTarget, patchingGrids } from '../../lab/circuits.js';
import { phrasePeriod, phraseTwice } from '../../lab/heads.js';

const NAMES = ['attn.hook_z', 'attn.hook_q', 'attn.hook_k', 'attn.hook_v', 'hook_resid_pre', 'hook_attn_out', 'hook_resid_mid', 'hook_mlp_out', 'hook_resid_post'];
const IDS = [1, 4, 2, 7, 3, 9, 1, 4, 2, 7];
const OTHER = [1, 4, 2, 7, 3, 5, 1, 8, 2, 7];
const FILE = new URL('../../web/models/fortunes-induction.safetensors', import.meta.url);
const PHRASES = ['the lamplighter walked the road', 'a quiet river under the old bridge', 'she kept the letters in a tin box'];

function trained(lib, cfg) {
  const m = lib.createModel({ vocab: 11, dModel: 16, heads: 4, layers: 2, dFF: 24, maxLen: 12, seed: 5, ...cfg });
  const row = (s) => Array.from({ length: 10 }, (_, i) => 1 + ((i * 7 + s) % 10));
  for (let s = 0; s < 2; s++) m.trainStep({ inputs: [row(s), row(s + 3)], targets: [row(s + 1), row(s + 4)], lr: 1e-2 });
  return m;
}

// The metric in float64 from a run's logits (n x V): log p(target) at position, or the logit
// difference with versus (attribution.c's definitions, written apart).
function metricOf(logits, V, { target, position, versus }) {
  const row = Array.from(logits.subarray(position * V, (position + 1) * V));
  if (versus !== undefined) return row[target] - row[versus];
  const mx = Math.max(...row);
  return row[target] - mx - Math.log(row.reduce((s, x) => s + Math.exp(x - mx), 0));
}

// The coefficient a1 of d(e) = a1 e + a3 e^3 + a5 e^5 fitted by least squares: the derivative at 0
// from central differences d(e) = (f(e) - f(-e)) / 2 at several steps, which averages float32's
// rounding down and takes the curvature out (the odd powers are what a central difference keeps).
function slopeAtZero(es, ds) {
  const A = [[0, 0, 0], [0, 0, 0], [0, 0, 0]], b = [0, 0, 0];
  es.forEach((e, i) => {
    const row = [e, e ** 3, e ** 5];
    for (let r = 0; r < 3; r++) {
      b[r] += row[r] * ds[i];
      for (let c = 0; c < 3; c++) A[r][c] += row[r] * row[c];
    }
  });
  for (let c = 0; c < 3; c++)
    for (let r = c + 1; r < 3; r++) {
      const f = A[r][c] / A[c][c];
      for (let k = c; k < 3; k++) A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  const x = [0, 0, 0];
  for (let r = 2; r >= 0; r--) {
    let s = b[r];
    for (let k = r + 1; k < 3; k++) s -= A[r][k] * x[k];
    x[r] = s / A[r][r];
  }
  return x[0];
}

const pearson = (a, b) => {
  const n = a.length, ma = a.reduce((s, x) => s + x, 0) / n, mb = b.reduce((s, x) => s + x, 0) / n;
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < n; i++) ab += (a[i] - ma) * (b[i] - mb), aa += (a[i] - ma) ** 2, bb += (b[i] - mb) ** 2;
  return ab / Math.sqrt(aa * bb);
};

// The fortunes model's repeated phrase and its corrupted first copy (circuits.test.js's setup),
// cut after the position where the corruption costs the guess most: { run, source, target }.
function inductionPair(lib, model, phrase) {
  const text = phraseTwice(phrase, model.config.maxLen), period = phrasePeriod([...text]);
  const ids = lib.charsTokenizer.encode(text), bad = lib.charsTokenizer.encode(corruptFirstCopy(text, period));
  const at = patchTarget(model, ids, bad, period, model.config.vocab);
  return { corrupted: bad.subarray(0, at.pos + 1), clean: ids.subarray(0, at.pos + 1), target: at.target };
}

for (const { name, lib } of builds) {
  test(`attributionPatching [${name}]: each estimate is the metric's derivative along corrupt - clean (central differences, relative 1e-4)`, () => {
    // smooth models (GELU, SwiGLU): a ReLU's kink inside the difference steps would break the fit
    const cases = [
      [{ block: 'llama', kvHeads: 2 }, { target: 3 }], [{ block: 'llama', kvHeads: 2 }, { target: 3, versus: 8 }],
      [{ ffn: 'gelu' }, { target: 3 }], [{ norm: 'post', positional: 'learned', ffn: 'gelu' }, { target: 5, position: 8 }],
    ];
    const n = IDS.length, V = 11;
    let worst = 0;
    for (const [cfg, metric] of cases) {
      const m = trained(lib, cfg);
      const r = m.attributionPatching(IDS, OTHER, { metric, names: NAMES, perPosition: true });
      const full = { position: n - 1, ...metric };
      const { cache: xc, logits } = m.runWithCache(IDS), { cache: yc } = m.runWithCache(OTHER);
      assert.ok(Math.abs(r.clean - metricOf(logits, V, full)) < 1e-5, `clean metric ${r.clean}`);
      assert.ok(Math.abs(r.corrupt - metricOf(m.forward(OTHER).logits, V, full)) < 1e-5, `corrupt metric ${r.corrupt}`);
      for (const point of NAMES) {
        const g = r.grids[point], G = g.shape.length === 3 ? g.shape[1] : 1;
        assert.deepEqual(g.shape, G > 1 ? [2, G, n] : [2, n]);
        let at = 0; // the largest estimate: the best conditioned difference
        g.data.forEach((x, i) => { if (Math.abs(x) > Math.abs(g.data[at])) at = i; });
        const p = at % n, h = Math.floor(at / n) % G, l = Math.floor(at / n / G), est = g.data[at];
        const key = `blocks.${l}.${point}`, x = xc[key].data, y = yc[key].data, row = x.length / n, w = row / G;
        const vector = new Float32Array(row);
        for (let j = h * w; j < (h + 1) * w; j++) vector[j] = y[p * row + j] - x[p * row + j];
        const f = (e) => metricOf(m.runWithHooks(IDS, { add: [{ name: key, vector, scale: e, positions: [p] }] }).logits, V, full);
        const E = Math.min(0.2, 0.4 / Math.hypot(...vector)); // steps up to a move of 0.4 in the activation
        const es = Array.from({ length: 12 }, (_, k) => (E * (k + 1)) / 12);
        const fd = slopeAtZero(es, es.map((e) => (f(e) - f(-e)) / 2));
        const rel = Math.abs(est - fd) / Math.abs(fd);
        worst = Math.max(worst, rel);
        assert.ok(rel < 1e-4, `${JSON.stringify(cfg)} ${JSON.stringify(metric)} ${key} head ${h} position ${p}: estimate ${est}, differences ${fd} (relative ${rel})`);
      }
    }
    console.log(`# [${name}] attribution against central differences: worst relative error ${worst.toExponential(2)}`);
  });
}

const { lib } = builds[0];
const model = lib.loadModel(readFileSync(FILE), { training: true });
const { layers, heads, vocab } = model.config;

test('attributionPatching: estimate / exact -> 1 as the patch shrinks (alpha of the way from the run to the source)', () => {
  const names = ['attn.hook_z', 'hook_attn_out', 'hook_mlp_out', 'hook_resid_pre'];
  const alphas = [8e-3, 4e-3, 2e-3, 1e-3];
  let worst = 0;
  for (const phrase of PHRASES) {
    const { corrupted, clean, target } = inductionPair(lib, model, phrase);
    const n = clean.length, metric = { target, position: n - 1 };
    const r = model.attributionPatching(corrupted, clean, { metric: { target }, names });
    const keys = names.flatMap((x) => Array.from({ length: layers }, (_, l) => `blocks.${l}.${x}`));
    const { cache: xc, logits } = model.runWithCache(corrupted, { names: keys }), { cache: yc } = model.runWithCache(clean, { names: keys });
    const base = metricOf(logits, vocab, metric);
    for (const point of names) {
      // each name's largest estimate (a nat or more): a patch of alpha = 1e-3 then moves the metric
      // by 1e-3 or more, far above float32's rounding of the run
      const G = point === 'attn.hook_z' ? heads : 1, g = r.grids[point].data;
      let at = 0;
      g.forEach((x, i) => { if (Math.abs(x) > Math.abs(g[at])) at = i; });
      const l = Math.floor(at / G), key = `blocks.${l}.${point}`, x = xc[key].data, y = yc[key].data;
      const ratio = alphas.map((a) => {
        const data = x.map((v, i) => v + a * (y[i] - v));
        const exact = metricOf(model.runWithHooks(corrupted, { replace: [{ name: key, data, ...(G > 1 ? { heads: [at % G] } : {}) }] }).logits, vocab, metric) - base;
        return (a * g[at]) / exact;
      });
      // ratio - 1 falls with alpha (the second-order term); its limit at alpha = 0, by a line through the four
      const ma = alphas.reduce((s, a) => s + a, 0) / 4, mr = ratio.reduce((s, a) => s + a, 0) / 4;
      let sar = 0, saa = 0;
      alphas.forEach((a, i) => { sar += (a - ma) * (ratio[i] - mr); saa += (a - ma) ** 2; });
      const limit = mr - (sar / saa) * ma;
      worst = Math.max(worst, Math.abs(limit - 1));
      assert.ok(Math.abs(g[at]) > 1, `${key}: an estimate of a nat or more (${g[at]})`);
      assert.ok(Math.abs(ratio[3] - 1) < Math.abs(ratio[0] - 1), `${key}: ratio at 1e-3 ${ratio[3]} nearer 1 than at 8e-3 ${ratio[0]}`);
      assert.ok(Math.abs(limit - 1) < 1e-3, `"${phrase}" ${key}${G > 1 ? ` head ${at % G}` : ''}: ratios ${ratio.join(', ')} -> ${limit}`);
    }
  }
  console.log(`# estimate / exact at alpha -> 0: worst |limit - 1| ${worst.toExponential(2)}`);
});

test('attributionPatching: on the shipped induction model the head grid follows exact patching (Pearson >= 0.9)', async () => {
  const found = [];
  for (const phrase of PHRASES) {
    const { corrupted, clean, target } = inductionPair(lib, model, phrase);
    const n = clean.length;
    // restoring the clean guess: the run is the corrupted text, the activations come from the clean
    // one (patchingGrids: the corrupted run with one head's z from the clean run)
    const r = model.attributionPatching(corrupted, clean, { metric: { target }, names: ['attn.hook_z', 'hook_resid_pre', 'hook_attn_out', 'hook_mlp_out'] });
    const exact = await patchingGrids(model, clean, corrupted, target, { layers, heads, vocab });
    assert.ok(Math.abs(r.corrupt - exact.clean) < 1e-4 && Math.abs(r.clean - exact.corrupted) < 1e-4);
    const gap = exact.clean - exact.corrupted; // patchingGrids' fractions back to nats
    const est = Array.from(r.grids['attn.hook_z'].data), ex = exact.z.flatMap((row) => Array.from(row, (x) => x * gap));
    const rho = pearson(est, ex);
    // the same for whole rows at one position at a time, against the one C call patchingGrid
    const rows = {};
    for (const point of ['hook_resid_pre', 'hook_attn_out', 'hook_mlp_out']) {
      const ext = [...clean, target], bad = [...corrupted, target]; // the target as an input: q = n - 1 predicts it
      const per = model.attributionPatching(bad, ext, { metric: { target, position: n - 1 }, names: [point], perPosition: true });
      const keys = Array.from({ length: layers }, (_, l) => `blocks.${l}.${point}`);
      const pg = model.patchingGrid(bad, { from: model.runWithCache(ext, { names: keys }).cache, name: point, targets: bad.slice(1) });
      const want = [];
      for (let l = 0; l < layers; l++) for (let p = 0; p <= n; p++) want.push(pg.data[(l * (n + 1) + p) * n + n - 1] - pg.clean[n - 1]);
      rows[point] = pearson(Array.from(per.grids[point].data), want).toFixed(3);
    }
    console.log(`# "${phrase}": heads Pearson ${rho.toFixed(4)} (${layers} x ${heads}); per position against patchingGrid ${JSON.stringify(rows)}`);
    found.push(rho);
    assert.ok(rho >= 0.9, `"${phrase}": Pearson ${rho}\n  estimate ${est.map((x) => x.toFixed(2))}\n  exact    ${ex.map((x) => x.toFixed(2))}`);
  }
  console.log(`# head grid Pearson per phrase: ${found.map((x) => x.toFixed(4)).join(', ')}`);
});

test('attributionPatching: bad inputs are Errors naming them; the model stays usable', () => {
  const m = trained(lib, {});
  const want = m.attributionPatching(IDS, OTHER, { metric: { target: 3 } });
  expectError(() => m.attributionPatching(IDS, OTHER.slice(1), { metric: { target: 3 } }), /attributionPatching: corrupt has 9 tokens and clean 10: .*same length/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: ['hook_nothing'] }), /names\[0\] is "hook_nothing": expected a block's point, one of attn.hook_q/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: ['blocks.0.hook_resid_pre'] }), /names\[0\] is "blocks.0.hook_resid_pre": .*without "blocks.\{l\}."/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: ['attn.hook_pattern'] }), /names\[0\] is "attn.hook_pattern": .*read-only/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: ['hook_mlp_out,hook_attn_out'] }), /names\[0\] .*no commas/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: ['hook_mlp_out', 'hook_mlp_out'] }), /names\[0\] and names\[1\] are both "hook_mlp_out"/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: [] }), /names must be a non-empty array/);
  expectError(() => m.attributionPatching(IDS, OTHER, {}), /metric must be \{ target, position\?, versus\? \}/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 11 } }), /metric.target is 11, outside the vocabulary \[0, 11\)/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: -1 } }), /metric.target is -1, outside the vocabulary/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3, position: 10 } }), /metric.position is 10, outside the 10 positions \[0, 10\)/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3, versus: 3 } }), /metric.versus is 3: expected a token .* other than metric.target/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3, versus: 11 } }), /metric.versus is 11/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3.5 } }), /metric.target/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3, pos: 1 } }), /metric.*pos/);
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 }, perPosition: 1 }), /perPosition must be true or false, got 1/);
  expectError(() => m.attributionPatching(IDS, [...OTHER.slice(0, 9), 11], { metric: { target: 3 } }), /attributionPatching: corrupt\[9\] is 11, outside the vocabulary \[0, 11\)/);
  expectError(() => m.attributionPatching([], [], { metric: { target: 3 } }), /attributionPatching: clean is empty/);
  expectError(() => m.attributionPatching([-1, ...IDS.slice(1)], OTHER, { metric: { target: 3 } }), /attributionPatching: clean\[0\] is -1, outside the vocabulary/);
  expectError(() => m.attributionPatching([...IDS, 1, 2, 3], [...OTHER, 1, 2, 3], { metric: { target: 3 } }), /ids has 13 tokens; this model takes 1 to maxLen = 12/);
  const synth = lib.createModel({ vocab: 11, dModel: 16, heads: 4, layers: 2, maxLen: 12, attention: 'synth:dense' });
  expectError(() => synth.attributionPatching(IDS, OTHER, { metric: { target: 3 }, names: ['hook_mlp_out', 'attn.hook_q'] }), /names\[1\]: blocks.0.attn.hook_q: attention "synth:dense" reads no queries or keys/);
  synth.dispose();
  // the model as it was: the same numbers again
  const again = m.attributionPatching(IDS, OTHER, { metric: { target: 3 } });
  assert.equal(again.clean, want.clean);
  for (const k of Object.keys(want.grids)) assert.deepEqual(again.grids[k].data, want.grids[k].data);
  // an inference-only copy runs it too (the activations' gradients alone: attribution-inference.test.js);
  // quantized models are refused, their float32 matrices gone
  const inf = lib.loadModel(m.save(), { training: false });
  const fromInf = inf.attributionPatching(IDS, OTHER, { metric: { target: 3 } });
  assert.equal(fromInf.clean, want.clean);
  for (const k of Object.keys(want.grids)) assert.deepEqual(fromInf.grids[k].data, want.grids[k].data);
  inf.dispose();
  const source = lib.createModel({ vocab: 11, dModel: 16, heads: 4, layers: 2, dFF: 32, maxLen: 12 });
  const quant = lib.loadModel(source.save(), { training: false });
  source.dispose();
  quant.quantize('q8_0');
  expectError(() => quant.attributionPatching(IDS, OTHER, { metric: { target: 3 } }), /attributionPatching: its backward needs the float32 weights, and this model was quantized/);
  quant.dispose();
  m.dispose();
  expectError(() => m.attributionPatching(IDS, OTHER, { metric: { target: 3 } }), /attributionPatching: this model was disposed/);
});
