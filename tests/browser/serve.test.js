// serve.test.js: scripts/serve.js, the playground's static server: what it serves, with which
// headers, and what it refuses. Plain HTTP from Node (no browser needed).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/serve.js';

let server;
before(async () => {
  server = await startServer({ port: 0 });
});
after(() => server?.close());

// A raw GET (fetch would normalise '..' away before sending, which is exactly what must be tested).
function get(path, method = 'GET', headers = {}) {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('serves web/ at / and the package wasm/ at /wasm/ with the right MIME types', async () => {
  const cases = [
    ['/', 'text/html; charset=utf-8'],
    ['/index.html', 'text/html; charset=utf-8'],
    ['/main.js', 'text/javascript; charset=utf-8'],
    ['/style.css', 'text/css; charset=utf-8'],
    ['/views/heatmap.js', 'text/javascript; charset=utf-8'],
    ['/wasm/index.js', 'text/javascript; charset=utf-8'],
    ['/wasm/attention.wasm', 'application/wasm'],
    ['/wasm/attention-scalar.wasm', 'application/wasm'],
  ];
  for (const [path, type] of cases) {
    const r = await get(path);
    assert.equal(r.status, 200, path);
    assert.equal(r.headers['content-type'], type, path);
    assert.equal(Number(r.headers['content-length']), r.body.length, path);
  }
  const wasm = await get('/wasm/attention.wasm');
  assert.deepEqual([...wasm.body.subarray(0, 4)], [0, 0x61, 0x73, 0x6d], 'wasm magic number');
});

test('sends the cross-origin isolation headers on every response, errors too', async () => {
  for (const path of ['/', '/wasm/attention.wasm', '/missing']) {
    const r = await get(path);
    assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin', path);
    assert.equal(r.headers['cross-origin-embedder-policy'], 'require-corp', path);
  }
});

test('refuses to leave its folders and answers 404, 405 and HEAD properly', async () => {
  for (const path of ['/../package.json', '/wasm/../package.json', '/wasm/../../package.json', '/%2e%2e/package.json',
    '/wasm/..%2f..%2fpackage.json', '/..%5cpackage.json', '/%00', '/nope.js', '/wasm/nope.wasm', '/%E0%A4%A']) {
    const r = await get(path);
    assert.equal(r.status, 404, path);
    assert.doesNotMatch(r.body.toString(), /"name": "attention-wasm"/, path);
  }
  const dir = await get('/views');
  assert.equal(dir.status, 301);
  assert.equal(dir.headers.location, '/views/');
  assert.equal((await get('/', 'POST')).status, 405);
  const head = await get('/wasm/attention.wasm', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.ok(Number(head.headers['content-length']) > 1000);
});

test('validators: an ETag and Last-Modified on every file, and 304 with no body for a copy that is current', async () => {
  for (const path of ['/', '/wasm/attention.wasm', '/models/fortunes-bpe.safetensors', '/docs/interpretability.md']) {
    const r = await get(path);
    assert.equal(r.status, 200, path);
    assert.match(r.headers.etag, /^W\/"[0-9a-f]+-[0-9a-f]+"$/, path);
    assert.ok(Number.isFinite(Date.parse(r.headers['last-modified'])), path);
    assert.equal(r.headers['cache-control'], 'no-cache', path);
    const again = await get(path, 'GET', { 'If-None-Match': r.headers.etag });
    assert.equal(again.status, 304, path);
    assert.equal(again.body.length, 0, path);
    assert.equal(again.headers.etag, r.headers.etag, path);
    assert.equal(again.headers['cross-origin-embedder-policy'], 'require-corp', path);
    assert.equal(again.headers['cross-origin-opener-policy'], 'same-origin', path);
    assert.equal((await get(path, 'GET', { 'If-None-Match': `"other", ${r.headers.etag.slice(2)}` })).status, 304, 'a strong form of the tag, in a list');
    assert.equal((await get(path, 'GET', { 'If-None-Match': 'W/"0-0"' })).status, 200, 'another tag: the file');
    assert.equal((await get(path, 'GET', { 'If-Modified-Since': r.headers['last-modified'] })).status, 304, path);
    assert.equal((await get(path, 'GET', { 'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 200, path);
    assert.equal((await get(path, 'GET', { 'If-Modified-Since': 'not a date' })).status, 200, path);
    // If-None-Match wins over If-Modified-Since (RFC 9110, 13.1.3)
    assert.equal((await get(path, 'GET', { 'If-None-Match': 'W/"0-0"', 'If-Modified-Since': r.headers['last-modified'] })).status, 200);
  }
});

test('gzip for text and wasm where the browser accepts it, with its own tag; weights go as they are', async () => {
  for (const path of ['/', '/wasm/attention.wasm', '/docs/interpretability.md', '/models/index.json']) {
    const plain = await get(path);
    const z = await get(path, 'GET', { 'Accept-Encoding': 'gzip, deflate, br' });
    assert.equal(z.status, 200, path);
    assert.equal(z.headers['content-encoding'], 'gzip', path);
    assert.equal(z.headers.vary, 'Accept-Encoding', path);
    assert.equal(Number(z.headers['content-length']), z.body.length, path);
    assert.ok(z.body.length < plain.body.length, `${path}: ${z.body.length} < ${plain.body.length}`);
    assert.deepEqual(gunzipSync(z.body), plain.body, path);
    assert.equal(z.headers.etag, `${plain.headers.etag.slice(0, -1)}-gz"`, path);
    assert.equal((await get(path, 'GET', { 'Accept-Encoding': 'gzip', 'If-None-Match': z.headers.etag })).status, 304, path);
    assert.equal((await get(path, 'GET', { 'Accept-Encoding': 'gzip', 'If-None-Match': plain.headers.etag })).status, 200,
      `${path}: the plain form's tag does not validate the gzip form`);
  }
  const w = await get('/models/fortunes-bpe.safetensors', 'GET', { 'Accept-Encoding': 'gzip' });
  assert.equal(w.headers['content-encoding'], undefined);
});

test('serves docs/ at /docs/ as text/markdown', async () => {
  const r = await get('/docs/interpretability.md');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'text/markdown; charset=utf-8');
  assert.match(r.body.toString(), /^# /);
  assert.equal((await get('/docs/../package.json')).status, 404);
});

test('the command line prints its URL and serves on PORT', async () => {
  const script = fileURLToPath(new URL('../../scripts/serve.js', import.meta.url));
  const child = spawn(process.execPath, [script], { env: { ...process.env, PORT: '0' } });
  try {
    const line = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c) => {
        out += c;
        if (out.includes('\n')) resolve(out);
      });
      child.on('exit', (code) => reject(new Error(`serve.js exited with ${code}`)));
    });
    const url = line.match(/http:\/\/127\.0\.0\.1:\d+\//)?.[0];
    assert.ok(url, `no URL in: ${line}`);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /Attention playground/);
  } finally {
    child.kill();
  }
  const bad = spawn(process.execPath, [script], { env: { ...process.env, PORT: 'eighty' } });
  const [code, err] = await new Promise((resolve) => {
    let e = '';
    bad.stderr.on('data', (c) => (e += c));
    bad.on('exit', (c) => resolve([c, e]));
  });
  assert.equal(code, 1);
  assert.match(err, /PORT must be an integer/);
});

test('HOST=0.0.0.0 listens on every interface and prints the addresses to open from a phone', async () => {
  const script = fileURLToPath(new URL('../../scripts/serve.js', import.meta.url));
  const child = spawn(process.execPath, [script], { env: { ...process.env, PORT: '0', HOST: '0.0.0.0' } });
  try {
    const out = await new Promise((resolve, reject) => {
      let text = '';
      child.stdout.on('data', (c) => {
        text += c;
        if (/every interface/.test(text)) resolve(text);
      });
      child.on('exit', (code) => reject(new Error(`serve.js exited with ${code}: ${text}`)));
    });
    const url = out.match(/http:\/\/127\.0\.0\.1:\d+\//)?.[0];
    assert.ok(url, `no local URL in: ${out}`);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    // Each non-internal IPv4 address of this machine is printed and serves the page too.
    const { networkInterfaces } = await import('node:os');
    const addrs = Object.values(networkInterfaces()).flat().filter((a) => a && !a.internal && a.family === 'IPv4');
    for (const a of addrs) {
      const there = out.match(new RegExp(`http://${a.address.replace(/\./g, '\\.')}:\\d+/`))?.[0];
      assert.ok(there, `${a.address} is not printed in: ${out}`);
      assert.equal((await fetch(there)).status, 200);
    }
  } finally {
    child.kill();
  }
});

test('the server binds 127.0.0.1 unless told otherwise', async () => {
  const { startServer } = await import('../../scripts/serve.js');
  const s = await startServer({ port: 0 });
  try {
    assert.equal(s.server.address().address, '127.0.0.1');
  } finally {
    await s.close();
  }
});
