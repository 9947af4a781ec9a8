// first-contact.test.js: the entry points an independent check broke (issue 32): a layer's step
// taken out of order (it trapped, or returned the heap's old contents), and options accepted in
// silence (a chunk past its range, a null taken for the default, ropeTheta without rotary positions, kvHeads
// on a form without keys, topK past the vocabulary, a window past int32). Each is now an Error
// naming the argument and what it takes, and the library works after it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError, rand } from './helpers.js';

const n = 8, d = 8;
const rows = (seed) => ({ q: rand(n * d, seed), k: rand(n * d, seed + 1), v: rand(n * d, seed + 2) });
const row = (x, i) => x.subarray(i * d, (i + 1) * d);
const stepData = (data, i) => ({ q: row(data.q, i), k: row(data.k, i), v: row(data.v, i) });

for (const { name, lib } of builds) {
  const stepping = lib.forms.filter((f) => f.causal && f.step);

  test(`attentionLayer.step [${name}]: a position out of order is an Error naming the one expected, for every form with a step`, () => {
    assert.ok(stepping.length >= 10, `forms with a step: ${stepping.map((f) => f.name).join(', ')}`);
    const data = rows(3);
    for (const f of stepping) {
      const layer = lib.attentionLayer(f.name, { n, d, causal: true });
      try {
        const heap = lib.heapBytes();
        // a fresh layer: step 3 before 0..2 (a trap for linear:*, the heap's old contents for the rest)
        expectError(() => layer.step(3, stepData(data, 3)), /step: .*pos 3 is out of order: the next position is 0/);
        assert.ok(lib.heapBytes() - heap <= 64 * 1024, `${f.name}: the refused step left ${lib.heapBytes() - heap} bytes`);
        // in order: the same rows as the full forward
        const full = layer.forward(data).output;
        const out = [];
        for (let i = 0; i < 4; i++) out.push(...layer.step(i, stepData(data, i)));
        for (const [i, x] of out.entries()) {
          assert.ok(Number.isFinite(x), `${f.name}: step output ${i} is ${x}`);
          assert.ok(Math.abs(x - full[i]) <= 1e-4 * (1 + Math.abs(full[i])), `${f.name}: step ${i >> 3} differs from the forward`);
        }
        // 0, 1, 2, 3 taken: 5 skips 4, 3 repeats, 2 goes back
        for (const pos of [5, 3, 2])
          expectError(() => layer.step(pos, stepData(data, pos)), new RegExp(`pos ${pos} is out of order: the next position is 4`));
        // the layer works after the refusals: 4 follows, and pos 0 starts again with the same numbers
        const four = layer.step(4, stepData(data, 4));
        assert.ok(four.every((x, j) => Math.abs(x - full[4 * d + j]) <= 1e-4 * (1 + Math.abs(full[4 * d + j]))), `${f.name}: step 4`);
        const again = layer.step(0, stepData(data, 0));
        assert.deepEqual([...again], out.slice(0, d), `${f.name}: pos 0 starts a new sequence`);
      } finally {
        layer.dispose();
      }
    }
  });

  test(`silent acceptances [${name}]: chunk past [1, 4096], null options, ropeTheta without rope, kvHeads without keys`, () => {
    const { q, k, v } = rows(7);
    const beta = new Float32Array(n).fill(0.5), gates = new Float32Array(n).fill(0.9);
    expectError(() => lib.deltaRule({ q, k, v, n, d, beta, chunk: 4097 }), /deltaRule: chunk must be an integer in \[1, 4096\], got 4097/);
    expectError(() => lib.gatedLinearAttention({ q, k, v, n, d, gates, chunk: 4097 }), /gatedLinearAttention: chunk must be an integer in \[1, 4096\], got 4097/);
    expectError(() => lib.gla({ q, k, v, n, d, gates: new Float32Array(n * d).fill(0.9), chunk: 4097 }), /gla: chunk must be an integer in \[1, 4096\], got 4097/);
    expectError(() => lib.retention({ q, k, v, n, d, causal: true, mode: 'chunked', chunk: 4097 }), /retention: chunk must be an integer in \[1, 4096\], got 4097/);
    expectError(() => lib.attention('delta', { n, d, causal: true, q, k, v, attentionOptions: { chunk: 4097 } }), /attentionOptions\.chunk must be an integer in \[1, 4096\], got 4097/);
    // null is not a way to ask for the default: it reaches the option's own check
    for (const [call, message] of [
      [() => lib.linearAttention({ q, k, v, n, d, causal: true, mode: null }), /linearAttention: mode must be one of "parallel", "recurrent", got null/],
      [() => lib.retention({ q, k, v, n, d, causal: true, mode: null }), /retention: mode must be one of .*, got null/],
      [() => lib.deltaRule({ q, k, v, n, d, beta, mode: null }), /deltaRule: mode must be one of "recurrent", "chunked", got null/],
      [() => lib.softmaxAttention({ q, k, v, n, d, scale: null }), /softmaxAttention: scale must be a finite number, got null/],
      [() => lib.attention('softmax', { n, d, q, k, v, heads: null }), /heads must be a positive integer, got null/],
      [() => lib.createModel({ vocab: 8, dModel: 8, heads: 1, layers: 1, maxLen: 16, positional: null }), /createModel: positional must be a string, got null/],
    ]) expectError(call, message);
    const small = { vocab: 8, dModel: 8, heads: 2, layers: 1, maxLen: 16 };
    expectError(() => lib.createModel({ ...small, ropeTheta: 500 }), /ropeTheta applies to positional "rope" only, and this model's positions are "sinusoidal"/);
    expectError(() => lib.createModel({ ...small, positional: 'alibi', ropeTheta: 500 }), /ropeTheta applies to positional "rope" only, and this model's positions are "alibi"/);
    lib.createModel({ ...small, positional: 'rope', ropeTheta: 500 }).dispose(); // where it is read, it is taken
    lib.createModel({ ...small, block: 'llama', ropeTheta: 500 }).dispose(); // the llama block's own rotary positions
    for (const f of lib.forms.filter((x) => x.family === 'synthesizer' && !x.usesQK))
      expectError(() => lib.createModel({ ...small, attention: f.name, kvHeads: 1 }), new RegExp(`kvHeads \\(1\\) applies to forms that read queries and keys.*"${f.name.replace(/[+]/g, '\\+')}" reads no keys`));
    lib.createModel({ ...small, attention: 'synth:dense', kvHeads: 2 }).dispose(); // one K/V head per query head: plain attention
    // the library works after every refusal
    assert.ok(lib.deltaRule({ q, k, v, n, d, beta, chunk: 4096 }).output.every(Number.isFinite));
  });

  test(`generate and streamLosses [${name}]: topK past the vocabulary and windows out of range are named`, () => {
    const m = lib.createModel({ vocab: 12, dModel: 8, heads: 2, layers: 1, maxLen: 16, positional: 'rope' });
    try {
      expectError(() => m.generate([1, 2], { maxTokens: 3, topK: 13, temperature: 1 }), /generate: topK must be an integer in \[0, vocab = 12\] \(0 = all\), got 13/);
      expectError(() => m.generate([1, 2], { maxTokens: 3, topK: 13, window: 8 }), /generate: topK must be an integer in \[0, vocab = 12\]/);
      const tokens = Int32Array.from({ length: 40 }, (_, i) => (i * 7) % 12);
      for (const window of [-1, 0, 17, 1e12, 2 ** 31]) {
        const range = new RegExp(`window must be an integer in \\[1, maxLen = 16\\], got ${window}`);
        expectError(() => m.generate([1, 2], { maxTokens: 3, window }), new RegExp(`generate: ${range.source}`));
        expectError(() => m.streamLosses(tokens, { window }), new RegExp(`streamLosses: ${range.source}`));
      }
      expectError(() => m.generate([1, 2], { maxTokens: 3, window: 8, sinks: -1 }), /generate: sinks must be an integer >= 0, got -1/);
      // within the ranges both run, after every refusal
      assert.equal(m.generate([1, 2], { maxTokens: 30, topK: 12, temperature: 1, window: 8, sinks: 1 }).length, 30);
      assert.equal(m.streamLosses(tokens, { window: 8 }).length, tokens.length - 1);
    } finally {
      m.dispose();
    }
  });
}
