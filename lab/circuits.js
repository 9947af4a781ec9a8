// circuits.js: what a head does, by intervention (docs/interpretability.md). Pure functions over a
// loaded model's runWithCache / runWithHooks / logitLens / headAttribution, shared by the page's
// "What does this head do?" panel (web/circuits-worker.js), the ablation claim
// (scripts/ablation-claim.mjs) and the tests. Bits are log2; a "copy" is a span of target positions.
//   loss of a span     mean over targets t in [from, to) of -log2 p(ids[t] | ids[0..t-1]), read
//                      from logits row t - 1
//   ablation           Olsson et al. 2022: a head's output (hook_z) set to 0 or to its mean over
//                      this input's positions; the cost is the span's loss after minus before
//   patching           Meng et al. 2022: the run on the corrupted text with one activation (a
//                      layer's resid_pre at one position, or one head's z at every position) taken
//                      from the clean run; restored = (patched - corrupted) / (clean - corrupted) of
//                      the clean next token's log-probability at the last position
//   logit lens         nostalgebraist 2020: every layer's residual stream read by the final norm
//                      and the classifier

const LOG2E = Math.LOG2E;

/** log p(target) under the softmax of row (natural log), in double precision. */
export function logProb(row, target) {
  let max = -Infinity;
  for (const x of row) if (x > max) max = x;
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  return row[target] - max - Math.log(sum);
}

/** The mean loss in bits of the targets ids[from..to-1], each predicted by logits row t - 1 (vocab wide). */
export function spanBits(logits, ids, vocab, from, to) {
  from = Math.max(1, from);
  if (!(to > from)) return NaN;
  let bits = 0;
  for (let t = from; t < to; t++) bits -= logProb(logits.subarray((t - 1) * vocab, t * vocab), ids[t]) * LOG2E;
  return bits / (to - from);
}

/**
 * The two copies of a text that is a phrase read twice with `period` tokens between the starts:
 * first = targets [1, period), second = targets [period, n). (A first token has no prediction.)
 */
export function copies(n, period) {
  if (!(period >= 2 && period < n)) throw new Error(`copies: period must be an integer in [2, n = ${n}), got ${period}`);
  return { first: [1, period], second: [period, n] };
}

/**
 * Zero- and mean-ablation of every head, from the model's ablationGrid (one C call: each head
 * switched off alone): { clean: { first, second }, rows: [{ layer, head, mode, first, second }] }
 * where first and second are the change in bits per character of each copy (positive: the model
 * reads worse without the head there).
 */
export function ablationGrid(model, ids, period, { modes = ['zero', 'mean'] } = {}) {
  const span = copies(ids.length, period);
  const grid = model.ablationGrid(ids, { modes });
  const [, layers, heads, P] = grid.shape; // P = n - 1: entry p is log p(ids[p + 1])
  const bits = (lp, [from, to]) => {
    let s = 0;
    for (let t = from; t < to; t++) s -= lp[t - 1];
    return (s / (to - from)) * LOG2E;
  };
  const clean = { first: bits(grid.clean, span.first), second: bits(grid.clean, span.second) };
  const rows = [];
  grid.modes.forEach((mode, k) => {
    for (let layer = 0; layer < layers; layer++) {
      for (let head = 0; head < heads; head++) {
        const lp = grid.data.subarray(((k * layers + layer) * heads + head) * P, ((k * layers + layer) * heads + head + 1) * P);
        rows.push({ layer, head, mode, first: bits(lp, span.first) - clean.first, second: bits(lp, span.second) - clean.second });
      }
    }
  });
  return { clean, rows };
}

/**
 * ablationGrid's rows estimated to first order (model.ablationEstimate: one forward and one backward
 * per copy instead of two runs per head): { clean: { first, second }, rows: [{ layer, head, mode,
 * first, second }] } in ablationGrid's order and units (the change in bits per character of each
 * copy). A copy's targets [from, to) are the positions [from - 1, to - 1) that predict them.
 */
