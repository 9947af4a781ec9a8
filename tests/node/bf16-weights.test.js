// bf16-weights.test.js: loadHuggingFace({ dtype: 'bf16' }) (wasm/huggingface.js; the "bf16" row of
// src/kernels/quant.h, model_create_quantized in src/model/quantize.c, aw_matmul_nn_bf16 / _nt_bf16 in
// src/kernels/matmul.c).
//   - a BF16 file loaded with dtype 'bf16' gives the same logits (forward, bit for bit), greedy tokens
//     (generate) and streamed tokens (startGeneration) as the same file loaded in float32, for GPT-2
//     and Llama-shaped models (tied and untied classifiers, biases, grouped-query heads, sizes that
//     take the GEMVs' threaded, streaming and wide-column paths and their vector tails), on the
//     SIMD128 and scalar builds, with 2 threads, and on the relaxed-SIMD builds in a child process
//   - weightBytes names the format and its bytes; the load grows the wasm memory by less than the
//     float32 load does (fresh instances, measured in the same run)
//   - saveHuggingFace from a bf16 model writes the bytes the float32 load writes (BF16 and F32)
//   - what needs float32 matrices (training, attribution patching, composition scores, quantize, a
//     quantized copy) and bad options are Errors naming the reason; the library works afterwards
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../../wasm/index.js';
import { expectError, runRelaxedChild } from './helpers.js';

// Every case's fp32 and bf16 loads of one BF16 file, compared: self-contained (the relaxed child runs
// it too). Returns { label: { same, logits, tokens } } where same says every comparison held.
function compareLoads(lib) {
  const bitSame = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
  const SMALL = { vocab: 50, dModel: 32, dFF: 64, heads: 4, layers: 2, maxLen: 80, seed: 7 };
  // dModel 128 x dFF 516: 66048 multiply-adds, past the GEMVs' thread cut (2^15) and their streaming
  // order (2^16); 516 columns end in a 4-wide step, vocab 1030 (> 1024: the untied classifier's wide
  // column blocks) in 2 scalar columns
  const WIDE = { vocab: 1030, dModel: 128, dFF: 516, heads: 4, layers: 2, maxLen: 80, seed: 11 };
  const CASES = [
    ['GPT-2 (tied, biases)', { ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }],
    ['Llama (grouped-query, untied)', { ...SMALL, block: 'llama', kvHeads: 2 }],
    ['Llama wide (untied)', { ...WIDE, block: 'llama', kvHeads: 2 }],
    ['Llama wide (tied)', { ...WIDE, block: 'llama', tieEmbeddings: true }],
    ['GPT-2 wide (tied, biases)', { ...WIDE, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }],
  ];
  const out = {};
  for (const [label, opts] of CASES) {
    const made = lib.createModel(opts, { training: false });
    const files = made.saveHuggingFace({ dtype: 'BF16' });
    made.dispose();
    const f32 = lib.loadHuggingFace(files), b16 = lib.loadHuggingFace({ ...files, dtype: 'bf16' });
    // 70 tokens: the batched forward's matmuls cut into row blocks (64) for threads; 9: column blocks
    const ids = Array.from({ length: 70 }, (_, i) => (i * 7 + 3) % opts.vocab);
    const r = { same: true, why: [] };
    const check = (ok, why) => { if (!ok) r.same = false, r.why.push(why); };
    for (const n of [70, 9, 1]) {
      const a = f32.forward(ids.slice(0, n)).logits, b = b16.forward(ids.slice(0, n)).logits;
      check(bitSame(a, b), `forward of ${n} tokens: logits differ`);
    }
    const ga = Array.from(f32.generate([1, 2, 3], { maxTokens: 12 })), gb = Array.from(b16.generate([1, 2, 3], { maxTokens: 12 }));
    check(JSON.stringify(ga) === JSON.stringify(gb), `generate: ${ga} against ${gb}`);
    const sa = Array.from(f32.generate([4, 5], { maxTokens: 10, temperature: 0.9, seed: 5 }));
    const sb = Array.from(b16.generate([4, 5], { maxTokens: 10, temperature: 0.9, seed: 5 }));
    check(JSON.stringify(sa) === JSON.stringify(sb), `generate, sampled: ${sa} against ${sb}`);
    const stream = (m) => {
      const g = m.startGeneration([6, 7, 8], { maxTokens: 9 }), t = [];
      while (!g.done) t.push(...g.next(4));
      g.dispose();
      return t;
    };
    const ta = stream(f32), tb = stream(b16);
    check(JSON.stringify(ta) === JSON.stringify(tb), `startGeneration: ${ta} against ${tb}`);
    r.tokens = gb;
    r.logits = Buffer.from(b16.forward(ids.slice(0, 9)).logits.buffer).toString('hex');
    r.weightBytes = [f32.weightBytes, b16.weightBytes];
    f32.dispose();
    b16.dispose();
    out[label] = r;
  }
  return out;
}

