// serve.js: the playground's static server. Serves web/ at /, the package's own wasm/ at /wasm/, lab/ at /lab/
// (the page imports the package itself, no copy) and docs/ at /docs/ (the page links to them as
// ../docs/x.md, which resolves there both here and from a checkout's web/index.html) and data/ at /data/
// (the feature browser's corpus, data/chars.txt, ours), on 127.0.0.1,
// with correct MIME types and the cross-origin isolation headers (COOP same-origin + COEP require-corp).
// Text and wasm go gzip-compressed to a browser that accepts it (index.html: 52 KB -> 14 KB; each
// .wasm about 2.4x smaller), compressed once per file version and kept. Every file carries validators (an ETag from its size and modification time, and Last-Modified);
// `Cache-Control: no-cache` makes the browser ask each time, and a file it has is answered 304 Not
// Modified with no body, so a reload costs headers only. No server logic beyond files.
//   node scripts/serve.js            (PORT env, default 8080; HOST env, default 127.0.0.1)
//   HOST=0.0.0.0 npm start           (reachable from a phone on the same network)
//   import { startServer } from './scripts/serve.js'; const { server, url } = await startServer({ port: 0 });
import { createServer } from 'node:http';
import { networkInterfaces } from 'node:os';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.safetensors': 'application/octet-stream',
  '.ts': 'text/plain; charset=utf-8',
};

// Types worth compressing (model weights, float data, barely shrink), and the largest file compressed.
const COMPRESS = /^(text\/|application\/(json|wasm))/;
const COMPRESS_MAX = 8 * 1024 * 1024;
const gzipped = new Map(); // file -> { etag, body }: the last version compressed

const PLAIN = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' };
const ISOLATED = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  ...PLAIN,
};

/**
 * Maps a URL path to a file: /wasm/... -> <root>/wasm/..., /lab/... -> <root>/lab/... (the page's
 * shared logic), anything else -> <root>/web/...;
 * mounts may override that (e.g. { '/': someDir } serves only someDir). Returns null for a
 * path that would leave its mount (.., encoded separators, NUL).
 */
function resolvePath(mounts, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  // Longest matching mount prefix wins.
  const prefix = Object.keys(mounts)
    .filter((p) => decoded === p.replace(/\/$/, '') || decoded.startsWith(p.endsWith('/') ? p : `${p}/`))
    .sort((a, b) => b.length - a.length)[0];
  if (prefix === undefined) return null;
  const base = resolve(mounts[prefix]);
  const rest = decoded.slice(prefix.replace(/\/$/, '').length);
  const file = resolve(join(base, rest));
  if (file !== base && !file.startsWith(base + sep)) return null;
  return file;
}

/** A file's weak validator: its size and modification time (to the microsecond). */
export function etagOf(info) {
  return `W/"${info.size.toString(16)}-${Math.round(info.mtimeMs * 1000).toString(16)}"`;
}

/**
 * True when the request's conditional headers say the browser's copy is current (RFC 9110, 13.1):
 * If-None-Match when present (any of its tags matches, weakly, or it is *), else If-Modified-Since
 * (the file changed no later than that date, to the second).
 */
