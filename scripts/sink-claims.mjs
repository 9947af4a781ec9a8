// sink-claims.mjs: issue 35's claims 1 and 2, measured on character models that have read Debian's
// fortunes (data/README.md), trained alike from each document's start after a token 0 (as language
// models read documents after a start mark, where attention sinks form on that first token):
//   plain        softmax attention (the llama-style block, rotary positions)
//   output gate  the same with Y = SDPA(Q, K, V) * sigmoid(x W_g) before W_O (Qiu et al. 2025,
//                "Gated Attention for Large Language Models", arXiv 2505.06708; Qwen3-Next)
//   learned sink the same with one learned logit per head, an extra column with no value (gpt-oss)
// Three seeds each, trained with the native trainer (build/trainer), two at a time on one thread each.
// Claim 1, "the output gate removes the attention sink": the weight each model's heads put on the
//   first token (mean over layers, heads and query positions >= 1, on the starts of held-out
//   documents), and what evicting the first tokens costs when reading past the window: bits per
//   character of a rolling window of W against the same window keeping the first 4 tokens.
// Claim 2, "three ways to give attention somewhere to rest", read past the window on held-out text:
//   StreamingLLM's kept first tokens (the plain model, window + 4 sinks), gpt-oss's learned sink and
//   the output gate (each with a window only), beside the plain model's window only (nowhere to rest).
// Both are read on two texts: held-out fortunes (a new document every few hundred characters, after
// a blank line) and the panel's default text (web/models/stream-text.txt: the project's own prose,
// no document breaks), where nothing replaces the start token once it is evicted.
//   node scripts/sink-claims.mjs [--quick] [--seeds 3] [--steps 800] [--jobs 2] [--chars 4096]
//                                [--window 32] [--ship] [--reuse]
// --ship copies seed 1 of each model to web/models/sinks-{plain,gate,learned}.safetensors (the
// attention-sinks panel's); --quick: one seed, a short budget (its test: it runs and prints the tables);
// --reuse: keep the models a previous run left in the directory (their training time beside them).
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpuName } from '../lab/cpu.js';
import { loadAttention } from '../wasm/index.js';
import { ensureFortunes, FORTUNES } from './fortunes.mjs';
import { buildTrainer, inJobs, intFlags, mean, ROOT, sd } from './claim-tools.mjs';
import { documentStarts, firstTokenWeight, readPastWindow, sinkTexts } from './sink-measure.mjs';

const args = process.argv.slice(2);
const flag = intFlags('sink-claims.mjs', args);
const QUICK = args.includes('--quick'), SHIP = args.includes('--ship'), REUSE = args.includes('--reuse');
const SETUP = {
  dModel: 64, heads: 4, layers: 3, dFF: 176, maxLen: 128,
  steps: flag('steps', QUICK ? 20 : 800), batch: 32, lr: 3e-3, warmup: QUICK ? 5 : 100,
  seeds: flag('seeds', QUICK ? 1 : 3), jobs: flag('jobs', 2),
  chars: flag('chars', QUICK ? 512 : 4096), window: flag('window', 32), sinks: 4,
  starts: QUICK ? 4 : 64, // held-out document starts the first-token weight is averaged over
};
const VARIANTS = [
  { id: 'plain', label: 'plain softmax', option: [] },
  { id: 'gate', label: 'output gate', option: ['--outputGate', 'true'] },
  { id: 'learned', label: 'learned sink', option: ['--learnedSinks', 'true'] },
];
const why = ensureFortunes();
if (why) {
  console.error(`sink-claims.mjs: ${why}`);
  process.exit(1);
}
const trainer = buildTrainer('sink-claims.mjs');
const dir = process.env.SINK_CLAIMS_DIR || `/tmp/sink-claims${QUICK ? '-quick' : ''}`;
mkdirSync(dir, { recursive: true });
const out = (v, seed) => `${dir}/${v.id}-${seed}.safetensors`;

function flags(v, seed) {
  return ['--task', 'chars', '--text', FORTUNES, '--bos', '--block', 'llama', '--d-model', SETUP.dModel, '--heads', SETUP.heads,
    '--layers', SETUP.layers, '--d-ff', SETUP.dFF, '--max-len', SETUP.maxLen, '--length', SETUP.maxLen, ...v.option,
    '--steps', SETUP.steps, '--batch', SETUP.batch, '--lr', SETUP.lr, '--warmup', SETUP.warmup, '--eval-every', SETUP.steps,
    '--eval-batches', 8, '--seed', seed, '--threads', 1, '--quiet', '--out', out(v, seed)].map(String);
}

function train(v, seed) {
  if (REUSE && existsSync(out(v, seed)) && existsSync(`${out(v, seed)}.json`)) return JSON.parse(readFileSync(`${out(v, seed)}.json`, 'utf8'));
  return new Promise((resolve, reject) => {
    const p = spawn(trainer, flags(v, seed), { stdio: ['ignore', 'pipe', 'pipe'] });
    let so = '', se = '';
    p.stdout.on('data', (d) => (so += d));
    p.stderr.on('data', (d) => (se += d));
    p.on('close', (code) => {
      const fin = /final: eval loss ([\d.]+) \(([\d.]+) bits\/token\).*, ([\d.]+) s/.exec(so);
      if (code !== 0 || !fin) return reject(new Error(`trainer ${flags(v, seed).join(' ')}: exit ${code}\n${so}${se}`));
      const r = { seconds: Number(fin[3]), trainerBits: Number(fin[2]) };
      writeFileSync(`${out(v, seed)}.json`, JSON.stringify(r));
      resolve(r);
    });
  });
}

