// sink-measure.mjs: what scripts/sink-claims.mjs measures on each model, shared with its test
// (tests/node/sink-claims.test.js recomputes the shipped models' figures with the same code).
import { readFileSync } from 'node:fs';
import { backcopyStream, backcopyText } from '../lab/backcopy.js';
import { firstTokenWeight as weightOn } from '../lab/heads.js';
import { fortunesDocuments } from './fortunes.mjs';

// the held-out documents, split once for both helpers below
let held = null;
const heldDocuments = () => (held ??= fortunesDocuments().held);

/** The texts read past the window, each a token 0 and then `chars` characters: held-out fortunes as
 * the trainer joins documents, and the attention-sinks panel's default text (prose, no breaks). */
export function sinkTexts(lib, chars) {
  const enc = (s) => lib.charsTokenizer.encode(s);
  return [
    { id: 'fortunes', label: 'held-out fortunes', tokens: Int32Array.from([0, ...enc(heldDocuments().map((d) => `${d}\n\n`).join('').slice(0, chars))]) },
    { id: 'prose', label: "the panel's default text (prose, no document breaks)",
      tokens: Int32Array.from([0, ...enc(readFileSync(new URL('../web/models/stream-text.txt', import.meta.url), 'utf8').slice(0, chars))]) },
  ];
}

/** Document starts: a token 0 and the first maxLen - 1 characters of the first `count` held-out documents that long. */
export function documentStarts(lib, maxLen, count) {
  return heldDocuments().filter((d) => d.length >= maxLen).slice(0, count)
    .map((d) => [0, ...lib.charsTokenizer.encode(d).slice(0, maxLen - 1)]);
}

/** The backcopy part's inputs, never trained on (the trainer reads seed 1): `count` documents of
 * maxLen - 1 letters of seed 2, each after a token 0 (restingWeights' starts), and a token 0 then
 * `chars` letters of seed 3, read past the window. */
export function backcopyInputs(lib, maxLen, count, chars) {
  const enc = (s) => lib.charsTokenizer.encode(s);
  return {
    texts: [{ id: 'backcopy', label: 'fresh backcopy letters (seed 3)', tokens: Int32Array.from([0, ...enc(backcopyStream(3, chars))]) }],
    starts: backcopyText(2, { docs: count, minChars: maxLen - 1, maxChars: maxLen - 1 }).split('\n%\n').map((d) => [0, ...enc(d.trim())]),
  };
}

/** Mean weight on the first token over layers, heads and query positions >= 1, over the starts. */
export function firstTokenWeight(model, starts) {
  return starts.reduce((a, ids) => a + weightOn(model, ids), 0) / starts.length;
}

/** Bits per character past the window W of the three readings (a window, the same keeping the first S
 * tokens, recomputing the window at every position), and before it. */
export function readPastWindow(model, tokens, W, S) {
  const bits = (xs, a, b) => {
    let s = 0;
    for (let i = a; i < b; i++) s += xs[i];
    return s / (b - a) / Math.LN2;
  };
  const win = model.streamLosses(tokens, { window: W }), kept = model.streamLosses(tokens, { window: W, sinks: S });
  const full = model.streamLosses(tokens, { window: W, recompute: true });
  return { window: bits(win, W, win.length), kept: bits(kept, W, kept.length), recompute: bits(full, W, full.length), before: bits(win, 0, W) };
}
