// safety.test.js: the findings of independent checks through the documented API (issue 10: 1-7;
// the second check: F1-F9 and the doubled prefix of item 11), each as a test that gets a clear Error or the right answer, with the library and every
// other live object still working afterwards. "Still working" is checked the same way each
// time: a bystander model created before the bad call gives the same logits after it, and the
// bytes the allocator holds (heapInUse, not the heap size, which never shrinks) return to what
// they were once the objects of the test are disposed.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { builds, expectError, poisonEmbedding, linearAttentionF64, maxErr, rand, softmaxAttentionF64, TOL } from './helpers.js';

// A small model whose logits must not change while the library is abused around it.
function bystander(lib) {
  const m = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 1, maxLen: 20, seed: 4 });
  const logits = m.forward([1, 2, 3]).logits;
  return { still: () => assert.deepEqual(m.forward([1, 2, 3]).logits, logits, 'a bystander model changed'), dispose: () => m.dispose() };
}

// A safetensors file whose __metadata__ holds `meta` and no tensors.
function checkpointBytes(meta) {
  const header = new TextEncoder().encode(JSON.stringify({ __metadata__: meta }));
  const bytes = new Uint8Array(8 + header.length);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(header.length), true);
  bytes.set(header, 8);
  return bytes;
}

for (const { name, lib } of builds) {
  test(`${name}: 1. encoder-decoder backward with a target shorter than the source stays in bounds`, () => {
    const before = lib.heapInUse();
    const b = bystander(lib);
    for (const attention of ['softmax', 'synth:random', 'synth:dense', 'linear:elu+1']) {
      const m = lib.createModel({ vocab: 21, dModel: 64, heads: 4, layers: 2, maxLen: 40, arch: 'encoder-decoder', attention });
      m.trainStep({ task: 'recall', batchSize: 2 }); // recall: 17 source positions, 1 target
      const other = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 1, maxLen: 20 });
      for (let i = 0; i < 20; i++) m.trainStep({ task: 'recall', batchSize: 2 });
      assert.equal(other.forward([1, 2, 3]).logits.length, 3 * 11);
      const g = m.gradientCheck({ length: 1, sourceLength: 30 });
      assert.ok(g.worstTensorError <= TOL.grad_check_tensor, `${attention}: ${g.worstTensor} ${g.worstTensorError}`);
      other.dispose();
      m.dispose();
    }
    b.still();
    b.dispose();
    assert.equal(lib.heapInUse(), before, 'every byte is returned after dispose()');
  });

  test(`${name}: 2. sizes that overflow 32 bits are clear Errors, before anything is written`, () => {
    const b = bystander(lib);
    expectError(() => lib.createModel({ vocab: 2 ** 20, dModel: 4096, heads: 1, layers: 2, dFF: 7159, maxLen: 2 }),
      /createModel: the model is too large: its parameters and optimizer state do not fit in this build's 32-bit address space/);
    const meta = { format: 'attention-wasm-model', version: '1', vocab: String(2 ** 20), d_model: '4096', heads: '1',
      layers: '2', d_ff: '7159', max_len: '2', attention: 'softmax', positional: 'sinusoidal', norm: 'pre', arch: 'decoder',
      seed: '1', step: '0' };
    const small = checkpointBytes(meta);
    assert.ok(small.length < 400, `${small.length} bytes`);
    expectError(() => lib.loadModel(small), /loadModel: the checkpoint holds 0 bytes of tensors, fewer than its config needs/);
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 40 });
    let big = null;
    try { // 13613 x 33 positions: it fits in 2 GiB or it is an out-of-memory Error; never a trap
      big = m.trainStep({ task: 'reverse', batchSize: 13613 });
    } catch (e) {
      assert.match(e.message, /trainStep: (out of memory|a batch of 13613)/);
    }
    if (big) assert.ok(Number.isFinite(big.loss));
    const r = m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 }); // the model still works
    assert.ok(Number.isFinite(r.loss));
    m.dispose();
    const q = new Float32Array(65536), v = new Float32Array(16384);
    expectError(() => lib.linearAttention({ q, k: q, v, n: 1, d: 65536, dv: 16384 }), /linearAttention: out of memory: the workspace/);
    expectError(() => lib.linearAttentionState({ d: 65536, dv: 16384 }), /linearAttentionState: the state needs heads x D x dv\/heads floats/);
    b.still();
    b.dispose();
  });

  test(`${name}: 2b. a state that cannot be made leaves nothing for a finalizer to trap on (Node exits 0)`, () => {
    const script = `
      import { loadAttention } from ${JSON.stringify(new URL('../../wasm/index.js', import.meta.url).href)};
      const lib = await loadAttention({ simd: ${name === 'simd'} });
      for (let i = 0; i < 3; i++) try { lib.linearAttentionState({ d: 65536, dv: 16384 }); } catch {}
      for (let i = 0; i < 50; i++) lib.linearAttentionState({ d: 8, dv: 8 }); // forgotten: collected later
      for (let i = 0; i < 50; i++) lib.createModel({ vocab: 8, dModel: 8, heads: 2, layers: 1, maxLen: 8 });
      global.gc(); await new Promise((r) => setTimeout(r, 50)); global.gc(); await new Promise((r) => setTimeout(r, 50));
      console.log('in use', lib.heapInUse());`;
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const inUse = Number(/in use (\d+)/.exec(r.stdout)[1]);
    assert.ok(inUse < 64 * 1024, `forgotten states and models are freed when collected (${inUse} bytes still held)`);
  });

  test(`${name}: 3. softmax whose logits overflow float32 gives the right answer on both paths`, () => {
    const n = 5, d = 4, scale = 0.5;
    const q = rand(n * d, 1, -1, 1).map((x) => x * 1e20), k = rand(n * d, 2, -1, 1).map((x) => x * 1e20);
    const v = rand(n * d, 3, -1, 1);
    const want = softmaxAttentionF64({ q, k, v, n, d, scale, causal: true });
    for (const returnWeights of [false, true]) {
      const got = lib.softmaxAttention({ q, k, v, n, d, scale, causal: true, returnWeights });
      assert.ok(got.output.every(Number.isFinite), 'finite');
      assert.ok(maxErr(got.output, want.output) <= TOL.attention, `returnWeights ${returnWeights}: ${maxErr(got.output, want.output)}`);
      if (returnWeights) assert.ok(maxErr(got.weights, want.weights) <= TOL.attention);
    }
    const big = new Float32Array(n * d).fill(3e38); // every output is a mean of 3e38s: 3e38, not Infinity
    const out = lib.softmaxAttention({ q: rand(n * d, 4), k: rand(n * d, 5), v: big, n, d }).output;
    assert.ok(out.every((x) => Math.abs(x - 3e38) <= 3e38 * 1e-6), `got ${out[0]}`);
  });

  test(`${name}: 5. NaN parameters, overflowing task sizes and inputs that alias the heap`, () => {
    const b = bystander(lib);
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 40 });
    expectError(() => m.trainStep({ task: 'reverse', symbols: 2 ** 31 - 1 }), /trainStep: symbols must be an integer in \[0, 1048576\], got 2147483647/);
    expectError(() => m.trainStep({ task: 'reverse', symbols: 2 ** 32 + 5 }), /symbols must be an integer in \[0, 1048576\], got 4294967301/);
    expectError(() => m.example({ task: 'copy', symbols: 2 ** 20 }), /example: task "copy": symbols must be in \[2, 1048575\], got 1048576/);
    expectError(() => m.example({ task: 'copy', length: 3, symbols: 2 ** 32 + 5 }), /symbols must be an integer/);
    const ex = m.example({ task: 'copy', length: 3, symbols: 11 });
    assert.ok(ex.target.every((t) => t >= 0 && t < 12));
    // an input array that is itself a view into the library's wasm memory
    const alias = new Int32Array(lib.memory.buffer, 64, 3);
    const keep = alias.slice();
    alias.set([1, 2, 3]);
    assert.equal(m.forward(alias).logits.length, 3 * 12);
    alias.set(keep);
    const qv = new Float32Array(lib.memory.buffer, 1024, 8);
    assert.equal(lib.softmaxAttention({ q: qv, k: qv, v: qv, n: 2, d: 4 }).output.length, 8);
    // NaN weights: forward says so (as evaluate, generate and trainStep do) instead of NaN logits
    // (a file holding them is refused at load: the model diverges in memory here)
    const nan = lib.loadModel(m.save());
    poisonEmbedding(lib, nan);
    expectError(() => nan.forward([1, 2, 3]), /forward: the model's parameters hold NaN or Infinity \(in wte\): they have diverged/);
    expectError(() => nan.generate([1, 2, 3]), /generate: .*(diverged|not finite)/);
    nan.dispose();
    m.dispose();
    b.still();
    b.dispose();
  });

  test(`${name}: 6. taylor, causal: a key at similarity 0 gives the same row in every mode; weights are >= 0`, () => {
    const d = 4, n = 3;
    const q = Float32Array.from([0.3, -0.2, 0.5, 0.1, 0.7, 0.1, -0.4, 0.2, -0.1, 0.6, 0.2, -0.3]);
    const k = q.slice();
    for (let c = 0; c < d; c++) k[c] = -q[c]; // k0 = -q0: sim(q0, k0) = 1 + cos = 0
    const v = rand(n * d, 9, -1, 1);
    const outs = ['parallel', 'recurrent'].map((mode) => lib.linearAttention({ q, k, v, n, d, feature: 'taylor', causal: true, mode }).output);
    const ref = lib.linearAttention({ q, k, v, n, d, feature: 'taylor', causal: true, reference: true }).output;
    const state = lib.linearAttentionState({ d, dv: d, feature: 'taylor' });
    const stepped = new Float32Array(n * d);
    for (let i = 0; i < n; i++) stepped.set(state.step(q.subarray(i * d, (i + 1) * d), k.subarray(i * d, (i + 1) * d), v.subarray(i * d, (i + 1) * d)), i * d);
    state.dispose();
    for (const o of [...outs, stepped]) {
      assert.ok(maxErr(o, ref) <= TOL.linear_causal_forms, `max diff ${maxErr(o, ref)}`);
      assert.deepEqual([...o.subarray(0, d)], [0, 0, 0, 0], 'the only key has similarity 0: a zero row');
    }
    for (let seed = 1; seed <= 20; seed++) {
      const w = lib.linearAttention({ q: rand(16 * 8, seed), k: rand(16 * 8, seed + 99), v: rand(16 * 8, 3), n: 16, d: 8,
        feature: 'taylor', causal: seed % 2 === 0, returnWeights: true }).weights;
      assert.ok(w.every((x) => x >= 0), `a negative weight (seed ${seed}): ${Math.min(...w)}`);
    }
  });

  test(`${name}: 7. the whole-model gradient check fails on a 10% error in any single tensor's gradient`, (t) => {
    for (const [attention, tensor] of [['synth:dense', 'dec.0.self.synth.b2'], ['softmax', 'dec.1.ffn.w1'], ['linear:elu+1', 'dec.0.self.wq']]) {
      const m = lib.createModel({ vocab: 7, dModel: 8, heads: 2, layers: 2, dFF: 12, maxLen: 8, seed: 5, attention });
      const clean = m.gradientCheck();
      const bad = m.gradientCheck({ mutate: { tensor, factor: 1.1 } });
      t.diagnostic(`${attention}: clean worst ${clean.worstTensorError.toExponential(2)} (${clean.worstTensor}); ${tensor} x 1.1 -> ` +
        `${bad.worstTensorError.toExponential(2)} (${bad.worstTensor}); bound ${TOL.grad_check_tensor}`);
      assert.ok(clean.worstTensorError <= TOL.grad_check_tensor);
      assert.equal(bad.worstTensor, tensor);
      assert.ok(bad.worstTensorError > TOL.grad_check_tensor);
      m.dispose();
    }
  });

  test(`${name}: leaks are measured in bytes in use: 2000 calls of every kind hold nothing afterwards`, () => {
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 16 });
    m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 }); // activations reserved once
    const q = rand(8 * 8, 1);
    const before = lib.heapInUse();
    for (let i = 0; i < 2000; i++) {
      lib.softmaxAttention({ q, k: q, v: q, n: 8, d: 8, returnWeights: i % 2 === 0 });
      lib.linearAttention({ q, k: q, v: q, n: 8, d: 8, causal: i % 2 === 0 });
      if (i % 20 === 0) {
        m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 });
        m.forward([1, 2, 3]);
        m.generate([1, 2], { maxTokens: 3 });
        try { m.trainStep({ task: 'reverse', length: 30 }); } catch {} // a failing call frees what it took
        lib.createModel({ vocab: 8, dModel: 8, heads: 2, layers: 1, maxLen: 8 }).dispose();
      }
    }
    assert.equal(lib.heapInUse(), before, 'bytes in use after 2000 rounds');
    m.dispose();
  });

  test(`${name}: F1. a Linformer maxLen whose E and F cannot fit is an Error naming maxLen, before any allocation`, () => {
    const b = bystander(lib);
    const q = rand(64, 1), heap = lib.heapBytes();
    expectError(() => lib.linformer({ q, k: q, v: q, n: 8, d: 8, maxLen: 2 ** 28, proj: 64 }),
      /linformer: maxLen = 268435456 with proj = 64 needs E and F of proj\*maxLen = 17179869184 floats each .* more than the 2048 MiB wasm heap/);
    expectError(() => lib.linformer({ q, k: q, v: q, n: 8, d: 8, maxLen: 2 ** 20, proj: 2 ** 10 }), /linformer: maxLen = 1048576 with proj = 1024/);
    assert.equal(lib.heapBytes(), heap, 'nothing was allocated');
    assert.equal(lib.linformer({ q, k: q, v: q, n: 8, d: 8, proj: 4 }).output.length, 64, 'still works');
    b.still();
    b.dispose();
  });

  test(`${name}: F2. a checkpoint with negative or non-finite AdamW moments is refused; a NaN model is not saved`, () => {
    const b = bystander(lib);
    const before = lib.heapInUse();
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 40 });
    m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 });
    const bytes = m.save({ optimizer: true });
    const hlen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen)));
    const poke = (prefix, value) => { // every value of the tensors whose name starts with prefix
      const out = bytes.slice(), view = new DataView(out.buffer);
      for (const [key, e] of Object.entries(header))
        if (key.startsWith(prefix)) for (let i = e.data_offsets[0]; i < e.data_offsets[1]; i += 4) view.setFloat32(8 + hlen + i, value, true);
      return out;
    };
    expectError(() => lib.loadModel(poke('optim.v.', -1)), /loadModel: the checkpoint's optimizer state optim\.v\.wte holds -1: AdamW's second moments must be finite and >= 0/);
    expectError(() => lib.loadModel(poke('optim.v.dec.0.ffn.w1', Infinity)), /optim\.v\.dec\.0\.ffn\.w1 holds inf: AdamW's second moments/);
    expectError(() => lib.loadModel(poke('optim.m.lnf.b', NaN)), /optim\.m\.lnf\.b holds nan: AdamW's first moments must be finite/);
    const good = lib.loadModel(bytes); // the untouched file still loads and trains
    assert.ok(Number.isFinite(good.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4 }).loss));
    good.dispose();
    // a file holding NaN parameters is refused at load, by the tensor's name
    expectError(() => lib.loadModel(poke('dec.0.ffn.w2', NaN)), /loadModel: the checkpoint's tensor dec\.0\.ffn\.w2 holds nan: a model's parameters must be finite/);
    // and a model whose parameters became NaN is not written out again
    const nan = lib.loadModel(bytes);
    poisonEmbedding(lib, nan);
    expectError(() => nan.save(), /save: the model's parameters hold NaN or Infinity \(in wte\): a diverged model is not saved/);
    expectError(() => nan.save({ optimizer: true }), /in wte/);
    nan.dispose();
    m.dispose();
    b.still();
    b.dispose();
    assert.ok(lib.heapInUse() <= before, 'every byte is returned (objects of earlier tests may be collected meanwhile)');
  });

  test(`${name}: F3. a window wider than the sequence is causal softmax, sized by the keys (not the window)`, () => {
    const n = 8, d = 8, q = rand(n * d, 1), k = rand(n * d, 2), v = rand(n * d, 3);
    const want = softmaxAttentionF64({ q, k, v, n, d, causal: true }).output;
    const exact = lib.localAttention({ q, k, v, n, d, window: n }).output;
    const heap = lib.heapBytes();
    for (const window of [n + 1, 1e8, 1e9, 2 ** 31 - 1])
      for (const returnWeights of [false, true]) {
        const got = lib.localAttention({ q, k, v, n, d, window, returnWeights }).output;
        assert.deepEqual(got, exact, `window ${window}: the same numbers as window = n`);
        assert.ok(maxErr(got, want) <= TOL.attention, `window ${window}: ${maxErr(got, want)}`);
      }
    assert.deepEqual(lib.localAttention({ q, k, v, n, d, window: 1e9, stride: 3 }).output, exact, 'with a stride too');
    assert.deepEqual(lib.localAttention({ q, k, v, n, d, window: 1e9, causal: false }).output,
      lib.localAttention({ q, k, v, n, d, window: 2 * n, causal: false }).output, 'centred: every key');
    assert.ok(lib.heapBytes() - heap <= 1 << 20, `the heap grew by ${lib.heapBytes() - heap} bytes`);
  });

  test(`${name}: F4. elu+1 features that underflow float32 still give the normalised answer (no zeroed rows)`, () => {
    const one = lib.linearAttention({ q: Float32Array.of(-100), k: Float32Array.of(-100, -1), v: Float32Array.of(1, 2), n: 1, m: 2, d: 1 });
    assert.ok(Math.abs(one.output[0] - 2) <= 1e-6, `got ${one.output[0]}`);
    for (const [lo, hi] of [[-1, 1], [0, 1]]) // both signs, and every coordinate negative
      for (const { n, d, heads } of [{ n: 50, d: 16, heads: 2 }, { n: 130, d: 8, heads: 1 }, { n: 20, d: 32, heads: 4 }]) {
        const q = rand(n * d, 11, lo, hi).map((x) => -200 * x), k = rand(n * d, 12, lo, hi).map((x) => -200 * x), v = rand(n * d, 13);
        const dh = d / heads;
        for (const causal of [false, true]) {
          const want = linearAttentionF64({ q, k, v, n, d, heads, causal });
          const outs = { parallel: lib.linearAttention({ q, k, v, n, d, heads, causal, returnWeights: true }) };
          if (causal) {
            outs.recurrent = lib.linearAttention({ q, k, v, n, d, heads, causal, mode: 'recurrent' });
            const st = lib.linearAttentionState({ d, dv: d, heads });
            const stepped = new Float32Array(n * d);
            for (let i = 0; i < n; i++) stepped.set(st.step(q.subarray(i * d, i * d + d), k.subarray(i * d, i * d + d), v.subarray(i * d, i * d + d)), i * d);
            st.dispose();
            outs.state = { output: stepped };
          }
          for (const [form, got] of Object.entries(outs)) {
            const label = `[${lo}, ${hi}) x -200, n ${n}, heads ${heads}, causal ${causal}, ${form}`;
            for (let i = 0; i < n; i++)
              for (let h = 0; h < heads; h++)
                assert.ok(got.output.subarray(i * d + h * dh, i * d + (h + 1) * dh).some((x) => x !== 0), `${label}: row ${i} head ${h} is zero`);
            assert.ok(maxErr(got.output, want.output) <= TOL.attention, `${label}: ${maxErr(got.output, want.output)}`);
            if (got.weights) assert.ok(maxErr(got.weights, want.weights) <= TOL.attention, `${label}: weights`);
          }
        }
      }
    // in a model: the elu+1 gradient check still passes with such inputs' shifts in play
    const m = lib.createModel({ vocab: 7, dModel: 8, heads: 2, layers: 2, dFF: 12, maxLen: 8, seed: 5, attention: 'linear:elu+1' });
    assert.ok(m.gradientCheck().worstTensorError <= TOL.grad_check_tensor);
    m.dispose();
  });

  test(`${name}: F5. a target outside [0, vocab), -1 included, is an Error naming row and column; so is an all-masked batch`, () => {
    const m = lib.createModel({ vocab: 5, dModel: 8, heads: 2, layers: 1, maxLen: 8 });
    for (const call of ['trainStep', 'evaluate']) {
      expectError(() => m[call]({ inputs: [[1, 2, 3]], targets: [[1, -1, 3]] }), new RegExp(`${call}: targets\\[0\\]\\[1\\] is -1, outside the vocabulary \\[0, 5\\)`));
      expectError(() => m[call]({ inputs: [[1, 2, 3], [1, 2, 3]], targets: [[1, 2, 3], [0, 4, 5]] }), /targets\[1\]\[2\] is 5, outside the vocabulary/);
      expectError(() => m[call]({ inputs: [[1, 2, 3]], targets: [[-1, -1, -1]] }), /targets\[0\]\[0\] is -1/);
      expectError(() => m[call]({ inputs: [[1, 2, 3]], targets: [[1, 2, 3]], mask: [[0, 0, 0]] }), new RegExp(`${call}: mask leaves no position in the loss`));
    }
    const steps = m.steps;
    const masked = m.evaluate({ inputs: [[1, 2, 3]], targets: [[1, 0, 3]], mask: [[1, 0, 1]] });
    assert.equal(masked.tokens, 2, 'the mask is how a position is left out');
    assert.equal(m.evaluate({ inputs: [[1, 2, 3]], targets: [[1, 4, 3]], mask: [[1, 0, 1]] }).loss, masked.loss, 'a masked target does not count');
    assert.equal(m.steps, steps, 'refused steps took no step');
    m.dispose();
  });

  test(`${name}: F6. createModel options the GRU archs do not read are Errors naming the option and the arch`, () => {
    const base = { vocab: 9, dModel: 8, maxLen: 8 };
    for (const arch of ['gru', 'gru-attention'])
      for (const [key, value] of [['attention', 'linear:elu+1'], ['heads', 2], ['positional', 'learned'], ['norm', 'post'], ['dFF', 16],
        ['attentionOptions', { window: 4 }]]) {
        const shown = key === 'attentionOptions' ? 'attentionOptions.window' : key;
        expectError(() => lib.createModel({ ...base, arch, [key]: value }), new RegExp(`createModel: ${shown.replace('.', '\\.')} does not apply to arch "${arch}"`));
      }
    const m = lib.createModel({ ...base, arch: 'gru', layers: 1, seed: 3 }); // what it reads is fine
    assert.equal(m.config.arch, 'gru');
    m.dispose();
  });

  test(`${name}: F7. Linformer's seed is checked as createSynthesizer's; every seed gives its own E and F`, () => {
    const n = 8, d = 8, q = rand(n * d, 1), k = rand(n * d, 2), v = rand(n * d, 3);
    for (const seed of ['x', 1.5, 2 ** 32, -1, NaN, null])
      expectError(() => lib.linformer({ q, k, v, n, d, proj: 4, seed }), /linformer: seed must be an integer in \[0, 2\^32 - 1\], got /);
    const out = (seed) => [...lib.linformer({ q, k, v, n, d, proj: 4, seed }).output];
    const seen = new Set([0, 1, 2, 2 ** 32 - 1].map((seed) => JSON.stringify(out(seed))));
    assert.equal(seen.size, 4, 'seeds 0, 1, 2 and 2^32 - 1 differ');
    assert.deepEqual(out(0), out(0));
    expectError(() => lib.linformer({ q, k, v, n, d, proj: 4, seed: 2, E: new Float32Array(32), F: new Float32Array(32) }), /linformer: seed seeds the default E and F/);
  });

  test(`${name}: F8. retention's chunk needs mode 'chunked'; setThreads above the threads started is an Error`, () => {
    const n = 8, d = 8, q = rand(n * d, 1);
    for (const mode of ['parallel', 'recurrent'])
      expectError(() => lib.retention({ q, k: q, v: q, n, d, mode, chunk: 3 }), new RegExp(`retention: chunk = 3 applies to mode 'chunked' only \\(mode is '${mode}'\\)`));
    assert.deepEqual(lib.retention({ q, k: q, v: q, n, d, mode: 'chunked', chunk: 3 }).output.length, n * d);
    expectError(() => lib.setThreads(3), /setThreads: n = 3 is more than the 1 thread asked for at load; n must be in \[1, 1\]: load with \{ threads: 3 \}/);
    assert.equal(lib.setThreads(1), 1);
  });

  test(`${name}: F9. messages: Linformer names maxLen, a numeric version, charsTokenizer.decode, generate on NaN, lr divergence`, () => {
    const n = 8, d = 8, q = rand(n * d, 1);
    expectError(() => lib.linformer({ q, k: q, v: q, n, d, maxLen: 4, proj: 4 }), /linformer: n = 8 is longer than maxLen = 4/);
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 40 });
    const bytes = m.save();
    const hlen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen)));
    header.__metadata__.version = 2;
    const h2 = new TextEncoder().encode(JSON.stringify(header));
    const numeric = new Uint8Array(8 + h2.length + bytes.length - 8 - hlen);
    new DataView(numeric.buffer).setBigUint64(0, BigInt(h2.length), true);
    numeric.set(h2, 8), numeric.set(bytes.subarray(8 + hlen), 8 + h2.length);
    expectError(() => lib.loadModel(numeric), /loadModel: the checkpoint's __metadata__ "version" must be a JSON string .*"version": "2"/);
    // charsTokenizer.decode rejects what charTokenizer().decode rejects, in the same words
    for (const [i, bad] of [[0, -1], [1, 1e9], [2, NaN]].map(([i, x]) => [i, x])) {
      const ids = [1, 1, 1];
      ids[i] = bad;
      expectError(() => lib.charsTokenizer.decode(ids), new RegExp(`charsTokenizer\\.decode: ids\\[${i}\\] is ${bad}, outside \\[0, ${lib.charsTokenizer.vocab}\\)`));
    }
    // generate on a NaN model says what forward says (one of its own seed: poisonEmbedding fills
    // every copy of its table, and m keeps training below)
    const nan = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 40, seed: 99 });
    poisonEmbedding(lib, nan);
    const said = /the model's parameters hold NaN or Infinity \(in wte\): they have diverged/;
    expectError(() => nan.forward([1, 2, 3]), said);
    expectError(() => nan.generate([1, 2, 3]), said);
    expectError(() => nan.generate([1, 2, 3], { cache: false }), said);
    nan.dispose();
    // lr 1e30: the next step says the training diverged and names lr
    m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4, lr: 1e30 });
    expectError(() => m.trainStep({ task: 'reverse', length: 3, symbols: 6, batchSize: 4, lr: 1e30 }), /trainStep: the training diverged at lr = 1e\+30/);
    expectError(() => m.trainStep({ inputs: [[1, 2, 3]], targets: [[2, 3, 4]], lr: 1e30 }), /trainStep: the training diverged at lr = 1e\+30/);
    m.dispose();
  });

  test(`${name}: 11. no message repeats its prefix ("name: name:")`, () => {
    const q = rand(64, 1);
    const calls = [
      () => lib.linformer({ q, k: q, v: q, n: 8, d: 8, causal: true }),
      () => lib.linformer({ q, k: q, v: q, n: 8, d: 8, maxLen: 4 }),
      () => lib.retention({ q, k: q, v: q, n: 8, d: 8, chunk: 2 }),
      () => lib.localAttention({ q, k: q, v: q, n: 8, d: 8, window: 2, scale: 1e38 }),
      () => lib.linearAttention({ q, k: q, v: q, n: 8, d: 8, feature: 'efficient', causal: true }),
      () => lib.softmaxAttention({ q, k: q, v: q, n: 8, d: 8, heads: 3 }),
      () => lib.createSynthesizer({ variant: 'dense', d: 8, maxLen: 4 }).forward({ x: rand(80, 2), n: 10 }),
      () => lib.createModel({ vocab: 1 }),
      () => lib.loadModel(new Uint8Array(4)),
    ];
    let thrown = 0;
    for (const call of calls) {
      try { call(); } catch (e) {
        thrown++;
        const prefixes = e.message.replace(/^attention-wasm: /, '').split(': ');
        for (let i = 1; i < prefixes.length; i++)
          assert.notEqual(prefixes[i].toLowerCase(), prefixes[i - 1].toLowerCase(), `a doubled prefix: ${e.message}`);
      }
    }
    assert.ok(thrown >= calls.length - 1, `${thrown} of ${calls.length} calls threw`);
  });
}
