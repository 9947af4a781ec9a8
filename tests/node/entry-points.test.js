// entry-points.test.js: what the public entry points let through (issue 44), one class per block:
// every hook point runWithCache lists is written; hook names are taken as written, never
// normalised; checkpoints' metadata goes through createModel's own checks; integers past int32
// are Errors naming the argument and its range; JSON given to the tokenizer.bin reader is named
// as such. After each bad input a normal call still works.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError } from './helpers.js';

const SMALL = { vocab: 11, dModel: 16, heads: 4, layers: 2, dFF: 24, maxLen: 12, seed: 5 };
const IDS = [1, 4, 2, 7, 3, 9, 1, 4];

// The models whose hook points are checked: every form a decoder can use (the registry's causal
// ones), and softmax's block switches (grouped-query K/V heads, post-norm: no ln_final, the
// options that change its kernel).
function hookModels(lib) {
  const cfgs = lib.forms.filter((f) => f.causal).map((f) => ({ attention: f.name }));
  cfgs.push({ block: 'llama', kvHeads: 2 }, { norm: 'post', positional: 'learned' },
    { attentionOptions: { window: 3, learnedSinks: true, outputGate: true, qkNorm: true } },
    { layerForms: [{ attention: 'mla' }, { attention: 'kda' }] });
  return cfgs;
}

// Fills freed heap memory with another model's activations, so that a point left unwritten holds
// different bytes in the next run.
function dirtyHeap(lib, seed) {
  const other = lib.createModel({ ...SMALL, seed, dModel: 32, dFF: 48 });
  other.runWithCache(IDS);
  other.runWithCache(IDS.map((x) => (x * seed) % 11));
  other.dispose();
}

for (const { name, lib } of builds) {
  test(`entry points [${name}]: every hook point runWithCache lists is written (equal across two runs, heap dirtied between)`, (t) => {
    const skipped = lib.forms.filter((f) => !f.causal).map((f) => f.name);
    t.diagnostic(`forms a decoder cannot use (no hooks): ${skipped.join(', ')}`);
    let points = 0;
    for (const cfg of hookModels(lib)) {
      const label = JSON.stringify(cfg);
      const m = lib.createModel({ ...SMALL, ...cfg });
      dirtyHeap(lib, 3);
      const a = m.runWithCache(IDS).cache;
      dirtyHeap(lib, 7);
      const b = m.runWithCache(IDS).cache;
      assert.deepEqual(Object.keys(b), Object.keys(a), `${label}: the same points`);
      for (const [point, { data }] of Object.entries(a)) {
        const d = b[point].data;
        for (let i = 0; i < data.length; i++) {
          if (!Number.isFinite(data[i])) assert.fail(`${label} ${point}[${i}] is ${data[i]}`);
          if (!Object.is(data[i], d[i])) assert.fail(`${label} ${point}[${i}]: ${data[i]} then ${d[i]}: the point is not written`);
        }
        points++;
      }
      m.dispose();
    }
    t.diagnostic(`${points} points compared bit for bit (max difference 0)`);
  });

  test(`entry points [${name}]: MLA has no hook_v (it makes its values from X): not listed, and an Error when named`, () => {
    const m = lib.createModel({ ...SMALL, attention: 'mla' });
    const { cache } = m.runWithCache(IDS);
    assert.ok(!('blocks.0.attn.hook_v' in cache) && 'blocks.0.attn.hook_z' in cache);
    expectError(() => m.runWithCache(IDS, { names: ['blocks.0.attn.hook_v'] }), /blocks\.0\.attn\.hook_v: attention "mla" makes its own values/);
    const soft = lib.createModel(SMALL);
    const from = soft.runWithCache(IDS).cache;
    expectError(() => m.runWithHooks(IDS, { patch: [{ name: 'blocks.1.attn.hook_v', from }] }), /attention "mla" makes its own values/);
    assert.equal(m.runWithHooks(IDS).logits.length, IDS.length * SMALL.vocab);
    m.dispose(), soft.dispose();
  });

  test(`entry points [${name}]: hook names are taken as written: "blocks.01...", NUL and "" are Errors listing the names`, () => {
    const m = lib.createModel(SMALL);
    const from = m.runWithCache(IDS).cache;
    for (const bad of ['blocks.01.hook_resid_pre', 'blocks.00.attn.hook_q', '', ' hook_embed', 'HOOK_EMBED']) {
      expectError(() => m.runWithCache(IDS, { names: [bad] }), /unknown hook name ".*": the names are hook_embed, blocks\.\{l\}\.hook_resid_pre/);
      expectError(() => m.runWithHooks(IDS, { patch: [{ name: bad, from: { [bad]: from.hook_embed } }] }), /unknown hook name/);
    }
    expectError(() => m.runWithCache(IDS, { names: ['hook_embed\u0000junk'] }), /names\[0\] is "hook_embed\\u0000junk", which holds a NUL character .* "hook_embed"/);
    expectError(() => m.runWithHooks(IDS, { patch: [{ name: 'hook_embed\u0000', from: { 'hook_embed\u0000': from.hook_embed } }] }), /patch\[0\]: name .* NUL/);
    expectError(() => m.patchingGrid(IDS, { from, name: 'hook_resid_pre\u0000x' }), /patchingGrid: name .* NUL/);
    // still works, with the names as hook_name writes them
    assert.deepEqual(Object.keys(m.runWithCache(IDS, { names: ['blocks.1.hook_resid_pre', 'hook_embed'] }).cache).sort(), ['blocks.1.hook_resid_pre', 'hook_embed']);
    m.dispose();
  });
}

