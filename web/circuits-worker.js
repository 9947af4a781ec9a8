// circuits-worker.js: the "What does this head do?" panel's interventions, in a Web Worker so the
// page never waits on the few hundred forward passes they take (views/circuits.js is the view,
// lab/circuits.js the measures). It loads the package with the page's compiled wasm and gets the
// model files' bytes from the page (worker-page.js), and runs one request at a time: a newer
// request stops an older one between two passes.
// Messages in:  { type: 'run', id, file, ids, bad, period, probe, limit }   the model
//                 web/models/<file>; the token ids of a phrase read twice (the second copy starts
//                 at period) and of its corrupted twin (as many tokens); the standard probe's ids
//                 (random tokens read twice); limit: the tokenizer's size (the guesses' range).
//                 The page's codec (lab/codec.js) makes them, so the worker reads any tokenizer.
//               { type: 'run', ..., file: 'opened-<n>', bytes? }   the model open in the page's
//                 "Open a model file" (web/opened.js): file is its key, bytes (an ArrayBuffer,
//                 transferred) its library checkpoint (model.save()), sent with the first run on
//                 it only; the worker keeps that one model (the one before is freed).
//               { type: 'steer', id, file, prompt, layer, plus, minus, strength, tokens }   steering: the
//                 unit direction embed(plus) - embed(minus) (two token ids), added at
//                 blocks.<layer>.hook_resid_pre to every row with scale strength x the mean row norm
//                 there on the prompt; the greedy continuation of prompt (ids), tokens long, with and
//                 without it. Answered on its own, between a run's passes; it does not stop a run.
// Messages out (each with its request's id; the page drops those of older requests):
//               { type: 'progress', id, stage, done, total }   stage: 'ablation' | 'patching'
//               { type: 'result', id, ... }   see run() below; every array is a plain one
//               { type: 'composition', id, q, k, v, ms } | { type: 'composition', id, error }   after the
//                 result: model.compositionScores()' Q-, K- and V-composition (Float32Arrays, each
//                 [l2, h2, l1, h1] flat), from the weights alone; error names why the model has none
//               { type: 'steered', id, plain, steered, size }   a 'steer' request's two greedy continuations
//                 (token ids), without and with the add; size: the residual stream's mean row norm there
//               { type: 'error', id, message }   { type: 'steer-error', id, message }
import { pageFetch, workerLib } from './worker-page.js';
import { ablationGrid, copies, lensTable, patchTarget, patchingGrids, promotedTokens, spanBits } from '../lab/circuits.js';
import { NAMED_AT, scoreHeads } from '../lab/heads.js';

const libPromise = workerLib(); // the page's compiled wasm (worker-page.js)
libPromise.catch(() => {}); // reported by the request that awaits it
const models = new Map(); // file -> Promise<Model>
let latest = 0; // the newest request's id: an older one stops at its next pass

function model(lib, file) {
  if (!models.has(file)) {
    // the page's bytes of the file (fetched once there: worker-page.js)
    models.set(file, pageFetch(new URL(`./models/${file}`, import.meta.url))
      .then((bytes) => lib.loadModel(new Uint8Array(bytes), { training: false })));
    models.get(file).catch(() => models.delete(file));
  }
  return models.get(file);
}

// The model opened in the page: one at a time, by its key.
let opened = null; // { key, promise }
function openedModel(lib, key, bytes) {
  if (opened?.key !== key) {
    if (!bytes) throw new Error('the worker does not have this opened model: run it again');
    const old = opened;
    opened = { key, promise: Promise.resolve().then(() => lib.loadModel(new Uint8Array(bytes), { training: false })) };
    opened.promise.catch(() => { if (opened?.key === key) opened = null; });
    old?.promise.then((m) => m.dispose(), () => {});
  }
  return opened.promise;
}

class Superseded extends Error {}

