// hooks.bench.js: the interpretability calls (wasm/hooks.js) on the shipped 3-layer model with
// induction heads (web/models/fortunes-induction.safetensors: 3 layers, 4 heads, dModel 64) over a
// 32-character phrase read twice (64 characters), on 1 thread: forward, runWithCache, the full zero
// + mean ablation grid in one C call (ablationGrid) and as 24 runWithHooks calls, a layers x
// positions grid of patching blocks.{l}.hook_resid_pre from a clean input into a corrupted one (one
// C call, patchingGrid, and as 192 runWithHooks calls), the logit lens and
// direct logit attribution, and attribution patching (one forward of each input and one backward
// of the activations' gradients: the model is loaded for inference) beside the grids it estimates. Targets
// (issue 33): the grid <= 100 ms, the patching grid <= 1 s.
// Also what zero-ablating each head costs in bits per character on the second copy and the first.
//   node bench/run.js hooks
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { loadAttention } from '../wasm/index.js';

const PHRASE = 'people who live in glass houses '; // 32 characters
const MODEL = new URL('../web/models/fortunes-induction.safetensors', import.meta.url);

export default async function run({ cpuName, interleave, fmt, table }) {
  const lib = await loadAttention({ simd: true, relaxed: false, threads: 1 });
  const m = lib.loadModel(readFileSync(MODEL), { training: false });
  const { layers: L, heads: H } = m.config;
  const ids = lib.charsTokenizer.encode(PHRASE + PHRASE);
  const n = ids.length;
  // the corrupted input: the first copy's words changed, the second copy the same
  const corrupted = lib.charsTokenizer.encode(`${'people who sing in brass towers '}${PHRASE}`);
  const clean = m.runWithCache(ids).cache;
  const metric = { target: ids[n - 1], position: n - 2 }; // the clean next character at the second copy's end
  const headPatches = () => { // what the head grid estimates: each head's z from the clean run, exactly
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) m.runWithHooks(corrupted, { patch: [{ name: `blocks.${l}.attn.hook_z`, heads: [h], from: clean }] });
  };
  const patchGrid = () => {
    const out = new Float32Array(L * n);
    for (let l = 0; l < L; l++)
      for (let p = 0; p < n; p++)
        out[l * n + p] = m.runWithHooks(corrupted, { patch: [{ name: `blocks.${l}.hook_resid_pre`, positions: [p], from: clean }] }).logits[0];
    return out;
  };
  const jsGrid = () => {
    for (const mode of ['zero', 'mean'])
      for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) m.runWithHooks(ids, { ablate: [{ layer: l, head: h, mode }] });
  };
  console.log(`fortunes-induction (${L} layers x ${H} heads, dModel ${m.config.dModel}), ${n} characters ` +
    `("${PHRASE.trim()}" twice), SIMD build, 1 thread (lib.threads = ${lib.threads}); ms per call, median [min-max] of 5 rounds; ${cpuName()}`);
  const t = interleave({
    forward: () => m.forward(ids),
    runWithCache: () => m.runWithCache(ids),
    [`ablationGrid (zero + mean, ${2 * L * H} ablations + the clean run, one C call)`]: () => m.ablationGrid(ids),
    [`the same grid as ${2 * L * H} runWithHooks calls`]: jsGrid,
    [`patching grid hook_resid_pre (${L} layers x ${n} positions, one C call: patchingGrid)`]: () => m.patchingGrid(corrupted, { from: clean, targets: ids.subarray(1) }),
    [`the same patching grid as ${L * n} runWithHooks calls`]: patchGrid,
    logitLens: () => m.logitLens(ids),
    headAttribution: () => m.headAttribution(ids),
    [`attributionPatching (every head, attn_out, mlp_out, resid_pre: 2 forwards + 1 backward)`]: () => m.attributionPatching(corrupted, ids, { metric }),
    [`attributionPatching hook_resid_pre per position (estimates the patching grid above)`]: () => m.attributionPatching(corrupted, ids, { metric, names: ['hook_resid_pre'], perPosition: true }),
    [`exact head patching: ${L * H} runWithHooks calls (what the head grid estimates)`]: headPatches,
  }, { samples: 5, minMs: 50 });
  table(['call', 'ms'], Object.entries(t).map(([k, v]) => [k, fmt(v, 2)]));
  const pg = t[`patching grid hook_resid_pre (${L} layers x ${n} positions, one C call: patchingGrid)`].median;
  const ap = t[`attributionPatching hook_resid_pre per position (estimates the patching grid above)`].median;
  console.log(`attributionPatching / patchingGrid (hook_resid_pre, ${L} x ${n}): ${ap.toFixed(2)} / ${pg.toFixed(2)} ms = ${(ap / pg).toFixed(3)}x; ` +
    `load average (1, 5, 15 min) ${loadavg().map((x) => x.toFixed(1)).join(', ')} on ${cpuName()}`);
  const grid = m.ablationGrid(ids, { modes: ['zero'] });
  const half = n / 2;
  // mean bits over positions predicting the first copy (1..31) and the second (33..63)
  const bits = (lp, from, to) => { let s = 0; for (let p = from; p < to; p++) s -= lp[p]; return s / (to - from) / Math.LN2; };
  const base = [bits(grid.clean, 0, half - 1), bits(grid.clean, half, n - 1)];
  const rows = [];
  for (let l = 0; l < L; l++)
    for (let h = 0; h < H; h++) {
      const lp = grid.data.subarray((l * H + h) * (n - 1), (l * H + h + 1) * (n - 1));
      rows.push([`${l}.${h}`, (bits(lp, half, n - 1) - base[1]).toFixed(3), (bits(lp, 0, half - 1) - base[0]).toFixed(3)]);
    }
  rows.sort((a, b) => b[1] - a[1]);
  console.log(`\nzero-ablating one head (layer.head, from 0): bits per character added on the second copy and on the first ` +
    `(clean: ${base[1].toFixed(3)} and ${base[0].toFixed(3)}), largest first`);
  table(['head', 'second copy', 'first copy'], rows);
  m.dispose();
}
