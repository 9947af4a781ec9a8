// threads.test.js: the threaded build (wasm/attention-threads.wasm, wasm/threads.js) in Node:
// results that do not depend on the thread count (1, 2 and 4 threads, and the single-thread SIMD
// build, bit for bit), workers that really take part, the fallbacks with their one-line reasons,
// clear errors, and a process that still exits (the test runner would hang otherwise).
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../../wasm/index.js';
import { TOL, expectClose, expectError, rand } from './helpers.js';

const two = await loadAttention({ threads: 2 });
const four = await loadAttention({ threads: 4 });
const plain = await loadAttention(); // the single-thread SIMD build

const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

// Every call of `run` on: 2 threads, 1 thread (same instance), 4 threads, the plain build.
function allCounts(run) {
  two.setThreads(2);
  const r2 = run(two);
  two.setThreads(1);
  const r1 = run(two);
  two.setThreads(2);
  return { r1, r2, r4: run(four), rp: run(plain) };
}

test('threads: 2 and 4 start, say so, and a plain load says why it runs one thread', () => {
  assert.equal(two.threads, 2);
  assert.equal(two.threadsReason, null);
  assert.equal(four.threads, 4);
  assert.equal(plain.threads, 1);
  assert.match(plain.threadsReason, /threads: 1 \(the default\)/);
  assert.equal(two.setThreads(1), 1);
  expectError(() => two.setThreads(8), /setThreads: n = 8 is more than the 2 threads started at load; n must be in \[1, 2\]/);
  assert.equal(two.threads, 1, 'a refused count changes nothing');
  two.setThreads(2);
  expectError(() => plain.setThreads(2), /setThreads: n = 2 is more than the 1 thread asked for at load; n must be in \[1, 1\]: load with \{ threads: 2 \}/);
  assert.equal(plain.setThreads(1), 1);
});

test('outputs are bit-identical for 1, 2 and 4 threads and the single-thread build (every threaded kernel)', () => {
  const before = two.threadWorkItems();
  const cases = [];
  for (const [n, d, heads] of [[1, 8, 1], [100, 32, 2], [700, 64, 1], [1500, 128, 8]]) {
    const q = rand(n * d, n + 1), k = rand(n * d, n + 2), v = rand(n * d, n + 3);
    for (const causal of [false, true]) {
      cases.push([`softmax n=${n} heads=${heads} causal=${causal}`, (L) => L.softmaxAttention({ q, k, v, n, d, heads, causal }).output]);
      cases.push([`softmax weights n=${n}`, (L) => L.softmaxAttention({ q, k, v, n, d, heads, causal, returnWeights: n <= 700 }).output]);
      cases.push([`linear elu+1 n=${n} causal=${causal}`, (L) => L.linearAttention({ q, k, v, n, d, heads, causal }).output]);
      cases.push([`retention n=${n} causal=${causal}`, (L) => L.retention({ q, k, v, n, d, heads, causal }).output]);
    }
    const mask = Uint8Array.from({ length: n }, (_, j) => (j % 7 === 3 ? 0 : 1));
    cases.push([`softmax keyMask n=${n}`, (L) => L.softmaxAttention({ q, k, v, n, d, heads, keyMask: mask }).output]);
  }
  // one row of A (generation's matrix-vector products): pieces of rows of B, and blocks of columns past 1024
  for (const [M, N, K] of [[300, 200, 100], [513, 64, 513], [1, 288, 288], [1, 300, 770], [1, 1100, 40], [1, 37, 5]]) {
    const a = rand(M * K, 9), b = rand(K * N, 10);
    cases.push([`matmul ${M}x${N}x${K}`, (L) => L.kernels.matmul(a, b, { M, N, K })]);
  }
  for (const [label, run] of cases) {
    const { r1, r2, r4, rp } = allCounts(run);
    assert.ok(same(r1, r2) && same(r1, r4), `${label}: 1, 2 and 4 threads differ`);
    assert.ok(same(r1, rp), `${label}: the threaded build differs from the single-thread build`);
  }
  // the worker took part (how many items it ran depends on how busy the machine is: the caller runs
  // the items it finds first, so only 'some' holds under load)
  assert.ok(two.threadWorkItems() > before, 'the worker ran no items');
});

