// quantized-copy.test.js: model.quantizedCopy(format, { groupSize, signal }) (wasm/model.js over
// model_create_quantized and model_quantize_fill, src/model/quantize.c).
//   - the copy's logits, greedy tokens and weightBytes equal, bit for bit, those of the old way (save,
//     loadModel for inference, quantize) for created models (trainable or not; tied, grouped-query,
//     q/k norms, a window, GPT-2's block), a Hugging Face load with Llama 3's rope scaling and a
//     llama2.c load; the source's own logits do not change
//   - it yields: a timer chain started beside it runs between its pieces (a synchronous quantize
//     would let it run once, after)
//   - an AbortSignal stops it, the copy's memory is freed, and the source still runs; disposing the
//     source mid-way rejects; bad arguments and a quantized source are Errors naming them
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../../wasm/index.js';

const lib = await loadAttention();
const ex = lib[Symbol.for('attention-wasm.exports')];
const IDS = [1, 4, 9, 3, 7, 2, 8];
const SMALL = { vocab: 50, dModel: 32, dFF: 64, heads: 4, layers: 2, maxLen: 32, seed: 7 };
const bitSame = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
const rejects = async (p, re) => {
  let err = null;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected a rejection matching ${re}`);
  assert.match(err.message, re);
  return err;
};

function oldWay(m, format, opts) {
  const q = lib.loadModel(m.save(), { training: false });
  q.quantize(format, opts);
  return q;
}

async function same(t, label, m, format, opts) {
  const before = m.forward(IDS).logits.slice();
  const want = oldWay(m, format, opts), got = await m.quantizedCopy(format, opts);
  try {
    assert.deepEqual(got.weightBytes, want.weightBytes, `${label} ${format}: weightBytes`);
    assert.ok(bitSame(got.forward(IDS).logits, want.forward(IDS).logits), `${label} ${format} ${JSON.stringify(opts)}: logits differ`);
    assert.deepEqual(got.generate([1, 2], { maxTokens: 6 }), want.generate([1, 2], { maxTokens: 6 }), `${label} ${format}: greedy tokens`);
    assert.ok(bitSame(m.forward(IDS).logits, before), `${label}: the source changed`);
    t.diagnostic(`${label} ${format} ${JSON.stringify(opts)}: ${got.weightBytes.bytes} of ${got.weightBytes.fp32} bytes; identical`);
  } finally {
    got.dispose();
    want.dispose();
  }
}

test('quantizedCopy equals save, loadModel, quantize bit for bit, and leaves the source as it was', async (t) => {
  const cases = [
    ['Llama, grouped-query', { ...SMALL, block: 'llama', kvHeads: 2 }],
    ['Llama, tied', { ...SMALL, block: 'llama', tieEmbeddings: true }],
    ['q and k norms', { ...SMALL, block: 'llama', attentionOptions: { qkNorm: true } }],
    ['a window', { ...SMALL, block: 'llama', attentionOptions: { window: 8 } }],
    ['GPT-2 block', { ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }],
  ];
  for (const [label, c] of cases) {
    for (const training of [false, true]) {
      const m = lib.createModel(c, { training });
      for (const [format, opts] of [['q8_0', {}], ['q8_0', { groupSize: 16 }], ['q4_0', {}]]) await same(t, `${label} (training ${training})`, m, format, opts);
      m.dispose();
    }
  }
  const made = lib.createModel({ ...SMALL, block: 'llama', ropeScaling: { factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxLen: 16 } }, { training: false });
  const hf = lib.loadHuggingFace(made.saveHuggingFace({ dtype: 'BF16' }));
  await same(t, 'Hugging Face (Llama 3 rope scaling)', hf, 'q8_0', {});
  const plain = lib.createModel({ ...SMALL, block: 'llama' }, { training: false });
  const l2 = lib.loadLlama2c(plain.saveLlama2c());
  await same(t, 'llama2.c', l2, 'q4_0', {});
  for (const m of [made, hf, plain, l2]) m.dispose();
});

test('quantizedCopy yields between its pieces', async (t) => {
  // a tied classifier of 4096 x 256 values: four pieces of about a million, the layers one each
  const m = lib.createModel({ vocab: 4096, dModel: 256, dFF: 512, heads: 4, layers: 2, maxLen: 32, block: 'llama', tieEmbeddings: true }, { training: false });
  let ticks = 0, done = false;
  const tick = () => {
    ticks++;
    if (!done) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  const copy = await m.quantizedCopy('q8_0');
  done = true;
  t.diagnostic(`a 0 ms timer chain ran ${ticks} times during the copy (2 layers x 7 matrices + the classifier's 4 pieces)`);
  assert.ok(ticks >= 10, `the timer chain ran ${ticks} times`);
  copy.dispose();
  m.dispose();
});

test('an AbortSignal stops quantizedCopy and frees the copy; bad arguments are Errors naming them', async () => {
  const m = lib.createModel({ ...SMALL, block: 'llama' }, { training: false });
  (await m.quantizedCopy('q8_0')).dispose(); // the heap as a copy leaves it (the library's own scratch included)
  const heap = ex.aw_heap_in_use();
  const ctl = new AbortController();
  const p = m.quantizedCopy('q8_0', { signal: ctl.signal });
  setTimeout(() => ctl.abort(), 0);
  const err = await rejects(p, /abort/i);
  assert.equal(err.name, 'AbortError');
  assert.equal(ex.aw_heap_in_use(), heap, 'the copy was freed');
  assert.ok(m.forward(IDS).logits.every(Number.isFinite), 'the source still runs');
  // the source disposed mid-way
  const other = lib.createModel({ ...SMALL, block: 'llama' }, { training: false });
  const q = other.quantizedCopy('q8_0');
  other.dispose();
  await rejects(q, /quantizedCopy: this model was disposed/);
  await rejects(m.quantizedCopy('q5_1'), /quantizedCopy: quantize: format must be one of "q8_0", "q4_0", got "q5_1"/);
  await rejects(m.quantizedCopy(8), /quantizedCopy: format must be "q8_0" or "q4_0", got 8/);
  await rejects(m.quantizedCopy('q8_0', { groupSize: 48 }), /quantizedCopy: quantize: groupSize 48 does not divide the rows of dec\.0\.self\.wq/);
  await rejects(m.quantizedCopy('q8_0', { signal: 'stop' }), /quantizedCopy: signal must be an AbortSignal, got "stop"/);
  await rejects(m.quantizedCopy('q8_0', { group: 32 }), /quantizedCopy.*unknown option "group"/);
  const q8 = await m.quantizedCopy('q8_0');
  await rejects(q8.quantizedCopy('q4_0'), /quantizedCopy: this model's weights are q8_0; a quantized copy is made from float32 weights/);
  q8.dispose();
  m.dispose();
});
