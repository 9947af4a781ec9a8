// modules-option.test.js: loadAttention({ modules }) and compiledModules() (issue 45, 3g): a page
// posts the modules it compiled to its Workers, which then neither fetch nor compile the .wasm again.
// Shown in a worker thread given the scalar module under the SIMD build's URL: it runs the module it
// was given (lib.simd is false), so it did not read the file.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { compiledModules, loadAttention } from '../../wasm/index.js';

const SIMD = new URL('../../wasm/attention.wasm', import.meta.url).href;
const SCALAR = new URL('../../wasm/attention-scalar.wasm', import.meta.url).href;

test('compiledModules lists what the loader compiled, by URL', async () => {
  const lib = await loadAttention({ simd: false });
  const ms = compiledModules();
  assert.ok(ms[SCALAR] instanceof WebAssembly.Module, Object.keys(ms).join(' '));
  assert.equal(lib.simd, false);
});

test('a worker given modules uses them instead of reading the .wasm', async () => {
  await loadAttention({ simd: false });
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.index).then(async ({ loadAttention, compiledModules }) => {
      const lib = await loadAttention({ modules: workerData.modules, relaxed: false });
      parentPort.postMessage({ simd: lib.simd, sum: lib.matmul ? 'ok' : 'no', keys: Object.keys(compiledModules()) });
    }).catch((e) => parentPort.postMessage({ error: e.message }));`;
  const w = new Worker(code, { eval: true, workerData: { index: new URL('../../wasm/index.js', import.meta.url).href,
    modules: { [SIMD]: compiledModules()[SCALAR] } } });
  const got = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
  await w.terminate();
  assert.equal(got.error, undefined);
  assert.equal(got.simd, false, 'the module given under the SIMD URL (the scalar one) is what runs');
  assert.ok(got.keys.includes(SIMD));
});

test('modules must be an object of WebAssembly.Modules', async () => {
  await assert.rejects(loadAttention({ modules: [] }), /loadAttention: modules must be an object \{ \[url\]: WebAssembly.Module \}/);
  await assert.rejects(loadAttention({ modules: null }), /modules must be an object/);
  await assert.rejects(loadAttention({ modules: { [SIMD]: new Uint8Array(4) } }), /modules\[".*attention.wasm"\] must be a WebAssembly.Module/);
  const lib = await loadAttention(); // still usable after
  assert.ok(lib.forms.length > 0);
});