const simd = await loadAttention();
const scalar = await loadAttention({ simd: false });
const threads = await loadAttention({ threads: 2 });

function assertSame(t, name, got) {
  for (const [label, r] of Object.entries(got)) {
    assert.ok(r.same, `${name}, ${label}: ${r.why.join('; ')}`);
    t.diagnostic(`${name}, ${label}: forward (70, 9, 1 tokens), generate, sampled generate and startGeneration identical; ` +
      `bf16 ${r.weightBytes[1].bytes} B against fp32 ${r.weightBytes[0].bytes} B`);
  }
}

test('a bf16 load gives the float32 load\'s logits and tokens, bit for bit: SIMD128, scalar, 2 threads', (t) => {
  const base = compareLoads(simd);
  assertSame(t, 'SIMD128', base);
  const sc = compareLoads(scalar), th = compareLoads(threads);
  assertSame(t, 'scalar', sc);
  assertSame(t, '2 threads', th);
  assert.equal(threads.threads, 2);
  for (const label of Object.keys(base)) // threads split rows: the same bits as one thread of the same build
    assert.equal(th[label].logits, base[label].logits, `${label}: 2 threads' logits differ from 1 thread's`);
  for (const [label, r] of Object.entries(base)) {
    const [f, b] = r.weightBytes;
    assert.equal(f.format, 'fp32');
    assert.deepEqual({ format: b.format, groupSize: b.groupSize, fp32: b.fp32 }, { format: 'bf16', groupSize: 0, fp32: f.fp32 }, label);
    // a tied classifier keeps the float32 embedding (the lookup) beside its BF16 copy
    assert.ok(b.bytes < (label.includes('tied,') || label.includes('(tied') ? 0.9 : 0.6) * f.bytes, `${label}: ${b.bytes} B held against ${f.bytes} B in float32`);
  }
});

test('the relaxed-SIMD builds: a bf16 load equals the float32 load at 1 and 2 threads (a child with --experimental-wasm-relaxed-simd)', { timeout: 600_000 }, () => {
  const index = new URL('../../wasm/index.js', import.meta.url).href;
  const src = `import { loadAttention } from ${JSON.stringify(index)};
    const compareLoads = ${compareLoads.toString()};
    const one = await loadAttention({ relaxed: true }), two = await loadAttention({ relaxed: true, threads: 2 });
    process.stdout.write(JSON.stringify({ relaxed: one.relaxed && two.relaxed, threads: two.threads, one: compareLoads(one), two: compareLoads(two) }));`;
  const r = runRelaxedChild(src, 'aw-bf16-');
  assert.equal(r.status, 0, r.stderr);
  const got = JSON.parse(r.stdout);
  assert.equal(got.relaxed, true, 'the child loaded the relaxed builds');
  assert.equal(got.threads, 2);
  for (const k of ['one', 'two'])
    for (const [label, x] of Object.entries(got[k])) assert.ok(x.same, `relaxed ${k}, ${label}: ${x.why.join('; ')}`);
  for (const label of Object.keys(got.one)) assert.equal(got.two[label].logits, got.one[label].logits, `relaxed ${label}: 2 threads differ`);
});

