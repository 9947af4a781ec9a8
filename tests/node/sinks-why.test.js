// sinks-why.test.js: why "window + 4 sinks" reads the page's default text better than "recompute"
// (issue 45, 3i: 2.169 against 2.328 bits per character past a window of 32 on web/models/stream-text.txt).
// Not a bug: the sinks cache reads about as a fresh forward over what it holds (the first 4 tokens and
// the last 28; not to the bit, as a cached token's keys in the upper layers were computed when it came,
// with the context it had then), and the reference lacks what this model was trained with:
// web/models/fortunes-bos.safetensors always read after a start token 0, which recomputing the last
// 32 characters drops and the sinks keep. Recomputing with the start token put back first reads
// better than recomputing without it, as well as the sinks or better.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';

const file = (p) => readFileSync(new URL(`../../web/models/${p}`, import.meta.url));

test('the sinks beat recomputing because recomputing drops the start token, not by a bug', async (t) => {
  const lib = await loadAttention();
  const m = lib.loadModel(new Uint8Array(file('fortunes-bos.safetensors')), { training: false });
  const text = file('stream-text.txt').toString('utf8').slice(0, 1200); // past the window many times over
  const tokens = Int32Array.from([0, ...lib.charsTokenizer.encode(text)]);
  const W = 32, S = 4, V = m.config.vocab;
  const bits = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length / Math.LN2;
  const nll = (logits, row, target) => {
    let mx = -Infinity, s = 0;
    for (let j = 0; j < V; j++) mx = Math.max(mx, logits[row * V + j]);
    for (let j = 0; j < V; j++) s += Math.exp(logits[row * V + j] - mx);
    return Math.log(s) + mx - logits[row * V + target];
  };
  const past = (xs) => Array.from(xs).slice(W); // positions whose reading evicts
  const sinks = past(m.streamLosses(tokens, { window: W, sinks: S }));
  const recompute = past(m.streamLosses(tokens, { window: W, recompute: true }));
  const held = [], withStart = [];
  for (let p = W; p + 1 < tokens.length; p++) {
    // what the sinks cache holds at position p: the first S tokens and the last W - S
    const cache = [...tokens.subarray(0, S), ...tokens.subarray(p + 1 - (W - S), p + 1)];
    held.push(nll(m.forward(cache).logits, cache.length - 1, tokens[p + 1]));
    // recomputing with the start token first: 0, then the last W - 1 characters
    const fresh = [0, ...tokens.subarray(p + 1 - (W - 1), p + 1)];
    withStart.push(nll(m.forward(fresh).logits, fresh.length - 1, tokens[p + 1]));
  }
  t.diagnostic(`bits per character past the window: sinks ${bits(sinks).toFixed(3)}, recompute ${bits(recompute).toFixed(3)}, `
    + `recompute after a start token ${bits(withStart).toFixed(3)}, a fresh forward over what the sinks cache holds ${bits(held).toFixed(3)}`);
  assert.ok(Math.abs(bits(held) - bits(sinks)) < 0.02, 'the sinks cache reads about as a fresh forward over what it holds');
  assert.ok(bits(sinks) < bits(recompute), 'on this text the sinks read better than recomputing');
  assert.ok(bits(withStart) < bits(recompute) - 0.05, 'putting the start token back is what recomputing lacks');
  assert.ok(bits(withStart) <= bits(sinks) + 0.02, 'with it, recomputing reads as well as the sinks');
});
