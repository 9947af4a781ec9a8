// pack.test.js: the package as a user gets it. `npm pack`, install the tarball into a fresh empty
// folder, then (a) import 'attention-wasm' there in a separate Node process and compute softmax
// attention against the float64 JS reference, and (b) load it in Chromium from node_modules (an
// import map, no bundler) and compute the same. Needs wasm/*.wasm built (npm test runs build.sh first).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { TOL, expectClose, rand, softmaxAttentionF64 } from './helpers.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

// The computation both checks run: n = 9, d = 8, two heads, causal, seeded inputs.
const CASE = { n: 9, d: 8, heads: 2, causal: true, seeds: [3, 4, 5] };
const SCRIPT = `
  const n = ${CASE.n}, d = ${CASE.d};
  function rand(length, seed) {
    let s = seed >>> 0 || 1;
    const out = new Float32Array(length);
    for (let i = 0; i < length; i++) { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; out[i] = -1 + (s / 2 ** 32) * 2; }
    return out;
  }
  const [q, k, v] = ${JSON.stringify(CASE.seeds)}.map((seed) => rand(n * d, seed));
  const lib = await loadAttention();
  const scalar = await loadAttention({ simd: false });
  const args = { q, k, v, n, d, heads: ${CASE.heads}, causal: ${CASE.causal}, returnWeights: true };
  const r = lib.softmaxAttention(args);
  const rs = scalar.softmaxAttention(args);
  const result = { simd: lib.simd, scalarSimd: scalar.simd, output: [...r.output], weights: [...r.weights], scalarOutput: [...rs.output] };
`;

let dir; // temp: the tarball and the install folder
let app; // the fresh folder the tarball is installed into
let packed; // npm pack --json entry

before(async () => {
  for (const f of ['attention.wasm', 'attention-scalar.wasm']) {
    if (!existsSync(join(ROOT, 'wasm', f))) throw new Error(`wasm/${f} is missing: run \`bash build.sh wasm\` first`);
  }
  dir = mkdtempSync(join(tmpdir(), 'aw-pack-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT });
  [packed] = JSON.parse(stdout);
  app = join(dir, 'app');
  await run('mkdir', [app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'aw-pack-check', private: true, type: 'module' }));
  await run('npm', ['install', join(dir, packed.filename), '--no-audit', '--no-fund', '--offline'], { cwd: app });
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function expected() {
  const [q, k, v] = CASE.seeds.map((seed) => rand(CASE.n * CASE.d, seed));
  return softmaxAttentionF64({ q, k, v, n: CASE.n, d: CASE.d, heads: CASE.heads, causal: CASE.causal });
}

test('the tarball holds the wrapper, the types, the wasm builds and the PyTorch model, and nothing else', (t) => {
  const files = packed.files.map((f) => f.path).sort();
  t.diagnostic(`${packed.filename}: ${files.length} files, ${packed.size} bytes packed`);
  for (const f of ['package.json', 'wasm/index.js', 'wasm/core.js', 'wasm/index.d.ts', 'wasm/attention.wasm',
    'wasm/attention-scalar.wasm', 'wasm/attention-threads.wasm', 'wasm/thread-worker.js', 'scripts/torch_model.py']) assert.ok(files.includes(f), `${f} is not in the tarball`);
  const stray = files.filter((f) => !/^(package\.json|README\.md|LICENSE|wasm\/[^/]+\.(js|d\.ts|wasm)|docs\/[^/]+\.(md|png)|scripts\/torch_model\.py)$/.test(f));
  // the README's and docs' relative links resolve inside the tarball (so they work on npmjs.com)
  for (const f of files.filter((x) => x.endsWith('.md'))) {
    const text = readFileSync(join(app, 'node_modules', PKG.name, f), 'utf8');
    for (const [, link] of text.matchAll(/\]\(([^)#]+)\)/g)) {
      if (/^[a-z]+:/.test(link)) continue;
      assert.ok(files.includes(join(f, '..', link)), `${f} links ${link}, which is not in the tarball`);
    }
  }
  assert.deepEqual(stray, [], 'files outside the package surface');
  // Every relative import of every packed module resolves to a packed file.
  for (const f of files.filter((x) => x.endsWith('.js'))) {
    const text = readFileSync(join(app, 'node_modules', PKG.name, f), 'utf8');
    for (const [, spec] of text.matchAll(/^\s*(?:import|export)[^'"]*from\s+['"](\.[^'"]+)['"]/gm)) {
      const target = join(f, '..', spec);
      assert.ok(files.includes(target), `${f} imports ${spec}, which is not in the tarball`);
    }
  }
});

test('installed into an empty folder, it imports and computes in Node', async (t) => {
  const code = `import { loadAttention } from '${PKG.name}';\n${SCRIPT}\nconsole.log(JSON.stringify(result));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: app });
  const got = JSON.parse(stdout);
  t.diagnostic(`installed package in Node: lib.simd = ${got.simd}, forced scalar: lib.simd = ${got.scalarSimd}`);
  assert.equal(got.simd, true, 'Node 20 validates SIMD128, so auto picks the SIMD build');
  assert.equal(got.scalarSimd, false);
  const ref = expected();
  expectClose(t, 'node output vs float64', Float32Array.from(got.output), ref.output, TOL.attention);
  expectClose(t, 'node weights vs float64', Float32Array.from(got.weights), ref.weights, TOL.attention_weights);
  expectClose(t, 'node scalar output vs float64', Float32Array.from(got.scalarOutput), ref.output, TOL.attention);
});

test('installed into an empty folder, it loads from node_modules in Chromium (import map, no bundler)', async (t) => {
  const { launch, openPage } = await import('../browser/helpers.js');
  const { startServer } = await import('../../scripts/serve.js');
  writeFileSync(join(app, 'index.html'), `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>pack check</title>
<script type="importmap">{ "imports": { "${PKG.name}": "./node_modules/${PKG.name}/wasm/index.js" } }</script>
<script type="module">
  import { loadAttention } from '${PKG.name}';
  ${SCRIPT}
  window.result = result;
</script></head><body></body></html>`);
  const server = await startServer({ port: 0, mounts: { '/': app } });
  const browser = await launch();
  try {
    const { page, problems } = await openPage(browser.context);
    await page.goto(server.url);
    await page.waitForFunction(() => window.result, null, { timeout: 120000 });
    const got = await page.evaluate(() => window.result);
    t.diagnostic(`installed package in Chromium: lib.simd = ${got.simd}, forced scalar: lib.simd = ${got.scalarSimd}`);
    assert.equal(got.simd, true);
    assert.equal(got.scalarSimd, false);
    const ref = expected();
    expectClose(t, 'chromium output vs float64', Float32Array.from(got.output), ref.output, TOL.attention);
    expectClose(t, 'chromium weights vs float64', Float32Array.from(got.weights), ref.weights, TOL.attention_weights);
    expectClose(t, 'chromium scalar output vs float64', Float32Array.from(got.scalarOutput), ref.output, TOL.attention);
    assert.deepEqual(problems(), [], 'console errors or failed requests');
  } finally {
    await browser.close();
    await server.close();
  }
});