// The kernels alone (aw_bench_matmul's layouts 3 and 4: aw_matmul_nn_bf16 and _nt_bf16) against the
// float32 kernels given the widened values: every M (one row: the GEMVs; more: the blocked GEMM),
// sizes with every tail, and matrices past the GEMVs' thread and streaming cuts.
function kernelsSame(lib) {
  const ex = lib[Symbol.for('attention-wasm.exports')];
  let seed = 9;
  const rnd = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return (seed / 2 ** 32) * 2 - 1; };
  const bad = [];
  for (const [M, N, K] of [[1, 37, 29], [1, 1030, 70], [1, 516, 128], [1, 96, 700], [1, 2051, 64], [3, 45, 67], [70, 259, 33], [9, 20, 300]]) {
    const a = ex.malloc(M * K * 4), f = ex.malloc(N * K * 4), h = ex.malloc(N * K * 2), c0 = ex.malloc(M * N * 4), c1 = ex.malloc(M * N * 4);
    new Float32Array(lib.memory.buffer, a, M * K).forEach((_, i, v) => { v[i] = rnd(); });
    const hv = new Uint16Array(lib.memory.buffer, h, N * K), fv = new Uint32Array(lib.memory.buffer, f, N * K);
    // finite values of either sign, magnitudes 2^-8 .. 2^4 with every mantissa (the loaders refuse NaN and Infinity)
    for (let i = 0; i < N * K; i++) hv[i] = 0x3b80 + Math.floor((rnd() + 1) * 0x300) + (rnd() < 0 ? 0x8000 : 0), fv[i] = hv[i] << 16;
    for (const nt of [0, 1]) {
      assert.equal(ex.aw_bench_matmul(c0, a, f, M, N, K, nt, 1), 0);
      assert.equal(ex.aw_bench_matmul(c1, a, h, M, N, K, nt + 3, 1), 0);
      const x = new Uint32Array(lib.memory.buffer, c0, M * N), y = new Uint32Array(lib.memory.buffer, c1, M * N);
      if (!x.every((v, i) => v === y[i])) bad.push(`${nt ? 'NT' : 'NN'} M ${M} N ${N} K ${K}`);
    }
    for (const p of [a, f, h, c0, c1]) ex.free(p);
  }
  return bad;
}

test('the BF16 kernels equal the float32 kernels on the widened values, bit for bit, on every build', () => {
  for (const [name, l] of [['SIMD128', simd], ['scalar', scalar], ['2 threads', threads]])
    assert.deepEqual(kernelsSame(l), [], `${name}: products that differ`);
});

const LLAMA = { vocab: 256, dModel: 256, dFF: 1024, heads: 4, layers: 4, maxLen: 64, block: 'llama', seed: 3 };

test('a bf16 load grows the wasm memory by well under the float32 load', async (t) => {
  const made = simd.createModel(LLAMA, { training: false });
  const files = made.saveHuggingFace({ dtype: 'BF16' });
  made.dispose();
  const grown = async (opts) => { // a fresh instance each time: wasm memory never shrinks
    const fresh = await loadAttention();
    const before = fresh.memory.buffer.byteLength;
    const m = fresh.loadHuggingFace({ ...files, ...opts });
    const r = { grown: fresh.memory.buffer.byteLength - before, weights: m.weightBytes };
    m.dispose();
    return r;
  };
  const fp32 = await grown({}), bf16 = await grown({ dtype: 'bf16' });
  t.diagnostic(`wasm memory grown: fp32 load ${fp32.grown} B (weights ${fp32.weights.bytes} B), bf16 load ${bf16.grown} B ` +
    `(weights ${bf16.weights.bytes} B, ${(bf16.grown / fp32.grown).toFixed(2)}x)`);
  assert.equal(bf16.weights.format, 'bf16');
  assert.equal(bf16.weights.fp32, fp32.weights.bytes);
  assert.ok(bf16.weights.bytes < 0.6 * fp32.weights.bytes, `weights: ${bf16.weights.bytes} B against ${fp32.weights.bytes} B`);
  assert.ok(bf16.grown < 0.75 * fp32.grown, `grown: ${bf16.grown} B against ${fp32.grown} B`);
});