export function notModified(headers, etag, mtime) {
  const inm = headers['if-none-match'];
  if (inm !== undefined) {
    const weak = (t) => t.trim().replace(/^W\//, '');
    return inm.trim() === '*' || inm.split(',').some((t) => weak(t) === weak(etag));
  }
  const ims = headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  return Number.isFinite(since) && Math.floor(mtime.getTime() / 1000) <= Math.floor(since / 1000);
}

async function handle(mounts, req, res, isolate) {
  const HEADERS = isolate ? ISOLATED : PLAIN;
  const send = (code, text) => {
    res.writeHead(code, { ...HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(req.method === 'HEAD' ? undefined : `${code} ${text}\n`);
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed');
  const urlPath = new URL(req.url, 'http://localhost').pathname;
  let file = resolvePath(mounts, urlPath);
  if (file === null) return send(404, 'not found');
  let info;
  try {
    info = await stat(file);
    if (info.isDirectory()) {
      if (!urlPath.endsWith('/')) {
        res.writeHead(301, { ...HEADERS, Location: `${urlPath}/` });
        return res.end();
      }
      file = join(file, 'index.html');
      info = await stat(file);
    }
  } catch {
    return send(404, 'not found');
  }
  if (!info.isFile()) return send(404, 'not found');
  const type = MIME[extname(file).toLowerCase()] ?? 'application/octet-stream';
  const gzip = COMPRESS.test(type) && info.size <= COMPRESS_MAX && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
  const tag = etagOf(info);
  // the compressed form is another representation: its own tag (RFC 9110, 8.8.3)
  const validators = { ETag: gzip ? `${tag.slice(0, -1)}-gz"` : tag, 'Last-Modified': info.mtime.toUTCString() };
  if (COMPRESS.test(type)) validators.Vary = 'Accept-Encoding';
  if (notModified(req.headers, validators.ETag, info.mtime)) {
    res.writeHead(304, { ...HEADERS, ...validators });
    return res.end();
  }
  if (gzip) {
    let hit = gzipped.get(file);
    if (hit?.etag !== tag) gzipped.set(file, (hit = { etag: tag, body: gzipSync(await readFile(file)) }));
    res.writeHead(200, { ...HEADERS, ...validators, 'Content-Type': type, 'Content-Encoding': 'gzip', 'Content-Length': hit.body.length });
    return res.end(req.method === 'HEAD' ? undefined : hit.body);
  }
  res.writeHead(200, {
    ...HEADERS,
    ...validators,
    'Content-Type': type,
    'Content-Length': info.size,
  });
  if (req.method === 'HEAD') return res.end();
  const stream = createReadStream(file);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

/**
 * Starts the server. port 0 picks a free port. mounts maps URL prefixes to directories; the default
 * serves <root>/web at /, <root>/wasm at /wasm/, <root>/lab at /lab/, <root>/docs at /docs/ and <root>/data at /data/
 * (root = this package).
 * isolate: false leaves out the cross-origin isolation headers (a page then has no SharedArrayBuffer,
 * so no threads: what tests of the fallback need).
 * Resolves to { server, url, close } where close() also drops keep-alive connections.
 */
export function startServer({ port = 0, host = '127.0.0.1', root = ROOT, mounts, isolate = true } = {}) {
  const table = mounts ?? { '/': join(root, 'web'), '/wasm/': join(root, 'wasm'), '/lab/': join(root, 'lab'), '/docs/': join(root, 'docs'),
    '/data/': join(root, 'data') };
  const server = createServer((req, res) => {
    handle(table, req, res, isolate).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  return new Promise((resolveStart, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const url = `http://${host}:${server.address().port}/`;
      const close = () => new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      });
      resolveStart({ server, url, close });
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = process.env.PORT === undefined ? 8080 : Number(process.env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve.js: PORT must be an integer in 0..65535, got ${JSON.stringify(process.env.PORT)}`);
    process.exit(1);
  }
  const host = process.env.HOST || '127.0.0.1';
  const everywhere = host === '0.0.0.0' || host === '::';
  startServer({ port, host }).then(({ server, url }) => {
    const { port: p } = server.address();
    console.log(`attention-wasm playground: ${everywhere ? `http://127.0.0.1:${p}/` : url}  (Ctrl+C to stop)`);
    if (everywhere) {
      // Every address of this machine a phone on the same network could use.
      const addrs = Object.values(networkInterfaces()).flat().filter((a) => a && !a.internal && a.family === 'IPv4');
      for (const a of addrs) console.log(`  on this network: http://${a.address}:${p}/`);
      console.log('  (listening on every interface: anyone on this network can open the page)');
    }
  }, (e) => {
    console.error(`serve.js: could not listen on ${host}:${port}: ${e.message}`);
    process.exit(1);
  });
}
