// presets.test.js: the model panel's presets (lab/presets.js). Every preset builds with the library
// for every panel task, trains 20 steps with a finite, falling loss, and saves and loads to the same
// logits; bad tasks and ids are Errors naming what is wrong. The KV cache count (modelCache) is
// checked against hand counts for MHA, GQA, MQA, a window, MLA, Gated DeltaNet and a hybrid, from the
// configs the library fills in (model.config).
import test from 'node:test';
import assert from 'node:assert/strict';
import { PRESETS, cacheLine, layerCache, modelCache, presetById, taskTokens } from '../../lab/presets.js';
import { LIMITS } from '../../web/state.js';
import { TASKS, taskOptions } from '../../lab/tasks.js';
import { builds, expectError } from './helpers.js';

const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

for (const { name, lib } of builds) {
  const charsVocab = lib.charsTokenizer.vocab;

  test(`presets [${name}]: each builds for every panel task as its line says, trains 20 steps (finite, falling loss), saves and loads`, (t) => {
    assert.deepEqual(PRESETS.map((p) => p.label), ['Llama 2', 'Gemma 3', 'gpt-oss', 'Qwen3-Next', 'Kimi Linear', 'DeepSeek-V3']);
    for (const p of PRESETS) {
      assert.match(p.link.url, /^https:\/\/(arxiv\.org\/abs\/\d{4}\.\d{5}|huggingface\.co\/)/, `${p.id}: a paper or model card`);
      assert.ok(p.takes.length > 40 && p.link.title, `${p.id}: a line saying what it takes`);
      for (const task of LIMITS.tasks) {
        const spec = taskOptions({ task, mlen: 4 });
        const m = lib.createModel(p.config(spec, { charsVocab }));
        const c = m.config;
        assert.equal(c.block, 'llama', `${p.id} ${task}: the llama block`);
        const forms = c.layerForms?.map((f) => f.attention) ?? Array(c.layers).fill(c.attention);
        // the layer pattern of the real model, at this scale
        const expected = { llama2: ['softmax', 'softmax'], gemma3: [...Array(5).fill('softmax'), 'softmax'],
          'gpt-oss': Array(4).fill('softmax'), 'qwen3-next': ['gated-delta', 'gated-delta', 'gated-delta', 'softmax'],
          'kimi-linear': ['kda', 'kda', 'kda', 'mla'], 'deepseek-v3': ['mla', 'mla'] }[p.id];
        assert.deepEqual(forms, expected, `${p.id} ${task}: layers`);
        if (p.id === 'gemma3') {
          const w = c.layerForms.map((f) => f.attentionOptions.window ?? null);
          assert.deepEqual(w.map((x) => x !== null), [true, true, true, true, true, false], 'five local : one global');
          assert.ok(c.layerForms.every((f) => f.attentionOptions.qkNorm === true), 'QK-norm in every layer');
          assert.ok(c.layerForms.every((f) => !f.attentionOptions.softcap), "no soft-capping (Gemma 2's)");
          assert.equal(w[0], Math.max(2, Math.floor(taskTokens(spec) / 4)), 'the window scaled to the task');
        }
        if (p.id === 'gpt-oss') {
          assert.deepEqual(c.layerForms.map((f) => Boolean(f.attentionOptions.window)), [true, false, true, false], 'alternating');
          assert.ok(c.layerForms.every((f) => f.attentionOptions.learnedSinks === true), 'learned sinks in every layer');
        }
        if (p.id === 'qwen3-next') assert.equal(c.layerForms[3].attentionOptions.outputGate, true, 'the gated softmax layer');
        if (p.id === 'kimi-linear') assert.equal(c.layerForms[3].attentionOptions.ropeDim, 0, 'NoPE MLA');
        const batch = { ...spec, batchSize: 8, lr: 3e-3 };
        const losses = [];
        for (let s = 0; s < 20; s++) losses.push(m.trainStep(batch).loss);
        assert.ok(losses.every(Number.isFinite), `${p.id} ${task}: finite losses`);
        const head = (losses[0] + losses[1] + losses[2]) / 3, tail = (losses[17] + losses[18] + losses[19]) / 3;
        t.diagnostic(`${p.id} ${task}: ${m.parameterCount} parameters, loss ${head.toFixed(3)} -> ${tail.toFixed(3)} in 20 steps`);
        assert.ok(tail < head, `${p.id} ${task}: the loss falls (${head} -> ${tail})`);
        const back = lib.loadModel(m.save());
        const seq = Int32Array.from({ length: Math.min(taskTokens(spec), 12) }, (_, i) => 1 + (i % 9));
        assert.ok(same(back.forward(seq).logits, m.forward(seq).logits), `${p.id} ${task}: save and load give the same logits`);
        assert.deepEqual(back.config, c);
        back.dispose(), m.dispose();
      }
    }
  });
}

