// attribution-inference.test.js: model.attributionPatching on models loaded for inference only (no
// parameter gradients or AdamW state: src/model/attribution.c runs the activations' backward alone,
// transformer_backward.c skipping every parameter gradient). The grids of an inference-loaded copy
// are a trainable copy's (the same checkpoint through loadModel, loadHuggingFace's GPT-2 and Llama
// layouts, loadLlama2c, and softmax's QK-norm, whose backward used to skip dq, dk without gradients
// bound); the call leaves the heap as it found it; quantized models stay an Error naming why.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, expectError } from './helpers.js';

const NAMES = ['attn.hook_z', 'attn.hook_q', 'attn.hook_k', 'attn.hook_v', 'hook_resid_pre', 'hook_attn_out', 'hook_resid_mid', 'hook_mlp_out', 'hook_resid_post'];
const models = (name) => new URL(`../../web/models/${name}`, import.meta.url);
const SMALL = { vocab: 50, dModel: 32, heads: 4, layers: 2, maxLen: 32, seed: 9 };
const IDS = Array.from({ length: 20 }, (_, i) => (i * 7 + 3) % 50);
const OTHER = IDS.map((x, i) => (i % 5 === 2 ? (x + 11) % 50 : x));

// Each name's grid at every position, and the two metrics, of one call.
function grids(model, clean, corrupt, metric) {
  const r = model.attributionPatching(clean, corrupt, { metric, names: NAMES, perPosition: true });
  return { clean: r.clean, corrupt: r.corrupt, grids: Object.fromEntries(NAMES.map((k) => [k, r.grids[k]])) };
}

// The inference copy's grids are the trainable copy's, to the bit: its backward computes the same
// activation gradients and only skips the parameters'.
function same(label, inf, trainable, clean, corrupt, metric) {
  assert.equal(inf.training, false, `${label}: loaded for inference`);
  assert.equal(trainable.training, true, `${label}: loaded trainable`);
  const a = grids(inf, clean, corrupt, metric), b = grids(trainable, clean, corrupt, metric);
  assert.equal(a.clean, b.clean, `${label}: clean metric`);
  assert.equal(a.corrupt, b.corrupt, `${label}: corrupt metric`);
  let nonzero = 0;
  for (const k of NAMES) {
    assert.deepEqual(a.grids[k].shape, b.grids[k].shape, `${label} ${k}: shape`);
    assert.deepEqual(a.grids[k].data, b.grids[k].data, `${label} ${k}: inference vs trainable grid`);
    nonzero += a.grids[k].data.some((x) => x !== 0 && Number.isFinite(x));
  }
  assert.equal(nonzero, NAMES.length, `${label}: every grid has finite nonzero estimates`);
}

