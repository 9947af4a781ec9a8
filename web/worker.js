// worker.js: the playground's heavy work, off the page's thread so the page never freezes.
// It loads the package itself (../wasm/index.js) and measures forward time against n.
// Messages in:  { type: 'run', id, builds: ['auto' | 'simd' | 'scalar' | 'relaxed' | 'threads', ...], forms: [id] | null, sizes: [n], d, rounds }
// Messages out: { type: 'loaded', id, builds: [{ build, simd, relaxed, threads, threadsReason }], forms: [{ id, label }] }
//               { type: 'progress', id, done, total, form, build, n }
//               { type: 'result', id, form, build, n, ms, reps, round }   (ms: median of reps calls)
// A run goes over every (n, form, build) `rounds` times, one round after another, so a slow spell of
// a shared machine lands on every size in one round rather than on a few sizes of one form; the page
// takes the median over rounds and fits a slope per round to show how much it moves.
//               { type: 'skipped', id, form, build, n, reason }
// With two builds, each (form, n) is measured on both back to back, so their ratio is fair.
//               { type: 'done', id } | { type: 'error', id, message }
// To stop a run, the page terminates the worker.
import { workerLib } from './worker-page.js';
import { clearCache, probeForms } from '../lab/forms.js';
import { randomF32 } from './inputs.js';

const libs = new Map(); // build -> Promise<{ lib, forms }>

function load(build) {
  if (!libs.has(build)) {
    // 'threads': the threaded build on every core (one thread, and why, where the page cannot)
    const opts = { threads: { threads: 'auto' }, auto: {}, simd: { simd: true, relaxed: false }, scalar: { simd: false },
      relaxed: { relaxed: true } }[build];
    libs.set(build, workerLib(opts).then((lib) => ({ lib, forms: probeForms(lib).forms })));
    libs.get(build).catch(() => libs.delete(build));
  }
  return libs.get(build);
}

const BATCH_MS = 2; // a sample runs the call this long (a batch of calls when one is shorter)
const MIN_MS = 30; // measure each point for at least this long per round ...
const MIN_SAMPLES = 3; // ... with at least this many samples ...
const MAX_SAMPLES = 25; // ... and at most this many
const SLOW_MS = 3000; // a call slower than this stops the larger sizes of that form

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// Times one call of form at inp: the median over samples (after a warm-up call). Browsers coarsen
// performance.now() (5 us to 100 us), so a sample times a batch of calls lasting about 2 ms.
function measure(form, inp) {
  const cache = new Map();
  try {
    form.run(inp, cache); // warm-up (and creates a form layer's parameters outside the timing)
    let t0 = performance.now();
    form.run(inp, cache);
    const once = performance.now() - t0;
    const batch = Math.max(1, Math.min(1000, Math.ceil(BATCH_MS / Math.max(once, 0.005))));
    const samples = [];
    const start = performance.now();
    while (samples.length < MIN_SAMPLES || (performance.now() - start < MIN_MS && samples.length < MAX_SAMPLES)) {
      t0 = performance.now();
      for (let i = 0; i < batch; i++) form.run(inp, cache);
      samples.push((performance.now() - t0) / batch);
      if (samples[samples.length - 1] > SLOW_MS) break;
    }
    return { ms: median(samples), reps: samples.length * batch };
  } finally {
    clearCache(cache);
  }
}

async function run({ id, builds, forms: wanted, sizes, d, rounds = 1 }) {
  const loaded = [];
  for (const build of builds) loaded.push({ build, ...(await load(build)) });
  const available = loaded[0].forms;
  const ids = available.map((f) => f.id).filter((f) => !wanted || wanted.includes(f));
  postMessage({
    type: 'loaded', id,
    builds: loaded.map((l) => ({ build: l.build, simd: l.lib.simd, relaxed: l.lib.relaxed, threads: l.lib.threads, threadsReason: l.lib.threadsReason })),
    forms: available.map((f) => ({ id: f.id, label: f.label })),
  });
  const total = rounds * ids.length * sizes.length * loaded.length;
  let done = 0;
  const tooSlow = new Set(); // form@build@n: sizes above one that took over SLOW_MS
  for (let round = 0; round < rounds; round++) for (const n of sizes) {
    const inp = {
      n, d, heads: 1, causal: false, weights: false, seed: 7, maxLen: n,
      q: randomF32(n * d, 11, -2, 2), k: randomF32(n * d, 12, -2, 2), v: randomF32(n * d, 13), x: randomF32(n * d, 14),
    };
    for (const formId of ids) {
      for (const { build, forms } of loaded) {
        const form = forms.find((f) => f.id === formId);
        const key = `${formId}@${build}`;
        postMessage({ type: 'progress', id, done, total, form: formId, build, n, round });
        if (!form) {
          if (round === 0) postMessage({ type: 'skipped', id, form: formId, build, n, reason: 'not in this build' });
        } else if (tooSlow.has(`${key}@${n}`)) {
          if (round === 0) postMessage({ type: 'skipped', id, form: formId, build, n, reason: `a smaller n already took over ${SLOW_MS} ms` });
        } else {
          try {
            // a form with no non-causal form (a gate runs forward in time) is timed causally
            const { ms, reps } = measure(form, form.entry && !form.entry.nonCausal ? { ...inp, causal: true } : inp);
            if (ms > SLOW_MS) {
              for (const m of sizes) if (m > n) tooSlow.add(`${key}@${m}`);
            }
            postMessage({ type: 'result', id, form: formId, build, n, ms, reps, round });
          } catch (e) {
            if (round === 0) postMessage({ type: 'skipped', id, form: formId, build, n, reason: e.message });
          }
        }
        done++;
        // Let the progress message go out before the next (possibly long) measurement.
        await new Promise((r) => setTimeout(r, 0));
      }
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
