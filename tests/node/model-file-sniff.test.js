// A wrong file given as a model (issue 45, item 3e): lib.sniffModelFile tells the model-file formats
// apart by their bytes, and says of anything else which formats it tried and what the bytes look
// like; loadLlama2c refuses other formats' bytes in those words before reading sizes from them
// (a CSV's "form" read as dim was 1836216166, "not divisible by n_heads").
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError } from './helpers.js';

const { lib } = builds[0];
const utf8 = (s) => new TextEncoder().encode(s);
const CSV = utf8('form,n,d,ms per call\nsoftmax,64,32,0.12\nlinear:elu+1,64,32,0.05\n');

test('sniffModelFile names each model-file format from its bytes', () => {
  const m = lib.createModel({ vocab: 300, dModel: 16, heads: 2, layers: 1, dFF: 32, maxLen: 16, block: 'llama', seed: 3 });
  const bin = m.saveLlama2c(), st = m.save();
  m.dispose();
  const tok = lib.trainTokenizer('the cat sat on the mat. the dog sat on the log.', { vocabSize: 300 });
  // export.py's version 1 (float32 behind a 256-byte header), which loadLlama2c does not read, and
  // version 2 (runq.c's q8_0), which it does
  const v1 = new Uint8Array(256);
  new DataView(v1.buffer).setUint32(0, 0x616b3432, true);
  new DataView(v1.buffer).setInt32(4, 1, true);
  const m2 = lib.createModel({ vocab: 300, dModel: 32, heads: 2, layers: 1, dFF: 64, maxLen: 16, block: 'llama', seed: 3 }, { training: false });
  const v2 = m2.saveLlama2c({ version: 2 });
  m2.dispose();
  const cases = [
    [bin, 'llama2c'], [st, 'safetensors'], [v1, 'llama2c-export'], [v2, 'llama2c'],
    [lib.writeLlama2cTokenizer(['<unk>', '<s>', '</s>', 'a', 'b']), 'llama2c-tokenizer'],
    [utf8(JSON.stringify(tok.toJSON())), 'hf-tokenizer'],
    [utf8(JSON.stringify({ architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 64 })), 'hf-config'],
    [utf8(`\ufeff  ${JSON.stringify({ metadata: {}, weight_map: { 'lm_head.weight': 'model-00001-of-00002.safetensors' } })}`), 'hf-index'],
  ];
  for (const [bytes, format] of cases) assert.equal(lib.sniffModelFile(bytes).format, format, format);
  // the opening of a file and its size are enough
  assert.equal(lib.sniffModelFile(bin.subarray(0, 64), bin.length).format, 'llama2c');
  assert.equal(lib.sniffModelFile(st.subarray(0, 64), st.length).format, 'safetensors');
});

test('a CSV is none of them: every format tried is named, and what it looks like', () => {
  const s = lib.sniffModelFile(CSV);
  assert.equal(s.format, null);
  assert.equal(s.tried.length, 7);
  assert.match(s.tried.join('; '), /safetensors.*config\.json.*tokenizer\.json.*llama2\.c's model \.bin.*tokenizer\.bin/);
  assert.equal(s.label, 'text starting "form,n,d,ms per call"');
  assert.equal(lib.sniffModelFile(new Uint8Array([0, 1, 2, 255, 254, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0])).label, 'binary data of another kind');
  assert.match(lib.sniffModelFile(utf8('{"name": "attention-wasm", "version": "0.1.0"}')).label, /^JSON of another kind, starting "\{\\"name\\"/);
});

test('loadLlama2c on another format\'s bytes says what they are, never "not divisible by n_heads"', () => {
  for (const { lib: l } of builds) {
    expectError(() => l.loadLlama2c(CSV), /loadLlama2c: the header's dim is 1836216166, more than any llama2\.c model's .*: this is not a llama2\.c model file; it looks like text starting "form,n,d,ms per call"/);
    const st = l.createModel({ vocab: 8, dModel: 8, heads: 2, layers: 1, dFF: 8, maxLen: 8 }).save();
    expectError(() => l.loadLlama2c(st), /loadLlama2c: these bytes are safetensors .*, not a llama2\.c model file/);
    expectError(() => l.loadLlama2c(utf8(JSON.stringify({ model_type: 'llama', hidden_size: 64, num_attention_heads: 4 }))),
      /these bytes are Hugging Face's config\.json .*, not a llama2\.c model file/);
    // a text whose first int32s fall inside every range still gets the sizes' own checks, in order
    let message = '';
    try { l.loadLlama2c(utf8('x'.repeat(40))); } catch (e) { message = e.message; }
    assert.match(message, /loadLlama2c: /);
    assert.doesNotMatch(message, /divisible/);
  }
});
