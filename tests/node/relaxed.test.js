// relaxed.test.js: the relaxed-SIMD builds (attention-relaxed.wasm, attention-threads-relaxed.wasm:
// aw_madd is the fused f32x4.relaxed_madd). Node 20 validates relaxed SIMD only behind
// --experimental-wasm-relaxed-simd, so without it this file checks the fallback and the Errors,
// then runs itself again in a child process with the flag. With it: the loader picks the relaxed
// build; its results match the float64 reference and the SIMD128 build within the tolerance table;
// it really fuses (somewhere the bits differ from SIMD128's); and it is bit-identical at 1, 2 and 4
// threads, single-thread build included. (The CI also runs the whole node suite with the flag.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAttention, relaxedSupported, simdSupported } from '../../wasm/index.js';
import { TOL, expectClose, rand } from './helpers.js';

const FLAG = '--experimental-wasm-relaxed-simd';
const bitSame = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

if (!relaxedSupported()) {
  test('without relaxed SIMD: auto loads SIMD128, relaxed: true is an Error naming the flag', async () => {
    assert.ok(simdSupported());
    const lib = await loadAttention();
    assert.equal(lib.relaxed, false);
    assert.equal(lib.simd, true);
    await assert.rejects(loadAttention({ relaxed: true }), /relaxed is true but this engine does not validate WebAssembly relaxed SIMD \(Node 20 needs --experimental-wasm-relaxed-simd/);
    const t = await loadAttention({ threads: 2 });
    assert.equal(t.relaxed, false);
  });

  test(`the relaxed build passes this file in a child process with ${FLAG}`, { timeout: 600_000 }, () => {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT; // a test runner of its own in the child, reporting as TAP
    const r = spawnSync(process.execPath, [FLAG, '--test', '--test-reporter=tap', fileURLToPath(import.meta.url)], { encoding: 'utf8', env });
    const summary = (r.stdout.match(/^# (pass|fail) \d+$/gm) ?? []).join(', ');
    assert.equal(r.status, 0, `child failed (${summary}):\n${r.stdout.split('\n').filter((l) => /not ok|error|Error/.test(l)).slice(0, 20).join('\n')}`);
    assert.match(r.stdout, /^# fail 0$/m);
    assert.doesNotMatch(r.stdout, /^# pass 0$/m);
  });
} else {
  const rx = await loadAttention();
  const simd = await loadAttention({ relaxed: false });
  const rx4 = await loadAttention({ threads: 4 });

  test('auto picks the relaxed build where the engine validates it; false keeps SIMD128', () => {
    assert.equal(rx.relaxed, true);
    assert.equal(rx.simd, true);
    assert.equal(simd.relaxed, false);
    assert.equal(rx4.relaxed, true);
    assert.equal(rx4.threads, 4, rx4.threadsReason ?? '');
  });

  test('bad relaxed options are Errors that say what was expected', async () => {
    await assert.rejects(loadAttention({ relaxed: 'yes' }), /loadAttention: relaxed must be one of "auto", true, false, got "yes"/);
    await assert.rejects(loadAttention({ relaxed: true, simd: false }), /relaxed: true needs SIMD, but simd is false/);
    await assert.rejects(loadAttention({ relaxed: true, wasm: new URL('../../wasm/attention.wasm', import.meta.url) }),
      /relaxed: true and wasm cannot both be given/);
  });

  test('matmul: the relaxed kernel matches the float64 reference and SIMD128, and really fuses', (t) => {
    let differs = 0;
    for (const [M, N, K] of [[1, 1, 1], [4, 8, 16], [37, 53, 29], [64, 64, 64], [200, 130, 300], [513, 65, 257]]) {
      const a = rand(M * K, M + 1), b = rand(K * N, N + 2), bt = rand(N * K, N + 3), at = rand(K * M, M + 4);
      for (const [x, y, opts] of [[a, b, {}], [a, bt, { transB: true }], [at, b, { transA: true }]]) {
        const o = { M, N, K, ...opts };
        const r = rx.kernels.matmul(x, y, o), s = simd.kernels.matmul(x, y, o);
        expectClose(t, `${M}x${N}x${K} ${JSON.stringify(opts)} vs reference`, r, rx.kernels.matmul(x, y, { ...o, reference: true }), TOL.matmul);
        expectClose(t, `${M}x${N}x${K} vs SIMD128`, r, s, TOL.relaxed_vs_simd);
        differs += r.some((v, i) => !Object.is(v, s[i]));
      }
    }
    // one rounding per multiply-add instead of two: somewhere the last bits must differ
    assert.ok(differs > 0, 'the relaxed build gives the SIMD128 build\'s bits everywhere: relaxed_madd is not in use');
  });

  test('every form: relaxed within tolerance of SIMD128, and bit-identical at 1, 2 and 4 threads', (t) => {
    const n = 70, d = 16, heads = 2;
    for (const [fi, form] of rx.forms.entries()) {
      const causal = form.causal && !form.nonCausal ? true : false;
      const m = form.cross ? 50 : n;
      const shape = { n, m, d, heads, causal, maxLen: Math.max(n, m), seed: 3 + fi };
      const data = { q: rand(n * d, 10 + fi), k: rand(m * d, 20 + fi), v: rand(m * d, 30 + fi), x: rand(n * d, 40 + fi) };
      const one = rx.attention(form.name, { ...shape, ...data }).output;
      expectClose(t, `${form.name} relaxed vs SIMD128`, one, simd.attention(form.name, { ...shape, ...data }).output, TOL.relaxed_vs_simd);
      for (const th of [1, 2, 4]) {
        rx4.setThreads(th);
        assert.ok(bitSame(rx4.attention(form.name, { ...shape, ...data }).output, one),
          `${form.name}: ${th} thread(s) of the threaded relaxed build differ from the single-thread relaxed build`);
      }
    }
    rx4.setThreads(4);
  });

  test('a training curve is bit-identical at 1, 2 and 4 threads and close to the SIMD128 one', () => {
    const curve = (lib, th) => {
      if (th) lib.setThreads(th);
      const m = lib.createModel({ vocab: 16, dModel: 32, heads: 4, layers: 2, maxLen: 24, seed: 5 });
      const losses = [];
      for (let i = 0; i < 12; i++) losses.push(m.trainStep({ task: 'reverse', length: 8, symbols: 10, batchSize: 8 }).loss);
      m.dispose();
      return losses;
    };
    const base = curve(rx);
    for (const th of [1, 2, 4]) assert.deepEqual(curve(rx4, th), base, `${th} thread(s)`);
    rx4.setThreads(4);
    const other = curve(simd);
    for (let i = 0; i < base.length; i++)
      assert.ok(Math.abs(base[i] - other[i]) <= 1e-3 * Math.abs(other[i]), `step ${i}: relaxed ${base[i]}, SIMD128 ${other[i]}`);
  });
}
