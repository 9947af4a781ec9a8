// helpers.js: shared by the node suites: both builds, one tolerance table, seeded data,
// the normalised error measure, float64 JS references that share no code with the C core, and a
// child Node on the relaxed-SIMD builds.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** max |a - b| / max |b| (relative to the reference's largest value); NaN anywhere gives NaN. */
export function relMaxErr(a, b) {
  if (a.length !== b.length) throw new Error(`length mismatch ${a.length} vs ${b.length}`);
  let e = 0, s = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.abs(a[i] - b[i]);
    if (!(x <= e)) e = x;
    s = Math.max(s, Math.abs(b[i]));
  }
  return e / Math.max(s, 1e-30);
}

/** Asserts maxErr(a, b) <= tol and logs it; `label` says what was compared. */
/** A layer's generation step run at every position 0 .. n-1 of data ({ q, k, v, x }, rows of d): the outputs, (n, d). */
export function stepThrough(layer, data, n, d) {
  const out = new Float32Array(n * d);
  for (let p = 0; p < n; p++) {
    const row = (a) => a.slice(p * d, (p + 1) * d);
    out.set(layer.step(p, { q: row(data.q), k: row(data.k), v: row(data.v), x: row(data.x) }), p * d);
  }
  return out;
}

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

/**
 * Float64 linear attention from the definitions (docs/attention-forms.md section 2): per head,
 * A_ij = sim(q_i, k_j) / sum_j sim(q_i, k_j) over allowed j (zero row when the sum is 0), O = A V.
 */
export function linearAttentionF64({ q, k, v, n, m = n, d, dv = d, heads = 1, feature = 'elu+1', causal = false }) {
  const dh = d / heads, dvh = dv / heads;
  const output = new Float64Array(n * dv), weights = new Float64Array(heads * n * m);
  const elu1 = (x) => (x > 0 ? x + 1 : Math.exp(x));
  for (let h = 0; h < heads; h++) {
    const qr = (i, c) => q[i * d + h * dh + c], kr = (j, c) => k[j * d + h * dh + c];
    // efficient: softmax over the features of each q row, over the positions of each K column
    const colMax = [], colSum = [];
    for (let c = 0; c < dh; c++) {
      let mx = -Infinity, s = 0;
      for (let j = 0; j < m; j++) mx = Math.max(mx, kr(j, c));
      for (let j = 0; j < m; j++) s += Math.exp(kr(j, c) - mx);
      colMax.push(mx), colSum.push(s);
    }
    const sim = new Float64Array(m);
    for (let i = 0; i < n; i++) {
      let qMax = -Infinity, qSum = 0, qNorm = 0;
      for (let c = 0; c < dh; c++) qMax = Math.max(qMax, qr(i, c)), qNorm += qr(i, c) ** 2;
      for (let c = 0; c < dh; c++) qSum += Math.exp(qr(i, c) - qMax);
      let den = 0;
      for (let j = 0; j < m; j++) {
        let s = 0;
        if (feature === 'taylor') {
          let dot = 0, kNorm = 0;
          for (let c = 0; c < dh; c++) dot += qr(i, c) * kr(j, c), kNorm += kr(j, c) ** 2;
          s = 1 + (qNorm > 0 && kNorm > 0 ? dot / Math.sqrt(qNorm * kNorm) : 0);
        } else {
          for (let c = 0; c < dh; c++) {
            if (feature === 'elu+1') s += elu1(qr(i, c)) * elu1(kr(j, c));
            else if (feature === 'relu') s += Math.max(qr(i, c), 0) * Math.max(kr(j, c), 0);
            else s += (Math.exp(qr(i, c) - qMax) / qSum) * (Math.exp(kr(j, c) - colMax[c]) / colSum[c]);
          }
        }
        sim[j] = causal && j > i ? 0 : s;
        den += sim[j];
      }
      for (let j = 0; j < m; j++) {
        const a = den > 0 ? sim[j] / den : 0;
        weights[h * n * m + i * m + j] = a;
        for (let c = 0; c < dvh; c++) output[i * dv + h * dvh + c] += a * v[j * dv + h * dvh + c];
      }
    }
  }
  return { output, weights };
}

/**
 * Fills a live model's embedding table (wte) with value where it lives in wasm memory: a diverged
 * model, for the tests of what forward, generate and save say of one (a file holding NaN is refused
 * at load, so such a model cannot be loaded). Finds the table by its bytes in the saved checkpoint;
 * every place that holds them is filled (a freed copy, such as save()'s own buffer, may too).
 */
export function poisonEmbedding(lib, model, value = NaN) {
  const file = model.save();
  const hlen = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
  const { wte } = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + hlen)));
  const want = new Float32Array(file.slice(8 + hlen + wte.data_offsets[0], 8 + hlen + wte.data_offsets[1]).buffer);
  const mem = new Float32Array(lib.memory.buffer);
  let found = 0;
  for (let i = 0; i + want.length <= mem.length; i++) {
    if (mem[i] !== want[0] || mem[i + 1] !== want[1]) continue;
    let same = true;
    for (let j = 2; j < want.length && same; j++) same = mem[i + j] === want[j];
    if (same) mem.fill(value, i, i + want.length), (found += 1), (i += want.length - 1);
  }
  if (!found) throw new Error('poisonEmbedding: the model\'s wte was not found in wasm memory');
}

/**
 * Runs src (an ES module's text) in a child Node with --experimental-wasm-relaxed-simd (Node 20
 * validates relaxed SIMD only behind it) and returns the child's { status, stdout, stderr }. The
 * module is a file, not --eval: the library's thread workers inherit execArgv.
 */
export function runRelaxedChild(src, prefix = 'aw-relaxed-') {
  const dir = mkdtempSync(join(tmpdir(), prefix)), file = join(dir, 'child.mjs');
  writeFileSync(file, src);
  try {
    return spawnSync(process.execPath, ['--experimental-wasm-relaxed-simd', file], { encoding: 'utf8', maxBuffer: 1 << 26 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
