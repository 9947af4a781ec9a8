// hf-quantize.test.js: loadHuggingFace({ quantize, groupSize }) (wasm/huggingface.js,
// model_create_quantized in src/model/transformer.c and quantize.c).
//   - a quantized load gives the same logits and greedy tokens, bit for bit, as loadHuggingFace then
//     model.quantize with the same options, for every architecture the loader reads (BF16 and F32
//     files, tied and untied classifiers, grouped-query attention, biases, GPT-2's Conv1D)
//   - the load never holds the model in float32: on fresh library instances, the wasm memory a
//     quantized load grows is measured against what a float32 load grows, in the same run
//   - bad options (an unknown format, a group that does not divide the rows or that the format does
//     not take, training) are Errors naming the option; the library works afterwards
//   - the memory rule counts the quantized sizes: a model too large in float32 passes it quantized
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../../wasm/index.js';
import { expectError } from './helpers.js';

const lib = await loadAttention();
const IDS = Array.from({ length: 20 }, (_, i) => (i * 7 + 3) % 50);
const SMALL = { vocab: 50, dModel: 32, dFF: 64, heads: 4, layers: 2, maxLen: 32, seed: 7 };
// createModel options -> the Hugging Face files saveHuggingFace writes from them
const CASES = [
  ['Llama, grouped-query, untied', { ...SMALL, block: 'llama', kvHeads: 2 }],
  ['Llama, tied', { ...SMALL, block: 'llama', tieEmbeddings: true }],
  ['Qwen2 (q, k, v biases)', { ...SMALL, block: 'llama', kvHeads: 2, qkvBias: true }],
  ['Qwen3 (q and k norms)', { ...SMALL, block: 'llama', kvHeads: 2, attentionOptions: { qkNorm: true } }],
  ['Mistral (a window)', { ...SMALL, block: 'llama', attentionOptions: { window: 8 } }],
  ['GPT-2', { ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }],
];
const QUANT = [['q8_0', {}], ['q8_0', { groupSize: 16 }], ['q4_0', {}]];
const bitSame = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

test('a quantized load equals loadHuggingFace then quantize with the same options, bit for bit', (t) => {
  for (const [label, opts] of CASES) {
    const made = lib.createModel(opts, { training: false });
    for (const dtype of ['F32', 'BF16']) {
      const files = made.saveHuggingFace({ dtype });
      for (const [format, q] of QUANT) {
        const want = lib.loadHuggingFace(files);
        want.quantize(format, q);
        const got = lib.loadHuggingFace({ ...files, quantize: format, ...q });
        assert.deepEqual(got.weightBytes, want.weightBytes, `${label} ${dtype} ${format}: weightBytes`);
        assert.ok(bitSame(got.forward(IDS).logits, want.forward(IDS).logits), `${label} ${dtype} ${format} ${JSON.stringify(q)}: logits differ`);
        assert.deepEqual(got.generate([1, 2, 3], { maxTokens: 8 }), want.generate([1, 2, 3], { maxTokens: 8 }), `${label} ${format}: greedy tokens`);
        t.diagnostic(`${label} ${dtype} ${format} ${JSON.stringify(q)}: ${got.weightBytes.bytes} bytes of ${got.weightBytes.fp32} in float32; logits identical`);
        got.dispose();
        want.dispose();
      }
    }
    made.dispose();
  }
});

