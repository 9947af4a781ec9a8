// Synthesizer layers on both builds: every variant, causal and not, two heads, with parameters
// set through layer.params, against the naive C reference (forward({ reference: true })) and a
// float64 JS reference written here from docs/attention-forms.md section 3; mixture alphas; seeded
// init identical across builds; SIMD vs scalar; stale views after memory growth; every error.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectClose, expectError, rand } from './helpers.js';

const D = 8, L = 12, A = 3, B = 4, K = 3, H = 2, DV = 6, DQK = 8;
const ALL = ['dense', 'random', 'factorized-dense', 'factorized-random', 'dot'];
const VARIANTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'mixture'];

function create(lib, variant, extra = {}) {
  const opts = { variant, d: D, maxLen: L, heads: H, seed: 5, ...extra };
  const kinds = variant === 'mixture' ? (opts.components ??= ALL) : [variant];
  if (kinds.includes('factorized-dense')) Object.assign(opts, { a: A, b: B }, extra);
  if (kinds.includes('factorized-random')) opts.k ??= K;
  return lib.createSynthesizer(opts);
}

// Writes seeded values of a sensible scale into every tensor, through layer.params.
function setParams(layer, seed) {
  const scale = { W1: 0.5, b1: 0.3, W2: 0.5, b2: 0.3, R: 1.5, W1a: 0.5, b1a: 0.3, W2a: 0.6, W1b: 0.5, b1b: 0.3,
    W2b: 0.6, R1: 0.8, R2: 0.8, alphaLogits: 1 };
  layer.paramNames.forEach((name, i) => {
    const s = scale[name.slice(name.lastIndexOf('.') + 1)];
    layer.params[name].set(rand(layer.params[name].length, seed + 17 * i, -s, s));
  });
}

// ---- float64 reference ----------------------------------------------------------------

function hiddenF64(x, W1, b1, hd, n, d) { // relu(X W1[hd] + b1[hd]) (n, d)
  const Hm = new Float64Array(n * d);
  for (let i = 0; i < n; i++)
    for (let c = 0; c < d; c++) {
      let z = b1[hd * d + c];
      for (let t = 0; t < d; t++) z += x[i * d + t] * W1[hd * d * d + t * d + c];
      Hm[i * d + c] = Math.max(z, 0);
    }
  return Hm;
}

function logitsF64(kind, P, cfg, hd, { x, q, k, n }) {
  const { d, maxLen: Lm, heads, a, b, k: rank } = cfg;
  const Bm = new Float64Array(n * n);
  if (kind === 'dense') {
    const Hm = hiddenF64(x, P.W1, P.b1, hd, n, d);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let z = P.b2[hd * Lm + j];
        for (let t = 0; t < d; t++) z += Hm[i * d + t] * P.W2[hd * d * Lm + t * Lm + j];
        Bm[i * n + j] = z;
      }
  } else if (kind === 'random') {
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) Bm[i * n + j] = P.R[hd * Lm * Lm + i * Lm + j];
  } else if (kind === 'factorized-dense') {
    const Ha = hiddenF64(x, P.W1a, P.b1a, hd, n, d), Hb = hiddenF64(x, P.W1b, P.b1b, hd, n, d);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        // the convention: B[i, j] = Ba[i, floor(j / b)] * Bb[i, j mod b]
        const p = Math.floor(j / b), r = j % b;
        let ba = 0, bb = 0;
        for (let t = 0; t < d; t++) {
          ba += Ha[i * d + t] * P.W2a[hd * d * a + t * a + p];
          bb += Hb[i * d + t] * P.W2b[hd * d * b + t * b + r];
        }
        Bm[i * n + j] = ba * bb;
      }
  } else if (kind === 'factorized-random') {
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let z = 0;
        for (let t = 0; t < rank; t++) z += P.R1[hd * Lm * rank + i * rank + t] * P.R2[hd * Lm * rank + j * rank + t];
        Bm[i * n + j] = z;
      }
  } else if (kind === 'dot') {
    const dqk = q.length / n, dh = dqk / heads;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let z = 0;
        for (let t = 0; t < dh; t++) z += q[i * dqk + hd * dh + t] * k[j * dqk + hd * dh + t];
        Bm[i * n + j] = z / Math.sqrt(dh);
      }
  }
  return Bm;
}

