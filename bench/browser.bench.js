// browser.bench.js: the attention comparison of threads.bench.js in headless Chromium, in a
// cross-origin-isolated page (scripts/serve.js): ours (loadAttention({ threads: 2 })) at 1 and 2
// threads, the SIMD128 build and the relaxed-SIMD build (which Chromium validates: 'rx'), against
// onnxruntime-web's threaded wasm with numThreads 2 in both its graphs (the fused
// MultiHeadAttention and the plain MatMul-Mul-Softmax-MatMul, 'ort ops'), and against tfjs-wasm (XNNPACK), which loads its threaded SIMD build in an
// isolated page (setThreadsCount(2), though 4.22 reports 1 thread; in Node its multithread flag is
// off), in alternating blocks (a
// sample is >= 30 ms of one engine's calls, after an idle pause of 20 ms). onnxruntime-web fixes numThreads per page, so ort 1t
// would need a second page; this section runs the 2-thread comparison.
// `node bench/run.js browser` (or `npm run bench`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer } from '../scripts/serve.js';

const ORT_DIST = fileURLToPath(new URL('./node_modules/onnxruntime-web/dist/', import.meta.url));
const TF_CORE = fileURLToPath(new URL('./node_modules/@tensorflow/tfjs-core/dist/', import.meta.url));
const TF_WASM = fileURLToPath(new URL('./node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url));

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
  const tfjs = existsSync(TF_CORE) && existsSync(TF_WASM);
  const server = await startServer({ mounts: { '/': `${root}bench/peers`, '/wasm/': `${root}wasm`, '/ort/': ORT_DIST,
    ...(tfjs ? { '/tfjs-core/': TF_CORE, '/tfjs-wasm/': TF_WASM } : {}) } });
  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}blank.html`); // an empty page: nothing else runs on its main thread
    if (tfjs) { // UMD builds: the global tf, then tf.wasm
      await page.addScriptTag({ url: '/tfjs-core/tf-core.min.js' });
      await page.addScriptTag({ url: '/tfjs-wasm/tf-backend-wasm.min.js' });
    }
    const cases = [512, 1024, 2048].map((n) => ({
      n, d: 64,
      ops: Array.from(buildModel({ inputs: { Q: [n, 64], K: [n, 64], V: [n, 64] }, outputs: { O: [n, 64] },
        initializers: { scale: [[], [1 / 8]] },
        nodes: [{ op: 'Transpose', inputs: ['K'], outputs: ['KT'], attrs: {} }, { op: 'MatMul', inputs: ['Q', 'KT'], outputs: ['S'] },
          { op: 'Mul', inputs: ['S', 'scale'], outputs: ['Ss'] }, { op: 'Softmax', inputs: ['Ss'], outputs: ['P'], attrs: { axis: -1 } },
          { op: 'MatMul', inputs: ['P', 'V'], outputs: ['O'] }] })),
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
      const lib = await loadAttention({ threads: 2, relaxed: false });
      const rx = await loadAttention({ threads: 2 }); // 'auto': the relaxed build where Chromium validates it
      const tf = globalThis.tf ?? null;
      let tfInfo = null;
      if (tf) {
        tf.wasm.setWasmPaths('/tfjs-wasm/');
        tf.wasm.setThreadsCount(2);
        if (!(await tf.setBackend('wasm'))) throw new Error('tfjs: the wasm backend failed to initialise');
        await tf.ready();
        tfInfo = { simd: await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'),
          multithread: await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'), threads: tf.wasm.getThreadsCount() };
      }
      const started = lib.threads;
      const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const block = async (f, minMs) => {
        let reps = 0;
        const t0 = performance.now();
        do { await f(); reps++; } while (performance.now() - t0 < minMs);
        return (performance.now() - t0) / reps;
      };
      const rows = [];
      for (const { n, d, model, ops } of cases) {
        const rnd = (s) => Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37 + s) * 0.5);
        const q = rnd(1), k = rnd(2), v = rnd(3);
        const session = await ort.InferenceSession.create(new Uint8Array(model), { executionProviders: ['wasm'] });
        const ortCall = async () => (await session.run({
          Q: new ort.Tensor('float32', q, [1, n, d]), K: new ort.Tensor('float32', k, [1, n, d]), V: new ort.Tensor('float32', v, [1, n, d]),
        })).O.data;
        const opsSession = await ort.InferenceSession.create(new Uint8Array(ops), { executionProviders: ['wasm'] });
        const opsCall = async () => (await opsSession.run({
          Q: new ort.Tensor('float32', q, [n, d]), K: new ort.Tensor('float32', k, [n, d]), V: new ort.Tensor('float32', v, [n, d]),
        })).O.data;
        const ours = (t, l = lib) => () => { l.setThreads(t); return l.softmaxAttention({ q, k, v, n, d }).output; };
        const tfCall = () => { // as in the peers section: matMul(Q, transpose(K)) is tfjs-wasm's fast path
          const Q = tf.tensor2d(q, [n, d]), K = tf.tensor2d(k, [n, d]), V = tf.tensor2d(v, [n, d]);
          const O = tf.tidy(() => tf.matMul(tf.softmax(tf.mul(tf.matMul(Q, tf.transpose(K)), 1 / 8)), V));
          const out = O.dataSync();
          Q.dispose(), K.dispose(), V.dispose(), O.dispose();
          return out;
        };
        const a = ours(2)(), b = await ortCall();
        const diff = (x) => x.reduce((e, y, i) => Math.max(e, Math.abs(y - a[i])), 0);
        const err = Math.max(diff(b), diff(await opsCall()), diff(ours(2, rx)()), tf ? diff(tfCall()) : 0);
        const c = { 'ours 1t': ours(1), 'ours 2t': ours(2), ...(rx.relaxed ? { 'rx 1t': ours(1, rx), 'rx 2t': ours(2, rx) } : {}),
          'ort 2t': ortCall, 'ort ops 2t': opsCall, ...(tf ? { 'tfjs': tfCall } : {}) };
        for (const f of Object.values(c)) for (let w = 0; w < 3; w++) await f();
        const times = Object.fromEntries(Object.keys(c).map((x) => [x, []]));
        const names = Object.keys(c);
        for (let s = 0; s < 11; s++) for (let i = 0; i < names.length; i++) {
          const name = names[(i + s) % names.length];
          await new Promise((resolve) => setTimeout(resolve, 20)); // the last engine's spinning pool sleeps first
          times[name].push(await block(c[name], 30));
        }
        rows.push({ n, err, ...Object.fromEntries(names.map((x) => [x, { med: med(times[x]), min: Math.min(...times[x]) }])) });
        await session.release();
        await opsSession.release();
      }
      return { rows, threads: started, reason: lib.threadsReason, ua: navigator.userAgent, isolated: crossOriginIsolated, tfInfo,
        relaxed: rx.relaxed };
    }, cases);
    console.log(`headless ${out.ua.match(/(Headless)?Chrome\/[\d.]+/)?.[0] ?? out.ua}, cross-origin isolated: ${out.isolated}, ` +
      `ours ${out.threads} threads${out.reason ? ` (${out.reason})` : ''}, relaxed-SIMD build ${out.relaxed ? 'runs' : 'not validated'}; ` +
      (out.tfInfo ? `tfjs-wasm asked for 2 threads, reports ${out.tfInfo.threads} (simd ${out.tfInfo.simd}, multithread ` +
        `${out.tfInfo.multithread}${out.tfInfo.threads === 1 ? '; 4.22 ignores setThreadsCount: tfjs issue #8513' : ''}); ` :
        'tfjs-wasm not installed (bash scripts/bench-deps.sh); ') + 'ms per call, median [min] of 11 alternating blocks; ratios of medians (of minimums)');
    const x = (a, b) => (a && b ? `${(a.med / b.med).toFixed(2)}x (${(a.min / b.min).toFixed(2)}x)` : '-');
    const t = (a) => (a ? `${a.med.toFixed(2)} [${a.min.toFixed(2)}]` : '-');
    const best = (r) => [r['ort 2t'], r['ort ops 2t']].sort((a, b) => a.med - b.med)[0];
    const bestName = (r) => (best(r) === r['ort ops 2t'] ? 'ops' : 'MHA');
    ctx.table(['n (d = 64, one head)', 'ours 1t', 'ours 2t', 'rx 1t', 'rx 2t', 'ort 2t (MHA)', 'ort ops 2t', 'tfjs (threaded build)',
      '2t speed-up', 'rx 2t speed-up', 'ours 2t vs best ort 2t', 'rx 2t vs best ort 2t', 'ours 2t vs tfjs', 'max abs diff'],
    out.rows.map((r) => [r.n, t(r['ours 1t']), t(r['ours 2t']), t(r['rx 1t']), t(r['rx 2t']), t(r['ort 2t']), t(r['ort ops 2t']), t(r['tfjs']),
      x(r['ours 1t'], r['ours 2t']), x(r['rx 1t'], r['rx 2t']), `${x(best(r), r['ours 2t'])} ${bestName(r)}`, x(best(r), r['rx 2t']),
      x(r['tfjs'], r['ours 2t']), r.err.toExponential(1)]));
  } finally {
    await browser.close();
    await server.close();
  }
}
