// hybrid-claim.mjs: issue 35's claim 3, "a few softmax layers restore what linear layers forget",
// measured. Multi-query associative recall (Zoology's MQAR, Arora et al. 2023, arXiv 2312.04927: the
// trainer's --task mqar, `length` key-value pairs, then every key again in a random order, each to
// be answered with its value). Three stacks of the same shape and (nearly) the same parameters,
// trained with the native trainer (build/trainer) on the same batches and schedule, three seeds each:
//   pure Gated DeltaNet (Yang et al. 2024, arXiv 2412.06464), a 3:1 gated-delta:softmax hybrid with
//   softmax as the last of each 4 layers (Qwen3-Next's pattern), and pure softmax.
// Prints the recall accuracy (mean +- sd over the seeds), the steps each training took to reach 90%
// held-out recall (evaluated every 100 steps), the parameters and what each stack keeps per sequence
// at the task's length: softmax layers a KV cache of 2 x kvHeads x dHead x 4 bytes per token,
// gated-delta layers a state of heads x dk x dv x 4 bytes whatever the length.
// A fixed state must forget once the pairs outgrow it: a gated-delta layer's heads can write
// different keys (its write strength depends on the token), so it holds up to heads x dk = dModel
// keys, 64 here; 8 pairs fit. What this size measures is whether each stack learns the lookup, and
// how fast; the claim's own regime (more than dModel pairs) is docs/experiments.md's next step.
//   node scripts/hybrid-claim.mjs [--quick] [--seeds 3] [--steps N] [--batch N] [--pairs N] [--jobs 2]
// --quick: one seed and a short budget (tests/node/hybrid-claim.test.js: it runs and prints the table).
import { cpuName } from '../lab/cpu.js';
import { buildTrainer, inJobs, intFlags, mean, runTrainer, sd } from './claim-tools.mjs';

const args = process.argv.slice(2);
const flag = intFlags('hybrid-claim.mjs', args);
const QUICK = args.includes('--quick');
// The setup (tried first: see docs/experiments.md, "A few softmax layers restore what linear layers forget")
const SETUP = {
  pairs: flag('pairs', QUICK ? 4 : 8), // key-value pairs per sequence, each queried once
  dModel: 64, heads: 4, layers: 4, dFF: 128, // dHead 16: a gated-delta head's state holds 16 x 16 values
  batch: flag('batch', 32), lr: 1e-3, warmup: 100, // 3e-3 left every stack on the 41% plateau (docs/experiments.md)
  steps: flag('steps', QUICK ? 30 : 2500),
  seeds: flag('seeds', QUICK ? 1 : 3),
  jobs: flag('jobs', 2), // trainings at a time, one thread each
};
SETUP.symbols = 4 * SETUP.pairs; // keys from the first half, values from the second
SETUP.vocab = SETUP.symbols + 1;
SETUP.maxLen = 4 * SETUP.pairs; // 2 pairs + 2 queries tokens, less the last
const STACKS = [
  { id: 'gated-delta', label: 'pure Gated DeltaNet', forms: Array(SETUP.layers).fill('gated-delta') },
  { id: 'hybrid', label: '3:1 gated-delta:softmax (Qwen3-Next)', forms: Array.from({ length: SETUP.layers }, (_, l) => (l % 4 === 3 ? 'softmax' : 'gated-delta')) },
  { id: 'softmax', label: 'pure softmax', forms: Array(SETUP.layers).fill('softmax') },
];

const trainer = buildTrainer('hybrid-claim.mjs');
const EVAL_EVERY = 100; // held-out recall every 100 steps: the step it first reaches 90%

// Equal parameters: a gated-delta layer has 2 (heads x dModel + heads) more than a softmax layer (its
// write strength beta and its decay gate, each nn.Linear(dModel, heads)), so a stack with fewer
// gated-delta layers gets a wider FFN (each unit of dFF is 2 dModel + 1 parameters a layer: W1's
// column with its bias, W2's row), to the nearest unit.
const deltaExtra = 2 * (SETUP.heads * SETUP.dModel + SETUP.heads), ffnUnit = SETUP.layers * (2 * SETUP.dModel + 1);
const mostDelta = Math.max(...STACKS.map((st) => st.forms.filter((f) => f !== 'softmax').length));
for (const st of STACKS) {
  const delta = st.forms.filter((f) => f !== 'softmax').length;
  st.dFF = SETUP.dFF + Math.round(((mostDelta - delta) * deltaExtra) / ffnUnit);
}

function flags(stack, seed) {
  return ['--task', 'mqar', '--length', SETUP.pairs, '--symbols', SETUP.symbols, '--vocab', SETUP.vocab,
    '--d-model', SETUP.dModel, '--heads', SETUP.heads, '--layers', SETUP.layers, '--d-ff', stack.dFF,
    '--max-len', SETUP.maxLen, '--layer-forms', stack.forms.join(','), '--steps', SETUP.steps, '--batch', SETUP.batch,
    '--lr', SETUP.lr, '--warmup', Math.min(SETUP.warmup, SETUP.steps), '--eval-every', Math.min(EVAL_EVERY, SETUP.steps),
    '--eval-batches', 8, '--seed', seed, '--threads', 1].map(String);
}

