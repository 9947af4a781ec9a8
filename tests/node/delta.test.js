// DeltaNet, Gated DeltaNet and KDA (src/attention/delta_rule.c, docs/attention-forms.md 4c): the
// weights they show are the implied matrix with O = A V, and the delta rule overwrites a key's
// value where linear attention adds to it. The registry's conformance suite checks the rest
// (float64 recurrence, gradients, threads, generation, checkpoints, the PyTorch module).
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, rand, relMaxErr } from './helpers.js';

for (const { name, lib } of builds) {
  test(`${name}: delta rule: the weights shown are the A with O = A V, per head`, (t) => {
    let worst = 0;
    for (const form of ['delta', 'gated-delta', 'kda'])
      for (const [n, d, heads] of [[1, 4, 1], [9, 8, 2], [40, 16, 4]]) {
        const q = rand(n * d, n + 1), k = rand(n * d, n + 2), v = rand(n * d, n + 3);
        const { output, weights } = lib.attention(form, { q, k, v, n, d, heads, causal: true, returnWeights: true });
        const dh = d / heads;
        let scale = 0;
        for (const x of output) scale = Math.max(scale, Math.abs(x));
        for (let h = 0; h < heads; h++)
          for (let i = 0; i < n; i++)
            for (let c = 0; c < dh; c++) {
              let o = 0;
              for (let j = 0; j < n; j++) o += weights[(h * n + i) * n + j] * v[j * d + h * dh + c];
              worst = Math.max(worst, Math.abs(o - output[i * d + h * dh + c]) / scale);
            }
        for (let h = 0; h < heads; h++) // causal: nothing above the diagonal
          for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) assert.equal(weights[(h * n + i) * n + j], 0);
      }
    assert.ok(worst < 1e-5, `A V differs from the output by ${worst}`);
    t.diagnostic(`A V vs output, worst rel err ${worst.toExponential(2)}`);
  });

  test(`${name}: delta rule: a second value written at the same key replaces the first; linear attention adds them`, () => {
    // one head, d = 4; position 0 writes v0 at key e0, position 1 writes v1 at the same key, and
    // position 2 reads key e0. With beta near 1 (bias 20, W = 0) the delta rule returns v1 (scaled
    // by 1 / sqrt(d)); linear attention (relu features) returns the normalised sum of v0 and v1.
    const n = 3, d = 4;
    const e0 = [1, 0, 0, 0];
    const k = Float32Array.from([...e0, ...e0, 0, 1, 0, 0]);
    const v = Float32Array.from([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    const q = Float32Array.from([0, 0, 0, 0, 0, 0, 0, 0, ...e0]);
    const layer = lib.attentionLayer('delta', { n, d, heads: 1, causal: true });
    const p = layer.params;
    p.fill(0, 0, d);
    p.fill(20, d);
    layer.setParams(p);
    const delta = layer.forward({ q, k, v, x: q }).output.subarray(2 * d);
    layer.dispose();
    const s = 1 / Math.sqrt(d);
    assert.ok(Math.abs(delta[0]) < 1e-6 && Math.abs(delta[1] - s) < 1e-5, `delta rule read ${[...delta]}, want [0, ${s}, 0, 0]`);
    const linear = lib.attention('linear:relu', { q, k, v, n, d, causal: true }).output.subarray(2 * d);
    assert.ok(Math.abs(linear[0] - 0.5) < 1e-6 && Math.abs(linear[1] - 0.5) < 1e-6, `linear attention read ${[...linear]}, want [0.5, 0.5, 0, 0]`);
  });

  test(`${name}: delta rule: the chunked (WY) and recurrent forwards of a layer agree, gradients too, at chunks that do not divide n`, (t) => {
    for (const form of ['delta', 'gated-delta', 'kda'])
      for (const [n, d, heads] of [[1, 8, 2], [37, 16, 2], [130, 32, 4]]) {
        const data = { q: rand(n * d, n + 21), k: rand(n * d, n + 22), v: rand(n * d, n + 23), x: rand(n * d, n + 24) };
        const dout = rand(n * d, n + 25);
        const run = (attentionOptions) => {
          const layer = lib.attentionLayer(form, { n, d, heads, causal: true, seed: 4, attentionOptions });
          const o = layer.forward(data).output;
          const g = layer.backward({ ...data, dout });
          layer.dispose();
          return { o, ...g };
        };
        const rec = run({ mode: 'recurrent' });
        for (const chunk of [1, 3, 7, 64]) {
          const ch = run({ mode: 'chunked', chunk });
          const e = relMaxErr(ch.o, rec.o);
          assert.ok(e <= 1e-5, `${form} n=${n} chunk ${chunk}: output ${e}`);
          for (const key of ['dq', 'dk', 'dv', 'dx', 'dparams'])
            assert.ok(relMaxErr(ch[key], rec[key]) <= 1e-5, `${form} n=${n} chunk ${chunk}: ${key} ${relMaxErr(ch[key], rec[key])}`);
          if (chunk === 7) t.diagnostic(`${form} n=${n} chunk 7: output rel diff ${e.toExponential(2)}`);
        }
      }
  });
}