function softmaxF64(w) {
  const mx = Math.max(...w), e = w.map((z) => Math.exp(z - mx)), s = e.reduce((p, c) => p + c, 0);
  return e.map((z) => z / s);
}

// { output (n*dv), weights (heads*n*n), alphas (heads*C) } in float64, from a copy of layer.params.
function synthesizerF64(layer, { x, v, q, k, n, causal = false }) {
  const cfg = layer, heads = layer.heads, dv = v.length / n, dvh = dv / heads;
  const kinds = layer.variant === 'mixture' ? layer.components : [layer.variant];
  const output = new Float64Array(n * dv), weights = new Float64Array(heads * n * n), alphas = [];
  for (let hd = 0; hd < heads; hd++) {
    let al = [1];
    if (layer.variant === 'mixture') al = softmaxF64([...layer.params.alphaLogits.slice(hd * kinds.length, (hd + 1) * kinds.length)]);
    alphas.push(...al);
    const Bm = new Float64Array(n * n);
    kinds.forEach((kind, c) => {
      const P = {};
      for (const name of layer.paramNames)
        if (layer.variant !== 'mixture') P[name] = layer.params[name].slice();
        else if (name.startsWith(`${kind}.`)) P[name.slice(kind.length + 1)] = layer.params[name].slice();
      const Bc = logitsF64(kind, P, { ...cfg, a: layer.a, b: layer.b, k: layer.k }, hd, { x, q, k, n });
      for (let t = 0; t < n * n; t++) Bm[t] += al[c] * Bc[t];
    });
    for (let i = 0; i < n; i++) {
      const row = Array.from({ length: n }, (_, j) => (causal && j > i ? -Infinity : Bm[i * n + j]));
      const p = softmaxF64(row);
      for (let j = 0; j < n; j++) {
        weights[hd * n * n + i * n + j] = p[j];
        for (let c = 0; c < dvh; c++) output[i * dv + hd * dvh + c] += p[j] * v[j * dv + hd * dvh + c];
      }
    }
  }
  return { output, weights, alphas: Float64Array.from(alphas) };
}

function inputs(n, seed) {
  return { n, x: rand(n * D, seed), v: rand(n * DV, seed + 1), q: rand(n * DQK, seed + 2), k: rand(n * DQK, seed + 3) };
}

function forwardInputs(layer, inp) { // only what the layer uses (x is optional for random forms)
  const kinds = layer.variant === 'mixture' ? layer.components : [layer.variant];
  const o = { n: inp.n, v: inp.v };
  if (kinds.includes('dense') || kinds.includes('factorized-dense')) o.x = inp.x;
  if (kinds.includes('dot')) Object.assign(o, { q: inp.q, k: inp.k });
  return o;
}

// ---- tests ------------------------------------------------------------------------------

