// threads-child.mjs: one process of bench/threads.bench.js. onnxruntime-web takes its thread count
// once per process (ort.env.wasm.numThreads, read when its wasm starts), so each count runs in its
// own process: `node bench/peers/threads-child.mjs T` times, side by side and in alternating
// blocks (each sample is >= BENCH_MIN_MS of one engine's calls, engines in rotating order, each
// sample after an idle pause of BENCH_GAP_MS, so a spinning thread pool never overlaps another
// engine's calls), ours with 1 and T threads (the SIMD128 build, and the relaxed-SIMD build where
// the engine runs it: `rx`) against onnxruntime-web with numThreads T, in both of its attention
// graphs (its fused MultiHeadAttention, `ort`, and the plain MatMul-Mul-Softmax-MatMul, `ort ops`,
// whose MatMuls split across threads). Prints JSON lines: { case, engine, median, min, max }.
import { loadAttention, relaxedSupported } from '../../wasm/index.js';
import { buildModel, ort } from './onnx.js';
import { interleaveAsync } from './timing.js';

const T = Number(process.argv[2] ?? 2);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 15), MIN_MS = Number(process.env.BENCH_MIN_MS ?? 30);
// an idle pause before each sample: the previous engine's spinning pool sleeps before the next one's
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 20);
ort.env.wasm.numThreads = T;
ort.env.wasm.proxy = false;
ort.env.logLevel = 'error';
const lib = await loadAttention({ threads: T, relaxed: false });
if (lib.threads !== T) throw new Error(`ours: ${lib.threads} threads, not ${T}: ${lib.threadsReason}`);
const rx = relaxedSupported() ? await loadAttention({ threads: T, relaxed: true }) : null;
if (rx && !rx.relaxed) throw new Error('the relaxed build did not load');
const rnd = (len, seed) => { let x = seed; return Float32Array.from({ length: len }, () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32) - 0.5); };
const session = async (model) => {
  const s = await ort.InferenceSession.create(model, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const out = s.outputNames[0];
  const run = async (feeds) => {
    const t = {};
    for (const [name, [data, dims]] of Object.entries(feeds)) t[name] = new ort.Tensor('float32', data, dims);
    const r = await s.run(t);
    return r[out].data;
  };
  run.release = () => s.release();
  return run;
};
const maxAbs = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const ours = (threads, f, l = lib) => () => {
  l.setThreads(threads);
  return f(l);
};
const emit = (name, t, extra = {}) => {
  for (const [engine, x] of Object.entries(t))
    console.log(JSON.stringify({ case: name, engine, median: x.median, min: x.min, max: x.max, ...extra }));
};

// oursCall(l) runs the case on instance l; orts: { engine name: onnxruntime-web run } (each checked
// against ours before it is timed, and dropped with a note where onnxruntime-web fails)
async function compare(name, oursCall, orts, feeds) {
  const a = oursCall(lib);
  const c = { 'ours 1t': ours(1, oursCall) };
  let err = null;
  for (const [engine, run] of Object.entries(orts)) {
    let b = null;
    try {
      b = await run(feeds);
    } catch (e) { // e.g. MultiHeadAttention at n = 4096 (a size overflow inside onnxruntime)
      console.log(JSON.stringify({ case: name, note: `onnxruntime-web (${engine}) failed: ${e.message.split('\n')[0].slice(0, 160)}` }));
    }
    if (!b) continue;
    const e = maxAbs(a, b);
    if (!(e < 1e-3)) throw new Error(`${name}: onnxruntime-web (${engine}) differs from ours by ${e}`);
    err = Math.max(err ?? 0, e);
    c[engine] = () => run(feeds);
  }
  if (T > 1) c[`ours ${T}t`] = ours(T, oursCall);
  if (rx) {
    const e = maxAbs(a, oursCall(rx));
    if (!(e < 1e-3)) throw new Error(`${name}: the relaxed build differs from the SIMD128 build by ${e}`);
    c['rx 1t'] = ours(1, oursCall, rx);
    if (T > 1) c[`rx ${T}t`] = ours(T, oursCall, rx);
  }
  emit(name, await interleaveAsync(c, { samples: SAMPLES, minMs: MIN_MS, gapMs: GAP_MS }), { err });
  for (const run of Object.values(orts)) await run.release();
}

const ex = lib[Symbol.for('attention-wasm.exports')];
for (const N of [256, 512]) {
  const a = rnd(N * N, 1), b = rnd(N * N, 2);
  const run = await session(buildModel({ inputs: { A: [N, N], B: [N, N] }, outputs: { C: [N, N] },
    nodes: [{ op: 'MatMul', inputs: ['A', 'B'], outputs: ['C'] }] }));
  await compare(`matmul ${N}^3`, (l) => l.kernels.matmul(a, b, { M: N, N, K: N }), { ort: run }, { A: [a, [N, N]], B: [b, [N, N]] });
  if (T > 1) { // the kernel alone, on buffers already in the heap: the call's copies and checks run on one thread
    const [pa, pb, pc] = [a, b, a].map((x) => ex.malloc(x.length * 4));
    new Float32Array(lib.memory.buffer, pa, a.length).set(a);
    new Float32Array(lib.memory.buffer, pb, b.length).set(b);
    const kern = () => ex.aw_bench_matmul(pc, pa, pb, N, N, N, 0, 1);
    emit(`matmul ${N}^3 kernel only`, await interleaveAsync({ 'ours 1t': ours(1, kern), [`ours ${T}t`]: ours(T, kern) },
      { samples: SAMPLES, minMs: MIN_MS, gapMs: GAP_MS }));
    for (const p of [pa, pb, pc]) ex.free(p);
  }
}
for (const heads of [1, 8]) for (const n of [512, 1024, 2048, 4096]) {
  const d = 64 * heads, q = rnd(n * d, 3), k = rnd(n * d, 4), v = rnd(n * d, 5);
  // ort: its fused MultiHeadAttention (the tiled flash attention of its wasm), [1, n, d] inputs
  const run = await session(buildModel({ inputs: { Q: [1, n, d], K: [1, n, d], V: [1, n, d] }, outputs: { O: [1, n, d] },
    nodes: [{ op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: ['Q', 'K', 'V'], outputs: ['O'],
      attrs: { num_heads: heads, scale: { float: 1 / 8 } } }] }));
  // ort ops: the plain graph, per head (Reshape to [1, n, H, 64], Transpose to heads first, batched MatMuls)
  const ops = await session(buildModel({ inputs: { Q: [1, n, d], K: [1, n, d], V: [1, n, d] }, outputs: { O: [1, n, d] },
    initializers: { shape: [[4], [1, n, heads, 64], 'int64'], back: [[3], [1, n, d], 'int64'], scale: [[], [1 / 8]] },
    nodes: [
      { op: 'Reshape', inputs: ['Q', 'shape'], outputs: ['Q4'] }, { op: 'Reshape', inputs: ['K', 'shape'], outputs: ['K4'] },
      { op: 'Reshape', inputs: ['V', 'shape'], outputs: ['V4'] },
      { op: 'Transpose', inputs: ['Q4'], outputs: ['Qh'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Transpose', inputs: ['K4'], outputs: ['KT'], attrs: { perm: [0, 2, 3, 1] } },
      { op: 'Transpose', inputs: ['V4'], outputs: ['Vh'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'MatMul', inputs: ['Qh', 'KT'], outputs: ['S'] }, { op: 'Mul', inputs: ['S', 'scale'], outputs: ['Ss'] },
      { op: 'Softmax', inputs: ['Ss'], outputs: ['P'], attrs: { axis: -1 } }, { op: 'MatMul', inputs: ['P', 'Vh'], outputs: ['Oh'] },
      { op: 'Transpose', inputs: ['Oh'], outputs: ['O4'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Reshape', inputs: ['O4', 'back'], outputs: ['O'] },
    ] }));
  await compare(`softmax attention n=${n} heads=${heads} (d=${d})`, (l) => l.softmaxAttention({ q, k, v, n, d, heads }).output,
    { ort: run, 'ort ops': ops }, { Q: [q, [1, n, d]], K: [k, [1, n, d]], V: [v, [1, n, d]] });
}
// ours only: linear attention and a training step, 1 against T threads
if (T > 1) {
  for (const n of [1024, 4096]) {
    const d = 256, heads = 4, q = rnd(n * d, 6), k = rnd(n * d, 7), v = rnd(n * d, 8);
    const call = () => lib.linearAttention({ q, k, v, n, d, heads, causal: true }).output;
    emit(`linear attention causal n=${n} heads=4 (d=256)`, await interleaveAsync({ 'ours 1t': ours(1, call), [`ours ${T}t`]: ours(T, call) },
      { samples: SAMPLES, minMs: MIN_MS, gapMs: GAP_MS }));
  }
  for (const n of [1024, 4096]) { // one head: the causal chunks split into segments
    const d = 64, q = rnd(n * d, 6), k = rnd(n * d, 7), v = rnd(n * d, 8);
    const call = () => lib.linearAttention({ q, k, v, n, d, heads: 1, causal: true }).output;
    emit(`linear attention causal n=${n} heads=1 (d=64)`, await interleaveAsync({ 'ours 1t': ours(1, call), [`ours ${T}t`]: ours(T, call) },
      { samples: SAMPLES, minMs: MIN_MS, gapMs: GAP_MS }));
  }
  for (const variant of ['dense', 'random']) { // the Synthesizer over its heads
    const n = 512, d = 256, heads = 8, layer = lib.createSynthesizer({ variant, d, maxLen: n, heads, seed: 1 });
    const x = rnd(n * d, 9), v = rnd(n * d, 10);
    const call = () => layer.forward({ x, v, n }).output;
    emit(`synthesizer ${variant} n=${n} heads=${heads} (d=${d})`, await interleaveAsync({ 'ours 1t': ours(1, call), [`ours ${T}t`]: ours(T, call) },
      { samples: SAMPLES, minMs: MIN_MS, gapMs: GAP_MS }));
    layer.dispose();
  }
  for (const [dModel, batch] of [[64, 32], [128, 32]]) {
    const m = lib.createModel({ vocab: 16, dModel, heads: 4, layers: 2, maxLen: 32, seed: 1 });
    const call = () => m.trainStep({ task: 'reverse', length: 16, symbols: 10, batchSize: batch });
    emit(`training step C=${dModel} B=${batch} T=32`, await interleaveAsync({ 'ours 1t': ours(1, call), [`ours ${T}t`]: ours(T, call) },
      { samples: Math.min(SAMPLES, 11), minMs: MIN_MS, gapMs: GAP_MS }));
    m.dispose();
  }
}
process.exit(0);
