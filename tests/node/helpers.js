// helpers.js: shared by the node suites: both builds, one tolerance table, seeded data,
// the normalised error measure, and float64 JS references that share no code with the C core.
import { readFileSync } from 'node:fs';
import { loadAttention } from '../../wasm/index.js';

/** The one tolerance table (tests/tolerances.json), also used by the native and browser suites. */
export const TOL = JSON.parse(readFileSync(new URL('../tolerances.json', import.meta.url), 'utf8'));

/** Both builds, loaded once per test file: [{ name: 'simd', lib }, { name: 'scalar', lib }]. */
export const builds = [
  { name: 'simd', lib: await loadAttention({ simd: true }) },
  { name: 'scalar', lib: await loadAttention({ simd: false }) },
];

/** Seeded uniform [lo, hi) Float32Array (xorshift32). */
export function rand(length, seed = 1, lo = -1, hi = 1) {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = lo + (s / 2 ** 32) * (hi - lo);
  }
  return out;
}

/** max |a - b| / (1 + |b|); NaN anywhere gives NaN (which fails every <= check). */
export function maxErr(a, b) {
  if (a.length !== b.length) throw new Error(`length mismatch ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i]));
    if (!(e <= m)) m = e;
  }
  return m;
}

/** Asserts maxErr(a, b) <= tol and logs it; `label` says what was compared. */
export function expectClose(t, label, a, b, tol) {
  const e = maxErr(a, b);
  t.diagnostic(`${label}: max err ${e.toExponential(2)} (tol ${tol})`);
  if (!(e <= tol)) throw new Error(`${label}: max err ${e} > tol ${tol}`);
  return e;
}

/** Asserts fn throws an Error whose message matches re. */
export function expectError(fn, re) {
  let threw = null;
  try {
    fn();
  } catch (e) {
    threw = e;
  }
  if (!(threw instanceof Error)) throw new Error(`expected an Error matching ${re}, nothing was thrown`);
  if (!re.test(threw.message)) throw new Error(`expected an Error matching ${re}, got: ${threw.message}`);
}

/**
 * Float64 softmax attention: A = softmax(Q K^T s + M), O = A V per head.
 * Returns { output: Float64Array (n*dv), weights: Float64Array (heads*n*m) }.
 */
export function softmaxAttentionF64({ q, k, v, n, m = n, d, dv = d, heads = 1, causal = false, keyMask, scale }) {
  const dh = d / heads, dvh = dv / heads;
  const s = scale ?? 1 / Math.sqrt(dh);
  const output = new Float64Array(n * dv), weights = new Float64Array(heads * n * m);
  const logits = new Float64Array(m);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++) {
      let mx = -Infinity;
      for (let j = 0; j < m; j++) {
        const allowed = !(causal && j > i) && !(keyMask && !keyMask[j]);
        let dot = 0;
        for (let c = 0; c < dh; c++) dot += q[i * d + h * dh + c] * k[j * d + h * dh + c];
        logits[j] = allowed ? dot * s : -Infinity;
        mx = Math.max(mx, logits[j]);
      }
      let sum = 0;
      for (let j = 0; j < m; j++) sum += logits[j] = mx === -Infinity ? 0 : Math.exp(logits[j] - mx);
      for (let j = 0; j < m; j++) {
        const a = sum > 0 ? logits[j] / sum : 0;
        weights[h * n * m + i * m + j] = a;
        for (let c = 0; c < dvh; c++) output[i * dv + h * dvh + c] += a * v[j * dv + h * dvh + c];
      }
    }
  return { output, weights };
}
