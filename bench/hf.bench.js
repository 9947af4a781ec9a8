// hf.bench.js: Hugging Face checkpoints in BF16, for random models of GPT-2 small's and SmolLM2-135M's
// shapes beside llama2.c's stories15M shape (random weights: speed does not depend on them).
//   load      lib.loadHuggingFace on the file's bytes (read from disk first, not timed): seconds, and
//             seconds per 500 MB of file (target <= 2 s); the wasm heap it took (the model's
//             allocations) and the process's peak resident memory growth during the load, each over
//             the fp32 weights (target <= 1.25x; the file's bytes, already read and held by the
//             caller, are not counted: with BF16 they add 0.5x)
//   forward   one forward of 64 tokens (logits and attention of every head), median of 3, 1 and 2 threads
//   decode    greedy generation with the KV cache, tokens/s after the first, 1 and 2 threads
//   quantized loadHuggingFace({ quantize: 'q8_0' | 'q4_0' }) beside the float32 load, at 1 thread: the
//             wasm memory the load grew (memory.buffer.byteLength after minus before: wasm memory
//             never shrinks, so this is the load's peak) over the float32 weights' bytes, the
//             weights' bytes held, load seconds and decode tokens/s
//   quantize after a float32 load (model.quantize, in place) beside the quantized load: the heap in
//             use after the float32 load, the peak (wasm memory grown since before the load) and the
//             heap in use after quantizing, against the quantized load's peak and heap in use
// Each (shape, threads) runs in a child process of its own, so memory is measured from a fresh start.
//   node bench/run.js hf      (BENCH_HF_SHAPES=gpt2,smollm2,stories15m picks shapes; BENCH_HF_MEMORY=1
//                             measures the memory tables alone: no float32 rows, no forward or decode)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SHAPES = {
  gpt2: { label: 'GPT-2 small', config: { architectures: ['GPT2LMHeadModel'], model_type: 'gpt2', vocab_size: 50257, n_embd: 768, n_layer: 12, n_head: 12, n_positions: 1024, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new' } },
  smollm2: { label: 'SmolLM2-135M', config: { architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: 49152, hidden_size: 576, intermediate_size: 1536, num_hidden_layers: 30, num_attention_heads: 9, num_key_value_heads: 3, max_position_embeddings: 8192, rms_norm_eps: 1e-5, rope_theta: 100000, tie_word_embeddings: true, hidden_act: 'silu' } },
  stories15m: { label: 'stories15M', config: { architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: 32000, hidden_size: 288, intermediate_size: 768, num_hidden_layers: 6, num_attention_heads: 6, num_key_value_heads: 6, max_position_embeddings: 256, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true, hidden_act: 'silu' } },
};

// The Hugging Face tensors of a config, in its names and shapes (what the loader reads).
function tensorsOf(c) {
  if (c.model_type === 'gpt2') {
    const C = c.n_embd, list = [['wte.weight', [c.vocab_size, C]], ['wpe.weight', [c.n_positions, C]]];
    for (let l = 0; l < c.n_layer; l++) {
      const p = `h.${l}.`;
      list.push([`${p}ln_1.weight`, [C]], [`${p}ln_1.bias`, [C]], [`${p}attn.c_attn.weight`, [C, 3 * C]], [`${p}attn.c_attn.bias`, [3 * C]],
        [`${p}attn.c_proj.weight`, [C, C]], [`${p}attn.c_proj.bias`, [C]], [`${p}ln_2.weight`, [C]], [`${p}ln_2.bias`, [C]],
        [`${p}mlp.c_fc.weight`, [C, 4 * C]], [`${p}mlp.c_fc.bias`, [4 * C]], [`${p}mlp.c_proj.weight`, [4 * C, C]], [`${p}mlp.c_proj.bias`, [C]]);
    }
    list.push(['ln_f.weight', [C]], ['ln_f.bias', [C]]);
    return list;
  }
  const C = c.hidden_size, F = c.intermediate_size, kv = (C / c.num_attention_heads) * c.num_key_value_heads;
  const list = [['model.embed_tokens.weight', [c.vocab_size, C]]];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    list.push([`${p}input_layernorm.weight`, [C]], [`${p}self_attn.q_proj.weight`, [C, C]], [`${p}self_attn.k_proj.weight`, [kv, C]],
      [`${p}self_attn.v_proj.weight`, [kv, C]], [`${p}self_attn.o_proj.weight`, [C, C]], [`${p}post_attention_layernorm.weight`, [C]],
      [`${p}mlp.gate_proj.weight`, [F, C]], [`${p}mlp.up_proj.weight`, [F, C]], [`${p}mlp.down_proj.weight`, [C, F]]);
  }
  list.push(['model.norm.weight', [C]]);
  if (!c.tie_word_embeddings) list.push(['lm_head.weight', [c.vocab_size, C]]); // Llama's default: untied
  return list;
}

