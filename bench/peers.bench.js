// peers.bench.js: attention-wasm against onnxruntime-web (wasm backend) and TensorFlow.js
// (tfjs-core + tfjs-backend-wasm, XNNPACK), one thread each, in one Node process, engines
// interleaved round-robin. `node bench/run.js peers` (or `npm run bench`).
//
// Every engine's output is checked against ours (max abs error printed) before it is timed.
// What a call costs, per engine:
//   ours       the public API: argument checks, malloc, copy inputs into the wasm heap, compute,
//              copy the result out, free (lib.kernels.matmul, lib.softmaxAttention,
//              lib.linearAttention, model.trainStep)
//   ours kern  matmul only: the kernel on buffers already in wasm memory (src/api/api_bench.c)
//   relaxed    the same two for the relaxed-SIMD build (fused multiply-add), where the engine runs it
//   tfjs       tf.tensor from the Float32Arrays (copy in), the ops, dataSync (copy out), dispose
//   tfjs res   matmul only: the op on tensors already resident in the backend (no copies)
//   ort        new ort.Tensor for each input, session.run (copies in and out), in-memory ONNX model
// Environment: BENCH_SAMPLES (default 25) rounds per case, BENCH_MIN_MS (default 15) per sample,
// BENCH_SECTIONS (default matmul,attention,training) to run only some sections.
// The peers are devDependencies, so their modules are imported in run(), where a missing
// package becomes a one-line note instead of a crash of the whole `npm run bench`.
import v8 from 'node:v8';
import { measureClockGHz } from './peers/clock.js';
import { loadRaw } from './peers/raw.js';
import { interleaveAsync } from './peers/timing.js';

let buildModel, ortSession, loadTfjs, reverseBatch, tfjsTinyTransformer;

// Every wasm function compiled from here on goes straight to TurboFan. With V8's default
// (Liftoff first, TurboFan later on a background thread), on this busy 2-core machine one engine
// now and then stayed on its Liftoff code for a whole section, 2-4x slower (tfjs twice and
// onnxruntime-web once in ~12 runs); with the flag, no such run was seen. Our library is
// compiled before this line (by bench/run.js), so if anything the flag favours the peers.
v8.setFlagsFromString('--no-liftoff');

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 25);
const MIN_MS = Number(process.env.BENCH_MIN_MS ?? 15);
const SECTIONS = (process.env.BENCH_SECTIONS ?? 'matmul,attention,training').split(',');
const PEAK_FLOP_PER_CYCLE = 16; // 4 f32 lanes x (2 mul + 2 add pipes, or 2 FMA pipes): the nominal SIMD128 peak

// A build's measured multiply-add peak in GFLOP/s (src/api/api_bench.c aw_bench_peak: 12
// independent chains through the build's own aw_madd), best of 7 samples of >= 20 ms.
function measuredPeak(exports) {
  if (!exports?.aw_bench_peak) return null;
  const iters = 200000;
  exports.aw_bench_peak(iters);
  let best = Infinity;
  for (let s = 0; s < 7; s++) {
    let calls = 0;
    const t0 = performance.now();
    let t;
    do exports.aw_bench_peak(iters), calls++;
    while ((t = performance.now() - t0) < 20);
    best = Math.min(best, t / calls);
  }
  return (12 * 4 * 2 * iters) / (best * 1e6);
}

const maxAbs = (a, b) => {
  if (a.length !== b.length) return Infinity;
  let e = 0;
  for (let i = 0; i < a.length; i++) e = Math.max(e, Math.abs(a[i] - b[i]));
  return e;
};
const ms = (t) => `${t.median.toFixed(3)} [${t.min.toFixed(3)}-${t.max.toFixed(3)}]`;
// Speed-up as "ratio of medians (ratio of minimums)": on a shared machine the minimum is the
// run least disturbed by other processes, so the second number is the steadier of the two.
const ratio = (peer, ours) => `${(peer.median / ours.median).toFixed(2)}x (${(peer.min / ours.min).toFixed(2)}x)`;