for (const { name, lib } of builds) {
  for (const variant of VARIANTS)
    test(`${name}: ${variant}, causal and not, ${H} heads: fast = C reference = float64 reference`, (t) => {
      const layer = create(lib, variant);
      setParams(layer, 100);
      for (const n of [L, 10, 1])
        for (const causal of [false, true]) {
          const inp = forwardInputs(layer, inputs(n, 7 * n));
          const label = `${variant} n=${n}${causal ? ' causal' : ''}`;
          const fast = layer.forward({ ...inp, causal, returnWeights: true });
          const cref = layer.forward({ ...inp, causal, returnWeights: true, reference: true });
          const f64 = synthesizerF64(layer, { ...inputs(n, 7 * n), causal });
          expectClose(t, `${label} output fast vs C ref`, fast.output, cref.output, TOL.synthesizer);
          expectClose(t, `${label} weights fast vs C ref`, fast.weights, cref.weights, TOL.synthesizer);
          expectClose(t, `${label} output fast vs float64`, fast.output, f64.output, TOL.synthesizer);
          expectClose(t, `${label} weights fast vs float64`, fast.weights, f64.weights, TOL.synthesizer);
          for (let r = 0; r < H * n; r++) {
            const row = fast.weights.subarray(r * n, (r + 1) * n);
            assert.ok(Math.abs(row.reduce((s, w) => s + w, 0) - 1) < 1e-5, `${label}: row ${r} sums to 1`);
            if (causal) for (let j = (r % n) + 1; j < n; j++) assert.equal(row[j], 0, `${label}: causal zero above the diagonal`);
          }
          const plain = layer.forward({ ...inp, causal });
          assert.equal(plain.weights, undefined);
          assert.deepEqual(plain.output, fast.output, `${label}: returnWeights does not change the output`);
        }
      layer.dispose();
    });

  test(`${name}: parameter shapes, names and views`, () => {
    for (const variant of VARIANTS) {
      const layer = create(lib, variant);
      for (const p of layer.paramNames) {
        const size = layer.paramShapes[p].reduce((s, x) => s * x, 1);
        assert.equal(layer.params[p].length, size, `${variant} ${p} has shape ${layer.paramShapes[p]}`);
        assert.equal(layer.paramShapes[p][0], H, 'heads first');
      }
      assert.deepEqual(Object.keys(layer.params), [...layer.paramNames]);
      layer.dispose();
    }
    const dense = create(lib, 'dense');
    assert.deepEqual([...dense.paramNames], ['W1', 'b1', 'W2', 'b2']);
    assert.deepEqual(dense.paramShapes.W2, [H, D, L]);
    assert.deepEqual(create(lib, 'random').paramShapes.R, [H, L, L]);
    const fd = create(lib, 'factorized-dense');
    assert.deepEqual([...fd.paramNames], ['W1a', 'b1a', 'W2a', 'W1b', 'b1b', 'W2b']);
    assert.deepEqual([fd.paramShapes.W2a, fd.paramShapes.W2b], [[H, D, A], [H, D, B]]);
    assert.deepEqual(create(lib, 'factorized-random').paramShapes.R1, [H, L, K]);
    const mix = create(lib, 'mixture', { components: ['random', 'dot'] });
    assert.deepEqual([...mix.paramNames], ['random.R', 'alphaLogits']);
    assert.deepEqual(mix.paramShapes.alphaLogits, [H, 2]);
    // writes through a view are what the next forward uses
    const n = 5, v = rand(n * DV, 3);
    const before = mix.forward({ n, v, q: rand(n * DQK, 1), k: rand(n * DQK, 2) }).output;
    mix.params['random.R'].fill(0);
    mix.params.alphaLogits.set([100, -100, 100, -100]); // all weight on random (uniform rows)
    const after = mix.forward({ n, v, q: rand(n * DQK, 1), k: rand(n * DQK, 2), returnWeights: true });
    assert.notDeepEqual(after.output, before);
    for (const w of after.weights) assert.ok(Math.abs(w - 1 / n) < 1e-6, 'uniform attention from R = 0');
    dense.dispose(), fd.dispose(), mix.dispose();
  });

  test(`${name}: mixture alphas are softmax(alphaLogits) per head and sum to 1`, (t) => {
    const layer = create(lib, 'mixture');
    const C = ALL.length;
    let a = layer.alphas;
    assert.equal(a.length, H * C);
    for (const x of a) assert.ok(Math.abs(x - 1 / C) < 1e-7, 'alphas start uniform (alphaLogits = 0)');
    setParams(layer, 9);
    a = layer.alphas;
    const f64 = synthesizerF64(layer, { ...inputs(3, 1), n: 3 }).alphas;
    expectClose(t, 'alphas vs float64 softmax', a, f64, 1e-6);
    for (let hd = 0; hd < H; hd++) {
      const s = a.subarray(hd * C, (hd + 1) * C).reduce((p, c) => p + c, 0);
      assert.ok(Math.abs(s - 1) < 1e-6, `head ${hd} alphas sum to ${s}`);
    }
    assert.equal(create(lib, 'dense').alphas, undefined, 'only a mixture has alphas');
    layer.dispose();
  });

  test(`${name}: params stay valid across memory growth, and writes after dispose() touch nothing else`, () => {
    const layer = create(lib, 'dense');
    setParams(layer, 4);
    const kept = layer.params.W1, copy = kept.slice();
    const before = layer.forward({ n: 5, x: rand(5 * 8, 3, -1, 1), v: rand(5 * 4, 4, -1, 1) }).output;
    const buffer = lib.memory.buffer, big = [];
    while (lib.memory.buffer === buffer && big.length < 8) // 64 MiB each, until the memory grows
      big.push(lib.createSynthesizer({ variant: 'random', d: 1, maxLen: 2048, heads: 2 }));
    assert.notEqual(lib.memory.buffer, buffer, 'the memory grew');
    assert.equal(kept.length, copy.length, 'the array is not a view into the heap: growth does not detach it');
    assert.deepEqual(layer.params.W1, copy);
    assert.deepEqual(layer.forward({ n: 5, x: rand(5 * 8, 3, -1, 1), v: rand(5 * 4, 4, -1, 1) }).output, before);
    for (const b of big) b.dispose();
    // finding 4 of issue 10: writing through params kept after dispose() must not reach objects
    // created later in the memory the layer had
    const params = layer.params;
    layer.dispose();
    const next = create(lib, 'dense');
    setParams(next, 9);
    const want = next.forward({ n: 5, x: rand(5 * 8, 5, -1, 1), v: rand(5 * 4, 6, -1, 1) }).output;
    for (const name of Object.keys(params)) params[name].fill(1e30);
    assert.deepEqual(next.forward({ n: 5, x: rand(5 * 8, 5, -1, 1), v: rand(5 * 4, 6, -1, 1) }).output, want);
    next.dispose();
  });
}

