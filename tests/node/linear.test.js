// Linear attention on both builds: every feature map, causal and not, multi-head and
// cross-attention, output and weights against the naive C reference (reference: true) and a
// float64 JS reference (helpers.js); recurrent == parallel == stepping a decoding state; SIMD
// vs scalar; the edge cases; every error message; the library still works after errors.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectClose, expectError, linearAttentionF64, rand } from './helpers.js';
import { loadAttention } from '../../wasm/index.js';

const FEATURES = ['elu+1', 'relu', 'efficient', 'taylor'];

const SHAPES = [
  { n: 1, d: 4 },
  { n: 9, d: 8 },
  { n: 150, d: 32, heads: 2 },                    // several 64-position chunks
  { n: 70, m: 130, d: 24, dv: 12, heads: 3 },     // cross-attention, m > n, dv != d
  { n: 140, m: 60, d: 16, heads: 4 },             // m < n: causal rows past m see every key
];

function inputs(shape, seed) {
  const m = shape.m ?? shape.n, dv = shape.dv ?? shape.d;
  return { n: shape.n, m, d: shape.d, dv, heads: shape.heads ?? 1, q: rand(shape.n * shape.d, seed),
    k: rand(m * shape.d, seed + 1), v: rand(m * dv, seed + 2) };
}

/** Every (feature, causal, shape) case with its inputs. */
function* cases() {
  let seed = 1;
  for (const feature of FEATURES)
    for (const causal of [false, true]) {
      if (feature === 'efficient' && causal) continue; // no causal form: an error, tested below
      for (const shape of SHAPES) yield { label: `${feature} ${causal ? 'causal' : 'full'} ${JSON.stringify(shape)}`,
        opts: { ...inputs(shape, (seed += 7)), feature, causal } };
    }
}

/** Steps a decoding state through the sequence (needs m >= n) and returns the (n, dv) rows. */
function stepAll(lib, { q, k, v, n, d, dv, heads, feature }) {
  const st = lib.linearAttentionState({ d, dv, heads, feature });
  const out = new Float32Array(n * dv);
  for (let i = 0; i < n; i++)
    out.set(st.step(q.subarray(i * d, (i + 1) * d), k.subarray(i * d, (i + 1) * d), v.subarray(i * dv, (i + 1) * dv)), i * dv);
  assert.equal(st.position, n);
  st.dispose();
  return out;
}

