// bpe.test.js: the byte-level BPE (src/model/bpe.c, wasm/bpe.js). Known answers worked by hand;
// exact round trips on random bytes, Unicode and real text; merges that never cross GPT-2's
// pre-token boundaries (checked against this Node's own RegExp); the same merges from both builds
// and every run; its two files read back; Hugging Face's JavaScript tokenizer giving the same ids
// on its tokenizer.json (@huggingface/tokenizers, a devDependency);
// llama2.c's encoder (wasm/llama2c.js, which mirrors run.c) giving the same ids on its tokenizer.bin;
// and errors that name the argument.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { builds, expectError } from './helpers.js';
import { llama2cTokenizer } from '../../wasm/llama2c.js';
import { FORTUNES, fortunesDocuments } from '../../scripts/fortunes.mjs';

const { lib } = builds[0];

// Hugging Face's JavaScript tokenizer: the package, or HF_TOKENIZERS (a folder where it is installed,
// e.g. npm install --prefix /tmp/hf @huggingface/tokenizers gives HF_TOKENIZERS=/tmp/hf).
async function loadHF() {
  const where = process.env.HF_TOKENIZERS;
  try {
    const req = createRequire(where ? join(where, 'node_modules', 'x.js') : import.meta.url);
    const path = req.resolve('@huggingface/tokenizers').replace(/tokenizers\.cjs$/, 'tokenizers.mjs');
    return await import(pathToFileURL(path).href);
  } catch {
    return null;
  }
}
const hf = await loadHF();
// a devDependency, so npm ci installs it: missing, the test fails (it says what to run) rather than skip
const hfMissing = '@huggingface/tokenizers is not installed: npm ci installs it (a devDependency); or npm install --prefix /tmp/hf @huggingface/tokenizers and HF_TOKENIZERS=/tmp/hf';

const CHARS = readFileSync(new URL('../../data/chars.txt', import.meta.url), 'utf8');
const haveFortunes = existsSync(join(FORTUNES, 'fortunes'));
const fortunes = haveFortunes ? fortunesDocuments() : null;
// the training text: the fortunes' training documents when installed, else data/chars.txt
const TRAIN = fortunes ? fortunes.train.join('\n\n') : CHARS;
const HELD = fortunes ? fortunes.held : CHARS.split('\n\n');
const tok1024 = lib.trainTokenizer(TRAIN, { vocabSize: 1024 });

// Texts that stress the pre-tokenizer: Unicode letters and numbers, emoji (astral, joined, with
// modifiers), runs of white space of every kind, contractions, digits, punctuation runs.
const VARIED = [
  'Hello, world!', '  leading spaces', 'trailing spaces   ', 'tabs\tand\t\ttabs', 'new\nlines\n\n\nand\r\nCRLF',
  "It's, we're, they've, I'm, you'll, he'd, don't", "'tis the season; rock 'n' roll", 'x  y   z    w',
  'numbers 12345 and 3.14159 and 1,000,000', '½ ¾ Ⅻ ٣ ௮', 'Ünïcödé café naïve façade', 'Ωμέγα λέξεις', 'Привет, мир',
  '日本語のテキスト', '한국어 텍스트', 'emoji 👋🏽 🇫🇷 👨‍👩‍👧 🐍!', '---===***!!!???', '  \n \t\u00a0\u3000x', 'a', ' ', '\n',
  'mixed123abc!!def', '"quoted" (parens) [brackets] {braces}', 'e-mail: someone@example.com, https://x.y/z?q=1',
];

// llama2.c's tokenizer.bin of these pieces (Uint8Array each), scores 0.
function writeBin(pieces) {
  const out = new Uint8Array(4 + pieces.reduce((n, p) => n + 8 + p.length, 0)), dv = new DataView(out.buffer);
  dv.setInt32(0, 64, true);
  let at = 4;
  for (const p of pieces) dv.setInt32(at + 4, p.length, true), out.set(p, at + 8), at += 8 + p.length;
  return out;
}

function randomBytes(n, seed) {
  let s = seed >>> 0 || 1;
  return Uint8Array.from({ length: n }, () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s & 255; });
}