// One training: its parameters, its held-out accuracy (8 batches of 64 sequences: 512 x pairs queries)
// and the first evaluated step at which that reached 90% (null if none did).
function run(stack, seed) {
  return runTrainer(trainer, flags(stack, seed), (out) => {
    const params = /, (\d+) parameters,/.exec(out), fin = /final: eval loss ([\d.]+) .*accuracy ([\d.]+), ([\d.]+) ms\/step, ([\d.]+) s/.exec(out);
    if (!params || !fin) return null;
    const at90 = [...out.matchAll(/^step +(\d+) .*\| eval loss [\d.]+ acc ([\d.]+)/gm)].find((m) => Number(m[2]) >= 0.9);
    return { stack: stack.id, seed, params: Number(params[1]), loss: Number(fin[1]), accuracy: Number(fin[2]), seconds: Number(fin[4]),
      at90: at90 ? Number(at90[1]) : null };
  });
}

// every (stack, seed), SETUP.jobs at a time
const todo = STACKS.flatMap((stack) => Array.from({ length: SETUP.seeds }, (_, i) => ({ stack, seed: i + 1 })));
const results = [];
const t0 = Date.now();
console.log(`# MQAR: ${SETUP.pairs} pairs (${SETUP.symbols} symbols), ${SETUP.pairs} queries a sequence, ${SETUP.maxLen - 1} positions; `
  + `d = ${SETUP.dModel}, ${SETUP.heads} heads (dHead ${SETUP.dModel / SETUP.heads}), ${SETUP.layers} layers, dFF ${STACKS.map((st) => `${st.dFF} (${st.id})`).join(', ')}; `
  + `${SETUP.steps} steps of ${SETUP.batch}, lr ${SETUP.lr}; ${SETUP.seeds} seed${SETUP.seeds > 1 ? 's' : ''}, ${SETUP.jobs} trainings at a time, 1 thread each`);
console.log(`# ${cpuName()}`);
await inJobs(todo, SETUP.jobs, async ({ stack, seed }) => {
  const r = await run(stack, seed);
  results.push(r);
  console.log(`#   ${stack.id} seed ${seed}: accuracy ${(100 * r.accuracy).toFixed(1)}%, eval loss ${r.loss.toFixed(3)}, `
    + `90% at step ${r.at90 ?? 'never'}, ${r.seconds.toFixed(0)} s`);
});
const minutes = (Date.now() - t0) / 60000;

// What a stack keeps per sequence at the task's length T (float32): a softmax layer caches a key and
// a value per token (2 x kvHeads x dHead x 4 bytes; kvHeads = heads here), a gated-delta layer one
// dk x dv state per head (heads x dHead x dHead x 4 bytes), whatever T.
const T = SETUP.maxLen - 1, dHead = SETUP.dModel / SETUP.heads;
function memory(stack) {
  const soft = stack.forms.filter((f) => f === 'softmax').length, delta = stack.forms.length - soft;
  const perToken = soft * 2 * SETUP.heads * dHead * 4, state = delta * SETUP.heads * dHead * dHead * 4;
  return { perToken, state, atT: perToken * T + state };
}
const pct = (x) => (100 * x).toFixed(1);
console.log(`\nMQAR recall accuracy, held out (${SETUP.pairs} queries in each of 512 sequences), mean ± sd over ${SETUP.seeds} seed${SETUP.seeds > 1 ? 's' : ''}; `
  + `memory per sequence at T = ${T} positions (float32):\n`);
console.log('| model | layers | parameters | recall accuracy | per seed | KV cache per token | state per sequence | total at T | per token at T | steps to 90% recall, per seed |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const stack of STACKS) {
  const rs = results.filter((r) => r.stack === stack.id).sort((a, b) => a.seed - b.seed);
  const acc = rs.map((r) => r.accuracy), m = memory(stack);
  const layers = stack.forms.map((f) => (f === 'softmax' ? 'S' : 'D')).join('');
  console.log(`| ${stack.label} | ${layers} | ${rs[0].params} | ${pct(mean(acc))}% ± ${pct(sd(acc))} | ${acc.map(pct).join(', ')} `
    + `| ${m.perToken} B | ${m.state} B | ${m.atT} B | ${(m.atT / T).toFixed(1)} B | ${rs.map((r) => r.at90 ?? 'never').join(', ')} |`);
}
const params = results.map((r) => r.params);
console.log(`\nparameters differ by ${(100 * (Math.max(...params) / Math.min(...params) - 1)).toFixed(2)}% at most (a gated-delta layer has its `
  + `write-strength and decay projections, 2 x (heads x dModel + heads) = ${deltaExtra} parameters beyond a softmax layer's, so the stacks `
  + `with softmax layers get a wider FFN: dFF ${STACKS.map((st) => `${st.dFF}`).join(', ')}); chance is ${pct(1 / (SETUP.symbols - SETUP.symbols / 2))}%.`);
console.log(`budget: ${SETUP.steps} steps of ${SETUP.batch} sequences a training, ${minutes.toFixed(1)} minutes for all ${results.length} `
  + `(${SETUP.jobs} at a time, 1 thread each); ${cpuName()}`);
