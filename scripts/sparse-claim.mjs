// sparse-claim.mjs: issue 48's claim, measured. NSA (Yuan et al. 2025, arXiv 2502.11089) reports that a
// model trained with native sparse attention matches full attention; DeepSeek-V3.2-Exp reports that DSA,
// added to a trained dense model, keeps its quality. Here, on Debian's fortunes (characters, windows of
// 128), three seeds, each sparse form reading 25% of the keys at the window's last position:
//   softmax  dense: DENSE steps, then TAIL more (--init: the same schedule as DSA's sparse stage);
//   dsa      the same dense checkpoint after DENSE steps with a lightning indexer added (its tensors as a
//            fresh DSA model initialises them), WARM steps of warm-up (the main model frozen, the indexer
//            learning the dense attention by KL), then TAIL steps of sparse training (topK 32 of 128);
//   nsa      trained sparse from the start (natively trainable) for DENSE + TAIL steps, blocks of 8 (the
//            first, the previous and the current block, 1 more by importance: 4 x 8 = 32 keys) and a
//            window of 8, with its FFN narrowed so its gates do not add parameters.
// Reported: held-out bits per character (the first 32,768 held-out characters, scripts/fortunes.mjs),
// mean and spread over the seeds, the gap to softmax; and for each sparse model, on the first 32
// held-out windows, the share of the keys its selection read and the share of the dense attention's
// mass (the causal softmax of the same queries and keys, model.sparseReading) that it kept.
//   node scripts/sparse-claim.mjs [--quick] [--seeds 3] [--dense N] [--warm N] [--tail N] [--jobs 2]
// --quick: one seed and a few steps (it runs and prints the table; the figures mean nothing).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuName } from '../lab/cpu.js';
import { readingSummary } from '../lab/sparse.js';
import { loadAttention } from '../wasm/index.js';
import { readSafetensors, writeSafetensors } from '../wasm/safetensors.js';
import { buildTrainer, inJobs, intFlags, mean, runTrainer, sd } from './claim-tools.mjs';
import { FORTUNES, ensureFortunes, heldOutBits, heldOutText } from './fortunes.mjs';

const args = process.argv.slice(2);
const flag = intFlags('sparse-claim.mjs', args);
const QUICK = args.includes('--quick');
const SETUP = {
  T: 128, dModel: 64, heads: 4, layers: 3, dFF: 176, batch: 16, lr: 3e-3, warmup: QUICK ? 2 : 100,
  dense: flag('dense', QUICK ? 6 : 800), warm: flag('warm', QUICK ? 3 : 100), tail: flag('tail', QUICK ? 4 : 400),
  seeds: flag('seeds', QUICK ? 1 : 3), jobs: flag('jobs', 2),
  heldChars: QUICK ? 2048 : 32768, massWindows: QUICK ? 2 : 32,
};
const NSA = { blockSize: 8, topBlocks: 1, window: 8 };
const DSA = { indexHeads: 2, indexDim: 8, topK: 32 };
// NSA's gates are nn.Linear(dModel, 3 heads) per layer: 3 heads (dModel + 1) parameters; a unit of a
// SwiGLU FFN's width is 3 dModel (W1's and W3's rows, W2's column), so NSA's FFN is narrowed by the
// nearest whole number of units
const NSA_DFF = SETUP.dFF - Math.round((3 * SETUP.heads * (SETUP.dModel + 1)) / (3 * SETUP.dModel));

const why = ensureFortunes();
if (why) {
  console.error(`sparse-claim.mjs: ${why}`);
  process.exit(1);
}
const trainer = buildTrainer('sparse-claim.mjs');
const lib = await loadAttention();
const dir = mkdtempSync(join(tmpdir(), 'sparse-claim-'));
const ckpt = (name) => join(dir, `${name}.safetensors`);

const common = ['--task', 'chars', '--text', FORTUNES, '--length', SETUP.T, '--batch', SETUP.batch, '--lr', SETUP.lr,
  '--warmup', SETUP.warmup, '--eval-every', 1000000, '--eval-batches', 4, '--threads', 1];
