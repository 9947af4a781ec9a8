// induction.js: induction heads forming (Olsson et al. 2022), the experiment the page runs live and
// scripts/induction.mjs runs for every form: a 2-layer model learns the repeat task (k random
// symbols, then the same k again, k varying from example to example, so no fixed offset finds the
// answer: the second copy is predictable only by looking back to what followed the current
// symbol's earlier occurrence), and every `every` steps each head's induction score is measured on
// probes of that kind (heads.js). The phase change shows as the best head's score jumping while the
// loss drops.
import { KINDS, nameHead, scoreHeads } from './heads.js';

export const SETUP = { symbols: 24, length: 12 }; // vocab symbols + 1; positions 2 length
export const MODEL = { dModel: 32, heads: 2, layers: 2, block: 'llama' }; // rotary positions: none in the stream

/** A probe: k distinct symbols (seeded; k from 7 to 11 by seed), then the same k again. */
export function probe(seed = 7, { symbols } = SETUP) {
  const length = 7 + (seed % 5);
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  const pool = Array.from({ length: symbols }, (_, i) => i + 1);
  for (let i = pool.length - 1; i > 0; i--) { const j = next() % (i + 1); [pool[i], pool[j]] = [pool[j], pool[i]]; }
  const half = pool.slice(0, length);
  return [...half, ...half];
}

/**
 * Every head's scores of each kind (heads.js) on the probes, the mean over `probes` seeds, and its
 * name from them: [{ layer, head, scores, name, score }]. The live curve and the final list both
 * read these probes, so the headline's best score is the list's.
 */
export function headScores(model, probes = 4) {
  let sum = null;
  for (let p = 0; p < probes; p++) {
    const tokens = probe(101 + p);
    const heads = scoreHeads(model.forward(tokens).attention, tokens);
    sum ??= heads.map((h) => ({ layer: h.layer, head: h.head, scores: Object.fromEntries(KINDS.map((k) => [k, 0])) }));
    heads.forEach((h, i) => { for (const k of KINDS) sum[i].scores[k] += h.scores[k] / probes; });
  }
  return sum.map((h) => ({ ...h, ...nameHead(h.scores) }));
}

/** Every head's induction score on the probes (the mean over `probes` seeds). */
export function inductionScores(model, probes = 4) {
  return headScores(model, probes).map((h) => h.scores.induction);
}

/**
 * Trains `model` on repeat for `steps` steps, measuring every head's induction score every `every`
 * steps; onPoint({ step, loss, accuracy, scores }) after each measurement. Resolves to the points.
 */
export async function formInduction(model, { steps = 600, every = 25, lr = 3e-3, batchSize = 32, signal, onPoint } = {}) {
  const points = [{ step: 0, loss: NaN, accuracy: 0, scores: inductionScores(model) }];
  onPoint?.(points[0]);
  let losses = [], accs = [];
  await model.train({
    steps, signal, yieldEvery: 1, lr: (s) => lr * Math.min(1, (s + 1) / 50),
    batch: () => ({ task: 'repeat', length: SETUP.length, symbols: SETUP.symbols, batchSize }),
    onProgress: ({ step, loss, accuracy }) => {
      losses.push(loss), accs.push(accuracy);
      if (step % every !== 0 && step !== steps) return;
      const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const point = { step, loss: mean(losses), accuracy: mean(accs), scores: inductionScores(model) };
      losses = [], accs = [];
      points.push(point);
      onPoint?.(point);
    },
  });
  return points;
}

/** The first measured step at which some head's induction score reaches `bound` (null: never). */
export function formedAt(points, bound = 0.3) {
  return points.find((p) => Math.max(...p.scores) >= bound)?.step ?? null;
}
