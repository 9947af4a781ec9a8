// sparse.bench.js: where sparse attention overtakes dense (issue 48). One causal layer of each form,
// 4 heads of 64 (d = 256), its forward on n random rows (lib.attention, the same descriptor the
// model runs), n from 512 to 8192, measured round-robin in one interleave() per n: dense softmax
// against NSA (blocks of 64, the 16 top blocks besides the first, current and previous, a window of
// 512) and DSA (2 indexer heads of width 32, the top 1024 keys). Both sparse forms keep their reading
// per query bounded (NSA: 19 blocks of 64 plus the window plus n/64 block summaries; DSA: 1024 keys
// plus the indexer's n scores of width 2 x 32), so their time grows about like n where softmax's
// grows like n^2; the indexer and the block summaries are the part still quadratic (small constants).
// The table gives each time, the ratio to softmax, and the fitted log-log slopes.
//   node bench/run.js sparse          (BENCH_SPARSE_MAX=4096 stops earlier)

const H = 4, D = 64 * H;
const NS = [512, 1024, 2048, 4096, 8192].filter((n) => n <= Number(process.env.BENCH_SPARSE_MAX ?? 8192));
const FORMS = [
  { key: 'softmax', name: 'softmax', options: {} },
  { key: 'nsa', name: 'nsa', options: { blockSize: 64, topBlocks: 16, window: 512 } },
  { key: 'dsa', name: 'dsa', options: { indexHeads: 2, indexDim: 32, topK: 1024 } }, // topK at most n: n at n = 512
];

function slope(ns, ts) {
  const xs = ns.map(Math.log), ys = ts.map(Math.log), mx = xs.reduce((a, b) => a + b) / xs.length, my = ys.reduce((a, b) => a + b) / ys.length;
  let num = 0, den = 0;
  for (let i = 0; i < xs.length; i++) num += (xs[i] - mx) * (ys[i] - my), den += (xs[i] - mx) ** 2;
  return num / den;
}

export default async function run({ simd, interleave, fmt, table, randomF32, cpuName }) {
  const forms = FORMS.filter((f) => simd.forms.some((g) => g.name === f.name));
  console.log(`forward time per call in ms, median [min-max], SIMD build, 1 thread, causal, ${H} heads x 64 = d ${D}; ${cpuName()}`);
  console.log(forms.map((f) => `${f.name} ${JSON.stringify(f.options)}`).join('; '));
  const rows = [], times = Object.fromEntries(forms.map((f) => [f.key, []]));
  for (const n of NS) {
    // lib.attention: an inference forward (nothing saved for a backward), the form set up per call
    // (its parameters are a few thousand floats: the set-up is a sliver of the call)
    const data = { q: randomF32(n * D, 1), k: randomF32(n * D, 2), v: randomF32(n * D, 3), x: randomF32(n * D, 4) };
    const t = interleave(Object.fromEntries(forms.map((f) => [f.key,
      () => simd.attention(f.name, { ...data, n, d: D, heads: H, causal: true,
        attentionOptions: f.name === 'dsa' ? { ...f.options, topK: Math.min(f.options.topK, n) } : f.options })])),
    { samples: n <= 2048 ? 5 : 3, minMs: 10 });
    for (const f of forms) times[f.key].push(t[f.key].median);
    rows.push([n, ...forms.map((f) => fmt(t[f.key], 1)),
      ...forms.slice(1).map((f) => `${(t.softmax.median / t[f.key].median).toFixed(2)}x`)]);
  }
  table(['n', ...forms.map((f) => f.name), ...forms.slice(1).map((f) => `softmax / ${f.name}`)], rows);
  console.log(`log-log slope of time against n: ${forms.map((f) => `${f.name} ${slope(NS, times[f.key]).toFixed(2)}`).join(', ')}`);
  for (const f of forms.slice(1)) {
    const at = NS.find((n, i) => times[f.key][i] < times.softmax[i]);
    console.log(`${f.name} is faster than softmax from n = ${at ?? `never up to ${NS.at(-1)}`}`);
  }
}