const lib = builds[0].lib;

test('presets: a task or id a preset cannot take is an Error naming it', () => {
  const p = presetById('gemma3');
  expectError(() => p.config({ task: 'parse', length: 4 }), /preset: task must be one of "copy", .*"chars", got "parse"/);
  expectError(() => p.config({ task: 'recall', length: 11 }), /preset: task length must be an integer in \[1, 10\] for "recall", got 11/);
  expectError(() => p.config({ task: 'reverse', length: 0 }), /task length must be an integer in \[1, 16\] for "reverse", got 0/);
  expectError(() => p.config({ task: 'chars', length: 32 }), /task "chars" reads characters: give charsVocab/);
  expectError(() => p.config(taskOptions({ task: 'copy', mlen: 4 }), { size: 'huge' }), /preset: size must be one of "tiny", "small", got "huge"/);
  expectError(() => presetById('gpt-5'), /preset must be "none" or one of "llama2", .*"deepseek-v3", got "gpt-5"/);
  assert.equal(presetById('none'), null);
  expectError(() => layerCache({ dModel: 16, heads: 2 }, 'synth:dense'), /cache: attention "synth:dense" is not counted here/);
  // every task of the panel fits every preset's maxLen; the longest sequence is translate's
  for (const task of Object.keys(TASKS)) assert.ok(taskTokens(taskOptions({ task, mlen: 99 })) <= 64, task);
});

