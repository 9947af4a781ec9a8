// generate.bench.js: generation with a model of llama2.c's stories15M shape (dim 288, 6 layers, 6
// heads, vocab 32000, seq_len 256, SwiGLU 768, tied classifier; random weights), loaded through
// lib.loadLlama2c (inference only) and generating greedily with the KV cache: time to first token
// for a 32-token prompt and tokens per second over the next 99, in Node and in headless Chromium
// at 1 and 2 threads, beside native PyTorch (Debian's python3-torch, eager, a KV cache, the prompt
// in one batched forward) at the same thread counts, in alternating rounds of one run. Also the
// same shape with grouped-query attention (2 K/V heads), and the KV cache's bytes per token.
//   node bench/run.js generate
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadAttention } from '../wasm/index.js';

const PYTHON = '/usr/bin/python3';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROMPT = 32, TOKENS = 100;
const SHAPE = { dim: 288, hidden: 768, layers: 6, heads: 6, vocab: 32000, seqLen: 256 };
const prompt = Array.from({ length: PROMPT }, (_, i) => 1 + ((i * 7919) % (SHAPE.vocab - 1)));

function torchWorker(threads) {
  const env = { ...process.env, OMP_NUM_THREADS: String(threads), OPENBLAS_NUM_THREADS: String(threads) };
  const child = spawn(PYTHON, [fileURLToPath(new URL('./peers/torch_worker.py', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'], env });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => waiting.shift()?.(JSON.parse(line)));
  return {
    ask: (cmd) => new Promise((resolve, reject) => {
      waiting.push((a) => (a.error ? reject(new Error(`torch_worker: ${a.error}`)) : resolve(a)));
      child.stdin.write(`${JSON.stringify(cmd)}\n`);
    }),
    close: () => child.stdin.end(),
  };
}

// The model file: a library model of the shape, saved in llama2.c's format (its random init).
function modelBytes(lib, kvHeads) {
  const m = lib.createModel({ vocab: SHAPE.vocab, dModel: SHAPE.dim, heads: SHAPE.heads, kvHeads, layers: SHAPE.layers,
    dFF: SHAPE.hidden, maxLen: SHAPE.seqLen, block: 'llama', tieEmbeddings: true, seed: 1 });
  const bytes = m.saveLlama2c();
  m.dispose();
  return bytes;
}

// ttft (ms) and tokens/s after the first, as the page measures them too (same code, stringified)
function measure(model, prompt, tokens) {
  model.generate(prompt, { maxTokens: 4 }); // warm
  const t0 = performance.now();
  model.generate(prompt, { maxTokens: 1 });
  const t1 = performance.now();
  model.generate(prompt, { maxTokens: tokens });
  const t2 = performance.now();
  const ttft = t1 - t0;
  return { ttftMs: ttft, tokPerSec: (tokens - 1) / (((t2 - t1) - ttft) / 1000) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const pause = () => new Promise((r) => setTimeout(r, 100));

async function chromium(files, threadsList) {
  let launch;
  try {
    ({ launch } = await import('../tests/browser/helpers.js'));
  } catch (e) {
    return { why: `no browser (${e.message})` };
  }
  const { startServer } = await import('../scripts/serve.js');
  const root = fileURLToPath(new URL('..', import.meta.url));
  const server = await startServer({ mounts: { '/': `${root}bench/peers`, '/wasm/': `${root}wasm`, '/m/': files } });
  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}blank.html`);
    return await page.evaluate(async ({ threadsList, prompt, tokens, rounds, measureSrc }) => {
      const measure = new Function(`return ${measureSrc}`)();
      const { loadAttention } = await import('/wasm/index.js');
      const out = {};
      for (const name of ['mha', 'gqa']) {
        const bytes = await (await fetch(`/m/${name}.bin`)).arrayBuffer();
        for (const threads of threadsList) {
          const lib = await loadAttention({ threads });
          const t0 = performance.now();
          const m = lib.loadLlama2c(bytes);
          const loadMs = performance.now() - t0;
          const runs = Array.from({ length: rounds }, () => measure(m, prompt, tokens));
          out[`${name} ${threads}`] = { runs, loadMs, threads: lib.threads, build: lib.relaxed ? 'relaxed' : 'simd' };
          m.dispose();
        }
      }
      return out;
    }, { threadsList, prompt, tokens: TOKENS, rounds: ROUNDS, measureSrc: measure.toString() });
  } finally {
    await browser.close();
    await server.close();
  }
}

export default async function run({ cpuName }) {
  const haveTorch = spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
  console.log(`A model of stories15M's shape (dim ${SHAPE.dim}, ${SHAPE.layers} layers, ${SHAPE.heads} heads, vocab ${SHAPE.vocab}, ` +
    `seq_len ${SHAPE.seqLen}, random weights) generating greedily: time to first token for a ${PROMPT}-token prompt, ` +
    `tokens/s over the next ${TOKENS - 1}; median of ${ROUNDS} rounds, ours and PyTorch alternating; ${cpuName()}`);
  const hd = SHAPE.dim / SHAPE.heads;
  const cacheBytes = (kv) => SHAPE.layers * 2 * kv * hd * 4;
  console.log(`KV cache per token: ${cacheBytes(SHAPE.heads)} B with 6 K/V heads (multi-head), ${cacheBytes(2)} B with 2 ` +
    `(grouped-query, ${SHAPE.heads / 2} query heads per K/V head), ${cacheBytes(1)} B with 1 (multi-query)\n`);
  const dir = mkdtempSync(join(tmpdir(), 'aw-gen-'));
  const rows = [];
  try {
    const maker = await loadAttention();
    const files = { mha: modelBytes(maker, SHAPE.heads), gqa: modelBytes(maker, 2) };
    for (const [k, b] of Object.entries(files)) writeFileSync(join(dir, `${k}.bin`), b);
    console.log(`model files: ${(files.mha.length / 2 ** 20).toFixed(1)} MiB (multi-head), ${(files.gqa.length / 2 ** 20).toFixed(1)} MiB (grouped-query)`);
    const node = {}, torch = {};
    for (const threads of [1, 2]) {
      const lib = await loadAttention({ threads });
      const tw = haveTorch ? torchWorker(threads) : null;
      try {
        if (tw) await tw.ask({ op: 'threads', n: threads });
        for (const [name, kv] of [['mha', SHAPE.heads], ['gqa', 2]]) {
          const m = lib.loadLlama2c(files[name]);
          const mine = [], theirs = [];
          for (let r = 0; r < ROUNDS; r++) {
            mine.push(measure(m, prompt, TOKENS));
            await pause();
            if (tw) theirs.push(await tw.ask({ op: 'llama', ...SHAPE, kvHeads: kv, prompt: PROMPT, tokens: TOKENS }));
            await pause();
          }
          node[`${name} ${threads}`] = { runs: mine, threads: lib.threads, build: lib.relaxed ? 'relaxed' : 'simd' };
          if (tw) torch[`${name} ${threads}`] = { runs: theirs };
          m.dispose();
        }
      } finally {
        tw?.close();
      }
    }
    const web = await chromium(dir, [1, 2]);
    const fmt = (r) => (r ? `${median(r.runs.map((x) => x.tokPerSec)).toFixed(1)} tok/s, ${median(r.runs.map((x) => x.ttftMs)).toFixed(0)} ms` : 'n/a');
    console.log('| model, threads | ours, Node (tok/s, first token) | ours, Chromium | PyTorch (native, eager) | Node / PyTorch tok/s |');
    console.log('|---|---|---|---|---|');
    for (const name of ['mha', 'gqa'])
      for (const threads of [1, 2]) {
        const key = `${name} ${threads}`, n = node[key], t = torch[key], w = web.why ? null : web[key];
        const ratio = t ? (median(n.runs.map((x) => x.tokPerSec)) / median(t.runs.map((x) => x.tokPerSec))).toFixed(2) + 'x' : 'n/a';
        rows.push(key);
        console.log(`| ${name === 'mha' ? '6 K/V heads' : '2 K/V heads'}, ${threads} (${n.build}, ${n.threads}t) | ${fmt(n)} | ` +
          `${w ? `${fmt(w)} (${w.build}, ${w.threads}t)` : web.why ?? 'n/a'} | ${t ? fmt(t) : 'no PyTorch here'} | ${ratio} |`);
      }
    if (!web.why) console.log(`\nChromium: loadLlama2c of the ${(files.mha.length / 2 ** 20).toFixed(1)} MiB file took ${web['mha 1'].loadMs.toFixed(0)} ms`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
