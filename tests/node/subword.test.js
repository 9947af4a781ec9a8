// subword.test.js: the shipped sub-word model (web/models/fortunes-bpe.safetensors) and its
// byte-level BPE (fortunes-bpe.tokenizer.json), issue 34. Its llama2.c pair (the "Open a model
// file" sample: model.saveLlama2c() and tokenizer.toLlama2c(), lab/llama2c-sample.js) reads back
// with the same ids (run.c's encoder, dummy prefix and all), the same logits and the same greedy
// text; Hugging Face's tokenizer gives the shipped tokenizer.json's ids on the held-out documents;
// its pieces spell any text back; and the learned panel's codec (lab/codec.js) labels, probes and
// finds the period of a phrase read twice. Its held-out bits per character are recomputed from the
// checkpoint by fortunes.test.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { builds } from './helpers.js';
import { SAMPLE, bpeSampleLlama2c } from '../../lab/llama2c-sample.js';
import { bpeCodec, tokenPeriod } from '../../lab/codec.js';
import { jumpBack } from '../../lab/heads.js';
import { FORTUNES, fortunesDocuments } from '../../scripts/fortunes.mjs';

const dir = new URL('../../web/models/', import.meta.url);
const catalog = JSON.parse(readFileSync(new URL('fortunes.json', dir), 'utf8'));
const entry = catalog.models.find((e) => e.tokenizer);
const json = JSON.parse(readFileSync(new URL(entry.tokenizer, dir), 'utf8'));
const checkpoint = readFileSync(new URL(entry.file, dir));

test('sub-word model: the catalogue names its tokenizer and the command that made both; it is the llama2.c sample', () => {
  assert.equal(entry.file, SAMPLE.source);
  assert.equal(entry.tokenizer, SAMPLE.tokenizer);
  assert.match(entry.command, /--vocab-size \d+ /, 'one command trains the tokenizer and the model');
  assert.match(entry.command, new RegExp(`--out web/models/${entry.file}$`));
  assert.ok(entry.bytes <= 3 * 2 ** 20, `${entry.bytes} bytes`);
  const { lib } = builds[0];
  const tok = lib.loadTokenizer(json);
  const m = lib.loadModel(checkpoint, { training: false });
  assert.ok(m.config.vocab >= tok.vocabSize, 'the model has a row for every piece');
  assert.equal(m.config.vocab, entry.config.vocab);
  m.dispose();
});

for (const { name, lib } of builds) {
  test(`sub-word model (${name}): its llama2.c pair reads back with run.c's ids, the same logits and the same generation`, (t) => {
    const pair = bpeSampleLlama2c(lib, checkpoint, json);
    const tok = lib.loadTokenizer(json);
    const opened = lib.loadLlama2c(pair.bin, { tokenizer: pair.tokenizer });
    const original = lib.loadModel(checkpoint, { training: false });
    try {
      for (const text of [SAMPLE.prompt, 'A fool and his money are soon parted.', 'Ünïcödé and 👋 too']) {
        const ids = opened.tokenizer.encode(text, { bos: false });
        assert.deepEqual([...ids], [...tok.encode(` ${text}`)], `run.c's encoder (dummy prefix " ") on ${JSON.stringify(text)}`);
        assert.equal(opened.tokenizer.decode(ids), ` ${text}`);
        const a = original.forward(ids).logits, b = opened.forward(ids).logits;
        let worst = 0;
        for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
        t.diagnostic(`${JSON.stringify(text)}: ${ids.length} ids, largest logit difference ${worst.toExponential(2)}`);
        assert.ok(worst <= 1e-5, `logits differ by ${worst}`);
      }
      const ids = opened.tokenizer.encode(SAMPLE.prompt, { bos: false });
      const g1 = [...original.generate(ids, { maxTokens: 24 })], g2 = [...opened.generate(ids, { maxTokens: 24 })];
      assert.deepEqual(g2, g1, 'greedy generation');
      t.diagnostic(`${JSON.stringify(SAMPLE.prompt)} -> ${JSON.stringify(tok.decode([...ids, ...g1]))}`);
    } finally {
      opened.dispose();
      original.dispose();
    }
  });
}

