// scripts/backcopy.mjs: the bigram-backcopy letters the sink claims' second part trains on (Guo et al.
// 2024): every trigger letter is followed by the letter before it, every other letter by the chain,
// documents within their lengths in fortune(6)'s format, and a seed gives the same text.
import test from 'node:test';
import assert from 'node:assert/strict';
import { backcopyStream, backcopyText, LETTERS, TRIGGER_SHARE, TRIGGERS } from '../../scripts/backcopy.mjs';

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