export default async function run(ctx) {
  try {
    ({ buildModel, ortSession } = await import('./peers/onnx.js'));
    ({ loadTfjs } = await import('./peers/tfjs.js'));
    ({ reverseBatch, tfjsTinyTransformer } = await import('./peers/tfjs_model.js'));
  } catch (e) {
    console.log(`skipped: the peer engines are not installed (${e.message.split('\n')[0]}); run npm ci first`);
    return;
  }
  const lib = ctx.simd;
  const { tf, simd: tfSimd, multithread: tfThreads } = await loadTfjs();
  const raw = await loadRaw();
  // the copy-free kernel runs the variant the loader's probe chose for the API instance (a raw
  // instance would otherwise keep variant 0, which on some hosts is not the faster one)
  raw?.exports.aw_matmul_variant(['measured', 'unpacked', 'packed'].indexOf(lib.kernel.variant));
  const clock = await measureClockGHz();
  const peak = clock.ghz * PEAK_FLOP_PER_CYCLE;
  const rx = ctx.relaxed;
  const exportsOf = (l) => l?.[Symbol.for('attention-wasm.exports')];
  const peaks = { simd: measuredPeak(exportsOf(lib)), relaxed: measuredPeak(exportsOf(rx)) };
  console.log(`clock (dependent i32 add/xor chain in wasm, best of ${clock.samples.length}): ${clock.ghz.toFixed(2)} GHz; ` +
    `nominal SIMD128 peak = ${PEAK_FLOP_PER_CYCLE} flop/cycle x clock = ${peak.toFixed(1)} GFLOP/s`);
  const fpc = (g) => (g / clock.ghz).toFixed(1);
  if (peaks.simd) console.log(`measured multiply-add peak on one core (aw_bench_peak): SIMD128 mul + add ${peaks.simd.toFixed(1)} GFLOP/s ` +
    `(${fpc(peaks.simd)} flop/cycle)${peaks.relaxed ? `, relaxed_madd ${peaks.relaxed.toFixed(1)} GFLOP/s (${fpc(peaks.relaxed)} flop/cycle)` : ''}`);
  console.log(`kernel variant (the loader's probe): SIMD128 ${lib.kernel.variant}${rx ? `, relaxed ${rx.kernel.variant}` : ''}`);
  console.log(`engines: ours = attention-wasm (${lib.simd ? 'SIMD128' : 'scalar'}${rx ? '; relaxed = its relaxed-SIMD build' : ''}); tfjs ${tf.version_core} wasm backend ` +
    `(simd ${tfSimd}, multithread ${tfThreads}); onnxruntime-web wasm backend, numThreads 1. ` +
    `${SAMPLES} samples x >= ${MIN_MS} ms each, round-robin; times are ms per call, median [min-max].`);

  if (SECTIONS.includes('matmul')) await matmulSection(ctx, lib, tf, raw, peak, rx, peaks);
  if (SECTIONS.includes('attention')) await attentionSection(ctx, lib, tf, rx);
  if (SECTIONS.includes('training')) await trainingSection(ctx, lib, tf);
}

