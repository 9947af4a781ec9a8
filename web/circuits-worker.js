// circuits-worker.js: the "What does this head do?" panel's interventions, a task of the model host
// (model-host.js, a Worker) so the page never waits on the few hundred forward passes they take
// (views/circuits.js is the view, lab/circuits.js the measures). It shares the host's library and
// reads a shipped model's bytes from the page (worker-page.js) or the model open in "Open a model
// file" from the host itself (hosted.js: no copy is sent), and runs one request at a time: a newer
// request, or a Cancel, stops an older one between two passes. Patching comes first and cheaply:
// every cell estimated by attributionPatching (one forward of each text and one backward), then
// only the estimate's TOP largest cells of each grid patched exactly; ablation stays exact (one C
// call: the library has no gradient estimate of a head switched off).
// Messages in:  { type: 'run', id, file, ids, bad, period, probe, limit }   the model
//                 web/models/<file>; the token ids of a phrase read twice (the second copy starts
//                 at period) and of its corrupted twin (as many tokens); the standard probe's ids
//                 (random tokens read twice); limit: the tokenizer's size (the guesses' range; what a
//                 head promotes is searched over its first 4,096 tokens, or on a large model over
//                 the tokens that matter).
//                 The page's codec (lab/codec.js) makes them, so the worker reads any tokenizer.
//               { type: 'run', ..., file: 'opened-<n>' }   the model open in the page's "Open a
//                 model file" (web/opened.js): file is its key; the host holds that model (hosted.js).
//               { type: 'steer', id, file, prompt, layer, plus, minus, strength, tokens }   steering: the
//                 unit direction embed(plus) - embed(minus) (two token ids), added at
//                 blocks.<layer>.hook_resid_pre to every row with scale strength x the mean row norm
//                 there on the prompt; the greedy continuation of prompt (ids), tokens long, with and
//                 without it. Answered on its own, between a run's passes; it does not stop a run.
//               { type: 'cancel', id }   stops run id at its next pause (what it posted stays valid)
// Messages out (each with its request's id; the page drops those of older requests):
//               { type: 'estimate', id, file, layers, heads, ids, patchAt, clean, corrupted, estimate, why, top, ms }
//                 estimate: { resid, z } (restored fractions, as patchingGrids'), or null and why (a model
//                 the estimate cannot run on, a quantized one: every cell is then patched exactly)
//               { type: 'exact', id, grid, layer, index, value, done, total }   one cell patched exactly
//               { type: 'agreement', id, agreement, ms, runs }   agreement: per grid ('z', 'resid')
//                 lab/circuits.js agreement() over the cells patched exactly, and of (the grid's cells)
//               { type: 'progress', id, stage, done, total, msLeft }   stage: 'exact' | 'ablation' |
//                 'reading'; msLeft: the time left, estimated from the passes timed so far (or null)
//               { type: 'result', id, ... }   see run() below; every array is a plain one
//               { type: 'composition', id, q, k, v, ms } | { type: 'composition', id, error }   after the
//                 result: model.compositionScores()' Q-, K- and V-composition (Float32Arrays, each
//                 [l2, h2, l1, h1] flat), from the weights alone; error names why the model has none
//               { type: 'steered', id, plain, steered, size }   a 'steer' request's two greedy continuations
//                 (token ids), without and with the add; size: the residual stream's mean row norm there
//               { type: 'error', id, message }   { type: 'steer-error', id, message }
import { pageFetch } from './worker-page.js';
import { hostedByKey, libPromise } from './hosted.js';
import { ablationGrid, agreement, copies, estimatePatching, lensTable, patchTarget, patchingCells, promotedTokens, spanBits, topCells }
  from '../lab/circuits.js';

// A run whose work would take longer than this in one C call (the ablation grid, what every head
// promotes) is split: the ablation one head at a time with pauses (progress, Cancel), and what the
// heads promote searched over the tokens that matter (the text's own and each position's top
// guesses) after the result is drawn. GPT-2 small's 288 ablations are about a minute and a half.
const ONE_CALL_MS = 4000;
const PROMOTED_MAX = 4096; // what a head promotes is searched over at most this many tokens in one go
const CANDIDATES = 8; // top guesses per position among what a head promotes (large models)
import { NAMED_AT, scoreHeads } from '../lab/heads.js';