test('one token through a model (every matrix-vector product of a generation step) is bit-identical at every thread count', () => {
  // dModel 288, dFF 768: each projection is cut for threads (pieces of rows of B); the tied
  // classifier by blocks of rows; an untied classifier of 1500 columns by blocks of columns
  for (const opts of [{ vocab: 2000, dModel: 288, heads: 6, dFF: 768, block: 'llama', tieEmbeddings: true },
    { vocab: 1500, dModel: 64, heads: 4, dFF: 128, tieEmbeddings: false }]) {
    const run = (L) => {
      const m = L.createModel({ ...opts, layers: 1, maxLen: 40, seed: 4 });
      const r = { logits: m.forward([7]).logits, tokens: m.generate([3, 1, 4], { maxTokens: 30 }) };
      m.dispose();
      return r;
    };
    const { r1, r2, r4, rp } = allCounts(run);
    for (const [name, r] of [['2 threads', r2], ['4 threads', r4], ['single-thread build', rp]]) {
      assert.ok(same(r.logits, r1.logits), `${opts.dModel}: ${name}: one token's logits`);
      assert.ok(same(r.tokens, r1.tokens), `${opts.dModel}: ${name}: generated tokens`);
    }
  }
});

test('linear attention with one head runs in segments: the same bits at 1, 2, 4 threads and the plain build', (t) => {
  // n = 1024 is 16 chunks of 64: one head runs as 8 segments of 2 chunks (src/attention/linear_attention.c);
  // m = 300 ends the keys inside the 3rd segment; non-causal, m = 1500 cuts the keys into 8 segments
  // of 2 or 3 chunks. "efficient" has no causal form.
  const n = 1024, d = 64, q = rand(n * d, 21), k = rand(1500 * d, 22), v = rand(1500 * d, 23);
  const before = two.threadWorkItems();
  for (const feature of ['elu+1', 'relu', 'efficient', 'taylor'])
    for (const causal of [true, false])
      for (const m of causal ? [n, 300] : [300, 1500]) {
        if (causal && feature === 'efficient') continue;
        const o = { q, k: k.subarray(0, m * d), v: v.subarray(0, m * d), n, m, d, feature, causal };
        const label = `${feature} causal=${causal} m=${m}`;
        const { r1, r2, r4, rp } = allCounts((L) => L.linearAttention(o).output);
        assert.ok(same(r1, r2) && same(r1, r4), `${label}: 1, 2 and 4 threads differ`);
        assert.ok(same(r1, rp), `${label}: the threaded build differs from the single-thread build`);
        if (causal)
          expectClose(t, `${label} parallel vs recurrent`, r2, two.linearAttention({ ...o, mode: 'recurrent' }).output,
            TOL.linear_causal_forms);
        else expectClose(t, `${label} vs the C reference`, r2, two.linearAttention({ ...o, reference: true }).output, TOL.attention);
      }
  { // d = 256: too wide for every chunk's own sums to be kept, so phase 3 recomputes some
    const n = 2048, d = 256, q = rand(n * d, 24), k = rand(n * d, 25), v = rand(n * d, 26);
    const { r1, r2, r4, rp } = allCounts((L) => L.linearAttention({ q, k, v, n, d, causal: true }).output);
    assert.ok(same(r1, r2) && same(r1, r4) && same(r1, rp), 'd=256: thread counts or builds differ');
  }
  // the worker took part (how many items it ran depends on how busy the machine is: the caller runs
  // the items it finds first, so only 'some' holds under load)
  assert.ok(two.threadWorkItems() > before, 'the worker ran no items');
});

test('a training curve and its checkpoint are bit-identical whatever the thread count', () => {
  const curve = (L, threads) => {
    if (L.threads > 1) L.setThreads(threads);
    const m = L.createModel({ vocab: 11, dModel: 64, heads: 4, layers: 2, maxLen: 64, seed: 3 });
    const losses = [];
    for (let i = 0; i < 6; i++) losses.push(m.trainStep({ task: 'reverse', length: 16, symbols: 10, batchSize: 32 }).loss);
    const bytes = m.save();
    m.dispose();
    return { losses, bytes };
  };
  const a = curve(two, 1), b = curve(two, 2), c = curve(four, 4), p = curve(plain, 1);
  two.setThreads(2);
  for (const [name, x] of [['2 threads', b], ['4 threads', c], ['single-thread build', p]]) {
    assert.deepEqual(x.losses, a.losses, `${name}: losses`);
    assert.ok(same(x.bytes, a.bytes), `${name}: checkpoint bytes`);
  }
});

// The Synthesizer splits its forward and backward over heads (src/attention/synthesizer.c).
const SYNTH_VARIANTS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'mixture'];
const SYNTH_ALL = ['dense', 'random', 'factorized-dense', 'factorized-random', 'dot'];

