// Softmax attention on both builds: streaming path, weights path and the naive C reference
// against a float64 JS reference; masks, cross-attention, heads, extreme logits, every
// error message, no leaks, and the 16384-long streaming call inside a 64 MiB heap.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectClose, expectError, rand, softmaxAttentionF64 } from './helpers.js';
import { loadAttention } from '../../wasm/index.js';

const CASES = [
  { n: 1, d: 4 },
  { n: 7, d: 8 },
  { n: 33, d: 16, heads: 2 },
  { n: 130, d: 64, causal: true },
  { n: 70, m: 200, d: 24, dv: 12, heads: 3 },             // cross-attention, dv != d
  { n: 200, m: 70, d: 24, heads: 4, causal: true },       // m < n: rows past m see every key
  { n: 150, d: 32, heads: 2, causal: true, mask: 'some' }, // causal + padding
  { n: 9, m: 300, d: 8, scale: 0.3, mask: 'some' },
];

function inputs(c, seed) {
  const m = c.m ?? c.n, dv = c.dv ?? c.d;
  const opts = { n: c.n, m, d: c.d, dv, heads: c.heads ?? 1, causal: c.causal ?? false, q: rand(c.n * c.d, seed), k: rand(m * c.d, seed + 1), v: rand(m * dv, seed + 2) };
  if (c.scale !== undefined) opts.scale = c.scale;
  if (c.mask) opts.keyMask = Uint8Array.from({ length: m }, (_, j) => (j % 3 === 1 ? 0 : 1));
  return opts;
}

for (const { name, lib } of builds) {
  test(`${name}: streaming, weights and C reference paths match the float64 reference`, (t) => {
    CASES.forEach((c, idx) => {
      const opts = inputs(c, 10 * idx + 1);
      const label = JSON.stringify(c);
      const ref = softmaxAttentionF64(opts);
      const streaming = lib.softmaxAttention(opts);
      assert.equal(streaming.weights, undefined);
      const withW = lib.softmaxAttention({ ...opts, returnWeights: true });
      const cref = lib.softmaxAttention({ ...opts, returnWeights: true, reference: true });
      expectClose(t, `${label} streaming`, streaming.output, ref.output, TOL.attention);
      expectClose(t, `${label} weights-path output`, withW.output, ref.output, TOL.attention);
      expectClose(t, `${label} weights`, withW.weights, ref.weights, TOL.attention_weights);
      expectClose(t, `${label} C reference`, cref.output, ref.output, TOL.attention);
      assert.equal(withW.weights.length, opts.heads * opts.n * opts.m);
    });
  });

  test(`${name}: rows with nothing allowed give zeros, not NaN`, () => {
    const n = 5, d = 4;
    const opts = { q: rand(n * d, 1), k: rand(n * d, 2), v: rand(n * d, 3), n, d, keyMask: [0, 0, 0, 0, 0] };
    for (const returnWeights of [false, true]) {
      const r = lib.softmaxAttention({ ...opts, returnWeights });
      assert.ok(r.output.every((x) => x === 0));
      if (returnWeights) assert.ok(r.weights.every((x) => x === 0));
    }
    // causal + mask that hides key 0: row 0 has nothing, later rows do
    const r = lib.softmaxAttention({ ...opts, keyMask: [0, 1, 1, 1, 1], causal: true, returnWeights: true });
    assert.ok(r.output.slice(0, d).every((x) => x === 0));
    assert.ok(r.output.every(Number.isFinite));
    assert.ok(Math.abs(r.weights.slice(5, 10).reduce((a, b) => a + b) - 1) < 1e-6);
  });

  test(`${name}: logits of +-1e4 give no inf or NaN`, (t) => {
    const n = 40, d = 8;
    const q = rand(n * d, 5).map((x) => x * 100), k = rand(n * d, 6).map((x) => x * 100), v = rand(n * d, 7);
    const opts = { q, k, v, n, d, scale: 1 };
    const ref = softmaxAttentionF64(opts);
    for (const returnWeights of [false, true]) {
      const r = lib.softmaxAttention({ ...opts, returnWeights });
      assert.ok(r.output.every(Number.isFinite));
      expectClose(t, `huge logits (weights ${returnWeights})`, r.output, ref.output, TOL.attention);
    }
  });

  test(`${name}: every bad input throws a clear Error and the library keeps working`, () => {
    const n = 4, d = 8, good = { q: rand(n * d, 1), k: rand(n * d, 2), v: rand(n * d, 3), n, d };
    const bad = [
      [{ ...good, q: new Float64Array(n * d) }, /q must be a Float32Array of n\*d = 4\*8 = 32 values, got Float64Array\(32\)/],
      [{ ...good, q: Array.from(good.q) }, /q must be a Float32Array/],
      [{ ...good, k: new Float32Array(31) }, /k has 31 values, expected m\*d = 4\*8 = 32/],
      [{ ...good, v: new Float32Array(33) }, /v has 33 values, expected m\*dv = 4\*8 = 32/],
      [{ ...good, n: 0 }, /n must be a positive integer, got 0/],
      [{ ...good, n: 2.5 }, /n must be a positive integer, got 2.5/],
      [{ ...good, d: -8 }, /d must be a positive integer, got -8/],
      [{ ...good, m: '4' }, /m must be a positive integer, got "4"/],
      [{ ...good, heads: 3 }, /d \(8\) must be divisible by heads \(3\)/],
      [{ ...good, dv: 6, v: new Float32Array(24), heads: 4 }, /dv \(6\) must be divisible by heads \(4\)/],
      [{ ...good, keyMask: [1, 1, 1] }, /keyMask has 3 entries, expected 4/],
      [{ ...good, keyMask: [1, 2, 1, 1] }, /keyMask\[1\] is 2; expected 0 or 1/],
      [{ ...good, keyMask: 'yes' }, /keyMask must be a Uint8Array/],
      [{ ...good, q: Float32Array.from(good.q, (x, i) => (i === 5 ? NaN : x)) }, /q\[5\] is NaN; inputs must be finite/],
      [{ ...good, v: Float32Array.from(good.v, (x, i) => (i === 0 ? Infinity : x)) }, /v\[0\] is Infinity/],
      [{ ...good, scale: NaN }, /scale must be a finite number, got NaN/],
      [{ ...good, causal: 1 }, /causal must be true or false, got 1/],
      [{ ...good, heads: 0 }, /heads must be a positive integer/],
      [{ ...good, retrunWeights: true }, /unknown option "retrunWeights"/],
    ];
    for (const [opts, re] of bad) expectError(() => lib.softmaxAttention(opts), re);
    expectError(() => lib.softmaxAttention(), /expects an options object, got undefined/);
    expectError(() => lib.softmaxAttention(null), /expects an options object, got null/);
    // still works
    const ok = lib.softmaxAttention(good);
    expectClose({ diagnostic() {} }, 'after errors', ok.output, softmaxAttentionF64(good).output, TOL.attention);
  });

  test(`${name}: sizes whose memory cannot be had give a clear out-of-memory Error`, () => {
    // weights alone: 30000^2 * 4 B = 3.6 GB > the 2 GiB heap limit
    const n = 30000, d = 1, x = new Float32Array(n);
    expectError(() => lib.softmaxAttention({ q: x, k: x, v: x, n, d, returnWeights: true }), /out of memory: needs \d+\.\d MiB of wasm heap .*weights 3433\.2 MiB/);
    // 23168^2 * 4 B plus the inputs is 39 KB under 2^31, so it passes that pre-check, but the
    // heap already holds the 512 KiB stack (build.sh): malloc itself fails, also a clear Error
    const m = 23168, y = new Float32Array(m);
    expectError(() => lib.softmaxAttention({ q: y, k: y, v: y, n: m, d: 1, returnWeights: true }), /out of memory/);
    const small = { q: rand(8, 1), k: rand(8, 2), v: rand(8, 3), n: 2, d: 4 };
    const ok = lib.softmaxAttention(small);
    assert.ok(ok.output.every(Number.isFinite), 'the library still works after running out of memory');
  });
}

