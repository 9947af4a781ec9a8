// huggingface.js: Hugging Face checkpoints (config.json + model.safetensors, sharded or not, and
// tokenizer.json) read into the library's model and written from it (docs/huggingface.md).
//
// An architecture is a row of ARCHS: which config.json fields it reads, the createModel options
// they become, and where each of the model's tensors comes from (names, layouts). Saving walks
// the same row backwards. Every check (the config, the safetensors headers, the shapes, the
// memory) runs before anything is allocated; then the weights go into wasm memory once, one
// tensor at a time, widened from BF16/F16 as they are copied (no second full copy in JS), and a
// NaN or Infinity among them is found as each is written (the model is then freed).
//
// Two layout facts, as transformers' modeling code has them:
// - Llama, Mistral and Qwen rotate column i with column i + head_dim / 2 of each head
//   (rotate_half); this library (and llama2.c) rotates columns 2i and 2i + 1. The rows of q_proj
//   and k_proj (and their biases and Qwen3's q_norm / k_norm) are permuted on load, and back on save.
// - GPT-2's Conv1D keeps its weights (in, out), and c_attn holds q, k and v side by side.
import { bytesOf, checkBool, checkKeys, describe, fail } from './core.js';
import { CHECK_CONFIG, MODEL_PROTOTYPE, QUANTIZED, UNINITIALISED } from './model.js';
import { ELEMENT_BYTES, safetensorsHeader } from './safetensors.js';
import { sniffModelFile } from './llama2c.js';

const READABLE = ['F32', 'F16', 'BF16'];
// The wasm32 build's memory (build.sh: -sMAXIMUM_MEMORY=2GB); the weights must fit beside the rest.
const MEMORY_LIMIT = 2 ** 31;
const HEADROOM = 96 * 2 ** 20; // activations of a short forward and the loader's own buffers

// Where each of the Hub's other files goes, for one given as weights.
const INSTEAD = {
  'hf-config': 'give its text as config, and model.safetensors\' bytes (or every shard\'s) as weights',
  'hf-tokenizer': 'give its text as tokenizer, and model.safetensors\' bytes (or every shard\'s) as weights',
};

// A Hub file that is not a .safetensors file given as weights (its header length would be read
// from JSON text): an Error saying what it is and what to give instead.
function refuseOtherFile(bytes, w) {
  const u8 = bytesOf(bytes);
  const sniffed = u8 && sniffModelFile(u8.subarray(0, 65536), u8.length);
  if (!sniffed?.format?.startsWith('hf-')) return;
  if (sniffed.format === 'hf-index') {
    let shards = [];
    try {
      shards = [...new Set(Object.values(JSON.parse(new TextDecoder().decode(u8)).weight_map ?? {}))];
    } catch { /* named without its list */ }
    const list = shards.length ? ` (${shards.length}: ${shards.slice(0, 4).join(', ')}${shards.length > 4 ? ', ...' : ''})` : '';
    fail(`${w} is ${sniffed.label}, the shard index, not a .safetensors file: give the bytes of every shard it names${list} as weights, in any order`);
  }
  fail(`${w} is ${sniffed.label}, not a .safetensors file: ${INSTEAD[sniffed.format]}`);
}

// Every shard's tensors in one map; a name in two shards is an Error.
function readShards(weights, what) {
  const list = Array.isArray(weights) ? weights : [weights];
  if (list.length === 0) fail(`${what}: weights is an empty array; give model.safetensors' bytes or every shard's`);
  const all = new Map();
  list.forEach((bytes, i) => {
    const w = list.length > 1 ? `${what}: weights[${i}]` : `${what}: weights`;
    refuseOtherFile(bytes, w);
    for (const [name, t] of safetensorsHeader(bytes, w).tensors) {
      if (all.has(name)) fail(`${w}: tensor "${name}" is in two shards`);
      all.set(name, { ...t, file: i });
    }
  });
  return all;
}

// ---- config.json --------------------------------------------------------------------------------

function readConfig(config, what) {
  let c = config;
  if (typeof c === 'string') {
    try {
      c = JSON.parse(c);
    } catch (e) {
      fail(`${what}: config is not JSON text (${e.message}); give config.json's text or object`);
    }
  } else if (c instanceof Uint8Array || c instanceof ArrayBuffer) {
    return readConfig(new TextDecoder().decode(c), what);
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c)) fail(`${what}: config must be config.json's text or object, got ${describe(config)}`);
  return c;
}

// A field of config.json: a positive integer (lo..hi) when required, else its default.
function intField(c, key, what, { lo = 1, hi = 2 ** 31 - 1, def } = {}) {
  const v = c[key];
  if (v === undefined || v === null) {
    if (def !== undefined) return def;
    fail(`${what}: config.json has no ${key}; this architecture needs it`);
  }
  if (!Number.isSafeInteger(v) || v < lo || v > hi) fail(`${what}: config.json's ${key} is ${describe(v)}; expected an integer in [${lo}, ${hi}]`);
  return v;
}
function numField(c, key, what, def, lo, hi) {
  const v = c[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !(v > lo && v <= hi)) fail(`${what}: config.json's ${key} is ${describe(v)}; expected a number in (${lo}, ${hi}]`);
  return v;
}
// A boolean field of config.json, or its default when absent: "false" (a string) is an Error, not true.
function boolField(c, key, what, def) {
  const v = c[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'boolean') fail(`${what}: config.json's ${key} is ${describe(v)}; expected true or false`);
  return v;
}
// A count of positions (max_position_embeddings, sliding_window, ...): createModel's bound on
// ropeScaling.originalMaxLen, past every published model's (Llama 4 Scout: 10,485,760)
const POSITIONS = { hi: 2 ** 24 };
function refuseIf(cond, what, key, value, why) {
  if (cond) fail(`${what}: config.json's ${key} is ${describe(value)}; ${why}`);
}