const TEXT = 'the cat sat on the mat; the dog sat on the log. '.repeat(20);

for (const { name, lib } of builds) {
  test(`entry points [${name}]: JSON given to a tokenizer.bin reader is named as a tokenizer.json; a BOM is not part of the JSON`, () => {
    const tok = lib.trainTokenizer(TEXT, { vocabSize: 300 });
    const text = JSON.stringify(tok.toJSON(), null, 2);
    const enc = (s) => new TextEncoder().encode(s);
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, ...enc(text)]);
    const ids = tok.encode('the cat sat');
    // loadTokenizer reads a tokenizer.json with a byte-order mark, as bytes or as text
    assert.deepEqual(lib.loadTokenizer(bom).encode('the cat sat'), ids);
    assert.deepEqual(lib.loadTokenizer(`\ufeff${text}`).encode('the cat sat'), ids);
    // loadLlama2c's tokenizer takes tokenizer.bin only: JSON is named, never "piece 0 has length 1852795251"
    const model = lib.createModel({ vocab: tok.vocabSize, dModel: 16, heads: 2, layers: 1, dFF: 32, maxLen: 8, block: 'llama' });
    const bin = model.saveLlama2c();
    for (const bytes of [bom, enc(text), enc(JSON.stringify(tok.toJSON())), enc('[1, 2, 3]')])
      expectError(() => lib.loadLlama2c(bin, { tokenizer: bytes }), /tokenizer: the bytes look like JSON.*a tokenizer\.json, not llama2\.c's tokenizer\.bin.*lib\.loadTokenizer/);
    expectError(() => lib.loadTokenizer(Uint8Array.from([0xef, 0xbb, 0xbf, ...enc('[1]')])), /look like JSON \(after a UTF-8 byte-order mark\)/);
    // and the real thing still loads
    const back = lib.loadLlama2c(bin, { tokenizer: tok.toLlama2c() });
    assert.equal(back.tokenizer.vocab, tok.vocabSize);
    assert.deepEqual(lib.loadTokenizer(tok.toLlama2c()).encode('the cat sat'), ids);
    model.dispose();
  });

  test(`entry points [${name}]: writeLlama2cTokenizer refuses scores that are not finite float32 numbers`, () => {
    for (const s of [NaN, Infinity, 1e39, '1'])
      expectError(() => lib.writeLlama2cTokenizer(['a', 'b'], [0, s]), /scores\[1\] is .*; scores must be numbers finite in float32/);
    assert.equal(lib.writeLlama2cTokenizer(['a', 'b'], [0, -1.5]).length, 4 + 2 * 9);
  });
}

// Integers: every public integer argument is checked in JS (core.js checkInt) before it becomes a
// C int32 or uint32: past the type it would arrive wrapped (2^32 + 300 as 300, 2^53 as 0).
const WRAPS = [2 ** 32 + 300, 2 ** 53, 2 ** 31, -1, 1.5, NaN, Infinity];

