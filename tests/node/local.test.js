// local.test.js: lib.localAttention on both builds against a float64 reference written here from
// the definition (softmax over the band of keys; docs/attention-forms.md section 4), the C naive
// reference, and the errors.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectError, maxErr, rand } from './helpers.js';
import { localF64 } from './reference.js';

for (const { name, lib } of builds) {
  test(`${name}: local and strided attention match their float64 definition (causal and centred, heads, m != n, n = 1)`, (t) => {
    let worst = 0, worstW = 0;
    const cases = [
      { n: 1, d: 4, window: 3 }, { n: 17, d: 8, window: 4 }, { n: 33, d: 16, heads: 4, window: 8, causal: false },
      { n: 40, d: 8, dv: 12, heads: 2, window: 1 }, { n: 9, m: 20, d: 8, window: 5 }, { n: 20, m: 9, d: 8, window: 6, causal: false },
      { n: 64, d: 32, heads: 2, window: 64 }, { n: 64, d: 32, heads: 2, window: 200, causal: false },
      // strided sparse attention: the band plus every s-th key
      { n: 40, d: 8, window: 3, stride: 5 }, { n: 40, d: 8, heads: 2, window: 4, stride: 7, causal: false },
      { n: 1, d: 4, window: 1, stride: 1 }, { n: 30, m: 45, d: 8, window: 2, stride: 4, causal: false },
      { n: 45, m: 30, d: 8, window: 5, stride: 3 },
    ];
    for (const [i, c] of cases.entries()) {
      const m = c.m ?? c.n, dv = c.dv ?? c.d;
      const opts = { ...c, q: rand(c.n * c.d, 3 * i + 1), k: rand(m * c.d, 3 * i + 2), v: rand(m * dv, 3 * i + 3) };
      const want = localF64(opts);
      const got = lib.localAttention({ ...opts, returnWeights: true });
      const ref = lib.localAttention({ ...opts, reference: true });
      worst = Math.max(worst, maxErr(got.output, want.output), maxErr(ref.output, want.output));
      worstW = Math.max(worstW, maxErr(got.weights, want.weights));
    }
    t.diagnostic(`max err ${worst.toExponential(2)} (tol ${TOL.attention}), weights ${worstW.toExponential(2)} (tol ${TOL.attention_weights})`);
    assert.ok(worst <= TOL.attention && worstW <= TOL.attention_weights);
  });

  test(`${name}: a window covering every key is causal softmax attention; errors are clear`, () => {
    const n = 24, d = 8, q = rand(n * d, 5), k = rand(n * d, 6), v = rand(n * d, 7);
    const a = lib.localAttention({ q, k, v, n, d, window: n }).output;
    const b = lib.softmaxAttention({ q, k, v, n, d, causal: true }).output;
    assert.ok(maxErr(a, b) <= TOL.attention, `${maxErr(a, b)}`);
    expectError(() => lib.localAttention({ q, k, v, n, d, window: 0 }), /localAttention: window must be a positive integer, got 0/);
    expectError(() => lib.localAttention({ q, k, v, n, d }), /localAttention: window must be a positive integer, got undefined/);
    expectError(() => lib.localAttention({ q, k, v, n, d, window: 2, causal: 'yes' }), /causal must be true or false/);
    const bad = q.slice();
    bad[3] = NaN;
    expectError(() => lib.localAttention({ q: bad, k, v, n, d, window: 2 }), /q\[3\] is NaN/);
    assert.equal(lib.localAttention({ q, k, v, n, d, window: 2 }).output.length, n * d, 'still usable');
  });
}

test('local attention: SIMD and scalar builds agree', () => {
  const opts = { q: rand(50 * 16, 1), k: rand(50 * 16, 2), v: rand(50 * 16, 3), n: 50, d: 16, heads: 2, window: 7 };
  const [a, b] = builds.map(({ lib }) => lib.localAttention(opts).output);
  assert.ok(maxErr(a, b) <= TOL.simd_vs_scalar);
});
