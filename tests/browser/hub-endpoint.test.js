// hub-endpoint.test.js: the Hub endpoint of "Open a model file" (issue 54 item 5) and the first
// panel on a phone (item 8). The endpoint is a field kept in the page's URL (?hub=) across a reload;
// a malformed one is refused before any fetch; an unreachable host, a host that answers without
// CORS headers and a 404 shard each get a message naming the file and the host or URL. Every
// endpoint is a tiny server on 127.0.0.1 made here. Then a 12-head model opened from files is drawn
// in "The model in one picture" at 390 x 844 with every head inside the panel and the window, and
// in "What does this head do?" in a box that scrolls, with a fade at its edge as the hint; the
// first panel's "Open your own model" leads to the opener.
//   node --test --test-concurrency=1 tests/browser/hub-endpoint.test.js
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { playgroundSuite } from './helpers.js';

const LONG = 180_000;
const TOKENIZER = readFileSync(new URL('../../web/models/fortunes-bpe.tokenizer.json', import.meta.url), 'utf8');

// An endpoint on 127.0.0.1: files { 'owner/name/file': body } at /<owner>/<name>/resolve/main/<file>,
// anything else 404; with cors false it sends no CORS header (as a host that does not allow pages).
function endpoint(files, { cors = true } = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const headers = cors ? { 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'no-store' } : { 'Cache-Control': 'no-store' };
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/([^?]+)$/.exec(req.url);
    const body = m ? files[`${m[1]}/${decodeURIComponent(m[2])}`] : undefined;
    if (body === undefined) {
      res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
      return res.end(req.method === 'HEAD' ? undefined : 'Entry not found');
    }
    res.writeHead(200, { ...headers, 'Content-Type': 'application/octet-stream', 'Content-Length': String(Buffer.byteLength(body)) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  })));
}

// A loopback port nobody listens on: one the system gave out and that was closed again.
async function closedPort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

const suite = playgroundSuite({ before, after });
let hub, bare, dir;

