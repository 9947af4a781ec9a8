// sae-fast.test.js: the faster way trainSAE reads a model (wasm/sae.js, src/model/hooks.c):
// runWithCache's stopAfter, which ends the forward once the named points are computed (the same
// cache bit for bit, no logits, the model's later runs unchanged), and trainSAE's window, reuse
// (each window's rows kept after the first read: the same SAE, byte for byte) and onRead. On the
// shipped sub-word model (pre-norm RMSNorm, RoPE, SwiGLU) and a tiny random GPT-2 through
// loadHuggingFace (LayerNorm, learned positions, GELU, biases, tied).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds } from './helpers.js';
import { randomBf16 } from '../../lab/hf-shapes.js';

const TINY_GPT2 = { architectures: ['GPT2LMHeadModel'], model_type: 'gpt2', vocab_size: 97, n_embd: 32, n_layer: 3, n_head: 4,
  n_positions: 48, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new' };

function models(lib) {
  const dir = new URL('../../web/models/', import.meta.url);
  return [
    { label: 'fortunes-bpe', model: lib.loadModel(readFileSync(new URL('fortunes-bpe.safetensors', dir)), { training: false }) },
    { label: 'tiny GPT-2', model: lib.loadHuggingFace({ config: TINY_GPT2, weights: randomBf16(TINY_GPT2) }) },
  ];
}

// n token ids in [0, vocab), seeded.
function ids(n, vocab, seed = 7) {
  let s = seed;
  return Int32Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) >>> 0), (s >>> 8) % vocab));
}

const bytes = (f) => new Uint8Array(f.buffer, f.byteOffset, f.byteLength);

for (const { name, lib } of builds) {
  test(`runWithCache stopAfter (${name}): the same cache bit for bit as the full run, logits null, later runs unchanged`, () => {
    for (const { label, model } of models(lib)) {
      try {
        const L = model.config.layers, tok = ids(Math.min(40, model.config.maxLen), model.config.vocab);
        const sets = [['blocks.0.hook_resid_post'], [`blocks.${L - 1}.hook_resid_post`], ['blocks.1.hook_mlp_out'],
          ['blocks.0.attn.hook_pattern'], ['hook_embed'], ['blocks.1.attn.hook_z', 'blocks.0.hook_resid_pre'],
          ['ln_final.hook_normalized'], []];
        const before = model.forward(tok).logits;
        const gen = model.generate(tok.subarray(0, 5), { maxTokens: 8 });
        for (const names of sets) {
          const full = model.runWithCache(tok, { names });
          const cut = model.runWithCache(tok, { names, stopAfter: true });
          assert.equal(cut.logits, null, `${label} ${names}: no logits`);
          assert.deepEqual(Object.keys(cut.cache).sort(), Object.keys(full.cache).sort(), `${label} ${names}`);
          for (const n of names) {
            assert.deepEqual(cut.cache[n].shape, full.cache[n].shape, `${label} ${n}`);
            assert.deepEqual(bytes(cut.cache[n].data), bytes(full.cache[n].data), `${label} ${n}: bit for bit`);
          }
          // the next runs are whole forwards again: logits, generation and a full runWithCache
          assert.deepEqual(bytes(model.forward(tok).logits), bytes(before), `${label} after ${names}: forward`);
          assert.deepEqual(model.generate(tok.subarray(0, 5), { maxTokens: 8 }), gen, `${label} after ${names}: generate`);
          const again = model.runWithCache(tok, { names: ['blocks.0.hook_resid_post'] });
          assert.deepEqual(bytes(again.logits), bytes(before), `${label} after ${names}: runWithCache's logits`);
          assert.equal(model.runWithCache(tok, { names, stopAfter: false }).logits.length, tok.length * model.config.vocab);
        }
        // every point (no names) with stopAfter: the same cache, no logits
        const all = model.runWithCache(tok), allCut = model.runWithCache(tok, { stopAfter: true });
        assert.equal(allCut.logits, null);
        assert.deepEqual(Object.keys(allCut.cache), Object.keys(all.cache));
        for (const n of Object.keys(all.cache)) assert.deepEqual(bytes(allCut.cache[n].data), bytes(all.cache[n].data), `${label} ${n}`);
        for (const bad of [1, 'true', null])
          assert.throws(() => model.runWithCache(tok, { names: ['hook_embed'], stopAfter: bad }), /runWithCache: stopAfter must be a boolean/);
        assert.deepEqual(bytes(model.forward(tok).logits), bytes(before), `${label}: usable after the bad inputs`);
      } finally {
        model.dispose();
      }
    }
  });
}