export function estimateAblation(model, ids, period, { modes = ['zero', 'mean'] } = {}) {
  const span = copies(ids.length, period);
  const est = model.ablationEstimate(ids, { spans: [span.first, span.second].map(([from, to]) => [from - 1, to - 1]), modes });
  const [, , layers, heads] = est.shape;
  const rows = [];
  const at = (k, s, layer, head) => est.data[((k * 2 + s) * layers + layer) * heads + head];
  est.modes.forEach((mode, k) => {
    for (let layer = 0; layer < layers; layer++)
      for (let head = 0; head < heads; head++) rows.push({ layer, head, mode, first: at(k, 0, layer, head), second: at(k, 1, layer, head) });
  });
  return { clean: { first: est.clean[0], second: est.clean[1] }, rows };
}

/**
 * A text with its first copy changed: every letter of the phrase's first copy (positions
 * [0, period - 2)) shifted by `shift` places in the alphabet, so the second copy no longer repeats
 * it; spaces and punctuation stay. Same length, so patching can line the two runs up.
 */
export function corruptFirstCopy(text, period, shift = 7) {
  const chars = [...text];
  for (let i = 0; i < Math.min(period - 2, chars.length); i++) {
    const c = chars[i].charCodeAt(0);
    if (c >= 97 && c <= 122) chars[i] = String.fromCharCode(97 + ((c - 97 + shift) % 26));
  }
  return chars.join('');
}

/**
 * The same for token ids (a sub-word model's pieces): every id of the first copy (positions
 * [0, period - 2)) at or above `from` (a BPE's merged pieces: not the bytes or the specials) moved
 * `shift` places along [from, vocab), so the second copy no longer repeats it. As many tokens.
 */
export function corruptFirstCopyIds(ids, period, { from = 259, vocab, shift = 7 } = {}) {
  if (!(vocab > from + shift)) throw new Error(`corruptFirstCopyIds: vocab must be above from + shift = ${from + shift}, got ${vocab}`);
  const out = Int32Array.from(ids);
  for (let i = 0; i < Math.min(period - 2, out.length); i++)
    if (out[i] >= from && out[i] < vocab) out[i] = from + ((out[i] - from + shift) % (vocab - from));
  return out;
}

/**
 * Where the corruption matters most: the position i of the second copy (i >= period - 1, i < n - 1)
 * at which the clean next token ids[i + 1] loses the most log-probability when the text is the
 * corrupted one. Patching is scored there: { pos, target, clean, corrupted } (natural logs).
 */
export function patchTarget(model, ids, badIds, period, vocab) {
  const a = model.forward(ids).logits, b = model.forward(badIds).logits;
  let best = null;
  for (let i = period - 1; i + 1 < ids.length; i++) {
    const row = (l) => l.subarray(i * vocab, (i + 1) * vocab);
    const clean = logProb(row(a), ids[i + 1]), corrupted = logProb(row(b), ids[i + 1]);
    if (!best || clean - corrupted > best.clean - best.corrupted) best = { pos: i, target: ids[i + 1], clean, corrupted };
  }
  return best;
}

// One exact patch: the corrupted run with one cell of the clean run's cache put in, log p(target)
// at the last position. grid 'resid': blocks.{layer}.hook_resid_pre at position index; 'z': head
// index's blocks.{layer}.attn.hook_z at every position.
function patchOne(model, corruptIds, cache, { grid, layer, index }, target, vocab) {
  const op = grid === 'resid' ? { name: `blocks.${layer}.hook_resid_pre`, positions: [index], from: cache }
    : { name: `blocks.${layer}.attn.hook_z`, heads: [index], from: cache };
  const n = corruptIds.length;
  return logProb(model.runWithHooks(corruptIds, { patch: [op] }).logits.subarray((n - 1) * vocab, n * vocab), target);
}

// The clean run's cache of every point patched, and the two runs' log p(target) at the last position.
function patchRuns(model, cleanIds, corruptIds, target, { layers, vocab }) {
  const n = cleanIds.length;
  if (corruptIds.length !== n) throw new Error(`patchingGrids: the corrupted text has ${corruptIds.length} tokens, the clean one ${n}`);
  const last = (logits) => logProb(logits.subarray((n - 1) * vocab, n * vocab), target);
  const names = [];
  for (let l = 0; l < layers; l++) names.push(`blocks.${l}.hook_resid_pre`, `blocks.${l}.attn.hook_z`);
  const { logits: cl, cache } = model.runWithCache(cleanIds, { names });
  return { cache, clean: last(cl), corrupted: last(model.runWithHooks(corruptIds, { patch: [] }).logits) };
}