// rope_theta and the scaling, from the old fields (rope_theta, rope_scaling) or the newer
// rope_parameters; an unknown scaling type is an Error, never ignored.
function ropeFields(c, what) {
  const rp = c.rope_parameters && typeof c.rope_parameters === 'object' ? c.rope_parameters : null;
  const theta = rp?.rope_theta ?? c.rope_theta ?? 10000;
  if (typeof theta !== 'number' || !(theta > 1 && theta <= 1e9)) fail(`${what}: config.json's rope_theta is ${describe(theta)}; expected a number in (1, 1e9]`);
  const sc = c.rope_scaling ?? (rp && (rp.rope_type ?? rp.type) !== 'default' ? rp : null);
  let scaling = null;
  if (sc) {
    const type = sc.rope_type ?? sc.type;
    const key = c.rope_scaling ? 'rope_scaling' : 'rope_parameters';
    if (type === 'default') return { theta, scaling: null };
    if (type !== 'llama3') fail(`${what}: config.json's ${key}.rope_type is ${describe(type)}; this loader implements "llama3" and "default" only (another scaling changes every position's angles, so it is refused rather than ignored)`);
    for (const k of ['factor', 'low_freq_factor', 'high_freq_factor', 'original_max_position_embeddings'])
      if (typeof sc[k] !== 'number' || !(sc[k] > 0)) fail(`${what}: config.json's ${key}.${k} is ${describe(sc[k])}; "llama3" scaling needs a positive number`);
    scaling = { factor: sc.factor, lowFreqFactor: sc.low_freq_factor, highFreqFactor: sc.high_freq_factor, originalMaxLen: sc.original_max_position_embeddings };
  }
  if (c.partial_rotary_factor !== undefined && c.partial_rotary_factor !== 1)
    refuseIf(true, what, 'partial_rotary_factor', c.partial_rotary_factor, 'this loader rotates whole heads only');
  return { theta, scaling };
}

// Fields that name a design this loader does not run: an Error naming the field and its value.
function refuseUnsupported(c, what) {
  const q = c.quantization_config;
  if (q !== undefined && q !== null)
    fail(`${what}: config.json has a quantization_config (quant_method ${describe(q?.quant_method)}): its weights are stored packed ` +
      'with scales (GPTQ, AWQ, bitsandbytes, FP8, ...), which this loader does not read; give the unquantized checkpoint ' +
      '(quantize: "q8_0" or "q4_0" makes it small here)');
  for (const k of ['num_local_experts', 'num_experts', 'n_routed_experts', 'moe_intermediate_size'])
    refuseIf(c[k] !== undefined && c[k] !== null && c[k] !== 0, what, k, c[k], 'mixture-of-experts models are not read by this loader');
}

// The row of a Llama-like architecture: its config fields as createModel options.
function llamaLike(arch, extra) {
  return {
    arch,
    kind: 'llama',
    fields: { vocab: 'vocab_size', dModel: 'hidden_size', heads: 'num_attention_heads', layers: 'num_hidden_layers',
      kvHeads: 'num_key_value_heads', dFF: 'intermediate_size', ropeTheta: 'rope_theta', normEps: 'rms_norm_eps',
      maxLen: 'max_position_embeddings', 'attentionOptions.window': 'sliding_window', headDim: 'head_dim' },
    options(c, what, maxLen) {
      refuseUnsupported(c, what);
      const dModel = intField(c, 'hidden_size', what), heads = intField(c, 'num_attention_heads', what);
      const layers = intField(c, 'num_hidden_layers', what);
      const kvHeads = intField(c, 'num_key_value_heads', what, { def: heads });
      if (dModel % heads && c.head_dim === undefined)
        fail(`${what}: config.json's hidden_size (${dModel}) is not divisible by num_attention_heads (${heads}), and it gives no head_dim`);
      if (heads % kvHeads) fail(`${what}: config.json's num_attention_heads (${heads}) is not divisible by num_key_value_heads (${kvHeads})`);
      // an explicit head_dim sets the heads' width (and the scale) even where hidden / heads differs
      // (Qwen3-0.6B: 128 where 1024 / 16 = 64): the library's headDim
      const headDim = intField(c, 'head_dim', what, { def: dModel % heads ? undefined : dModel / heads, hi: 1024 });
      const act = c.hidden_act ?? c.hidden_activation ?? 'silu';
      refuseIf(act !== 'silu', what, 'hidden_act', act, 'this architecture runs SwiGLU with silu only');
      refuseIf(boolField(c, 'attention_bias', what, false) && arch !== 'Qwen2ForCausalLM', what, 'attention_bias', true, 'biases on every attention projection (o_proj too) are not read');
      refuseIf(boolField(c, 'mlp_bias', what, false), what, 'mlp_bias', true, 'MLP biases are not read');
      const { theta, scaling } = ropeFields(c, what);
      const o = {
        vocab: intField(c, 'vocab_size', what), dModel, heads, layers, kvHeads,
        dFF: intField(c, 'intermediate_size', what), maxLen, block: 'llama', attention: 'softmax', positional: 'rope',
        normType: 'rmsnorm', ffn: 'swiglu', bias: false, tieEmbeddings: boolField(c, 'tie_word_embeddings', what, false),
        ropeTheta: theta, normEps: numField(c, 'rms_norm_eps', what, 1e-6, 0, 0.1),
      };
      if (scaling) o.ropeScaling = scaling;
      if (headDim * heads !== dModel) o.headDim = headDim;
      extra?.(c, o, what, maxLen);
      return o;
    },
    tensors(o) { // [our name, source] for every tensor of the model
      const hd = o.headDim ?? o.dModel / o.heads, list = [['wte', { name: 'model.embed_tokens.weight', layout: 'rows' }]];
      for (let l = 0; l < o.layers; l++) {
        const p = `model.layers.${l}.`, d = `dec.${l}.`;
        list.push([`${d}self.ln.w`, { name: `${p}input_layernorm.weight` }]);
        for (const x of ['q', 'k', 'v']) {
          list.push([`${d}self.w${x}`, { name: `${p}self_attn.${x}_proj.weight`, layout: 'linear', rope: x !== 'v' ? hd : 0 }]);
          if (o.qkvBias) list.push([`${d}self.b${x}`, { name: `${p}self_attn.${x}_proj.bias`, rope: x !== 'v' ? hd : 0 }]);
        }
        list.push([`${d}self.wo`, { name: `${p}self_attn.o_proj.weight`, layout: 'linear' }]);
        if (o.attentionOptions?.qkNorm) {
          list.push([`${d}self.*.q_norm`, { name: `${p}self_attn.q_norm.weight`, rope: hd }]);
          list.push([`${d}self.*.k_norm`, { name: `${p}self_attn.k_norm.weight`, rope: hd }]);
        }
        list.push([`${d}ffn.ln.w`, { name: `${p}post_attention_layernorm.weight` }]);
        list.push([`${d}ffn.w1`, { name: `${p}mlp.gate_proj.weight`, layout: 'linear' }]);
        list.push([`${d}ffn.w2`, { name: `${p}mlp.down_proj.weight`, layout: 'linear' }]);
        list.push([`${d}ffn.w3`, { name: `${p}mlp.up_proj.weight`, layout: 'linear' }]);
      }
      list.push(['lnf.w', { name: 'model.norm.weight' }]);
      if (!o.tieEmbeddings) list.push(['out.w', { name: 'lm_head.weight', layout: 'linear' }]);
      return list;
    },
    // tensors old checkpoints carry that hold nothing to load
    ignored: (name) => /\.rotary_emb\.inv_freq$/.test(name),
    config(o, orig) { // createModel options -> config.json
      const c = {
        architectures: [arch], model_type: MODEL_TYPES[arch], vocab_size: o.vocab, hidden_size: o.dModel,
        intermediate_size: o.dFF, num_hidden_layers: o.layers, num_attention_heads: o.heads,
        num_key_value_heads: o.kvHeads, head_dim: o.headDim ?? o.dModel / o.heads, hidden_act: 'silu', max_position_embeddings: o.maxLen,
        rms_norm_eps: o.normEps ?? 1e-5, rope_theta: o.ropeTheta ?? 10000, tie_word_embeddings: !!o.tieEmbeddings,
        torch_dtype: 'float32',
        bos_token_id: orig?.bos_token_id ?? null, eos_token_id: orig?.eos_token_id ?? null,
      };
      if (o.ropeScaling) c.rope_scaling = { rope_type: 'llama3', factor: o.ropeScaling.factor, low_freq_factor: o.ropeScaling.lowFreqFactor,
        high_freq_factor: o.ropeScaling.highFreqFactor, original_max_position_embeddings: o.ropeScaling.originalMaxLen };
      if (arch === 'MistralForCausalLM') c.sliding_window = o.attentionOptions?.window ?? null;
      if (arch === 'Qwen2ForCausalLM' || arch === 'Qwen3ForCausalLM') c.use_sliding_window = false; // Qwen2's q, k, v biases need no flag
      else c.attention_bias = false, c.mlp_bias = false;
      return c;
    },
  };
}

