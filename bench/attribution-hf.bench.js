// attribution-hf.bench.js: model.attributionPatching on Hugging Face shapes loaded for inference
// (loadHuggingFace of hf.bench.js's random BF16 checkpoints, widened to float32; random weights:
// time and memory do not depend on them), 20 tokens, 1 thread: one forward of the 20 tokens for
// scale, then attributionPatching with the default names (every head's z, attn_out, mlp_out,
// resid_pre); the first call's wasm memory growth (memory never shrinks: the call's peak above what
// the load left free) and the heap in use after it (the activations the model keeps for its next
// forward; the activations' gradients are freed), and the median of the next 3 calls. A trainable
// load of GPT-2 small (2 GiB with gradients and AdamW's moments) does not fit in wasm32's heap; the
// inference load is the only way to patch it. Each shape runs in a child process (a fresh heap).
//   node bench/run.js attribution-hf   (BENCH_ATTR_SHAPES=gpt2,smollm2,stories15m picks shapes; default gpt2)
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { SHAPES, randomBf16 } from './hf.bench.js';

const N = 20;
const mb = (b) => `${(b / 1048576).toFixed(1)} MiB`;

async function child(name) {
  const { loadAttention } = await import('../wasm/index.js');
  const lib = await loadAttention({ threads: 1 });
  const ex = lib[Symbol.for('attention-wasm.exports')];
  const { config } = SHAPES[name];
  const weights = randomBf16(config);
  const heap0 = ex.aw_heap_in_use();
  const model = lib.loadHuggingFace({ config, weights, maxLen: Math.min(config.n_positions ?? config.max_position_embeddings, 1024) });
  const loaded = ex.aw_heap_in_use() - heap0, V = model.config.vocab;
  const clean = Array.from({ length: N }, (_, i) => (i * 7919 + 13) % V), corrupt = clean.map((x, i) => (i === 5 ? (x + 1) % V : x));
  const metric = { target: clean[N - 1] };
  const t0 = performance.now();
  model.forward(clean);
  const forwardMs = performance.now() - t0;
  const heapBefore = ex.aw_heap_in_use(), buf0 = lib.memory.buffer.byteLength, t1 = performance.now();
  model.attributionPatching(clean, corrupt, { metric });
  const firstMs = performance.now() - t1, grown = lib.memory.buffer.byteLength - buf0, heapAfter = ex.aw_heap_in_use();
  const ms = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    model.attributionPatching(clean, corrupt, { metric });
    ms.push(performance.now() - t);
  }
  let trainable;
  try { lib.loadHuggingFace({ config, weights, maxLen: model.config.maxLen, training: true }).dispose(); trainable = 'loads'; }
  catch (e) { trainable = `Error: ${e.message.replace(/^attention-wasm: /, '').slice(0, 80)}...`; }
  process.stdout.write(JSON.stringify({ loaded, forwardMs, firstMs, grown, heapDelta: heapAfter - heapBefore, medianMs: ms.sort((a, b) => a - b)[1], trainable }));
}

export default async function run({ cpuName }) {
  const names = (process.env.BENCH_ATTR_SHAPES || 'gpt2').split(',');
  console.log(`attributionPatching on inference loads, ${N} tokens, SIMD, 1 thread (${cpuName()}, load average ${loadavg().map((x) => x.toFixed(1)).join(', ')})`);
  console.log('| shape | weights held | forward (20 tokens) | first call | next 3 (median) | wasm memory grown by the first call | heap after - before | training: true |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const name of names) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), 'attribution-child', name], { encoding: 'utf8', maxBuffer: 1 << 20 });
    if (r.status !== 0) throw new Error(`attribution-hf child ${name}: ${r.stderr}`);
    const a = JSON.parse(r.stdout);
    console.log(`| ${SHAPES[name].label} | ${mb(a.loaded)} | ${a.forwardMs.toFixed(0)} ms | ${a.firstMs.toFixed(0)} ms | ${a.medianMs.toFixed(0)} ms | ` +
      `${mb(a.grown)} | ${mb(a.heapDelta)} | ${a.trainable} |`);
  }
}

// not 'child': hf.bench.js, imported above, runs its own child on that word
if (process.argv[2] === 'attribution-child') await child(process.argv[3]);