test('saveHuggingFace from a bf16 model writes what the float32 load writes', () => {
  for (const opts of [LLAMA, { ...LLAMA, tieEmbeddings: true, kvHeads: 2 }, { ...LLAMA, block: undefined, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }]) {
    const made = simd.createModel(opts, { training: false });
    const files = made.saveHuggingFace({ dtype: 'BF16' });
    made.dispose();
    const f32 = simd.loadHuggingFace(files), b16 = simd.loadHuggingFace({ ...files, dtype: 'bf16' });
    for (const dtype of ['BF16', 'F32']) {
      const a = f32.saveHuggingFace({ dtype }), b = b16.saveHuggingFace({ dtype });
      assert.deepEqual(b.config, a.config);
      assert.ok(Buffer.from(a.weights).equals(Buffer.from(b.weights)), `${dtype}: the saved weights differ`);
    }
    assert.ok(Buffer.from(b16.saveHuggingFace({ dtype: 'BF16' }).weights).equals(Buffer.from(files.weights)), 'BF16 round trip');
    f32.dispose();
    b16.dispose();
  }
});

test('what needs float32 matrices refuses a bf16 model, naming why; bad options are Errors', async () => {
  const made = simd.createModel({ ...LLAMA, layers: 2 }, { training: false });
  const files = made.saveHuggingFace({ dtype: 'BF16' });
  made.dispose();
  expectError(() => simd.loadHuggingFace({ ...files, dtype: 'bf16', training: true }), /loadHuggingFace: dtype "bf16" needs training: false/);
  expectError(() => simd.loadHuggingFace({ ...files, dtype: 'bf16', quantize: 'q8_0' }), /loadHuggingFace: dtype "bf16" and quantize "q8_0" both choose/);
  expectError(() => simd.loadHuggingFace({ ...files, dtype: 'f16' }), /loadHuggingFace: dtype must be "fp32" or "bf16", got "f16"/);
  expectError(() => simd.loadHuggingFace({ ...files, dtype: 'bf16', groupSize: 32 }), /groupSize goes with quantize/);
  const m = simd.loadHuggingFace({ ...files, dtype: 'bf16' });
  const bf16Why = /keeps its matrices in bf16 \(loaded with dtype: 'bf16'.*load it again with dtype: 'fp32'/;
  const batch = { inputs: [[1, 2, 3, 4]], targets: [[2, 3, 4, 5]] };
  expectError(() => m.trainStep(batch), bf16Why);
  expectError(() => m.attributionPatching([1, 2, 3, 4], [1, 2, 9, 4], { metric: { target: 5 } }), /attributionPatching: its backward needs the float32 weights, and this model keeps its matrices in bf16/);
  expectError(() => m.compositionScores(), bf16Why);
  expectError(() => m.quantize('q8_0'), /quantize: this model is already quantized to bf16/);
  const fp = simd.loadHuggingFace(files);
  expectError(() => fp.quantize('bf16'), /quantize: "bf16" is not a quantization of a loaded model.*dtype: 'bf16'/);
  await assert.rejects(fp.quantizedCopy('bf16'), /quantizedCopy: "bf16" is not a quantized format here/);
  // still a working model, and a working library
  assert.deepEqual(Array.from(m.generate([1, 2], { maxTokens: 4 })), Array.from(fp.generate([1, 2], { maxTokens: 4 })));
  m.dispose();
  fp.dispose();
});
