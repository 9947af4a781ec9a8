// gated-inputs.test.js: lib.gatedLinearAttention and lib.deltaRule, the gated forms with their
// gates and write strengths given (no model), against float64 recurrences written here from the
// equations (docs/attention-forms.md section 4c); what the delta rule does that an additive state
// cannot (overwrite, and exact recall of orthogonal keys); and clear Errors for bad inputs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TOL, builds, expectError, rand, relMaxErr } from './helpers.js';

// Float64 recurrences, per head: row state S (dh x dvh).
function recurrenceF64({ q, k, v, n, d, dv = d, heads = 1, gates, beta, delta }) {
  const dh = d / heads, dvh = dv / heads, scale = 1 / Math.sqrt(dh), out = new Float64Array(n * dv);
  for (let h = 0; h < heads; h++) {
    const S = Array.from({ length: dh }, () => new Float64Array(dvh));
    for (let t = 0; t < n; t++) {
      const a = gates ? gates[t * heads + h] : 1;
      let kt = Array.from({ length: dh }, (_, r) => k[t * d + h * dh + r]);
      const vt = Array.from({ length: dvh }, (_, c) => v[t * dv + h * dvh + c]);
      if (delta) {
        const norm = Math.sqrt(kt.reduce((s, x) => s + x * x, 0) + 1e-6);
        kt = kt.map((x) => x / norm);
        const b = beta[t * heads + h];
        const u = new Float64Array(dvh); // u = k^ S
        for (let r = 0; r < dh; r++) for (let c = 0; c < dvh; c++) u[c] += kt[r] * S[r][c];
        for (let r = 0; r < dh; r++) for (let c = 0; c < dvh; c++) S[r][c] = a * (S[r][c] - b * kt[r] * u[c]) + b * kt[r] * vt[c];
      } else {
        for (let r = 0; r < dh; r++) for (let c = 0; c < dvh; c++) S[r][c] = a * S[r][c] + kt[r] * vt[c];
      }
      for (let c = 0; c < dvh; c++) {
        let o = 0;
        for (let r = 0; r < dh; r++) o += q[t * d + h * dh + r] * S[r][c];
        out[t * dv + h * dvh + c] = scale * o;
      }
    }
  }
  return out;
}

const unit = (len, seed, lo, hi) => Array.from(rand(len, seed, lo, hi));

// Kimi Delta Attention in float64, from its equation with a decay per key channel:
// S_t = (I - b k^_t^T k^_t) diag(alpha_t) S_{t-1} + b k^_t^T v_t, alpha_t = gates[t * d + h * dh + r].
function kdaRecurrenceF64({ q, k, v, n, d, heads, gates, beta }) {
  const dh = d / heads, scale = 1 / Math.sqrt(dh), out = new Float64Array(n * d);
  for (let h = 0; h < heads; h++) {
    let S = Array.from({ length: dh }, () => new Float64Array(dh));
    for (let t = 0; t < n; t++) {
      const raw = Array.from({ length: dh }, (_, r) => k[t * d + h * dh + r]);
      const norm = Math.sqrt(raw.reduce((s, x) => s + x * x, 0) + 1e-6), kt = raw.map((x) => x / norm);
      const b = beta[t * heads + h];
      const D = S.map((row, r) => row.map((x) => gates[t * d + h * dh + r] * x)); // diag(alpha) S
      S = D.map((row, r) => row.map((x, c) => { // (I - b k^T k) D + b k^T v
        let kd = 0;
        for (let s = 0; s < dh; s++) kd += kt[s] * D[s][c];
        return x - b * kt[r] * kd + b * kt[r] * v[t * d + h * dh + c];
      }));
      for (let c = 0; c < dh; c++) {
        let o = 0;
        for (let r = 0; r < dh; r++) o += q[t * d + h * dh + r] * S[r][c];
        out[t * d + h * dh + c] = scale * o;
      }
    }
  }
  return out;
}