test('trainSAE reuse: the same SAE byte for byte as reading the model on every pass, for the same seed and window', async () => {
  const { lib } = builds[0];
  for (const { label, model } of models(lib)) {
    try {
      const tok = ids(150, model.config.vocab, 3);
      const hook = 'blocks.1.hook_resid_post';
      // 150 tokens in windows of 20: 8 windows, 150 rows a pass; 12 steps of 64 rows: 5 passes
      const base = { model, hook, ids: tok, dSae: 64, k: 4, steps: 12, batch: 64, seed: 9, window: 20 };
      const reads = [];
      const plain = await lib.trainSAE({ ...base, onRead: (r) => reads.push(r) });
      const kept = await lib.trainSAE({ ...base, reuse: true });
      const saved = [plain.save(), kept.save()];
      plain.free(), kept.free();
      assert.deepEqual(saved[1], saved[0], `${label}: reuse trains the same SAE`);
      // onRead: once per window, on its first read only
      assert.deepEqual(reads, Array.from({ length: 8 }, (_, i) => ({ done: i + 1, total: 8 })), label);
      // the window changes the windows (a different order of rows): a different SAE
      const other = await lib.trainSAE({ ...base, window: 30, reuse: true });
      assert.notDeepEqual(other.save(), saved[0], `${label}: window is used`);
      other.free();
    } finally {
      model.dispose();
    }
  }
});

test('trainSAE window, reuse, onRead: bad values are Errors naming them; reuse refuses more than 512 MiB of rows', async () => {
  const { lib } = builds[0];
  const model = lib.loadHuggingFace({ config: TINY_GPT2, weights: randomBf16(TINY_GPT2) });
  try {
    const base = { model, hook: 'blocks.0.hook_resid_post', ids: ids(100, 97), dSae: 16, k: 2, steps: 1, batch: 8 };
    // a caller (the page's features worker) tells from trainSAEOptions that these exist
    for (const key of ['window', 'reuse', 'onRead']) assert.ok(lib.trainSAEOptions.includes(key), key);
    assert.ok(Object.isFrozen(lib.trainSAEOptions));
    for (const w of [1, 49, 2.5, '8', -4])
      await assert.rejects(lib.trainSAE({ ...base, window: w }), /trainSAE: window must be an integer in \[2, 48\]/, `window ${w}`);
    await assert.rejects(lib.trainSAE({ ...base, reuse: 1 }), /trainSAE: reuse must be a boolean/);
    await assert.rejects(lib.trainSAE({ ...base, onRead: 'x' }), /trainSAE: onRead must be a function/);
    // 2^22 + 2^20 tokens x dIn 32 x 4 bytes = 640 MiB
    const big = new Int32Array(2 ** 22 + 2 ** 20);
    await assert.rejects(lib.trainSAE({ ...base, ids: big, reuse: true }),
      /trainSAE: reuse keeps every row: 5242880 tokens x dIn 32 x 4 bytes = 640\.0 MiB, more than the 512 MiB/);
    // the edges of window are accepted, and the model is usable after
    for (const window of [2, 48]) {
      const sae = await lib.trainSAE({ ...base, window, reuse: true });
      assert.equal(sae.steps, 1);
      sae.free();
    }
  } finally {
    model.dispose();
  }
});
