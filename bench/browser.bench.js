// browser.bench.js: the attention comparison of threads.bench.js in headless Chromium, in a
// cross-origin-isolated page (scripts/serve.js): ours (loadAttention({ threads: 2 })) at 1 and 2
// threads against onnxruntime-web's threaded wasm with numThreads 2 and its fused
// MultiHeadAttention, in alternating blocks (a sample is >= 30 ms of one engine's calls).
// onnxruntime-web fixes numThreads per page, so ort 1t would need a second page; this section
// runs the 2-thread comparison. `node bench/run.js browser` (or `npm run bench`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer } from '../scripts/serve.js';

const ORT_DIST = fileURLToPath(new URL('./node_modules/onnxruntime-web/dist/', import.meta.url));

export default async function run(ctx) {
  if (!existsSync(ORT_DIST)) return console.log('skipped: onnxruntime-web is not installed (bash scripts/bench-deps.sh)');
  let launch;
  try {
    ({ launch } = await import('../tests/browser/helpers.js'));
  } catch (e) {
    return console.log(`skipped: no browser (${e.message})`);
  }
  const { buildModel } = await import('./peers/onnx.js');
  const root = fileURLToPath(new URL('..', import.meta.url));
  const server = await startServer({ mounts: { '/': `${root}web`, '/wasm/': `${root}wasm`, '/ort/': ORT_DIST } });
  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}index.html?form=softmax`);
    const cases = [512, 1024, 2048].map((n) => ({
      n, d: 64,
      model: Array.from(buildModel({ inputs: { Q: [1, n, 64], K: [1, n, 64], V: [1, n, 64] }, outputs: { O: [1, n, 64] },
        nodes: [{ op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: ['Q', 'K', 'V'], outputs: ['O'],
          attrs: { num_heads: 1, scale: { float: 1 / 8 } } }] })),
    }));
    const out = await page.evaluate(async (cases) => {
      const { loadAttention } = await import('/wasm/index.js');
      const ort = await import('/ort/ort.wasm.min.mjs');
      ort.env.wasm.wasmPaths = '/ort/';
      ort.env.wasm.numThreads = 2;
      ort.env.logLevel = 'error';
      const lib = await loadAttention({ threads: 2 });
      const started = lib.threads;
      const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const block = async (f, minMs) => {
        let reps = 0;
        const t0 = performance.now();
        do { await f(); reps++; } while (performance.now() - t0 < minMs);
        return (performance.now() - t0) / reps;
      };
      const rows = [];
      for (const { n, d, model } of cases) {
        const rnd = (s) => Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37 + s) * 0.5);
        const q = rnd(1), k = rnd(2), v = rnd(3);
        const session = await ort.InferenceSession.create(new Uint8Array(model), { executionProviders: ['wasm'] });
        const ortCall = async () => (await session.run({
          Q: new ort.Tensor('float32', q, [1, n, d]), K: new ort.Tensor('float32', k, [1, n, d]), V: new ort.Tensor('float32', v, [1, n, d]),
        })).O.data;
        const ours = (t) => () => { lib.setThreads(t); return lib.softmaxAttention({ q, k, v, n, d }).output; };
        const a = ours(2)(), b = await ortCall();
        let err = 0;
        for (let i = 0; i < a.length; i++) err = Math.max(err, Math.abs(a[i] - b[i]));
        const c = { 'ours 1t': ours(1), 'ours 2t': ours(2), 'ort 2t': ortCall };
        for (const f of Object.values(c)) for (let w = 0; w < 3; w++) await f();
        const times = Object.fromEntries(Object.keys(c).map((x) => [x, []]));
        const names = Object.keys(c);
        for (let s = 0; s < 11; s++) for (let i = 0; i < names.length; i++) {
          const name = names[(i + s) % names.length];
          times[name].push(await block(c[name], 30));
        }
        rows.push({ n, err, ...Object.fromEntries(names.map((x) => [x, med(times[x])])) });
        await session.release();
      }
      return { rows, threads: started, reason: lib.threadsReason, ua: navigator.userAgent, isolated: crossOriginIsolated };
    }, cases);
    console.log(`headless ${out.ua.match(/(Headless)?Chrome\/[\d.]+/)?.[0] ?? out.ua}, cross-origin isolated: ${out.isolated}, ` +
      `ours ${out.threads} threads${out.reason ? ` (${out.reason})` : ''}; ms per call, median of 11 alternating blocks`);
    ctx.table(['n (d = 64, one head)', 'ours 1t', 'ours 2t', 'ort 2t (MHA)', '2t speed-up', 'ours 2t vs ort 2t', 'max abs diff'],
      out.rows.map((r) => [r.n, r['ours 1t'].toFixed(2), r['ours 2t'].toFixed(2), r['ort 2t'].toFixed(2),
        `${(r['ours 1t'] / r['ours 2t']).toFixed(2)}x`, `${(r['ort 2t'] / r['ours 2t']).toFixed(2)}x`, r.err.toExponential(1)]));
  } finally {
    await browser.close();
    await server.close();
  }
}