// GLA in float64: row r of head h's state fades by gates[t * d + h * dh + r].
function glaRecurrenceF64({ q, k, v, n, d, heads, gates }) {
  const dh = d / heads, scale = 1 / Math.sqrt(dh), out = new Float64Array(n * d);
  for (let h = 0; h < heads; h++) {
    const S = Array.from({ length: dh }, () => new Float64Array(dh));
    for (let t = 0; t < n; t++) {
      for (let r = 0; r < dh; r++)
        for (let c = 0; c < dh; c++) S[r][c] = gates[t * d + h * dh + r] * S[r][c] + k[t * d + h * dh + r] * v[t * d + h * dh + c];
      for (let c = 0; c < dh; c++) {
        let o = 0;
        for (let r = 0; r < dh; r++) o += q[t * d + h * dh + r] * S[r][c];
        out[t * d + h * dh + c] = scale * o;
      }
    }
  }
  return out;
}

for (const { name, lib } of builds) {
  test(`${name}: gatedLinearAttention with given gates equals the float64 recurrence in every mode`, (t) => {
    for (const [n, d, heads, gateLo, gateHi] of [[1, 4, 1, 0.5, 1], [37, 16, 2, 0.8, 1], [90, 24, 3, 1e-9, 1e-3], [64, 8, 2, 0.999, 1]]) {
      const q = rand(n * d, n + 1), k = rand(n * d, n + 2), v = rand(n * d, n + 3);
      const gates = unit(n * heads, n + 4, gateLo, gateHi);
      const ref = recurrenceF64({ q, k, v, n, d, heads, gates });
      for (const [mode, chunk] of [['parallel'], ['recurrent'], ['chunked', 1], ['chunked', 7], ['chunked', 64]]) {
        const r = lib.gatedLinearAttention({ q, k, v, n, d, heads, gates, mode, ...(chunk ? { chunk } : {}), returnWeights: true });
        const e = relMaxErr(r.output, ref);
        t.diagnostic(`n=${n} gates in [${gateLo}, ${gateHi}] ${mode}${chunk ? ` ${chunk}` : ''}: rel err ${e.toExponential(2)}`);
        assert.ok(e <= 1e-5, `${mode} ${chunk ?? ''}: ${e}`);
        assert.ok(r.weights.every(Number.isFinite));
      }
    }
  });

  test(`${name}: gla with given per-channel gates equals the float64 recurrence in every mode`, (t) => {
    for (const [n, d, heads, lo, hi] of [[1, 4, 1, 0.5, 1], [37, 16, 2, 0.8, 1], [90, 24, 3, 1e-9, 1e-3], [64, 8, 2, 0.999, 1]]) {
      const q = rand(n * d, n + 41), k = rand(n * d, n + 42), v = rand(n * d, n + 43);
      const gates = unit(n * d, n + 44, lo, hi);
      const ref = glaRecurrenceF64({ q, k, v, n, d, heads, gates });
      for (const [mode, chunk] of [['parallel'], ['recurrent'], ['chunked', 1], ['chunked', 7], ['chunked', 64]]) {
        const r = lib.gla({ q, k, v, n, d, heads, gates, mode, ...(chunk ? { chunk } : {}), returnWeights: true });
        const e = relMaxErr(r.output, ref);
        assert.ok(e <= 1e-5 && r.weights.every(Number.isFinite), `n=${n} ${mode} ${chunk ?? ''}: ${e}`);
      }
      t.diagnostic(`gla n=${n} gates in [${lo}, ${hi}]: every mode within 1e-5 of float64`);
    }
    expectError(() => lib.gla({ q: rand(8, 1), k: rand(8, 2), v: rand(8, 3), n: 2, d: 4, gates: [1, 1, 1, 1] }),
      /gla: gates must be 8 numbers \(n \* d = 2 \* 4: one per position and channel/);
    expectError(() => lib.gla({ q: rand(8, 1), k: rand(8, 2), v: rand(8, 3), n: 2, d: 4, gates: [1, 1, 1, 1, 1, 0, 1, 1] }),
      /gla: gates\[5\] \(position 1, channel 1\) must be in \(0, 1\], got 0/);
  });

  test(`${name}: deltaRule with given beta (and gates) equals the float64 recurrence; weights give O = A V`, (t) => {
    for (const [n, d, heads, gated] of [[1, 4, 1, false], [29, 16, 2, false], [50, 12, 3, true]]) {
      const q = rand(n * d, n + 5), k = rand(n * d, n + 6), v = rand(n * d, n + 7);
      const beta = unit(n * heads, n + 8, 0, 1), gates = gated ? unit(n * heads, n + 9, 0.05, 1) : undefined;
      const ref = recurrenceF64({ q, k, v, n, d, heads, beta, gates, delta: true });
      const r = lib.deltaRule({ q, k, v, n, d, heads, beta, gates, returnWeights: true });
      const e = relMaxErr(r.output, ref);
      t.diagnostic(`n=${n} heads=${heads}${gated ? ' gated' : ''}: rel err ${e.toExponential(2)}`);
      assert.ok(e <= 1e-5, String(e));
      const dh = d / heads, av = new Float64Array(n * d); // A V per head from the returned weights
      for (let h = 0; h < heads; h++) for (let i = 0; i < n; i++) for (let j = 0; j < n; j++)
        for (let c = 0; c < dh; c++) av[i * d + h * dh + c] += r.weights[(h * n + i) * n + j] * v[j * d + h * dh + c];
      assert.ok(relMaxErr(r.output, av) <= 1e-5, 'O = A V');
    }
  });

  test(`${name}: deltaRule chunked (the WY form) = recurrent = float64, at chunks that do not divide n, betas and gates near 0 and 1`, (t) => {
    for (const [n, d, heads, bLo, bHi, gated, gLo, gHi] of [[1, 4, 1, 0, 1, false], [5, 8, 1, 0.9, 1, false], [37, 16, 2, 0, 0.05, false],
      [100, 16, 2, 0.95, 1, true, 1e-9, 1e-3], [100, 12, 3, 0, 1, true, 0.999, 1], [64, 8, 2, 0.3, 0.7, true, 0.5, 1]]) {
      const q = rand(n * d, n + 11), k = rand(n * d, n + 12), v = rand(n * d, n + 13);
      const beta = unit(n * heads, n + 14, bLo, bHi), gates = gated ? unit(n * heads, n + 15, gLo, gHi) : undefined;
      const ref = recurrenceF64({ q, k, v, n, d, heads, beta, gates, delta: true });
      const rec = lib.deltaRule({ q, k, v, n, d, heads, beta, gates, mode: 'recurrent' }).output;
      for (const chunk of [1, 3, 7, 64]) {
        const r = lib.deltaRule({ q, k, v, n, d, heads, beta, gates, mode: 'chunked', chunk }).output;
        const e = relMaxErr(r, ref), er = relMaxErr(r, rec);
        t.diagnostic(`n=${n}${gated ? ` gates in [${gLo}, ${gHi}]` : ''} beta in [${bLo}, ${bHi}] chunk ${chunk}: vs float64 ${e.toExponential(2)}, vs recurrent ${er.toExponential(2)}`);
        assert.ok(e <= 1e-5 && er <= 1e-5, `chunk ${chunk}: ${e} / ${er}`);
      }
    }
  });

  test(`${name}: deltaRule with a decay per key channel (KDA, gates n * d): chunked = recurrent = float64, weights give O = A V`, (t) => {
    // gates: [lo, hi] for every channel, or 'mixed': half the channels near 0, half near 1 at once
    for (const [n, d, heads, bLo, bHi, gLo, gHi] of [[1, 4, 1, 0, 1, 0.5, 1], [37, 16, 2, 0, 1, 0.8, 1],
      [100, 16, 2, 0.95, 1, 1e-9, 1e-3], [100, 12, 3, 0, 1, 0.999, 1], [64, 8, 2, 0.3, 0.7, 'mixed'], [130, 32, 4, 0, 0.05, 0.05, 1]]) {
      const q = rand(n * d, n + 51), k = rand(n * d, n + 52), v = rand(n * d, n + 53);
      const beta = unit(n * heads, n + 54, bLo, bHi);
      const gates = gLo === 'mixed'
        ? unit(n * d, n + 55, 0, 1).map((u, i) => (i % 2 ? 1e-6 + 1e-3 * u : 1 - 1e-3 * u))
        : unit(n * d, n + 55, gLo, gHi);
      const ref = kdaRecurrenceF64({ q, k, v, n, d, heads, gates, beta });
      const rec = lib.deltaRule({ q, k, v, n, d, heads, beta, gates, mode: 'recurrent', returnWeights: true });
      const e0 = relMaxErr(rec.output, ref);
      assert.ok(e0 <= TOL.delta_rule, `recurrent: ${e0}`);
      const dh = d / heads, av = new Float64Array(n * d); // A V per head from the returned weights
      for (let h = 0; h < heads; h++) for (let i = 0; i < n; i++) for (let j = 0; j < n; j++)
        for (let c = 0; c < dh; c++) av[i * d + h * dh + c] += rec.weights[(h * n + i) * n + j] * v[j * d + h * dh + c];
      assert.ok(relMaxErr(rec.output, av) <= TOL.delta_rule, 'O = A V');
      let worst = e0;
      for (const chunk of [1, 3, 7, 16, 64]) {
        const r = lib.deltaRule({ q, k, v, n, d, heads, beta, gates, mode: 'chunked', chunk }).output;
        const e = relMaxErr(r, ref), er = relMaxErr(r, rec.output);
        worst = Math.max(worst, e);
        assert.ok(e <= TOL.delta_rule && er <= TOL.delta_rule, `n=${n} chunk ${chunk}: ${e} / ${er}`);
      }
      t.diagnostic(`kda n=${n} beta in [${bLo}, ${bHi}] gates ${gLo === 'mixed' ? 'mixed near 0 and 1' : `in [${gLo}, ${gHi}]`}: worst rel err vs float64 over recurrent and chunks 1-64: ${worst.toExponential(2)}`);
    }
  });

  test(`${name}: KDA with every channel of a head given the same decay is Gated DeltaNet`, () => {
    const n = 23, d = 12, heads = 3, dh = d / heads;
    const q = rand(n * d, 61), k = rand(n * d, 62), v = rand(n * d, 63), beta = unit(n * heads, 64, 0, 1);
    const perHead = unit(n * heads, 65, 0.3, 1), perChannel = Array.from({ length: n * d }, (_, i) => perHead[Math.floor(i / dh)]);
    for (const mode of ['recurrent', 'chunked']) {
      const g = lib.deltaRule({ q, k, v, n, d, heads, beta, gates: perHead, mode }).output;
      const c = lib.deltaRule({ q, k, v, n, d, heads, beta, gates: perChannel, mode }).output;
      assert.ok(relMaxErr(c, g) <= TOL.delta_rule, `${mode}: ${relMaxErr(c, g)}`);
    }
    expectError(() => lib.deltaRule({ q, k, v, n, d, heads, beta, gates: perHead.slice(1) }),
      /deltaRule: gates must be 69 numbers \(n \* heads = 23 \* 3: a decay per position and head, Gated DeltaNet\) or 276 \(n \* d = 23 \* 12: per position and key channel, KDA\)/);
    const bad = perChannel.slice();
    bad[30] = 0;
    expectError(() => lib.deltaRule({ q, k, v, n, d, heads, beta, gates: bad }), /deltaRule: gates\[30\] \(position 2, channel 6\) must be in \(0, 1\], got 0/);
  });

  test(`${name}: the delta rule overwrites and recalls orthogonal keys exactly; additive linear attention cannot`, () => {
    // d pairs with one-hot keys, then the first key written again with a new value, then every key read back
    const d = 8, pairs = d, n = pairs + 1 + pairs, q = new Float32Array(n * d), k = new Float32Array(n * d);
    const v = rand(n * d, 77);
    for (let i = 0; i < pairs; i++) k[i * d + i] = 1;
    k[pairs * d] = 1; // key 0 again, value v[pairs]
    for (let i = 0; i < pairs; i++) q[(pairs + 1 + i) * d + i] = Math.sqrt(d); // undo the 1/sqrt(d) scale
    const beta = new Array(n).fill(1), gates = new Array(n).fill(1);
    const delta = lib.deltaRule({ q, k, v, n, d, beta }).output;
    const additive = lib.gatedLinearAttention({ q, k, v, n, d, gates }).output;
    const want = (i) => v.subarray((i === 0 ? pairs : i) * d, (i === 0 ? pairs : i) * d + d);
    for (let i = 0; i < pairs; i++) {
      const row = (o) => o.subarray((pairs + 1 + i) * d, (pairs + 2 + i) * d);
      // (keys are normalised as k / sqrt(|k|^2 + 1e-6): a one-hot key keeps 1e-6 of the old value)
      assert.ok(relMaxErr(row(delta), want(i)) < 1e-5, `delta rule: key ${i} reads back its latest value`);
    }
    // the additive state returns old + new at key 0
    const sum = want(0).map((x, c) => x + v[c]);
    assert.ok(relMaxErr(additive.subarray((pairs + 1) * d, (pairs + 2) * d), sum) < 1e-6, 'additive: key 0 reads the sum');
  });

  test(`${name}: bad gates and beta are Errors naming the argument and the range`, () => {
    const n = 4, d = 4, q = rand(16, 1), k = rand(16, 2), v = rand(16, 3);
    expectError(() => lib.gatedLinearAttention({ q, k, v, n, d }), /gatedLinearAttention: gates must be 4 numbers \(n \* heads = 4 \* 1/);
    expectError(() => lib.gatedLinearAttention({ q, k, v, n, d, gates: [1, 1, 0, 1] }), /gates\[2\] \(position 2, head 0\) must be in \(0, 1\], got 0/);
    expectError(() => lib.gatedLinearAttention({ q, k, v, n, d, gates: [1, 1, NaN, 1] }), /gates\[2\] .* must be in \(0, 1\], got NaN/);
    expectError(() => lib.gatedLinearAttention({ q, k, v, n, d, gates: [1, 1, 1, 1], mode: 'parallel', chunk: 2 }), /chunk applies to mode 'chunked' only/);
    expectError(() => lib.gatedLinearAttention({ q, k, v, n, d, gates: [1, 1, 1, 1], mode: 'fast' }), /mode must be one of/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [0.5, 0.5, 1.5, 0.5] }), /deltaRule: beta\[2\] \(position 2, head 0\) must be in \[0, 1\], got 1.5/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1], gates: [1, 1, 1, 1] }), /deltaRule: beta must be 4 numbers/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1, 1], gates: [1, 1, 1, -1] }), /deltaRule: gates\[3\] .* must be in \(0, 1\]/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, heads: 3, beta: [1, 1, 1, 1] }), /d \(4\) must be divisible by heads \(3\)/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1, 1], m: 3 }), /unknown option|not an option|m/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1, 1], mode: 'parallel' }), /deltaRule: mode must be one of "recurrent", "chunked"/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1, 1], mode: 'recurrent', chunk: 2 }), /chunk applies to mode 'chunked' only/);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1, 1], chunk: 0 }), /deltaRule: chunk/);
    // still usable afterwards
    assert.equal(lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1, 1] }).output.length, 16);
  });
}