/**
 * Activation patching from the clean run into the corrupted one, scored at the last position by
 * the clean next token (target) log-probability:
 *   resid[layer][pos]  blocks.{layer}.hook_resid_pre at that one position
 *   z[layer][head]     blocks.{layer}.attn.hook_z of that head at every position
 * Each entry: (patched - corrupted) / (clean - corrupted), 1 = fully restored, 0 = no effect.
 * Returns { clean, corrupted, resid, z } (clean and corrupted: the log-probabilities, natural log).
 */
export async function patchingGrids(model, cleanIds, corruptIds, target, { layers, heads, vocab, onProgress } = {}) {
  const n = cleanIds.length;
  const cells = [];
  for (let layer = 0; layer < layers; layer++) {
    for (let pos = 0; pos < n; pos++) cells.push({ grid: 'resid', layer, index: pos });
    for (let head = 0; head < heads; head++) cells.push({ grid: 'z', layer, index: head });
  }
  const resid = Array.from({ length: layers }, () => new Float64Array(n)), z = Array.from({ length: layers }, () => new Float64Array(heads));
  const { clean, corrupted } = await patchingCells(model, cleanIds, corruptIds, target, cells, { layers, vocab,
    onCell: async (c, x, done, total) => { (c.grid === 'resid' ? resid : z)[c.layer][c.index] = x; await onProgress?.(done, total); } });
  return { clean, corrupted, resid, z };
}

/**
 * The same exact patches for the listed cells only ({ grid: 'resid' | 'z', layer, index }, index a
 * position or a head), in order; await onCell(cell, restored, done, total) after each.
 * Returns { clean, corrupted, values } (values: the restored fractions, in the cells' order).
 */
export async function patchingCells(model, cleanIds, corruptIds, target, cells, { layers, vocab, onCell } = {}) {
  const { cache, clean, corrupted } = patchRuns(model, cleanIds, corruptIds, target, { layers, vocab });
  const gap = clean - corrupted;
  const values = [];
  for (const c of cells) {
    const lp = patchOne(model, corruptIds, cache, c, target, vocab);
    values.push(gap === 0 ? 0 : (lp - corrupted) / gap);
    await onCell?.(c, values.at(-1), values.length, cells.length);
  }
  return { clean, corrupted, values };
}

/**
 * patchingGrids' two grids estimated from one forward of each text and one backward
 * (model.attributionPatching: the run is the corrupted text, the activations come from the clean
 * one), as the same fractions of the gap. Any float32 model, trainable or loaded for inference only
 * (the backward then computes the activations' gradients alone); a quantized one is an Error.
 * Returns { clean, corrupted, resid, z } like patchingGrids (Float64Array rows).
 */
export function estimatePatching(model, cleanIds, corruptIds, target, { layers, heads }) {
  const n = cleanIds.length;
  const r = model.attributionPatching(corruptIds, cleanIds, { metric: { target }, names: ['attn.hook_z', 'hook_resid_pre'], perPosition: true });
  const clean = r.corrupt, corrupted = r.clean; // attributionPatching names its runs the other way round
  const gap = clean - corrupted, frac = (x) => (gap === 0 ? 0 : x / gap);
  const zp = r.grids['attn.hook_z'].data, rp = r.grids.hook_resid_pre.data; // (layers, heads, n), (layers, n)
  const z = [], resid = [];
  for (let l = 0; l < layers; l++) {
    const row = new Float64Array(heads);
    for (let h = 0; h < heads; h++) {
      let s = 0; // a head patched at every position: the sum of its positions' estimates
      for (let p = 0; p < n; p++) s += zp[(l * heads + h) * n + p];
      row[h] = frac(s);
    }
    z.push(row);
    resid.push(Float64Array.from(rp.subarray(l * n, (l + 1) * n), frac));
  }
  return { clean, corrupted, resid, z };
}

