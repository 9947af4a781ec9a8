// firstload.test.js: what the page costs to open (issue 45, 3g). A first load, once every panel that
// loads on start has drawn and the network has been quiet a while, asks the server for each URL once
// (the page's fetchOnce and the bytes it hands its workers), and a reload costs next to nothing
// (scripts/serve.js answers a file the browser has with 304 Not Modified).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launch, openPage, playgroundSuite } from './helpers.js';

const { server } = playgroundSuite({ before, after });

// Resolves once no request has started or finished for quietMs (capped: a cap bounds a hang only).
function quiet(page, quietMs = 4000, capMs = 240_000) {
  return new Promise((resolve, reject) => {
    let timer, pending = 0;
    const arm = () => { clearTimeout(timer); if (pending === 0) timer = setTimeout(done, quietMs); };
    const start = () => { pending++; clearTimeout(timer); };
    const end = () => { pending = Math.max(0, pending - 1); arm(); };
    const cap = setTimeout(() => { off(); reject(new Error(`the network was still busy after ${capMs} ms`)); }, capMs);
    function off() { page.off('request', start); page.off('requestfinished', end); page.off('requestfailed', end); clearTimeout(cap); clearTimeout(timer); }
    function done() { off(); resolve(); }
    page.on('request', start); page.on('requestfinished', end); page.on('requestfailed', end);
    arm();
  });
}

// What the server sent from now on, counted on its sockets: per response its URL, status and the
// bytes written for it (status line, headers and body; a 304 has no body). Chromium sends one request
// at a time on a connection, so a socket's bytesWritten from request to finish is that response's.
function serverLog(srv) {
  const rows = [];
  const onRequest = (req, res) => {
    const socket = req.socket, start = socket.bytesWritten;
    res.on('finish', () => rows.push({ url: req.url.split('?')[0], status: res.statusCode, bytes: socket.bytesWritten - start }));
  };
  srv.on('request', onRequest);
  return { rows, stop: () => srv.off('request', onRequest) };
}

// Records every request and its transferred size (headers + body as received) from now on.
function record(page) {
  const rows = [];
  page.on('requestfinished', async (r) => {
    const row = { url: r.url(), status: null, bytes: 0 };
    rows.push(row);
    try {
      const res = await r.response();
      row.status = res?.status() ?? null;
      const s = await r.sizes();
      row.bytes = s.responseBodySize + s.responseHeadersSize;
    } catch { /* a request of a closed page */ }
  });
  const requested = [];
  page.on('request', (r) => requested.push(r.url()));
  return { rows, requested };
}

test('a first load asks for each URL once; a reload transfers under 100 KB', async (t) => {
  // a fresh profile: nothing cached
  const b = await launch();
  try {
    const { page, problems } = await openPage(b.context);
    const first = record(page), firstSent = serverLog(server().server);
    await page.goto(server().url);
    await page.waitForSelector('body[data-state="ready"]', { timeout: 300_000 });
    await quiet(page);
    firstSent.stop();
    const counts = new Map();
    for (const u of first.requested) counts.set(u, (counts.get(u) ?? 0) + 1);
    const short = (u) => u.replace(server().url, '/');
    // each Worker imports its own copy of the page's modules (wasm/*.js, lab/*.js): the browser asks
    // for those again and the server answers 304 with no body; every other file is asked for once
    const twice = [...counts].filter(([u, n]) => n > 1 && !u.endsWith('.js')).map(([u, n]) => `${short(u)} x${n}`);
    const full = new Map();
    for (const r of firstSent.rows) if (r.status === 200) full.set(r.url, (full.get(r.url) ?? 0) + 1);
    const sentTwice = [...full].filter(([, n]) => n > 1).map(([u, n]) => `${u} x${n}`);
    const total = firstSent.rows.reduce((s, r) => s + r.bytes, 0);
    t.diagnostic(`first load: ${first.requested.length} requests (${counts.size} URLs), ${(total / 1e6).toFixed(2)} MB sent by the server`);
    t.diagnostic(`answered 304 (module scripts a worker imports again): ${firstSent.rows.filter((r) => r.status === 304).length}`);
    assert.deepEqual(twice, [], 'no file but a module script is requested twice in a first load');
    assert.deepEqual(sentTwice, [], 'the server sends no file in full twice');

    const again = record(page), againSent = serverLog(server().server);
    await page.reload();
    await page.waitForSelector('body[data-state="ready"]', { timeout: 300_000 });
    await quiet(page);
    againSent.stop();
    const bytes = againSent.rows.reduce((s, r) => s + r.bytes, 0);
    const browserBytes = again.rows.reduce((s, r) => s + r.bytes, 0);
    const sent = againSent.rows.filter((r) => r.status === 200).map((r) => `${r.url} ${r.bytes}`);
    t.diagnostic(`reload: ${againSent.rows.length} responses, ${bytes} bytes sent by the server (${browserBytes} as the browser counts them); `
      + `sent in full: ${sent.join(', ') || 'none'}`);
    assert.ok(bytes < 100_000, `a reload transferred ${bytes} bytes`);
    assert.deepEqual(problems(), []);
  } finally {
    await b.close();
  }
});

