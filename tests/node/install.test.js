// install.test.js: every other way the README says to get the package. (1) From a git checkout,
// as `npm install <path>` and `npm install git+file://...` (the route of a GitHub URL): the
// committed wasm means no Emscripten is needed. (2) In a bundler's browser build, from the
// packed tarball installed with esbuild and Vite from the npm registry: esbuild
// (--bundle --platform=browser) needs the two .wasm files copied beside the bundle (it keeps
// `new URL('./x.wasm', import.meta.url)` as written), Vite emits them itself; each page loads in
// Chromium, computes softmax attention and a model's forward pass, and matches Node to the bit.
// (3) `npm publish --dry-run` accepts the package. Network: the npm registry only.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// What every route computes: softmax attention on seeded inputs and a seeded model's logits.
const COMPUTE = `
  const rand = (length, seed) => { let s = seed >>> 0 || 1; return Float32Array.from({ length }, () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; }); };
  const lib = await loadAttention();
  const att = lib.softmaxAttention({ q: rand(48, 1), k: rand(48, 2), v: rand(48, 3), n: 6, d: 8, heads: 2, causal: true });
  const model = lib.createModel({ vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 8, seed: 4, attention: 'local' });
  const tok = charTokenizer({ text: 'abcdef' });
  const logits = model.forward([...tok.encode('face')]).logits;
  const result = { simd: lib.simd, relaxed: lib.relaxed, attention: [...att.output], logits: [...logits], forms: lib.forms.length };
`;

let dir;
let tarball;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aw-install-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT });
  tarball = join(dir, JSON.parse(stdout)[0].filename);
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

// flags: node's own (['--experimental-wasm-relaxed-simd'] makes Node 20 load the relaxed build,
// as Chromium does, so a page's numbers can be compared bit for bit)
async function nodeResult(cwd, flags = []) {
  const code = `import { loadAttention, charTokenizer } from 'attention-wasm';\n${COMPUTE}\nconsole.log(JSON.stringify(result));`;
  const { stdout } = await run(process.execPath, [...flags, '--input-type=module', '-e', code], { cwd });
  return JSON.parse(stdout);
}

function app(name) {
  const d = join(dir, name);
  mkdirSync(d);
  writeFileSync(join(d, 'package.json'), JSON.stringify({ name: `aw-${name}`, private: true, type: 'module' }));
  return d;
}

test('from a checkout: npm install <path> and npm install git+file:// work without Emscripten', async () => {
  // a clean clone of this checkout's HEAD stands in for the GitHub repository
  const repo = join(dir, 'repo');
  await run('git', ['clone', '--quiet', '--depth', '1', pathToFileURL(ROOT).href, repo]);
  const want = await nodeResult(ROOT);
  for (const [name, spec] of [['from-path', repo], ['from-git', `git+file://${repo}`]]) {
    const d = app(name);
    // PATH without emcc: the committed wasm must be enough
    const env = { ...process.env, PATH: process.env.PATH.split(':').filter((p) => !/emscripten/.test(p)).join(':') };
    await run('npm', ['install', spec, '--no-audit', '--no-fund'], { cwd: d, env });
    assert.deepEqual(await nodeResult(d), want, `${name}: the installed package computes what the checkout does`);
  }
});

test('npm publish --dry-run accepts the package', async () => {
  const { stderr } = await run('npm', ['publish', '--dry-run', '--ignore-scripts'], { cwd: ROOT });
  assert.match(stderr, /attention-wasm@/);
});

test('esbuild and Vite browser builds load, compute and match Node', async (t) => {
  const d = app('bundlers');
  await run('npm', ['install', tarball, 'esbuild@0.25', 'vite@7', '--no-audit', '--no-fund'], { cwd: d, timeout: 300_000 });
  // Chromium validates relaxed SIMD, so the page runs the relaxed build: Node computes with it too
  const want = await nodeResult(d, ['--experimental-wasm-relaxed-simd']);
  assert.equal(want.relaxed, true);
  // The page also loads the threaded build (2 threads: the server sends the cross-origin isolation
  // headers), which must find attention-threads.wasm and thread-worker.js from the bundle.
  const THREADED = `
  const lt = await loadAttention({ threads: 2 });
  const att2 = lt.softmaxAttention({ q: rand(48, 1), k: rand(48, 2), v: rand(48, 3), n: 6, d: 8, heads: 2, causal: true });
  window.threaded = { threads: lt.threads, reason: lt.threadsReason, attention: [...att2.output] };`;
  writeFileSync(join(d, 'main.js'), `import { loadAttention, charTokenizer } from 'attention-wasm';\n${COMPUTE}\nwindow.result = result;\n${THREADED}\n`);
  // esbuild, with the README's flags: a browser bundle with no Node import left; the files that the
  // loader finds through new URL(..., import.meta.url) go beside it (the README's cp line)
  await run(join(d, 'node_modules/.bin/esbuild'), ['main.js', '--bundle', '--platform=browser', '--format=esm',
    '--outfile=esbuild-dist/main.js'], { cwd: d });
  const wasmDir = join(d, 'node_modules/attention-wasm/wasm');
  for (const f of [...readdirSync(wasmDir).filter((x) => x.endsWith('.wasm')), 'thread-worker.js']) {
    cpSync(join(d, 'node_modules/attention-wasm/wasm', f), join(d, 'esbuild-dist', f));
  }
  writeFileSync(join(d, 'esbuild-dist/index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="./main.js"></script>');
  // Vite: the .wasm files are assets it finds through new URL(..., import.meta.url)
  writeFileSync(join(d, 'index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="/main.js"></script>');
  await run(join(d, 'node_modules/.bin/vite'), ['build', '--outDir', 'vite-dist', '--logLevel', 'warn'], { cwd: d });
  const assets = readdirSync(join(d, 'vite-dist/assets'));
  assert.ok(assets.some((f) => f.endsWith('.wasm')), `Vite emitted the wasm (${assets.join(', ')})`);
  const { launch, openPage } = await import('../browser/helpers.js');
  const { startServer } = await import('../../scripts/serve.js');
  for (const out of ['esbuild-dist', 'vite-dist']) {
    const server = await startServer({ port: 0, mounts: { '/': join(d, out) } });
    const browser = await launch();
    try {
      const { page, problems } = await openPage(browser.context);
      await page.goto(server.url);
      await page.waitForFunction(() => window.result, null, { timeout: 120000 });
      const got = await page.evaluate(() => window.result);
      t.diagnostic(`${out}: lib.simd ${got.simd}, ${got.forms} forms, logits[0] ${got.logits[0]}`);
      assert.deepEqual(got, want, `${out}: the page computes what Node computes`);
      await page.waitForFunction(() => window.threaded, null, { timeout: 600000 });
      const threaded = await page.evaluate(() => window.threaded);
      t.diagnostic(`${out}: threads ${threaded.threads} (${threaded.reason ?? 'running'})`);
      assert.equal(threaded.threads, 2, `${out}: the threaded build runs 2 threads from the bundle (${threaded.reason})`);
      assert.deepEqual(threaded.attention, want.attention, `${out}: 2 threads give the single-thread bits`);
      assert.deepEqual(problems(), [], `${out}: console errors or failed requests`);
    } finally {
      await browser.close();
      await server.close();
    }
  }
});