async function run({ id, file, bytes, ids: idList, bad: badList, period, probe: probeList, limit }) {
  const lib = await libPromise;
  const m = await (file.startsWith('opened-') ? openedModel(lib, file, bytes) : model(lib, file));
  if (latest !== id) throw new Superseded(); // a newer request came while the model loaded
  const { layers, heads, vocab } = m.config;
  const ids = Int32Array.from(idList), bad = Int32Array.from(badList), probe = Int32Array.from(probeList);
  if (!(period >= 2 && period < ids.length)) throw new Error('the text is not a phrase read twice ("phrase. phrase")');
  if (bad.length !== ids.length) throw new Error(`the corrupted text has ${bad.length} tokens, the clean one ${ids.length}`);
  let passes = 0;
  // every few passes, let a newer request in; stop when there is one
  const tick = async (stage, done, total) => {
    if (++passes % 8) return;
    postMessage({ type: 'progress', id, stage, done, total });
    await new Promise((r) => setTimeout(r));
    if (latest !== id) throw new Superseded();
  };
  const t0 = performance.now();
  // the ablation grid: every head alone, zero and mean, in one C call
  const grid = ablationGrid(m, ids, period);
  const ablationMs = performance.now() - t0;
  postMessage({ type: 'progress', id, stage: 'ablation', done: 1, total: 1 });
  // the patch grids, at the position where the corruption costs the clean next character most
  const at = patchTarget(m, ids, bad, period, vocab);
  const target = at.target;
  const cleanIds = ids.subarray(0, at.pos + 1), corruptIds = bad.subarray(0, at.pos + 1);
  const t1 = performance.now();
  const patch = await patchingGrids(m, cleanIds, corruptIds, target, { layers, heads, vocab, onProgress: (d, t) => tick('patching', d, t) });
  const patchingMs = performance.now() - t1;
  // the claim (Olsson et al. 2022): the heads the standard probe names "induction", off together
  const named = scoreHeads(m.forward(probe).attention, [...probe]).filter((h) => h.scores.induction >= NAMED_AT);
  const span = copies(ids.length, period);
  const together = (mode) => {
    const l = m.runWithHooks(ids, { ablate: named.map((h) => ({ layer: h.layer, head: h.head, mode })) }).logits;
    return { first: spanBits(l, ids, vocab, ...span.first), second: spanBits(l, ids, vocab, ...span.second) };
  };
  const claim = { heads: named.map((h) => ({ layer: h.layer, head: h.head, score: h.scores.induction })),
    zero: named.length ? together('zero') : null, mean: named.length ? together('mean') : null };
  const lens = lensTable(m.logitLens(ids), ids);
  const promoted = promotedTokens(m, ids, { layers, heads, limit: Math.min(limit, vocab) });
  const { cache } = m.runWithCache(ids, { names: Array.from({ length: layers }, (_, l) => `blocks.${l}.attn.hook_pattern`) });
  const patterns = Array.from({ length: layers }, (_, l) => cache[`blocks.${l}.attn.hook_pattern`].data);
  postMessage({
    type: 'result', id, file, period, layers, heads, vocab, ids: Array.from(ids), span, claim,
    ablation: grid, patchAt: at.pos, patch: { ...patch, resid: patch.resid.map((r) => Array.from(r)), z: patch.z.map((r) => Array.from(r)) },
    lens, promoted, patterns, ms: { ablation: ablationMs, patching: patchingMs },
  });
  // head composition, from the weights (milliseconds for the shipped models, seconds for GPT-2's
  // shapes): after the result, so the page draws the rest first; only pre-norm softmax models have it
  await new Promise((r) => setTimeout(r));
  if (latest !== id) return;
  try {
    const t2 = performance.now();
    const { q, k, v } = m.compositionScores();
    postMessage({ type: 'composition', id, q: q.data, k: k.data, v: v.data, ms: performance.now() - t2 });
  } catch (err) {
    postMessage({ type: 'composition', id, error: err.message });
  }
}

// Steering (issue 47): greedy continuations with and without scale x a unit direction added to the
// residual stream at one layer's input, every row.
async function steer({ id, file, prompt, layer, plus, minus, strength, tokens }) {
  const lib = await libPromise;
  const m = await (file.startsWith('opened-') ? openedModel(lib, file) : model(lib, file));
  const { vocab, maxLen } = m.config;
  const embed = (t) => m.runWithCache(Int32Array.of(t), { names: ['hook_embed'] }).cache.hook_embed.data;
  const a = embed(plus), b = embed(minus);
  const dir = a.map((x, i) => x - b[i]);
  const norm = Math.hypot(...dir);
  if (!(norm > 0)) throw new Error('the two tokens have the same embedding: pick two different ones');
  const unit = dir.map((x) => x / norm);
  const name = `blocks.${layer}.hook_resid_pre`;
  const resid = m.runWithCache(Int32Array.from(prompt), { names: [name] }).cache[name].data;
  const C = unit.length, rows = resid.length / C;
  let size = 0;
  for (let r = 0; r < rows; r++) size += Math.hypot(...resid.subarray(r * C, (r + 1) * C)) / rows;
  const greedy = (ops) => {
    const seq = Array.from(prompt), out = [];
    for (let t = 0; t < tokens && seq.length < maxLen; t++) {
      const ids = Int32Array.from(seq);
      const logits = ops ? m.runWithHooks(ids, ops).logits : m.forward(ids).logits;
      const row = logits.subarray((ids.length - 1) * vocab, ids.length * vocab);
      let best = 0;
      for (let v = 1; v < vocab; v++) if (row[v] > row[best]) best = v;
      seq.push(best);
      out.push(best);
    }
    return out;
  };
  postMessage({ type: 'steered', id, size, plain: greedy(null),
    steered: greedy({ add: [{ name, vector: unit, scale: strength * size }] }) });
}

onmessage = (e) => {
  const msg = e.data;
  if (msg.type === 'steer') {
    steer(msg).catch((err) => postMessage({ type: 'steer-error', id: msg.id, message: err.message }));
    return;
  }
  if (msg.type !== 'run') return;
  latest = msg.id;
  run(msg).catch((err) => {
    if (!(err instanceof Superseded)) postMessage({ type: 'error', id: msg.id, message: err.message });
  });
};