// A BF16 model.safetensors of seeded random weights (norms near 1, matrices ~ 1/sqrt(fan-in)).
export function randomBf16(c) {
  const list = tensorsOf(c), header = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const [name, shape] of list) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 2;
    header[name] = { dtype: 'BF16', shape, data_offsets: [off, off + bytes] };
    off += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = new TextEncoder().encode(json), out = new Uint8Array(8 + head.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  const u16 = new Uint16Array(out.buffer, 8 + head.length, off / 2), f = new Float32Array(1), u = new Uint32Array(f.buffer);
  let s = 12345, at = 0;
  for (const [name, shape] of list) {
    const n = shape.reduce((a, b) => a * b, 1), norm = /norm|ln_/.test(name) && shape.length === 1 && !/bias/.test(name);
    const scale = shape.length === 2 ? 1 / Math.sqrt(shape[shape.length - 1]) : 0.02;
    for (let i = 0; i < n; i++) {
      s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
      f[0] = (norm ? 1 : 0) + ((s / 2 ** 32) * 2 - 1) * scale;
      u16[at++] = u[0] >>> 16;
    }
  }
  return out;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// The child: one shape at one thread count, from a fresh process.
async function child(shapeName, threads, file, quantize) {
  const { loadAttention } = await import('../wasm/index.js');
  const lib = await loadAttention({ threads });
  const shape = SHAPES[shapeName], bytes = readFileSync(file);
  const ex = lib[Symbol.for('attention-wasm.exports')];
  const rss0 = process.memoryUsage().rss, mem0 = ex.aw_heap_in_use(), buf0 = lib.memory.buffer.byteLength;
  const maxLen = Math.min(shape.config.n_positions ?? shape.config.max_position_embeddings, 1024);
  if (quantize?.startsWith('after-')) { // a float32 load, then model.quantize
    const model = lib.loadHuggingFace({ config: shape.config, weights: bytes, maxLen });
    const loadHeap = ex.aw_heap_in_use() - mem0, loadBuf = lib.memory.buffer.byteLength - buf0;
    const t0 = performance.now();
    model.quantize(quantize.slice(6));
    const quantizeS = (performance.now() - t0) / 1000, { fp32, bytes: held } = model.weightBytes;
    console.log(JSON.stringify({ fp32, held, loadHeap, loadBuf, heapAfter: ex.aw_heap_in_use() - mem0,
      bufGrow: lib.memory.buffer.byteLength - buf0, quantizeS }));
    return;
  }
  let peak = rss0;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  const t0 = performance.now();
  const model = lib.loadHuggingFace({ config: shape.config, weights: bytes, maxLen, ...(quantize ? { quantize } : {}) });
  const loadS = (performance.now() - t0) / 1000;
  peak = Math.max(peak, process.memoryUsage().rss);
  clearInterval(timer);
  const memGrow = ex.aw_heap_in_use() - mem0, bufGrow = lib.memory.buffer.byteLength - buf0, { fp32, bytes: held } = model.weightBytes;
  if (process.env.BENCH_HF_MEMORY) return console.log(JSON.stringify({ fp32, held, memGrow, bufGrow, loadS, tokS: null }));
  const ids = Array.from({ length: 64 }, (_, i) => 1 + ((i * 7919) % (model.config.vocab - 1)));
  model.forward(ids);
  const fw = [];
  for (let r = 0; r < 3; r++) {
    const a = performance.now();
    model.forward(ids);
    fw.push(performance.now() - a);
  }
  const prompt = ids.slice(0, 16), N = 48;
  model.generate(prompt, { maxTokens: 2 });
  const dec = [];
  for (let r = 0; r < 3; r++) {
    const a = performance.now();
    model.generate(prompt, { maxTokens: 1 });
    const b = performance.now();
    model.generate(prompt, { maxTokens: N });
    const c = performance.now();
    dec.push((N - 1) / (((c - b) - (b - a)) / 1000));
  }
  console.log(JSON.stringify({ params: fp32 / 4, fileMB: bytes.length / 1e6, loadS, memGrow, bufGrow, held, rssGrow: peak - rss0, fp32,
    forwardMs: median(fw), tokS: median(dec) }));
}

export default async function run({ cpuName }) {
  const names = (process.env.BENCH_HF_SHAPES ?? 'gpt2,smollm2,stories15m').split(',');
  const dir = mkdtempSync(join(tmpdir(), 'aw-hf-bench-'));
  const me = fileURLToPath(import.meta.url);
  const memoryOnly = Boolean(process.env.BENCH_HF_MEMORY);
  console.log(`# ${cpuName()}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; random weights, BF16 files; ` +
    'each row a fresh process (SIMD128 build, relaxed where validated)');
  if (!memoryOnly) console.log('| shape | parameters | file | load | s per 500 MB of file | wasm heap / fp32 | peak RSS growth / fp32 | forward 64 tokens, 1 / 2 threads | decode 1 thread | decode 2 threads |');
  if (!memoryOnly) console.log('|---|---|---|---|---|---|---|---|---|---|');
  const rows = [], after = [];
  const spawn = (name, threads, file, quantize = '') => {
    const p = spawnSync(process.execPath, [...process.execArgv, me, 'child', name, String(threads), file, quantize], { encoding: 'utf8', maxBuffer: 1 << 20 });
    if (p.status !== 0) throw new Error(`hf bench child ${name} ${threads} ${quantize}: ${p.stderr}`);
    return JSON.parse(p.stdout.trim().split('\n').pop());
  };
  try {
    for (const name of names) {
      const file = join(dir, `${name}.safetensors`);
      writeFileSync(file, randomBf16(SHAPES[name].config));
      for (const q of ['q8_0', 'q4_0']) after.push([name, q, spawn(name, 1, file, `after-${q}`)]);
      if (!memoryOnly) {
        const r = { 1: spawn(name, 1, file), 2: spawn(name, 2, file) };
        const a = r[1];
        console.log(`| ${SHAPES[name].label} | ${(a.params / 1e6).toFixed(1)}M | ${a.fileMB.toFixed(0)} MB | ${a.loadS.toFixed(2)} s | ` +
          `${(a.loadS * 500 / a.fileMB).toFixed(2)} s | ${(a.memGrow / a.fp32).toFixed(2)}x | ${(a.rssGrow / a.fp32).toFixed(2)}x | ` +
          `${a.forwardMs.toFixed(0)} / ${r[2].forwardMs.toFixed(0)} ms | ${a.tokS.toFixed(1)} tok/s | ${r[2].tokS.toFixed(1)} tok/s |`);
        rows.push([name, 'fp32', a]);
      }
      for (const q of ['q8_0', 'q4_0']) rows.push([name, q, spawn(name, 1, file, q)]);
      rmSync(file);
    }
    console.log('\nQuantized loads (loadHuggingFace({ quantize }), 1 thread): the wasm memory the load grew is its peak (memory never shrinks)');
    console.log('| shape | weights | fp32 weights | weights held | wasm memory grown | grown / fp32 weights | load | decode 1 thread |');
    console.log('|---|---|---|---|---|---|---|---|');
    const mb = (b) => `${(b / 1e6).toFixed(0)} MB`;
    for (const [name, q, a] of rows)
      console.log(`| ${SHAPES[name].label} | ${q} | ${mb(a.fp32)} | ${mb(a.held)} | ${mb(a.bufGrow)} | ${(a.bufGrow / a.fp32).toFixed(2)}x | ` +
        `${a.loadS.toFixed(2)} s | ${a.tokS === null ? '-' : `${a.tokS.toFixed(1)} tok/s`} |`);
    console.log('\nQuantizing after a float32 load (model.quantize, in place) beside the quantized load, 1 thread: heap in use ' +
      '(bytes allocated) and the peak (wasm memory grown since before the load), each from the fresh instance');
    console.log('| shape | weights | fp32 load: heap in use | then quantize: peak | heap in use after | quantize | quantized load: peak | heap in use after |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [name, q, a] of after) {
      const [, , l] = rows.find(([n, f]) => n === name && f === q);
      console.log(`| ${SHAPES[name].label} | ${q} | ${mb(a.loadHeap)} | ${mb(a.bufGrow)} (load's ${mb(a.loadBuf)}) | ${mb(a.heapAfter)} | ` +
        `${a.quantizeS.toFixed(2)} s | ${mb(l.bufGrow)} | ${mb(l.memGrow)} |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(process.argv[3], Number(process.argv[4]), process.argv[5], process.argv[6] || null);
