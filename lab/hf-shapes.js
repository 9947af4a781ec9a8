// hf-shapes.js: the shapes of real Hugging Face checkpoints (GPT-2 small, SmolLM2-135M, llama2.c's
// stories15M), the tensors of a config in the Hub's names, and seeded random weights for them, for
// bench/hf.bench.js and scripts/make-page-models.mjs (random weights: speed and memory do not depend
// on them). No Node or DOM API: the values are made in chunks and handed to the caller, who writes them.

export const SHAPES = {
  gpt2: { label: 'GPT-2 small', config: { architectures: ['GPT2LMHeadModel'], model_type: 'gpt2', vocab_size: 50257, n_embd: 768, n_layer: 12, n_head: 12, n_positions: 1024, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new' } },
  smollm2: { label: 'SmolLM2-135M', config: { architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: 49152, hidden_size: 576, intermediate_size: 1536, num_hidden_layers: 30, num_attention_heads: 9, num_key_value_heads: 3, max_position_embeddings: 8192, rms_norm_eps: 1e-5, rope_theta: 100000, tie_word_embeddings: true, hidden_act: 'silu' } },
  stories15m: { label: 'stories15M', config: { architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: 32000, hidden_size: 288, intermediate_size: 768, num_hidden_layers: 6, num_attention_heads: 6, num_key_value_heads: 6, max_position_embeddings: 256, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true, hidden_act: 'silu' } },
};

/** The Hugging Face tensors of a config, in its names and shapes (what the loader reads): [name, shape][]. */
export function tensorsOf(c) {
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

export const ELEMENT_BYTES = { F32: 4, BF16: 2 };
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * A safetensors file's head for tensors [name, shape, dtype][] laid out in order: `head` is the
 * 8-byte length and the JSON header (padded with spaces to 8 bytes, so the data starts aligned),
 * `dataBytes` the bytes that follow it.
 */
export function safetensorsHead(entries) {
  const header = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const [name, shape, dtype] of entries) {
    const bytes = count(shape) * ELEMENT_BYTES[dtype];
    header[name] = { dtype, shape, data_offsets: [off, off + bytes] };
    off += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const text = new TextEncoder().encode(json), head = new Uint8Array(8 + text.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(text.length), true);
  head.set(text, 8);
  return { head, dataBytes: off };
}

/**
 * Seeded random weights (xorshift32, seed 12345), one tensor after another in the list's order:
 * each(name, values, n) is called with chunks of at most `chunk` float32 values (the same array,
 * refilled: copy or write it before returning). Norm weights are 1 +- 0.02, other vectors (biases)
 * +- 0.02, matrices +- 1/sqrt(their last dimension, the fan-in of a [out, in] weight).
 */
export function randomChunks(list, each, chunk = 1 << 20) {
  const buf = new Float32Array(chunk);
  let s = 12345;
  for (const [name, shape] of list) {
    const n = count(shape), norm = /norm|ln_/.test(name) && shape.length === 1 && !/bias/.test(name);
    const scale = shape.length === 2 ? 1 / Math.sqrt(shape[shape.length - 1]) : 0.02, center = norm ? 1 : 0;
    for (let i = 0; i < n; i += chunk) {
      const m = Math.min(chunk, n - i);
      for (let k = 0; k < m; k++) {
        s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
        buf[k] = center + ((s / 2 ** 32) * 2 - 1) * scale;
      }
      each(name, buf, m);
    }
  }
}

/** A BF16 model.safetensors of seeded random weights (randomChunks' values, truncated to BF16), in memory. */
export function randomBf16(c) {
  const list = tensorsOf(c), { head, dataBytes } = safetensorsHead(list.map(([name, shape]) => [name, shape, 'BF16']));
  const out = new Uint8Array(head.length + dataBytes);
  out.set(head);
  const u16 = new Uint16Array(out.buffer, head.length, dataBytes / 2);
  let at = 0;
  randomChunks(list, (name, values, n) => {
    const u = new Uint32Array(values.buffer, 0, n);
    for (let k = 0; k < n; k++) u16[at++] = u[k] >>> 16;
  });
  return out;
}
