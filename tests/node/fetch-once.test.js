// fetch-once.test.js: web/fetch-once.js, the page's memoised fetch: one request per absolute URL,
// shared bytes, a failure forgotten so a retry asks again. Against scripts/serve.js, counting requests.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServer } from '../../scripts/serve.js';
import { fetchJsonOnce, fetchOnce, fetchTextOnce } from '../../web/fetch-once.js';

let server;
const seen = [];
before(async () => {
  server = await startServer({ port: 0 });
  server.server.on('request', (req) => seen.push(req.url));
});
after(() => server?.close());

test('fetchOnce asks for each absolute URL once and shares the bytes', async () => {
  const a = new URL('models/stream-text.txt', server.url);
  const [x, y] = await Promise.all([fetchOnce(a), fetchOnce(a.href)]);
  const z = await fetchOnce(new URL('./models/../models/stream-text.txt', server.url));
  assert.ok(x instanceof ArrayBuffer && x.byteLength > 1000, `got ${x.byteLength} bytes`);
  assert.equal(x, y);
  assert.equal(x, z);
  assert.equal(seen.filter((u) => u === '/models/stream-text.txt').length, 1, seen.join(' '));
  assert.equal(await fetchTextOnce(a), new TextDecoder().decode(x));
  assert.equal(seen.filter((u) => u === '/models/stream-text.txt').length, 1);
  const j1 = await fetchJsonOnce(new URL('models/index.json', server.url));
  const j2 = await fetchJsonOnce(new URL('models/index.json', server.url));
  assert.notEqual(j1, j2, 'each caller gets its own parsed copy');
  assert.deepEqual(j1, j2);
});

test('a failed fetch rejects naming the file and status, and is tried again next time', async () => {
  const missing = new URL('models/no-such-file.bin', server.url);
  await assert.rejects(fetchOnce(missing), /could not fetch no-such-file\.bin: HTTP 404/);
  await assert.rejects(fetchOnce(missing), /HTTP 404/);
  assert.equal(seen.filter((u) => u === '/models/no-such-file.bin').length, 2);
});
