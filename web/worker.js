// worker.js: the playground's heavy work, off the page's thread so the page never freezes.
// It loads the package itself (../wasm/index.js) and measures forward time against n.
// Messages in:  { type: 'run', id, build: 'auto' | 'simd' | 'scalar', forms: [id] | null, sizes: [n], d }
// Messages out: { type: 'loaded', id, simd, forms: [{ id, label }] }
//               { type: 'progress', id, done, total, form, n }
//               { type: 'result', id, form, n, ms, reps }        (ms: median of reps calls)
//               { type: 'skipped', id, form, n, reason }
//               { type: 'done', id } | { type: 'error', id, message }
// To stop a run, the page terminates the worker.
import { loadAttention } from '../wasm/index.js';
import { clearCache, probeForms } from './forms.js';
import { randomF32 } from './inputs.js';

const libs = new Map(); // build -> Promise<{ lib, forms }>

function load(build) {
  if (!libs.has(build)) {
    const simd = { auto: 'auto', simd: true, scalar: false }[build];
    libs.set(build, loadAttention({ simd }).then((lib) => ({ lib, forms: probeForms(lib).forms })));
    libs.get(build).catch(() => libs.delete(build));
  }
  return libs.get(build);
}

const MIN_MS = 60; // measure each point for at least this long ...
const MAX_REPS = 25; // ... but at most this many calls
const SLOW_MS = 3000; // a call slower than this stops the larger sizes of that form

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function run({ id, build, forms: wanted, sizes, d }) {
  const { lib, forms: available } = await load(build);
  const forms = wanted ? available.filter((f) => wanted.includes(f.id)) : available;
  postMessage({ type: 'loaded', id, simd: lib.simd, forms: available.map((f) => ({ id: f.id, label: f.label })) });
  const total = forms.length * sizes.length;
  let done = 0;
  const tooSlow = new Set();
  for (const n of sizes) {
    const inp = {
      n, d, heads: 1, causal: false, weights: false, seed: 7, maxLen: n,
      q: randomF32(n * d, 11, -2, 2), k: randomF32(n * d, 12, -2, 2), v: randomF32(n * d, 13), x: randomF32(n * d, 14),
    };
    for (const form of forms) {
      postMessage({ type: 'progress', id, done, total, form: form.id, n });
      if (tooSlow.has(form.id)) {
        postMessage({ type: 'skipped', id, form: form.id, n, reason: `a smaller n already took over ${SLOW_MS} ms` });
      } else {
        const cache = new Map();
        try {
          form.run(inp, cache); // warm-up (and creates a synthesizer's weights outside the timing)
          const times = [];
          const start = performance.now();
          while (times.length < 2 || (performance.now() - start < MIN_MS && times.length < MAX_REPS)) {
            const t0 = performance.now();
            form.run(inp, cache);
            times.push(performance.now() - t0);
            if (times[times.length - 1] > SLOW_MS) break;
          }
          const ms = median(times);
          if (ms > SLOW_MS) tooSlow.add(form.id);
          postMessage({ type: 'result', id, form: form.id, n, ms, reps: times.length });
        } catch (e) {
          postMessage({ type: 'skipped', id, form: form.id, n, reason: e.message });
        } finally {
          clearCache(cache);
        }
      }
      done++;
      // Let the progress message go out before the next (possibly long) measurement.
      await new Promise((r) => setTimeout(r, 0));
    }
  }
  postMessage({ type: 'progress', id, done, total });
  postMessage({ type: 'done', id });
}

onmessage = (e) => {
  const msg = e.data;
  if (msg?.type !== 'run') return;
  run(msg).catch((err) => postMessage({ type: 'error', id: msg.id, message: err.message }));
};