// ---- matmul ---------------------------------------------------------------------------
async function matmulSection(ctx, lib, tf, raw, peak, rx, peaks) {
  const rxEx = rx?.[Symbol.for('attention-wasm.exports')];
  console.log('\n### matmul C = A B (A: M x K, B: K x N)');
  if (!raw) console.log('(this wasm build has no aw_bench_matmul: the copy-free column is skipped; run bash build.sh wasm)');
  const cases = [[64, 64, 64], [128, 128, 128], [256, 256, 256], [512, 512, 512], [512, 64, 512], [512, 512, 64]];
  const timeRows = [], rateRows = [], errRows = [], peakRows = [];
  for (const [M, K, N] of cases) {
    const label = M === K && K === N ? `${M}^3` : `(${M}x${K})(${K}x${N})`;
    const a = ctx.randomF32(M * K, 11), b = ctx.randomF32(K * N, 12);
    const flop = 2 * M * N * K;
    const ort = await ortSession(buildModel({
      inputs: { A: [M, K], B: [K, N] }, outputs: { C: [M, N] },
      nodes: [{ op: 'MatMul', inputs: ['A', 'B'], outputs: ['C'] }],
    }));
    const feeds = { A: [a, [M, K]], B: [b, [K, N]] };
    const tA = tf.tensor2d(a, [M, K]), tB = tf.tensor2d(b, [K, N]);
    const tfjsCall = () => {
      const x = tf.tensor2d(a, [M, K]), y = tf.tensor2d(b, [K, N]);
      const c = tf.matMul(x, y);
      const out = c.dataSync();
      x.dispose(), y.dispose(), c.dispose();
      return out;
    };
    let pa = 0, pb = 0, pc = 0, ra = 0, rb = 0, rc = 0;
    if (raw) (pa = raw.put(a)), (pb = raw.put(b)), (pc = raw.alloc(M * N));
    if (rxEx) {
      [ra, rb, rc] = [M * K, K * N, M * N].map((len) => rxEx.malloc(len * 4));
      new Float32Array(rx.memory.buffer, ra, M * K).set(a);
      new Float32Array(rx.memory.buffer, rb, K * N).set(b);
    }

    const ours = lib.kernels.matmul(a, b, { M, N, K });
    const ref = lib.kernels.matmul(a, b, { M, N, K, reference: true });
    const tfRes = tf.matMul(tA, tB);
    const errs = {
      'ours vs ref': maxAbs(ours, ref),
      tfjs: maxAbs(tfjsCall(), ours),
      'tfjs res': maxAbs(tfRes.dataSync(), ours),
      ort: maxAbs(await ort(feeds), ours),
    };
    tfRes.dispose();
    if (raw) {
      raw.exports.aw_bench_matmul(pc, pa, pb, M, N, K, 0, 1);
      errs['ours kern'] = maxAbs(raw.read(pc, M * N), ours);
    }
    if (rx) errs.relaxed = maxAbs(rx.kernels.matmul(a, b, { M, N, K }), ref);
    errRows.push([label, ...['ours vs ref', 'ours kern', 'relaxed', 'tfjs', 'tfjs res', 'ort'].map((k) => errs[k]?.toExponential(1) ?? '-')]);

    const contenders = {
      ours: () => lib.kernels.matmul(a, b, { M, N, K }),
      tfjs: tfjsCall,
      ort: () => ort(feeds),
      'tfjs res': () => tf.matMul(tA, tB).dispose(),
    };
    if (raw) contenders['ours kern'] = () => raw.exports.aw_bench_matmul(pc, pa, pb, M, N, K, 0, 1);
    if (rx) {
      contenders.relaxed = () => rx.kernels.matmul(a, b, { M, N, K });
      contenders['relaxed kern'] = () => rxEx.aw_bench_matmul(rc, ra, rb, M, N, K, 0, 1);
    }
    const t = await interleaveAsync(contenders, { samples: SAMPLES, minMs: MIN_MS });
    const gf = (x) => (x ? `${(flop / (x.median * 1e6)).toFixed(1)} (${(flop / (x.min * 1e6)).toFixed(1)})` : '-');
    const pct = (x) => (x ? `${((100 * flop) / (x.median * 1e6) / peak).toFixed(0)}% (${((100 * flop) / (x.min * 1e6) / peak).toFixed(0)}%)` : '-');
    const pctOf = (x, g) => (x && g ? `${((100 * flop) / (x.median * 1e6) / g).toFixed(0)}%` : '-');
    const cell = (k) => (t[k] ? ms(t[k]) : '-');
    timeRows.push([label, ms(t.ours), cell('ours kern'), cell('relaxed'), cell('relaxed kern'), ms(t.tfjs), ms(t['tfjs res']), ms(t.ort)]);
    rateRows.push([label, gf(t.ours), gf(t['ours kern']), gf(t.relaxed), gf(t['relaxed kern']), gf(t.tfjs), gf(t['tfjs res']), gf(t.ort),
      ratio(t.tfjs, t.ours), ratio(t.ort, t.ours), t['ours kern'] ? ratio(t['tfjs res'], t['ours kern']) : '-',
      t.relaxed ? ratio(t.ort, t.relaxed) : '-', t.relaxed ? ratio(t.ours, t.relaxed) : '-']);
    peakRows.push([label, pct(t.ours), pct(t['ours kern']), pct(t.relaxed), pct(t['relaxed kern']),
      pctOf(t['ours kern'], peaks.simd), pctOf(t['relaxed kern'], peaks.relaxed)]);
    tA.dispose(), tB.dispose();
    await ort.session.release();
    if (raw) raw.free(pa), raw.free(pb), raw.free(pc);
    if (rxEx) rxEx.free(ra), rxEx.free(rb), rxEx.free(rc);
  }
  console.log('\nmax abs error against ours (ours vs ref: against the naive double-accumulating reference):');
  ctx.table(['case', 'ours vs ref', 'ours kern', 'relaxed', 'tfjs', 'tfjs res', 'ort'], errRows);
  console.log('\nms per call, median [min-max] (relaxed: the relaxed-SIMD build, API and kernel):');
  ctx.table(['case', 'ours', 'ours kern', 'relaxed', 'relaxed kern', 'tfjs', 'tfjs res', 'ort'], timeRows);
  console.log('\nGFLOP/s and speed-ups (peer time / our time), each as "from the medians (from the minimums)":');
  ctx.table(['case', 'ours', 'ours kern', 'relaxed', 'relaxed kern', 'tfjs', 'tfjs res', 'ort', 'ours/tfjs', 'ours/ort',
    'kern/tfjs res', 'relaxed/ort', 'relaxed/ours'], rateRows);
  console.log('\nshare of the nominal SIMD128 peak (16 flop/cycle x clock), medians (minimums); the last two columns:');
  console.log('each kernel against its own build\'s measured multiply-add peak (medians):');
  ctx.table(['case', 'ours', 'ours kern', 'relaxed', 'relaxed kern', 'kern / mul+add peak', 'relaxed kern / madd peak'], peakRows);
}

