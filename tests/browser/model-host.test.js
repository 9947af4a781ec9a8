// model-host.test.js: the model opened in "Open a model file" lives in one Worker, the model host
// (web/model-host.js, issue 54), and every panel asks it for what it needs. A GPT-2-shaped
// Hugging Face checkpoint (12 heads per layer, BF16, the shipped BPE tokenizer) is picked as files:
//   - generation streams: token events arrive before the answer, as many as the answer's tokens, and
//     a Stop (a cancelled request) ends a long generation early with fewer tokens than asked;
//   - the generated tokens are Node's greedy tokens from the same files;
//   - the feature browser lists the opened model's points (residual stream, MLP and attention
//     outputs of every layer), trains on one of them with progress and states its held-out FVU,
//     labels its contexts with the model's tokenizer, and steers the opened model;
//   - opening another model clears what was trained on the old one;
//   - the page's thread never holds the model: the page's own library instance has no model in
//     its heap beyond what it had before the pick.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { playgroundSuite } from './helpers.js';

const LONG = 300_000;
const TOKENIZER = readFileSync(new URL('../../web/models/fortunes-bpe.tokenizer.json', import.meta.url), 'utf8');
const suite = playgroundSuite({ before, after });
let lib, dir, dir2;

before(async () => {
  lib = await loadAttention();
  const vocab = lib.loadTokenizer(TOKENIZER).vocabSize;
  const write = (d, opts) => {
    const m = lib.createModel({ vocab, dModel: 96, heads: 12, layers: 4, maxLen: 256, ffn: 'gelu', positional: 'learned', tieEmbeddings: true, ...opts });
    const saved = m.saveHuggingFace({ dtype: 'BF16' });
    m.dispose();
    writeFileSync(join(d, 'config.json'), JSON.stringify(saved.config));
    writeFileSync(join(d, 'model.safetensors'), saved.weights);
    writeFileSync(join(d, 'tokenizer.json'), TOKENIZER);
  };
  dir = mkdtempSync(join(tmpdir(), 'aw-host-'));
  write(dir, { seed: 7 });
  dir2 = mkdtempSync(join(tmpdir(), 'aw-host2-'));
  write(dir2, { seed: 8, layers: 2 });
});
after(() => {
  for (const d of [dir, dir2]) if (d) rmSync(d, { recursive: true, force: true });
});

const files = (d) => ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(d, f));

test('the model host: streamed generation with Stop, Node\'s tokens, and no model on the page\'s thread', async () => {
  const { page, problems } = await suite.open('');
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
  const heapBefore = await page.evaluate(() => globalThis.attentionWasm.heapInUse());
  await page.setInputFiles('#l2files', files(dir));
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  assert.match(await page.textContent('#l2status'), /^Loaded GPT2LMHeadModel in \d+ ms/);
  assert.ok(Number(await page.getAttribute('#llama2c', 'data-waited')) >= Number(await page.getAttribute('#llama2c', 'data-load-ms')),
    'the status says the whole wait, not only the load');

  // the host's stream: token events before the answer, one token each, adding up to the answer
  const streamed = await page.evaluate(async () => {
    const { hostCall } = await import('./host.js');
    const { ids } = await hostCall('opener', { type: 'encode', text: 'the cat sat on the mat' });
    const events = [];
    const result = await hostCall('opener', { type: 'generate', prompt: ids, maxTokens: 20, stop: null },
      { onEvent: (e) => events.push({ tokens: e.tokens, count: e.count }) });
    return { ids, events, result };
  });
  assert.equal(streamed.result.stopped, false);
  assert.equal(streamed.result.tokens.length, 20);
  assert.deepEqual(streamed.events.flatMap((e) => e.tokens), streamed.result.tokens, 'the events carry every token, in order');
  assert.ok(streamed.events.length >= 2, `tokens arrive as they are made (${streamed.events.length} events)`);
  // Node's greedy tokens from the same files
  const node = lib.loadHuggingFace({ config: readFileSync(join(dir, 'config.json'), 'utf8'), weights: readFileSync(join(dir, 'model.safetensors')),
    tokenizer: TOKENIZER });
  try {
    assert.deepEqual(Array.from(node.generate(Int32Array.from(streamed.ids), { maxTokens: 20 })), streamed.result.tokens);
  } finally {
    node.dispose();
  }

  // Stop: a generation of 200 tokens cancelled after its first token ends early
  const stopped = await page.evaluate(async () => {
    const { hostCall } = await import('./host.js');
    const { ids } = await hostCall('opener', { type: 'encode', text: 'a' });
    const ctl = new AbortController();
    const result = await hostCall('opener', { type: 'generate', prompt: ids, maxTokens: 200, stop: null },
      { signal: ctl.signal, onEvent: () => ctl.abort() });
    return result;
  });
  assert.equal(stopped.stopped, true, 'the generation says it was stopped');
  assert.ok(stopped.tokens.length >= 1 && stopped.tokens.length < 200, `${stopped.tokens.length} tokens before Stop took`);

  // the panel: Generate streams into the output, the first token's time is recorded before the end
  await page.click('#l2generate');
  await page.waitForSelector('#llama2c[data-done]', { timeout: LONG });
  assert.ok(Number(await page.getAttribute('#llama2c', 'data-first-token')) > 0);
  assert.match(await page.textContent('#l2status'), /tokens\/s, greedy, with the KV cache, fp32 weights\), the first after \d+ ms/);
  // the page's own library never loaded the model: its heap is what it was before the pick
  const heaps = await page.evaluate(async () => {
    const { hostCall } = await import('./host.js');
    return { host: await hostCall('opener', { type: 'memory' }), page: globalThis.attentionWasm.heapInUse() };
  });
  assert.ok(heaps.host.inUse > 2e6, `the host holds the model (${heaps.host.inUse} bytes in use)`);
  // (the model's weights alone are 2.6 MB in float32; the page's own panels may hold a few kB more)
  assert.ok(heaps.page <= heapBefore + 256 * 1024, `the page's heap ${heapBefore} -> ${heaps.page} bytes: the model is not on its thread`);
  assert.deepEqual(problems(), []);
});