test('a quantized load grows the wasm memory by well under the float32 model', async (t) => {
  // a model whose matrices dominate (as in a real decoder), ~25 MB in float32
  const made = lib.createModel({ vocab: 256, dModel: 256, dFF: 1024, heads: 4, layers: 6, maxLen: 64, block: 'llama' }, { training: false });
  const files = made.saveHuggingFace({ dtype: 'BF16' });
  made.dispose();
  const grown = async (opts) => { // a fresh instance each time: wasm memory never shrinks
    const fresh = await loadAttention();
    assert.notEqual(fresh.memory, lib.memory);
    const before = fresh.memory.buffer.byteLength;
    const m = fresh.loadHuggingFace({ ...files, ...opts });
    const r = { grown: fresh.memory.buffer.byteLength - before, weights: m.weightBytes };
    m.dispose();
    return r;
  };
  const fp32 = await grown({}), q8 = await grown({ quantize: 'q8_0' }), q4 = await grown({ quantize: 'q4_0' });
  // the old way for comparison: load in float32, then quantize
  const fresh = await loadAttention(), before = fresh.memory.buffer.byteLength;
  fresh.loadHuggingFace(files).quantize('q8_0');
  const after = fresh.memory.buffer.byteLength - before;
  t.diagnostic(`wasm memory grown: fp32 load ${fp32.grown} B (weights ${fp32.weights.fp32} B); q8_0 load ${q8.grown} B ` +
    `(weights ${q8.weights.bytes} B, ${(q8.grown / fp32.grown).toFixed(2)}x the fp32 load); q4_0 load ${q4.grown} B ` +
    `(${(q4.grown / fp32.grown).toFixed(2)}x); fp32 load then quantize ${after} B (${(after / fp32.grown).toFixed(2)}x)`);
  assert.ok(q8.grown < 0.5 * fp32.grown, `q8_0: ${q8.grown} B against ${fp32.grown} B for float32`);
  assert.ok(q4.grown < q8.grown, `q4_0 (${q4.grown} B) holds less than q8_0 (${q8.grown} B)`);
  assert.ok(after > fp32.grown - 2 ** 20, 'quantizing after a float32 load held the float32 model first');
});

test('bad quantize options are Errors naming them, and the library works afterwards', () => {
  const files = lib.createModel({ ...SMALL, block: 'llama' }, { training: false }).saveHuggingFace();
  expectError(() => lib.loadHuggingFace({ ...files, quantize: 'q5_1' }), /loadHuggingFace: quantize must be "q8_0" or "q4_0", got "q5_1"/);
  expectError(() => lib.loadHuggingFace({ ...files, quantize: 8 }), /loadHuggingFace: quantize must be "q8_0" or "q4_0", got 8/);
  expectError(() => lib.loadHuggingFace({ ...files, groupSize: 32 }), /loadHuggingFace: groupSize goes with quantize/);
  expectError(() => lib.loadHuggingFace({ ...files, quantize: 'q8_0', groupSize: 1.5 }), /loadHuggingFace: groupSize must be a positive integer, got 1\.5/);
  expectError(() => lib.loadHuggingFace({ ...files, quantize: 'q8_0', groupSize: 48 }), /loadHuggingFace: quantize: groupSize 48 does not divide the rows of dec\.0\.self\.wq \(32 inputs\)/);
  expectError(() => lib.loadHuggingFace({ ...files, quantize: 'q4_0', groupSize: 64 }), /loadHuggingFace: quantize: groupSize must be 32 for q4_0/);
  expectError(() => lib.loadHuggingFace({ ...files, quantize: 'q8_0', training: true }), /loadHuggingFace: quantize needs training: false/);
  // the memory rule counts the quantized sizes: Qwen2.5-0.5B's shape with an untied head (663 million
  // weights) is refused in float32 (2.47 GiB) and passes the rule quantized, then stops at the weights
  // (these are the small model's)
  const big = { ...files.config, vocab_size: 151936, hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28,
    num_attention_heads: 16, num_key_value_heads: 8, head_dim: 64, max_position_embeddings: 32, tie_word_embeddings: false };
  expectError(() => lib.loadHuggingFace({ config: big, weights: files.weights }), /needs 2\.\d\d GiB for its [\d,]+ weights in float32/);
  expectError(() => lib.loadHuggingFace({ config: big, weights: files.weights, quantize: 'q8_0' }), /loadHuggingFace: tensor "[^"]+" has shape \[[\d,]+\], and config\.json makes it/);
  const ok = lib.loadHuggingFace({ ...files, quantize: 'q8_0' });
  assert.equal(ok.weightBytes.format, 'q8_0');
  assert.equal(ok.forward(IDS).logits.length, IDS.length * SMALL.vocab);
  assert.ok(ok.forward(IDS).logits.every(Number.isFinite));
});