// ---- single-head softmax attention forward --------------------------------------------
// Peers are built from their ops the fast way: K^T first, then matmul, scale, softmax, matmul.
async function attentionSection(ctx, lib, tf, rx) {
  const d = 64, scale = 1 / Math.sqrt(d);
  console.log(`\n### softmax attention forward, one head, d = dv = ${d}, n = m (O = softmax(Q K^T / sqrt(d)) V)`);
  const hasLinear = typeof lib.linearAttention === 'function';
  if (!hasLinear) console.log('(lib.linearAttention is not in this build: the linear attention column is skipped)');
  const timeRows = [], ratioRows = [], errRows = [];
  let mhaNote = null;
  for (const n of [128, 256, 512, 1024, 2048]) {
    const q = ctx.randomF32(n * d, 21), k = ctx.randomF32(n * d, 22), v = ctx.randomF32(n * d, 23);
    const ortOps = await ortSession(buildModel({
      inputs: { Q: [n, d], K: [n, d], V: [n, d] }, outputs: { O: [n, d] },
      initializers: { scale: [[], [scale]] },
      nodes: [
        { op: 'Transpose', inputs: ['K'], outputs: ['KT'], attrs: {} },
        { op: 'MatMul', inputs: ['Q', 'KT'], outputs: ['S'] },
        { op: 'Mul', inputs: ['S', 'scale'], outputs: ['Ss'] },
        { op: 'Softmax', inputs: ['Ss'], outputs: ['P'], attrs: { axis: -1 } },
        { op: 'MatMul', inputs: ['P', 'V'], outputs: ['O'] },
      ],
    }));
    let ortMha = null;
    try {
      ortMha = await ortSession(buildModel({
        inputs: { Q: [1, n, d], K: [1, n, d], V: [1, n, d] }, outputs: { O: [1, n, d] },
        nodes: [{ op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: ['Q', 'K', 'V'], outputs: ['O'],
          attrs: { num_heads: 1, scale: { float: scale } } }],
      }));
    } catch (e) {
      mhaNote = `onnxruntime-web's com.microsoft MultiHeadAttention did not run in the wasm backend: ${e.message}`;
    }
    const feeds = { Q: [q, [n, d]], K: [k, [n, d]], V: [v, [n, d]] };
    const feeds3 = { Q: [q, [1, n, d]], K: [k, [1, n, d]], V: [v, [1, n, d]] };
    const tfjsCall = () => {
      const Q = tf.tensor2d(q, [n, d]), K = tf.tensor2d(k, [n, d]), V = tf.tensor2d(v, [n, d]);
      const O = tf.tidy(() => tf.matMul(tf.softmax(tf.mul(tf.matMul(Q, tf.transpose(K)), scale)), V));
      const out = O.dataSync();
      Q.dispose(), K.dispose(), V.dispose(), O.dispose();
      return out;
    };
    const args = { q, k, v, n, d };
    const ours = lib.softmaxAttention(args).output;
    const errs = {
      'stream vs ref': maxAbs(ours, lib.softmaxAttention({ ...args, reference: true }).output),
      weights: maxAbs(lib.softmaxAttention({ ...args, returnWeights: true }).output, ours),
      tfjs: maxAbs(tfjsCall(), ours),
      'ort ops': maxAbs(await ortOps(feeds), ours),
      'ort MHA': ortMha ? maxAbs(await ortMha(feeds3), ours) : null,
    };
    if (rx) errs.relaxed = maxAbs(rx.softmaxAttention(args).output, ours);
    const contenders = {
      stream: () => lib.softmaxAttention(args),
      weights: () => lib.softmaxAttention({ ...args, returnWeights: true }),
      tfjs: tfjsCall,
      'ort ops': () => ortOps(feeds),
    };
    if (ortMha) contenders['ort MHA'] = () => ortMha(feeds3);
    if (rx) contenders.relaxed = () => rx.softmaxAttention(args);
    if (hasLinear) {
      try {
        lib.linearAttention(args);
        contenders.linear = () => lib.linearAttention(args);
      } catch (e) {
        console.log(`(lib.linearAttention(${JSON.stringify(Object.keys(args))}) threw: ${e.message}; skipped)`);
      }
    }
    errRows.push([n, ...['stream vs ref', 'weights', 'relaxed', 'tfjs', 'ort ops', 'ort MHA'].map((c) => errs[c]?.toExponential(1) ?? '-')]);
    const t = await interleaveAsync(contenders, { samples: SAMPLES, minMs: MIN_MS });
    const cell = (c) => (t[c] ? ms(t[c]) : '-');
    timeRows.push([n, cell('stream'), cell('relaxed'), cell('weights'), cell('tfjs'), cell('ort ops'), cell('ort MHA'), cell('linear')]);
    const r = (peer, ourKey) => (t[peer] && t[ourKey] ? ratio(t[peer], t[ourKey]) : '-');
    // the lead over onnxruntime-web is stated against the faster of its two graphs at this n
    const ortBest = t['ort MHA'] && t['ort MHA'].median < t['ort ops'].median ? 'ort MHA' : 'ort ops';
    ratioRows.push([n, r('ort ops', 'stream'), r('ort MHA', 'stream'), `${r(ortBest, 'stream')} ${ortBest.slice(4)}`,
      rx ? `${r(ortBest, 'relaxed')}` : '-', r('tfjs', 'stream'), r('ort ops', 'weights'), r('ort MHA', 'weights'),
      r('tfjs', 'weights'), r('stream', 'linear')]);
    await ortOps.session.release();
    if (ortMha) await ortMha.session.release();
  }
  if (mhaNote) console.log(mhaNote);
  console.log('\nmax abs error against our streaming output (stream vs ref: against the double-precision reference):');
  ctx.table(['n', 'stream vs ref', 'weights', 'relaxed', 'tfjs', 'ort ops', 'ort MHA'], errRows);
  console.log('\nms per call, median [min-max] (weights: also returns the n x n matrix, copied out of wasm;');
  console.log('relaxed: the streaming call in the relaxed-SIMD build; ort ops: MatMul-Mul-Softmax-MatMul; ort MHA: fused):');
  ctx.table(['n', 'ours stream', 'relaxed stream', 'ours weights', 'tfjs', 'ort ops', 'ort MHA', 'ours linear'], timeRows);
  console.log('\nspeed-ups, peer time / our time, "ratio of medians (ratio of minimums)"; vs best ort: against the');
  console.log('faster onnxruntime-web graph at that n (named), for the SIMD128 and the relaxed build:');
  ctx.table(['n', 'stream/ort ops', 'stream/ort MHA', 'stream vs best ort', 'relaxed vs best ort', 'stream/tfjs',
    'weights/ort ops', 'weights/ort MHA', 'weights/tfjs', 'linear/stream'], ratioRows);
}

