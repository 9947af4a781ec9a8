// threads.bench.js: the threaded build (loadAttention({ threads })) against onnxruntime-web's
// threaded wasm at the same thread count: ours at 1 and 2 threads, onnxruntime-web with numThreads
// 1 and 2, measured side by side. onnxruntime-web fixes its thread count once per process, so each
// count runs in a child process (bench/peers/threads-child.mjs): ours 1t, ours Tt and ort Tt are
// interleaved in alternating blocks there (a sample is >= BENCH_MIN_MS of one engine's calls).
// `node bench/run.js threads` (or `npm run bench`).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cpus } from 'node:os';

const child = fileURLToPath(new URL('./peers/threads-child.mjs', import.meta.url));

export default async function run(ctx) {
  const counts = [1, Math.min(2, cpus().length)].filter((x, i, a) => a.indexOf(x) === i);
  const rows = {}, notes = new Set();
  for (const T of counts) {
    const r = spawnSync(process.execPath, [...process.execArgv, child, String(T)], { encoding: 'utf8', timeout: 30 * 60 * 1000 });
    if (r.status !== 0) {
      console.log(`threads ${T}: the child failed (${r.status}): ${(r.stderr || r.stdout).split('\n').slice(-5).join(' ')}`);
      if (/Cannot find (package|module) 'onnxruntime-web'/.test(r.stderr)) console.log('(run bash scripts/bench-deps.sh)');
      continue;
    }
    for (const line of r.stdout.split('\n').filter((l) => l.startsWith('{'))) {
      const x = JSON.parse(line);
      if (x.note) notes.add(`${x.case}: ${x.note}`);
      else (rows[x.case] ??= {})[`${x.engine}@${T}`] = x;
    }
  }
  const ms = (x) => (x ? `${x.median.toFixed(2)} [${x.min.toFixed(2)}]` : '-');
  const ratio = (a, b) => (a && b ? `${(a.median / b.median).toFixed(2)}x (${(a.min / b.min).toFixed(2)}x)` : '-');
  // onnxruntime-web's faster graph at this thread count (fused MultiHeadAttention or the plain ops)
  const best = (r, T) => [r[`ort@${T}`], r[`ort ops@${T}`]].filter(Boolean).sort((a, b) => a.median - b.median)[0];
  const bestName = (r, T) => (best(r, T) === r[`ort ops@${T}`] ? 'ops' : r[`ort ops@${T}`] ? 'MHA' : '');
  console.log(`ms per call, median [min]; ratios "of medians (of minimums)", slower / faster; ${cpus().length} cores`);
  console.log('ours / rx 1t, 2t: the same threaded instance with setThreads(1) and (2), SIMD128 build / relaxed-SIMD build;');
  console.log('ort 1t/2t: onnxruntime-web numThreads 1 / 2, its fused MultiHeadAttention (or MatMul) and, for attention, its plain');
  console.log('MatMul-Mul-Softmax-MatMul graph (ort ops); "best ort": the faster of the two at that thread count (named).');
  console.log('Each child process times its engines side by side.');
  const table = Object.entries(rows).map(([name, r]) => {
    const o1 = r['ours 1t@2'] ?? r['ours 1t@1'], o2 = r['ours 2t@2'], x1 = r['rx 1t@2'] ?? r['rx 1t@1'], x2 = r['rx 2t@2'];
    return [name, ms(o1), ms(o2), ms(x1), ms(x2), ms(r['ort@1']), ms(r['ort ops@1']), ms(r['ort@2']), ms(r['ort ops@2']),
      ratio(o1, o2), ratio(x1, x2), `${ratio(best(r, 1), r['ours 1t@1'])} ${bestName(r, 1)}`,
      `${ratio(best(r, 2), o2)} ${bestName(r, 2)}`, ratio(best(r, 2), x2)];
  });
  ctx.table(['case', 'ours 1t', 'ours 2t', 'rx 1t', 'rx 2t', 'ort 1t', 'ort ops 1t', 'ort 2t', 'ort ops 2t', '2t speed-up',
    'rx 2t speed-up', 'ours 1t vs best ort 1t', 'ours 2t vs best ort 2t', 'rx 2t vs best ort 2t'], table);
  for (const n of notes) console.log(n);
}
