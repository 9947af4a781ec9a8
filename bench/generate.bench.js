// generate.bench.js: greedy generation with the KV cache, ours beside a native yardstick built from
// the same C sources, for a model of llama2.c's stories15M shape (dim 288, 6 layers, 6 heads, vocab
// 32000, seq_len 256, SwiGLU 768, tied classifier; random weights: speed does not depend on them)
// and its grouped-query variant (2 K/V heads), and for the page's text models (web/models/fortunes.json).
//   native C   tools/generate.c: the library's model_generate built natively (bash build.sh generate:
//              gcc -O3 -march=native, the pool on pthreads), loading the same weights (safetensors)
//   ours       wasm in Node: the SIMD128 build and the relaxed-SIMD build, 1 and 2 threads;
//              headless Chromium (its default build) for the stories15M shapes
//   PyTorch    Debian's python3-torch, eager, a KV cache, the prompt in one batched forward
//              (stories15M shapes only)
// Every contender runs once per round, rounds alternate (a shared machine's drift hits all
// alike), and the table gives medians: tokens/s after the first token, its ratio to native C at the
// same thread count, 2 threads over 1, and the time to the first token (the prompt's batched
// forward). Decoding streams every weight once per token, so the table also gives weight bytes
// read per second (weights read per token x tokens/s) as a share of a read bandwidth measured in
// the same run by the same C code natively and in wasm (src/api/api_bench.c aw_bench_stream: a
// 64 MiB read stream on one thread and cut over two, the limits of a 1- and a 2-thread decoder, and
// a memcpy between two 64 MiB buffers, all well past the last-level cache).
// Quantized weights (model.quantize): fp32, q8_0 and q4_0 in the SIMD128 and relaxed builds at 1 and 2
// threads, for the stories15M and stories110M shapes (dim 768, 12 layers, 12 heads, hidden 2048, vocab
// 32000), beside llama2.c's runq.c (commit 350e04f, MIT; not in this repository: LLAMA2C=<a llama2.c
// checkout>), built natively with gcc -Ofast -march=native -fopenmp and run on a version 2 file this
// bench writes from the same weights (OMP_NUM_THREADS 1 and 2; greedy; its own tok/s line, which times
// the tokens after the first from BOS, where ours decode after a 32-token prompt).
//   node bench/run.js generate     (BENCH_ROUNDS=N, default 3; BENCH_GEN_PAGE=0 skips the page's models;
//                                   BENCH_GEN_QUANT=only runs the quantized section alone, 0 skips it)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadAttention } from '../wasm/index.js';

const PYTHON = '/usr/bin/python3';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NATIVE = join(ROOT, 'build', 'generate');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROMPT = 32, TOKENS = 100, STREAM_MIB = 64;
const PAGE_REPS = 20; // the page's models decode 100 tokens in milliseconds: each timed call 20 times
const SHAPE = { dim: 288, hidden: 768, layers: 6, heads: 6, vocab: 32000, seqLen: 256 };
const promptOf = (vocab, n) => Array.from({ length: n }, (_, i) => (vocab > 1 ? 1 + ((i * 7919) % (vocab - 1)) : 0)); // tools/generate.c's
const EXPORTS = Symbol.for('attention-wasm.exports');

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

