// timing.js (peers): the round-robin sampler of bench/timing.js, for contenders that may be
// async (onnxruntime-web's session.run returns a Promise). A contender whose call returns a
// Promise is awaited; a synchronous one is not, so it pays no microtask per call.
import { median } from '../timing.js';

async function timeOnceMaybeAsync(fn, minMs) {
  let reps = 0;
  const t0 = performance.now();
  let t = t0;
  do {
    const r = fn();
    if (r && typeof r.then === 'function') await r;
    reps++;
    t = performance.now();
  } while (t - t0 < minMs);
  return (t - t0) / reps;
}

/**
 * contenders: { name: fn }. Each runs `warmup` times, then `samples` rounds round-robin, each
 * sample at least minMs long. Returns { name: { median, min, max, samples } } in ms per call.
 * gapMs: an idle pause before every sample, so a thread pool that spins after its engine's last
 * call (onnxruntime-web's, ours) has gone to sleep before the next engine's sample starts.
 */
export async function interleaveAsync(contenders, { samples = 15, minMs = 25, warmup = 3, gapMs = 0 } = {}) {
  const names = Object.keys(contenders);
  for (const n of names) for (let w = 0; w < warmup; w++) await contenders[n]();
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let s = 0; s < samples; s++) {
    // rotate the starting engine each round, so no engine always runs right after another
    for (let i = 0; i < names.length; i++) {
      const n = names[(i + s) % names.length];
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
      times[n].push(await timeOnceMaybeAsync(contenders[n], minMs));
    }
  }
  return Object.fromEntries(names.map((n) => [n, {
    median: median(times[n]), min: Math.min(...times[n]), max: Math.max(...times[n]), samples: times[n],
  }]));
}