test('Synthesizer forward (outputs and weights) is bit-identical for 1, 2 and 4 threads and the single-thread build', () => {
  const n = 100, d = 32, dv = 64, heads = 8, before = two.threadWorkItems();
  const x = rand(n * d, 21), v = rand(n * dv, 22), q = rand(n * dv, 23), k = rand(n * dv, 24);
  for (const variant of SYNTH_VARIANTS) {
    const kinds = variant === 'mixture' ? SYNTH_ALL : [variant];
    const opts = { variant, d, maxLen: 128, heads, seed: 9 };
    if (variant === 'mixture') opts.components = SYNTH_ALL;
    if (kinds.includes('factorized-dense')) Object.assign(opts, { a: 8, b: 16 });
    if (kinds.includes('factorized-random')) opts.k = 4;
    for (const causal of [false, true]) {
      const { r1, r2, r4, rp } = allCounts((L) => {
        const layer = L.createSynthesizer(opts);
        const r = layer.forward({ x, v, q, k, n, causal, returnWeights: true });
        layer.dispose();
        return r;
      });
      for (const part of ['output', 'weights']) {
        const label = `synthesizer ${variant} heads=${heads} causal=${causal}: ${part}`;
        assert.ok(same(r1[part], r2[part]) && same(r1[part], r4[part]), `${label}: 1, 2 and 4 threads differ`);
        assert.ok(same(r1[part], rp[part]), `${label}: the threaded build differs from the single-thread build`);
      }
    }
  }
  // the worker took part (how many items it ran depends on how busy the machine is: the caller runs
  // the items it finds first, so only 'some' holds under load)
  assert.ok(two.threadWorkItems() > before, 'the worker ran no items');
});

test('Synthesizer backward: a model step\'s gradients are bit-identical for 1, 2 and 4 threads and the single-thread build', () => {
  // beta1 = 0 and no clipping: AdamW's first moment after one step is the gradient itself, and
  // save({ optimizer: true }) writes it, so the checkpoint holds every gradient bit for bit
  for (const variant of SYNTH_VARIANTS) {
    for (const heads of [4, 8]) {
      const run = (L) => {
        const attentionOptions = variant === 'mixture' ? { components: SYNTH_ALL, k: 3 } : { k: 3 };
        const m = L.createModel({ vocab: 11, dModel: 64, heads, layers: 1, maxLen: 32, seed: 4, attention: `synth:${variant}`, attentionOptions });
        const step = m.trainStep({ task: 'reverse', length: 12, symbols: 10, batchSize: 4, beta1: 0, clip: 0 });
        const bytes = m.save({ optimizer: true });
        const fwd = m.forward([1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2]);
        m.dispose();
        return { step, bytes, logits: fwd.logits, att: fwd.attention.flat() };
      };
      const { r1, r2, r4, rp } = allCounts(run);
      const label = `synth:${variant} heads=${heads}`;
      for (const [name, r] of [['2 threads', r2], ['4 threads', r4], ['single-thread build', rp]]) {
        assert.deepEqual(r.step, r1.step, `${label}, ${name}: loss and gradient norm`);
        assert.ok(same(r.bytes, r1.bytes), `${label}, ${name}: gradients (the checkpoint's first moments) and parameters`);
        assert.ok(same(r.logits, r1.logits), `${label}, ${name}: logits after the step`);
        assert.ok(r.att.length === heads && r.att.every((a, i) => same(a, r1.att[i])), `${label}, ${name}: attention weights`);
      }
    }
  }
});

test('Synthesizer generation steps split over heads give the same tokens at every thread count, and equal the full forward', () => {
  // dModel 128, 4 heads: a dense kind's step has >= 2^16 multiply-adds, so its heads run as items
  for (const [attention, attentionOptions] of [['synth:dense', {}], ['synth:factorized-dense', {}],
    ['synth:mixture', { components: ['dense', 'dot'] }], ['synth:random', {}]]) {
    const run = (L) => {
      const m = L.createModel({ vocab: 11, dModel: 128, heads: 4, layers: 1, maxLen: 40, seed: 6, attention, attentionOptions });
      m.trainStep({ task: 'copy', length: 8, symbols: 10, batchSize: 4 });
      const o = { maxTokens: 60, temperature: 0.9, topK: 5, seed: 3 };
      const r = { greedy: m.generate([3, 1, 4], { maxTokens: 60 }), sampled: m.generate([3, 1, 4], o),
        full: m.generate([3, 1, 4], { ...o, cache: false }) };
      m.dispose();
      return r;
    };
    const { r1, r2, r4, rp } = allCounts(run);
    assert.equal(r1.sampled.length, 38, `${attention}: generation runs to maxLen`);
    assert.ok(same(r1.sampled, r1.full), `${attention}: cached generation differs from the full forward`);
    for (const [name, r] of [['2 threads', r2], ['4 threads', r4], ['single-thread build', rp]])
      for (const k of ['greedy', 'sampled', 'full']) assert.ok(same(r[k], r1[k]), `${attention}, ${name}: ${k} tokens`);
  }
});

