// threads.test.js: the threaded build in headless Chromium. In a cross-origin-isolated page
// (scripts/serve.js sends COOP/COEP) loadAttention({ threads: 2 }) runs two threads whose results
// equal one thread's bit for bit; in a page without those headers it falls back to one thread and
// says why in one line.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServer } from '../../scripts/serve.js';
import { launch, openPage } from './helpers.js';

let browser, isolated, plain;
before(async () => {
  browser = await launch();
  isolated = await startServer();
  plain = await startServer({ isolate: false });
});
after(async () => {
  await browser?.close();
  await isolated?.close();
  await plain?.close();
});

// In the page: load with 2 threads, run causal softmax attention and a matmul at 1 and 2 threads.
async function probe(url) {
  const { page, problems } = await openPage(browser.context);
  await page.goto(`${url}index.html?form=softmax`);
  const r = await page.evaluate(async () => {
    const { loadAttention } = await import('/wasm/index.js');
    const lib = await loadAttention({ threads: 2 });
    const n = 700, d = 64, rnd = (s) => Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37 + s));
    const q = rnd(1), k = rnd(2), v = rnd(3);
    const run = () => lib.softmaxAttention({ q, k, v, n, d, causal: true }).output;
    const a = run();
    lib.setThreads(1);
    const b = run();
    lib.setThreads(2);
    const same = a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
    // the worker takes part: a busy machine may wake it after the caller has taken every item of
    // one call, so give it a few larger calls
    const big = 4096, qb = Float32Array.from({ length: big * d }, (_, i) => Math.sin(i * 0.11));
    for (let r = 0; r < 20 && lib.threads > 1 && lib.threadWorkItems() === 0; r++)
      lib.softmaxAttention({ q: qb, k: qb, v: qb, n: big, d });
    const one = await loadAttention();
    const simd = await loadAttention({ relaxed: false });
    const mm = (l) => l.kernels.matmul(q.subarray(0, 96 * 64), k.subarray(0, 64 * 80), { M: 96, N: 80, K: 64 });
    const [r1, r2, s1] = [mm(lib), mm(one), mm(simd)];
    return { threads: lib.threads, reason: lib.threadsReason, same, items: lib.threadWorkItems(),
      isolated: globalThis.crossOriginIsolated === true, relaxed: [lib.relaxed, one.relaxed, simd.relaxed],
      relaxedSame: r1.every((x, i) => Object.is(x, r2[i])), fused: r1.some((x, i) => !Object.is(x, s1[i])),
      relaxedErr: r1.reduce((m, x, i) => Math.max(m, Math.abs(x - s1[i]) / (1 + Math.abs(s1[i]))), 0) };
  });
  return { r, problems: problems(), page };
}

test('a cross-origin-isolated page runs two threads with the same bits as one', async () => {
  const { r, problems, page } = await probe(isolated.url);
  assert.equal(r.isolated, true);
  assert.equal(r.threads, 2, `threads: ${r.threads}, reason: ${r.reason}`);
  assert.equal(r.reason, null);
  assert.ok(r.same, '1 and 2 threads give the same output');
  assert.ok(r.items > 0, 'the worker ran items');
  // Chromium validates relaxed SIMD: 'auto' picks the relaxed builds, threaded and not; relaxed: false keeps SIMD128
  assert.deepEqual(r.relaxed, [true, true, false]);
  assert.ok(r.relaxedSame, 'the threaded and single-thread relaxed builds give the same bits');
  assert.ok(r.fused, 'the relaxed build fuses its multiply-adds (some bits differ from SIMD128)');
  assert.ok(r.relaxedErr <= 2e-5, `relaxed vs SIMD128: ${r.relaxedErr}`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a page that is not cross-origin isolated falls back to one thread and says why', async () => {
  const { r, page } = await probe(plain.url);
  assert.equal(r.isolated, false);
  assert.equal(r.threads, 1);
  assert.match(r.reason, /SharedArrayBuffer is missing: the page is not cross-origin isolated .*Cross-Origin-Opener-Policy: same-origin.*npm start sends both/);
  assert.ok(r.same);
  await page.close();
});