test('presets: the KV cache per token by hand, for MHA, GQA, MQA, a window, MLA, Gated DeltaNet and a hybrid', (t) => {
  const small = { vocab: 11, dModel: 32, heads: 4, layers: 2, maxLen: 64, block: 'llama' }; // heads of 8
  const count = (extra) => {
    const m = lib.createModel({ ...small, ...extra });
    const c = m.config;
    m.dispose();
    return { c, cache: modelCache(c) };
  };
  const cases = [
    // [label, config, per token, fixed, floats at 3 tokens, floats at 64, kinds]
    ['MHA', {}, 2 * (2 * 4 * 8), 0, 3 * 128, 64 * 128, ['MHA', 'MHA']],
    ['GQA', { kvHeads: 2 }, 2 * (2 * 2 * 8), 0, 3 * 64, 64 * 64, ['GQA', 'GQA']],
    ['MQA', { kvHeads: 1 }, 2 * (2 * 1 * 8), 0, 3 * 32, 64 * 32, ['MQA', 'MQA']],
    // window 5: a layer holds at most 5 tokens' K and V
    ['window', { attention: 'softmax', attentionOptions: { window: 5 } }, 128, 0, 3 * 128, 5 * 128, ['MHA', 'MHA']],
    // the library's defaults, kvRank 8 and ropeDim 4 (docs/attention-forms.md 4d), from model.config
    ['MLA', { attention: 'mla', positional: 'none' }, 2 * (8 + 4), 0, 3 * 24, 64 * 24, ['MLA', 'MLA']],
    // one 8 x 8 state per head and layer, whatever the length
    ['gated-delta', { attention: 'gated-delta' }, 0, 2 * 4 * 8 * 8, 512, 512, ['state', 'state']],
    // a hybrid: a windowed softmax layer, a Gated DeltaNet layer, an MLA layer, a full softmax layer
    // (no kvHeads: MLA refuses it, its heads share one latent already)
    ['hybrid', { layers: 4, positional: 'none', layerForms: [{ attention: 'softmax', attentionOptions: { window: 4 } },
      { attention: 'gated-delta' }, { attention: 'mla', attentionOptions: { kvRank: 6, ropeDim: 2 } }, { attention: 'softmax' }] },
    64 + 0 + 8 + 64, 256, 3 * 64 + 256 + 3 * 8 + 3 * 64, 4 * 64 + 256 + 64 * 8 + 64 * 64, ['MHA', 'state', 'MLA', 'MHA']],
  ];
  for (const [label, extra, perToken, fixed, at3, at64, kinds] of cases) {
    const { c, cache } = count(extra);
    t.diagnostic(`${label}: ${cache.perToken} floats per token + ${cache.fixed} per sequence; ${cache.floats(64)} floats at 64 tokens`);
    assert.equal(cache.perToken, perToken, `${label}: per token`);
    assert.equal(cache.fixed, fixed, `${label}: per sequence`);
    assert.equal(cache.floats(3), at3, `${label}: at 3 tokens`);
    assert.equal(cache.floats(64), at64, `${label}: at 64 tokens`);
    assert.equal(cache.bytes(64), 4 * at64, `${label}: float32 bytes`);
    assert.deepEqual(cache.layers.map((l) => l.kind), kinds, `${label}: kinds`);
    assert.match(cacheLine(c), new RegExp(`${perToken} floats = ${4 * perToken} bytes per token.*At maxLen 64: ${at64} floats`), label);
  }
  // the presets' lines name their kinds
  const spec = taskOptions({ task: 'reverse', mlen: 6 });
  const lines = Object.fromEntries(PRESETS.map((p) => {
    const m = lib.createModel(p.config(spec));
    const line = cacheLine(m.config);
    m.dispose();
    return [p.id, line];
  }));
  for (const [id, line] of Object.entries(lines)) t.diagnostic(`${id}: ${line}`);
  assert.match(lines.llama2, /^KV cache \(GQA\): 64 floats = 256 bytes per token/);
  assert.match(lines.gemma3, /^KV cache \(GQA, 5 of 6 layers windowed\): 192 floats .* At maxLen 64: 2528 floats/); // 5 x 32 x 3 + 32 x 64
  assert.match(lines['gpt-oss'], /^KV cache \(MQA, 2 of 4 layers windowed\)/);
  assert.match(lines['qwen3-next'], /^KV cache \(a linear state \+ MQA\): 16 floats = 64 bytes per token \+ a fixed 768 floats/);
  assert.match(lines['kimi-linear'], /^KV cache \(a linear state \+ MLA\): 8 floats = 32 bytes per token \+ a fixed 768 floats/);
  assert.match(lines['deepseek-v3'], /^KV cache \(MLA\): 24 floats = 96 bytes per token/);
});

