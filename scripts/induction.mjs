// induction.mjs: which attention forms can make an induction head (Olsson et al. 2022). The same
// 2-layer model (lab/induction.js: dModel 32, 2 heads, the llama-style block with rotary
// positions, so no position is added to the stream and a fixed-offset shortcut is closed) learns
// the repeat task (k random symbols then the same k again, k from 6 to 12) with every attention
// form a decoder can use, for 3 seeds; every 50 steps each head's induction score is measured on
// probes of the same kind (lab/heads.js). A form that reads no queries and keys (the dense and
// random Synthesizers) cannot take rotary positions and runs with positional 'none'.
//   node scripts/induction.mjs [--steps 1000] [--seeds 3] [--forms softmax,local]
import { loadAttention } from '../wasm/index.js';
import { cpuName } from '../lab/cpu.js';
import { MODEL, SETUP, formInduction, formedAt } from '../lab/induction.js';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const STEPS = Number(args.steps ?? 1000), SEEDS = Number(args.seeds ?? 3), BOUND = 0.5;
const lib = await loadAttention();
const forms = args.forms?.split(',') ?? lib.forms.filter((f) => f.causal).map((f) => f.name);
console.log(`# induction heads: ${JSON.stringify(MODEL)}, task repeat (length ${SETUP.length}, symbols ${SETUP.symbols}), ` +
  `${STEPS} steps of 32, seeds 1..${SEEDS}; formed = some head's induction score >= ${BOUND}; ${cpuName()}, ${new Date().toISOString()}`);
console.log('\n| form | formed (of seeds) | step formed (each seed) | best induction score at the end (each seed) | loss at the end (mean) | seconds per run |');
console.log('|---|---|---|---|---|---|');
const rows = [];
for (const attention of forms) {
  const info = lib.forms.find((f) => f.name === attention);
  const extra = info.usesQK ? {} : { positional: 'none' };
  const runs = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const m = lib.createModel({ vocab: SETUP.symbols + 1, maxLen: 2 * SETUP.length, ...MODEL, ...extra, attention, seed });
    const t0 = performance.now();
    const points = await formInduction(m, { steps: STEPS, every: 50 });
    const last = points[points.length - 1];
    runs.push({ formed: formedAt(points, BOUND), best: Math.max(...last.scores), loss: last.loss, s: (performance.now() - t0) / 1000 });
    m.dispose();
  }
  const formed = runs.filter((r) => r.formed !== null).length;
  const row = { attention, extra, runs };
  rows.push(row);
  console.log(`| ${attention}${extra.positional ? ' (positional none)' : ''} | ${formed} / ${SEEDS} | ${runs.map((r) => r.formed ?? '-').join(', ')} | ` +
    `${runs.map((r) => r.best.toFixed(2)).join(', ')} | ${(runs.reduce((a, r) => a + r.loss, 0) / SEEDS).toFixed(3)} | ` +
    `${(runs.reduce((a, r) => a + r.s, 0) / SEEDS).toFixed(1)} |`);
}
if (args.json) (await import('node:fs')).writeFileSync(args.json, JSON.stringify(rows, null, 1));