const model = (form, dFF, options) => ['--block', 'llama', '--d-model', SETUP.dModel, '--heads', SETUP.heads,
  '--layers', SETUP.layers, '--d-ff', dFF, '--max-len', SETUP.T, '--attention', form,
  ...Object.entries(options).flatMap(([k, v]) => [`--${k}`, v])];
const train = (flags) => runTrainer(trainer, flags.map(String), (out) => {
  const fin = /final: eval loss [\d.]+ .*, ([\d.]+) s/.exec(out), params = /, (\d+) parameters,/.exec(out);
  return fin ? { seconds: Number(fin[1]), params: params ? Number(params[1]) : null } : null;
});

// DSA from the dense checkpoint: its tensors and config, with the indexer's tensors and the form's
// options as a fresh DSA model of that config has them
function addIndexer(from, to, seed) {
  const dense = readSafetensors(readFileSync(from));
  const config = { ...JSON.parse(JSON.stringify(lib.loadModel(readFileSync(from)).config)) };
  const fresh = lib.createModel({ ...config, attention: 'dsa', attentionOptions: { ...DSA, stage: 'warmup' }, seed });
  const made = readSafetensors(fresh.save());
  fresh.dispose();
  const tensors = new Map(dense.tensors);
  for (const [name, t] of made.tensors) if (!tensors.has(name)) tensors.set(name, t);
  writeFileSync(to, writeSafetensors(made.meta, tensors));
}

const runs = [];
const t0 = Date.now();
console.log(`# fortunes, characters, windows of ${SETUP.T}; d = ${SETUP.dModel}, ${SETUP.heads} heads, ${SETUP.layers} layers, llama block; `
  + `batch ${SETUP.batch}, lr ${SETUP.lr}; softmax ${SETUP.dense} + ${SETUP.tail} steps, DSA the same dense ${SETUP.dense} + warm-up `
  + `${SETUP.warm} + sparse ${SETUP.tail}, NSA ${SETUP.dense + SETUP.tail} sparse from the start; ${SETUP.seeds} seed(s), ${SETUP.jobs} at a time`);
console.log(`# ${cpuName()}`);
const seeds = Array.from({ length: SETUP.seeds }, (_, i) => i + 1);
await inJobs(seeds.flatMap((seed) => [{ seed, what: 'dense' }, { seed, what: 'nsa' }]), SETUP.jobs, async ({ seed, what }) => {
  if (what === 'nsa') {
    const r = await train([...common, ...model('nsa', NSA_DFF, NSA), '--steps', SETUP.dense + SETUP.tail, '--seed', seed, '--out', ckpt(`nsa-${seed}`)]);
    runs.push({ form: 'nsa', seed, seconds: r.seconds });
  } else {
    const r = await train([...common, ...model('softmax', SETUP.dFF, {}), '--steps', SETUP.dense, '--seed', seed, '--out', ckpt(`dense-${seed}`)]);
    runs.push({ form: 'dense', seed, seconds: r.seconds });
  }
  console.log(`#   ${what} seed ${seed} done`);
});
await inJobs(seeds.flatMap((seed) => [{ seed, what: 'softmax' }, { seed, what: 'dsa' }]), SETUP.jobs, async ({ seed, what }) => {
  const cont = ['--task', 'chars', '--text', FORTUNES, '--length', SETUP.T, '--batch', SETUP.batch, '--lr', SETUP.lr,
    '--warmup', SETUP.warmup, '--eval-every', 1000000, '--eval-batches', 4, '--threads', 1]; // --init: the checkpoint's seed
  if (what === 'softmax') {
    const r = await train([...cont, '--init', ckpt(`dense-${seed}`), '--steps', SETUP.tail, '--out', ckpt(`softmax-${seed}`)]);
    runs.push({ form: 'softmax', seed, seconds: r.seconds });
  } else {
    addIndexer(ckpt(`dense-${seed}`), ckpt(`dsa0-${seed}`), seed);
    const w = await train([...cont, '--init', ckpt(`dsa0-${seed}`), '--stage', 'warmup', '--steps', SETUP.warm, '--out', ckpt(`dsaw-${seed}`)]);
    const s = await train([...cont, '--init', ckpt(`dsaw-${seed}`), '--stage', 'sparse', '--steps', SETUP.tail, '--out', ckpt(`dsa-${seed}`)]);
    runs.push({ form: 'dsa', seed, seconds: w.seconds + s.seconds });
  }
  console.log(`#   ${what} seed ${seed} done`);
});

