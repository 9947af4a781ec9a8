// gla.test.js: GLA, a decay gate per key channel (src/attention/gla.c, docs/attention-forms.md 4c):
// the parallel, recurrent and chunked forwards agree with the float64 recurrence
// (tests/node/reference.js) and with each other, gradients too, at chunks that do not divide n,
// n = 1, and gates near 0 (long products of small gates must underflow to 0, not to NaN) and near 1.
// The conformance suite checks the rest (gradients by finite differences, threads, generation,
// checkpoints, the PyTorch module).
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, rand, relMaxErr } from './helpers.js';
import { glaF64 } from './reference.js';

for (const { name, lib } of builds) {
  test(`${name}: GLA: parallel = recurrent = chunked = float64, forward and gradients, gates near 0 and near 1`, (t) => {
    for (const [n, d, heads] of [[1, 8, 2], [37, 16, 2], [130, 24, 3]])
      for (const [what, bias] of [['learned init', null], ['gates near 0', 20], ['gates near 1', -20]]) {
        const data = { q: rand(n * d, n + 31), k: rand(n * d, n + 32), v: rand(n * d, n + 33), x: rand(n * d, n + 34) };
        const dout = rand(n * d, n + 35);
        let params = null;
        const run = (attentionOptions) => {
          const layer = lib.attentionLayer('gla', { n, d, heads, causal: true, seed: 6, attentionOptions });
          if (bias !== null) {
            const p = layer.params;
            p.fill(0, 0, d * d); // W = 0: every gate is sigmoid(-bias)
            p.fill(bias, d * d);
            layer.setParams(p);
          }
          params = layer.params;
          const o = layer.forward(data).output;
          const g = layer.backward({ ...data, dout });
          layer.dispose();
          return { o, ...g };
        };
        const par = run({ mode: 'parallel' });
        const ref = glaF64({ ...data, n, d, heads, W: params.subarray(0, d * d), b: params.subarray(d * d) });
        const e0 = relMaxErr(par.o, ref);
        assert.ok(e0 <= 1e-5, `n=${n} ${what}: parallel vs float64 ${e0}`);
        for (const opts of [{ mode: 'recurrent' }, { mode: 'chunked', chunk: 1 }, { mode: 'chunked', chunk: 3 },
          { mode: 'chunked', chunk: 7 }, { mode: 'chunked', chunk: 64 }]) {
          const r = run(opts);
          assert.ok(r.o.every(Number.isFinite), `n=${n} ${what} ${JSON.stringify(opts)}: not finite`);
          const e = relMaxErr(r.o, ref);
          assert.ok(e <= 1e-5, `n=${n} ${what} ${JSON.stringify(opts)}: vs float64 ${e}`);
          for (const key of ['dq', 'dk', 'dv', 'dx', 'dparams'])
            assert.ok(relMaxErr(r[key], par[key]) <= 1e-5, `n=${n} ${what} ${JSON.stringify(opts)}: ${key}`);
        }
        t.diagnostic(`n=${n} heads=${heads} ${what}: parallel vs float64 ${e0.toExponential(2)}; every mode within 1e-5`);
      }
  });

  test(`${name}: GLA: a channel's gate of 1 keeps its row of the state, a gate near 0 clears it`, () => {
    // one head, d = 2: channel 0 never forgets (bias -30: alpha = 1), channel 1 forgets at once (bias
    // 30); position 0 writes v = (1, 1) at key (1, 1); position 1 reads with q = (1, 0) and (0, 1)
    const n = 3, d = 2, layer = lib.attentionLayer('gla', { n, d, heads: 1, causal: true });
    const p = layer.params;
    p.fill(0, 0, 4);
    p[4] = -30, p[5] = 30;
    layer.setParams(p);
    const k = Float32Array.of(1, 1, 0, 0, 0, 0), v = Float32Array.of(1, 1, 0, 0, 0, 0);
    const q = Float32Array.of(0, 0, Math.SQRT2, 0, 0, Math.SQRT2);
    const o = layer.forward({ q, k, v, x: new Float32Array(6) }).output;
    layer.dispose();
    assert.ok(Math.abs(o[2] - 1) < 1e-6 && Math.abs(o[3] - 1) < 1e-6, `channel 0 kept: ${[...o]}`);
    assert.ok(Math.abs(o[4]) < 1e-6 && Math.abs(o[5]) < 1e-6, `channel 1 cleared: ${[...o]}`);
  });
}