// Issue 45, 3f: every docs file the page names is a link, and every such link is served (200).
test('every docs/*.md the page names is a link that the server answers', async (t) => {
  const b = await launch();
  try {
    const { page, problems } = await openPage(b.context);
    await page.goto(server().url);
    await page.waitForSelector('body[data-state="ready"]', { timeout: 300_000 });
    const { links, bare } = await page.evaluate(() => {
      const links = [...document.querySelectorAll('a[href]')].map((a) => a.href).filter((h) => /\/docs\/[^/]+\.md$/.test(h));
      const bare = [];
      const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode())
        if (/docs\/[\w-]+\.md/.test(n.textContent) && !n.parentElement.closest('a')) bare.push(n.textContent.trim().slice(0, 80));
      return { links, bare };
    });
    t.diagnostic(`${links.length} docs links: ${[...new Set(links)].map((h) => h.replace(server().url, '/')).join(' ')}`);
    assert.deepEqual(bare, [], 'every mention of a docs file is inside a link');
    assert.ok(links.length >= 7, `the page links docs files (${links.length})`);
    for (const href of new Set(links)) {
      const r = await fetch(href);
      assert.equal(r.status, 200, href);
      assert.match(r.headers.get('content-type'), /^text\/markdown/, href);
    }
    assert.deepEqual(problems(), []);
  } finally {
    await b.close();
  }
});

// Issue 45, item 2: with its folds closed, the page is at most 8,000 px tall at 1280 x 800 once every
// panel has drawn (a panel's results take room only once it has any). The phone's height is logged.
test('the page is at most 8,000 px tall at 1280 x 800 with its folds closed', async (t) => {
  for (const [width, height, limit] of [[1280, 800, 8000], [390, 844, Infinity]]) {
    const b = await launch({ viewport: { width, height } });
    try {
      const { page, problems } = await openPage(b.context);
      await page.goto(server().url);
      await page.waitForSelector('body[data-state="ready"]', { timeout: 300_000 });
      await page.waitForSelector('#picture[data-state="ready"]', { timeout: 300_000 });
      await quiet(page);
      const open = await page.$$eval('main details[open]', (ds) => ds.map((d) => d.closest('section')?.id ?? '?'));
      assert.deepEqual(open, [], 'every fold is closed on a first load');
      const { total, panels } = await page.evaluate(() => ({
        total: document.documentElement.scrollHeight,
        panels: [...document.querySelectorAll('main section.panel')].map((s) => `${s.id} ${Math.round(s.getBoundingClientRect().height)}`),
      }));
      t.diagnostic(`${width} x ${height}: ${total} px (${panels.join(', ')})`);
      assert.ok(total <= limit, `the page is ${total} px tall at ${width} px (at most ${limit})`);
      assert.deepEqual(problems(), []);
    } finally {
      await b.close();
    }
  }
});