async function loadHF() {
  try {
    const req = createRequire(import.meta.url);
    return await import(pathToFileURL(req.resolve('@huggingface/tokenizers').replace(/tokenizers\.cjs$/, 'tokenizers.mjs')).href);
  } catch {
    return null;
  }
}

test("sub-word model: Hugging Face's tokenizer reads the shipped tokenizer.json and gives its ids on the held-out documents", async (t) => {
  const hf = await loadHF();
  assert.ok(hf, '@huggingface/tokenizers is not installed: npm ci installs it (a devDependency)');
  const { lib } = builds[0];
  const tok = lib.loadTokenizer(json);
  const theirs = new hf.Tokenizer(json, {});
  const have = existsSync(join(FORTUNES, 'fortunes'));
  // the held-out documents when Debian's fortunes is here, else the repository's own text
  const texts = have ? fortunesDocuments().held : readFileSync(new URL('../../data/chars.txt', import.meta.url), 'utf8').split('\n\n');
  let tokens = 0, chars = 0;
  for (const s of texts) {
    const ours = [...tok.encode(s)];
    assert.deepEqual(theirs.encode(s, { add_special_tokens: false }).ids, ours, JSON.stringify(s.slice(0, 60)));
    tokens += ours.length;
    chars += s.length;
  }
  t.diagnostic(`${texts.length} ${have ? 'held-out documents' : 'paragraphs of data/chars.txt'}: ${tokens} tokens, `
    + `${(chars / tokens).toFixed(3)} characters a token, every id the same`);
});

test('sub-word model: the learned panel\'s codec labels pieces, probes with merged pieces and finds a phrase read twice', () => {
  const { lib } = builds[0];
  const codec = bpeCodec(lib.loadTokenizer(json));
  const text = 'The old lamp, lit at dusk: "Ünïcödé" 👋\ttab';
  const { ids, texts, dropped } = codec.encode(text);
  assert.equal(texts.join(''), text, 'the pieces spell the text');
  assert.deepEqual(dropped, []);
  for (const id of ids) {
    const label = codec.label(id);
    assert.ok(label.length > 0 && !/[ \n\t]/.test(label), `label ${JSON.stringify(label)} of ${id}`);
  }
  assert.equal(codec.label(codec.encode(' ').ids[0]), '␣');
  assert.match(codec.label(codec.encode('👋').ids[0]), /^(<0x[0-9A-F]{2}>)+$|👋/, 'a part of a character shows its bytes');
  const probe = codec.probe();
  assert.equal(probe.length, 2 * catalog.probe.letters);
  assert.ok([...probe].every((id) => id >= 259 && id < codec.vocab), 'merged pieces only');
  assert.deepEqual([...probe.subarray(0, catalog.probe.letters)], [...probe.subarray(catalog.probe.letters)]);
  // the guided step's phrase twice fits the panel's pieces, and its period points each piece of the
  // second copy at the one after the same place in the first
  const twice = codec.twice('The quick brown fox jumps over the lazy dog near the river bank today', 32);
  const enc = codec.encode(twice).ids;
  assert.ok(enc.length <= 32, `${enc.length} pieces`);
  const p = codec.period(enc);
  assert.ok(p > 0, twice);
  for (let i = p + 1; i < enc.length; i++) assert.equal(enc[i], enc[i - p]);
  // jumpBack of an exact induction pattern on that period is 1
  const T = enc.length, w = new Float32Array(T * T);
  for (let i = 0; i < T; i++) w[i * T + (i >= p ? i - p + 1 : i)] = 1;
  assert.equal(jumpBack(w, T, p), 1);
  assert.equal(tokenPeriod([5, 6, 7, 8]), 0, 'no repeat, no period');
});