test('bpe: known answers worked by hand', () => {
  // "aaabdaaabac" is one pre-token. Counts: aa 4, ab 2, ... -> "aa" (259); then (aa, a) and (a, b)
  // tie at 2 and the smaller left id wins: a (100) before aa (259) -> "ab" (260); then (aa, ab) 2 -> "aaab" (261)
  const t = lib.trainTokenizer('aaabdaaabac', { vocabSize: 262 });
  const a = 3 + 97, b = a + 1, c = a + 2, d = a + 3;
  assert.deepEqual(t.merges.map((m) => [...m]), [[a, a, 259], [a, b, 260], [259, 260, 261]]);
  assert.deepEqual([...t.encode('aaabdaaabac')], [261, d, 261, a, c]);
  assert.deepEqual(t.pieces.slice(259), ['aa', 'ab', 'aaab']);
  assert.equal(t.vocabSize, 262);
  // leftmost first on overlaps: "aaa" is aa a
  assert.deepEqual([...t.encode('aaa')], [259, a]);
  // "ab ab ab" is "ab" " ab" " ab": (a, b) 3 -> 259; (" ", ab) 2 -> " ab"; (b, " ") is never counted
  const u = lib.trainTokenizer('ab ab ab', { vocabSize: 300 });
  assert.deepEqual(u.pieces.slice(259), ['ab', 'Ġab']);
  assert.equal(u.vocabSize, 261, 'the text ran out of pairs: fewer pieces than asked');
  assert.deepEqual([...u.encode('ab ab')], [259, 260]);
  assert.deepEqual([...u.encode('abab')], [259, 259]);
  // no pair inside a pre-token, no merge: letters and punctuation alternate
  assert.equal(lib.trainTokenizer('a.b,c;d:e!f?g', { vocabSize: 400 }).vocabSize, 259);
  // the specials and bytes: ids 0..2 and 3..258
  assert.deepEqual(u.pieces.slice(0, 3), ['<unk>', '<s>', '</s>']);
  assert.deepEqual([...u.encode(' \n')], [3 + 32, 3 + 10]);
  assert.equal(u.pieces[3 + 32], 'Ġ');
  assert.equal(u.decode([0, 1, 2]), '<unk><s></s>');
});

test('bpe: decode is the exact inverse of encode (random bytes, Unicode, real text)', (t) => {
  for (let seed = 1; seed <= 20; seed++) {
    const bytes = randomBytes(1 + seed * 97, seed);
    const ids = tok1024.encode(bytes);
    assert.deepEqual(tok1024.decodeBytes(ids), bytes, `random bytes, seed ${seed}`);
  }
  for (const s of VARIED) assert.equal(tok1024.decode(tok1024.encode(s)), s, JSON.stringify(s));
  let chars = 0, tokens = 0;
  for (const doc of HELD) {
    const ids = tok1024.encode(doc);
    assert.equal(tok1024.decode(ids), doc);
    chars += doc.length, tokens += ids.length;
  }
  t.diagnostic(`held-out text: ${chars} characters in ${tokens} tokens (${(chars / tokens).toFixed(3)} characters a token, vocab 1024)`);
  assert.ok(tokens < chars / 2, 'the merges shorten real text');
  // a random tokenizer's own pieces decode to their bytes
  for (let id = 0; id < tok1024.vocabSize; id += 37) assert.equal(tok1024.decodeBytes([id]).length, tok1024.pieceBytes(id).length);
  assert.equal(tok1024.encode('').length, 0);
});

test("bpe: merges never cross the pre-tokens of GPT-2's pattern (this Node's RegExp)", () => {
  const re = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
  const enc = new TextEncoder();
  const texts = [...VARIED, VARIED.join(' '), ...HELD.slice(0, 200)];
  const tok = lib.trainTokenizer(texts.join('\n'), { vocabSize: 2048 });
  let checked = 0;
  for (const s of texts) {
    const bounds = new Set([0]);
    let at = 0;
    for (const m of s.matchAll(re)) bounds.add(at += enc.encode(m[0]).length);
    const ids = tok.encode(s);
    let pos = 0;
    for (const id of ids) {
      const len = tok.pieceBytes(id).length;
      // inside the piece there is no pre-token boundary
      for (let k = pos + 1; k < pos + len; k++) assert.ok(!bounds.has(k), `${JSON.stringify(s)}: piece ${JSON.stringify(tok.pieces[id])} crosses a boundary`);
      pos += len, checked++;
    }
    assert.ok(bounds.has(pos));
  }
  assert.ok(checked > 1000);
});

