// experiment-claims.mjs: the parts of `npm run experiment` that put the sources' claims to the test
// with their budget and their spread (the table of final accuracies is in experiment.mjs):
//   curves    held-out accuracy against training steps, seeds 1, 2, 3: mean, min and max per form
//             and task (reverse, recall), so a claim says at which budget it holds and how surely
//   distance  local vs global: recall of a key far from its query (beyond what two layers of a
//             window of 4 can reach) against one near it, for softmax, local and strided attention
//   lengths   RNN to Transformer (seed 004): reverse accuracy against sequence length for the GRU
//             encoder-decoder without attention, with additive attention, and the Transformer
//             (runs when the library has arch "gru")
//   timing    forward time against n for every form of the registry, one table, with the slope
// Each part prints a markdown table. Run alone:
//   node scripts/experiment-claims.mjs --parts curves --steps 1500 --seeds 1,2,3
import { loadAttention } from '../wasm/index.js';
import { probeForms } from '../web/forms.js';
import { cpus } from 'node:os';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const PARTS = (args.parts ?? 'curves,distance,lengths,timing').split(',');
const SEEDS = (args.seeds ?? '1,2,3').split(',').map(Number);
const STEPS = Number(args.steps ?? 1500);
const BATCH = 32, LR = 2e-3, WARMUP = Math.round(STEPS / 10);
const SIZE = { dModel: 64, heads: 4, layers: 2, dFF: 128, maxLen: 64 };
// the native trainer's schedule: linear warmup, then cosine decay to a tenth
const lrAt = (s) => LR * (s <= WARMUP ? s / WARMUP : 0.1 + 0.45 * (1 + Math.cos((Math.PI * (s - WARMUP)) / (STEPS - WARMUP + 1))));
const lib = await loadAttention();
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const stats = (xs) => ({ mean: xs.reduce((a, b) => a + b, 0) / xs.length, min: Math.min(...xs), max: Math.max(...xs) });
const spread = (xs) => { const s = stats(xs); return xs.length > 1 ? `${pct(s.mean)} (${(100 * s.min).toFixed(0)}-${(100 * s.max).toFixed(0)})` : pct(s.mean); };
console.log(`# experiment-claims: ${PARTS.join(', ')}; ${STEPS} steps of ${BATCH}, lr ${LR} (warmup ${WARMUP}, cosine), seeds ${SEEDS.join(',')}`);
console.log(`# model: ${JSON.stringify(SIZE)}, pre-norm, sinusoidal; ${lib.simd ? 'SIMD' : 'scalar'} wasm, Node ${process.version}, one thread, CPU ${cpus()[0]?.model ?? '?'}`);

// ---- curves ----------------------------------------------------------------------------------
if (PARTS.includes('curves')) {
  const FORMS = (args.forms ?? 'softmax,local,linear:elu+1,retention,synth:dense,synth:random,synth:mixture').split(',');
  const TASKS = { reverse: { length: 16, symbols: 10 }, recall: { length: 8, symbols: 20 } };
  const AT = [100, 200, 400, 800, 1200, 1500, 2000, 3000].filter((s) => s <= STEPS);
  if (!AT.includes(STEPS)) AT.push(STEPS);
  for (const [task, opts] of Object.entries(TASKS)) {
    const rows = [];
    for (const form of FORMS) {
      const acc = AT.map(() => []);
      for (const seed of SEEDS) {
        const m = lib.createModel({ ...SIZE, vocab: opts.symbols + 1, attention: form, seed });
        for (let s = 1, k = 0; s <= STEPS; s++) {
          m.trainStep({ task, ...opts, batchSize: BATCH, lr: lrAt(s) });
          if (s === AT[k]) acc[k++].push(m.evaluate({ task, ...opts, batches: 4, batchSize: 64 }).accuracy);
        }
        m.dispose();
      }
      rows.push(`| ${form} | ${acc.map(spread).join(' | ')} |`);
      console.log(`# curves ${task} ${form}: ${acc.map((a, i) => `${AT[i]}: ${a.map(pct).join('/')}`).join(', ')}`);
    }
    console.log(`\nHeld-out accuracy on ${task} (length ${opts.length}, ${opts.symbols} symbols) after N training steps: mean of seeds ` +
      `${SEEDS.join(', ')} (min-max):\n`);
    console.log(`| attention | ${AT.map((s) => `${s} steps`).join(' | ')} |`);
    console.log(`|---|${AT.map(() => '---:').join('|')}|`);
    for (const r of rows) console.log(r);
    console.log('');
  }
}

