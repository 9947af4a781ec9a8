// bench/forward-overhead.mjs: forward in this checkout against another (an earlier commit), side by
// side in one process, timed in CPU time (process.cpuUsage) rather than wall time, so that being
// descheduled on a shared machine does not count: it shows what the hook points (src/model/hooks.h)
// cost a forward that uses none.
//   git archive <commit> | tar -x -C /tmp/base && (cd /tmp/base && bash build.sh wasm)
//   node bench/forward-overhead.mjs /tmp/base [rounds = 301] [only the models whose label holds this] [simd|scalar]
// Each round times `calls` forwards of base, then of this (alternating which goes first); the
// table prints the median CPU time per call and the median and quartiles of the per-round ratios
// base / this (above 1: this checkout is faster).
import { pathToFileURL } from 'node:url';
import { cpuName } from './timing.js';
import { loadAttention } from '../wasm/index.js';

const baseDir = process.argv[2];
if (!baseDir) throw new Error('usage: node bench/forward-overhead.mjs <other checkout with a built wasm/> [rounds]');
const ROUNDS = Number(process.argv[3] ?? 301), ONLY = process.argv[4] ?? '', BUILD = process.argv[5] ?? '';
const { loadAttention: loadBase } = await import(pathToFileURL(`${baseDir}/wasm/index.js`).href);
console.log(`# forward, this checkout vs ${baseDir}: node ${process.version}, ${cpuName()}, ${ROUNDS} rounds, CPU time`);

const cpuMs = (fn, calls) => {
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) fn();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000 / calls;
};
const q = (xs, f) => [...xs].sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))];

const shapes = {
  'softmax, 2 layers, dModel 64, 40 tokens': { cfg: { vocab: 16, dModel: 64, heads: 4, layers: 2, maxLen: 40 }, n: 40 },
  'llama, 3 layers, dModel 64, 64 tokens (fortunes-induction\'s shape)': {
    cfg: { vocab: 64, dModel: 64, heads: 4, layers: 3, dFF: 176, maxLen: 64, block: 'llama' }, n: 64 },
  'linear:elu+1, 2 layers, dModel 64, 8 tokens': { cfg: { vocab: 16, dModel: 64, heads: 4, layers: 2, maxLen: 40, attention: 'linear:elu+1' }, n: 8 },
};
for (const simd of [true, false].filter((s) => !BUILD || (BUILD === 'simd') === s)) {
  const libs = { base: await loadBase({ simd }), this: await loadAttention({ simd }) };
  console.log(`\n## ${simd ? 'SIMD' : 'scalar'} build\n`);
  console.log('| model | base ms | this ms | base / this: median [quartiles] |\n|---|---|---|---|');
  for (const [label, { cfg, n }] of Object.entries(shapes).filter(([l]) => l.includes(ONLY))) {
    const ids = Array.from({ length: n }, (_, i) => 1 + (i * 7) % (cfg.vocab - 1));
    const models = Object.fromEntries(Object.entries(libs).map(([k, lib]) => [k, lib.createModel(cfg)]));
    const fns = Object.fromEntries(Object.entries(models).map(([k, m]) => [k, () => m.forward(ids)]));
    const probe = cpuMs(fns.this, 3) || 0.01;
    const calls = Math.max(1, Math.round(40 / probe)); // about 40 ms of CPU per sample
    for (const k of ['base', 'this']) cpuMs(fns[k], calls); // warm
    const t = { base: [], this: [] }, ratios = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? ['this', 'base'] : ['base', 'this'];
      const got = {};
      for (const k of order) got[k] = cpuMs(fns[k], calls);
      t.base.push(got.base), t.this.push(got.this), ratios.push(got.base / got.this);
    }
    console.log(`| ${label} | ${q(t.base, 0.5).toFixed(4)} | ${q(t.this, 0.5).toFixed(4)} | ${q(ratios, 0.5).toFixed(3)}x ` +
      `[${q(ratios, 0.25).toFixed(3)}-${q(ratios, 0.75).toFixed(3)}] |`);
    for (const m of Object.values(models)) m.dispose();
  }
}