test('same seed gives the same parameters in both builds; other seeds differ; init scales', () => {
  const [simd, scalar] = builds.map((b) => create(b.lib, 'mixture', { seed: 1234 }));
  for (const p of simd.paramNames) assert.deepEqual(simd.params[p], scalar.params[p], `${p} identical in both builds`);
  const other = create(builds[0].lib, 'mixture', { seed: 1235 });
  assert.notDeepEqual(other.params['dense.W1'], simd.params['dense.W1']);
  const bound = Math.sqrt(6 / (2 * D));
  const w1 = simd.params['dense.W1'];
  assert.ok(w1.every((w) => Math.abs(w) <= bound) && w1.some((w) => Math.abs(w) > 0.8 * bound), 'W1 ~ U(-sqrt(6/2d), +)');
  assert.ok(simd.params['dense.b1'].every((w) => w === 0), 'biases start at 0');
  assert.ok(simd.params['random.R'].every((w) => Math.abs(w) <= 1), 'R ~ U(-1, 1)');
  // a component starts with the same numbers alone and inside a mixture
  const alone = create(builds[1].lib, 'random', { seed: 1234 });
  assert.deepEqual(alone.params.R, simd.params['random.R']);
  for (const l of [simd, scalar, other, alone]) l.dispose();
});

test('SIMD and scalar builds agree on every variant', (t) => {
  for (const variant of VARIANTS) {
    const [a, b] = builds.map((bd) => create(bd.lib, variant, { seed: 77 }));
    const inp = forwardInputs(a, inputs(L, 3));
    for (const causal of [false, true]) {
      const ra = a.forward({ ...inp, causal, returnWeights: true }), rb = b.forward({ ...inp, causal, returnWeights: true });
      expectClose(t, `${variant}${causal ? ' causal' : ''} output simd vs scalar`, ra.output, rb.output, TOL.simd_vs_scalar);
      expectClose(t, `${variant}${causal ? ' causal' : ''} weights simd vs scalar`, ra.weights, rb.weights, TOL.simd_vs_scalar);
    }
    a.dispose(), b.dispose();
  }
});

