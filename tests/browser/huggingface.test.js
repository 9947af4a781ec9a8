// huggingface.test.js: "Open a model file" with Hugging Face checkpoints. A GPT-2-shaped model of
// 12 layers x 12 heads is made here by the library and saved in BF16 (saveHuggingFace), with the
// page's own byte-level BPE as tokenizer.json; a mock Hub on 127.0.0.1 serves it at the Hub's URLs
// (/<owner>/<name>/resolve/main/<file>): as one file, as two shards with an index, slowly (so Cancel
// lands mid-download), and not at all (404). The page is opened with ?hub= pointing there. Waits
// on the panel's DOM state with generous caps; nothing asserts how long a step took.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { playgroundSuite } from './helpers.js';

const LONG = 180_000;
const SHOTS = '/tmp/hf-shots';
const TOKENIZER = readFileSync(new URL('../../web/models/fortunes-bpe.tokenizer.json', import.meta.url), 'utf8');

// A safetensors file cut in two: each shard's header lists its own tensors with offsets from its own data.
function splitSafetensors(bytes) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const data = bytes.subarray(8 + n), names = Object.keys(header).filter((k) => k !== '__metadata__');
  const halves = [names.slice(0, names.length >> 1), names.slice(names.length >> 1)];
  const weightMap = {};
  const shards = halves.map((part, k) => {
    const file = `model-0000${k + 1}-of-00002.safetensors`;
    const h = { __metadata__: { format: 'pt' } }, chunks = [];
    let at = 0;
    for (const name of part) {
      const { dtype, shape, data_offsets: [a, b] } = header[name];
      h[name] = { dtype, shape, data_offsets: [at, at + b - a] };
      chunks.push(data.subarray(a, b));
      at += b - a;
      weightMap[name] = file;
    }
    let json = new TextEncoder().encode(JSON.stringify(h));
    const pad = (8 - (json.length % 8)) % 8; // the data starts 8-aligned
    json = new TextEncoder().encode(JSON.stringify(h) + ' '.repeat(pad));
    const out = new Uint8Array(8 + json.length + at);
    new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
    out.set(json, 8);
    let o = 8 + json.length;
    for (const c of chunks) { out.set(c, o); o += c.length; }
    return { file, bytes: out };
  });
  return { shards, index: { metadata: { total_size: data.length }, weight_map: weightMap } };
}

// The mock Hub: repos { 'owner/name': { files: { name: bytes|string }, slow?: [file] } }; anything else 404.
// CORS and CORP headers as the Hub sends them (the page is cross-origin isolated). Records every request.
function startHub(repos) {
  const requests = [];
  const sockets = new Set();
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const cors = { 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin', 'Cache-Control': 'no-store' };
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/([^?]+)$/.exec(req.url);
    const repo = m && repos[m[1]], body = repo?.files[decodeURIComponent(m[2])];
    if (body === undefined) {
      res.writeHead(404, { ...cors, 'Content-Type': 'text/plain' });
      res.end(req.method === 'HEAD' ? undefined : 'Entry not found');
      return;
    }
    const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.length);
    res.writeHead(200, { ...cors, 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.length) });
    if (req.method === 'HEAD') return res.end();
    if (!repo.slow?.includes(m[2])) return res.end(bytes);
    // trickle: 64 KB every 150 ms, until done or the client goes away
    let at = 0;
    const timer = setInterval(() => {
      if (res.destroyed) return clearInterval(timer);
      res.write(bytes.subarray(at, at + 65536));
      at += 65536;
      if (at >= bytes.length) {
        clearInterval(timer);
        res.end();
      }
    }, 150);
    res.on('close', () => clearInterval(timer));
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    // the bytes the hub serves at a URL (null when none)
    length: (url) => {
      const m = /\/([^/]+\/[^/]+)\/resolve\/main\/([^?]+)$/.exec(new URL(url).pathname);
      const body = m && repos[m[1]]?.files[decodeURIComponent(m[2])];
      return body === undefined || body === null ? null : Buffer.byteLength(body);
    },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  })));
}

const suite = playgroundSuite({ before, after });
let lib, saved, hub, dir;