// ---- distance --------------------------------------------------------------------------------
// Recall as own batches: k0 v0 k1 v1 ... k7 v7 SEP kq -> vq. Keys distinct in 1..20, values in 1..20.
// The query's key k_i sits 2 (8 - i) positions before it: pairs 6 and 7 are near (within one
// window of 4 plus what a second layer adds), pairs 0..3 are far (10 or more positions back).
if (PARTS.includes('distance')) {
  const N = 8, SYM = 20;
  let s = 12345;
  const rnd = (k) => ((s = (s * 1103515245 + 12345) >>> 0) >>> 8) % k;
  const example = (qi) => {
    const keys = [];
    while (keys.length < N) { const k = 1 + rnd(SYM); if (!keys.includes(k)) keys.push(k); }
    const vals = keys.map(() => 1 + rnd(SYM)), i = qi ?? rnd(N);
    const inputs = [...keys.flatMap((k, j) => [k, vals[j]]), 0, keys[i]];
    const targets = inputs.map(() => 0);
    targets[targets.length - 1] = vals[i];
    const mask = inputs.map((_, j) => (j === inputs.length - 1 ? 1 : 0));
    return { inputs, targets, mask };
  };
  const batch = (B, qi) => {
    const ex = Array.from({ length: B }, () => example(qi));
    return { inputs: ex.map((e) => e.inputs), targets: ex.map((e) => e.targets), mask: ex.map((e) => e.mask) };
  };
  const FORMS = [['softmax', {}], ['local', { window: 4 }], ['strided', { window: 4, stride: 4 }]];
  const rows = [];
  for (const [form, attentionOptions] of FORMS) {
    const near = [], far = [], all = [];
    for (const seed of SEEDS) {
      s = 1000 + seed;
      const cfg = { ...SIZE, vocab: SYM + 1, attention: form, seed };
      if (Object.keys(attentionOptions).length) cfg.attentionOptions = attentionOptions;
      const m = lib.createModel(cfg);
      for (let t = 1; t <= STEPS; t++) m.trainStep({ ...batch(BATCH), lr: lrAt(t) });
      s = 999; // the same held-out examples for every form and seed
      const accAt = (qis) => stats(qis.map((qi) => m.evaluate(batch(128, qi)).accuracy)).mean;
      near.push(accAt([6, 7])), far.push(accAt([0, 1, 2, 3])), all.push(accAt([0, 1, 2, 3, 4, 5, 6, 7]));
      m.dispose();
    }
    rows.push(`| ${form}${attentionOptions.window ? ` (window ${attentionOptions.window}${attentionOptions.stride ? `, stride ${attentionOptions.stride}` : ''})` : ''} | ${spread(near)} | ${spread(far)} | ${spread(all)} |`);
    console.log(`# distance ${form}: near ${near.map(pct).join('/')}, far ${far.map(pct).join('/')}`);
  }
  console.log(`\nLocal vs global: recall of the value of a queried key among ${N} pairs (${SYM} symbols; chance 5%), ` +
    `${STEPS} steps, seeds ${SEEDS.join(', ')} (mean, min-max). Near: the last two pairs (the key 2-4 positions back); ` +
    `far: the first four (10-16 back, beyond two layers of a window of 4):\n`);
  console.log('| attention | near | far | every pair |');
  console.log('|---|---:|---:|---:|');
  for (const r of rows) console.log(r);
  console.log('');
}