test('a bigger layer (d = 64, maxLen = 256, 4 heads): fast path vs C reference', (t) => {
  const lib = builds[0].lib;
  for (const variant of VARIANTS) {
    const opts = { variant, d: 64, maxLen: 256, heads: 4, seed: 3, a: 16, b: 16, k: 8, components: ALL };
    if (variant !== 'mixture') delete opts.components;
    if (!['factorized-dense', 'mixture'].includes(variant)) delete opts.a, delete opts.b;
    if (!['factorized-random', 'mixture'].includes(variant)) delete opts.k;
    const layer = lib.createSynthesizer(opts);
    const n = 200;
    const inp = { n, x: rand(n * 64, 1), v: rand(n * 32, 2) };
    if (variant === 'mixture') Object.assign(inp, { q: rand(n * 64, 3), k: rand(n * 64, 4) });
    const fast = layer.forward({ ...inp, causal: true }), ref = layer.forward({ ...inp, causal: true, reference: true });
    expectClose(t, `${variant} n=200 causal`, fast.output, ref.output, TOL.synthesizer);
    layer.dispose();
  }
});

test('bad arguments throw clear Errors, and the library keeps working', () => {
  const lib = builds[0].lib;
  const base = { variant: 'dense', d: D, maxLen: L };
  expectError(() => lib.createSynthesizer({ ...base, variant: 'sparse' }), /variant must be one of "dense", "random".*got "sparse"/);
  expectError(() => lib.createSynthesizer({ ...base, variant: undefined }), /variant must be one of/);
  expectError(() => lib.createSynthesizer({ ...base, dd: 3 }), /unknown option "dd"/);
  expectError(() => lib.createSynthesizer({ ...base, d: 0 }), /d must be a positive integer, got 0/);
  expectError(() => lib.createSynthesizer({ ...base, maxLen: 2.5 }), /maxLen must be a positive integer, got 2.5/);
  expectError(() => lib.createSynthesizer({ ...base, heads: -1 }), /heads must be a positive integer/);
  expectError(() => lib.createSynthesizer({ ...base, seed: -3 }), /seed must be an integer in \[0, 2\^32 - 1\], got -3/);
  expectError(() => lib.createSynthesizer({ ...base, a: 3 }), /a applies only to 'factorized-dense' \(variant is 'dense'\)/);
  expectError(() => lib.createSynthesizer({ ...base, k: 3 }), /k applies only to 'factorized-random'/);
  expectError(() => lib.createSynthesizer({ ...base, trainable: false }), /trainable applies only to 'random' or 'factorized-random'/);
  expectError(() => lib.createSynthesizer({ ...base, components: ['dense'] }), /components applies only to variant 'mixture'/);
  const fd = { ...base, variant: 'factorized-dense' };
  expectError(() => lib.createSynthesizer(fd), /factorized-dense needs a and b .*a \* b = maxLen = 12/);
  expectError(() => lib.createSynthesizer({ ...fd, a: 5, b: 3 }), /a \* b must equal maxLen: a = 5, b = 3, a \* b = 15, maxLen = 12/);
  expectError(() => lib.createSynthesizer({ ...base, variant: 'factorized-random' }), /factorized-random needs k/);
  expectError(() => lib.createSynthesizer({ ...base, variant: 'random', trainable: 1 }), /trainable must be true or false, got 1/);
  const mix = { ...base, variant: 'mixture' };
  expectError(() => lib.createSynthesizer(mix), /components must be a non-empty array of 'dense'.*'dot' for variant 'mixture', got undefined/);
  expectError(() => lib.createSynthesizer({ ...mix, components: [] }), /components must be a non-empty array/);
  expectError(() => lib.createSynthesizer({ ...mix, components: ['dense', 'mixture'] }), /components\[1\] must be one of .*got "mixture"/);
  expectError(() => lib.createSynthesizer({ ...mix, components: ['dot', 'dot'] }), /components lists 'dot' twice/);
  expectError(() => lib.createSynthesizer({ ...mix, components: ['dot', 'factorized-dense'] }), /factorized-dense needs a and b/);
  expectError(() => lib.createSynthesizer({ ...mix, components: ['dot'], k: 2 }), /k applies only to 'factorized-random' \(variant is 'mixture' with components dot\)/);
  expectError(() => lib.createSynthesizer({ variant: 'random', d: 1, maxLen: 20000, heads: 2 }), /need 6104 MiB, more than the 2048 MiB wasm heap; use a smaller maxLen or heads/);
  expectError(() => lib.createSynthesizer(null), /createSynthesizer expects an options object, got null/);

  const layer = create(lib, 'mixture');
  const n = 6, inp = forwardInputs(layer, inputs(n, 1));
  expectError(() => layer.forward({ ...inp, n: L + 1 }), /n = 13 is longer than maxLen = 12, the maximum this layer was created for/);
  expectError(() => layer.forward({ ...inp, n: 0 }), /n must be a positive integer, got 0/);
  expectError(() => layer.forward({ ...inp, x: undefined }), /x \(n\*d = 6\*8 values\) is required: the mixture has a dense component/);
  expectError(() => layer.forward({ ...inp, x: rand(5, 1) }), /x has 5 values, expected n\*d = 6\*8 = 48/);
  expectError(() => layer.forward({ ...inp, v: rand(n * DV + 1, 1) }), /v must be a Float32Array of n\*dv values \(n = 6/);
  expectError(() => layer.forward({ ...inp, v: [1, 2, 3, 4, 5, 6] }), /v must be a Float32Array.*got Array\(6\)/);
  expectError(() => layer.forward({ ...inp, v: rand(n * 3, 1) }), /dv = v.length \/ n = 3 must be divisible by heads \(2\)/);
  expectError(() => layer.forward({ ...inp, q: undefined }), /q and k \(n\*dqk values each\) are required: the mixture has a 'dot' component/);
  expectError(() => layer.forward({ ...inp, k: rand(n * 4, 1) }), /k has 24 values, expected the same as q \(n\*dqk = 6\*8\)/);
  expectError(() => layer.forward({ ...inp, q: rand(n * 3, 1), k: rand(n * 3, 2) }), /dqk = q.length \/ n = 3 must be divisible by heads \(2\)/);
  const bad = inp.x.slice();
  bad[4] = NaN;
  expectError(() => layer.forward({ ...inp, x: bad }), /x\[4\] is NaN; inputs must be finite/);
  expectError(() => layer.forward({ ...inp, causal: 'yes' }), /causal must be true or false/);
  expectError(() => layer.forward({ ...inp, mask: [1] }), /unknown option "mask"/);
  layer.params['dense.W2'][3] = Infinity;
  expectError(() => layer.forward(inp), /a logit is NaN or infinite; check the values written into layer.params/);
  expectError(() => layer.forward({ ...inp, reference: true }), /a logit is NaN or infinite/);
  layer.params['dense.W2'][3] = 0;
  layer.params.alphaLogits[0] = NaN;
  expectError(() => layer.alphas, /alphaLogits holds a NaN/);
  layer.params.alphaLogits[0] = 0;
  const ok = layer.forward(inp);
  assert.ok(ok.output.every(Number.isFinite), 'the layer works again once the parameters are finite');

  layer.dispose();
  layer.dispose(); // idempotent
  assert.equal(layer.disposed, true);
  expectError(() => layer.forward(inp), /layer.forward: this Synthesizer layer was disposed; create a new one/);
  assert.equal(layer.params['dense.W1'].length, 8 * 8 * 2, 'params stay plain JS arrays after dispose (they never alias wasm memory)');
  expectError(() => layer.alphas, /layer.alphas: this Synthesizer layer was disposed/);

  // the library still works: a fresh layer and another family
  const again = create(lib, 'random');
  assert.ok(again.forward({ n: 4, v: rand(4 * DV, 1) }).output.every(Number.isFinite));
  again.dispose();
  const s = lib.softmaxAttention({ q: rand(8, 1), k: rand(8, 2), v: rand(8, 3), n: 2, d: 4 });
  assert.ok(s.output.every(Number.isFinite));
});

test('creating and disposing many layers does not grow the heap', () => {
  const lib = builds[1].lib;
  const run = () => {
    const l = create(lib, 'mixture');
    l.forward(forwardInputs(l, inputs(L, 2)));
    l.dispose();
  };
  for (let i = 0; i < 5; i++) run();
  const before = lib.heapBytes();
  for (let i = 0; i < 200; i++) run();
  assert.equal(lib.heapBytes(), before);
});
