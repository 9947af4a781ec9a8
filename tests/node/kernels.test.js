// Kernels against their references, on both builds: matmul in three layouts (odd sizes hit
// every edge tile), exp, and row softmax with masked entries.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectClose, expectError, rand } from './helpers.js';

function matmulF64(a, b, M, N, K, transA, transB) {
  const c = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (transA ? a[k * M + i] : a[i * K + k]) * (transB ? b[j * K + k] : b[k * N + j]);
      c[i * N + j] = s;
    }
  return c;
}

for (const { name, lib } of builds) {
  test(`${name}: matmul NN/NT/TN match the float64 and C references`, (t) => {
    const shapes = [[1, 1, 1], [3, 5, 7], [4, 8, 16], [17, 33, 9], [64, 64, 64], [37, 300, 70], [5, 9, 600]];
    for (const [M, N, K] of shapes)
      for (const [transA, transB] of [[false, false], [false, true], [true, false]]) {
        const a = rand(M * K, M * 7 + K), b = rand(K * N, N * 13 + K);
        const opts = { M, N, K, transA, transB };
        const fast = lib.kernels.matmul(a, b, opts);
        const ref = lib.kernels.matmul(a, b, { ...opts, reference: true });
        const f64 = matmulF64(a, b, M, N, K, transA, transB);
        const label = `${M}x${N}x${K} ${transA ? 'TN' : transB ? 'NT' : 'NN'}`;
        expectClose(t, `${label} fast vs f64`, fast, f64, TOL.matmul);
        expectClose(t, `${label} C ref vs f64`, ref, f64, TOL.matmul);
      }
  });

  test(`${name}: exp matches Math.exp, exact 0 at and below -87, finite at +88`, (t) => {
    const x = new Float32Array(2001);
    for (let i = 0; i < x.length; i++) x[i] = -87 + (i / 2000) * 175; // [-87, 88]
    const y = lib.kernels.exp(x);
    let worst = 0;
    for (let i = 1; i < x.length; i++) worst = Math.max(worst, Math.abs(y[i] - Math.exp(x[i])) / Math.exp(x[i]));
    t.diagnostic(`exp max rel err ${worst.toExponential(2)} (tol ${TOL.exp_rel})`);
    assert.ok(worst <= TOL.exp_rel, `exp rel err ${worst}`);
    const edge = lib.kernels.exp(Float32Array.of(-Infinity, -1e30, -87, -100, 88.3, 1e4, 0));
    assert.deepEqual([...edge.slice(0, 4)], [0, 0, 0, 0]);
    assert.ok(Number.isFinite(edge[4]) && Number.isFinite(edge[5]), 'large inputs stay finite');
    assert.equal(edge[6], 1);
  });

  test(`${name}: row softmax matches the reference; masked rows give zeros`, (t) => {
    for (const [rows, cols] of [[1, 1], [3, 7], [16, 64], [5, 1001]]) {
      const x = rand(rows * cols, rows + cols, -20, 20);
      for (let i = 0; i < x.length; i += 5) x[i] = -Infinity;
      const fast = lib.kernels.softmax(x, rows, cols);
      const ref = lib.kernels.softmax(x, rows, cols, { reference: true });
      expectClose(t, `softmax ${rows}x${cols}`, fast, ref, TOL.softmax);
      for (let i = 0; i < x.length; i += 5) assert.equal(fast[i], 0);
    }
    const allMasked = lib.kernels.softmax(new Float32Array(8).fill(-Infinity), 2, 4);
    assert.deepEqual([...allMasked], new Array(8).fill(0));
    const huge = lib.kernels.softmax(Float32Array.of(1e4, -1e4, 1e4, 0), 1, 4);
    assert.deepEqual([...huge], [0.5, 0, 0.5, 0]);
  });
}

for (const { name, lib } of builds)
  test(`${name}: matmul names the first non-finite input, wherever it sits`, () => {
    const M = 3, N = 5, K = 7, b = rand(K * N, 2);
    for (const [i, bad] of [[0, NaN], [9, Infinity], [20, -Infinity]]) {
      const a = rand(M * K, 1);
      a[i] = bad;
      expectError(() => lib.kernels.matmul(a, b, { M, N, K }), new RegExp(`kernels.matmul: a\\[${i}\\] is ${bad}; inputs must be finite`));
    }
    assert.equal(lib.kernels.matmul(rand(M * K, 1), b, { M, N, K }).length, M * N, 'still works');
  });

test('SIMD and scalar builds agree on matmul', (t) => {
  const [simd, scalar] = builds.map((b) => b.lib);
  assert.equal(simd.simd, true);
  assert.equal(scalar.simd, false);
  const M = 45, N = 70, K = 130;
  const a = rand(M * K, 3), b = rand(K * N, 4);
  expectClose(t, 'matmul simd vs scalar', simd.kernels.matmul(a, b, { M, N, K }), scalar.kernels.matmul(a, b, { M, N, K }), TOL.simd_vs_scalar);
});