test('10,000 calls after warm-up leave the heap size unchanged', () => {
  const lib = builds[0].lib;
  const opts = { q: rand(32 * 16, 1), k: rand(48 * 16, 2), v: rand(48 * 16, 3), n: 32, m: 48, d: 16, heads: 2 };
  for (let i = 0; i < 10; i++) {
    lib.softmaxAttention(opts);
    lib.softmaxAttention({ ...opts, returnWeights: true, causal: true });
  }
  const before = lib.heapBytes();
  for (let i = 0; i < 10000; i++) lib.softmaxAttention({ ...opts, returnWeights: (i & 1) === 1, causal: (i & 2) === 2 });
  assert.equal(lib.heapBytes(), before);
});

test('n = m = 16384, d = 64 streaming runs inside a 64 MiB heap and matches sampled reference rows', async (t) => {
  const lib = await loadAttention({ simd: true }); // a fresh instance: its heap starts small
  const n = 16384, d = 64;
  const q = rand(n * d, 11), k = rand(n * d, 12), v = rand(n * d, 13);
  const { output } = lib.softmaxAttention({ q, k, v, n, d, causal: true });
  const heap = lib.heapBytes();
  t.diagnostic(`heap after the call: ${(heap / 2 ** 20).toFixed(1)} MiB`);
  assert.ok(heap < 64 * 2 ** 20, `heap ${heap} bytes`);
  // check a few rows against the float64 reference computed on just those rows
  for (const i of [0, 1, 5000, 16383]) {
    const m = i + 1; // causal: row i sees keys 0..i
    const ref = softmaxAttentionF64({ q: q.subarray(i * d, (i + 1) * d), k: k.subarray(0, m * d), v: v.subarray(0, m * d), n: 1, m, d });
    expectClose(t, `row ${i}`, output.subarray(i * d, (i + 1) * d), ref.output, TOL.attention);
  }
});

test('SIMD and scalar builds agree on softmax attention', (t) => {
  const opts = inputs({ n: 100, m: 90, d: 32, heads: 2, causal: true, mask: 'some' }, 99);
  const [a, b] = builds.map(({ lib }) => lib.softmaxAttention({ ...opts, returnWeights: true }));
  expectClose(t, 'output', a.output, b.output, TOL.simd_vs_scalar);
  expectClose(t, 'weights', a.weights, b.weights, TOL.simd_vs_scalar);
});

test('loadAttention validates its options', async () => {
  await assert.rejects(loadAttention({ simd: 'yes' }), /simd must be one of "auto", true, false, got "yes"/);
  await assert.rejects(loadAttention({ wasm: 42 }), /wasm must be a URL, a string URL, an ArrayBuffer or a typed array, got 42/);
  await assert.rejects(loadAttention({ wasm: new Uint8Array([1, 2, 3]) }), /wasm bytes do not compile/);
  await assert.rejects(loadAttention({ smid: true }), /unknown option "smid"/);
  const auto = await loadAttention();
  assert.equal(auto.simd, true, 'Node 20 validates SIMD128, so auto picks the SIMD build');
  const bytes = await (await import('node:fs/promises')).readFile(new URL('../../wasm/attention-scalar.wasm', import.meta.url));
  const fromBytes = await loadAttention({ wasm: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) });
  assert.equal(fromBytes.simd, false);
});