test("presets: the library's own generation state (model.generationBytes, counted in C) against the design's count", (t) => {
  const small = { vocab: 11, dModel: 32, heads: 4, layers: 2, block: 'llama' }; // heads of 8
  const both = (extra, maxLen = 64) => {
    const m = lib.createModel({ ...small, maxLen, ...extra });
    const r = { c: m.config, gen: m.generationBytes(), design: modelCache(m.config) };
    m.dispose();
    return r;
  };
  // MHA, GQA and MQA: generation keeps exactly the K/V heads' cache the design needs, maxLen rows
  for (const [label, extra, KH] of [['MHA', {}, 4], ['GQA', { kvHeads: 2 }, 2], ['MQA', { kvHeads: 1 }, 1]]) {
    const { gen, design } = both(extra);
    t.diagnostic(`${label}: generation ${JSON.stringify(gen)}, design ${design.bytes(64)}`);
    assert.deepEqual(gen.layers, [4 * 2 * 64 * KH * 8, 4 * 2 * 64 * KH * 8], label);
    assert.equal(gen.total, design.bytes(64), `${label}: the design's count is what C allocates`);
  }
  // a window layer: generation keeps a ring of 2 window rows of K and V (each position twice, so the
  // last `window` are always consecutive), the design only `window`; a window of half maxLen or more
  // keeps maxLen rows (a ring would save nothing)
  const win = both({ attentionOptions: { window: 5 } });
  assert.deepEqual(win.gen.layers, [4 * 2 * (2 * 5) * 32, 4 * 2 * (2 * 5) * 32]);
  assert.equal(win.design.bytes(64), 4 * 2 * 5 * 2 * 32);
  assert.deepEqual(both({ attentionOptions: { window: 32 } }).gen.layers, [4 * 2 * 64 * 32, 4 * 2 * 64 * 32]);
  // a switch on a GQA softmax: its step keeps the K/V heads' K and V only, as the design does; with a
  // window, a ring of 2 window rows of them
  const gqaNorm = both({ kvHeads: 2, attentionOptions: { qkNorm: true } });
  assert.deepEqual(gqaNorm.gen.layers, [4 * 2 * 64 * 2 * 8, 4 * 2 * 64 * 2 * 8]);
  assert.equal(gqaNorm.gen.total, gqaNorm.design.bytes(64), 'GQA with a switch on: the design\'s count is what C allocates');
  const gqaWin = both({ kvHeads: 1, attentionOptions: { window: 5, learnedSinks: true } });
  assert.deepEqual(gqaWin.gen.layers, [4 * 2 * (2 * 5) * 8, 4 * 2 * (2 * 5) * 8]);
  assert.equal(gqaWin.design.bytes(64), 4 * 2 * 5 * 2 * 8);
  // a recurrent state is per sequence: the same bytes at maxLen 32 and 64 (its step's scratch
  // included, so more than the design's heads x 8 x 8)
  for (const attention of ['gated-delta', 'kda', 'gla', 'linear:elu+1']) {
    const a = both({ attention }, 32), b = both({ attention }, 64);
    t.diagnostic(`${attention}: generation ${b.gen.layers[0]} bytes a layer, design ${4 * b.design.layers[0].fixed}`);
    assert.deepEqual(a.gen, b.gen, `${attention}: not per token`);
    assert.ok(b.gen.layers[0] >= 4 * b.design.layers[0].fixed, `${attention}: holds the state`);
  }
  // MLA: per token kvRank + ropeDim (the latent and the rope key) and one score per head (scratch)
  const mla = (maxLen) => both({ attention: 'mla', positional: 'none', attentionOptions: { kvRank: 6, ropeDim: 2 } }, maxLen);
  const m32 = mla(32), m64 = mla(64);
  assert.equal(m64.gen.total - m32.gen.total, 2 * 4 * 32 * (6 + 2 + 4), 'MLA grows by (kvRank + ropeDim + heads) floats a token and layer');
  assert.equal(m64.design.bytes(64) - m32.design.bytes(32), 2 * 4 * 32 * (6 + 2));
  // a hybrid: each layer its own kind; the GQA layer's is exact
  const hybrid = both({ layers: 3, kvHeads: 2, layerForms: [{ attention: 'gated-delta' }, { attention: 'softmax' }, { attention: 'kda' }] });
  assert.equal(hybrid.gen.layers[1], 4 * 2 * 64 * 2 * 8);
  assert.equal(hybrid.gen.total, hybrid.gen.layers.reduce((s, b) => s + b, 0));
  // the presets: what generation allocates, beside the design
  for (const p of PRESETS) {
    const m = lib.createModel(p.config(taskOptions({ task: 'reverse', mlen: 6 })));
    t.diagnostic(`${p.id}: generation allocates ${m.generationBytes().total} bytes at maxLen 64; the design needs ${modelCache(m.config).bytes(64)}`);
    m.dispose();
  }
  // not a decoder: an Error that says so
  const gru = lib.createModel({ vocab: 11, dModel: 16, arch: 'gru', layers: 1 });
  expectError(() => gru.generationBytes(), /generationBytes: counts a decoder's caches, and this model is arch "gru"/);
  gru.dispose();
});
