// stream.test.js: reading and generating past maxLen with a rolling KV cache (attention sinks,
// src/model/stream.c). Within the window every mode equals the model's full forward; past it the
// three modes (window only, window + sinks, recomputing) stay finite and differ as they must;
// generation runs far past maxLen; and the Errors name what streaming needs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError } from './helpers.js';

const V = 20;
const nll = (row, t) => {
  let mx = -Infinity;
  for (const x of row) mx = Math.max(mx, x);
  let s = 0;
  for (const x of row) s += Math.exp(x - mx);
  return Math.log(s) + mx - row[t];
};

for (const { name, lib } of builds) {
  test(`stream [${name}]: within the window every mode is the full forward; past it they stay finite`, () => {
    for (const extra of [{ kvHeads: 2 }, { positional: 'none' }, { kvHeads: 1, tieEmbeddings: true }, { positional: 'alibi', kvHeads: 2 }]) {
      const m = lib.createModel({ vocab: V, dModel: 16, heads: 4, layers: 2, maxLen: 16, block: 'llama', seed: 3, ...extra });
      const row = Array.from({ length: 16 }, (_, i) => 1 + i);
      for (let s = 0; s < 20; s++) m.trainStep({ inputs: [row.slice(0, 15)], targets: [row.slice(1)], lr: 0.01 });
      const toks = Array.from({ length: 64 }, (_, i) => 1 + ((i * 7) % (V - 1)));
      const logits = m.forward(toks.slice(0, 16)).logits;
      const ref = Array.from({ length: 15 }, (_, i) => nll(logits.subarray(i * V, (i + 1) * V), toks[i + 1]));
      for (const opts of [{ window: 16 }, { window: 16, sinks: 4 }, { window: 16, recompute: true }]) {
        const got = m.streamLosses(toks.slice(0, 16), opts);
        const err = Math.max(...ref.map((x, i) => Math.abs(x - got[i])));
        assert.ok(err < 2e-5, `${JSON.stringify(extra)} ${JSON.stringify(opts)}: ${err}`);
      }
      // recomputing at position t is the full forward of the last `window` tokens
      const t = 40, w = 8;
      const rc = m.streamLosses(toks, { window: w, recompute: true });
      const last = m.forward(toks.slice(t + 1 - w, t + 1)).logits;
      assert.ok(Math.abs(rc[t] - nll(last.subarray((w - 1) * V, w * V), toks[t + 1])) < 2e-5);
      const win = m.streamLosses(toks, { window: w }), sink = m.streamLosses(toks, { window: w, sinks: 2 });
      assert.equal(win.length, 63);
      for (const xs of [win, sink, rc]) assert.ok(xs.every(Number.isFinite));
      assert.deepEqual([...win.slice(0, w - 1)], [...sink.slice(0, w - 1)], 'nothing is evicted before the window fills');
      assert.notDeepEqual([...win.slice(w)], [...sink.slice(w)], 'after it, keeping the first tokens changes the reading');
      // generation far past maxLen, deterministic
      const g1 = m.generate([1, 2, 3], { maxTokens: 60, window: 8, sinks: 2, temperature: 1, seed: 4 });
      const g2 = m.generate([1, 2, 3], { maxTokens: 60, window: 8, sinks: 2, temperature: 1, seed: 4 });
      assert.equal(g1.length, 60);
      assert.deepEqual([...g1], [...g2]);
      // within the window, streaming generation is the cached generation
      assert.deepEqual([...m.generate([1, 2, 3], { maxTokens: 10, window: 16 })], [...m.generate([1, 2, 3], { maxTokens: 10 })]);
      m.dispose();
    }
  });

  test(`stream [${name}]: Errors name what streaming needs`, () => {
    const m = lib.createModel({ vocab: V, dModel: 16, heads: 4, maxLen: 16, block: 'llama' });
    expectError(() => m.streamLosses([1, 2, 3], { window: 17 }), /window must be an integer in \[1, maxLen = 16\], got 17/);
    expectError(() => m.streamLosses([1, 2, 3], { window: 8, sinks: 8 }), /sinks must be below window \(8\), got 8/);
    expectError(() => m.streamLosses([1], { window: 8 }), /at least 2 ids/);
    expectError(() => m.streamLosses([1, 25], { window: 8 }), /tokens\[1\] is 25, outside the vocabulary \[0, 20\)/);
    expectError(() => m.streamLosses([1, 2], { window: 8, sinks: 2, recompute: true }), /recompute .* keeps no sinks/);
    expectError(() => m.generate([1], { sinks: 2 }), /sinks needs a window/);
    expectError(() => m.generate([1], { window: 8, cache: false }), /do not go with cache: false/);
    const learned = lib.createModel({ vocab: V, dModel: 16, heads: 4, maxLen: 16, positional: 'learned' });
    expectError(() => learned.streamLosses([1, 2, 3], { window: 8 }), /needs positional "rope", "alibi" or "none" \(this model adds learned positions/);
    learned.dispose();
    const lin = lib.createModel({ vocab: V, dModel: 16, heads: 4, maxLen: 16, block: 'llama', attention: 'linear:elu+1' });
    expectError(() => lin.generate([1], { window: 8 }), /needs a decoder-only model with attention "softmax"/);
    lin.dispose();
    assert.ok(m.streamLosses([1, 2, 3], { window: 8 }).every(Number.isFinite), 'still usable');
    m.dispose();
  });
}