for (const { name, lib } of builds) {
  test(`attributionPatching [${name}]: shipped models loaded { training: false } give the trainable load's grids`, () => {
    for (const file of ['fortunes-induction.safetensors', 'fortunes-llama.safetensors']) {
      const bytes = readFileSync(models(file));
      const inf = lib.loadModel(bytes, { training: false }), tr = lib.loadModel(bytes, { training: true });
      const text = 'the cat sat on the mat. the cat sat', bad = 'the dog ran on the mat. the cat sat';
      const tok = inf.config.vocab > 200 ? null : lib.charsTokenizer;
      const clean = tok ? tok.encode(text) : Array.from(text, (c) => c.charCodeAt(0) % inf.config.vocab);
      const corrupt = tok ? tok.encode(bad) : Array.from(bad, (c) => c.charCodeAt(0) % inf.config.vocab);
      same(file, inf, tr, clean, corrupt, { target: clean[clean.length - 1] });
      same(`${file} (logit difference, position 3)`, inf, tr, clean, corrupt, { target: clean[4], position: 3, versus: corrupt[4] === clean[4] ? (clean[4] + 1) % inf.config.vocab : corrupt[4] });
      inf.dispose(), tr.dispose();
    }
  });

  test(`attributionPatching [${name}]: loadHuggingFace (GPT-2, Llama, Qwen3 with QK-norm) and loadLlama2c, inference vs trainable`, () => {
    const cases = [
      ['GPT-2', { ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }],
      ['Llama', { ...SMALL, block: 'llama', kvHeads: 2 }],
      ['Qwen3 (QK-norm)', { ...SMALL, block: 'llama', tieEmbeddings: true, attentionOptions: { qkNorm: true } }],
    ];
    for (const [label, cfg] of cases) {
      const made = lib.createModel(cfg);
      const files = made.saveHuggingFace();
      const inf = lib.loadHuggingFace(files), tr = lib.loadHuggingFace({ ...files, training: true });
      same(`loadHuggingFace ${label}`, inf, tr, IDS, OTHER, { target: 7 });
      // the trainable copy's grids are the created model's (the file round trip is exact in F32)
      const own = grids(made, IDS, OTHER, { target: 7 });
      for (const k of NAMES) assert.deepEqual(own.grids[k].data, grids(inf, IDS, OTHER, { target: 7 }).grids[k].data, `${label} ${k}: created vs loaded`);
      made.dispose(), inf.dispose(), tr.dispose();
    }
    const llama = lib.createModel({ ...SMALL, block: 'llama', dFF: 64 });
    const bin = llama.saveLlama2c();
    const inf = lib.loadLlama2c(bin), tr = lib.loadLlama2c(bin, { training: true });
    same('loadLlama2c', inf, tr, IDS, OTHER, { target: 3, versus: 4 });
    inf.dispose(), tr.dispose();
    // quantized: refused, naming why (the backward reads the float32 matrices the quantizer freed)
    const v2 = lib.loadLlama2c(llama.saveLlama2c({ version: 2, groupSize: 16 }));
    expectError(() => v2.attributionPatching(IDS, OTHER, { metric: { target: 3 } }), /attributionPatching: its backward needs the float32 weights, and this model was quantized to q8_0/);
    v2.dispose();
    const q4 = lib.loadHuggingFace(llama.saveHuggingFace());
    q4.quantize('q4_0');
    expectError(() => q4.attributionPatching(IDS, OTHER, { metric: { target: 3 } }), /attributionPatching: its backward needs the float32 weights, and this model was quantized to q4_0/);
    q4.dispose();
    llama.dispose();
  });

  test(`attributionPatching [${name}]: an inference model's call leaves the heap as it found it, and it holds no gradients`, () => {
    const ex = lib[Symbol.for('attention-wasm.exports')];
    const files = lib.createModel({ ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }).saveHuggingFace();
    const h0 = ex.aw_heap_in_use();
    const inf = lib.loadHuggingFace(files);
    inf.forward(IDS); // the activations of this length, which the model keeps for its next forwards
    const before = ex.aw_heap_in_use();
    const first = inf.attributionPatching(IDS, OTHER, { metric: { target: 7 }, names: NAMES });
    assert.equal(ex.aw_heap_in_use(), before, 'heap in use after the first call');
    for (let i = 0; i < 3; i++) {
      const again = inf.attributionPatching(IDS, OTHER, { metric: { target: 7 }, names: NAMES });
      assert.equal(ex.aw_heap_in_use(), before, `heap in use after call ${i + 2}`);
      for (const k of NAMES) assert.deepEqual(again.grids[k].data, first.grids[k].data);
    }
    // a shorter call then a longer one: the buffers are sized to each call's n, and given back
    inf.attributionPatching(IDS.slice(0, 5), OTHER.slice(0, 5), { metric: { target: 7 } });
    assert.equal(ex.aw_heap_in_use(), before, 'heap in use after a shorter call');
    const tr = lib.loadHuggingFace({ ...files, training: true });
    tr.forward(IDS);
    const trHeld = ex.aw_heap_in_use() - before;
    tr.dispose();
    // the inference model holds its parameters and one copy of the activations; the trainable one
    // its parameters four times (gradients, AdamW's m and v) and two copies of the activations
    const infHeld = before - h0, params = inf.parameterCount * 4;
    assert.ok(trHeld - infHeld >= 3 * params, `trainable holds ${trHeld} bytes, inference ${infHeld} (parameters ${params})`);
    inf.dispose();
    assert.equal(ex.aw_heap_in_use(), h0, 'heap in use after dispose');
  });
}