const models = new Map(); // file -> Promise<Model>
let latest = 0; // the newest request's id: an older one (or a cancelled one) stops at its next pause
const TOP = 16; // cells of each patching grid patched exactly, the estimate's largest
function model(lib, file) {
  if (!models.has(file)) {
    // the page's bytes of the file (fetched once there: worker-page.js); for inference (the estimate's
    // backward needs no parameter gradients)
    models.set(file, pageFetch(new URL(`./models/${file}`, import.meta.url))
      .then((bytes) => lib.loadModel(new Uint8Array(bytes), { training: false })));
    models.get(file).catch(() => models.delete(file));
  }
  return models.get(file);
}

// The model opened in the page (the host's, by its key): loaded for inference, as opened.
const openedModel = (key) => Promise.resolve().then(() => hostedByKey(key).model);

class Superseded extends Error {}

async function run({ id, file, ids: idList, bad: badList, period, probe: probeList, limit }) {
  const lib = await libPromise;
  const m = await (file.startsWith('opened-') ? openedModel(file) : model(lib, file));
  if (latest !== id) throw new Superseded(); // a newer request (or Cancel) came while the model loaded
  const { layers, heads, vocab } = m.config;
  const ids = Int32Array.from(idList), bad = Int32Array.from(badList), probe = Int32Array.from(probeList);
  if (!(period >= 2 && period < ids.length)) throw new Error('the text is not a phrase read twice ("phrase. phrase")');
  if (bad.length !== ids.length) throw new Error(`the corrupted text has ${bad.length} tokens, the clean one ${ids.length}`);
  // Time left: the work still to do counted in forward passes (an exact patch is one, the ablation
  // grid 2 x layers x heads, what the heads promote one per token searched, the rest a few), times
  // the mean time of the passes timed so far.
  let perPass = 0, timed = 0;
  const timePasses = (ms, count) => { perPass = (perPass * timed + ms) / (timed + count); timed += count; };
  const promotedPasses = Math.min(limit, vocab, PROMOTED_MAX);
  const rest = { exact: 2 * layers * heads + promotedPasses + 4, ablation: 2 * layers * heads + promotedPasses + 4, reading: promotedPasses + 4 };
  // let a newer request or a Cancel in; stop when one came
  let lastPause = performance.now();
  const pause = async (stage, done, total, force = false) => {
    if (!force && performance.now() - lastPause < 40) return;
    const left = (stage === 'exact' ? total - done : 0) + rest[stage]; // in passes
    post({ type: 'progress', id, stage, done, total, msLeft: timed ? left * perPass : null });
    await new Promise((r) => setTimeout(r));
    lastPause = performance.now();
    if (latest !== id) throw new Superseded();
  };

  // the patch grids, at the position where the corruption costs the clean next token most: first
  // estimated for every cell (one forward of each text and one backward), then the estimate's
  // largest cells patched exactly (every cell when the estimate cannot run: a quantized model)
  let t = performance.now();
  const at = patchTarget(m, ids, bad, period, vocab);
  timePasses(performance.now() - t, 2);
  const target = at.target;
  const cleanIds = ids.subarray(0, at.pos + 1), corruptIds = bad.subarray(0, at.pos + 1), n = cleanIds.length;
  let estimate = null, why = '';
  t = performance.now();
  try {
    estimate = estimatePatching(m, cleanIds, corruptIds, target, { layers, heads });
  } catch (err) {
    why = err.message.replace(/^attention-wasm: attributionPatching: /, '').replace(/\.$/, '');
  }
  const estimateMs = performance.now() - t;
  const plain = (grid) => grid.map((r) => Array.from(r));
  post({ type: 'estimate', id, file, layers, heads, ids: Array.from(ids), patchAt: at.pos, clean: at.clean, corrupted: at.corrupted,
    estimate: estimate && { resid: plain(estimate.resid), z: plain(estimate.z) }, why, top: TOP, ms: estimateMs });
  const all = (rows, cols) => Array.from({ length: rows * cols }, (_, i) => ({ layer: Math.floor(i / cols), index: i % cols }));
  const cells = estimate
    ? [...topCells(estimate.z, TOP).map((c) => ({ grid: 'z', ...c })), ...topCells(estimate.resid, TOP).map((c) => ({ grid: 'resid', ...c }))]
    : [...all(layers, heads).map((c) => ({ grid: 'z', ...c })), ...all(layers, n).map((c) => ({ grid: 'resid', ...c }))];
  t = performance.now();
  let last = t;
  const exact = { z: Array.from({ length: layers }, () => new Array(heads).fill(null)),
    resid: Array.from({ length: layers }, () => new Array(n).fill(null)) };
  const patched = await patchingCells(m, cleanIds, corruptIds, target, cells, { layers, vocab, onCell: async (c, x, done, total) => {
    const now = performance.now();
    timePasses(now - last, 1);
    last = now;
    exact[c.grid][c.layer][c.index] = x;
    post({ type: 'exact', id, grid: c.grid, layer: c.layer, index: c.index, value: x, done, total });
    await pause('exact', done, total, done === total);
  } });
  const exactMs = performance.now() - t;
  // how the estimate and the exact patches agree, per grid, over the cells patched exactly
  const agree = {};
  if (estimate) {
    for (const grid of ['z', 'resid']) {
      const mine = cells.filter((c) => c.grid === grid);
      const values = patched.values.filter((_, i) => cells[i].grid === grid);
      agree[grid] = { ...agreement(mine.map((c) => c.value), values), of: grid === 'z' ? layers * heads : layers * n };
    }
  }
  post({ type: 'agreement', id, agreement: estimate ? agree : null, ms: { estimate: estimateMs, exact: exactMs }, runs: cells.length });
  // the ablation grid: every head alone, zero and mean: in one C call, or (a large model) one head at a time
  const opened = file.startsWith('opened-'); // the shipped models keep the one-call path: a second at most
  const stepped = opened && perPass * 2 * layers * heads > ONE_CALL_MS;
  if (stepped) rest.ablation = promotedPasses + 4;
  await pause('ablation', 0, 2 * layers * heads, true);
  t = performance.now();
  const grid = stepped ? await ablationInSteps(m, ids, period, vocab, (done, total) => pause('ablation', done, total, done === total))
    : ablationGrid(m, ids, period);
  const ablationMs = performance.now() - t;
  if (!stepped) timePasses(ablationMs, 2 * layers * heads);
  // what each head promotes: over the first `limit` tokens of the vocabulary (one pass each), or, when
  // that would take long, after the result over the tokens that matter
  const heavy = opened && perPass * promotedPasses > ONE_CALL_MS;
  if (heavy) rest.reading = 4;
  await pause('reading', 0, 1, true);
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
  const promoted = heavy ? null : promotedTokens(m, ids, { layers, heads, limit: promotedPasses });
  const { cache } = m.runWithCache(ids, { names: Array.from({ length: layers }, (_, l) => `blocks.${l}.attn.hook_pattern`) });
  const patterns = Array.from({ length: layers }, (_, l) => cache[`blocks.${l}.attn.hook_pattern`].data);
  // the grids drawn: the exact value where there is one, else the estimate
  const merged = (g) => exact[g].map((r, l) => r.map((x, i) => x ?? estimate[g][l][i]));
  post({
    type: 'result', id, file, period, layers, heads, vocab, ids: Array.from(ids), span, claim,
    ablation: grid, patchAt: at.pos,
    patch: { clean: patched.clean, corrupted: patched.corrupted, resid: merged('resid'), z: merged('z'),
      estimate: estimate && { resid: plain(estimate.resid), z: plain(estimate.z) }, exact, agreement: estimate ? agree : null, why },
    lens, promoted, patterns, ms: { ablation: ablationMs, estimate: estimateMs, exact: exactMs }, runs: cells.length,
  });
  // a large model: what each head promotes, after the result, over the text's own tokens and every
  // position's top guesses (each one pass), with progress; a newer request stops it
  if (heavy) {
    const candidates = candidateTokens(m, ids, vocab, limit);
    const all = [];
    for (let k = 0; k < candidates.length; k += 16) {
      all.push(promotedTokens(m, ids, { layers, heads, tokens: candidates.slice(k, k + 16) }));
      post({ type: 'progress', id, stage: 'promoted', done: Math.min(k + 16, candidates.length), total: candidates.length,
        msLeft: ((candidates.length - k - 16) * perPass) });
      await new Promise((r) => setTimeout(r));
      if (latest !== id) return;
    }
    post({ type: 'promoted', id, promoted: mergePromoted(all), searched: candidates.length });
  }
  // head composition, from the weights (milliseconds for the shipped models, seconds for GPT-2's
  // shapes): after the result, so the page draws the rest first; only pre-norm softmax models have it
  await new Promise((r) => setTimeout(r));
  if (latest !== id) return;
  try {
    const t2 = performance.now();
    const { q, k, v } = m.compositionScores();
    post({ type: 'composition', id, q: q.data, k: k.data, v: v.data, ms: performance.now() - t2 });
  } catch (err) {
    post({ type: 'composition', id, error: err.message });
  }
}

