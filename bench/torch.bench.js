// torch.bench.js: native PyTorch (Debian's python3-torch, CPU, eager) as the yardstick, at the
// same thread count, in the same run: matmul, streaming softmax attention (PyTorch's eager
// composition matmul -> softmax -> matmul: Debian's torch 1.13 has no fused
// scaled_dot_product_attention) and the tiny model's training step at the playground's sizes.
// PyTorch runs in a child process (bench/peers/torch_worker.py) that times its own calls; the
// rounds alternate ours and PyTorch's, and the table gives medians of the rounds and the ratio
// torch / ours (above 1: we are faster).
//   node bench/run.js torch
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadAttention } from '../wasm/index.js';

const PYTHON = '/usr/bin/python3';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

// A worker with `threads` threads everywhere PyTorch may use them: its intra-op pool (OpenMP)
// and OpenBLAS's own pthreads, which only the environment sets (at the process's start).
function torchWorker(threads) {
  const env = { ...process.env, OMP_NUM_THREADS: String(threads), OPENBLAS_NUM_THREADS: String(threads),
    MKL_NUM_THREADS: String(threads) };
  const child = spawn(PYTHON, [fileURLToPath(new URL('./peers/torch_worker.py', import.meta.url))], {
    stdio: ['pipe', 'pipe', 'inherit'], env,
  });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => waiting.shift()?.(JSON.parse(line)));
  return {
    ask(cmd) {
      return new Promise((resolve, reject) => {
        waiting.push((answer) => (answer.error ? reject(new Error(`torch_worker: ${answer.error}`)) : resolve(answer)));
        child.stdin.write(`${JSON.stringify(cmd)}\n`);
      });
    },
    close() {
      child.stdin.end();
    },
  };
}

// ms per call of fn, over reps calls after one warm-up (as the worker times PyTorch's)
function timed(fn, reps) {
  fn();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) fn();
  return (performance.now() - t0) / reps;
}

// between the engines' turns: a pool that spins after its call (OpenBLAS's, ours) must not
// overlap the other engine's calls
const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const rand = (n, seed) => {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; });
};

export default async function run({ cpuName, relaxed }) {
  const probe = spawnSync(PYTHON, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' });
  const blas = spawnSync('readlink', ['-f', '/usr/lib/x86_64-linux-gnu/libblas.so.3'], { encoding: 'utf8' }).stdout.trim();
  if (probe.status !== 0) {
    console.log('pending: no PyTorch here (Debian: apt-get install python3-torch), so there is no native yardstick in this run.');
    return;
  }
  if (/\/blas\/libblas/.test(blas)) { // Debian's reference BLAS: about 30x slower than OpenBLAS, no yardstick
    console.log(`pending: PyTorch multiplies through the reference BLAS here (${blas}); bash scripts/bench-deps.sh installs OpenBLAS.`);
    return;
  }
  console.log(`PyTorch ${probe.stdout.trim()} (CPU, eager; BLAS ${blas || 'unknown'}) against the SIMD build (and the relaxed build where this engine runs it), same thread count; ${cpuName()}`);
  console.log(`median over ${ROUNDS} alternating rounds; torch / ours above 1 means ours is faster\n`);
  const rows = [];
  for (const threads of [1, 2]) {
    const torch = torchWorker(threads);
    try {
      const lib = await loadAttention({ simd: true, threads });
      if (lib.threads !== threads) {
        rows.push([`(threads ${threads})`, `not available: ${lib.threadsReason}`, '', '']);
        continue;
      }
      await torch.ask({ op: 'threads', n: threads });
      await torch.ask({ op: 'matmul', n: 64, reps: 1 }); // the pools started
      const work = [];
      for (const n of [256, 512]) {
        const a = rand(n * n, 1), b = rand(n * n, 2);
        work.push([`matmul ${n}^3`, () => lib.kernels.matmul(a, b, { M: n, N: n, K: n }), { op: 'matmul', n }, n === 256 ? 20 : 5]);
      }
      for (const n of [512, 1024, 2048, 4096]) {
        const q = rand(n * 64, 3), k = rand(n * 64, 4), v = rand(n * 64, 5);
        work.push([`softmax attention n = ${n}, d = 64, 1 head`, () => lib.softmaxAttention({ q, k, v, n, d: 64 }),
          { op: 'attention', n, d: 64, heads: 1 }, n <= 1024 ? 5 : 2]);
      }
      const cfg = { vocab: 16, dModel: 64, heads: 4, layers: 2, dFF: 256, maxLen: 32, seed: 1 };
      const model = lib.createModel({ ...cfg, attention: 'softmax' });
      await torch.ask({ op: 'model', vocab: 16, dModel: 64, heads: 4, layers: 2, batch: 16, T: 32 });
      const hyper = { lr: 1e-3, beta1: 0.9, beta2: 0.98, eps: 1e-8, weightDecay: 0.01, clip: 1 };
      const step = (m) => () => m.trainStep({ task: 'reverse', batchSize: 16, length: 16, symbols: 10, ...hyper });
      work.push(['training step C=64 H=4 L=2 B=16 T=32', step(model), { op: 'train' }, 5]);
      // the step's forward alone (a batch, the model, the loss; no gradients): what the backward pass
      // and the optimizer add is the step less this
      work.push(['training step, its forward alone', () => model.evaluate({ task: 'reverse', batches: 1, batchSize: 16, length: 16, symbols: 10, seed: 1 }),
        { op: 'train-forward' }, 5]);
      // the relaxed build (fused multiply-add matmul) where the engine runs it: the same matmul and step
      let rmodel = null;
      if (relaxed) {
        const rlib = await loadAttention({ relaxed: true, threads });
        const a = rand(256 * 256, 1), b = rand(256 * 256, 2);
        work.push(['matmul 256^3, relaxed build', () => rlib.kernels.matmul(a, b, { M: 256, N: 256, K: 256 }), { op: 'matmul', n: 256 }, 20]);
        rmodel = rlib.createModel({ ...cfg, attention: 'softmax' });
        work.push(['training step C=64 H=4 L=2 B=16 T=32, relaxed build', step(rmodel), { op: 'train' }, 5]);
      }
      for (const [name, ours, cmd, reps] of work) {
        const mine = [], theirs = [];
        for (let r = 0; r < ROUNDS; r++) {
          mine.push(timed(ours, reps));
          await pause();
          theirs.push((await torch.ask({ ...cmd, reps })).ms);
          await pause();
        }
        const m = median(mine), t = median(theirs);
        rows.push([`${name}, ${threads} thread${threads > 1 ? 's' : ''}`, `${m.toFixed(3)} ms`, `${t.toFixed(3)} ms`, `${(t / m).toFixed(2)}x`]);
        if (name === 'training step, its forward alone') { // the split: forward, and backward + clipping + AdamW (the step less it)
          const [sm, st] = [rows.at(-2)[1], rows.at(-2)[2]].map(parseFloat);
          rows.push([`training step, backward + optimizer (the step less its forward), ${threads} thread${threads > 1 ? 's' : ''}`,
            `${(sm - m).toFixed(3)} ms (${((100 * (sm - m)) / sm).toFixed(0)}% of the step)`,
            `${(st - t).toFixed(3)} ms (${((100 * (st - t)) / st).toFixed(0)}%)`, `${((st - t) / (sm - m)).toFixed(2)}x`]);
        }
      }
      model.dispose();
      rmodel?.dispose();
    } finally {
      torch.close();
    }
  }
  console.log('| case | ours | PyTorch | torch / ours |\n|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
