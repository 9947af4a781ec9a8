// sparse-read.test.js: the learned panel's "Which keys each query read" fold (web/views/sparse-read.js)
// is offered for exactly the layers whose form selects (lib.forms' selects: nsa, dsa), with the
// summary model.sparseReading gives on the same text, and hidden for a dense form (softmax).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { playgroundSuite } from './helpers.js';
import { readingSummary } from '../../lab/sparse.js';

const { open } = playgroundSuite({ before, after });
const TEXT = 'the lamp was lit.';

test('the sparse-reading fold: every layer of the nsa and dsa models, the summary of model.sparseReading; none for softmax', async () => {
  const { page, problems } = await open(`?form=nsa&ltext=${encodeURIComponent(TEXT)}`);
  for (const form of ['nsa', 'dsa']) {
    if ((await page.inputValue('#form')) !== form) await page.selectOption('#form', form);
    const file = `chars-${form}.safetensors`;
    await page.waitForFunction((f) => {
      const p = document.querySelector('#learned');
      return p.dataset.state === 'ready' && p.dataset.file === f && !document.querySelector('#lsparse').hidden;
    }, file);
    const layers = await page.$$eval('#lsparse-layer option', (os) => os.map((o) => o.value));
    assert.deepEqual(layers, ['0', '1'], `${form}: both layers of the 2-layer model select`);
    await page.waitForFunction(() => document.querySelector('#lsparse').dataset.kept !== undefined);
    const shown = await page.$eval('#lsparse', (d) => ({ kept: Number(d.dataset.kept), read: Number(d.dataset.read) }));
    // what the fold should say: model.sparseReading of layer 0 on the same characters
    const reading = await page.evaluate(async ([f, text]) => {
      const lib = await (await import('/wasm/index.js')).loadAttention();
      const m = lib.loadModel(new Uint8Array(await (await fetch(`/models/${f}`)).arrayBuffer()));
      const r = m.sparseReading(lib.charsTokenizer.encode(text), { layer: 0 });
      m.dispose();
      return { heads: r.heads, n: r.n, selected: r.selected.map((a) => [...a]), kept: r.kept.map((a) => [...a]) };
    }, [file, TEXT]);
    const want = readingSummary(reading);
    assert.ok(Math.abs(shown.kept - want.kept) < 1e-5 && Math.abs(shown.read - want.read) < 1e-5,
      `${form}: the fold shows kept ${shown.kept}, read ${shown.read}; sparseReading gives ${want.kept}, ${want.read}`);
  }
  await page.selectOption('#form', 'softmax');
  await page.waitForFunction(() => {
    const p = document.querySelector('#learned');
    return p.dataset.state === 'ready' && /softmax|fortunes/.test(p.dataset.file);
  });
  assert.equal(await page.$eval('#lsparse', (d) => d.hidden), true, 'softmax: no layer selects, no fold');
  assert.deepEqual(problems(), []);
});