const MODEL_TYPES = { LlamaForCausalLM: 'llama', MistralForCausalLM: 'mistral', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3', GPT2LMHeadModel: 'gpt2' };

const GPT2 = {
  arch: 'GPT2LMHeadModel',
  kind: 'gpt2',
  fields: { vocab: 'vocab_size', dModel: 'n_embd', heads: 'n_head', layers: 'n_layer', dFF: 'n_inner',
    normEps: 'layer_norm_epsilon', maxLen: 'n_positions' },
  options(c, what, maxLen) {
    refuseUnsupported(c, what);
    const dModel = intField(c, 'n_embd', what), heads = intField(c, 'n_head', what);
    if (dModel % heads) fail(`${what}: config.json's n_embd (${dModel}) is not divisible by n_head (${heads})`);
    const act = c.activation_function ?? 'gelu_new';
    refuseIf(!['gelu_new', 'gelu_pytorch_tanh'].includes(act), what, 'activation_function', act, 'this loader runs GPT-2\'s tanh GELU ("gelu_new") only');
    refuseIf(boolField(c, 'scale_attn_by_inverse_layer_idx', what, false), what, 'scale_attn_by_inverse_layer_idx', true, 'not read by this loader');
    refuseIf(!boolField(c, 'scale_attn_weights', what, true), what, 'scale_attn_weights', false, 'unscaled attention is not read by this loader');
    refuseIf(boolField(c, 'add_cross_attention', what, false), what, 'add_cross_attention', true, 'cross-attention is not read by this loader');
    // GPT-2's configs leave it out (transformers' default, true): GPT2LMHeadModel's head is wte
    refuseIf(!boolField(c, 'tie_word_embeddings', what, true), what, 'tie_word_embeddings', false, 'GPT-2\'s head is its token embedding (wte); an untied GPT-2 is not read by this loader');
    return {
      vocab: intField(c, 'vocab_size', what), dModel, heads, layers: intField(c, 'n_layer', what),
      dFF: intField(c, 'n_inner', what, { def: 4 * dModel }), maxLen, block: 'classic', attention: 'softmax', positional: 'learned',
      normType: 'layernorm', ffn: 'gelu', bias: true, tieEmbeddings: true, normEps: numField(c, 'layer_norm_epsilon', what, 1e-5, 0, 0.1),
    };
  },
  positions: (c, what) => intField(c, 'n_positions', what, { ...POSITIONS, def: intField(c, 'n_ctx', what, { ...POSITIONS, def: 1024 }) }),
  tensors(o) {
    const C = o.dModel, list = [['wte', { name: 'wte.weight', layout: 'rows' }], ['wpe', { name: 'wpe.weight', layout: 'rows', firstRows: o.maxLen }]];
    for (let l = 0; l < o.layers; l++) {
      const p = `h.${l}.`, d = `dec.${l}.`;
      list.push([`${d}self.ln.w`, { name: `${p}ln_1.weight` }], [`${d}self.ln.b`, { name: `${p}ln_1.bias` }]);
      ['q', 'k', 'v'].forEach((x, i) => {
        list.push([`${d}self.w${x}`, { name: `${p}attn.c_attn.weight`, layout: 'conv1d', col0: i * C }]);
        list.push([`${d}self.b${x}`, { name: `${p}attn.c_attn.bias`, col0: i * C }]);
      });
      list.push([`${d}self.wo`, { name: `${p}attn.c_proj.weight`, layout: 'conv1d' }], [`${d}self.bo`, { name: `${p}attn.c_proj.bias` }]);
      list.push([`${d}ffn.ln.w`, { name: `${p}ln_2.weight` }], [`${d}ffn.ln.b`, { name: `${p}ln_2.bias` }]);
      list.push([`${d}ffn.w1`, { name: `${p}mlp.c_fc.weight`, layout: 'conv1d' }], [`${d}ffn.b1`, { name: `${p}mlp.c_fc.bias` }]);
      list.push([`${d}ffn.w2`, { name: `${p}mlp.c_proj.weight`, layout: 'conv1d' }], [`${d}ffn.b2`, { name: `${p}mlp.c_proj.bias` }]);
    }
    list.push(['lnf.w', { name: 'ln_f.weight' }], ['lnf.b', { name: 'ln_f.bias' }]);
    list.push(['out.b', { zero: true }]); // GPT-2's head has no bias; the classic block's does
    return list;
  },
  ignored: (name) => /^h\.\d+\.attn\.(bias|masked_bias)$/.test(name),
  config(o) {
    return {
      architectures: ['GPT2LMHeadModel'], model_type: 'gpt2', vocab_size: o.vocab, n_embd: o.dModel, n_layer: o.layers,
      n_head: o.heads, n_inner: o.dFF, n_positions: o.maxLen, n_ctx: o.maxLen, activation_function: 'gelu_new',
      layer_norm_epsilon: o.normEps ?? 1e-5, tie_word_embeddings: true, scale_attn_weights: true, torch_dtype: 'float32',
      resid_pdrop: 0, embd_pdrop: 0, attn_pdrop: 0,
    };
  },
};

export const ARCHS = {
  LlamaForCausalLM: llamaLike('LlamaForCausalLM'),
  MistralForCausalLM: llamaLike('MistralForCausalLM', (c, o, what, maxLen) => {
    const w = c.sliding_window;
    if (w !== undefined && w !== null) {
      if (!Number.isSafeInteger(w) || w < 1 || w > POSITIONS.hi) fail(`${what}: config.json's sliding_window is ${describe(w)}; expected an integer in [1, ${POSITIONS.hi}] or null`);
      if (w < maxLen) o.attentionOptions = { window: w }; // a window as long as maxLen is full attention
    }
  }),
  Qwen2ForCausalLM: llamaLike('Qwen2ForCausalLM', (c, o, what) => {
    refuseIf(boolField(c, 'use_sliding_window', what, false), what, 'use_sliding_window', true, 'Qwen2\'s per-layer sliding window is not read by this loader');
    o.qkvBias = true;
  }),
  Qwen3ForCausalLM: llamaLike('Qwen3ForCausalLM', (c, o, what) => {
    refuseIf(boolField(c, 'use_sliding_window', what, false), what, 'use_sliding_window', true, 'Qwen3\'s per-layer sliding window is not read by this loader');
    o.attentionOptions = { qkNorm: true };
  }),
  GPT2LMHeadModel: GPT2,
};

// The row config.json names: architectures (one class, however often listed) and model_type must
// agree where both are given, since each alone would pick a row.
function archRow(c, what) {
  const names = c.architectures ?? [], type = c.model_type ?? null;
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string'))
    fail(`${what}: config.json's architectures is ${describe(names)}; expected a list of class names such as ["LlamaForCausalLM"]`);
  if (type !== null && typeof type !== 'string') fail(`${what}: config.json's model_type is ${describe(type)}; expected a name such as "llama"`);
  const distinct = [...new Set(names)];
  if (distinct.length > 1) fail(`${what}: config.json's architectures names ${distinct.length} classes, ${distinct.map((n) => JSON.stringify(n)).join(' and ')}; a checkpoint is one model`);
  const arch = distinct[0] ?? Object.keys(MODEL_TYPES).find((a) => MODEL_TYPES[a] === type) ?? null;
  if (!arch) fail(`${what}: config.json names no architecture this loader reads (architectures ${JSON.stringify(names)}, model_type ${JSON.stringify(type)}); it reads ${Object.keys(ARCHS).join(', ')}`);
  const row = Object.hasOwn(ARCHS, arch) ? ARCHS[arch] : null; // not "toString", "__proto__", ...
  if (!row) fail(`${what}: config.json's architectures is ${JSON.stringify(names)}; this loader reads ${Object.keys(ARCHS).join(', ')}`);
  if (type !== null && type !== MODEL_TYPES[arch])
    fail(`${what}: config.json's architectures is ["${arch}"] and its model_type is "${type}", where ${arch} is model_type "${MODEL_TYPES[arch]}": which model is this?`);
  return row;
}

// ---- element conversion ------------------------------------------------------------------------

// Where two tensors' bytes first differ: -1 when they are the same tensor, null when dtype or shape differ.
function firstDifference(a, b) {
  if (a.dtype !== b.dtype || a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) return null;
  const x = a.bytes.subarray(a.begin, a.end), y = b.bytes.subarray(b.begin, b.end);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

let F16_BITS = null; // (65536) the float32 bits of every half-precision value
function f16Table() {
  if (F16_BITS) return F16_BITS;
  const f = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
    f[h] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return (F16_BITS = new Uint32Array(f.buffer));
}

// A tensor's elements as 32-bit or 16-bit words (a view when aligned, else a copy of that tensor;
// t.bytes is safetensorsHeader's plain Uint8Array, so slice() copies even for a Node Buffer).
function words(t) {
  const size = ELEMENT_BYTES[t.dtype], off = t.bytes.byteOffset + t.begin, n = (t.end - t.begin) / size;
  const Arr = size === 4 ? Uint32Array : Uint16Array;
  if (off % size === 0) return new Arr(t.bytes.buffer, off, n);
  return new Arr(t.bytes.slice(t.begin, t.end).buffer, 0, n);
}

// dst[dOff + k * dStep] (float32 bits) = the source element src[sOff + k], k < n: a run (dStep 1),
// or a source row into a destination column (a transposed weight).
function copyElements(dst, dOff, dStep, src, sOff, n, dtype) {
  if (dtype === 'F32') for (let k = 0; k < n; k++) dst[dOff + k * dStep] = src[sOff + k];
  else if (dtype === 'BF16') for (let k = 0; k < n; k++) dst[dOff + k * dStep] = src[sOff + k] << 16;
  else {
    const tab = f16Table();
    for (let k = 0; k < n; k++) dst[dOff + k * dStep] = tab[src[sOff + k]];
  }
}

// Within each head of hd rows: Hugging Face's row j (pairs j, j + hd/2) is this library's row
// 2j (j < hd/2) or 2(j - hd/2) + 1 (pairs 2i, 2i + 1).
const ropeRow = (r, hd) => {
  if (!hd) return r;
  const h = Math.floor(r / hd), j = r % hd, half = hd / 2;
  return h * hd + (j < half ? 2 * j : 2 * (j - half) + 1);
};

// ---- the loader --------------------------------------------------------------------------------

export function huggingFaceMethods(core, lib) {
  const ex = core.exports;

  // The model's tensors by name: { index, offset, rows, cols, transposed, dims }.
  function tensorTable(model, qmats = new Map()) {
    const out = new Map(), info = new Float64Array(8);
    const n = ex.aw_model_tensor_count(model.handle);
    core.withBuffers('tensors', [{ name: 'info', bytes: 64 }], ([p]) => {
      for (let i = 0; i < n; i++) {
        const qname = core.cString(ex.aw_model_tensor_name(model.handle, i)), q = qmats.get(qname);
        if (q && qname !== 'wte') { // quantized from the start: written into a scratch (in, out), then filled
          out.set(qname, { offset: 0, rows: q.cols, cols: q.rows, transposed: true, dims: [q.rows, q.cols], q });
          continue;
        }
        core.check(ex.aw_model_tensor_info(model.handle, i, p), 'tensors');
        info.set(new Float64Array(core.memory.buffer, p, 8));
        const name = core.cString(ex.aw_model_tensor_name(model.handle, i));
        out.set(name, { offset: info[0], rows: info[1], cols: info[2], transposed: info[3] === 1, dims: Array.from(info.subarray(5, 5 + info[4])) });
      }
    });
    return out;
  }
  // A quantized model's matrices by tensor name: { i (their index), rows (outputs), cols (inputs),
  // format (quant.h's id; 3: bf16), at (their values' address) }.
  function quantMatrices(model) {
    const out = new Map();
    core.withBuffers('quantize', [{ name: 'info', bytes: 48 }], ([p]) => {
      for (let i = 0; ; i++) {
        const np = ex.aw_model_qmat(model.handle, i, p);
        if (!np) break;
        const v = new Float64Array(core.memory.buffer, p, 6);
        out.set(core.cString(np), { i, rows: v[1], cols: v[2], format: v[0], at: v[4] });
      }
    });
    return out;
  }

  // A tensor name of the plan ("dec.0.self.*.q_norm": a form's tensor, whatever its group) in the model.
  const resolve = (table, name) => {
    if (!name.includes('*')) return table.has(name) ? name : null;
    const [head, tail] = name.split('*');
    for (const k of table.keys()) if (k.startsWith(head) && k.endsWith(tail)) return k;
    return null;
  };

  // The checkpoint shape of our tensor `ours`, from the options alone (before the model exists).
  function ourShape(o, ours) {
    const C = o.dModel, F = o.dFF, hd = o.headDim ?? C / o.heads, A = hd * o.heads, kc = o.kvHeads ? hd * o.kvHeads : A;
    const last = ours.split('.').pop();
    if (ours === 'wte' || ours === 'out.w') return [o.vocab, C];
    if (ours === 'wpe') return [o.maxLen, C];
    if (ours === 'out.b') return [o.vocab];
    if (last === 'wq') return [A, C];
    if (last === 'wo') return [C, A];
    if (last === 'bq') return [A];
    if (last === 'wk' || last === 'wv') return [kc, C];
    if (last === 'bk' || last === 'bv') return [kc];
    if (last === 'w1' || last === 'w3') return [F, C];
    if (last === 'w2') return [C, F];
    if (last === 'b1') return [F];
    if (last === 'q_norm' || last === 'k_norm') return [hd];
    return [C]; // norms, bo, b2
  }

  // Checks every source against the model's shapes, before anything is allocated: returns the plan.
  function plan(row, o, found, what, c) {
    const C = o.dModel, shapeOf = (ours) => ourShape(o, ours);
    const used = new Set(), steps = [];
    for (const [ours, src] of row.tensors(o)) {
      const want = shapeOf(ours);
      if (src.zero) {
        steps.push({ ours, src, want });
        continue;
      }
      const t = found.get(src.name);
      if (!t && src.name === 'lm_head.weight')
        fail(`${what}: the weights have no tensor "lm_head.weight", and config.json's tie_word_embeddings is ${c.tie_word_embeddings === undefined ? 'absent (false for this architecture)' : describe(c.tie_word_embeddings)}: ` +
          'an untied head is its own tensor; if the head is the embedding, the config must say tie_word_embeddings: true (or is a shard missing?)');
      if (!t) fail(`${what}: the weights have no tensor "${src.name}" (${row.arch} with ${o.layers} layers needs it${found.size ? '' : '; the file holds none'}); is a shard missing?`);
      if (!READABLE.includes(t.dtype)) fail(`${what}: tensor "${src.name}" is ${t.dtype}; this loader reads ${READABLE.join(', ')}`);
      used.add(src.name);
      const shape = t.shape;
      const bad = (expect) => fail(`${what}: tensor "${src.name}" has shape [${shape}], and config.json makes it [${expect}]`);
      if (src.layout === 'conv1d') {
        // Conv1D (in, out): ours is (out, in) in checkpoint terms; c_attn holds 3 C columns
        const total = src.col0 !== undefined ? 3 * C : want[0];
        if (shape.length !== 2 || shape[0] !== want[1] || shape[1] !== total) bad([want[1], total]);
      } else if (src.col0 !== undefined) { // c_attn's bias (3 C)
        if (shape.length !== 1 || shape[0] !== 3 * C) bad([3 * C]);
      } else if (src.firstRows !== undefined) { // wpe: n_positions rows, of which maxLen are kept
        if (shape.length !== 2 || shape[1] !== C || shape[0] < src.firstRows) bad([`>= ${src.firstRows}`, C]);
      } else if (shape.length !== want.length || shape.some((d, i) => d !== want[i])) bad(want);
      steps.push({ ours, src, want, t });
    }

    // a tied head the file holds as well (some converters write both) is read only as the
    // embedding's exact copy: another head would be silently dropped
    const head = found.get('lm_head.weight');
    if (o.tieEmbeddings && head) {
      const emb = steps.find((s) => s.ours === 'wte');
      const at = firstDifference(head, emb.t);
      if (at !== -1)
        fail(`${what}: config.json ties the head to the embedding (tie_word_embeddings ${describe(c.tie_word_embeddings ?? true)}), and the weights hold an ` +
          `lm_head.weight (${head.dtype} [${head.shape}]) that is not "${emb.src.name}" (${emb.t.dtype} [${emb.t.shape}]), ` +
          `${at === null ? 'in dtype or shape' : `from byte ${at}`}: the config or the file is wrong; which head is meant is not known`);
      used.add('lm_head.weight');
    }
    const extra = [...found.keys()].filter((n) => !used.has(n) && !row.ignored(n, o));
    if (extra.length) fail(`${what}: the weights hold ${extra.length} tensor(s) ${row.arch} does not have, e.g. "${extra[0]}"; is this config.json the weights' own?`);
    return steps;
  }

  // Copies one planned tensor into the model's parameters (float32 bits in u32).
  function writeTensor(u32, base, step, dst) {
    const at = base + dst.offset;
    const { src, t } = step;
    if (src.zero) {
      u32.fill(0, at, at + dst.dims.reduce((a, b) => a * b, 1));
      return;
    }
    const w = words(t);
    if (src.layout === 'linear') { // nn.Linear (out, in) -> kept (in, out): dst[i * out + o'] = src[o * in + i]
      const [out, inn] = dst.dims, hd = src.rope || 0;
      for (let r = 0; r < out; r++) {
        const o2 = ropeRow(r, hd);
        copyElements(u32, at + o2, out, w, r * inn, inn, t.dtype);
      }
    } else if (src.layout === 'conv1d') { // Conv1D (in, total) -> kept (in, out): row i, columns col0..col0+out
      const [out, inn] = dst.dims, total = t.shape[1], c0 = src.col0 ?? 0;
      if (dst.transposed) for (let i = 0; i < inn; i++) copyElements(u32, at + i * out, 1, w, i * total + c0, out, t.dtype);
      else fail('loadHuggingFace: internal: a Conv1D weight for a tensor kept as stored');
    } else { // vectors and row tables (embeddings): as stored, optionally a column slice or the first rows
      const n = step.want.reduce((a, b) => a * b, 1), c0 = src.col0 ?? 0, hd = src.rope || 0;
      if (hd) for (let r = 0; r < n; r++) copyElements(u32, at + ropeRow(r, hd), 1, w, c0 + r, 1, t.dtype);
      else copyElements(u32, at, 1, w, c0, n, t.dtype);
    }
  }

  const KEYS = ['config', 'weights', 'tokenizer', 'trustPatterns', 'maxLen', 'training', 'quantize', 'groupSize', 'dtype'];
  // One object holds the files and the options: a second argument ({ quantize, maxLen } beside the
  // files, as other loaders take options) would be silently ignored, so any is an Error.
  function loadHuggingFace(args, ...more) {
    const what = 'loadHuggingFace';
    if (more.length) {
      const keys = more[0] !== null && typeof more[0] === 'object' && !ArrayBuffer.isView(more[0]) ? Object.keys(more[0]) : [];
      fail(`${what} takes one object, { ${KEYS.join(', ')} }, and was given ${1 + more.length} arguments` +
        (keys.length ? `: put the second's ${keys.join(', ')} into the first ({ ...files, ${keys.join(', ')} })` : ` (the second is ${describe(more[0])})`));
    }
    if (bytesOf(args) || typeof args === 'string')
      fail(`${what} takes one object, { config, weights, ... }, got ${describe(args)}: give the files' contents as its fields`);
    checkKeys(what, args, KEYS);
    if (args.config === undefined) fail(`${what}: config is required (config.json's text or object)`);
    if (args.weights === undefined) fail(`${what}: weights is required (model.safetensors' bytes, or an array of every shard's bytes)`);
    const training = args.training === undefined ? false : checkBool(`${what}: training`, args.training);
    const quantize = args.quantize ?? null;
    if (quantize !== null && quantize !== 'q8_0' && quantize !== 'q4_0') fail(`${what}: quantize must be "q8_0" or "q4_0", got ${describe(quantize)}`);
    if (quantize && training) fail(`${what}: quantize needs training: false (a quantized model's matrices are integers, which cannot train)`);
    // dtype 'bf16': the matrices quantize would take, kept as BF16 (quant.h's "bf16" row): a BF16
    // file's values exactly, an F32 or F16 file's rounded to nearest even
    const dtype = args.dtype ?? 'fp32';
    if (dtype !== 'fp32' && dtype !== 'bf16') fail(`${what}: dtype must be "fp32" or "bf16", got ${describe(dtype)}`);
    if (dtype === 'bf16' && training) fail(`${what}: dtype "bf16" needs training: false (training keeps float32 weights, gradients and AdamW state)`);
    if (dtype === 'bf16' && quantize) fail(`${what}: dtype "bf16" and quantize ${describe(quantize)} both choose the matrices' format; give one`);
    if (args.groupSize !== undefined) {
      if (!quantize) fail(`${what}: groupSize goes with quantize ("q8_0" or "q4_0"); give quantize too`);
      if (!Number.isSafeInteger(args.groupSize) || args.groupSize < 1) fail(`${what}: groupSize must be a positive integer, got ${describe(args.groupSize)}`);
    }
    const c = readConfig(args.config, what);
    const row = archRow(c, what);
    const positions = row.positions ? row.positions(c, what) : intField(c, 'max_position_embeddings', what, { ...POSITIONS, def: 2048 });
    let maxLen;
    if (args.maxLen !== undefined) {
      if (!Number.isSafeInteger(args.maxLen) || args.maxLen < 2 || args.maxLen > Math.min(positions, 4096))
        fail(`${what}: maxLen must be an integer in [2, ${Math.min(positions, 4096)}] (the model's positions, at most 4096), got ${describe(args.maxLen)}`);
      maxLen = args.maxLen;
    } else maxLen = Math.min(positions, row.kind === 'gpt2' ? 1024 : 2048);
    const o = row.options(c, what, maxLen);
    // the config as createModel would check it, before any weights are read: its message names
    // config.json's field
    try {
      lib[CHECK_CONFIG](o, what);
    } catch (e) {
      const said = e.message.replace(/^(attention-wasm: )?loadHuggingFace: /, '');
      const keys = Object.keys(row.fields);
      const key = keys.find((k) => said.startsWith(`${k} `) || said.startsWith(`${k}:`) || said.startsWith(`attentionOptions.${k.split('.').pop()} `)) ??
        keys.find((k) => new RegExp(`\\b${k.split('.').pop()}\\b`).test(said));
      fail(`${what}: ${key ? `config.json's ${row.fields[key]} (${describe(c[row.fields[key]] ?? o[key])})` : 'config.json'} makes a model this library cannot hold: ${said}`);
    }
    // the memory rule, from the config alone: the weights in float32 (and, to train, gradients and
    // AdamW's two moments) must fit wasm32's memory
    // (quantized: the matrices at most 1 byte and a float32 scale per 16 values each, plus a tied
    // classifier's copy of the embedding)
    const size = (ours) => ourShape(o, ours).reduce((x, y) => x * y, 1);
    const floats = row.tensors(o).reduce((a, [ours]) => a + size(ours), 0);
    let need = floats * 4 * (training ? 4 : 1);
    if (quantize) {
      const mats = row.tensors(o).filter(([ours]) => /\.(wq|wk|wv|wo|w1|w2|w3)$/.test(ours) || ours === 'out.w');
      const qFloats = mats.reduce((a, [ours]) => a + size(ours), 0), tied = mats.some(([ours]) => ours === 'out.w') ? 0 : o.vocab * o.dModel;
      need = (floats - qFloats) * 4 + (qFloats + tied) * 1.25;
    }
    if (dtype === 'bf16') { // 2 bytes a matrix value, plus a tied classifier's copy of the embedding
      const mats = row.tensors(o).filter(([ours]) => /\.(wq|wk|wv|wo|w1|w2|w3)$/.test(ours) || ours === 'out.w');
      const qFloats = mats.reduce((a, [ours]) => a + size(ours), 0), tied = mats.some(([ours]) => ours === 'out.w') ? 0 : o.vocab * o.dModel;
      need = (floats - qFloats) * 4 + (qFloats + tied) * 2;
    }
    if (need + HEADROOM > MEMORY_LIMIT)
      fail(`${what}: this model needs ${(need / 2 ** 30).toFixed(2)} GiB for its ${floats.toLocaleString('en-US')} weights in ${quantize ?? (dtype === 'bf16' ? 'bf16' : 'float32')}` +
        `${training ? ' with gradients and AdamW state' : ''}, and the library's wasm32 memory holds 2 GiB in all; choose a smaller model`);
    const tokenizer = args.tokenizer === undefined ? null : lib.loadTokenizer(args.tokenizer, { trustPatterns: args.trustPatterns ?? false });
    if (tokenizer && tokenizer.vocabSize > o.vocab)
      fail(`${what}: the tokenizer has ${tokenizer.vocabSize} ids and config.json's ${row.fields.vocab} is ${o.vocab}: ` +
        'the model cannot read the ids past its vocabulary; is this tokenizer.json the model\'s own?');
    let found = readShards(args.weights, what);
    // GPT-2's names come with or without "transformer." (GPT2LMHeadModel's or GPT2Model's)
    if (row.kind === 'gpt2' && [...found.keys()].some((n) => n.startsWith('transformer.')))
      found = new Map([...found].map(([n, t]) => [n.replace(/^transformer\./, ''), t]));
    const steps = plan(row, o, found, what, c);
    // quantize: the matrices are made quantized and filled one at a time from a scratch of the
    // largest one's float32 values, so the whole model is never held in float32
    const model = lib.createModel(o, {
      training, [UNINITIALISED]: !training,
      [QUANTIZED]: (quantize || dtype === 'bf16') && { format: quantize ?? 'bf16', group: args.groupSize ?? NaN, what },
    });
    let scratch = 0;
    try {
      const qmats = quantize || dtype === 'bf16' ? quantMatrices(model) : new Map();
      const table = tensorTable(model, qmats);
      const largest = Math.max(0, ...[...table.values()].filter((d) => d.q).map((d) => d.q.rows * d.q.cols));
      if (largest) {
        scratch = ex.malloc(largest * 4);
        if (!scratch) fail(`${what}: out of memory for one matrix's float32 values (${(largest * 4 / 2 ** 20).toFixed(1)} MiB) to quantize`);
      }
      const base = ex.aw_model_params(model.handle) / 4;
      const written = new Set();
      for (const step of steps) {
        const name = resolve(table, step.ours);
        const dst = name && table.get(name);
        if (!dst && step.src.zero) continue; // a bias this block does not have
        if (!dst || dst.dims.reduce((a, b) => a * b, 1) !== step.want.reduce((a, b) => a * b, 1))
          fail(`${what}: internal: tensor ${step.ours} of the plan does not match the model's (${name ? `[${dst.dims}]` : 'absent'})`);
        // a view made again each time: filling a matrix may grow the memory
        writeTensor(new Uint32Array(core.memory.buffer), dst.q ? scratch / 4 : base, step, dst);
        // a NaN or Infinity in the file would first show as "the parameters have diverged" at the
        // first forward: named here (C's scan of the float32 values just written)
        if (ex.aw_first_nonfinite(dst.q ? scratch : (base + dst.offset) * 4, dst.dims.reduce((a, b) => a * b, 1)) !== -1)
          fail(`${what}: tensor "${step.src.name}" holds NaN or Infinity: the file is damaged, or its model had diverged when it was saved`);
        if (dst.q) core.check(ex.aw_model_quantize_fill(model.handle, dst.q.i, scratch, 0, dst.q.rows), what);
        written.add(name);
      }
      const missed = [...table.keys()].filter((n) => !written.has(n));
      if (missed.length) fail(`${what}: internal: the model's tensor ${missed[0]} has no source in ${row.arch}'s row`);
      if (qmats.has('wte')) { // the tied classifier, from the embedding just written
        const { i, rows } = qmats.get('wte');
        core.check(ex.aw_model_quantize_fill(model.handle, i, 0, 0, rows), what);
      }
    } catch (e) {
      model.dispose();
      throw e;
    } finally {
      if (scratch) ex.free(scratch);
    }
    // a checkpoint whose vocabulary is padded past its tokenizer's ids (Qwen2.5: 151,936 rows for
    // 151,665 ids): generation never picks an id the tokenizer cannot decode
    const notes = [];
    if (tokenizer && tokenizer.vocabSize < o.vocab) {
      model.sampleVocab = tokenizer.vocabSize;
      notes.push(`the tokenizer has ${tokenizer.vocabSize} ids and the model's vocabulary ${o.vocab} rows (padding): ` +
        `generation picks from the first ${tokenizer.vocabSize}`);
    }
    Object.defineProperty(model, 'tokenizer', { value: tokenizer, enumerable: true });
    Object.defineProperty(model, 'huggingFace', { value: Object.freeze({ architecture: row.arch, config: c, notes: Object.freeze(notes) }), enumerable: false });
    return model;
  }

  // ---- saving ---------------------------------------------------------------------------------

  // The architecture that expresses a model of this library, or an Error naming what does not fit.
  function rowFor(model) {
    const cfg = model.config, what = 'saveHuggingFace';
    const no = (why) => fail(`${what}: ${why}; Hugging Face's Llama/Mistral/Qwen2/Qwen3 and GPT-2 formats cannot express it`);
    if (cfg.arch !== 'decoder') no(`arch "${cfg.arch}" is not a decoder-only model`);
    if (cfg.layerForms) no('layerForms gives layers different forms');
    if (cfg.attention !== 'softmax') no(`attention "${cfg.attention}" is not softmax`);
    if (cfg.norm !== 'pre') no('norm "post" (post-norm blocks)');
    const ao = cfg.attentionOptions ?? {};
    const on = Object.entries(ao).filter(([k, v]) => v !== undefined && v !== false && v !== 'off' && k !== 'window' && k !== 'qkNorm');
    if (on.length) no(`attentionOptions.${on[0][0]} (${describe(on[0][1])})`);
    if (cfg.normType === 'layernorm' && cfg.ffn === 'gelu' && cfg.positional === 'learned' && cfg.bias) {
      if (!cfg.tieEmbeddings) no('a GPT-2 block with an untied classifier (GPT-2 ties it to the embedding)');
      if (cfg.kvHeads !== cfg.heads) no('grouped-query attention in a GPT-2 block');
      if (ao.window || ao.qkNorm) no(`attentionOptions.${ao.window ? 'window' : 'qkNorm'} in a GPT-2 block`);
      return GPT2;
    }
    if (cfg.normType !== 'rmsnorm') no(`normType "${cfg.normType}" with ffn "${cfg.ffn}" (Llama-like needs rmsnorm + swiglu + rope; GPT-2 needs layernorm + gelu + learned positions + biases)`);
    if (cfg.ffn !== 'swiglu') no(`ffn "${cfg.ffn}" in an RMSNorm model`);
    if (cfg.positional !== 'rope') no(`positional "${cfg.positional}" in an RMSNorm model`);
    if (cfg.bias) no('biases on every projection in an RMSNorm model');
    if (ao.window && (ao.qkNorm || cfg.qkvBias)) no('a sliding window together with qkNorm or qkvBias');
    if (ao.qkNorm && cfg.qkvBias) no('qkNorm together with qkvBias');
    if (ao.qkNorm) return ARCHS.Qwen3ForCausalLM;
    if (cfg.qkvBias) return ARCHS.Qwen2ForCausalLM;
    if (ao.window) return ARCHS.MistralForCausalLM;
    return ARCHS.LlamaForCausalLM;
  }

  function saveHuggingFace(model, opts = {}) {
    const what = 'saveHuggingFace';
    checkKeys(what, opts, ['dtype']);
    const dtype = opts.dtype ?? 'F32';
    if (dtype !== 'F32' && dtype !== 'BF16') fail(`${what}: dtype must be "F32" or "BF16", got ${describe(dtype)}`);
    if (!model.handle) fail(`${what}: this model was disposed`);
    const row = rowFor(model);
    const o = { ...model.config, attentionOptions: model.config.attentionOptions ?? {} };
    // a bf16 model (loadHuggingFace's dtype 'bf16'): its matrices are read from their BF16 values, kept
    // in the float32 tensors' layout (other quantized formats are refused by tensorTable: their floats are gone)
    const bf16 = model.weightBytes.format === 'bf16';
    const table = tensorTable(model, bf16 ? quantMatrices(model) : new Map());
    // the Hugging Face tensors, each filled from ours (c_attn from three of ours)
    const hf = new Map();
    for (const [ours, src] of row.tensors(o)) {
      if (src.zero) continue;
      const name = resolve(table, ours), dst = table.get(name);
      let shape;
      if (src.layout === 'conv1d') shape = [dst.dims[1], src.col0 !== undefined ? 3 * o.dModel : dst.dims[0]];
      else if (src.col0 !== undefined) shape = [3 * o.dModel];
      else shape = dst.dims;
      if (!hf.has(src.name)) hf.set(src.name, { shape, parts: [] });
      hf.get(src.name).parts.push({ src, dst });
    }
    const size = dtype === 'F32' ? 4 : 2;
    const header = { __metadata__: { format: 'pt', saved_by: 'attention-wasm' } };
    let off = 0;
    for (const [name, t] of hf) {
      const bytes = t.shape.reduce((a, b) => a * b, 1) * size;
      header[name] = { dtype, shape: t.shape, data_offsets: [off, off + bytes] };
      t.at = off;
      off += bytes;
    }
    let json = JSON.stringify(header);
    json += ' '.repeat((8 - (json.length % 8)) % 8);
    const head = new TextEncoder().encode(json), base = 8 + head.length;
    const out = new Uint8Array(base + off);
    new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
    out.set(head, 8);
    const u32 = new Uint32Array(core.memory.buffer), u16 = new Uint16Array(core.memory.buffer), pBase = ex.aw_model_params(model.handle) / 4;
    // F32: written in place (the data starts 8-byte aligned); BF16: rounded into two bytes each
    const f32out = size === 4 ? new Uint32Array(out.buffer, base, off / 4) : null;
    for (const [, t] of hf) {
      const at = t.at / size;
      for (const { src, dst } of t.parts) {
        // element k of our tensor as float32 bits: from the arena, or widened from a bf16 matrix
        const from = pBase + dst.offset, at16 = dst.q ? dst.q.at / 2 : 0;
        const get = dst.q ? (k) => (u16[at16 + k] << 16) >>> 0 : (k) => u32[from + k];
        if (src.layout === 'linear') {
          const [outN, inN] = dst.dims, hd = src.rope || 0;
          for (let r = 0; r < outN; r++) {
            const o2 = ropeRow(r, hd);
            for (let i = 0; i < inN; i++) put(at + r * inN + i, get(i * outN + o2));
          }
        } else if (src.layout === 'conv1d') {
          const [outN, inN] = dst.dims, total = t.shape[1], c0 = src.col0 ?? 0;
          for (let i = 0; i < inN; i++) for (let k = 0; k < outN; k++) put(at + i * total + c0 + k, get(i * outN + k));
        } else {
          const n = dst.dims.reduce((a, b) => a * b, 1), c0 = src.col0 ?? 0, hd = src.rope || 0;
          for (let r = 0; r < n; r++) put(at + c0 + r, get(ropeRow(r, hd)));
        }
      }
    }
    function put(i, bits) {
      if (size === 4) f32out[i] = bits;
      else { // round to nearest even into the top 16 bits (NaN stays NaN)
        const v = (bits & 0x7fffffff) > 0x7f800000 ? (bits >>> 16) | 0x40 : (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
        out[base + 2 * i] = v & 255, out[base + 2 * i + 1] = v >>> 8;
      }
    }
    const config = row.config(o, model.huggingFace?.config);
    if (dtype === 'BF16') config.torch_dtype = 'bfloat16';
    const result = { config, weights: out };
    if (model.tokenizer && typeof model.tokenizer.toJSON === 'function') result.tokenizer = JSON.stringify(model.tokenizer.toJSON());
    return result;
  }

  // model.saveHuggingFace(opts) on every Model
  lib[MODEL_PROTOTYPE].saveHuggingFace = function (opts) {
    return saveHuggingFace(this, opts);
  };
  return { loadHuggingFace };
}
