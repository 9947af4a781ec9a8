// model.sampleVocab (issue 54 item 6): a checkpoint whose vocabulary is padded past its tokenizer's
// ids (Qwen2.5: 151,936 rows for 151,665 ids) never generates an id the tokenizer lacks.
// loadHuggingFace sets it from a smaller tokenizer and says so in huggingFace.notes; a larger
// tokenizer is an Error naming both sizes. Generation (cached, recomputed and streamed past maxLen)
// picks below it, greedy or sampled.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError } from './helpers.js';

for (const { name, lib } of builds) {
  test(`${name}: sampleVocab bounds every generation path; bad values are Errors naming it`, () => {
    const m = lib.createModel({ vocab: 64, dModel: 16, heads: 2, layers: 2, maxLen: 16, block: 'llama', seed: 3 });
    assert.equal(m.sampleVocab, 64);
    const sampled = (opts) => Array.from(m.generate([1, 2, 3], { maxTokens: 40, temperature: 1, seed: 5, ...opts }));
    // with all 64 ids, 40 samples at temperature 1 land past id 5 (the check below can fail)
    assert.ok(sampled({}).some((t) => t >= 5));
    m.sampleVocab = 5;
    assert.equal(m.sampleVocab, 5);
    for (const opts of [{}, { cache: false }, { window: 8 }])
      assert.ok(sampled(opts).every((t) => t >= 0 && t < 5), `generate(${JSON.stringify(opts)}) picked an id past sampleVocab`);
    // greedy: the largest of the first 5 logits, at every step
    const out = Array.from(m.generate([1, 2, 3], { maxTokens: 6 }));
    const seq = [1, 2, 3];
    for (const t of out) {
      const { logits } = m.forward(seq);
      const last = logits.subarray((seq.length - 1) * 64, (seq.length - 1) * 64 + 5);
      assert.equal(t, last.indexOf(Math.max(...last)));
      seq.push(t);
    }
    for (const bad of [0, 65, 1.5, NaN, '5'])
      expectError(() => { m.sampleVocab = bad; }, /sampleVocab must be an integer in \[1, 64\]/);
    assert.equal(m.sampleVocab, 5, 'a refused value leaves it as it was');
    m.sampleVocab = 64;
    assert.ok(sampled({}).some((t) => t >= 5));
    m.dispose();
    expectError(() => m.sampleVocab, /disposed|freed/);
  });

  test(`${name}: loadHuggingFace with a tokenizer of fewer ids than the vocabulary: sampleVocab and a note; more ids: an Error`, () => {
    const tok = lib.trainTokenizer('the cat sat on the mat and the dog ran after the cat '.repeat(20), { vocabSize: 280 });
    const json = JSON.stringify(tok.toJSON());
    const ids = tok.vocabSize ?? tok.vocab;
    const files = (vocab) => {
      const made = lib.createModel({ vocab, dModel: 16, heads: 2, layers: 1, maxLen: 16, block: 'llama' });
      const f = made.saveHuggingFace();
      made.dispose();
      return f;
    };
    const padded = files(ids + 24);
    const model = lib.loadHuggingFace({ config: padded.config, weights: padded.weights, tokenizer: json });
    assert.equal(model.sampleVocab, ids);
    assert.deepEqual(model.huggingFace.notes, [`the tokenizer has ${ids} ids and the model's vocabulary ${ids + 24} rows (padding): generation picks from the first ${ids}`]);
    const out = model.generate(model.tokenizer.encode('the cat'), { maxTokens: 30, temperature: 2, seed: 1 });
    assert.ok(Array.from(out).every((t) => t < ids));
    assert.equal(typeof model.tokenizer.decode(out), 'string');
    model.dispose();
    const exact = files(ids);
    const same = lib.loadHuggingFace({ config: exact.config, weights: exact.weights, tokenizer: json });
    assert.equal(same.sampleVocab, ids);
    assert.deepEqual(same.huggingFace.notes, []);
    same.dispose();
    const small = files(ids - 8);
    expectError(() => lib.loadHuggingFace({ config: small.config, weights: small.weights, tokenizer: json }),
      new RegExp(`the tokenizer has ${ids} ids and config.json's vocab_size is ${ids - 8}`));
  });
}
