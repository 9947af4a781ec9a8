// quantize-in-place.test.js: model.quantize after a float32 load works in the float32 arena
// (model_quantize in src/model/quantize.c): each matrix's values and scales take the room its floats
// leave, the other tensors pack before them and the arena shrinks.
//   - on fresh library instances (wasm memory never shrinks), quantizing a loaded float32 model grows
//     the wasm memory by at most the largest matrix's float32 bytes (before, the whole quantized
//     model was allocated beside the float32 arena), and the heap in use ends below where it started
//     by most of the bytes saved, then returns to the empty instance's on dispose
//   - the result equals loadHuggingFace({ quantize }) bit for bit (logits, greedy tokens, weightBytes),
//     tied and untied, q8_0 and q4_0
//   - the corners: a tied classifier whose quantized copy does not fit in what the other matrices
//     free (it takes an allocation of its own), with the tensors after the first matrix (biases, norms)
//     larger than the arena's free tail (they are stashed aside): equal to quantizedCopy bit for bit
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../../wasm/index.js';

const lib = await loadAttention();
const IDS = [1, 4, 9, 3, 7, 2, 8, 11, 5];
const bitSame = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

test('quantize after a float32 load grows the wasm memory by at most one matrix and equals the quantized load', async (t) => {
  const C = 256, F = 768, V = 2000;
  const largest = Math.max(C * F, V * C) * 4; // the classifier (out.w, or the tied wte's copy), in float32
  for (const tie of [false, true]) {
    const made = lib.createModel({ vocab: V, dModel: C, dFF: F, heads: 8, layers: 4, maxLen: 64, block: 'llama', tieEmbeddings: tie, seed: 3 }, { training: false });
    const files = made.saveHuggingFace({ dtype: 'F32' });
    made.dispose();
    for (const format of ['q8_0', 'q4_0']) {
      const fresh = await loadAttention();
      const empty = fresh.heapInUse();
      const m = fresh.loadHuggingFace(files);
      const buf0 = fresh.memory.buffer.byteLength, heap0 = fresh.heapInUse();
      const wb = m.quantize(format);
      const grown = fresh.memory.buffer.byteLength - buf0, heap1 = fresh.heapInUse(), saved = wb.fp32 - wb.bytes;
      t.diagnostic(`${tie ? 'tied' : 'untied'} ${format}: weights ${wb.fp32} -> ${wb.bytes} B; wasm memory ${buf0} -> ` +
        `${buf0 + grown} B (grew ${grown}, largest matrix ${largest}); heap in use ${heap0} -> ${heap1}`);
      assert.ok(grown <= largest, `${format}: the wasm memory grew ${grown} B, more than the largest matrix (${largest} B)`);
      assert.ok(heap0 - heap1 >= 0.95 * saved, `${format}: the heap in use dropped ${heap0 - heap1} B of the ${saved} B saved`);
      const want = lib.loadHuggingFace({ ...files, quantize: format });
      assert.deepEqual(m.weightBytes, want.weightBytes);
      assert.ok(bitSame(m.forward(IDS).logits, want.forward(IDS).logits), `${tie ? 'tied' : 'untied'} ${format}: logits differ`);
      assert.deepEqual(m.generate([1, 2, 3], { maxTokens: 6 }), want.generate([1, 2, 3], { maxTokens: 6 }));
      want.dispose();
      m.dispose();
      assert.equal(fresh.heapInUse(), empty, 'dispose returns every byte');
    }
  }
});

test('a tied copy that does not fit in the room freed, and biases after the first matrix, are handled aside', async (t) => {
  // one layer of six 32 x 32 matrices frees 17.7 KB (q8_0) or 20.7 KB (q4_0); the tied classifier's
  // q8_0 copy of an 8192 x 32 wte takes 295 KB, and the output bias after the first matrix 32 KB
  const opts = { vocab: 8192, dModel: 32, dFF: 32, heads: 2, layers: 1, maxLen: 16, block: 'classic', tieEmbeddings: true, seed: 5 };
  const made = lib.createModel(opts, { training: false });
  for (const format of ['q8_0', 'q4_0']) {
    const fresh = await loadAttention();
    const empty = fresh.heapInUse();
    const m = fresh.loadModel(made.save(), { training: false });
    const heap0 = fresh.heapInUse();
    m.quantize(format);
    const heap1 = fresh.heapInUse(), want = await made.quantizedCopy(format);
    assert.deepEqual(m.weightBytes, want.weightBytes);
    assert.ok(bitSame(m.forward(IDS).logits, want.forward(IDS).logits), `${format}: logits differ`);
    assert.deepEqual(m.generate([1, 2], { maxTokens: 6 }), want.generate([1, 2], { maxTokens: 6 }));
    t.diagnostic(`${format}: heap in use ${heap0} -> ${heap1} (weights ${m.weightBytes.fp32} -> ${m.weightBytes.bytes} B)`);
    // here the copy outweighs what the matrices save: the heap grows by that, plus the quantized
    // model's aw_quant and workspace
    const extra = m.weightBytes.bytes - m.weightBytes.fp32;
    assert.ok(heap1 - heap0 <= extra + 65536, `${format}: the heap in use grew ${heap1 - heap0} B, the weights ${extra} B`);
    want.dispose();
    m.dispose();
    assert.equal(fresh.heapInUse(), empty, 'dispose returns every byte (the copy and the stash included)');
  }
  made.dispose();
});