const todo = VARIANTS.flatMap((v) => Array.from({ length: SETUP.seeds }, (_, i) => ({ v, seed: i + 1 })));
console.log(`# character models on Debian's fortunes from document starts after a token 0: d = ${SETUP.dModel}, ${SETUP.heads} heads, `
  + `${SETUP.layers} layers, dFF ${SETUP.dFF}, windows of ${SETUP.maxLen}; ${SETUP.steps} steps of ${SETUP.batch}, lr ${SETUP.lr}; `
  + `${SETUP.seeds} seed${SETUP.seeds > 1 ? 's' : ''} each, ${SETUP.jobs} trainings at a time, 1 thread each`);
console.log(`# ${cpuName()}`);
const t0 = Date.now(), trained = {};
await inJobs(todo, SETUP.jobs, async ({ v, seed }) => {
  trained[`${v.id} ${seed}`] = await train(v, seed);
  console.log(`#   ${v.id} seed ${seed}: ${trained[`${v.id} ${seed}`].seconds.toFixed(0)} s`);
});
const minutes = (Date.now() - t0) / 60000;

// The measurements, in the SIMD build on one thread (scripts/sink-measure.mjs)
const lib = await loadAttention();
const TEXTS = sinkTexts(lib, SETUP.chars);
const starts = documentStarts(lib, SETUP.maxLen, SETUP.starts);
const W = SETUP.window, S = SETUP.sinks;
let uniformFirst = 0; // mean over rows i = 1 .. maxLen - 1 of 1 / (i + 1)
for (let i = 1; i < SETUP.maxLen; i++) uniformFirst += 1 / (i + 1) / (SETUP.maxLen - 1);
const rows = [];
for (const { v, seed } of todo) {
  const model = lib.loadModel(readFileSync(out(v, seed)), { training: false });
  const row = { v: v.id, seed, params: model.parameterCount, first: firstTokenWeight(model, starts), seconds: trained[`${v.id} ${seed}`].seconds };
  for (const t of TEXTS) row[t.id] = readPastWindow(model, t.tokens, W, S);
  rows.push(row);
  model.dispose();
  if (SHIP && seed === 1) copyFileSync(out(v, seed), `${ROOT}web/models/sinks-${v.id}.safetensors`);
}

const ms = (xs, d = 3) => `${mean(xs).toFixed(d)} ± ${sd(xs).toFixed(d)}`;
const of = (id) => rows.filter((r) => r.v === id);
const cost = (r, t) => r[t].window - r[t].kept;
console.log(`\n## Claim 1: the output gate removes the attention sink\n`);
console.log(`first-token weight: mean over layers, heads and query positions >= 1 on the starts of ${starts.length} held-out documents `
  + `(a head spreading its weight evenly over the causal rows would give ${uniformFirst.toFixed(3)}); eviction cost: bits per character past `
  + `the window (W = ${W}) of a rolling window minus the same window keeping the first ${S} tokens, on ${TEXTS.map((t) => `${t.tokens.length} tokens of ${t.label}`).join(' and ')}; `
  + `mean ± sd over ${SETUP.seeds} seed${SETUP.seeds > 1 ? 's' : ''}\n`);
console.log(`| model | parameters | weight on the first token | per seed | ${TEXTS.map((t) => `eviction cost, ${t.id} (bits/char) | per seed`).join(' | ')} |`);
console.log(`|---|---|---|---|${TEXTS.map(() => '---|---|').join('')}`);
for (const v of VARIANTS) {
  const rs = of(v.id);
  console.log(`| ${v.label} | ${rs[0].params} | ${ms(rs.map((r) => r.first))} | ${rs.map((r) => r.first.toFixed(3)).join(', ')} | `
    + TEXTS.map((t) => `${ms(rs.map((r) => cost(r, t.id)))} | ${rs.map((r) => cost(r, t.id).toFixed(3)).join(', ')}`).join(' | ') + ' |');
}
console.log(`\n## Claim 2: three ways to give attention somewhere to rest\n`);
console.log(`bits per character past the window (W = ${W}), mean ± sd over the seeds; "recompute" is each model's own reference `
  + `(a fresh forward over the last W tokens at every position)\n`);
console.log(`| way to rest | model, reading | ${TEXTS.map((t) => `${t.id}: bits/char past the window | more than its recompute`).join(' | ')} |`);
console.log(`|---|---|${TEXTS.map(() => '---|---|').join('')}`);
const way = (label, id, key, reading) => {
  const rs = of(id);
  console.log(`| ${label} | ${VARIANTS.find((v) => v.id === id).label}, ${reading} | `
    + TEXTS.map((t) => `${ms(rs.map((r) => r[t.id][key]))} | ${ms(rs.map((r) => r[t.id][key] - r[t.id].recompute))}`).join(' | ') + ' |');
};
way('none', 'plain', 'window', 'window only');
way(`StreamingLLM: keep the first ${S} tokens`, 'plain', 'kept', `window + ${S} sinks`);
way('gpt-oss: a learned sink logit', 'learned', 'window', 'window only');
way('the output gate', 'gate', 'window', 'window only');
const seconds = rows.map((r) => r.seconds), cpuMinutes = seconds.reduce((a, b) => a + b, 0) / 60;
console.log(`\nbudget: ${SETUP.steps} steps of ${SETUP.batch} windows a training, ${seconds.length} trainings of `
  + `${Math.min(...seconds).toFixed(0)}-${Math.max(...seconds).toFixed(0)} s on 1 thread each (${cpuMinutes.toFixed(1)} minutes in all; `
  + `${REUSE ? 'this run reused the models of an earlier one' : `${minutes.toFixed(1)} wall minutes, ${SETUP.jobs} at a time`}); ${cpuName()}`);