test('bpe: a text without spaces (one long pre-token, as Chinese is) trains and round-trips', () => {
  let seed = 7;
  const next = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed / 2 ** 32; };
  const text = Array.from({ length: 60000 }, () => String.fromCodePoint(0x4e00 + Math.floor(-300 * Math.log(1 - next())) % 5000)).join('');
  const tok = lib.trainTokenizer(text, { vocabSize: 2048 });
  assert.equal(tok.vocabSize, 2048);
  const ids = tok.encode(text);
  assert.equal(tok.decode(ids), text);
  assert.ok(ids.length < text.length, `${ids.length} tokens for ${text.length} characters`);
  if (hf) assert.deepEqual(new hf.Tokenizer(tok.toJSON(), {}).encode(text.slice(0, 5000), { add_special_tokens: false }).ids, [...tok.encode(text.slice(0, 5000))]);
});

test('bpe: training is deterministic, the same in both builds, and each piece has one id', () => {
  const again = builds[1].lib.trainTokenizer(TRAIN, { vocabSize: 1024 });
  assert.deepEqual(again.merges, tok1024.merges, 'scalar build and a second run: the same merges');
  assert.equal(new Set(tok1024.pieces).size, tok1024.vocabSize, 'no two ids share a piece');
  // the pieces that would let llama2.c's run.c merge across pre-tokens are never made (bpe.c, piece_allowed)
  let spaces = 0;
  for (let id = 259; id < tok1024.vocabSize; id++) {
    const text = new TextDecoder().decode(tok1024.pieceBytes(id));
    assert.ok(!/^\s{2,}$/u.test(text), `no piece of two or more white-space characters: ${JSON.stringify(text)}`);
    assert.ok(!/'\p{L}/u.test(text), `no apostrophe before a letter: ${JSON.stringify(text)}`);
    spaces += /^ \p{L}/u.test(text);
  }
  assert.ok(spaces > 100, 'many pieces are words with their leading space');
});

test('bpe: tokenizer.json and tokenizer.bin read back to the same tokenizer', () => {
  const json = tok1024.toJSON();
  const forms = [json, JSON.stringify(json), new TextEncoder().encode(JSON.stringify(json)), tok1024.toLlama2c(),
    tok1024.toLlama2c().buffer];
  for (const [i, f] of forms.entries()) {
    const back = lib.loadTokenizer(f);
    assert.equal(back.vocabSize, tok1024.vocabSize, `form ${i}`);
    assert.deepEqual(back.pieces, tok1024.pieces, `form ${i}: pieces`);
    assert.deepEqual(back.merges, tok1024.merges, `form ${i}: merges`);
    for (const s of VARIED) assert.deepEqual(back.encode(s), tok1024.encode(s));
    assert.deepEqual(back.toLlama2c(), tok1024.toLlama2c());
  }
  assert.equal(json.model.type, 'BPE');
  assert.equal(json.model.merges.length, tok1024.vocabSize - 259);
  assert.equal(json.model.vocab['Ġthe'] > 258, true, 'a common piece: " the"');
  // a byte-level BPE from elsewhere, ids in another order (GPT-2's layout: the bytes first): read, encoded, not a llama2.c file
  const gpt2 = { ...json, model: { ...json.model, vocab: {} } };
  const order = [...tok1024.pieces.slice(3, 259), ...tok1024.pieces.slice(259), ...tok1024.pieces.slice(0, 3)];
  order.forEach((p, id) => { gpt2.model.vocab[p] = id; });
  const other = lib.loadTokenizer(gpt2);
  const s = VARIED.join(' ');
  assert.deepEqual([...other.encode(s)].map((id) => other.pieces[id]), [...tok1024.encode(s)].map((id) => tok1024.pieces[id]));
  expectError(() => other.toLlama2c(), /toLlama2c: this tokenizer's ids are not in llama2.c's layout/);
});

test('bpe: bad inputs are Errors naming the argument and the range', () => {
  expectError(() => lib.trainTokenizer('abc', { vocabSize: 100 }), /trainTokenizer: vocabSize is 100, outside \[259, 8192\]/);
  expectError(() => lib.trainTokenizer('abc', { vocabSize: 8193 }), /vocabSize is 8193, outside \[259, 8192\]/);
  expectError(() => lib.trainTokenizer('abc', { vocabSize: 300.5 }), /trainTokenizer: vocabSize must be an integer, got 300.5/);
  expectError(() => lib.trainTokenizer('abc', { vocabSize: '300' }), /vocabSize must be an integer, got "300"/);
  expectError(() => lib.trainTokenizer('', { vocabSize: 300 }), /trainTokenizer: text is empty/);
  expectError(() => lib.trainTokenizer(42), /trainTokenizer: text must be a string or a Uint8Array of bytes, got 42/);
  expectError(() => lib.trainTokenizer('abc', { vocab: 300 }), /unknown option "vocab"/);
  expectError(() => tok1024.decode([5, 1024]), /tokenizer.decode: ids\[1\] is 1024, outside \[0, 1024\)/);
  expectError(() => tok1024.decode([-1]), /ids\[0\] is -1, outside/);
  expectError(() => tok1024.decode('abc'), /ids must be an array of token ids/);
  expectError(() => tok1024.encode(null), /tokenizer.encode: text must be a string or a Uint8Array/);
  const json = tok1024.toJSON();
  const edit = (f) => { const j = JSON.parse(JSON.stringify(json)); f(j); return j; };
  expectError(() => lib.loadTokenizer(edit((j) => { j.model.type = 'WordPiece'; })), /model.type is "WordPiece"; expected "BPE"/);
  expectError(() => lib.loadTokenizer(edit((j) => { j.model.merges[5] = 'Ġthe zzz'; })), /model.merges\[5\] names "zzz", which is not in model.vocab/);
  expectError(() => lib.loadTokenizer(edit((j) => { delete j.model.vocab[j.model.merges[7].replace(' ', '')]; })),
    /model.vocab gives|ids must be 0..|joins to/);
  expectError(() => lib.loadTokenizer(edit((j) => { j.pre_tokenizer = { type: 'Whitespace' }; })), /expected a ByteLevel pre-tokenizer/);
  expectError(() => lib.loadTokenizer(edit((j) => { j.pre_tokenizer.add_prefix_space = true; })), /add_prefix_space is true/);
  expectError(() => lib.loadTokenizer(edit((j) => { delete j.model.vocab['Ā']; })), /ids must be 0..|no piece for byte 0/);
  expectError(() => lib.loadTokenizer(edit((j) => { j.model.merges.push(j.model.merges[0]); })), /repeats the merge/);
  expectError(() => lib.loadTokenizer('{"model": '), /loadTokenizer: the text is not JSON/);
  expectError(() => lib.loadTokenizer(42), /loadTokenizer: source must be a tokenizer.json .* or tokenizer.bin bytes, got 42/);
  const bin = tok1024.toLlama2c();
  expectError(() => lib.loadTokenizer(bin.slice(0, bin.length - 3)), /piece 1023 has length \d+, past the end of the file/);
  const specials = ['<unk>', '\n<s>\n', '\n</s>\n'].map((p) => new TextEncoder().encode(p));
  const bytes = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
  expectError(() => lib.loadTokenizer(writeBin([...specials, ...bytes.slice(0, 100)])), /holds 103 pieces; a byte-level BPE's has at least 259/);
  expectError(() => lib.loadTokenizer(writeBin([...specials, ...bytes, Uint8Array.of(97, 98, 99)])),
    /loadTokenizer \(tokenizer.bin\): piece 259 \(3 bytes\) is not two earlier pieces joined: its bytes encode to 3 pieces/);
  expectError(() => lib.loadTokenizer(writeBin([...specials, ...bytes.slice(0, 255), Uint8Array.of(1, 2)])),
    /piece 258 should be the single byte 0xff/);
  assert.equal(lib.loadTokenizer(writeBin([...specials, ...bytes, Uint8Array.of(97, 98)])).vocabSize, 260);
});

test("bpe: Hugging Face's tokenizer reads toJSON() and gives the same ids", (t) => {
  assert.ok(hf, hfMissing);
  for (const tok of [tok1024, lib.trainTokenizer(TRAIN, { vocabSize: 4096 }), lib.trainTokenizer(VARIED.join('\n'), { vocabSize: 400 })]) {
    const theirs = new hf.Tokenizer(tok.toJSON(), {});
    const texts = [...VARIED, VARIED.join(' '), ...HELD];
    let tokens = 0;
    for (const s of texts) {
      const ours = [...tok.encode(s)];
      assert.deepEqual(theirs.encode(s, { add_special_tokens: false }).ids, ours, `vocab ${tok.vocabSize}: ${JSON.stringify(s.slice(0, 60))}`);
      assert.equal(theirs.decode(ours, { clean_up_tokenization_spaces: false }), s);
      tokens += ours.length;
    }
    t.diagnostic(`vocab ${tok.vocabSize}: ${texts.length} texts, ${tokens} tokens, every id the same`);
  }
});

test('bpe: corrupted files are an Error or a tokenizer, never a trap, and the library keeps working', () => {
  const small = lib.trainTokenizer(VARIED.join('\n'), { vocabSize: 320 });
  const bin = small.toLlama2c(), json = JSON.stringify(small.toJSON());
  let loaded = 0, refused = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const r = randomBytes(8, seed);
    let input;
    if (seed % 2) { // a few bytes of the .bin changed
      input = bin.slice();
      for (let k = 0; k < 1 + (r[0] & 3); k++) input[(r[1 + k] * 65537 + seed * 7919) % input.length] = r[5 + (k & 1)];
    } else { // a piece of the JSON's text changed
      const at = (r[0] * 256 + r[1]) * 7 % json.length;
      input = json.slice(0, at) + String.fromCharCode(32 + (r[2] % 90)) + json.slice(at + 1 + (r[3] & 1));
    }
    try {
      const t = lib.loadTokenizer(input);
      assert.equal(t.decode(t.encode('a test, 42!')), 'a test, 42!');
      loaded++;
    } catch (e) {
      assert.ok(e instanceof Error && !(e instanceof WebAssembly.RuntimeError), String(e));
      assert.match(e.message, /^attention-wasm: loadTokenizer/);
      refused++;
    }
  }
  assert.ok(loaded > 0 && refused > 0, `${loaded} loaded, ${refused} refused`);
  assert.deepEqual(lib.loadTokenizer(bin).encode('a test'), small.encode('a test'));
});

// A contraction followed by more letters ("saw'st", "'tis", "C'mon"): GPT-2's pattern cuts the letters
// there and run.c does not, the one case where the two encoders may differ (docs/tokenizers.md).
const CONTRACTION_THEN_LETTER = /'(?:s|t|re|ve|m|ll|d)\p{L}/u;

test("bpe: llama2.c's encoder (run.c's, wasm/llama2c.js) reads toLlama2c() and gives the same ids", (t) => {
  for (const tok of [tok1024, lib.trainTokenizer(TRAIN, { vocabSize: 4096 })]) {
    const l2 = llama2cTokenizer(tok.toLlama2c(), tok.vocabSize);
    const texts = [...VARIED, VARIED.join(' '), ...HELD];
    let same = 0, skipped = 0;
    for (const s of texts) {
      if (CONTRACTION_THEN_LETTER.test(s)) { skipped++; continue; }
      // run.c puts a space before the text (sentencepiece's dummy prefix): ours encodes " " + text
      assert.deepEqual([...l2.encode(s, { bos: false })], [...tok.encode(` ${s}`)], `vocab ${tok.vocabSize}: ${JSON.stringify(s.slice(0, 60))}`);
      assert.equal(l2.decode(tok.encode(` ${s}`)), ` ${s}`);
      same++;
    }
    t.diagnostic(`vocab ${tok.vocabSize}: ${same} texts encode the same; ${skipped} with a contraction followed by letters not compared`);
    assert.ok(skipped <= texts.length / 100 + 2);
  }
  // the pair a model and its tokenizer make in llama2.c's files: same vocab, the tokens read back
  const model = lib.createModel({ vocab: tok1024.vocabSize, dModel: 16, heads: 2, layers: 1, maxLen: 32, block: 'llama' });
  const m = lib.loadLlama2c(model.saveLlama2c(), { tokenizer: tok1024.toLlama2c() });
  const s = 'The quick brown fox jumps over the lazy dog.';
  assert.deepEqual([...m.tokenizer.encode(s, { bos: true })], [1, ...tok1024.encode(` ${s}`)]);
  model.dispose(), m.dispose();
});

test('bpe: encode(text, { merges: k }) is the tokenizer after its first k merges', (t) => {
  // the hand-worked tokenizer: 0 merges, then aa, then ab, then aaab
  const hand = lib.trainTokenizer('aaabdaaabac', { vocabSize: 262 });
  const a = 3 + 97, b = a + 1, c = a + 2, d = a + 3;
  assert.deepEqual([...hand.encode('aaabdaaabac', { merges: 0 })], [...new TextEncoder().encode('aaabdaaabac')].map((x) => x + 3));
  assert.deepEqual([...hand.encode('aaabdaaabac', { merges: 1 })], [259, a, b, d, 259, a, b, a, c]);
  assert.deepEqual([...hand.encode('aaabdaaabac', { merges: 2 })], [259, 260, d, 259, 260, a, c]);
  assert.deepEqual([...hand.encode('aaabdaaabac', { merges: 3 })], [...hand.encode('aaabdaaabac')]);
  // k = every merge is plain encode; k = 0 is one id per byte (byte + 3), on every kind of text
  const full = tok1024.merges.length;
  assert.equal(full, tok1024.vocabSize - 259);
  for (const s of [...VARIED, ...HELD.slice(0, 50)]) {
    assert.deepEqual(tok1024.encode(s, { merges: full }), tok1024.encode(s), JSON.stringify(s.slice(0, 40)));
    assert.deepEqual([...tok1024.encode(s, { merges: 0 })], [...new TextEncoder().encode(s)].map((x) => x + 3));
  }
  // on real text, at every k: the count never grows as k does, and decode gives the text back
  const text = HELD.join('\n\n').slice(0, 12000);
  let prev = Infinity, drops = 0;
  const counts = [];
  for (let k = 0; k <= full; k++) {
    const ids = tok1024.encode(text, { merges: k });
    assert.ok(ids.length <= prev, `merges ${k}: ${ids.length} tokens, more than the ${prev} of merges ${k - 1}`);
    drops += ids.length < prev;
    assert.ok(ids.every((id) => id < 259 + k), `merges ${k}: only pieces made by the first ${k} merges`);
    if (k % 50 === 0 || k === full) assert.equal(tok1024.decode(ids), text, `decode at merges ${k}`);
    if (k % 100 === 0 || k === full) counts.push(`${k}: ${ids.length}`);
    prev = ids.length;
  }
  t.diagnostic(`${text.length} characters of held-out text, tokens after k merges: ${counts.join(', ')}`);
  assert.equal(prev, tok1024.encode(text).length);
  assert.ok(drops > full / 2, `most merges shorten the held-out text (${drops} of ${full})`);
  // the scalar build agrees
  const other = builds[1].lib.loadTokenizer(tok1024.toJSON());
  for (const k of [0, 1, 17, 300, full]) assert.deepEqual(other.encode(text, { merges: k }), tok1024.encode(text, { merges: k }), `scalar, merges ${k}`);
  // bad k: an Error naming merges and the range, never a trap; the tokenizer keeps working
  expectError(() => tok1024.encode('abc', { merges: full + 1 }), new RegExp(`tokenizer.encode: merges is ${full + 1}, outside \\[0, ${full}\\]`));
  expectError(() => tok1024.encode('abc', { merges: -1 }), new RegExp(`merges is -1, outside \\[0, ${full}\\]`));
  expectError(() => tok1024.encode('', { merges: -1 }), /merges is -1, outside/);
  expectError(() => tok1024.encode('abc', { merges: 2.5 }), /tokenizer.encode: merges must be an integer .*got 2.5/);
  expectError(() => tok1024.encode('abc', { merges: '3' }), /merges must be an integer .*got "3"/);
  expectError(() => tok1024.encode('abc', { merge: 3 }), /tokenizer.encode: unknown option "merge"/);
  assert.equal(tok1024.decode(tok1024.encode('still works')), 'still works');
});
