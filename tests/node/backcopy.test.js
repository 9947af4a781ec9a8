// lab/backcopy.js: the bigram-backcopy letters the sink claims' second part trains on (Guo et al.
// 2024): every trigger letter is followed by the letter before it, every other letter by the chain,
// documents within their lengths in fortune(6)'s format, and a seed gives the same text. And the three
// one-head models trained on it that the attention-sinks panel ships.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { backcopyStream, backcopyText, LETTERS, TRIGGER_SHARE, TRIGGERS, triggerRows } from '../../lab/backcopy.js';
import { restingWeights } from '../../lab/heads.js';
import { builds } from './helpers.js';

const ROOT = new URL('../../', import.meta.url).pathname;

test('backcopy: after a trigger, the letter before it; a trigger never starts or follows a trigger', () => {
  const s = backcopyStream(5, 50_000);
  assert.equal(s.length, 50_000);
  assert.ok(!TRIGGERS.includes(s[0]));
  let triggers = 0;
  for (let i = 1; i < s.length; i++) {
    if (!TRIGGERS.includes(s[i])) continue;
    triggers++;
    assert.ok(!TRIGGERS.includes(s[i - 1]), `a trigger after a trigger at ${i}`);
    if (i + 1 < s.length) assert.equal(s[i + 1], s[i - 1], `the letter after the trigger at ${i}`);
  }
  // a trigger follows TRIGGER_SHARE of the letters that are not copies: about 0.12 / 1.12 of all
  const share = triggers / s.length, expected = TRIGGER_SHARE / (1 + TRIGGER_SHARE);
  assert.ok(Math.abs(share - expected) < 0.01, `trigger share ${share} vs ${expected}`);
  assert.ok([...s].every((c) => LETTERS.includes(c) || TRIGGERS.includes(c)));
});

test('backcopy: fortune(6) documents of minChars..maxChars, the same for a seed and not for another', () => {
  const t = backcopyText(3, { docs: 50, minChars: 40, maxChars: 60 });
  const docs = t.trimEnd().split('\n%\n');
  assert.equal(docs.length, 50);
  for (const d of docs) assert.ok(d.length >= 40 && d.length <= 60 && /^[a-z]+$/.test(d), d);
  assert.equal(backcopyText(3, { docs: 50, minChars: 40, maxChars: 60 }), t);
  assert.notEqual(backcopyText(4, { docs: 50, minChars: 40, maxChars: 60 }), t);
  assert.equal(backcopyStream(9, 100), backcopyStream(9, 300).slice(0, 100));
});

// docs/real-text.md's backcopy table: per-seed figures, seed 1 first ("0.274 ± 0.079 (0.360, 0.206, 0.257)")
function seed1(label) {
  const line = readFileSync(join(ROOT, 'docs/real-text.md'), 'utf8').split('\n').find((l) => l.startsWith(`| ${label} | 0.`) && l.split('|').length === 7);
  assert.ok(line, `docs/real-text.md: the backcopy table's row for ${label}`);
  const c = line.split('|').map((x) => x.trim()), first = (cell) => Number(/\(([-\d.]+),/.exec(cell)[1]);
  return { resting: first(c[2]), cost: first(c[5]) };
}

test('the attention-sinks panel\'s backcopy models: one head each, their switch, and seed 1\'s docs/real-text.md figures recomputed from the files', async () => {
  const { lib } = builds[0];
  const { backcopyInputs, readPastWindow } = await import('../../scripts/sink-measure.mjs');
  // as scripts/sink-claims.mjs measures: 256 fresh documents of 31 letters (seed 2), 4,096 letters of seed 3
  const { starts, texts: [{ tokens: stream }] } = backcopyInputs(lib, 32, 256, 4096), working = triggerRows(lib.charsTokenizer.encode);
  const got = {};
  for (const [id, label, option] of [['plain', 'plain softmax', null], ['gate', 'output gate', 'outputGate'], ['learned', 'learned sink', 'learnedSinks']]) {
    const m = lib.loadModel(readFileSync(join(ROOT, `web/models/sinks-backcopy-${id}.safetensors`)), { training: false });
    try {
      const o = m.config.attentionOptions ?? {};
      for (const k of ['outputGate', 'learnedSinks']) assert.equal(Boolean(o[k]), k === option, `${id}: ${k}`);
      assert.deepEqual([m.config.layers, m.config.heads, m.config.dFF, m.config.maxLen], [1, 1, 1, 32]);
      const w = restingWeights(m, starts, working), r = readPastWindow(m, stream, 16, 4);
      got[id] = { ...w, cost: r.window - r.kept };
      const row = seed1(label);
      assert.ok(Math.abs(w.resting - row.resting) < 0.0015, `${id}: resting weight ${w.resting} vs docs/real-text.md ${row.resting}`);
      assert.ok(Math.abs(got[id].cost - row.cost) < 0.0015, `${id}: eviction cost ${got[id].cost} vs docs/real-text.md ${row.cost}`);
    } finally {
      m.dispose();
    }
  }
  // what docs/real-text.md says: the plain and gated heads rest on the first token (an even spread gives 0.099)
  // far more where they rest than where they work; the learned sink's column takes the rest instead
  for (const id of ['plain', 'gate']) assert.ok(got[id].resting > 0.3 && got[id].resting > 3 * got[id].working, JSON.stringify(got[id]));
  assert.ok(got.learned.sink > 0.3 && got.learned.resting < 0.05, JSON.stringify(got.learned));
});