// ---- lengths (RNN to Transformer) --------------------------------------------------------------
if (PARTS.includes('lengths')) {
  let hasGru = true;
  try { lib.createModel({ arch: 'gru', layers: 1 }).dispose(); } catch { hasGru = false; }
  if (!hasGru) console.log('# lengths: skipped (this build has no arch "gru")\n');
  else {
    const LENGTHS = (args.lengths ?? '4,8,16,24').split(',').map(Number);
    const MODELS = [['GRU, one context vector', { arch: 'gru', layers: 1 }], ['GRU + additive attention', { arch: 'gru-attention', layers: 1 }],
      ['Transformer (softmax)', { arch: 'encoder-decoder', attention: 'softmax' }]];
    const rows = [];
    for (const [label, extra] of MODELS) {
      const cells = [];
      let params = 0;
      for (const length of LENGTHS) {
        const accs = [];
        for (const seed of SEEDS) {
          const m = lib.createModel({ ...SIZE, vocab: 11, seed, ...extra });
          params = m.parameterCount;
          const opts = { task: 'reverse', length, symbols: 10 };
          for (let t = 1; t <= STEPS; t++) m.trainStep({ ...opts, batchSize: BATCH, lr: lrAt(t) });
          accs.push(m.evaluate({ ...opts, batches: 4, batchSize: 64 }).accuracy);
          m.dispose();
        }
        cells.push(spread(accs));
        console.log(`# lengths ${label} ${length}: ${accs.map(pct).join('/')}`);
      }
      rows.push(`| ${label} | ${params} | ${cells.join(' | ')} |`);
    }
    console.log(`\nFrom RNN to Transformer: held-out accuracy on reverse against its length (10 symbols), the same budget ` +
      `(${STEPS} steps of ${BATCH}) and width (${SIZE.dModel}), seeds ${SEEDS.join(', ')} (mean, min-max):\n`);
    console.log(`| model | parameters | ${LENGTHS.map((l) => `length ${l}`).join(' | ')} |`);
    console.log(`|---|---:|${LENGTHS.map(() => '---:').join('|')}|`);
    for (const r of rows) console.log(r);
    console.log('');
  }
}

// ---- timing --------------------------------------------------------------------------------------
// Every form's forward (the playground's own callers, web/forms.js) at d = 64, 4 heads, causal where
// the form has a causal form; the median of 5 calls after a warm-up, forms in turn within each round.
if (PARTS.includes('timing')) {
  const { forms } = probeForms(lib);
  const NS = (args.ns ?? '128,512,2048').split(',').map(Number), d = 64, heads = 4, ROUNDS = 5;
  const rnd = (len, seed) => { let x = seed; return Float32Array.from({ length: len }, () => ((x = (x * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1); };
  const times = forms.map(() => NS.map(() => []));
  const caches = forms.map(() => new Map());
  for (const [ni, n] of NS.entries()) {
    const inp = { n, d, heads, q: rnd(n * d, 1), k: rnd(n * d, 2), v: rnd(n * d, 3), x: rnd(n * d, 4), seed: 1, weights: false, maxLen: n };
    forms.forEach((f, i) => f.run({ ...inp, causal: f.causal }, caches[i])); // warm-up, and synthesizers made
    for (let r = 0; r < ROUNDS; r++)
      forms.forEach((f, i) => {
        const t0 = performance.now();
        f.run({ ...inp, causal: f.causal }, caches[i]);
        times[i][ni].push(performance.now() - t0);
      });
    caches.forEach((c) => { for (const s of c.values()) s.dispose(); c.clear(); });
  }
  const med = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\nForward time (ms, median of ${ROUNDS}) against n, d = ${d}, ${heads} heads, causal where the form has one; ` +
    `slope of log time against log n between the first and last n:\n`);
  console.log(`| attention | ${NS.map((n) => `n = ${n}`).join(' | ')} | slope |`);
  console.log(`|---|${NS.map(() => '---:').join('|')}|---:|`);
  forms.forEach((f, i) => {
    const m = times[i].map(med);
    const slope = Math.log(m[m.length - 1] / m[0]) / Math.log(NS[NS.length - 1] / NS[0]);
    console.log(`| ${f.id}${f.causal ? '' : ' (non-causal)'} | ${m.map((x) => x.toFixed(2)).join(' | ')} | ${slope.toFixed(2)} |`);
  });
}