// held-out bits per character; for a sparse model, the keys read and the dense mass kept
const held = lib.charsTokenizer.encode(heldOutText().slice(0, SETUP.T * SETUP.massWindows));
function reading(m) { // readingSummary (lab/sparse.js) of every window and layer, averaged
  const sums = { kept: 0, read: 0, readLast: 0 };
  let count = 0;
  for (let w = 0; w + SETUP.T <= held.length; w += SETUP.T)
    for (let l = 0; l < m.config.layers; l++, count++) {
      const one = readingSummary(m.sparseReading(held.subarray(w, w + SETUP.T), { layer: l }));
      for (const k of Object.keys(sums)) sums[k] += one[k];
    }
  return Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / count]));
}
const results = [];
for (const form of ['softmax', 'nsa', 'dsa'])
  for (const seed of seeds) {
    const m = lib.loadModel(readFileSync(ckpt(`${form}-${seed}`)));
    const { bits } = heldOutBits(lib, m, SETUP.heldChars);
    results.push({ form, seed, bits, params: m.parameterCount, ...(form === 'softmax' ? {} : reading(m)) });
    m.dispose();
  }
rmSync(dir, { recursive: true, force: true });

const rows = (form) => results.filter((r) => r.form === form);
const base = mean(rows('softmax').map((r) => r.bits));
const pct = (x) => `${(100 * x).toFixed(1)}%`;
console.log(`\nHeld-out bits per character (${SETUP.heldChars.toLocaleString('en')} characters), mean ± sd over ${SETUP.seeds} seed(s); `
  + `keys read and dense mass kept on ${SETUP.massWindows} held-out windows of ${SETUP.T}, every layer, head and query:\n`);
console.log('| form | parameters | bits per character | per seed | gap to softmax | keys read (last query) | keys read (mean over queries) | dense mass kept |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [form, label] of [['softmax', 'softmax (dense)'], ['nsa', `NSA ${JSON.stringify(NSA)}`], ['dsa', `DSA ${JSON.stringify(DSA)}`]]) {
  const rs = rows(form), bits = rs.map((r) => r.bits);
  const gap = mean(bits) - base;
  console.log(`| ${label} | ${rs[0].params} | ${mean(bits).toFixed(4)} ± ${sd(bits).toFixed(4)} | ${bits.map((b) => b.toFixed(4)).join(', ')} `
    + `| ${form === 'softmax' ? '—' : `${gap >= 0 ? '+' : ''}${gap.toFixed(4)}`} `
    + `| ${form === 'softmax' ? '100%' : pct(mean(rs.map((r) => r.readLast)))} | ${form === 'softmax' ? '100%' : pct(mean(rs.map((r) => r.read)))} `
    + `| ${form === 'softmax' ? '100%' : `${pct(mean(rs.map((r) => r.kept)))} (${rs.map((r) => pct(r.kept)).join(', ')})`} |`);
}
const minutes = (Date.now() - t0) / 60000;
console.log(`\nNSA's FFN width ${NSA_DFF} against ${SETUP.dFF} (its gates' parameters); DSA is the dense model plus its indexer. `
  + `Training seconds per run: ${['softmax', 'nsa', 'dsa'].map((f) => `${f} ${mean(runs.filter((r) => r.form === f).map((r) => r.seconds)).toFixed(0)}`).join(', ')} `
  + `(softmax and DSA after a shared dense ${mean(runs.filter((r) => r.form === 'dense').map((r) => r.seconds)).toFixed(0)} s). `
  + `${minutes.toFixed(1)} minutes in all; ${cpuName()}`);
