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
// The fortunes models form no sink at this scale, so a second part trains the same three variants
// where one forms: the bigram-backcopy letters (lab/backcopy.js; Guo et al. 2024, arXiv
// 2410.13835), one layer of one head with almost no feed-forward (dFF 1), so a head with nothing to
// fetch must rest its weight somewhere harmless. There the first-token weight is split into resting
// rows and working rows (a trigger letter's, which fetch the letter before it), and the eviction cost
// is read on a stream of fresh backcopy letters.
//   node scripts/sink-claims.mjs [--quick] [--part fortunes|backcopy] [--seeds 3] [--steps 800]
//        [--backcopy-steps 4000] [--jobs 2] [--chars 4096] [--window 32] [--ship] [--reuse]
// --part: one of the two parts only (both by default);
// --ship copies seed 1 of each model to web/models/sinks-{plain,gate,learned}.safetensors and
// sinks-backcopy-{plain,gate,learned}.safetensors (the attention-sinks panel's); --quick: one seed,
// a short budget (its test: it runs and prints the tables);
// --reuse: keep the models a previous run left in the directory (their training time beside them).
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpuName } from '../lab/cpu.js';
import { loadAttention } from '../wasm/index.js';
import { backcopyText, TRIGGERS, triggerRows } from '../lab/backcopy.js';
import { ensureFortunes, FORTUNES } from './fortunes.mjs';
import { buildTrainer, inJobs, intFlags, mean, ROOT, runTrainer, sd } from './claim-tools.mjs';
import { evenFirstWeight, restingWeights } from '../lab/heads.js';
import { backcopyInputs, documentStarts, firstTokenWeight, readPastWindow, sinkTexts } from './sink-measure.mjs';

const args = process.argv.slice(2);
const flag = intFlags('sink-claims.mjs', args);
const QUICK = args.includes('--quick'), SHIP = args.includes('--ship'), REUSE = args.includes('--reuse');
const PARTS = ['fortunes', 'backcopy'];
const part = args.includes('--part') ? args[args.indexOf('--part') + 1] : null;
if (part !== null && !PARTS.includes(part)) {
  console.error(`sink-claims.mjs: --part must be one of ${PARTS.join(', ')}, got ${JSON.stringify(part)}`);
  process.exit(2);
}
const seeds = flag('seeds', QUICK ? 1 : 3), jobs = flag('jobs', 2), chars = flag('chars', QUICK ? 512 : 4096);
// Each part: its model, its budget, its text and how it reads past the window (W, keeping S tokens).
const SETUPS = {
  fortunes: {
    dModel: 64, heads: 4, layers: 3, dFF: 176, maxLen: 128,
    steps: flag('steps', QUICK ? 20 : 800), batch: 32, lr: 3e-3, warmup: QUICK ? 5 : 100,
    window: flag('window', 32), sinks: 4,
    starts: QUICK ? 4 : 64, // held-out document starts the first-token weight is averaged over
  },
  backcopy: {
    dModel: 64, heads: 1, layers: 1, dFF: 1, maxLen: 32, // attention almost alone: a resting head must rest harmlessly
    steps: flag('backcopy-steps', QUICK ? 40 : 4000), batch: 32, lr: 3e-3, warmup: QUICK ? 5 : 100,
    window: 16, sinks: 4, starts: QUICK ? 8 : 256,
  },
};
const VARIANTS = [
  { id: 'plain', label: 'plain softmax', option: [] },
  { id: 'gate', label: 'output gate', option: ['--outputGate', 'true'] },
  { id: 'learned', label: 'learned sink', option: ['--learnedSinks', 'true'] },
];
const parts = part ? [part] : PARTS;
if (parts.includes('fortunes')) {
  const why = ensureFortunes();
  if (why) {
    console.error(`sink-claims.mjs: ${why}`);
    process.exit(1);
  }
}
const trainer = buildTrainer('sink-claims.mjs');
const dir = process.env.SINK_CLAIMS_DIR || `/tmp/sink-claims${QUICK ? '-quick' : ''}`;
mkdirSync(dir, { recursive: true });
// the backcopy letters the trainer reads: seed 1 (the measurements read fresh letters of seeds 2 and 3)
const TEXT = { fortunes: FORTUNES, backcopy: `${dir}/backcopy.txt` };
if (parts.includes('backcopy')) writeFileSync(TEXT.backcopy, backcopyText(1));
const out = (p, v, seed) => `${dir}/${p === 'fortunes' ? '' : `${p}-`}${v.id}-${seed}.safetensors`;