before(async () => {
  // a sharded repo whose second shard is missing, on an endpoint with CORS headers
  const index = { metadata: { total_size: 8 }, weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' } };
  hub = await endpoint({
    'test/sharded/config.json': '{}', 'test/sharded/tokenizer.json': TOKENIZER,
    'test/sharded/model.safetensors.index.json': JSON.stringify(index), 'test/sharded/model-00001-of-00002.safetensors': 'x'.repeat(8),
  });
  // the same host without CORS headers
  bare = await endpoint({ 'test/model/config.json': '{}' }, { cors: false });
  // a GPT-2-shaped model of 12 heads (2 layers), as picked files
  const lib = await loadAttention();
  const vocab = Math.max(512, lib.loadTokenizer(TOKENIZER).vocabSize);
  const m = lib.createModel({ vocab, dModel: 96, heads: 12, layers: 2, maxLen: 128, ffn: 'gelu', positional: 'learned', tieEmbeddings: true, seed: 7 });
  const saved = m.saveHuggingFace({ dtype: 'BF16' });
  m.dispose();
  dir = mkdtempSync(join(tmpdir(), 'aw-hub-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(saved.config));
  writeFileSync(join(dir, 'model.safetensors'), saved.weights);
  writeFileSync(join(dir, 'tokenizer.json'), TOKENIZER);
});
after(async () => {
  await hub?.close();
  await bare?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Fetches id from the endpoint in the field; resolves with the status line once the fetch has ended.
async function fetchFrom(page, url, id) {
  await page.fill('#l2endpoint', url);
  await page.fill('#l2hubid', id);
  await page.$eval('#l2status', (s) => { s.textContent = ''; }); // so that the wait below sees this fetch's outcome
  await page.click('#l2fetch');
  await page.waitForFunction(() => {
    const text = document.querySelector('#l2status').textContent;
    return document.querySelector('#l2busy').hidden && text !== '' && !/^Fetching/.test(text);
  }, null, { timeout: LONG });
  return page.textContent('#l2status');
}

test('the endpoint field is kept in the URL and survives a reload; a malformed one is refused before any fetch', async () => {
  const { page, problems } = await suite.open(`?hub=${encodeURIComponent(hub.url)}`);
  assert.equal(await page.inputValue('#l2endpoint'), hub.url, 'the ?hub= of the link fills the field');
  assert.equal(new URL(page.url()).searchParams.get('hub'), hub.url, 'start-up keeps ?hub= in the address');
  const other = `${hub.url}/mirror`;
  await page.fill('#l2endpoint', other);
  await page.waitForFunction((u) => new URL(location.href).searchParams.get('hub') === u, other);
  await page.reload();
  await page.waitForSelector('body[data-state="ready"]', { timeout: LONG });
  assert.equal(await page.inputValue('#l2endpoint'), other, 'the field after a reload');
  assert.equal(new URL(page.url()).searchParams.get('hub'), other);

  const asked = hub.requests.length, requests = [];
  const own = new URL(page.url()).origin; // the page's own files and workers keep loading meanwhile
  page.on('request', (r) => { if (new URL(r.url()).origin !== own) requests.push(r.url()); });
  for (const bad of ['huggingface.co', 'ftp://127.0.0.1/x', `${hub.url}/?rev=2`]) {
    await page.fill('#l2endpoint', bad);
    await page.fill('#l2hubid', 'test/sharded');
    await page.click('#l2fetch');
    await page.waitForFunction((b) => document.querySelector('#l2status').textContent.includes(`"${b}"`), bad);
    const status = await page.textContent('#l2status');
    assert.ok(status.startsWith(`The Hub endpoint "${bad}" is not usable: write an http:// or https:// URL`), status);
  }
  assert.deepEqual(requests, [], 'a malformed endpoint is never fetched');
  assert.equal(hub.requests.length, asked);
  // the reload cuts the first load's own requests short (a worker's model, a module): no problem
  assert.deepEqual(problems().filter((p) => !(p.startsWith(`request failed: ${own}/`) && p.endsWith('(net::ERR_ABORTED)'))), []);
  await page.close();
});

test('an unreachable host, a host without CORS headers and a 404 shard: each message names the file and the host or URL', async () => {
  const { page, problems } = await suite.open();
  assert.equal(await page.inputValue('#l2endpoint'), 'https://huggingface.co', 'the default endpoint');

  const port = await closedPort();
  const offline = await fetchFrom(page, `http://127.0.0.1:${port}`, 'test/model');
  assert.equal(offline, `Could not fetch config.json from 127.0.0.1:${port} (http://127.0.0.1:${port}/test/model/resolve/main/config.json): `
    + `no response the page may read. Either this device is offline or cannot reach 127.0.0.1:${port}, or 127.0.0.1:${port} answered `
    + 'without the CORS header Access-Control-Allow-Origin that lets a page read it; check the endpoint, the connection, '
    + 'or try a mirror that sends CORS headers (or download the files and drop them here).');

  const host = new URL(bare.url).host;
  const cors = await fetchFrom(page, bare.url, 'test/model');
  assert.ok(bare.requests.includes('GET /test/model/resolve/main/config.json'), 'the host without CORS headers was asked (and answered)');
  assert.ok(cors.startsWith(`Could not fetch config.json from ${host} (${bare.url}/test/model/resolve/main/config.json): no response the page may read.`), cors);
  assert.match(cors, /offline.*CORS header Access-Control-Allow-Origin.*mirror/);

  const shard = await fetchFrom(page, hub.url, 'test/sharded');
  assert.equal(shard, `Could not fetch model-00002-of-00002.safetensors: HTTP 404 Not Found at ${hub.url}/test/sharded/resolve/main/model-00002-of-00002.safetensors`);
  assert.equal(await page.getAttribute('#llama2c', 'data-loaded'), null, 'no model is loaded');

  // the failures asked for, and nothing else
  const expected = [new RegExp(`127\\.0\\.0\\.1:${port}`), new RegExp(`${host}.*(CORS|ERR_FAILED)|CORS policy`),
    /HTTP 404: .*test\/sharded\/resolve\/main\/model(-00002-of-00002)?\.safetensors$/, /Failed to load resource: the server responded with a status of 404/, /Failed to load resource: net::ERR_(CONNECTION_REFUSED|FAILED)$/];
  assert.deepEqual(problems().filter((p) => !expected.some((re) => re.test(p))), []);
  await page.close();
});

test('a 12-head model at 390 x 844: the picture shows every head, the circuits grid scrolls with a hint; "Open your own model" leads to the opener', async () => {
  const { page, problems } = await suite.open();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.click('#popen');
  await page.waitForFunction(() => document.activeElement?.id === 'llama2c', null, { timeout: LONG });
  const top = await page.$eval('#llama2c', (s) => s.getBoundingClientRect().top);
  assert.ok(top >= -2 && top < 844 / 2, `the opener is scrolled into the window's upper half (its top at ${top} px)`);

  await page.setInputFiles('#l2files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(dir, f)));
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  await page.waitForSelector('#picture[data-state="ready"][data-heads="12"]', { timeout: LONG });
  const boxes = await page.$$eval('#players .pic-head', (figs) => {
    const panel = document.querySelector('#picture').getBoundingClientRect();
    return figs.map((f) => {
      const r = f.getBoundingClientRect(), row = f.parentElement.getBoundingClientRect();
      return { layer: f.dataset.layer, head: f.dataset.head, inside: r.width > 0 && r.left >= Math.max(panel.left, row.left) - 0.5
        && r.right <= Math.min(panel.right, row.right, window.innerWidth) + 0.5 };
    });
  });
  assert.equal(boxes.length, 24, '2 layers x 12 heads drawn');
  assert.deepEqual(boxes.filter((b) => !b.inside), [], 'no head is cut off or hidden past the right edge');
  const overflow = await page.$eval('#picture', (s) => s.scrollWidth - s.clientWidth);
  assert.ok(overflow <= 1, `the panel is not wider than its box (by ${overflow} px)`);

  // "What does this head do?" on the same model: its 12-head grid scrolls inside its box at 390 px,
  // faded at the right edge until scrolled to the end (style.css); at 1280 px it fits, unfaded
  await page.waitForSelector('#hdmodel option[value="opened"]', { state: 'attached', timeout: LONG });
  await page.selectOption('#hdmodel', 'opened');
  await page.waitForFunction(() => {
    const s = document.querySelector('#circuits');
    return s.dataset.state === 'error' || (s.dataset.state === 'ready' && (s.dataset.file ?? '').startsWith('opened-'));
  }, null, { timeout: 2 * LONG });
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready', await page.textContent('#hdstatus'));
  const grid = () => page.$eval('#hdgrid', (g) => ({ scrolls: g.scrollWidth > g.clientWidth + 1, mask: getComputedStyle(g).maskImage,
    heads: g.querySelectorAll('tr:last-child .grid-cell').length }));
  const narrow = await grid();
  assert.equal(narrow.heads, 12);
  assert.ok(narrow.scrolls && narrow.mask.startsWith('linear-gradient'), `the grid scrolls, with its hint: ${JSON.stringify(narrow)}`);
  await page.$eval('#hdgrid', (g) => { g.scrollLeft = g.scrollWidth; });
  await page.waitForFunction(() => getComputedStyle(document.querySelector('#hdgrid')).maskImage === 'none');
  const last = await page.$eval('#hdgrid tr:last-child td:last-of-type', (c) => {
    const r = c.getBoundingClientRect(), box = c.closest('#hdgrid').getBoundingClientRect();
    return r.right <= box.right + 1 && r.left >= box.left;
  });
  assert.ok(last, 'scrolled to the end, head 12 is inside the box');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.waitForFunction(() => { const g = document.querySelector('#hdgrid'); return g.scrollWidth <= g.clientWidth + 1; });
  assert.equal((await grid()).mask, 'none', 'a grid that fits is not faded');
  assert.deepEqual(problems(), []);
  await page.close();
});
