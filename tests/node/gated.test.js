// Decay-gated linear attention (src/attention/gated_linear.c, docs/attention-forms.md 4c): the
// recurrent, chunked and parallel forms against each other and against the float64 recurrence
// (tests/node/reference.js), at chunk lengths that do not divide n, n = 1, and gates near 0 and
// near 1 over long sequences (products of thousands of small gates must stay finite). The
// registry's conformance suite checks the rest (gradients, threads, generation, checkpoints).
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, rand, relMaxErr } from './helpers.js';
import { gatedF64 } from './reference.js';

// A layer whose gates are fixed by its bias alone (W = 0): a = 1 / (1 + e^bias).
function layerWithGates(lib, { n, d, heads, mode, chunk, bias, W }) {
  const layer = lib.attentionLayer('gated', { n, d, heads, causal: true, attentionOptions: { mode, ...(chunk ? { chunk } : {}) } });
  const params = layer.params;
  if (bias !== undefined) {
    params.fill(0, 0, heads * d);
    params.fill(bias, heads * d);
  }
  if (W) params.set(W);
  layer.setParams(params);
  return layer;
}

for (const { name, lib } of builds) {
  test(`${name}: gated: recurrent == chunked (chunks 1, 3, 7, 64, n) == parallel == the float64 recurrence`, (t) => {
    let worst = 0;
    for (const [n, d, heads] of [[1, 4, 1], [13, 8, 2], [50, 16, 4], [130, 8, 1]]) {
      const q = rand(n * d, n + 1), k = rand(n * d, n + 2), v = rand(n * d, n + 3);
      const W = rand(heads * d + heads, n + 4); // random gates from x = q
      const ref = gatedF64({ q, k, v, x: q, n, d, heads, W: W.subarray(0, heads * d), b: W.subarray(heads * d) });
      const runs = [['parallel'], ['recurrent'], ...[1, 3, 7, 64, n].map((c) => ['chunked', c])];
      for (const [mode, chunk] of runs) {
        const layer = layerWithGates(lib, { n, d, heads, mode, chunk, W });
        const { output } = layer.forward({ q, k, v });
        layer.dispose();
        const e = relMaxErr(output, ref);
        worst = Math.max(worst, e);
        assert.ok(e < 1e-5, `n=${n} heads=${heads} ${mode}${chunk ? ` chunk ${chunk}` : ''}: rel err ${e}`);
      }
    }
    t.diagnostic(`worst rel err over every mode and chunk: ${worst.toExponential(2)} (tol 1e-5)`);
  });

  test(`${name}: gated: gates near 0 and near 1 over 2000 positions stay finite and agree in every mode`, (t) => {
    const n = 2000, d = 8, heads = 2;
    const q = rand(n * d, 5), k = rand(n * d, 6), v = rand(n * d, 7);
    for (const bias of [30, -30, 3]) { // a = 1e-13, 1 - 1e-13, 0.047: products far below float32's range
      const outs = ['parallel', 'recurrent', 'chunked'].map((mode) => {
        const layer = layerWithGates(lib, { n, d, heads, mode, chunk: 37, bias });
        const { output } = layer.forward({ q, k, v });
        const g = layer.backward({ q, k, v, dout: rand(n * d, 8) });
        layer.dispose();
        assert.ok(output.every(Number.isFinite), `bias ${bias}: a non-finite output`);
        for (const key of ['dq', 'dk', 'dv', 'dx', 'dparams']) assert.ok(g[key].every(Number.isFinite), `bias ${bias}: non-finite ${key}`);
        return output;
      });
      const e = Math.max(relMaxErr(outs[1], outs[0]), relMaxErr(outs[2], outs[0]));
      assert.ok(e < 1e-5, `bias ${bias}: modes differ by ${e}`);
      t.diagnostic(`bias ${bias}: recurrent and chunked vs parallel, rel err ${e.toExponential(2)}`);
    }
  });
}
