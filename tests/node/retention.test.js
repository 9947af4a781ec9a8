// retention.test.js: lib.retention and lib.linformer on both builds against float64 definitions
// written here (docs/attention-forms.md section 6), the C naive references, retention's three
// causal forms against each other, and the errors.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectError, maxErr, rand } from './helpers.js';
import { linformerF64, retentionF64 } from './reference.js';
import { retnetGammas } from '../../wasm/index.js';

for (const { name, lib } of builds) {
  test(`${name}: retention matches its float64 definition; parallel == recurrent == chunked (causal, centred, heads, n = 1)`, (t) => {
    let worst = 0, worstW = 0, worstForms = 0;
    const cases = [
      { n: 1, d: 4 }, { n: 17, d: 8, heads: 2 }, { n: 70, d: 16, heads: 4, chunk: 16 }, { n: 33, d: 8, dv: 12, heads: 2, gamma: 0.5 },
      { n: 100, d: 8, gamma: [0.9], chunk: 7 }, { n: 40, d: 8, heads: 2, causal: false }, { n: 1, d: 4, causal: false },
      { n: 130, d: 8, heads: 2, gamma: 1 },
    ];
    for (const [i, c] of cases.entries()) {
      const dv = c.dv ?? c.d;
      const { chunk, ...shape } = c; // chunk applies to mode 'chunked' only
      const opts = { ...shape, q: rand(c.n * c.d, 3 * i + 1), k: rand(c.n * c.d, 3 * i + 2), v: rand(c.n * dv, 3 * i + 3) };
      const want = retentionF64(opts);
      const par = lib.retention({ ...opts, returnWeights: true });
      const ref = lib.retention({ ...opts, reference: true });
      worst = Math.max(worst, maxErr(par.output, want.output), maxErr(ref.output, want.output));
      worstW = Math.max(worstW, maxErr(par.weights, want.weights));
      if (c.causal !== false)
        for (const mode of ['recurrent', 'chunked']) {
          const o = lib.retention({ ...opts, mode, ...(mode === 'chunked' && chunk ? { chunk } : {}) }).output;
          worst = Math.max(worst, maxErr(o, want.output));
          worstForms = Math.max(worstForms, maxErr(o, par.output));
        }
    }
    t.diagnostic(`max err ${worst.toExponential(2)} (tol ${TOL.attention}), weights ${worstW.toExponential(2)}, ` +
      `recurrent/chunked vs parallel ${worstForms.toExponential(2)} (tol ${TOL.linear_causal_forms})`);
    assert.ok(worst <= TOL.attention && worstW <= TOL.attention && worstForms <= TOL.linear_causal_forms);
  });

  test(`${name}: retention with gamma = 1 and no decay is unnormalised causal linear attention; errors are clear`, () => {
    const n = 12, d = 8, q = rand(n * d, 5), k = rand(n * d, 6), v = rand(n * d, 7);
    const o = lib.retention({ q, k, v, n, d, gamma: 1, scale: 1 }).output;
    // row i = sum_{j <= i} (q_i . k_j) v_j
    const i = 7;
    for (let c = 0; c < d; c++) {
      let s = 0;
      for (let j = 0; j <= i; j++) { let dot = 0; for (let e = 0; e < d; e++) dot += q[i * d + e] * k[j * d + e]; s += dot * v[j * d + c]; }
      assert.ok(Math.abs(o[i * d + c] - s) < 1e-4);
    }
    expectError(() => lib.retention({ q, k, v, n, d, gamma: 1.5 }), /retention: gamma\[0\] must be a number in \(0, 1\], got 1.5/);
    expectError(() => lib.retention({ q, k, v, n, d, heads: 2, gamma: [0.9] }), /retention: gamma must be a number in \(0, 1\] or 2 of them/);
    expectError(() => lib.retention({ q, k, v, n, d, mode: 'fast' }), /retention: mode must be one of "parallel", "recurrent", "chunked"/);
    expectError(() => lib.retention({ q, k, v, n, d, causal: false, mode: 'recurrent' }), /needs causal: true/);
    expectError(() => lib.retention({ q, k: rand(4 * d), v: rand(4 * d), n, m: 4, d }), /m \(4\) must equal n \(12\)/);
    const bad = q.slice(); bad[3] = NaN;
    expectError(() => lib.retention({ q: bad, k, v, n, d }), /retention: q\[3\] is NaN/);
    assert.equal(lib.retention({ q, k, v, n, d }).output.length, n * d, 'usable after the errors');
  });

  test(`${name}: Linformer matches its float64 definition (heads, proj < n, proj > n, n = 1, n = maxLen)`, (t) => {
    let worst = 0, worstW = 0;
    const cases = [
      { n: 1, d: 4, proj: 2, maxLen: 8 }, { n: 13, d: 8, heads: 2, proj: 4, maxLen: 16 }, { n: 16, d: 8, dv: 12, heads: 2, proj: 8, maxLen: 16 },
      { n: 10, d: 16, heads: 4, proj: 20, maxLen: 32 }, { n: 64, d: 8, proj: 6, maxLen: 64 },
    ];
    for (const [i, c] of cases.entries()) {
      const dv = c.dv ?? c.d;
      const E = rand(c.proj * c.maxLen, 7 * i + 5), F = rand(c.proj * c.maxLen, 7 * i + 6);
      const opts = { ...c, E, F, q: rand(c.n * c.d, 3 * i + 1), k: rand(c.n * c.d, 3 * i + 2), v: rand(c.n * dv, 3 * i + 3) };
      const want = linformerF64(opts);
      const got = lib.linformer({ ...opts, returnWeights: true });
      const ref = lib.linformer({ ...opts, reference: true });
      worst = Math.max(worst, maxErr(got.output, want.output), maxErr(ref.output, want.output));
      worstW = Math.max(worstW, maxErr(got.weights, want.weights));
    }
    t.diagnostic(`max err ${worst.toExponential(2)}, implied weights ${worstW.toExponential(2)} (tol ${TOL.attention})`);
    assert.ok(worst <= TOL.attention && worstW <= TOL.attention);
  });

  test(`${name}: Linformer refuses causal with its reason and n above maxLen naming it`, () => {
    const n = 10, d = 8, q = rand(n * d, 1), k = rand(n * d, 2), v = rand(n * d, 3);
    expectError(() => lib.linformer({ q, k, v, n, d, causal: true }), /linformer: causal: true is not possible: .*mixes every position, later ones included/);
    expectError(() => lib.linformer({ q, k, v, n, d, maxLen: 8 }), /linformer: n = 10 is longer than maxLen = 8: E and F have maxLen columns/);
    expectError(() => lib.linformer({ q, k, v, n, d, E: rand(8 * n) }), /give both E and F/);
    expectError(() => lib.linformer({ q, k, v, n, d, proj: 4, E: rand(8 * n), F: rand(8 * n) }), /E must be a Float32Array of proj\*maxLen = 4\*10 = 40 values/);
    const a = lib.linformer({ q, k, v, n, d, seed: 3 }).output, b = lib.linformer({ q, k, v, n, d, seed: 3 }).output;
    assert.deepEqual(a, b, 'seeded default projections are deterministic');
  });
}