// ttft (ms) and tokens/s after the first, as the page measures them too (same code, stringified;
// tools/generate.c times the same calls); each `reps` times, for models that decode in microseconds
function measure(model, prompt, tokens, reps = 1) {
  model.generate(prompt, { maxTokens: 4 }); // warm
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) model.generate(prompt, { maxTokens: 1 });
  const t1 = performance.now();
  for (let i = 0; i < reps; i++) model.generate(prompt, { maxTokens: tokens });
  const t2 = performance.now();
  const ttft = (t1 - t0) / reps;
  return { ttftMs: ttft, tokPerSec: (tokens - 1) / (((t2 - t1) / reps - ttft) / 1000) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const pause = () => new Promise((r) => setTimeout(r, 50));

// The native yardstick, built from this checkout's sources; null and why when it cannot be.
function buildNative() {
  if (process.env.BENCH_NO_NATIVE) return { why: 'BENCH_NO_NATIVE set' };
  const r = spawnSync('bash', [join(ROOT, 'build.sh'), 'generate'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0 || !existsSync(NATIVE)) return { why: `bash build.sh generate failed: ${(r.stderr || r.stdout).trim().split('\n').pop()}` };
  return { ok: true };
}

function runNative(args) {
  const r = spawnSync(NATIVE, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`build/generate ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout.trim().split('\n').map((l) => JSON.parse(l));
}

// The same bandwidths in wasm: aw_bench_stream on two buffers of STREAM_MIB in the module's memory,
// best of 5 passes after one that faults the pages in.
function wasmStream(lib) {
  const ex = lib[EXPORTS], n = (STREAM_MIB << 20) / 4;
  const a = ex.malloc(n * 4), b = ex.malloc(n * 4);
  if (!a || !b) return null;
  try {
    new Float32Array(lib.memory.buffer, a, n).fill(1), new Float32Array(lib.memory.buffer, b, n).fill(2);
    const best = (mode) => {
      let gbs = 0;
      ex.aw_bench_stream(b, a, n, mode, 1);
      for (let r = 0; r < 5; r++) {
        const t0 = performance.now();
        ex.aw_bench_stream(b, a, n, mode, 1);
        gbs = Math.max(gbs, (n * 4) / ((performance.now() - t0) * 1e6));
      }
      return gbs;
    };
    return { copyGBs: best(0), readGBs: best(1), readAllGBs: best(2) }; // 2: over the lib's threads
  } finally {
    ex.free(a), ex.free(b);
  }
}

async function chromium(files, threadsList) {
  let launch;
  try {
    ({ launch } = await import('../tests/browser/helpers.js'));
  } catch (e) {
    return { why: `no browser (${e.message})` };
  }
  const { startServer } = await import('../scripts/serve.js');
  const server = await startServer({ mounts: { '/': `${ROOT}bench/peers`, '/wasm/': `${ROOT}wasm`, '/m/': files } });
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
    }, { threadsList, prompt: promptOf(SHAPE.vocab, PROMPT), tokens: TOKENS, rounds: ROUNDS, measureSrc: measure.toString() });
  } finally {
    await browser.close();
    await server.close();
  }
}

// The last-level cache's bytes (Linux sysfs), 32 MiB when unknown.
function lastLevelCache() {
  try {
    const dir = '/sys/devices/system/cpu/cpu0/cache';
    const sizes = ['index3', 'index2'].filter((i) => existsSync(`${dir}/${i}/size`)).map((i) => readFileSync(`${dir}/${i}/size`, 'utf8').trim());
    const m = /^(\d+)([KM])$/.exec(sizes[0] ?? '');
    if (m) return Number(m[1]) * (m[2] === 'M' ? 2 ** 20 : 2 ** 10);
  } catch {}
  return 32 * 2 ** 20;
}

// Weight bytes a decoding step reads: every parameter, less the embedding rows it does not read (an
// untied embedding and a learned positional table give one row each per token).
function weightBytes(config, parameterCount) {
  let floats = parameterCount;
  if (!config.tieEmbeddings) floats -= (config.vocab - 1) * config.dModel;
  if (config.positional === 'learned') floats -= (config.maxLen - 1) * config.dModel;
  return 4 * floats;
}

// ---- quantized weights -------------------------------------------------------------------------

const QUANT_SHAPES = [
  { name: 'stories15M', dim: 288, hidden: 768, layers: 6, heads: 6, vocab: 32000, seqLen: 256, tokens: TOKENS },
  { name: 'stories110M', dim: 768, hidden: 2048, layers: 12, heads: 12, vocab: 32000, seqLen: 256, tokens: 40 },
];

// runq.c from a llama2.c checkout (LLAMA2C), built once into dir; { bin } or { why }.
function buildRunq(dir) {
  const root = process.env.LLAMA2C;
  const how = 'set LLAMA2C to a llama2.c checkout (git clone https://github.com/karpathy/llama2.c && git -C llama2.c checkout 350e04f) to compare with its runq.c';
  if (!root) return { why: `runq.c: ${how}` };
  const src = join(root, 'runq.c');
  if (!existsSync(src)) return { why: `runq.c: no ${src}; ${how}` };
  const bin = join(dir, 'runq');
  const r = spawnSync('gcc', ['-Ofast', '-march=native', '-fopenmp', src, '-lm', '-o', bin], { encoding: 'utf8' });
  if (r.status !== 0) return { why: `runq.c: gcc failed: ${r.stderr.trim().split('\n').pop()}` };
  const head = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  return { bin, commit: head || 'unknown commit' };
}

// runq.c's file: model.saveLlama2c({ version: 2 }) of the same weights, with token 1 (BOS)'s embedding
// row zeroed first: runq.c stops at a generated BOS, and random weights must not end its timing early.
function runqFile(lib, v0) {
  const c = new Int32Array(v0.buffer.slice(v0.byteOffset, v0.byteOffset + 28)), dim = c[0];
  const bytes = v0.slice();
  new Float32Array(bytes.buffer, 28 + 4 * dim, dim).fill(0);
  const m = lib.loadLlama2c(bytes);
  const v2 = m.saveLlama2c({ version: 2 });
  m.dispose();
  return { bytes: v2, group: new DataView(v2.buffer, v2.byteOffset).getInt32(37, true) };
}

// a tokenizer.bin of `vocab` placeholder pieces (runq.c needs one to start)
function placeholderTokenizer(vocab) {
  const parts = [Buffer.from(new Int32Array([16]).buffer)];
  for (let i = 0; i < vocab; i++) {
    const piece = Buffer.from(`<${i}>`);
    parts.push(Buffer.from(new Float32Array([0]).buffer), Buffer.from(new Int32Array([piece.length]).buffer), piece);
  }
  return Buffer.concat(parts);
}

function runRunq(bin, model, tokenizer, threads, steps) {
  const env = { ...process.env, OMP_NUM_THREADS: String(threads) };
  const r = spawnSync(bin, [model, '-z', tokenizer, '-t', '0', '-n', String(steps)], { encoding: 'utf8', env, maxBuffer: 1 << 24 });
  const m = /achieved tok\/s: ([0-9.]+)/.exec(r.stderr);
  if (r.status !== 0 || !m) throw new Error(`runq ${model}: ${r.stderr.trim()}`);
  return { tokPerSec: Number(m[1]) };
}

async function quantized({ cpuName, simd, relaxed }) {
  console.log(`\nQuantized weights (model.quantize): greedy decoding tokens/s after a ${PROMPT}-token prompt, median of ${ROUNDS} ` +
    `alternating rounds; ${cpuName()}`);
  const dir = mkdtempSync(join(tmpdir(), 'aw-genq-'));
  try {
    const runq = buildRunq(dir);
    console.log(runq.why ?? `runq.c: llama2.c ${runq.commit}, gcc -Ofast -march=native -fopenmp, OMP_NUM_THREADS 1 and 2`);
    if (!runq.why) writeFileSync(join(dir, 'tokenizer.bin'), placeholderTokenizer(32000));
    // one threaded instance per build: setThreads(1 | 2) on the same model
    const libs = { simd: await loadAttention({ threads: 2, simd: true, relaxed: false }) };
    if (relaxed) libs.relaxed = await loadAttention({ threads: 2, relaxed: true });
    const bw = wasmStream(libs.simd);
    for (const shape of QUANT_SHAPES) {
      const cfg = { vocab: shape.vocab, dModel: shape.dim, heads: shape.heads, layers: shape.layers, dFF: shape.hidden,
        maxLen: shape.seqLen, block: 'llama', tieEmbeddings: true, seed: 1 };
      const src = simd.createModel(cfg, { training: false });
      const st = src.save(), v0 = src.saveLlama2c();
      src.dispose();
      const v2 = runqFile(simd, v0);
      const v2file = join(dir, `${shape.name}.bin`);
      writeFileSync(v2file, v2.bytes);
      const prompt = promptOf(shape.vocab, PROMPT), results = {}, read = {};
      const put = (k, r) => (results[k] ??= []).push(r);
      for (const [build, lib] of Object.entries(libs))
        for (const format of ['fp32', 'q8_0', 'q4_0']) {
          const m = lib.loadModel(st, { training: false });
          if (format !== 'fp32') m.quantize(format);
          // bytes a token reads: float32, every weight (the tied table is the classifier); quantized, all the
          // weights held but the float32 embedding table (one row a token; the classifier is its quantized copy)
          read[format] = format === 'fp32' ? weightBytes(m.config, m.parameterCount) : m.weightBytes.bytes - 4 * (shape.vocab - 1) * shape.dim;
          for (let r = 0; r < ROUNDS; r++)
            for (const threads of [1, 2]) {
              lib.setThreads(threads);
              put(`${build} ${format} ${threads}`, measure(m, prompt, shape.tokens));
              if (!runq.why && build === 'simd' && format === 'q8_0') put(`runq ${threads}`, runRunq(runq.bin, v2file, join(dir, 'tokenizer.bin'), threads, shape.tokens + 1));
              await pause();
            }
          m.dispose();
        }
      const med = (k) => (results[k] ? median(results[k].map((x) => x.tokPerSec)) : null);
      console.log(`\n${shape.name} shape (dim ${shape.dim}, ${shape.layers} layers, ${shape.heads} heads, hidden ${shape.hidden}, vocab ${shape.vocab}, tied), ` +
        `${shape.tokens} tokens; weights read per token: fp32 ${(read.fp32 / 2 ** 20).toFixed(1)} MiB, q8_0 ${(read.q8_0 / 2 ** 20).toFixed(1)} MiB, ` +
        `q4_0 ${(read.q4_0 / 2 ** 20).toFixed(1)} MiB (its classifier in q8_0); runq.c's file ${(v2.bytes.length / 2 ** 20).toFixed(1)} MiB, group ${v2.group}`);
      console.log('| decoder | 1 thread tok/s | x our fp32 | x runq.c | 2 threads tok/s | x our fp32 | x runq.c | weight GB/s 1t / 2t | share of wasm read bandwidth 1t / 2t |');
      console.log('|---|---|---|---|---|---|---|---|---|');
      const x = (a, b) => (a !== null && b ? `${(a / b).toFixed(2)}x` : 'n/a');
      const rows = [['runq', 'q8_0', 'runq.c (llama2.c, native, q8_0)']];
      for (const build of Object.keys(libs))
        for (const format of ['fp32', 'q8_0', 'q4_0']) rows.push([`${build} ${format}`, format, `ours, Node, ${build === 'simd' ? 'SIMD128' : 'relaxed SIMD'}, ${format}`]);
      for (const [k, format, label] of rows) {
        const t1 = med(`${k} 1`), t2 = med(`${k} 2`);
        if (t1 === null) continue;
        const base = k.startsWith('runq') ? 'simd' : k.split(' ')[0];
        const g = (t) => (t * read[format]) / 1e9;
        const share = (t, n) => (bw ? `${((100 * g(t)) / (n === 1 ? bw.readGBs : bw.readAllGBs)).toFixed(0)}%` : 'n/a');
        console.log(`| ${label} | ${t1.toFixed(1)} | ${x(t1, med(`${base} fp32 1`))} | ${x(t1, med('runq 1'))} | ${t2.toFixed(1)} | ` +
          `${x(t2, med(`${base} fp32 2`))} | ${x(t2, med('runq 2'))} | ${g(t1).toFixed(2)} / ${g(t2).toFixed(2)} | ${share(t1, 1)} / ${share(t2, 2)} |`);
      }
    }
    if (bw) console.log(`\nwasm read bandwidth (${STREAM_MIB} MiB, best of 5): 1 thread ${bw.readGBs.toFixed(1)} GB/s, 2 threads ${bw.readAllGBs.toFixed(1)} GB/s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function run(opts) {
  if (process.env.BENCH_GEN_QUANT !== 'only') await fp32Table(opts);
  if (process.env.BENCH_GEN_QUANT !== '0') await quantized(opts);
}

async function fp32Table({ cpuName, simd, relaxed }) {
  const haveTorch = spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
  console.log(`Greedy generation with the KV cache: time to first token for the prompt, tokens/s over the ${TOKENS - 1} ` +
    `tokens after it; median of ${ROUNDS} alternating rounds; ${cpuName()}`);
  const native = buildNative();
  const dir = mkdtempSync(join(tmpdir(), 'aw-gen-'));
  try {
    // the models: { name, label, st (safetensors bytes), llama2c (stories shapes, for Chromium), prompt, tokens, reps,
    // torch (the shape PyTorch's worker builds; stories shapes only), weightBytes }
    const models = [];
    for (const [name, kvHeads] of [['mha', SHAPE.heads], ['gqa', 2]]) {
      const m = simd.createModel({ vocab: SHAPE.vocab, dModel: SHAPE.dim, heads: SHAPE.heads, kvHeads, layers: SHAPE.layers,
        dFF: SHAPE.hidden, maxLen: SHAPE.seqLen, block: 'llama', tieEmbeddings: true, seed: 1 });
      models.push({ name, label: `stories15M shape, ${kvHeads} K/V heads`, st: m.save(), llama2c: m.saveLlama2c(),
        prompt: PROMPT, tokens: TOKENS, reps: 1, torch: { ...SHAPE, kvHeads }, weightBytes: weightBytes(m.config, m.parameterCount) });
      m.dispose();
    }
    if (process.env.BENCH_GEN_PAGE !== '0') {
      const page = JSON.parse(readFileSync(join(ROOT, 'web/models/fortunes.json'), 'utf8'));
      for (const { file } of page.models) {
        const st = readFileSync(join(ROOT, 'web/models', file));
        const m = simd.loadModel(st);
        const c = m.config, prompt = Math.min(PROMPT, c.maxLen >> 2), tokens = Math.min(TOKENS, c.maxLen - prompt + 1);
        models.push({ name: file.replace('.safetensors', ''), label: `${file} (${c.attention}, d ${c.dModel}, ${c.layers} layers)`,
          st, prompt, tokens, reps: PAGE_REPS, weightBytes: weightBytes(c, m.parameterCount) });
        m.dispose();
      }
    }
    for (const m of models) writeFileSync(join(dir, `${m.name}.safetensors`), m.st);
    for (const m of models) if (m.llama2c) writeFileSync(join(dir, `${m.name}.bin`), m.llama2c);

    // ours: each build at 1 and 2 threads, loaded once; PyTorch: one worker per thread count
    const libs = {};
    for (const threads of [1, 2]) {
      libs[`simd ${threads}`] = await loadAttention({ threads, simd: true, relaxed: false });
      if (relaxed) libs[`relaxed ${threads}`] = await loadAttention({ threads, relaxed: true });
    }

    // bandwidths, natively and in wasm, before the models (the same C loop): one thread's read stream
    // limits a 1-thread decoder, the stream cut over 2 threads (readAllGBs) a 2-thread one
    const bw = { native: native.ok ? runNative(['--copy-mib', String(STREAM_MIB), '--threads', '2'])[0] : null, wasm: wasmStream(libs['simd 2']) };
    const l3 = lastLevelCache();
    const gbs = (b) => (b ? `copy ${b.copyGBs.toFixed(1)} GB/s, read ${b.readGBs.toFixed(1)} GB/s (2 threads ${b.readAllGBs.toFixed(1)})` : 'n/a');
    console.log(`bandwidth (${STREAM_MIB} MiB buffers, best of 5): native ${gbs(bw.native)}; wasm ${gbs(bw.wasm)}; ` +
      `last-level cache ${(l3 / 2 ** 20).toFixed(0)} MiB` +
      `${native.ok ? '' : ` (native C: ${native.why})`}`);
    const torch = {};
    if (haveTorch) for (const threads of [1, 2]) (torch[threads] = torchWorker(threads)), await torch[threads].ask({ op: 'threads', n: threads });
    const results = {}; // `${model} ${contender} ${threads}` -> runs
    const put = (k, r) => (results[k] ??= []).push(r);
    try {
      for (const m of models) {
        const loaded = Object.fromEntries(Object.entries(libs).map(([k, lib]) => [k, lib.loadModel(m.st, { training: false })]));
        const prompt = promptOf(loaded['simd 1'].config.vocab, m.prompt);
        for (let r = 0; r < ROUNDS; r++)
          for (const threads of [1, 2]) {
            if (native.ok) put(`${m.name} native ${threads}`, runNative([join(dir, `${m.name}.safetensors`), '--threads', String(threads),
              '--prompt', String(m.prompt), '--tokens', String(m.tokens), '--reps', String(m.reps)])[0]);
            for (const build of ['simd', 'relaxed']) {
              const mm = loaded[`${build} ${threads}`];
              if (!mm) continue;
              const lib = libs[`${build} ${threads}`], items = lib.threadWorkItems();
              put(`${m.name} ${build} ${threads}`, measure(mm, prompt, m.tokens, m.reps));
              // the worker's items per token (4 + reps (1 + tokens) tokens, prompts included): 0 would mean it never took part
              put(`${m.name} ${build} ${threads} items`, { perToken: (lib.threadWorkItems() - items) / (4 + m.reps * (1 + m.tokens)) });
              await pause();
            }
            if (m.torch && torch[threads])
              put(`${m.name} torch ${threads}`, await torch[threads].ask({ op: 'llama', ...m.torch, prompt: m.prompt, tokens: m.tokens }));
          }
        for (const mm of Object.values(loaded)) mm.dispose();
      }
    } finally {
      for (const t of Object.values(torch)) t.close();
    }
    const web = await chromium(dir, [1, 2]);
    if (!web.why) for (const k of Object.keys(web)) results[`${k.split(' ')[0]} chromium ${k.split(' ')[1]}`] = web[k].runs;

    const med = (k, f) => (results[k] ? median(results[k].map((x) => x[f])) : null);
    const contenders = [['native', 'native C (gcc -O3 -march=native)'], ['simd', 'ours, Node, SIMD128'], ['relaxed', 'ours, Node, relaxed SIMD'],
      ['chromium', `ours, Chromium (${web.why ? web.why : `${web['mha 1'].build} build`})`], ['torch', 'PyTorch (eager)']];
    for (const m of models) {
      console.log(`\n${m.label}: prompt ${m.prompt} tokens, ${m.tokens} generated; weights read per token ${(m.weightBytes / 2 ** 20).toFixed(2)} MiB`);
      console.log('| decoder | 1 thread tok/s | x native C | 2 threads tok/s | x native C | 2t / 1t | first token 1t / 2t (ms) | weight GB/s at 1t / 2t | share of read bandwidth 1t / 2t |');
      console.log('|---|---|---|---|---|---|---|---|---|');
      const itemNotes = [];
      for (const [c, label] of contenders) {
        const t1 = med(`${m.name} ${c} 1`, 'tokPerSec'), t2 = med(`${m.name} ${c} 2`, 'tokPerSec');
        if (t1 === null && t2 === null) continue;
        const n1 = med(`${m.name} native 1`, 'tokPerSec'), n2 = med(`${m.name} native 2`, 'tokPerSec');
        const f1 = med(`${m.name} ${c} 1`, 'ttftMs'), f2 = med(`${m.name} ${c} 2`, 'ttftMs');
        const x = (a, b) => (a !== null && b ? `${(a / b).toFixed(2)}x` : 'n/a');
        const limit = c === 'native' || c === 'torch' ? bw.native : bw.wasm; // native code against the native stream
        const g = (t) => (t !== null ? (t * m.weightBytes) / 1e9 : null);
        // weights that fit the last-level cache are not streamed from memory: no share of its bandwidth
        const share = (t, threads) => (m.weightBytes < l3 ? 'in cache' : t !== null && limit
          ? `${((100 * g(t)) / (threads === 1 ? limit.readGBs : limit.readAllGBs)).toFixed(0)}%` : 'n/a');
        const items = ['simd', 'relaxed'].includes(c) ? med(`${m.name} ${c} 2 items`, 'perToken')
          : c === 'native' && results[`${m.name} native 2`] ? med(`${m.name} native 2`, 'workerItems') / (m.reps * (1 + m.tokens)) : null;
        if (items !== null) itemNotes.push(`${label}: ${items.toFixed(1)}`);
        console.log(`| ${label} | ${t1?.toFixed(1) ?? 'n/a'} | ${x(t1, n1)} | ${t2?.toFixed(1) ?? 'n/a'} | ${x(t2, n2)} | ${x(t2, t1)} | ` +
          `${f1?.toFixed(1) ?? 'n/a'} / ${f2?.toFixed(1) ?? 'n/a'} | ${g(t1)?.toFixed(2) ?? 'n/a'} / ${g(t2)?.toFixed(2) ?? 'n/a'} | ${share(t1, 1)} / ${share(t2, 2)} |`);
      }
      if (itemNotes.length) console.log(`items the worker ran per token at 2 threads (lib.threadWorkItems): ${itemNotes.join('; ')}`);
    }
    if (!web.why) console.log(`\nChromium: loadLlama2c of the ${(models[0].llama2c.length / 2 ** 20).toFixed(1)} MiB file took ${web['mha 1'].loadMs.toFixed(0)} ms`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