/**
 * The k cells of a grid (rows of numbers) largest in size, largest first (ties: the earlier row,
 * then column): [{ layer, index, value }]. All of them when there are k or fewer.
 */
export function topCells(grid, k) {
  if (!(Number.isInteger(k) && k >= 1)) throw new Error(`topCells: k must be an integer >= 1, got ${k}`);
  const cells = [];
  grid.forEach((row, layer) => row.forEach((value, index) => cells.push({ layer, index, value })));
  return cells.sort((a, b) => Math.abs(b.value) - Math.abs(a.value) || a.layer - b.layer || a.index - b.index).slice(0, k);
}

/**
 * How well an estimate follows the exact values over the same cells (two arrays in one order):
 * { cells, pearson (null with fewer than 3 cells or no spread), k, shared } where shared counts the
 * cells among both lists' k largest in size (k: at most the cells' number), so shared === k means
 * the estimate picks out the same few cells as the exact values do.
 */
export function agreement(estimate, exact, k = 3) {
  const n = estimate.length;
  if (exact.length !== n) throw new Error(`agreement: ${n} estimates and ${exact.length} exact values: expected one of each per cell`);
  const me = estimate.reduce((s, x) => s + x, 0) / n, mx = exact.reduce((s, x) => s + x, 0) / n;
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < n; i++) ab += (estimate[i] - me) * (exact[i] - mx), aa += (estimate[i] - me) ** 2, bb += (exact[i] - mx) ** 2;
  const pearson = n >= 3 && aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : null;
  k = Math.min(k, n);
  const top = (xs) => new Set(xs.map((x, i) => i).sort((a, b) => Math.abs(xs[b]) - Math.abs(xs[a]) || a - b).slice(0, k));
  const a = top(estimate), b = top(exact);
  return { cells: n, pearson, k, shared: [...a].filter((i) => b.has(i)).length };
}

/**
 * The logit lens as a table: for each layer and position, the top guess (token id) and its
 * probability, and the probability of the actual next token (NaN at the last position).
 */
export function lensTable(lens, ids) {
  const [layers, n, vocab] = lens.shape;
  const out = [];
  for (let l = 0; l < layers; l++) {
    const row = [];
    for (let i = 0; i < n; i++) {
      const r = lens.data.subarray((l * n + i) * vocab, (l * n + i + 1) * vocab);
      let top = 0;
      for (let v = 1; v < vocab; v++) if (r[v] > r[top]) top = v;
      row.push({ top, pTop: Math.exp(logProb(r, top)), pNext: i + 1 < n ? Math.exp(logProb(r, ids[i + 1])) : NaN });
    }
    out.push(row);
  }
  return out;
}

/**
 * The k tokens each head's output promotes most at each position: its direct logit attribution
 * (headAttribution) to every token of the vocabulary below `limit` (or to each of `tokens`), one call per token.
 * Returns top[layer][head][pos] = [{ token, logit }] (largest first).
 */
export function promotedTokens(model, ids, { layers, heads, limit, tokens = null, k = 5 }) {
  const n = ids.length, asked = tokens ?? Array.from({ length: limit }, (_, v) => v);
  limit = asked.length;
  const all = new Float32Array(layers * heads * n * limit); // (layers, heads, n, limit)
  const target = new Int32Array(n);
  for (let j = 0; j < limit; j++) {
    target.fill(asked[j]);
    const h = model.headAttribution(ids, { target }).heads.data; // (layers, heads, n)
    for (let i = 0; i < layers * heads * n; i++) all[i * limit + j] = h[i];
  }
  const top = [];
  for (let l = 0; l < layers; l++) {
    const byHead = [];
    for (let h = 0; h < heads; h++) {
      const byPos = [];
      for (let p = 0; p < n; p++) {
        const r = all.subarray(((l * heads + h) * n + p) * limit, ((l * heads + h) * n + p + 1) * limit);
        byPos.push(Array.from(r, (logit, j) => ({ token: asked[j], logit })).sort((a, b) => b.logit - a.logit).slice(0, k));
      }
      byHead.push(byPos);
    }
    top.push(byHead);
  }
  return top;
}
