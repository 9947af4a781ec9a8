// llama2c.test.js: "Open a model file". A llama2.c model and tokenizer made here (a library model
// with grouped-query heads, saved with saveLlama2c; a tokenizer from writeLlama2cTokenizer) are
// given to the page's file input; the page must load them, encode the text with that tokenizer,
// generate the very tokens Node generates from the same file, and draw every head of a layer with
// the sub-word tokens as labels and the shared K/V heads named. Waits on the panel's DOM state.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { playgroundSuite, screenshot } from './helpers.js';

const { open } = playgroundSuite({ before, after });

test('open a model file: a llama2.c model and tokenizer run in the page as in Node', async (t) => {
  const lib = await loadAttention();
  const pieces = ['<unk>', '\n<s>\n', '\n</s>\n', ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`),
    ' ', ...'abcdefghijklmnopqrstuvwxyz.,!'.split(''), 'th', 'he', ' t', ' a', 'the', ' the', 'an', 'nd', ' and', 'in', 'ing', 'ce', 'on', 'ne', 'Once', 'O'];
  const m = lib.createModel({ vocab: pieces.length, dModel: 32, heads: 4, kvHeads: 2, layers: 2, maxLen: 64, block: 'llama', seed: 4 });
  const rows = Array.from({ length: 4 }, (_, r) => Array.from({ length: 24 }, (_, j) => 259 + ((r + j * 5) % 40)));
  for (let s = 0; s < 30; s++) m.trainStep({ inputs: rows, targets: rows.map((x) => x.map((v) => 259 + ((v - 259 + 1) % 40))), lr: 5e-3 });
  const bin = m.saveLlama2c();
  const tok = lib.writeLlama2cTokenizer(pieces, pieces.map((p, i) => (i < 259 ? 0 : p.length * 10 - i * 1e-3)));
  const text = 'Once upon a time, the cat and the hen';
  const node = lib.loadLlama2c(bin, { tokenizer: tok });
  const prompt = node.tokenizer.encode(text);
  const expected = [...node.generate(prompt, { maxTokens: 8, stop: 1 })];

  const { page, problems } = await open();
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: 300000 });
  await page.setInputFiles('#l2files', [
    { name: 'tiny.bin', mimeType: 'application/octet-stream', buffer: Buffer.from(bin) },
    { name: 'tokenizer.bin', mimeType: 'application/octet-stream', buffer: Buffer.from(tok) },
  ]);
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: 120000 });
  const status = await page.textContent('#l2status');
  t.diagnostic(status);
  assert.match(status, /Loaded in \d+ ms: dim 32, 2 layers, 4 heads \(2 K\/V heads, each shared by 2 query heads\), vocab \d+, up to 64 tokens/);
  assert.deepEqual(await page.$$eval('#l2layer option', (os) => os.map((o) => o.textContent)), ['layer 1', 'layer 2']);
  await page.fill('#l2text', text);
  await page.selectOption('#l2count', '8');
  await page.click('#l2generate');
  await page.waitForSelector('#llama2c[data-done]', { timeout: 120000 });
  const got = JSON.parse(await page.getAttribute('#llama2c', 'data-tokens'));
  assert.deepEqual(got, expected, 'the page generates what Node generates');
  const output = await page.textContent('#l2output');
  assert.equal(output, node.tokenizer.decode([...prompt, ...expected]));
  assert.ok(output.startsWith(text));
  const titles = await page.$$eval('#l2heatmaps figcaption', (cs) => cs.map((c) => c.textContent));
  t.diagnostic(titles.join(' | '));
  assert.equal(titles.length, 4);
  assert.match(titles[1], /layer 1, head 2: (previous token|induction|duplicate token|first token|local|spread) \d\.\d\d \(K\/V head 1, shared with heads 1–2\)/);
  await page.click('#l2probe');
  await page.waitForSelector('#llama2c[data-probe]', { timeout: 60000 });
  const probe = JSON.parse(await page.getAttribute('#llama2c', 'data-probe'));
  assert.equal(probe.length, 8, 'every head of both layers is scored on the probe');
  assert.equal((await page.$$('#l2names li')).length, 8);
  assert.match(await page.textContent('#l2status'), /the strongest induction head is layer \d, head \d \(score \d\.\d\d\)/);
  await page.selectOption('#l2layer', '1');
  await page.waitForFunction(() => document.querySelector('#l2heatmaps figcaption')?.textContent.startsWith('layer 2'), null, { timeout: 60000 });
  await page.$eval('#llama2c', (el) => el.scrollIntoView());
  await screenshot(page, 'llama2c');
  assert.deepEqual(problems(), []);
  node.dispose();
  m.dispose();
  await page.close();
});
