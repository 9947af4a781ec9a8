// The first speed check (issue 2): SIMD vs scalar build, measured side by side in one run.
// softmax attention n = 512, d = 64 (streaming and weights paths) and matmul GFLOP/s at 256^3.

export default async function run({ simd, scalar, interleave, fmt, table, randomF32 }) {
  const n = 512, d = 64;
  const q = randomF32(n * d, 1), k = randomF32(n * d, 2), v = randomF32(n * d, 3);
  const rows = [];
  for (const returnWeights of [false, true]) {
    const t = interleave({
      simd: () => simd.softmaxAttention({ q, k, v, n, d, returnWeights }),
      scalar: () => scalar.softmaxAttention({ q, k, v, n, d, returnWeights }),
    });
    rows.push([`softmax attention n=${n} d=${d} ${returnWeights ? 'weights' : 'streaming'} (ms)`, fmt(t.simd), fmt(t.scalar),
      `${(t.scalar.median / t.simd.median).toFixed(2)}x`]);
  }
  const S = 256, A = randomF32(S * S, 4), B = randomF32(S * S, 5);
  const t = interleave({
    simd: () => simd.kernels.matmul(A, B, { M: S, N: S, K: S }),
    scalar: () => scalar.kernels.matmul(A, B, { M: S, N: S, K: S }),
  });
  const gflops = (x) => (2 * S ** 3 / (x.median * 1e6)).toFixed(1);
  rows.push([`matmul ${S}^3 GFLOP/s (incl. copies in/out)`, gflops(t.simd), gflops(t.scalar), `${(t.scalar.median / t.simd.median).toFixed(2)}x`]);
  table(['case', 'SIMD', 'scalar', 'SIMD speed-up'], rows);
  console.log('target: SIMD >= 3x scalar on softmax attention n=512, d=64');
}