for (const { name, lib } of builds) {
  test(`entry points [${name}]: integers past int32 (and -1, 1.5, NaN) are Errors naming the argument and its range`, async (t) => {
    const m = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, dFF: 32, maxLen: 16 });
    const tok = lib.trainTokenizer(TEXT, { vocabSize: 280 });
    const layer = lib.attentionLayer('softmax', { n: 4, d: 4, causal: true });
    const cache = m.runWithCache([1, 2, 3]).cache;
    const f4 = () => new Float32Array(4);
    // [argument, call, the words naming it and its range]; -1 is fine for some (stop: none), skipped there
    const calls = [
      ['vocabSize', (v) => lib.trainTokenizer('abcabc abc', { vocabSize: v }), /trainTokenizer: vocabSize must be an integer, got .*; accepted: an integer in \[259, 8192\]|vocabSize is -1, outside \[259, 8192\]/],
      ['merges', (v) => tok.encode('the cat', { merges: v }), /tokenizer\.encode: merges (must be an integer \(how many merges apply, 0\.\.\d+\), got|is -1, outside \[0, \d+\])/],
      ['decode id', (v) => tok.decode([1, v]), /tokenizer\.decode: ids\[1\] is .*, outside \[0, \d+\)/],
      ['token id', (v) => m.forward([1, v]), /forward: tokens\[1\] is (.*; token ids must be integers in \[0, vocab\)|-1, outside the vocabulary \[0, 12\))/],
      ['trainStep row', (v) => m.trainStep({ inputs: [[1, v]], targets: [[1, 2]] }), /trainStep: inputs\[0\]\[1\] is (.*; token ids must be integers in \[0, vocab\)|-1, outside)/],
      ['maxTokens', (v) => m.generate([1], { maxTokens: v }), /generate: maxTokens must be an integer >= 0, got .*; accepted: an integer in \[0, 1048576\]/],
      ['topK', (v) => m.generate([1], { topK: v, temperature: 1 }), /generate: topK must be an integer >= 0 \(0 = all\), got .*accepted: an integer in \[0, 2147483647\]/],
      ['seed', (v) => m.generate([1], { seed: v }), /generate: seed must be an integer in \[0, 2\^32 - 1\], got/],
      ['stop', (v) => m.generate([1], { stop: v }), /generate: stop must be a token id in \[0, 12\), got/],
      ['window', (v) => m.streamLosses([1, 2, 3], { window: v }), /streamLosses: window must be an integer in \[1, maxLen = 16\], got/],
      ['sinks', (v) => m.streamLosses([1, 2, 3], { window: 8, sinks: v }), /streamLosses: sinks must be an integer >= 0, got .*accepted: an integer in \[0, 2147483647\]/],
      ['gen sinks', (v) => m.generate([1], { window: 8, sinks: v }), /generate: sinks must be an integer >= 0, got/],
      ['gradientCheck', (v) => m.gradientCheck({ length: v }), /gradientCheck: length must be an integer in \[1, 4096\], got/],
      ['ablate layer', (v) => m.runWithHooks([1, 2, 3], { ablate: [{ layer: v, head: 0, mode: 'zero' }] }), /ablate\[0\]: layer must be an integer in \[-2147483648, 2147483647\], got|layer -1|outside/],
      ['ablate head', (v) => m.runWithHooks([1, 2, 3], { ablate: [{ layer: 0, head: v, mode: 'zero' }] }), /ablate\[0\]: head must be an integer in \[-2147483648, 2147483647\], got|head -1|outside/],
      ['patch positions', (v) => m.runWithHooks([1, 2, 3], { patch: [{ name: 'hook_embed', from: cache, positions: [v] }] }), /patch\[0\]: positions\[0\] must be an integer in \[-2147483648, 2147483647\], got|-1|outside/],
      ['attribution target', (v) => m.headAttribution([1, 2, 3], { target: v }), /headAttribution: target must be an integer in \[-2147483648, 2147483647\], got|-1|outside/],
      ['attentionLayer n', (v) => lib.attentionLayer('softmax', { n: v, d: 4 }), /attentionLayer\("softmax"\): n must be a positive integer, got .*; accepted: an integer in \[1, 2147483647\]/],
      ['softmaxAttention d', (v) => lib.softmaxAttention({ q: f4(), k: f4(), v: f4(), n: 1, d: v }), /softmaxAttention: d must be a positive integer, got .*accepted: an integer in \[1, 2147483647\]/],
      ['step pos', (v) => layer.step(v, { q: f4(), k: f4(), v: f4() }), /step: pos must be an integer in \[0, maxLen = 4\), got/],
      ['setThreads', (v) => lib.setThreads(v), /setThreads: n must be a positive integer, got .*accepted: an integer in \[1, 64\]/],
    ];
    let errors = 0;
    for (const [arg, call, words] of calls) {
      for (const v of WRAPS) {
        if (arg === 'seed' && v === 2 ** 31) continue; // a seed is a uint32: 2^31 is one
        if (arg === 'stop' && v === -1) continue; // stop -1: no stop token (the default)
        let threw = null;
        try {
          call(v);
        } catch (e) {
          threw = e;
        }
        if (!threw) assert.fail(`${arg} = ${v} was accepted`);
        if (!words.test(threw.message)) assert.fail(`${arg} = ${v}: ${threw.message}`);
        errors++;
      }
    }
    // train is async: its Error is a rejection; steps is JS's own loop count (up to 2^53 - 1)
    for (const v of [2 ** 53, 0, -1, 1.5, NaN, Infinity]) await assert.rejects(() => m.train({ steps: v, task: 'copy' }), /train: steps must be an integer >= 1, got/);
    t.diagnostic(`${errors} bad integers refused, each naming its argument`);
    // every call still works
    assert.equal(m.forward([1, 2]).logits.length, 24);
    assert.ok(tok.encode('the cat', { merges: 0 }).length > 0);
    assert.equal(lib.trainTokenizer('abcabc abc', { vocabSize: 260 }).vocabSize <= 260, true);
    m.dispose(), layer.dispose();
  });
}