for (const { name, lib } of builds) {
  test(`${name}: every feature map, causal and not, heads, cross: output and weights vs float64 and the C reference`, (t) => {
    for (const { label, opts } of cases()) {
      const f64 = linearAttentionF64(opts);
      const fast = lib.linearAttention(opts);
      assert.equal(fast.weights, undefined, `${label}: weights only when asked`);
      const withW = lib.linearAttention({ ...opts, returnWeights: true });
      const cref = lib.linearAttention({ ...opts, returnWeights: true, reference: true });
      expectClose(t, `${label} output`, fast.output, f64.output, TOL.attention);
      expectClose(t, `${label} weights`, withW.weights, f64.weights, TOL.attention_weights);
      expectClose(t, `${label} output (returnWeights)`, withW.output, fast.output, 0); // same path, same numbers
      expectClose(t, `${label} C reference output`, cref.output, f64.output, TOL.attention);
      expectClose(t, `${label} C reference weights`, cref.weights, f64.weights, TOL.attention_weights);
      expectClose(t, `${label} output vs C reference`, fast.output, cref.output, TOL.attention);
      assert.equal(withW.weights.length, opts.heads * opts.n * opts.m);
      for (let r = 0; r < opts.heads * opts.n; r++) { // rows sum to 1, or are zero where the reference's are
        let s = 0, sref = 0;
        for (let j = 0; j < opts.m; j++) s += withW.weights[r * opts.m + j], sref += f64.weights[r * opts.m + j];
        assert.ok(Math.abs(s - (sref === 0 ? 0 : 1)) < 1e-5, `${label}: weights row ${r} sums to ${s}`);
      }
    }
  });

  test(`${name}: causal recurrent == parallel == stepping a decoding state`, (t) => {
    for (const { label, opts } of cases()) {
      if (!opts.causal) continue;
      const par = lib.linearAttention({ ...opts, mode: 'parallel' }).output;
      const rec = lib.linearAttention({ ...opts, mode: 'recurrent' }).output;
      expectClose(t, `${label} recurrent vs parallel`, rec, par, TOL.linear_causal_forms);
      if (opts.m >= opts.n) expectClose(t, `${label} steps vs parallel`, stepAll(lib, opts), par, TOL.linear_causal_forms);
    }
  });

  test(`${name}: decoding state: position, reset, dispose`, () => {
    const d = 8, dv = 4, n = 20;
    const opts = { ...inputs({ n, d, dv, heads: 2 }, 99), feature: 'taylor', causal: true };
    const batch = lib.linearAttention(opts).output;
    const st = lib.linearAttentionState({ d, dv, heads: 2, feature: 'taylor' });
    assert.equal(st.position, 0);
    for (let i = 0; i < 5; i++) st.step(opts.q.subarray(i * d, i * d + d), opts.k.subarray(i * d, i * d + d), opts.v.subarray(i * dv, i * dv + dv));
    assert.equal(st.position, 5);
    st.reset();
    assert.equal(st.position, 0);
    const row0 = st.step(opts.q.subarray(0, d), opts.k.subarray(0, d), opts.v.subarray(0, dv));
    assert.ok(Math.abs(row0[0] - batch[0]) < 1e-6 && Math.abs(row0[3] - batch[3]) < 1e-6, 'after reset the state starts over');
    st.dispose();
    st.dispose(); // harmless
    expectError(() => st.step(opts.q.subarray(0, d), opts.k.subarray(0, d), opts.v.subarray(0, dv)), /linearAttentionState\.step: this state was disposed/);
    expectError(() => st.reset(), /linearAttentionState\.reset: this state was disposed/);
    expectError(() => st.position, /linearAttentionState\.position: this state was disposed/);
    // many states created and disposed do not grow the heap
    const before = lib.heapBytes();
    for (let i = 0; i < 300; i++) lib.linearAttentionState({ d: 64, dv: 64, heads: 4 }).dispose();
    assert.equal(lib.heapBytes(), before);
  });

  test(`${name}: edge cases: relu zero rows, taylor zero vectors, no NaN`, (t) => {
    const n = 6, m = 5, d = 4;
    // relu: query row 2 has no positive entry, so every similarity is 0: zero output and weights row
    const q = rand(n * d, 3), k = rand(m * d, 4), v = rand(m * d, 5);
    for (let c = 0; c < d; c++) q[2 * d + c] = -Math.abs(q[2 * d + c]) - 0.1;
    for (const causal of [false, true])
      for (const mode of ['parallel', 'recurrent']) {
        const r = lib.linearAttention({ q, k, v, n, m, d, feature: 'relu', causal, mode, returnWeights: true });
        assert.ok(r.output.slice(2 * d, 3 * d).every((x) => x === 0), 'relu zero-similarity output row');
        assert.ok(r.weights.slice(2 * m, 3 * m).every((x) => x === 0), 'relu zero-similarity weights row');
        assert.ok(r.output.every(Number.isFinite));
        expectClose(t, `relu zero row ${causal} ${mode} vs f64`, r.output,
          linearAttentionF64({ q, k, v, n, m, d, feature: 'relu', causal }).output, TOL.attention);
      }
    // relu with every key <= 0: every row is zero
    const kneg = k.map((x) => -Math.abs(x));
    assert.ok(lib.linearAttention({ q, k: kneg, v, n, m, d, feature: 'relu' }).output.every((x) => x === 0));
    // taylor: a zero q has sim = 1 with every key (uniform weights); a zero k has sim = 1 with every q
    const qz = q.slice(), kz = k.slice();
    qz.fill(0, 0, d), kz.fill(0, d, 2 * d);
    const tz = lib.linearAttention({ q: qz, k: kz, v, n, m, d, feature: 'taylor', returnWeights: true });
    for (let j = 0; j < m; j++) assert.ok(Math.abs(tz.weights[j] - 1 / m) < 1e-6, 'zero q: uniform weights');
    expectClose(t, 'taylor zero q and k vs f64', tz.output, linearAttentionF64({ q: qz, k: kz, v, n, m, d, feature: 'taylor' }).output, TOL.attention);
    const tzc = lib.linearAttention({ q: qz, k: kz, v, n, m, d, feature: 'taylor', causal: true });
    expectClose(t, 'taylor zero q and k causal vs f64', tzc.output,
      linearAttentionF64({ q: qz, k: kz, v, n, m, d, feature: 'taylor', causal: true }).output, TOL.attention);
    // all-zero inputs: finite, and v's mean under every map that has a non-zero similarity
    const zeros = new Float32Array(n * d);
    for (const feature of FEATURES) {
      const r = lib.linearAttention({ q: zeros, k: zeros.subarray(0, m * d), v, n, m, d, feature });
      assert.ok(r.output.every(Number.isFinite), `${feature} zero inputs finite`);
    }
    // large logits: exp underflows for elu+1 (phi -> 0) and the softmaxes of efficient saturate
    const big = rand(n * d, 8, -1e4, 1e4);
    for (const feature of FEATURES)
      for (const causal of feature === 'efficient' ? [false] : [false, true]) {
        const r = lib.linearAttention({ q: big, k: big.subarray(0, m * d), v, n, m, d, feature, causal, returnWeights: true });
        assert.ok(r.output.every(Number.isFinite) && r.weights.every(Number.isFinite), `${feature} causal=${causal} large inputs finite`);
      }
  });

  test(`${name}: non-causal and causal paths never build an n x m buffer`, async () => {
    const fresh = await loadAttention({ simd: name === 'simd' });
    const n = 16384, d = 16; // an n x n float matrix would be 1 GiB
    const opts = { q: rand(n * d, 1), k: rand(n * d, 2), v: rand(n * d, 3), n, d };
    for (const causal of [false, true]) {
      const r = fresh.linearAttention({ ...opts, causal });
      assert.ok(r.output.every(Number.isFinite));
    }
    assert.ok(fresh.heapBytes() < 64 * 2 ** 20, `heap grew to ${fresh.heapBytes()} bytes`);
  });

  test(`${name}: every bad input is a clear Error, and the library works afterwards`, () => {
    const n = 4, d = 4;
    const ok = { q: rand(n * d, 1), k: rand(n * d, 2), v: rand(n * d, 3), n, d };
    const before = lib.linearAttention(ok).output;
    const la = (extra) => () => lib.linearAttention({ ...ok, ...extra });
    expectError(la({ feature: 'elu' }), /linearAttention: feature must be one of "elu\+1", "relu", "efficient", "taylor", got "elu"/);
    expectError(la({ feature: 3 }), /linearAttention: feature must be one of .*got 3/);
    expectError(la({ mode: 'rnn' }), /linearAttention: mode must be one of "parallel", "recurrent", got "rnn"/);
    expectError(la({ feature: 'efficient', causal: true }), /linearAttention: feature "efficient" has no causal form/);
    expectError(la({ causal: 1 }), /linearAttention: causal must be true or false, got 1/);
    expectError(la({ returnWeights: 'yes' }), /linearAttention: returnWeights must be true or false/);
    expectError(la({ reference: 'x' }), /linearAttention: reference must be true or false, got "x"/);
    expectError(la({ keyMask: [1, 1, 1, 1] }), /linearAttention: unknown option "keyMask"/);
    expectError(la({ n: 0 }), /linearAttention: n must be a positive integer, got 0/);
    expectError(la({ m: 2.5 }), /linearAttention: m must be a positive integer, got 2.5/);
    expectError(la({ heads: 3 }), /linearAttention: d \(4\) must be divisible by heads \(3\)/);
    expectError(la({ dv: 6, heads: 4 }), /linearAttention: dv \(6\) must be divisible by heads \(4\)/);
    expectError(la({ q: rand(15, 1) }), /linearAttention: q has 15 values, expected n\*d = 4\*4 = 16/);
    expectError(la({ k: [1, 2, 3] }), /linearAttention: k must be a Float32Array/);
    expectError(la({ v: new Float32Array(16).fill(NaN) }), /linearAttention: v\[0\] is NaN; inputs must be finite/);
    expectError(() => lib.linearAttention(null), /linearAttention expects an options object, got null/);
    // an overflow reaches no caller as Infinity or NaN
    expectError(la({ v: new Float32Array(16).fill(3e38) }), /linearAttention: the result overflowed float32/);
    const sm = (extra) => () => lib.linearAttentionState({ d, ...extra });
    expectError(sm({ feature: 'efficient' }), /linearAttentionState: feature "efficient" has no causal form/);
    expectError(sm({ feature: 'softmax' }), /linearAttentionState: feature must be one of/);
    expectError(sm({ d: -1 }), /linearAttentionState: d must be a positive integer, got -1/);
    expectError(sm({ heads: 3 }), /linearAttentionState: d \(4\) must be divisible by heads \(3\)/);
    expectError(sm({ causal: true }), /linearAttentionState: unknown option "causal"/);
    const st = lib.linearAttentionState({ d, dv: 2 });
    expectError(() => st.step(rand(4), rand(4), rand(3)), /linearAttentionState\.step: v has 3 values, expected dv = 2/);
    expectError(() => st.step(rand(5), rand(4), rand(2)), /linearAttentionState\.step: q has 5 values, expected d = 4/);
    expectError(() => st.step(rand(4), new Float32Array([0, Infinity, 0, 0]), rand(2)), /linearAttentionState\.step: k\[1\] is Infinity/);
    assert.equal(st.position, 0, 'a rejected step does not advance the state');
    assert.equal(st.step(rand(4), rand(4), rand(2)).length, 2);
    st.dispose();
    assert.deepEqual(lib.linearAttention(ok).output, before, 'same result after the errors');
  });
}

test('SIMD and scalar builds agree', (t) => {
  const [simd, scalar] = builds.map((b) => b.lib);
  for (const { label, opts } of cases()) {
    const a = simd.linearAttention({ ...opts, returnWeights: true });
    const b = scalar.linearAttention({ ...opts, returnWeights: true });
    expectClose(t, `${label} output`, a.output, b.output, TOL.simd_vs_scalar);
    expectClose(t, `${label} weights`, a.weights, b.weights, TOL.simd_vs_scalar);
    if (opts.causal) expectClose(t, `${label} recurrent`, simd.linearAttention({ ...opts, mode: 'recurrent' }).output,
      scalar.linearAttention({ ...opts, mode: 'recurrent' }).output, TOL.simd_vs_scalar);
  }
});
