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
