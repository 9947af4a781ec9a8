// ablation-estimate-time.mjs: model.ablationEstimate against the exact model.ablationGrid it
// estimates, on a GPT-2-small-shaped model of seeded random BF16 weights (lab/hf-shapes.js; the
// time does not depend on the values), loaded for inference only, 24 tokens, both modes, two spans.
// Prints the machine's load and each call's time (the estimate: median of `runs`; the grid, minutes
// long: one run). Usage:
//   node scripts/ablation-estimate-time.mjs [runs = 3]
import { cpus, loadavg } from 'node:os';
import { execSync } from 'node:child_process';
import { loadAttention } from '../wasm/index.js';
import { randomBf16, SHAPES } from '../lab/hf-shapes.js';

const runs = Number(process.argv[2] ?? 3);
const lib = await loadAttention();
const { config } = SHAPES.gpt2;
const model = lib.loadHuggingFace({ config, weights: randomBf16(config), maxLen: 1024 });
const n = 24, ids = Array.from({ length: n }, (_, i) => (i * 7919 + 13) % config.vocab_size);
const spans = [[0, 11], [11, n - 1]];
const time = (fn) => {
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b)[ms.length >> 1];
};
model.forward(ids); // the activations of this length, made once
console.log(`# ${new Date().toISOString()} ${cpus()[0].model}, ${cpus().length} cores; uptime: ${execSync('uptime').toString().trim()}`);
console.log(`# GPT-2 small shape (${config.n_layer} layers x ${config.n_head} heads), random BF16 weights, inference-only, n = ${n}, estimate: median of ${runs} runs, grid: one run`);
const est = time(() => model.ablationEstimate(ids, { spans }));
console.log(`ablationEstimate (2 spans, zero + mean): ${est.toFixed(0)} ms`);
const t0 = performance.now();
model.ablationGrid(ids);
const grid = performance.now() - t0;
console.log(`ablationGrid (exact, 2 x 144 heads): ${grid.toFixed(0)} ms`);
console.log(`ratio: ${(est / grid).toFixed(4)} (estimate / exact), ${(grid / est).toFixed(1)}x faster; load after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
model.dispose();
