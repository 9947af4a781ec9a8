// delta.bench.js: the delta rule's two forwards, the recurrence and the chunked WY form, with a
// decay per head (Gated DeltaNet) and per key channel (KDA: the chunked form's c x c matrices
// are then formed pair by pair, src/attention/delta_rule.c), at n = 2048 and three head widths.
// Everything printed is measured in this run, each row's columns round-robin in one interleave().

const CASES = [[2048, 256, 16], [2048, 256, 4], [1024, 512, 4]]; // n, d, heads: head widths 16, 64, 128

export default async function run({ simd, interleave, fmt, table, randomF32 }) {
  console.log('lib.deltaRule forward, ms per call, median [min-max], SIMD build, one thread; gates in [0.91, 0.99], beta in [0.1, 0.9]');
  const rows = [];
  for (const [n, d, heads] of CASES) {
    const o = { q: randomF32(n * d, 1), k: randomF32(n * d, 2), v: randomF32(n * d, 3), n, d, heads,
      beta: Float32Array.from(randomF32(n * heads, 4), (x) => 0.5 + 0.4 * x) };
    const perHead = Float32Array.from(randomF32(n * heads, 5), (x) => 0.95 + 0.04 * x);
    const perChannel = Float32Array.from(randomF32(n * d, 6), (x) => 0.95 + 0.04 * x);
    const contenders = {};
    for (const [label, gates] of [['head', perHead], ['channel', perChannel]]) {
      contenders[`${label} recurrent`] = () => simd.deltaRule({ ...o, gates, mode: 'recurrent' });
      contenders[`${label} chunk 16`] = () => simd.deltaRule({ ...o, gates, mode: 'chunked', chunk: 16 });
      contenders[`${label} chunk 64`] = () => simd.deltaRule({ ...o, gates, mode: 'chunked', chunk: 64 });
    }
    const t = interleave(contenders, { samples: 5, minMs: 5 });
    rows.push([`${n}, ${d}, ${heads} (${d / heads})`, ...Object.keys(contenders).map((k) => fmt(t[k], 1))]);
  }
  table(['n, d, heads (head width)', 'Gated DeltaNet recurrent', 'chunk 16', 'chunk 64', 'KDA recurrent', 'chunk 16', 'chunk 64'], rows);
}
