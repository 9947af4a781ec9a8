// presets.mjs: the model panel's presets (lab/presets.js) trained as the panel trains them, one fresh
// model each (seed 1): AdamW, batch 16, the panel's "warm-up, then decay" schedule at peak 2e-3, then
// held-out loss and token accuracy on 4 fixed batches of 32, the KV cache line, and the time taken.
//   node scripts/presets.mjs [--task reverse] [--length 6] [--steps 1000]
import { loadAttention } from '../wasm/index.js';
import { PRESETS, cacheLine } from '../lab/presets.js';
import { modelConfig, panelLr, taskOptions } from '../lab/tasks.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const lib = await loadAttention();
const task = taskOptions({ task: arg('task', 'reverse'), mlen: Number(arg('length', 6)) });
const steps = Number(arg('steps', 1000));
const charsVocab = lib.charsTokenizer.vocab;
const runs = [{ id: 'none (softmax)', config: modelConfig({ task: task.task, msize: 'tiny', form: 'softmax', march: 'transformer' }, charsVocab) },
  ...PRESETS.map((p) => ({ id: p.id, config: p.config(task, { charsVocab }) }))];
console.log(`${task.task} of ${task.length}, ${steps} steps, batch 16, peak lr 2e-3 (warm-up, then decay), seed 1`);
console.log('model\tparameters\theld-out loss\theld-out accuracy\tseconds');
for (const r of runs) {
  const m = lib.createModel(r.config);
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) m.trainStep({ ...task, batchSize: 16, lr: panelLr(2e-3, m.steps, 'decay') });
  const seconds = (performance.now() - t0) / 1000;
  const e = m.evaluate({ ...task, batches: 4, batchSize: 32 });
  console.log(`${r.id}\t${m.parameterCount}\t${e.loss.toFixed(3)}\t${(100 * e.accuracy).toFixed(1)}%\t${seconds.toFixed(1)}`);
  console.log(`  ${cacheLine(m.config)}`);
  m.dispose();
}