// The ablation grid one head at a time (ablationGrid's rows and units: the change in bits per token
// of each copy), with onStep(done, total) awaited between two runs.
async function ablationInSteps(m, ids, period, vocab, onStep) {
  const { layers, heads } = m.config, span = copies(ids.length, period);
  const bits = (logits) => ({ first: spanBits(logits, ids, vocab, ...span.first), second: spanBits(logits, ids, vocab, ...span.second) });
  const clean = bits(m.forward(ids).logits), rows = [], total = 2 * layers * heads;
  for (const mode of ['zero', 'mean']) {
    for (let layer = 0; layer < layers; layer++) {
      for (let head = 0; head < heads; head++) {
        const b = bits(m.runWithHooks(ids, { ablate: [{ layer, head, mode }] }).logits);
        rows.push({ layer, head, mode, first: b.first - clean.first, second: b.second - clean.second });
        await onStep(rows.length, total);
      }
    }
  }
  return { clean, rows };
}

// The tokens worth asking about on a large vocabulary: the text's own and each position's top
// CANDIDATES guesses of the clean run (at most `limit`).
function candidateTokens(m, ids, vocab, limit) {
  const { logits } = m.forward(ids), set = new Set(Array.from(ids).filter((t) => t < limit));
  for (let p = 0; p < ids.length; p++) {
    const row = logits.subarray(p * vocab, (p + 1) * vocab), best = [];
    for (let v = 0; v < Math.min(vocab, limit); v++) {
      if (best.length < CANDIDATES || row[v] > row[best[best.length - 1]]) {
        best.push(v);
        best.sort((a, b) => row[b] - row[a]);
        if (best.length > CANDIDATES) best.pop();
      }
    }
    for (const v of best) set.add(v);
  }
  return [...set];
}

