// timing.js: shared helpers for the benchmarks: interleaved sampling, medians, tables, the CPU.
import { cpuName } from '../lab/cpu.js';

export { cpuName }; // lab/cpu.js: the scripts import it from there

/** Median of a numeric array. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

/** Runs fn until at least minMs has passed (at least once); returns ms per call. */
export function timeOnce(fn, minMs = 20) {
  let reps = 0;
  const t0 = performance.now();
  let t = t0;
  do {
    fn();
    reps++;
    t = performance.now();
  } while (t - t0 < minMs);
  return (t - t0) / reps;
}

/**
 * Times several contenders round-robin (so drift on a shared machine hits all alike):
 * `contenders` is { name: fn }. Each fn runs once to warm up, then `samples` rounds.
 * Returns { name: { median, min, max, samples } } in ms per call.
 */
export function interleave(contenders, { samples = 9, minMs = 20 } = {}) {
  const names = Object.keys(contenders);
  for (const n of names) contenders[n]();
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let s = 0; s < samples; s++) for (const n of names) times[n].push(timeOnce(contenders[n], minMs));
  return Object.fromEntries(names.map((n) => [n, {
    median: median(times[n]), min: Math.min(...times[n]), max: Math.max(...times[n]), samples: times[n],
  }]));
}

/** Formats ms as "median [min-max]". */
export function fmt(t, digits = 3) {
  return `${t.median.toFixed(digits)} [${t.min.toFixed(digits)}-${t.max.toFixed(digits)}]`;
}

/** Prints a markdown table: header is an array of column names, rows an array of arrays. */
export function table(header, rows) {
  const all = [header, ...rows.map((r) => r.map(String))];
  const w = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(w[i])).join(' | ')} |`;
  console.log(line(header));
  console.log(`| ${w.map((x) => '-'.repeat(x)).join(' | ')} |`);
  for (const r of rows) console.log(line(r.map(String)));
}

/** Random Float32Array with entries uniform in [-1, 1), from a seeded generator. */
export function randomF32(length, seed = 1) {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = (s / 2 ** 32) * 2 - 1;
  }
  return out;
}
