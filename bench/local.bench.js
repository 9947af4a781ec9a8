// local.bench.js: local (sliding-window) attention against streaming softmax attention as n
// grows (d = 64, one head, window 64, causal): time should grow like n w for local and n^2 for
// softmax, so the fitted log-log slopes print beside the table. Measured side by side in one run.

const D = 64, W = 64;
const NS = [256, 512, 1024, 2048, 4096];

// least-squares slope of log(t) against log(n)
function slope(ns, ts) {
  const xs = ns.map(Math.log), ys = ts.map(Math.log), mx = xs.reduce((a, b) => a + b) / xs.length, my = ys.reduce((a, b) => a + b) / ys.length;
  let num = 0, den = 0;
  for (let i = 0; i < xs.length; i++) num += (xs[i] - mx) * (ys[i] - my), den += (xs[i] - mx) ** 2;
  return num / den;
}

export default async function run({ simd, interleave, fmt, table, randomF32 }) {
  console.log(`time per call in ms, median [min-max], SIMD build, d = ${D}, one head, causal; local window ${W}; ` +
    'softmax = lib.softmaxAttention (streaming); each row measured round-robin in one interleave()');
  const rows = [], tl = [], ts = [];
  for (const n of NS) {
    const o = { q: randomF32(n * D, 1), k: randomF32(n * D, 2), v: randomF32(n * D, 3), n, d: D, causal: true };
    const t = interleave({ local: () => simd.localAttention({ ...o, window: W }), softmax: () => simd.softmaxAttention(o) },
      { samples: n <= 1024 ? 7 : 5, minMs: 10 });
    tl.push(t.local.median), ts.push(t.softmax.median);
    rows.push([n, fmt(t.local, 3), fmt(t.softmax, 3), (t.softmax.median / t.local.median).toFixed(2) + 'x']);
  }
  table(['n', `local (w = ${W})`, 'softmax', 'softmax / local'], rows);
  console.log(`log-log slope of time against n: local ${slope(NS, tl).toFixed(2)} (n w: 1), softmax ${slope(NS, ts).toFixed(2)} (n^2: 2)`);
}