// ---- tiny-model training step -----------------------------------------------------------
// The same decoder-only model in both engines (bench/peers/tfjs_model.js mirrors src/model):
// one step = a fresh `reverse` batch, forward, backward, global-norm clip, AdamW. tfjs runs
// twice: with its own autograd (whose MatMul gradient takes the slow transposed matMul paths)
// and with a transpose-first matmul gradient (tf.customGrad), the faster of the two.
async function trainingSection(ctx, lib, tf) {
  console.log('\n### tiny-model training step (decoder-only, pre-norm, softmax attention, task reverse)');
  if (typeof lib.createModel !== 'function') {
    console.log('pending: lib.createModel is not in this build, so there is no training step to compare with tfjs yet.');
    return;
  }
  const hyper = { lr: 3e-3, beta1: 0.9, beta2: 0.98, eps: 1e-8, weightDecay: 0.01, clip: 1 };
  const length = 16, symbols = 10, T = 2 * length; // the decoder sees src, 0, tgt[:-1]
  const rows = [];
  for (const [dModel, heads, layers, batch] of [[64, 4, 2, 16], [64, 4, 2, 64], [128, 4, 2, 32]]) {
    const cfg = { vocab: 16, dModel, heads, layers, dFF: 4 * dModel, maxLen: T, seed: 1 };
    const ours = lib.createModel({ ...cfg, attention: 'softmax' });
    const stock = tfjsTinyTransformer(tf, { ...cfg, T, batch, ...hyper });
    const fast = tfjsTinyTransformer(tf, { ...cfg, T, batch, ...hyper, fastGrad: true });
    let s = 7;
    const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const peerStep = (model) => () => {
      const { tokens, targets } = reverseBatch(batch, length, symbols, rand);
      return model.step(tokens, targets);
    };
    const steps = {
      ours: () => ours.trainStep({ task: 'reverse', batchSize: batch, length, symbols, ...hyper }).loss,
      'tfjs autograd': peerStep(stock),
      'tfjs T-first': peerStep(fast),
    };
    // Before timing: every engine starts near ln(vocab) and learns the same task.
    const first = Object.values(steps).map((f) => f());
    for (let i = 0; i < 40; i++) for (const f of Object.values(steps)) f();
    const last = Object.values(steps).map((f) => f());
    const t = await interleaveAsync(steps, { samples: Math.min(SAMPLES, 11), minMs: MIN_MS, warmup: 1 });
    const best = t['tfjs T-first'].median < t['tfjs autograd'].median ? t['tfjs T-first'] : t['tfjs autograd'];
    rows.push([`C=${dModel} H=${heads} L=${layers} B=${batch} T=${T}`,
      first.map((x, i) => `${x.toFixed(2)}->${last[i].toFixed(2)}`).join(', '),
      ms(t.ours), ms(t['tfjs autograd']), ms(t['tfjs T-first']), ratio(t['tfjs autograd'], t.ours), ratio(best, t.ours)]);
    ours.dispose(), stock.dispose(), fast.dispose();
  }
  console.log(`loss at step 1 -> step 42, ours, tfjs autograd, tfjs T-first (ln vocab = ${Math.log(16).toFixed(2)}); ` +
    'ms per step, median [min-max]; speed-ups "ratio of medians (ratio of minimums)":');
  ctx.table(['model', 'loss 1->42', 'ours', 'tfjs autograd', 'tfjs T-first', 'autograd/ours', 'faster tfjs/ours'], rows);
}