before(async () => {
  lib = await loadAttention();
  const vocab = Math.max(512, lib.loadTokenizer(TOKENIZER).vocabSize);
  const m = lib.createModel({ vocab, dModel: 96, heads: 12, layers: 12, maxLen: 128, ffn: 'gelu', positional: 'learned', tieEmbeddings: true, seed: 7 });
  saved = m.saveHuggingFace({ dtype: 'BF16' });
  m.dispose();
  const config = JSON.stringify(saved.config);
  const { shards, index } = splitSafetensors(saved.weights);
  const one = { 'config.json': config, 'tokenizer.json': TOKENIZER, 'model.safetensors': saved.weights };
  hub = await startHub({
    'test/gpt2-tiny': { files: one },
    'test/gpt2-slow': { files: one, slow: ['model.safetensors'] },
    'test/gpt2-sharded': {
      files: { 'config.json': config, 'tokenizer.json': TOKENIZER, 'model.safetensors.index.json': JSON.stringify(index),
        ...Object.fromEntries(shards.map((s) => [s.file, s.bytes])) },
    },
  });
  dir = mkdtempSync(join(tmpdir(), 'aw-hf-'));
  writeFileSync(join(dir, 'config.json'), config);
  writeFileSync(join(dir, 'model.safetensors'), saved.weights);
  writeFileSync(join(dir, 'tokenizer.json'), TOKENIZER);
  // SmolLM2-135M's grid, 30 layers x 9 heads (3 K/V heads), as a LlamaForCausalLM in a folder of its own
  const smol = lib.createModel({ vocab, dModel: 72, heads: 9, kvHeads: 3, layers: 30, maxLen: 128, block: 'llama', tieEmbeddings: true, seed: 3 });
  const smolSaved = smol.saveHuggingFace({ dtype: 'BF16' });
  smol.dispose();
  mkdirSync(join(dir, 'smol'));
  writeFileSync(join(dir, 'smol', 'config.json'), JSON.stringify(smolSaved.config));
  writeFileSync(join(dir, 'smol', 'model.safetensors'), smolSaved.weights);
  writeFileSync(join(dir, 'smol', 'tokenizer.json'), TOKENIZER);
  mkdirSync(SHOTS, { recursive: true });
});
after(async () => {
  await hub?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function openPanel(expected = []) {
  const { page, problems } = await suite.open(`?hub=${encodeURIComponent(hub.url)}`);
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
  const hosts = new Set(), whole = new Set(), sizing = [];
  page.on('request', (r) => hosts.add(new URL(r.url()).origin));
  // Chromium sometimes reports a fetch whose body the page read to the end as ERR_ABORTED (the
  // reader saw the end before the network layer said it was complete): such a request, every byte
  // received, is no problem; one cut short is.
  page.on('requestfailed', (r) => sizing.push(r.sizes().then((s) => {
    if (s.responseBodySize > 0 && s.responseBodySize === hub.length(r.url())) whole.add(r.url());
  }, () => {})));
  // problems the test caused on purpose: a 404 it asked for, a download it cancelled
  const unexpected = async () => {
    await Promise.all(sizing);
    return problems().filter((p) => !expected.some((re) => re.test(p))
      && ![...whole].some((u) => p === `request failed: ${u} (net::ERR_ABORTED)`));
  };
  return { page, unexpected, hosts };
}

// The panel (and some of its parts) at 1280 x 800 and 390 x 844, as PNGs in /tmp/hf-shots to look
// at; the panel must not be wider than its box at either size.
async function shoot(page, name, selectors) {
  for (const [w, h] of [[1280, 800], [390, 844]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.waitForTimeout(400); // the page's resize handler lays the heatmaps out again
    const overflow = await page.$eval('#llama2c', (s) => s.scrollWidth - s.clientWidth);
    assert.ok(overflow <= 1, `the panel does not overflow at ${w} px (by ${overflow} px)`);
    for (const sel of selectors) {
      const part = sel === '#llama2c' ? '' : `-${sel.replace(/[^a-z0-9]+/gi, '')}`;
      await page.locator(sel).first().screenshot({ path: join(SHOTS, `${name}${part}-${w}.png`) });
    }
  }
}

async function fetchId(page, id) {
  await page.fill('#l2hubid', id);
  await page.click('#l2fetch');
}

test('the Hub path: one file and shards fetched with progress, loaded, generating and drawn', async (t) => {
  const { page, unexpected, hosts } = await openPanel([/404.*gpt2-sharded\/resolve\/main\/model\.safetensors$/,
    /console error: Failed to load resource: the server responded with a status of 404/]);
  await fetchId(page, 'test/gpt2-tiny');
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  const total = saved.weights.length;
  assert.equal(await page.getAttribute('#llama2c', 'data-total'), String(total), 'the size is known before the weights are fetched');
  assert.equal(await page.getAttribute('#llama2c', 'data-fetched'), String(total), 'progress reached the total');
  const status = await page.textContent('#l2status');
  t.diagnostic(status);
  assert.match(status, /^Loaded GPT2LMHeadModel in \d+ ms \(fetched in [\d.]+ s\): dim 96, 12 layers x 12 heads, vocab 512, up to 128 tokens, 1\.4M parameters, BF16, 2\.8 MB of weights\.$/);
  assert.equal(await page.$$eval('#l2layer option', (os) => os.length), 12);

  await page.fill('#l2text', 'Once upon a time');
  await page.selectOption('#l2count', '8');
  await page.click('#l2generate');
  await page.waitForSelector('#llama2c[data-done]', { timeout: LONG });
  const node = lib.loadHuggingFace({ config: saved.config, weights: saved.weights, tokenizer: TOKENIZER });
  const expected = [...node.generate(node.tokenizer.encode('Once upon a time'), { maxTokens: 8 })];
  assert.deepEqual(JSON.parse(await page.getAttribute('#llama2c', 'data-tokens')), expected, 'the page generates what Node generates');
  node.dispose();
  assert.ok((await page.textContent('#l2output')).startsWith('Once upon a time'));
  const titles = await page.$$eval('#l2heatmaps figcaption', (cs) => cs.map((c) => c.textContent));
  assert.equal(titles.length, 12, 'every head of the layer is drawn');
  assert.match(titles[11], /^layer 1, head 12: /);

  // the same model in two shards: model.safetensors is 404, the index names the shards
  await fetchId(page, 'test/gpt2-sharded');
  await page.waitForFunction(() => document.querySelector('#l2status').textContent.startsWith('Loaded'), null, { timeout: LONG });
  assert.equal(await page.getAttribute('#llama2c', 'data-fetched'), await page.getAttribute('#llama2c', 'data-total'));
  assert.match(await page.textContent('#l2files-names'), /model-00001-of-00002\.safetensors, model-00002-of-00002\.safetensors/);
  assert.ok(hub.requests.includes('HEAD /test/gpt2-sharded/resolve/main/model-00002-of-00002.safetensors'), 'shard sizes asked first');
  assert.deepEqual([...hosts].filter((h) => h !== suite.server().url.replace(/\/$/, '') && h !== hub.url), [],
    'the page asked no host but its own and the Hub');
  await page.click('#l2generate');
  await page.waitForSelector('#llama2c[data-done]', { timeout: LONG });
  await shoot(page, 'hub-loaded', ['#llama2c']);
  assert.deepEqual(await unexpected(), []);
  await page.close();
});

test('Cancel during a slow download stops it, says so and keeps no model; a 404 is named', async () => {
  const { page, unexpected } = await openPanel([/request failed: .*gpt2-slow.*ERR_ABORTED/, /HTTP 404: .*test\/no-such-model/,
    /console error: Failed to load resource: the server responded with a status of 404/]);
  await fetchId(page, 'test/gpt2-slow');
  await page.waitForFunction(() => Number(document.querySelector('#l2progress').value) > 0, null, { timeout: LONG });
  assert.equal(await page.isVisible('#l2cancel'), true);
  assert.match(await page.textContent('#l2bytes'), /^[\d.]+ of 2\.8 MB$/);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#llama2c').screenshot({ path: join(SHOTS, 'hub-progress-390.png') });
  await page.click('#l2cancel');
  await page.waitForFunction(() => /^Cancelled/.test(document.querySelector('#l2status').textContent), null, { timeout: LONG });
  assert.match(await page.textContent('#l2status'), /Cancelled: test\/gpt2-slow was not loaded/);
  assert.equal(await page.getAttribute('#llama2c', 'data-loaded'), null, 'no model is loaded');
  assert.equal(await page.isVisible('#l2busy'), false);
  assert.equal(await page.isDisabled('#l2generate'), true);

  await fetchId(page, 'test/no-such-model');
  await page.waitForFunction(() => /HTTP 404/.test(document.querySelector('#l2status').textContent), null, { timeout: LONG });
  assert.equal(await page.textContent('#l2status'),
    `Could not fetch config.json: HTTP 404 Not Found at ${hub.url}/test/no-such-model/resolve/main/config.json`);
  await fetchId(page, 'not a/valid id');
  assert.match(await page.textContent('#l2status'), /is not a Hub id/);
  assert.ok(!hub.requests.some((r) => r.includes('valid')), 'an invalid id is never fetched');
  assert.deepEqual(await unexpected(), []);
  await page.close();
});

test('picked files: the model loads, the probe fills a 12 x 12 table, a clicked head shows its layer', async (t) => {
  const { page, unexpected } = await openPanel();
  await page.setInputFiles('#l2files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(dir, f)));
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  assert.match(await page.textContent('#l2status'), /^Loaded GPT2LMHeadModel in \d+ ms: dim 96, 12 layers x 12 heads/);
  await page.click('#l2probe');
  await page.waitForSelector('#llama2c[data-probe]', { timeout: LONG });
  const probe = JSON.parse(await page.getAttribute('#llama2c', 'data-probe'));
  assert.equal(probe.length, 144);
  assert.equal(await page.$$eval('#l2table tbody tr', (rs) => rs.length), 12);
  assert.deepEqual(await page.$$eval('#l2table tbody tr', (rs) => [...new Set(rs.map((r) => r.querySelectorAll('td button').length))]), [12]);
  assert.equal((await page.$$('#l2names li')).length, 0, 'a table, not a list of 144 lines');
  t.diagnostic(await page.textContent('#l2status'));
  await page.click('#l2table tbody tr:nth-child(5) td:nth-of-type(3) button');
  await page.waitForFunction(() => document.querySelector('#l2heatmaps figcaption')?.textContent.startsWith('layer 5'), null, { timeout: LONG });
  assert.equal(await page.$$eval('#l2heatmaps figure canvas', (cs) => cs.length), 12);
  assert.equal(await page.inputValue('#l2layer'), '4');
  await page.selectOption('#l2layer', '11');
  await page.waitForFunction(() => document.querySelector('#l2heatmaps figcaption')?.textContent.startsWith('layer 12'), null, { timeout: LONG });
  assert.equal(await page.$eval('#l2table tbody tr.picked th', (th) => th.textContent), 'L12', 'the table marks the layer shown');
  await shoot(page, 'files-probe', ['#llama2c', '#l2table', '#l2heatmaps figure']);
  assert.deepEqual(await unexpected(), []);
  await page.close();
});

test('picked files of SmolLM2-135M\'s grid: a 30 x 9 probe table, inside the panel at 1280 and 390 px', async (t) => {
  const { page, unexpected } = await openPanel();
  await page.setInputFiles('#l2files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(dir, 'smol', f)));
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  assert.match(await page.textContent('#l2status'), /^Loaded LlamaForCausalLM in \d+ ms: dim 72, 30 layers x 9 heads/);
  await page.click('#l2probe');
  await page.waitForSelector('#llama2c[data-probe]', { timeout: LONG });
  assert.equal(JSON.parse(await page.getAttribute('#llama2c', 'data-probe')).length, 270);
  assert.equal(await page.$$eval('#l2table tbody tr', (rs) => rs.length), 30);
  assert.deepEqual(await page.$$eval('#l2table tbody tr', (rs) => [...new Set(rs.map((r) => r.querySelectorAll('td button').length))]), [9]);
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    await page.setViewportSize({ width, height });
    const fits = await page.$eval('#l2table', (el) => {
      const box = el.getBoundingClientRect(), panel = el.closest('section').getBoundingClientRect();
      return box.right <= panel.right + 1 && box.width > 0;
    });
    assert.ok(fits, `the 30 x 9 table fits the panel at ${width} px`);
    const cell = await page.$eval('#l2table tbody td button', (b) => b.getBoundingClientRect());
    t.diagnostic(`${width} px: a cell is ${cell.width.toFixed(0)} x ${cell.height.toFixed(0)} px`);
    assert.ok(cell.width >= 12 && cell.height >= 12, `cells stay tappable at ${width} px`);
  }
  await shoot(page, 'smol-probe', ['#l2table']);
  assert.deepEqual(await unexpected(), []);
  await page.close();
});

// Issue 43, section 4: "What does this head do?" runs on the model opened here. The picked files'
// model is offered in the circuits panel's picker; chosen, the model host runs it (no copy is sent),
// the learned panel's text is read twice with its own tokenizer, and every grid has its 12 layers
// x 12 heads, inside the panel's box at 1280 and at 390 px. Screenshots in /tmp/circuits-shots.
test('the opened model in "What does this head do?": 12 layers x 12 heads ablated, patched and lensed', async (t) => {
  const CIRCUIT_SHOTS = '/tmp/circuits-shots';
  mkdirSync(CIRCUIT_SHOTS, { recursive: true });
  const { page, unexpected } = await openPanel();
  await page.setInputFiles('#l2files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(dir, f)));
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  await page.waitForSelector('#hdmodel option[value="opened"]', { state: 'attached', timeout: LONG });
  assert.equal(await page.textContent('#hdmodel option[value="opened"]'), 'Opened: GPT2LMHeadModel (model.safetensors)');
  assert.equal(await page.isHidden('#hdmodel-field'), false, 'the picker is shown: there is a choice');
  await page.selectOption('#hdmodel', 'opened');
  await page.waitForFunction(() => {
    const s = document.querySelector('#circuits');
    return s.dataset.state === 'error' || (s.dataset.state === 'ready' && (s.dataset.file ?? '').startsWith('opened-')
      && JSON.parse(s.dataset.result).file === s.dataset.file);
  }, null, { timeout: 2 * LONG });
  const status = await page.textContent('#hdstatus');
  t.diagnostic(status);
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready', status);
  assert.match(status, /^The heads of .*, the model open in Open a model file\. 12 layers x 12 heads, 288 ablations in [\d.]+ s .* bits per token/);
  const result = JSON.parse(await page.getAttribute('#circuits', 'data-result'));
  assert.equal(result.rows.filter((r) => r.mode === 'zero').length, 144);
  assert.equal(result.resid.length, 12);
  assert.deepEqual([...new Set(result.z.map((r) => r.length))], [12]);
  assert.match(await page.textContent('#hdtexts'), /^Clean: .+Corrupted/);
  // the grids: a row per layer, a cell per head
  const rows = (sel, cells) => page.$$eval(`${sel} tr`, (trs, c) => trs.slice(1).map((tr) => tr.querySelectorAll(c).length), cells);
  assert.deepEqual(await rows('#hdgrid', '.grid-cell'), Array(12).fill(12));
  assert.deepEqual(await rows('#hdz', 'td'), Array(12).fill(12));
  assert.equal((await rows('#hdresid', 'td')).length, 12);
  assert.equal((await rows('#hdlens', 'td')).length, 12);
  assert.equal(await page.$$eval('#hdgrid .grid-cell[aria-pressed="true"]', (b) => b.length), 1);
  await page.click('#hdgrid tr:nth-child(12) td:nth-of-type(12) .grid-cell');
  assert.match(await page.textContent('#hdhead-title'), /^Layer 11, head 12 \(/);
  assert.equal(await page.$$eval('#hdpromoted li', (l) => l.length), 5);
  // the patching and logit-lens tables sit in folds: a learner opens them by their titles
  for (const id of ['hdresid', 'hdlens']) await page.click(`#circuits details.part:has(#${id}) > summary`);
  for (const [w, h] of [[1280, 800], [390, 844]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.waitForTimeout(400);
    // the panel's wide grids scroll inside their boxes: neither the panel nor its box is wider than the window
    const overflow = await page.$eval('#circuits', (s) => ({ panel: s.scrollWidth - s.clientWidth,
      window: Math.round(s.getBoundingClientRect().right - window.innerWidth) }));
    assert.ok(overflow.panel <= 1 && overflow.window <= 0, `the panel overflows at ${w} px: ${JSON.stringify(overflow)}`);
    await page.locator('#circuits').screenshot({ path: join(CIRCUIT_SHOTS, `opened-${w}.png`) });
    for (const part of ['hdgrid', 'hdresid', 'hdz', 'hdlens']) await page.locator(`#${part}`).screenshot({ path: join(CIRCUIT_SHOTS, `opened-${part}-${w}.png`) });
  }
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready');

  // another model opened (the sample pair, llama2.c's files): the choice is replaced, and the panel,
  // on the opened model, runs again on the new one with its llama2.c tokenizer
  const before = await page.getAttribute('#circuits', 'data-file');
  await page.click('#l2sample');
  await page.waitForFunction(() => /^Opened: .*\.bin$/.test(document.querySelector('#hdmodel option[value="opened"]')?.textContent ?? ''),
    null, { timeout: LONG });
  assert.equal(await page.$$eval('#hdmodel option[value="opened"]', (os) => os.length), 1);
  await page.waitForFunction((prev) => {
    const s = document.querySelector('#circuits');
    return s.dataset.state === 'error' || (s.dataset.state === 'ready' && s.dataset.file !== prev && (s.dataset.file ?? '').startsWith('opened-')
      && JSON.parse(s.dataset.result).file === s.dataset.file);
  }, before, { timeout: 2 * LONG });
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready', await page.textContent('#hdstatus'));
  assert.equal(await page.inputValue('#hdmodel'), 'opened');
  assert.match(await page.textContent('#hdstatus'), /bits per token/);
  const sample = JSON.parse(await page.getAttribute('#circuits', 'data-result'));
  assert.ok(sample.rows.length > 0 && sample.rows.length < 288, 'the sample is a smaller model');
  assert.deepEqual(await unexpected(), []);
  await page.close();
});