test('a non-finite Synthesizer logit in one head is a clear Error on 2 threads, and every thread stays usable', () => {
  const n = 64, d = 16, dv = 32, x = rand(n * d, 31), v = rand(n * dv, 32);
  const layer = two.createSynthesizer({ variant: 'dense', d, maxLen: 64, heads: 8 });
  const good = layer.forward({ x, v, n }).output;
  const at = 5 * d * 64 + 3, keep = layer.params.W2[at];
  layer.params.W2[at] = Infinity; // head 5 only
  expectError(() => layer.forward({ x, v, n }), /a logit is NaN or infinite; check the values written into layer.params/);
  layer.params.W2[at] = keep;
  assert.ok(same(layer.forward({ x, v, n }).output, good));
  layer.dispose();
  const { r1, r2 } = allCounts((L) => L.softmaxAttention({ q: x, k: x, v: x, n, d, heads: 2 }).output);
  assert.ok(same(r1, r2));
});

test('bad thread options are clear Errors; the fallbacks say why in one line', async () => {
  await assert.rejects(loadAttention({ threads: 0 }), /loadAttention: threads must be 'auto' or an integer in \[1, 64\], got 0/);
  await assert.rejects(loadAttention({ threads: 'many' }), /threads must be 'auto' or an integer/);
  const scalar = await loadAttention({ threads: 2, simd: false });
  assert.equal(scalar.threads, 1);
  assert.match(scalar.threadsReason, /simd: false was asked for, and the threaded build is a SIMD build/);
  const own = await loadAttention({ threads: 2, wasm: new URL('../../wasm/attention.wasm', import.meta.url) });
  assert.equal(own.threads, 1);
  assert.match(own.threadsReason, /a wasm module of your own/);
  const auto = await loadAttention({ threads: 'auto' });
  assert.ok(auto.threads >= 1 && auto.threads <= 8);
  assert.ok(auto.threads === 1 ? typeof auto.threadsReason === 'string' : auto.threadsReason === null);
  expectError(() => two.setThreads(0), /setThreads: n must be a positive integer, got 0/);
});

test('an error inside a threaded call leaves every thread usable', () => {
  const n = 600, d = 64, q = rand(n * d, 1), k = rand(n * d, 2), v = rand(n * d, 3);
  const bad = q.slice();
  bad[5] = NaN;
  expectError(() => two.softmaxAttention({ q: bad, k, v, n, d }), /q\[5\] is NaN/);
  expectError(() => two.softmaxAttention({ q, k: rand(5), v, n, d }), /k has 5 values/);
  const { r1, r2 } = allCounts((L) => L.softmaxAttention({ q, k, v, n, d, causal: true }).output);
  assert.ok(same(r1, r2));
  // the input check scans in pieces on every thread: the first bad value is still the one named,
  // wherever the pieces fall (here the 4th and 5th of pieces of 32768 floats)
  const N = 2048, far = rand(N * d, 4);
  far[110000] = Infinity, far[131071] = NaN;
  for (const L of [plain, two]) expectError(() => L.softmaxAttention({ q: far, k: far, v: far, n: N, d }), /q\[110000\] is Infinity/);
  far[110000] = 0;
  for (const L of [plain, two]) expectError(() => L.softmaxAttention({ q: far, k: far, v: far, n: N, d }), /q\[131071\] is NaN/);
});

test('the kernel variants give the same bits; the probe reports its times and picks one; bad names are Errors', async () => {
  assert.ok(['measured', 'packed'].includes(plain.kernel.variant), plain.kernel.variant);
  for (const v of ['measured', 'unpacked', 'packed']) assert.ok(plain.kernel.probeMs[v] > 0, `${v} was timed`);
  const libs = await Promise.all(['measured', 'unpacked', 'packed'].map((kernel) => loadAttention({ kernel })));
  assert.deepEqual(libs.map((l) => l.kernel.variant), ['measured', 'unpacked', 'packed']);
  for (const [M, N, K] of [[300, 200, 260], [700, 64, 700]])
    for (const opts of [{}, { transB: true }, { transA: true }]) {
      const a = rand(M * K, 1), b = rand(K * N, 2);
      const [x, y, z] = libs.map((l) => l.kernels.matmul(a, b, { M, N, K, ...opts }));
      assert.ok(same(x, y) && same(x, z), `${M}x${N}x${K} ${JSON.stringify(opts)}`);
    }
  await assert.rejects(loadAttention({ kernel: 'fast' }), /loadAttention: kernel must be one of "auto", "measured", "unpacked", "packed", got "fast"/);
});