function flags(p, v, seed) {
  const S = SETUPS[p];
  return ['--task', 'chars', '--text', TEXT[p], '--bos', '--block', 'llama', '--d-model', S.dModel, '--heads', S.heads,
    '--layers', S.layers, '--d-ff', S.dFF, '--max-len', S.maxLen, '--length', S.maxLen, ...v.option,
    '--steps', S.steps, '--batch', S.batch, '--lr', S.lr, '--warmup', S.warmup, '--eval-every', S.steps,
    '--eval-batches', 8, '--seed', seed, '--threads', 1, '--quiet', '--out', out(p, v, seed)].map(String);
}

function train(p, v, seed) {
  const file = out(p, v, seed);
  if (REUSE && existsSync(file) && existsSync(`${file}.json`)) return { ...JSON.parse(readFileSync(`${file}.json`, 'utf8')), reused: true };
  return runTrainer(trainer, flags(p, v, seed), (so) => {
    const fin = /final: eval loss ([\d.]+) \(([\d.]+) bits\/token\).*, ([\d.]+) s/.exec(so);
    if (!fin) return null;
    const r = { seconds: Number(fin[3]), trainerBits: Number(fin[2]) };
    writeFileSync(`${file}.json`, JSON.stringify(r));
    return r;
  });
}

const describe = (S) => `d = ${S.dModel}, ${S.heads} head${S.heads > 1 ? 's' : ''}, ${S.layers} layer${S.layers > 1 ? 's' : ''}, dFF ${S.dFF}, `
  + `windows of ${S.maxLen}; ${S.steps} steps of ${S.batch}, lr ${S.lr}`;
console.log(`# character models from document starts after a token 0, the llama block; ${seeds} seed${seeds > 1 ? 's' : ''} each, `
  + `${jobs} trainings at a time, 1 thread each`);
if (parts.includes('fortunes')) console.log(`#   on Debian's fortunes: ${describe(SETUPS.fortunes)}`);
if (parts.includes('backcopy')) console.log(`#   on the bigram-backcopy letters (lab/backcopy.js, seed 1): ${describe(SETUPS.backcopy)}`);
console.log(`# ${cpuName()}`);
const todo = parts.flatMap((p) => VARIANTS.flatMap((v) => Array.from({ length: seeds }, (_, i) => ({ p, v, seed: i + 1 }))));
const t0 = Date.now(), trained = {};
await inJobs(todo, jobs, async ({ p, v, seed }) => {
  const r = (trained[`${p} ${v.id} ${seed}`] = await train(p, v, seed));
  console.log(`#   ${p}: ${v.id} seed ${seed}: ${r.seconds.toFixed(0)} s`);
});
const minutes = (Date.now() - t0) / 60000;

