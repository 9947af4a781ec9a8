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
