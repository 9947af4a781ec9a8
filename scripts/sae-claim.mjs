// sae-claim.mjs: "features are more monosemantic than neurons" (Bricken et al. 2023, "Towards
// Monosemanticity"), measured on the shipped sub-word model (web/models/fortunes-bpe.safetensors)
// with a TopK SAE (Gao et al. 2024; src/sae). One layer's MLP (blocks.L.mlp.hook_post, its d_ff
// hidden units: silu(W1 n) * (W3 n) with n the RMS-normed blocks.L.hook_resid_mid, computed here from
// the checkpoint's weights and checked against the cached hook_mlp_out), and an SAE trained on
// those same activations (training documents of Debian's fortunes). Each unit (a neuron, an SAE
// feature, or a random direction of the same space as a control) is scored on held-out text by the
// 20 positions where it is largest: the share of them whose token is the unit's most common token
// among the 20 (token purity), and the share in its most common character class (class purity).
// 3 seeds (each its own SAE and its own half of the held-out documents); mean and min-max spread.
// Two SAEs learn from the same batches: 4 x d_ff latents, and d_ff latents (as many units as neurons,
// so more units alone cannot explain a difference).
//   node scripts/sae-claim.mjs [--seeds 1,2,3] [--steps 400] [--layer 1] [--expansions 4,1] [--k 16]
import { readFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { readSafetensors } from '../wasm/safetensors.js';
import { cpuName } from '../lab/cpu.js';
import { ensureFortunes, fortunesDocuments } from './fortunes.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const SEEDS = (args.seeds ?? '1,2,3').split(',').map(Number);
const STEPS = Number(args.steps ?? 400), BATCH = 1024, LR = Number(args.lr ?? 3e-3);
const EXPANSIONS = (args.expansions ?? '4,1').split(',').map(Number), K = Number(args.k ?? 16);
const TOP = 20; // a unit's top activations
const HELD_ROWS = Number(args['held-rows'] ?? 40000); // held-out positions per seed
const why = ensureFortunes();
if (why) {
  console.error(`sae-claim.mjs: ${why}`);
  process.exit(1);
}

const dir = new URL('../web/models/', import.meta.url);
const bytes = readFileSync(new URL('fortunes-bpe.safetensors', dir));
const lib = await loadAttention({ threads: 'auto' });
const model = lib.loadModel(bytes, { training: false });
const tokenizer = lib.loadTokenizer(JSON.parse(readFileSync(new URL('fortunes-bpe.tokenizer.json', dir), 'utf8')));
const { tensors } = readSafetensors(bytes, 'fortunes-bpe');
const { layers, dModel, dFF, maxLen } = model.config;
const LAYER = Number(args.layer ?? layers / 2 - 1);
const F = dFF, C = dModel, EPS = model.config.normEps ?? 1e-5;
const lnw = tensors.get(`dec.${LAYER}.ffn.ln.w`).data, w1 = tensors.get(`dec.${LAYER}.ffn.w1`).data;
const w2 = tensors.get(`dec.${LAYER}.ffn.w2`).data, w3 = tensors.get(`dec.${LAYER}.ffn.w3`).data;
const MID = `blocks.${LAYER}.hook_resid_mid`, OUT = `blocks.${LAYER}.hook_mlp_out`;

// blocks.LAYER.mlp.hook_post of a window, (n, F): silu(W1 n) * (W3 n), n = x / rms(x) * ln.w
let checked = false;
function mlpPost(ids) {
  const { cache } = model.runWithCache(ids, { names: [MID, OUT] });
  const x = cache[MID].data, n = ids.length, post = new Float32Array(n * F), normed = new Float64Array(C);
  for (let t = 0; t < n; t++) {
    let ss = 0;
    for (let i = 0; i < C; i++) ss += x[t * C + i] ** 2;
    const r = 1 / Math.sqrt(ss / C + EPS);
    for (let i = 0; i < C; i++) normed[i] = x[t * C + i] * r * lnw[i];
    for (let f = 0; f < F; f++) {
      let h = 0, u = 0;
      for (let i = 0; i < C; i++) (h += w1[f * C + i] * normed[i]), (u += w3[f * C + i] * normed[i]);
      post[t * F + f] = (h / (1 + Math.exp(-h))) * u;
    }
  }
  if (!checked) { // W2 post must give the model's own hook_mlp_out: the hidden units are the right ones
    let worst = 0, scale = 0;
    for (let t = 0; t < n; t++)
      for (let i = 0; i < C; i++) {
        let y = 0;
        for (let f = 0; f < F; f++) y += w2[i * F + f] * post[t * F + f];
        worst = Math.max(worst, Math.abs(y - cache[OUT].data[t * C + i]));
        scale = Math.max(scale, Math.abs(cache[OUT].data[t * C + i]));
      }
    if (!(worst <= 1e-4 * (1 + scale))) throw new Error(`sae-claim.mjs: W2 mlp.hook_post differs from hook_mlp_out by ${worst}`);
    console.log(`# check: W2 mlp.hook_post reproduces ${OUT} to ${worst.toExponential(1)} (largest value ${scale.toFixed(2)})`);
    checked = true;
  }
  return post;
}

// xorshift32 for the window order and the held-out halves
function rng(seed) {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => ((s ^= s << 13), (s ^= s >>> 17), (s ^= s << 5), (s >>> 0) / 2 ** 32);
}
function shuffle(xs, rand) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

// A token's character class: what its text starts with once a leading space is set aside.
const piece = new Map();
const text = (id) => piece.get(id) ?? piece.set(id, tokenizer.decode([id])).get(id);
function charClass(id) {
  const s = text(id);
  if (/^\s*$/.test(s)) return 'whitespace';
  if (/^ [A-Za-z]/.test(s)) return 'word start';
  if (/^[A-Za-z]/.test(s)) return 'inside a word';
  if (/^ ?[0-9]/.test(s)) return 'digit';
  return 'punctuation or other';
}

// Per unit, the TOP largest (value, position) seen so far (value > 0 only for SAE features: a
// feature that does not fire has no activation there).
class TopTable {
  constructor(units) {
    this.units = units;
    this.val = new Float32Array(units * TOP).fill(-Infinity);
    this.pos = new Int32Array(units * TOP).fill(-1);
    this.min = new Float32Array(units).fill(-Infinity); // the smallest kept (when full)
  }
  add(u, v, p) {
    if (!(v > this.min[u])) return;
    const o = u * TOP;
    let at = TOP - 1;
    while (at > 0 && v > this.val[o + at - 1]) (this.val[o + at] = this.val[o + at - 1]), (this.pos[o + at] = this.pos[o + at - 1]), at--;
    this.val[o + at] = v, (this.pos[o + at] = p);
    if (this.pos[o + TOP - 1] >= 0) this.min[u] = this.val[o + TOP - 1];
  }
  // { token, cls } purities of each unit with TOP kept positions; units with fewer are left out
  score(tokens) {
    const out = [];
    for (let u = 0; u < this.units; u++) {
      const ps = Array.from(this.pos.subarray(u * TOP, (u + 1) * TOP)).filter((p) => p >= 0);
      if (ps.length < TOP) continue;
      const mode = (keys) => {
        const c = new Map();
        for (const k of keys) c.set(k, (c.get(k) ?? 0) + 1);
        return Math.max(...c.values()) / keys.length;
      };
      out.push({ token: mode(ps.map((p) => tokens[p])), cls: mode(ps.map((p) => charClass(tokens[p]))) });
    }
    return out;
  }
}

const { train, held } = fortunesDocuments();
const trainIds = tokenizer.encode(train.map((d) => `${d}\n\n`).join(''));
const starts = [];
for (let s = 0; s + 1 < trainIds.length; s += maxLen) starts.push(s);
console.log(`# sae-claim: fortunes-bpe, layer ${LAYER}'s MLP (mlp.hook_post, ${F} neurons); TopK SAEs on it: dSae ` +
  `${EXPANSIONS.map((e) => `${e * F} (${e} x ${F})`).join(' and ')}, k ${K}, ${STEPS} steps of ${BATCH} rows, lr ${LR}; ` +
  `seeds ${SEEDS.join(',')}; ${HELD_ROWS} held-out positions per seed`);
console.log(`# ${cpuName()}; ${lib.threads} thread${lib.threads > 1 ? 's' : ''}; Node ${process.version}`);

const results = [], started = performance.now();
for (const seed of SEEDS) {
  const t0 = performance.now();
  const saes = EXPANSIONS.map((e) => lib.createSAE({ dIn: F, dSae: e * F, k: K, seed }));
  const rand = rng(seed);
  const order = shuffle([...starts], rand);
  const buf = new Float32Array(BATCH * F);
  let filled = 0, w = 0, last = [];
  for (let step = 0; step < STEPS; ) {
    const s = order[w++ % order.length];
    const post = mlpPost(Int32Array.from(trainIds.subarray(s, Math.min(trainIds.length, s + maxLen))));
    for (let r = 0; r < post.length / F && step < STEPS; r++) {
      buf.set(post.subarray(r * F, (r + 1) * F), filled * F);
      if (++filled === BATCH) (last = saes.map((sae) => sae.trainStep(buf, { lr: LR }))), (filled = 0), step++;
    }
  }
  const trainS = (performance.now() - t0) / 1000;
  // held-out: this seed's half of the held-out documents, windows of maxLen, up to HELD_ROWS positions
  const docs = shuffle([...held], rand).slice(0, Math.ceil(held.length / 2));
  const heldIds = tokenizer.encode(docs.map((d) => `${d}\n\n`).join(''));
  const neurons = new TopTable(F), features = saes.map((sae) => new TopTable(sae.config.dSae)), random = new TopTable(F);
  // the control: F random unit directions of the same space, read like neurons
  const dirs = new Float32Array(F * F).map(() => rand() - 0.5);
  for (let u = 0; u < F; u++) {
    const row = dirs.subarray(u * F, (u + 1) * F), nrm = Math.hypot(...row);
    for (let i = 0; i < F; i++) row[i] /= nrm;
  }
  const tokens = new Int32Array(HELD_ROWS);
  let n = 0, sq = 0;
  const err = saes.map(() => 0);
  const sum = new Float64Array(F);
  for (let s = 0; s + 1 < heldIds.length && n < HELD_ROWS; s += maxLen) {
    const ids = Int32Array.from(heldIds.subarray(s, Math.min(heldIds.length, s + maxLen, s + HELD_ROWS - n)));
    if (ids.length < 2) break;
    const post = mlpPost(ids), rows = ids.length;
    for (const [m, sae] of saes.entries()) {
      const { indices, values } = sae.encode(post), S = sae.config.dSae;
      const z = new Float32Array(rows * S);
      for (let r = 0; r < rows; r++)
        for (let t = 0; t < K; t++) {
          const v = values[r * K + t];
          if (v > 0) features[m].add(indices[r * K + t], v, n + r), (z[r * S + indices[r * K + t]] = v);
        }
      const xhat = sae.decode(z);
      for (let i = 0; i < post.length; i++) err[m] += (xhat[i] - post[i]) ** 2;
    }
    for (let r = 0; r < rows; r++) {
      const p = n + r;
      tokens[p] = ids[r];
      for (let f = 0; f < F; f++) neurons.add(f, post[r * F + f], p);
      for (let u = 0; u < F; u++) {
        let v = 0;
        for (let i = 0; i < F; i++) v += dirs[u * F + i] * post[r * F + i];
        random.add(u, v, p);
      }
    }
    for (let i = 0; i < post.length; i++) (sq += post[i] ** 2), (sum[i % F] += post[i]);
    n += rows;
  }
  let meanSq = 0;
  for (let i = 0; i < F; i++) meanSq += (sum[i] / n) ** 2;
  const fvu = err.map((e) => e / (sq - n * meanSq));
  const mean = (xs, key) => xs.reduce((a, x) => a + x[key], 0) / xs.length;
  const purity = (xs) => ({ token: mean(xs, 'token'), cls: mean(xs, 'cls'), scored: xs.length });
  const r = { seed, trainS, fvu, neurons: purity(neurons.score(tokens)), random: purity(random.score(tokens)) };
  features.forEach((table, m) => (r[`features${m}`] = purity(table.score(tokens))));
  results.push(r);
  console.log(`# seed ${seed}: trained in ${trainS.toFixed(0)} s; ${n} held-out positions; ` + saes.map((sae, m) =>
    `SAE ${sae.config.dSae}: last batch FVU ${last[m].fvu.toFixed(3)}, ${last[m].dead} dead, held-out FVU ${fvu[m].toFixed(3)}, ` +
    `${r[`features${m}`].scored} features scored, token purity ${r[`features${m}`].token.toFixed(3)}`).join('; ') +
    `; neurons ${r.neurons.token.toFixed(3)}, random ${r.random.token.toFixed(3)}`);
  for (const sae of saes) sae.free();
}

const fmt = (key, sub) => {
  const xs = results.map((r) => r[key][sub]);
  return `${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(3)} (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`;
};
const row = (label, key) => `| ${label} | ${results.map((r) => r[key].scored).join(', ')} | ${fmt(key, 'token')} | ${fmt(key, 'cls')} |`;
console.log(`\n| units (layer ${LAYER} MLP, ${F}-dim) | scored per seed | token purity of the top ${TOP}, mean (min-max) | character-class purity, mean (min-max) |`);
console.log('| --- | --- | --- | --- |');
EXPANSIONS.forEach((e, m) => {
  const fv = results.map((r) => r.fvu[m]);
  console.log(row(`SAE features (TopK, ${e * F} latents, k ${K}; held-out FVU ${(fv.reduce((a, b) => a + b, 0) / fv.length).toFixed(3)})`, `features${m}`));
});
console.log(row('MLP neurons (mlp.hook_post)', 'neurons'));
console.log(row('random directions (control)', 'random'));
console.log(`\n${results.length} seeds in ${((performance.now() - started) / 60000).toFixed(1)} minutes.`);
model.dispose();
process.exit(0); // the thread pool's workers would keep Node alive