// promotedTokens' answers over several lists of tokens, merged: each head and position's 5 largest.
function mergePromoted(parts) {
  return parts[0].map((byHead, l) => byHead.map((byPos, h) => byPos.map((_, p) =>
    parts.flatMap((part) => part[l][h][p]).sort((a, b) => b.logit - a.logit).slice(0, 5))));
}

// Steering (issue 47): greedy continuations with and without scale x a unit direction added to the
// residual stream at one layer's input, every row.
async function steer({ id, file, prompt, layer, plus, minus, strength, tokens }) {
  const lib = await libPromise;
  const m = await (file.startsWith('opened-') ? openedModel(file) : model(lib, file));
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
  post({ type: 'steered', id, size, plain: greedy(null),
    steered: greedy({ add: [{ name, vector: unit, scale: strength * size }] }) });
}

let post = () => {}; // the host's channel to the panel (circuitsTask)

/** The task: handle(msg) for each message of the panel's channel; send(msg, transfer) answers. */
export function circuitsTask(send) {
  post = send;
  return handle;
}

function handle(msg) {
  if (msg.type === 'steer') {
    steer(msg).catch((err) => post({ type: 'steer-error', id: msg.id, message: err.message }));
    return;
  }
  if (msg.type === 'cancel') { // Cancel: the run stops at its next pause (not inside a C call)
    if (latest === msg.id) latest = 0;
    return;
  }
  if (msg.type !== 'run') return;
  latest = msg.id;
  run(msg).catch((err) => {
    if (!(err instanceof Superseded)) post({ type: 'error', id: msg.id, message: err.message });
  });
}