test('the feature browser on the opened model: its points, trained with progress, its tokens, steering, cleared on close', async () => {
  const { page, problems } = await suite.open('');
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
  await page.setInputFiles('#l2files', files(dir));
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  await page.waitForSelector('#fsmodel option[value="opened"]', { state: 'attached', timeout: LONG });
  assert.equal(await page.$eval('#fsmodel', (s) => s.value), 'opened');
  assert.equal(await page.isHidden('#fsmodel'), false);
  const points = await page.$$eval('#fslayer option', (os) => os.map((o) => o.value));
  assert.equal(points.length, 4 * 3, 'residual stream, MLP output and attention output of each of 4 layers');
  assert.ok(points.includes('blocks.3.hook_mlp_out') && points.includes('blocks.0.hook_attn_out'));
  assert.equal(await page.$eval('#fslayer', (s) => s.value), 'blocks.1.hook_resid_post', 'the middle layer first');
  await page.selectOption('#fssize', '4');
  await page.selectOption('#fssteps', '200');
  await page.$eval('#fstrain', (el) => el.scrollIntoView());
  await page.click('#fstrain');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#features').dataset.state), null, { timeout: LONG });
  const status = await page.textContent('#fsstatus');
  assert.equal(await page.getAttribute('#features', 'data-state'), 'ready', status);
  assert.match(status, /^Trained 384 features \(k = 16\) on blocks\.1\.hook_resid_post over [\d,]+ tokens .* it leaves [\d.]+% of the variance unexplained/);
  assert.match(status, /not listed for GPT2LMHeadModel/, 'it says why no promoted tokens are listed');
  const fvu = Number(await page.getAttribute('#features', 'data-fvu'));
  assert.ok(fvu > 0 && fvu < 1, `held-out FVU ${fvu}`);
  // contexts in the model's own pieces (the shipped BPE here): readable words, not ids
  await page.waitForSelector('#fscontexts li');
  assert.match(await page.textContent('#fscontexts li'), /[a-z]{2,}/);
  // steering the opened model
  await page.click('#fssteer');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#features').dataset.steer), null, { timeout: LONG });
  assert.equal(await page.getAttribute('#features', 'data-steer'), 'ready', await page.textContent('#fssteered'));
  // another model opened: the old autoencoder and its browser go
  await page.setInputFiles('#l2files', files(dir2));
  await page.waitForFunction(() => document.querySelector('#llama2c').dataset.loaded === '1'
    && document.querySelectorAll('#fslayer option').length === 6, null, { timeout: LONG });
  assert.equal(await page.getAttribute('#features', 'data-state'), 'idle');
  assert.equal(await page.isHidden('#fsbrowser'), true);
  assert.match(await page.textContent('#fsstatus'), /was closed/);
  assert.deepEqual(problems(), []);
});
