// tokenizer-panel.test.js: the logic of the tokenizer panel (web/views/tokenizer.js) that runs
// without a page: how a piece's bytes are shown (whole characters as themselves, a space as ␣, a
// newline as ↵, any byte of a character the piece holds only part of as <0xXX>), and which catalogue
// entry names the sub-word model's tokenizer. The panel itself: tests/browser/tokenizer.test.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { showPiece, subwordEntry } from '../../web/views/tokenizer.js';
import { builds } from './helpers.js';

const { lib } = builds[0];
const u8 = (...b) => Uint8Array.from(b);
const utf8 = (s) => new TextEncoder().encode(s);

test('tokenizer panel: a piece is shown with visible spaces and its split bytes as <0xXX>', () => {
  assert.equal(showPiece(utf8(' the')), '␣the');
  assert.equal(showPiece(utf8('\n')), '↵');
  assert.equal(showPiece(utf8('\t x')), '⇥␣x');
  assert.equal(showPiece(utf8(' café')), '␣café');
  assert.equal(showPiece(utf8('☕')), '☕');
  assert.equal(showPiece(utf8('👋🏽')), '👋🏽');
  // a character cut between pieces: each part's bytes
  assert.equal(showPiece(u8(0xe2, 0x98)), '<0xE2><0x98>');
  assert.equal(showPiece(u8(0x95)), '<0x95>');
  assert.equal(showPiece(u8(0x61, 0xc3)), 'a<0xC3>');
  // bytes that are never UTF-8 (an overlong form, a surrogate's encoding, 0xFF) and control bytes
  assert.equal(showPiece(u8(0xc0, 0x80)), '<0xC0><0x80>');
  assert.equal(showPiece(u8(0xed, 0xa0, 0x80)), '<0xED><0xA0><0x80>');
  assert.equal(showPiece(u8(0xff)), '<0xFF>');
  assert.equal(showPiece(u8(0x00, 0x07)), '<0x00><0x07>');
  // every piece of a tokenizer trained on mixed scripts shows: the whole characters spell the text
  const text = 'Ünïcödé café naïve façade. Ωμέγα λέξεις. Привет, мир. 日本語のテキスト. emoji 👋🏽 🐍! '.repeat(8);
  const tok = lib.trainTokenizer(text, { vocabSize: 400 });
  const shown = [...tok.encode(text)].map((id) => showPiece(tok.pieceBytes(id)));
  const joined = shown.join('');
  // decode the <0xXX> back to bytes and the markers back to spaces: the text's bytes again
  const back = [];
  for (const part of joined.split(/(<0x[0-9A-F]{2}>)/)) {
    if (/^<0x[0-9A-F]{2}>$/.test(part)) back.push(parseInt(part.slice(3, 5), 16));
    else back.push(...utf8(part.replaceAll('␣', ' ')));
  }
  assert.deepEqual(Uint8Array.from(back), utf8(text));
});

test('tokenizer panel: the sub-word model is the catalogue entry that names a tokenizer', () => {
  assert.equal(subwordEntry([null, { models: [{ file: 'a' }] }]), null);
  assert.equal(subwordEntry([{ models: [{ file: 'a', tokenizer: '' }] }]), null);
  const e = { file: 'fortunes-bpe.safetensors', tokenizer: 'fortunes-bpe.tokenizer.json' };
  assert.equal(subwordEntry([{ models: [{ file: 'a' }] }, { models: [{ file: 'b' }, e] }]), e);
});