// The measurements, in the SIMD build on one thread (scripts/sink-measure.mjs)
const lib = await loadAttention();
const working = triggerRows(lib.charsTokenizer.encode);
const MEASURE = {
  fortunes: () => ({ texts: sinkTexts(lib, chars), starts: documentStarts(lib, SETUPS.fortunes.maxLen, SETUPS.fortunes.starts) }),
  backcopy: () => backcopyInputs(lib, SETUPS.backcopy.maxLen, SETUPS.backcopy.starts, chars),
};
const ms = (xs, d = 3) => `${mean(xs).toFixed(d)} ± ${sd(xs).toFixed(d)}`;
const perSeed = (xs) => xs.map((x) => x.toFixed(3)).join(', ');
const cost = (r, t) => r[t].window - r[t].kept;
const seconds = [];
for (const p of parts) {
  const S = SETUPS[p], { texts, starts } = MEASURE[p](), W = S.window, K = S.sinks;
  const rows = [];
  for (const { v, seed } of todo.filter((t) => t.p === p)) {
    const model = lib.loadModel(readFileSync(out(p, v, seed)), { training: false });
    const row = { v: v.id, seed, params: model.parameterCount, seconds: trained[`${p} ${v.id} ${seed}`].seconds };
    if (p === 'fortunes') row.first = firstTokenWeight(model, starts);
    else Object.assign(row, restingWeights(model, starts, working));
    for (const t of texts) row[t.id] = readPastWindow(model, t.tokens, W, K);
    rows.push(row);
    seconds.push(row.seconds);
    model.dispose();
    if (SHIP && seed === 1) copyFileSync(out(p, v, seed), `${ROOT}web/models/sinks-${p === 'fortunes' ? '' : 'backcopy-'}${v.id}.safetensors`);
  }
  const of = (id) => rows.filter((r) => r.v === id);
  const uniformFirst = evenFirstWeight(S.maxLen);
  const evict = `eviction cost: bits per character past the window (W = ${W}) of a rolling window minus the same window keeping the first ${K} tokens, `
    + `on ${texts.map((t) => `${t.tokens.length} tokens of ${t.label}`).join(' and ')}; mean ± sd over ${seeds} seed${seeds > 1 ? 's' : ''}`;
  if (p === 'fortunes') {
    console.log(`\n## Claim 1: the output gate removes the attention sink\n`);
    console.log(`first-token weight: mean over layers, heads and query positions >= 1 on the starts of ${starts.length} held-out documents `
      + `(a head spreading its weight evenly over the causal rows would give ${uniformFirst.toFixed(3)}); ${evict}\n`);
    console.log(`| model | parameters | weight on the first token | per seed | ${texts.map((t) => `eviction cost, ${t.id} (bits/char) | per seed`).join(' | ')} |`);
    console.log(`|---|---|---|---|${texts.map(() => '---|---|').join('')}`);
    for (const v of VARIANTS) {
      const rs = of(v.id);
      console.log(`| ${v.label} | ${rs[0].params} | ${ms(rs.map((r) => r.first))} | ${perSeed(rs.map((r) => r.first))} | `
        + texts.map((t) => `${ms(rs.map((r) => cost(r, t.id)))} | ${perSeed(rs.map((r) => cost(r, t.id)))}`).join(' | ') + ' |');
    }
  } else {
    console.log(`\n## Claim 1 where a sink forms: the bigram-backcopy letters\n`);
    console.log(`weight on the first token (raw softmax weight, mean over query positions >= 1 of ${starts.length} fresh documents of `
      + `${S.maxLen - 1} letters after a token 0; an even spread would give ${uniformFirst.toFixed(3)}), on resting rows (a letter that is `
      + `not a trigger: its next letter follows from itself) and working rows (a trigger ${[...TRIGGERS].join(', ')}: its next letter is the one `
      + `before it); the weight on the learned sink's column (no key) on resting rows; ${evict}\n`);
    console.log(`| backcopy model | parameters | first token, resting rows | per seed | first token, working rows | learned sink, resting rows | `
      + `${texts.map(() => 'eviction cost (bits/char) | per seed').join(' | ')} |`);
    console.log(`|---|---|---|---|---|---|${texts.map(() => '---|---|').join('')}`);
    for (const v of VARIANTS) {
      const rs = of(v.id);
      console.log(`| ${v.label} | ${rs[0].params} | ${ms(rs.map((r) => r.resting))} | ${perSeed(rs.map((r) => r.resting))} | ${ms(rs.map((r) => r.working))} | `
        + `${v.id === 'learned' ? ms(rs.map((r) => r.sink)) : '-'} | `
        + texts.map((t) => `${ms(rs.map((r) => cost(r, t.id)))} | ${perSeed(rs.map((r) => cost(r, t.id)))}`).join(' | ') + ' |');
    }
  }
  console.log(`\n## Claim 2: three ways to give attention somewhere to rest${p === 'backcopy' ? ', on the backcopy letters' : ''}\n`);
  console.log(`bits per character past the window (W = ${W}), mean ± sd over the seeds; "recompute" is each model's own reference `
    + `(a fresh forward over the last W tokens at every position)\n`);
  console.log(`| way to rest | model, reading | ${texts.map((t) => `${t.id}: bits/char past the window | more than its recompute`).join(' | ')} |`);
  console.log(`|---|---|${texts.map(() => '---|---|').join('')}`);
  const way = (label, id, key, reading) => {
    const rs = of(id);
    console.log(`| ${label} | ${VARIANTS.find((v) => v.id === id).label}, ${reading} | `
      + texts.map((t) => `${ms(rs.map((r) => r[t.id][key]))} | ${ms(rs.map((r) => r[t.id][key] - r[t.id].recompute))}`).join(' | ') + ' |');
  };
  way('none', 'plain', 'window', 'window only');
  way(`StreamingLLM: keep the first ${K} tokens`, 'plain', 'kept', `window + ${K} sinks`);
  way('gpt-oss: a learned sink logit', 'learned', 'window', 'window only');
  way('the output gate', 'gate', 'window', 'window only');
}
const cpuMinutes = seconds.reduce((a, b) => a + b, 0) / 60, reused = Object.values(trained).filter((r) => r.reused).length;
console.log(`\nbudget: ${parts.map((p) => `${p}: ${SETUPS[p].steps} steps of ${SETUPS[p].batch} windows a training`).join('; ')}; ${seconds.length} trainings of `
  + `${Math.min(...seconds).toFixed(0)}-${Math.max(...seconds).toFixed(0)} s on 1 thread each (${cpuMinutes.toFixed(1)} minutes in all; `
  + `${reused ? `this run reused ${reused} models of an earlier one` : `${minutes.toFixed(1)} wall minutes, ${jobs} at a time`}); ${cpuName()}`);
