// experiment-claims.mjs: the parts of `npm run experiment` that put the sources' claims to the test
// with their budget and their spread (the table of final accuracies is in experiment.mjs):
//   curves    held-out accuracy against training steps, seeds 1, 2, 3: mean, min and max per form
//             and task (reverse, recall), so a claim says at which budget it holds and how surely
//   distance  local vs global: copying a token from far back (beyond what two layers of a window of
//             4 can reach) against one from near, for softmax, local and strided attention
//   lengths   RNN to Transformer (seed 004): reverse accuracy against sequence length for the GRU
//             encoder-decoder without attention, with additive attention, and the Transformer
//             (runs when the library has arch "gru")
//   timing    forward time against n for every form of the registry, one table, with the slope
//   decoding  the cost of generating one token at position p (p = 128, 512, 2048) for every form
//             that generates step by step: flat for a constant-size state, growing with p for a cache
// Each part prints a markdown table. Run alone:
//   node scripts/experiment-claims.mjs --parts curves --steps 1500 --seeds 1,2,3 [--tasks recall] [--forms delta,softmax]
//     [--recall-length 24 --recall-symbols 40]
import { loadAttention } from '../wasm/index.js';
import { probeForms } from '../lab/forms.js';
import { cpus } from 'node:os';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const PARTS = (args.parts ?? 'curves,distance,lengths,timing,decoding').split(',');
const FORMS_ONLY = args.forms ? args.forms.split(',') : null; // timing, decoding: only these forms
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

// Before anything long starts: how long the run will take, from the training steps it plans and the
// time of a few steps of the softmax model measured here (the forms differ by up to 2x either way).
{
  const count = (list, all) => (list ?? all).split(',').length;
  const curveRuns = PARTS.includes('curves') ? count(args.forms, 'softmax,local,linear:elu+1,retention,synth:dense,synth:random,synth:mixture') * count(args.tasks, 'reverse,recall') : 0;
  const distanceRuns = PARTS.includes('distance') ? 3 * 2 : 0;
  const lengthRuns = PARTS.includes('lengths') ? 3 * count(args.lengths, '4,8,16,24') : 0;
  const steps = (curveRuns + distanceRuns + lengthRuns) * SEEDS.length * STEPS;
  const m = lib.createModel({ ...SIZE, vocab: 11, attention: 'softmax', seed: 1 });
  m.trainStep({ task: 'reverse', length: 16, symbols: 10, batchSize: BATCH, lr: LR });
  const t0 = performance.now();
  for (let s = 0; s < 5; s++) m.trainStep({ task: 'reverse', length: 16, symbols: 10, batchSize: BATCH, lr: LR });
  const msPerStep = (performance.now() - t0) / 5;
  m.dispose();
  const timed = ['timing', 'decoding'].filter((p) => PARTS.includes(p)).length; // each about a minute
  const minutes = Math.max(1, Math.round((steps * msPerStep) / 60000 + timed));
  console.log(`# estimate: about ${minutes} minute${minutes === 1 ? '' : 's'} (${steps} training steps at ${msPerStep.toFixed(1)} ms per step measured now` +
    `${timed ? `, plus about a minute for each of ${PARTS.filter((p) => p === 'timing' || p === 'decoding').join(' and ')}` : ''})`);
}

