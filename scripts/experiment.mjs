// experiment.mjs: every attention form x task (reverse, sort, recall, chars), the same model size,
// budget, schedule and seeds; prints markdown tables of the final held-out accuracy (bits per
// character) and the time per training step (measured side by side, after training). Runs the
// wasm SIMD build in this Node process (one thread).
//   npm run experiment                      (the full run, docs/model.md has its table)
//   node scripts/experiment.mjs --steps 200 --forms softmax,synth:random --tasks reverse,recall --seeds 1,2
import { loadAttention } from '../wasm/index.js';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const FORMS = (args.forms ?? 'softmax,local,strided,linear:elu+1,linear:relu,linear:taylor,retention,synth:dense,synth:random,synth:factorized-dense,synth:factorized-random,synth:mixture').split(',');
const TASKS = (args.tasks ?? 'reverse,sort,recall,chars').split(',');
const SEEDS = (args.seeds ?? '1').split(',').map(Number);
const STEPS = Number(args.steps ?? 1500);
const BATCH = Number(args.batch ?? 32);
const LR = Number(args.lr ?? 2e-3);
const WARMUP = Math.round(STEPS / 10);
const SIZE = { dModel: 64, heads: 4, layers: 2, dFF: 128, maxLen: 64 };
const TASK_OPTS = { reverse: { length: 16, symbols: 10 }, sort: { length: 16, symbols: 10 }, recall: { length: 8, symbols: 20 }, chars: { length: 64 } };

const lib = await loadAttention();
const vocabOf = (task) => (TASK_OPTS[task].symbols ? TASK_OPTS[task].symbols + 1 : lib.charsTokenizer.vocab);
// the learning-rate schedule of the native trainer: linear warmup, then cosine decay to a tenth
const lrAt = (s) => LR * (s <= WARMUP ? s / WARMUP : 0.1 + 0.45 * (1 + Math.cos((Math.PI * (s - WARMUP)) / (STEPS - WARMUP + 1))));

console.log(`# experiment: ${FORMS.length} forms x ${TASKS.length} tasks, ${STEPS} steps of ${BATCH}, lr ${LR} (warmup ${WARMUP}, cosine), seeds ${SEEDS.join(',')}`);
console.log(`# model: ${JSON.stringify(SIZE)}, pre-norm decoder, sinusoidal positions; ${lib.simd ? 'SIMD' : 'scalar'} wasm, Node ${process.version}, one thread`);
const results = {};
for (const form of FORMS)
  for (const task of TASKS) {
    const runs = [];
    for (const seed of SEEDS) {
      const m = lib.createModel({ ...SIZE, vocab: vocabOf(task), attention: form, seed });
      const opts = { task, ...TASK_OPTS[task] };
      const t0 = performance.now();
      for (let s = 1; s <= STEPS; s++) m.trainStep({ ...opts, batchSize: BATCH, lr: lrAt(s) });
      const msPerStep = (performance.now() - t0) / STEPS;
      const ev = m.evaluate({ ...opts, batches: 8, batchSize: 64 });
      runs.push({ accuracy: ev.accuracy, bits: ev.loss / Math.LN2, msPerStep, params: m.parameterCount });
      m.dispose();
    }
    const mean = (k) => runs.reduce((s, r) => s + r[k], 0) / runs.length;
    results[`${form}|${task}`] = { accuracy: mean('accuracy'), bits: mean('bits'), msPerStep: mean('msPerStep'), params: runs[0].params,
      spread: runs.length > 1 ? Math.max(...runs.map((r) => r.accuracy)) - Math.min(...runs.map((r) => r.accuracy)) : 0 };
    const r = results[`${form}|${task}`];
    console.log(`# ${form} ${task}: accuracy ${(100 * r.accuracy).toFixed(1)}%${task === 'chars' ? `, ${r.bits.toFixed(3)} bits/char` : ''}, ${r.msPerStep.toFixed(1)} ms/step in the training loop, ${r.params} parameters`);
  }

// Time per step, measured side by side: the machine may be shared, so a form's training-loop
// average depends on what else ran at that moment. For each task, every form's model takes a few
// steps in turn, rounds rotating the order; the median over rounds is reported.
const ROUNDS = Number(args.rounds ?? 7), STEPS_PER_ROUND = Number(args['round-steps'] ?? 4);
for (const task of TASKS) {
  const opts = { task, ...TASK_OPTS[task], batchSize: BATCH, lr: LR };
  const models = FORMS.map((form) => lib.createModel({ ...SIZE, vocab: vocabOf(task), attention: form, seed: SEEDS[0] }));
  for (const m of models) m.trainStep(opts); // warm-up (first-touch allocations)
  const times = FORMS.map(() => []);
  for (let r = 0; r < ROUNDS; r++)
    for (let i = 0; i < FORMS.length; i++) {
      const f = (i + r) % FORMS.length;
      const t0 = performance.now();
      for (let s = 0; s < STEPS_PER_ROUND; s++) models[f].trainStep(opts);
      times[f].push((performance.now() - t0) / STEPS_PER_ROUND);
    }
  FORMS.forEach((form, f) => {
    const sorted = times[f].sort((a, b) => a - b);
    results[`${form}|${task}`].msPerStep = sorted[Math.floor(sorted.length / 2)];
  });
  for (const m of models) m.dispose();
}

const cell = (form, task) => {
  const r = results[`${form}|${task}`];
  const acc = `${(100 * r.accuracy).toFixed(1)}%${SEEDS.length > 1 ? ` (±${(50 * r.spread).toFixed(1)})` : ''}`;
  return task === 'chars' ? `${r.bits.toFixed(2)} bits/char (${acc})` : acc;
};
console.log('\nFinal held-out token accuracy (chars: bits per character, lower is better; accuracy of the next character in brackets):\n');
console.log(`| attention | ${TASKS.join(' | ')} |`);
console.log(`|---|${TASKS.map(() => '---:').join('|')}|`);
for (const form of FORMS) console.log(`| ${form} | ${TASKS.map((t) => cell(form, t)).join(' | ')} |`);
const positions = (t) => (t === 'chars' ? TASK_OPTS.chars.length : t === 'recall' ? 2 * TASK_OPTS.recall.length + 1 : 2 * TASK_OPTS[t].length);
console.log(`\nTime per training step (ms, batch of ${BATCH}; positions: ${TASKS.map((t) => `${t} ${positions(t)}`).join(', ')}), ` +
  `the median of ${ROUNDS} rounds of ${STEPS_PER_ROUND} steps with every form in turn, and parameters:\n`);
console.log(`| attention | ${TASKS.join(' | ')} | parameters (${TASKS[0]}) |`);
console.log(`|---|${TASKS.map(() => '---:').join('|')}|---:|`);
for (const form of FORMS)
  console.log(`| ${form} | ${TASKS.map((t) => results[`${form}|${t}`].msPerStep.toFixed(1)).join(' | ')} | ${results[`${form}|${TASKS[0]}`].params} |`);