// Checkpoints: the metadata goes through createModel's parser, the tensors' byte ranges tile the
// data. A file is taken apart and put back together with the package's own safetensors writer.
import { readSafetensors, writeSafetensors } from '../../wasm/safetensors.js';

const withMeta = (bytes, edit) => {
  const { meta, tensors } = readSafetensors(bytes);
  const m = { ...meta };
  edit(m);
  return writeSafetensors(m, tensors);
};
// the header and the data of a file, to change the header's tensor entries by hand
function splitFile(bytes) {
  const hlen = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  return { header: JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen))), data: bytes.subarray(8 + hlen) };
}
function joinFile(header, data) {
  const text = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8), out.set(data, 8 + text.length);
  return out;
}
const errorOf = (fn) => {
  try {
    fn();
  } catch (e) {
    return e.message;
  }
  return null;
};
const TINY = { vocab: 12, dModel: 16, heads: 2, layers: 2, dFF: 32, maxLen: 16 };
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

for (const { name, lib } of builds) {
  const causal = lib.forms.filter((f) => f.causal);

  test(`entry points [${name}]: a checkpoint createModel would accept round-trips bit for bit (every form, version 2 and 3)`, () => {
    const cfgs = causal.map((f) => ({ attention: f.name }));
    for (const f of causal) cfgs.push({ layerForms: [{ attention: 'softmax', attentionOptions: { window: 4 } }, { attention: f.name }] });
    cfgs.push({ arch: 'gru' }, { block: 'llama', kvHeads: 1 }, { positional: 'rope', ropeTheta: 500 });
    for (const cfg of cfgs) {
      const m = lib.createModel(cfg.arch ? { vocab: 12, dModel: 16, maxLen: 16, ...cfg } : { ...TINY, ...cfg });
      const bytes = m.save();
      const back = lib.loadModel(bytes);
      assert.deepEqual(back.save(), bytes, JSON.stringify(cfg));
      assert.deepEqual(back.config, m.config, JSON.stringify(cfg));
      m.dispose(), back.dispose();
    }
  });

  test(`entry points [${name}]: a metadata value createModel refuses is refused with createModel's words, after its key`, (t) => {
    const base = lib.createModel(TINY);
    const bytes = base.save();
    const expectSame = (file, key, text, createModelError) => {
      const tail = createModelError.replace(/^attention-wasm: createModel: (layerForms\[\d+\]: )?/, '');
      const got = errorOf(() => lib.loadModel(file));
      const want = `loadModel: the checkpoint's __metadata__ is not an attention-wasm model config: "${key}" is "${text}": ${tail}`;
      if (!got?.endsWith(want)) assert.fail(`${key} = ${JSON.stringify(text)}:\n  got  ${got}\n  want ${want}`);
    };
    let checked = 0;
    // the config's integers: createModel's bound and words for a number; the same for text only a file can hold
    const ints = [['vocab', 'vocab'], ['d_model', 'dModel'], ['heads', 'heads'], ['layers', 'layers'], ['d_ff', 'dFF'], ['max_len', 'maxLen'], ['seed', 'seed']];
    for (const [key, option] of ints) {
      const words = errorOf(() => lib.createModel({ ...TINY, [option]: -1 })).match(/must be an integer in \[\d+, \d+\]/)[0];
      for (const text of ['-1', '1.5', '0x8', '', ' 8', '8 ', '+8', 'inf', '1e99'])
        expectSame(withMeta(bytes, (m) => { m[key] = text; }), key, text, `attention-wasm: createModel: ${option} ${words}, got ${text}`), checked++;
    }
    for (const [key, option] of [['positional', 'positional'], ['norm', 'norm'], ['arch', 'arch'], ['block', 'block'], ['norm_type', 'normType'], ['ffn', 'ffn']]) {
      expectSame(withMeta(bytes, (m) => { m[key] = 'nope'; }), key, 'nope', errorOf(() => lib.createModel({ ...TINY, [option]: 'nope' }))), checked++;
    }
    // every option of every form, at the top level (version 2) and as layer 1's (version 3)
    for (const f of causal)
      for (const o of f.options) {
        const bad = o.kind === 'int' ? [[o.min - 1, String(o.min - 1)], [o.max + 1, String(o.max + 1)], [null, '0x8'], [null, '']]
          : o.kind === 'bool' ? [] : o.kind === 'list' ? [[['nope'], 'nope']] : [['nope', 'nope']];
        const single = lib.createModel({ ...TINY, attention: f.name });
        const v2 = single.save();
        const mixed = lib.createModel({ ...TINY, layerForms: [{ attention: 'softmax' }, { attention: f.name }] });
        const v3 = mixed.save();
        for (const [value, text] of bad) {
          const words = value === null
            ? `attention-wasm: createModel: attentionOptions.${o.name} must be an integer in [${o.min}, ${o.max}], got ${text}`
            : errorOf(() => lib.createModel({ ...TINY, attention: f.name, attentionOptions: { [o.name]: value } }));
          if (text !== '' && !(text === '0' && o.min >= 1)) // version 2: "" and "0" below 1 are the first release's "unset"
            expectSame(withMeta(v2, (m) => { m[o.key] = text; }), o.key, text, words), checked++;
          const layerWords = value === null ? words
            : errorOf(() => lib.createModel({ ...TINY, layerForms: [{ attention: 'softmax' }, { attention: f.name, attentionOptions: { [o.name]: value } }] }));
          expectSame(withMeta(v3, (m) => { m[`layer.1.${o.key}`] = text; }), `layer.1.${o.key}`, text, layerWords), checked++;
        }
        if (o.kind === 'bool')
          expectError(() => lib.loadModel(withMeta(v3, (m) => { m[`layer.1.${o.key}`] = 'true'; })),
            new RegExp(`"layer\\.1\\.${escape(o.key)}" is "true": attentionOptions\\.${o.name} is stored as 1 \\(true\\) or 0 \\(false\\)`));
        single.dispose(), mixed.dispose();
      }
    t.diagnostic(`${checked} refused values, each with createModel's words`);
    assert.equal(base.forward([1, 2]).logits.length, 24); // still works
    assert.deepEqual(lib.loadModel(bytes).save(), bytes);
    base.dispose();
  });

  test(`entry points [${name}]: version-3 metadata: no layer past the model's, no option a layer's form does not take, no contradiction, no unknown key`, () => {
    const m = lib.createModel({ ...TINY, layerForms: [{ attention: 'local', attentionOptions: { window: 4 } }, { attention: 'kda' }] });
    const bytes = m.save();
    const bad = (edit, re) => expectError(() => lib.loadModel(withMeta(bytes, edit)), re);
    const P = /loadModel: the checkpoint's __metadata__ is not an attention-wasm model config: /.source;
    bad((x) => { x['layer.4.window'] = '4'; }, new RegExp(`${P}"layer\\.4\\.window" is for layer 4, and its model has 2 layers \\(layer\\.0 to layer\\.1\\)`));
    bad((x) => { x['layer.2.attention'] = 'softmax'; }, /"layer\.2\.attention" is for layer 2, and its model has 2 layers/);
    bad((x) => { x['layer.-1.window'] = '4'; }, /unknown key "layer\.-1\.window": per-layer keys are layer\.<l>\.attention and layer\.<l>\.<option> with l in \[0, 2\)/);
    bad((x) => { x['layer.01.window'] = '4'; }, /unknown key "layer\.01\.window"/);
    bad((x) => { x['layer.1.window'] = '4'; }, /"layer\.1\.window" is "4": attentionOptions\.window does not apply to attention "kda" \(it is an option of .*"local".*\); "kda" takes/);
    bad((x) => { x['layer.0.window'] = '0'; }, /"layer\.0\.window" is "0": attentionOptions\.window must be an integer in \[1, /);
    bad((x) => { x['layer.1.delta_chunk'] = ''; }, /"layer\.1\.delta_chunk" is "": attentionOptions\.chunk must be an integer in \[1, \d+\], got $/);
    bad((x) => { x['layer.1.nonsense'] = '1'; }, /unknown key "layer\.1\.nonsense" \(no form has an option stored as "nonsense"\)/);
    bad((x) => { x.attention = 'kda'; }, /"attention" is "kda" and "layer\.0\.attention" is "local": in a version-3 file the top-level attention is layer 0's/);
    bad((x) => { x.window = '8'; }, /"window" is "8" and "layer\.0\.window" is "4": in a version-3 file the top-level options are layer 0's/);
    bad((x) => { delete x.window; }, /"window" is missing and "layer\.0\.window" is "4"/);
    bad((x) => { delete x['layer.1.attention']; }, /it has no "layer\.1\.attention": a version-3 file names every layer's form/);
    bad((x) => { x.frobnicate = '1'; }, /it has an unknown key "frobnicate"/);
    bad((x) => { x.layers = 'x'; }, /"layers" is "x": layers must be an integer in \[1, 32\], got x/);
    bad((x) => { x.step = '-1'; }, /"step" is "-1", expected an integer in \[0, 2147483647\]/);
    bad((x) => { x.optimizer = 'sgd'; }, /"optimizer" is "sgd", expected "adamw"/);
    bad((x) => { x.bias = 'yes'; }, /"bias" is "yes": bias is stored as 1 \(true\) or 0 \(false\)/);
    // a version-2 file has no per-layer keys
    const one = lib.createModel(TINY);
    expectError(() => lib.loadModel(withMeta(one.save(), (x) => { x['layer.0.window'] = '4'; })), /unknown key "layer\.0\.window" \(per-layer keys are version 3's\)/);
    expectError(() => lib.loadModel(withMeta(one.save(), (x) => { x.window = '0x8'; })), /"window" is "0x8": attentionOptions\.window must be an integer in \[1, \d+\], got 0x8/);
    expectError(() => lib.loadModel(withMeta(one.save(), (x) => { x.delta_chunk = '8'; })), /"delta_chunk" is "8": attentionOptions\.chunk does not apply to attention "softmax"/);
    // a GRU reads no heads or dFF (a config made in C may hold any, kept as written), but they go through the same parser
    const gru = lib.createModel({ vocab: 12, dModel: 16, maxLen: 16, arch: 'gru' });
    const eight = withMeta(gru.save(), (x) => { x.heads = '8'; });
    assert.deepEqual(lib.loadModel(eight).save(), eight);
    expectError(() => lib.loadModel(withMeta(gru.save(), (x) => { x.heads = '0x8'; })), /"heads" is "0x8": heads must be an integer in \[1, 4096\], got 0x8/);
    expectError(() => lib.loadModel(withMeta(gru.save(), (x) => { x.tie_embeddings = 'yes'; })), /"tie_embeddings" is "yes": tieEmbeddings is stored as 1 \(true\) or 0 \(false\)/);
    assert.deepEqual(lib.loadModel(bytes).save(), bytes); // the file itself still loads
    m.dispose(), one.dispose(), gru.dispose();
  });

  test(`entry points [${name}]: tensors' data_offsets must tile the data: overlaps, gaps, trailing bytes, reversed or huge offsets, missing and extra tensors are named`, () => {
    const m = lib.createModel(TINY);
    const bytes = m.save();
    const { header, data } = splitFile(bytes);
    const names = Object.keys(header).filter((k) => k !== '__metadata__').sort((a, b) => header[a].data_offsets[0] - header[b].data_offsets[0]);
    const [first, second] = names, last = names[names.length - 1];
    const edit = (fn, extra = 0) => {
      const h = structuredClone(header);
      fn(h);
      const d = new Uint8Array(data.length + extra);
      d.set(data);
      return joinFile(h, d);
    };
    const bad = (file, re) => expectError(() => lib.loadModel(file), re);
    const [b1, e1] = header[second].data_offsets;
    bad(edit((h) => { h[second].data_offsets = [b1 - 4, e1 - 4]; }), new RegExp(`tensors "${escape(first)}" \\[0, ${b1}\\] and "${escape(second)}" \\[${b1 - 4}, ${e1 - 4}\\] overlap`));
    bad(edit((h) => { h[second].data_offsets = [0, e1 - b1]; }), /overlap: each tensor must have bytes of its own/);
    const [bl, el] = header[last].data_offsets;
    bad(edit((h) => { h[last].data_offsets = [bl + 4, el + 4]; }, 4), new RegExp(`tensor "${escape(last)}" begins at byte ${bl + 4}, and the bytes before it end at ${bl}: safetensors data has no gaps`));
    bad(edit(() => {}, 4), new RegExp(`the checkpoint has 4 bytes after its last tensor \\(the tensors end at byte ${el} of ${el + 4}\\)`));
    bad(edit((h) => { h[last].data_offsets = [bl, el + 4]; }), new RegExp(`tensor "${escape(last)}"'s data_offsets \\[${bl}, ${el + 4}\\] run past the end of the data \\(${el} bytes`));
    bad(edit((h) => { h[first].data_offsets = [8, 4]; }), new RegExp(`tensor "${escape(first)}"'s data_offsets \\[8, 4\\] end before they begin`));
    // valid JSON whose offsets are no byte count: negative, past 2^64, fractional, an exponent
    const entry = `"${first}":${JSON.stringify(header[first])}`;
    assert.ok(JSON.stringify(header).includes(entry));
    for (const off of ['-4', '18446744073709551616', '1.5', '1e3']) {
      const text = JSON.stringify(header).replace(entry, entry.replace('"data_offsets":[0,', `"data_offsets":[${off},`));
      JSON.parse(text); // still JSON
      const t = new TextEncoder().encode(text);
      const out = new Uint8Array(8 + t.length + data.length);
      new DataView(out.buffer).setBigUint64(0, BigInt(t.length), true);
      out.set(t, 8), out.set(data, 8 + t.length);
      bad(out, new RegExp(`tensor "${escape(first)}"'s data_offsets must be whole numbers in \\[0, \\d+\\] \\(byte counts\\), got ${escape(off)}`));
    }
    // missing and extra tensors, by name
    const { meta, tensors } = readSafetensors(bytes);
    const fewer = new Map(tensors);
    fewer.delete(second);
    bad(writeSafetensors(meta, fewer), new RegExp(`the checkpoint has no tensor "${escape(second)}", which its config's model has`));
    const more = new Map(tensors);
    more.set('blocks.9.attn.wq', { shape: [1], data: new Float32Array(1) });
    bad(writeSafetensors(meta, more), /the checkpoint has a tensor "blocks\.9\.attn\.wq" that its config's model does not have/);
    // the same bytes in another order of the header still tile: they load
    assert.deepEqual(lib.loadModel(joinFile(Object.fromEntries(Object.entries(header).reverse()), data)).forward([1, 2]).logits, m.forward([1, 2]).logits);
    m.dispose();
  });
}