// ---- curves ----------------------------------------------------------------------------------
if (PARTS.includes('curves')) {
  const FORMS = (args.forms ?? 'softmax,local,linear:elu+1,retention,synth:dense,synth:random,synth:mixture').split(',');
  // --recall-length and --recall-symbols make recall harder: more pairs than a head's state is wide
  const recall = { length: Number(args['recall-length'] ?? 8), symbols: Number(args['recall-symbols'] ?? 20) };
  const TASKS = Object.fromEntries(Object.entries({ reverse: { length: 16, symbols: 10 }, recall })
    .filter(([task]) => (args.tasks ?? 'reverse,recall').split(',').includes(task)));
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
// Copy: the output token at position t must read the input token length + 1 positions back. With a
// window of 4 in each of 2 layers a position reaches 6 back: copy of length 2 (3 back) is near,
// copy of length 12 (13 back) is far. Softmax reaches every position; strided attention reaches
// 13 back in two hops (12 by the stride, 1 by the band).
if (PARTS.includes('distance')) {
  const LENGTHS = [2, 12];
  const FORMS = [['softmax', {}], ['local', { window: 4 }], ['strided', { window: 4, stride: 4 }]];
  const rows = [];
  for (const [form, attentionOptions] of FORMS) {
    const cells = [];
    for (const length of LENGTHS) {
      const accs = [];
      for (const seed of SEEDS) {
        const cfg = { ...SIZE, vocab: 11, attention: form, seed };
        if (Object.keys(attentionOptions).length) cfg.attentionOptions = attentionOptions;
        const m = lib.createModel(cfg);
        const opts = { task: 'copy', length, symbols: 10 };
        for (let t = 1; t <= STEPS; t++) m.trainStep({ ...opts, batchSize: BATCH, lr: lrAt(t) });
        accs.push(m.evaluate({ ...opts, batches: 4, batchSize: 64 }).accuracy);
        m.dispose();
      }
      cells.push(spread(accs));
      console.log(`# distance ${form} copy ${length}: ${accs.map(pct).join('/')}`);
    }
    const label = attentionOptions.window ? ` (window ${attentionOptions.window}${attentionOptions.stride ? `, stride ${attentionOptions.stride}` : ''})` : '';
    rows.push(`| ${form}${label} | ${cells.join(' | ')} |`);
  }
  console.log(`\nLocal vs global: held-out accuracy on copy (10 symbols), where each output token is length + 1 positions ` +
    `after the token it copies; two layers of a window of 4 reach 6 back. ${STEPS} steps, seeds ${SEEDS.join(', ')} (mean, min-max):\n`);
  console.log(`| attention | ${LENGTHS.map((l) => `copy ${l} (${l + 1} back: ${l + 1 <= 6 ? 'near' : 'far'})`).join(' | ')} |`);
  console.log(`|---|${LENGTHS.map(() => '---:').join('|')}|`);
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
          // a GRU reads only its width and length (heads, dFF would be Errors): the same width
          const size = extra.arch.startsWith('gru') ? { dModel: SIZE.dModel, maxLen: SIZE.maxLen } : SIZE;
          const m = lib.createModel({ ...size, vocab: 11, seed, ...extra });
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
// Every form's forward (the playground's own callers, lab/forms.js) at d = 64, 4 heads, causal where
// the form has a causal form; the median of 5 calls after a warm-up, forms in turn within each round.
if (PARTS.includes('timing')) {
  const forms = probeForms(lib).forms.filter((f) => !FORMS_ONLY || FORMS_ONLY.includes(f.id));
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

// ---- decoding --------------------------------------------------------------------------------
// One causal layer per form (d = 64, 4 heads, maxLen 2048), stepped from position 0 to 2047 with
// random rows; the time of each step is recorded, and the table gives the median over the 32
// positions before 128, 512 and 2048, in microseconds per token, and last / first.
if (PARTS.includes('decoding')) {
  const d = 64, heads = 4, L = 2048, AT = [128, 512, 2048], WINDOW = 32, ROUNDS = 3;
  const forms = lib.forms.filter((f) => f.step && f.causal && (!FORMS_ONLY || FORMS_ONLY.includes(f.name)));
  const rnd = (len, seed) => { let x = seed; return Float32Array.from({ length: len }, () => ((x = (x * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1); };
  const rows = Array.from({ length: 64 }, (_, i) => ({ q: rnd(d, 4 * i + 1), k: rnd(d, 4 * i + 2), v: rnd(d, 4 * i + 3), x: rnd(d, 4 * i + 4) }));
  const us = forms.map(() => AT.map(() => []));
  for (let r = 0; r < ROUNDS; r++)
    forms.forEach((f, fi) => {
      const layer = lib.attentionLayer(f.name, { n: L, d, heads, causal: true, maxLen: L, seed: 1 });
      const t = new Float64Array(L);
      for (let p = 0; p < L; p++) {
        const t0 = performance.now();
        layer.step(p, rows[p % rows.length]);
        t[p] = performance.now() - t0;
      }
      layer.dispose();
      AT.forEach((p, ai) => us[fi][ai].push(...Array.from(t.subarray(p - WINDOW, p)).map((x) => 1000 * x)));
    });
  const med = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\nDecoding cost (microseconds per token, median over the ${WINDOW} positions before p, ${ROUNDS} rounds), ` +
    `d = ${d}, ${heads} heads, one causal layer stepped from position 0 (lib.attentionLayer(...).step, copies included):\n`);
  console.log(`| attention | ${AT.map((p) => `p = ${p}`).join(' | ')} | p = ${AT[AT.length - 1]} / p = ${AT[0]} |`);
  console.log(`|---|${AT.map(() => '---:').join('|')}|---:|`);
  forms.forEach((f, fi) => {
    const m = us[fi].map(med);
    console.log(`| ${f.name} | ${m.map((x) => x.toFixed(1)).join(' | ')} | ${(m[m.length - 1] / m[0]).toFixed(2)} |`);
  });
}
