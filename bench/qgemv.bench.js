// qgemv.bench.js: the decoder's quantized matrix-vector product on its own (src/api/api_bench.c
// aw_bench_qgemv: y = W x for a q8_0 or q4_0 W already in wasm memory, x quantized once), in the
// SIMD128 and relaxed-SIMD threaded builds at 1 and 2 threads, for W from memory (96 MiB of q8_0
// values: past any last-level cache) and from cache (a 2048 x 768 matrix, 1.5 MiB), beside a
// read stream of the same memory measured in the same run (aw_bench_stream). Bytes are W's values
// and scales; the share says how near the bus a decoder's weights can stream.
//   node bench/run.js qgemv        (BENCH_ROUNDS=N rounds, default 5; medians)
import { loadAttention } from '../wasm/index.js';

const EXPORTS = Symbol.for('attention-wasm.exports');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SHAPES = [
  { label: 'from memory', rows: 131072, cols: 768 },
  { label: 'from cache', rows: 2048, cols: 768 },
];
const FORMATS = [['q8_0', 64, 1], ['q4_0', 32, 0.5]];

function cstr(lib, s) {
  const ex = lib[EXPORTS], b = Buffer.from(`${s}\0`), p = ex.malloc(b.length);
  new Uint8Array(lib.memory.buffer, p, b.length).set(b);
  return p;
}

function streamGBs(lib, threads) {
  const ex = lib[EXPORTS], n = (96 << 20) / 4, a = ex.malloc(n * 4);
  try {
    new Float32Array(lib.memory.buffer, a, n).fill(1);
    lib.setThreads(threads);
    let best = 0;
    for (let r = 0; r < ROUNDS + 1; r++) {
      const t0 = performance.now();
      ex.aw_bench_stream(a, a, n, threads === 1 ? 1 : 2, 1);
      if (r) best = Math.max(best, (n * 4) / ((performance.now() - t0) * 1e6));
    }
    return best;
  } finally {
    ex.free(a);
  }
}

export default async function run({ cpuName, median, relaxed }) {
  console.log(`The quantized gemv alone: GB/s of weights (values and scales), median of ${ROUNDS}; ${cpuName()}`);
  const builds = [['SIMD128', await loadAttention({ threads: 2, simd: true, relaxed: false })]];
  if (relaxed) builds.push(['relaxed SIMD', await loadAttention({ threads: 2, relaxed: true })]);
  const stream = [1, 2].map((t) => streamGBs(builds[0][1], t));
  console.log(`read stream of 96 MiB in wasm: 1 thread ${stream[0].toFixed(1)} GB/s, 2 threads ${stream[1].toFixed(1)} GB/s`);
  console.log('| build | format | W | 1 thread GB/s | share of the stream | 2 threads GB/s | share of the stream | 2 threads / 1 |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [name, lib] of builds) {
    const ex = lib[EXPORTS], y = ex.malloc(4 * 131072);
    for (const [format, group, bytesPer] of FORMATS) {
      const f = cstr(lib, format);
      for (const { label, rows, cols } of SHAPES) {
        const bytes = rows * cols * bytesPer + (rows * cols / group) * 4;
        const reps = Math.max(1, Math.round(64e6 / bytes));
        const gbs = [1, 2].map((t) => {
          lib.setThreads(t);
          if (ex.aw_bench_qgemv(f, rows, cols, group, 1, y) !== 0) throw new Error(`aw_bench_qgemv ${format} ${rows}x${cols} failed`);
          const xs = [];
          for (let r = 0; r < ROUNDS; r++) {
            const t0 = performance.now();
            ex.aw_bench_qgemv(f, rows, cols, group, reps, y);
            xs.push((bytes * reps) / ((performance.now() - t0) * 1e6));
          }
          return median(xs);
        });
        const label2 = `${rows} x ${cols} (${(bytes / 2 ** 20).toFixed(1)} MiB), ${label}`;
        console.log(`| ${name} | ${format} | ${label2} | ${gbs[0].toFixed(1)} | ${((100 * gbs[0]) / stream[0]).toFixed(0)}% | ` +
          `${gbs[1].toFixed(1)} | ${((100 * gbs[1]) / stream[1]).toFixed(0)}% | ${(gbs[1] / gbs[0]).toFixed(2)}x |`);
      }
      ex.aw_bench_qgemv(0, 0, 0, 0, 0, 0);
      ex.free(f);
    }
    ex.free(y);
  }
}
