// sae-gpt2.mjs: what trainSAE costs on a GPT-2-small-shaped model (random BF16 weights from
// lab/hf-shapes.js, loadHuggingFace with maxLen 1024; speed does not depend on the values):
//   1. runWithCache of 256 tokens at blocks.5.hook_resid_post, the whole forward against stopAfter
//      (blocks 6-11, the final norm and the 50257-wide classifier skipped), median of 3 each, and the
//      whole forward of 1024 tokens (one window of trainSAE's old default: it runs out of wasm memory);
//   2. trainSAE({ hook: blocks.5.hook_resid_post, 4096 tokens, dSae 3072, k 32, 300 steps of 256 rows,
//      window 256, reuse }) end to end, and one SAE step on 256 rows (median of 5);
//   3. the old way estimated where it runs (windows of 256 tokens, as a model loaded with maxLen 256
//      gives): a whole forward per window on every pass, 300 + 1 of them, plus the 300 steps.
// Prints uptime and the load average with the numbers (the machine may be shared).
// `node bench/sae-gpt2.mjs` (SAE_GPT2_THREADS: the worker threads, default 2).
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { loadAttention } from '../wasm/index.js';
import { SHAPES, randomBf16 } from '../lab/hf-shapes.js';

const THREADS = Number(process.env.SAE_GPT2_THREADS ?? 2);
const hook = 'blocks.5.hook_resid_post';
const now = () => performance.now() / 1000;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () => `uptime: ${execSync('uptime').toString().trim()} | loadavg ${loadavg().map((x) => x.toFixed(2)).join(' ')}`;

function time(fn, n) {
  const ts = [];
  for (let i = 0; i < n; i++) {
    const t = now();
    fn();
    ts.push(now() - t);
  }
  return median(ts);
}

console.log(load());
const lib = await loadAttention({ threads: THREADS });
const config = SHAPES.gpt2.config;
let t = now();
const model = lib.loadHuggingFace({ config, weights: randomBf16(config), maxLen: 1024 });
console.log(`loaded ${SHAPES.gpt2.label} (random BF16) in ${(now() - t).toFixed(1)} s; threads ${lib.threads}`);
let s = 99;
const ids = Int32Array.from({ length: 4096 }, () => ((s = (s * 1103515245 + 12345) >>> 0), (s >>> 8) % config.vocab_size));

const w256 = ids.subarray(0, 256), w1024 = ids.subarray(0, 1024);
model.runWithCache(w256, { names: [hook], stopAfter: true }); // warm-up: the activations' buffers
const full256 = time(() => model.runWithCache(w256, { names: [hook] }), 3);
const stop256 = time(() => model.runWithCache(w256, { names: [hook], stopAfter: true }), 3);
console.log(`runWithCache 256 tokens at ${hook}: whole forward ${(full256 * 1000).toFixed(0)} ms (${(full256 / 256 * 1000).toFixed(2)} ms/token), ` +
  `stopAfter ${(stop256 * 1000).toFixed(0)} ms (${(stop256 / 256 * 1000).toFixed(2)} ms/token): ${(full256 / stop256).toFixed(2)}x`);
// trainSAE's old default window, maxLen = 1024 tokens, through the whole forward: the activations
// of all 12 layers (every head's 1024 x 1024 weights kept for display) and the logits
try {
  const full1024 = time(() => model.runWithCache(w1024, { names: [hook] }), 1);
  console.log(`runWithCache 1024 tokens, whole forward: ${full1024.toFixed(2)} s`);
} catch (e) {
  console.log(`runWithCache 1024 tokens, whole forward (trainSAE's old default window): ${e.message.split(':').slice(1, 4).join(':')}`);
}
console.log(load());

const opts = { model, hook, ids, dSae: 3072, k: 32, steps: 300, batch: 256, window: 256, reuse: true };
let reads = 0, readDone = 0;
t = now();
const sae = await lib.trainSAE({ ...opts, onRead: ({ done, total }) => ((reads = done), done === total && (readDone = now() - t)) });
const total = now() - t;
const saeSteps = sae.steps;
sae.free();
// one SAE step on 256 rows of the model's activations (a fresh SAE each time: the first step is b_pre's)
const rows = model.runWithCache(w256, { names: [hook], stopAfter: true }).cache[hook].data;
const probe = lib.createSAE({ dIn: 768, dSae: 3072, k: 32 });
probe.trainStep(rows);
const step = time(() => probe.trainStep(rows), 5);
probe.free();
console.log(`trainSAE(4096 tokens, dSae 3072, k 32, ${saeSteps} steps x 256 rows, window 256, reuse): ${total.toFixed(1)} s ` +
  `(${reads} windows read, the last by ${readDone.toFixed(1)} s); one SAE step ${(step * 1000).toFixed(0)} ms`);
// the old way where it runs at all (a model loaded with maxLen 256, so windows of 256 tokens): a
// whole forward per window on every pass, 76 800 rows / 256 = 300 windows, plus the first read once
// more for the width
const oldReads = 300 + 1;
const oldEst = oldReads * full256 + 300 * step;
console.log(`old way estimated (windows of 256 through whole forwards, every pass): ${oldReads} x ${(full256 * 1000).toFixed(0)} ms + 300 x ${(step * 1000).toFixed(0)} ms = ` +
  `${oldEst.toFixed(0)} s (${(oldEst / 60).toFixed(1)} min): ${(oldEst / total).toFixed(1)}x the new`);
console.log(load());
model.dispose();
