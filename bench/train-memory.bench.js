// train-memory.bench.js: the memory and time of one training step of a one-layer softmax model
// (dModel 64, 4 heads, batch 1) at n = 512, 2048 and 4096: the bytes the model holds after the
// step (lib.heapInUse(), its activations, their gradients and the backward's scratch included)
// and how far the heap grew, each in a fresh instance. The backward recomputes the probabilities
// block by block (FlashAttention-2), so the bytes grow like n. With BENCH_BASE=<another checkout
// with a built wasm/> the same steps run on that checkout too, interleaved, for a before/after.
//   node bench/run.js train-memory
//   BENCH_BASE=/tmp/base node bench/run.js train-memory
import { pathToFileURL } from 'node:url';
import { loadAttention } from '../wasm/index.js';

const SIZES = [512, 2048, 4096];
const MiB = (b) => (b / 2 ** 20).toFixed(1);

async function measure(load, n) {
  const lib = await load({ simd: true });
  const heap0 = lib.heapBytes(), use0 = lib.heapInUse();
  const model = lib.createModel({ vocab: 16, dModel: 64, heads: 4, layers: 1, maxLen: n, dFF: 128 });
  const row = Array.from({ length: n }, (_, i) => (i * 7 + 3) % 16);
  const batch = { inputs: [row], targets: [row.map((t) => (t + 1) % 16)] };
  const times = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    model.trainStep(batch);
    times.push(performance.now() - t0);
  }
  const held = lib.heapInUse() - use0, grew = lib.heapBytes() - heap0;
  model.dispose();
  times.sort((a, b) => a - b);
  return { held, grew, ms: times[1] };
}

export default async function run({ cpuName }) {
  const baseDir = process.env.BENCH_BASE;
  const loadBase = baseDir ? (await import(pathToFileURL(`${baseDir}/wasm/index.js`).href)).loadAttention : null;
  console.log(`one training step, softmax, 1 layer, dModel 64, 4 heads, batch 1 (SIMD build, 1 thread; ${cpuName()})`);
  console.log(`median of 3 steps; "held": bytes the model holds after the step; "grew": heap growth${baseDir ? `; base: ${baseDir}` : ''}\n`);
  console.log(baseDir
    ? '| n | base held MiB | held MiB | base grew MiB | grew MiB | base ms | ms | base ms / ms |\n|---|---|---|---|---|---|---|---|'
    : '| n | held MiB | grew MiB | ms per step |\n|---|---|---|---|');
  for (const n of SIZES) {
    const now = await measure(loadAttention, n);
    if (!loadBase) {
      console.log(`| ${n} | ${MiB(now.held)} | ${MiB(now.grew)} | ${now.ms.toFixed(1)} |`);
      continue;
    }
    const base = await measure(loadBase, n);
    const again = await measure(loadAttention, n); // interleaved: this, base, this
    const ms = Math.min(now.ms, again.ms);
    console.log(`| ${n} | ${MiB(base.held)} | ${MiB(now.held)} | ${MiB(base.grew)} | ${MiB(now.grew)} | ${base.ms.toFixed(1)} | ` +
      `${ms.toFixed(1)} | ${(base.ms / ms).toFixed(2)}x |`);
  }
}
