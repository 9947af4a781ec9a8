// tokenizer.test.js: charTokenizer round-trips any text (astral code points included), and its
// errors name the character or id and where it is.
import test from 'node:test';
import assert from 'node:assert/strict';
import { charTokenizer } from '../../wasm/index.js';
import { expectError } from './helpers.js';

test('charTokenizer: built from a text or given; encode and decode round-trip Unicode', () => {
  const text = 'Les 🐍 mangent des souris. Ωμέγα! 𝔸𝔹\n';
  const tok = charTokenizer({ text });
  assert.equal(tok.vocab, new Set(Array.from(text)).size);
  const ids = tok.encode(text);
  assert.ok(ids instanceof Int32Array && ids.length === Array.from(text).length, 'one id per code point (🐍 is one)');
  assert.equal(tok.decode(ids), text);
  assert.deepEqual([...tok.chars], [...tok.chars].sort((a, b) => a.codePointAt(0) - b.codePointAt(0)));
  const given = charTokenizer({ chars: 'abc ', unknown: ' ' });
  assert.deepEqual([...given.encode('cab z')], [2, 0, 1, 3, 3]);
  assert.equal(given.decode([0, 1, 2]), 'abc');
});

test('charTokenizer: clear errors', () => {
  const tok = charTokenizer({ text: 'abc' });
  expectError(() => tok.encode('abxc'), /charTokenizer.encode: "x" at position 2 is not in the vocabulary/);
  expectError(() => tok.decode([0, 3]), /charTokenizer.decode: ids\[1\] is 3, outside \[0, 3\)/);
  expectError(() => charTokenizer({}), /give exactly one of text .* or chars/);
  expectError(() => charTokenizer({ chars: 'aba' }), /chars lists "a" twice/);
  expectError(() => charTokenizer({ chars: ['ab'] }), /chars\[0\] must be one character/);
  expectError(() => charTokenizer({ text: 'ab', unknown: 'z' }), /unknown must be one of the vocabulary's characters/);
  expectError(() => charTokenizer({ text: '' }), /text must be a non-empty string/);
});
