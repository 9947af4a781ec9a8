// presets.test.js: the model panel's presets (lab/presets.js) as a learner meets them. Picking each
// preset in the Preset select builds its model for the task (the status names its layers), shows
// its line and the link to its paper or model card, and the KV cache line; One step trains it, and
// the heatmaps are drawn for every layer and head, with the layers of a recurrent state (Gated
// DeltaNet, KDA) saying they have no softmax weights. 'none' gives the panel's own model back.
// Screenshots of the panel at 1280 x 800 and 390 x 844 go to tests/browser/screenshots/presets-*.png.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SCREENSHOTS, playgroundSuite } from './helpers.js';
import { PRESETS } from '../../lab/presets.js';

const LONG = 300000; // ms: a loaded machine may be slow, never a failure
const suite = playgroundSuite({ before, after });
const data = (page, key) => page.getAttribute('#model', `data-${key}`);

// Waits until the panel shows a model built after `created` changed, and its first snapshot.
async function built(page, previousStatus) {
  await page.waitForFunction((prev) => {
    const m = document.querySelector('#model');
    const status = document.querySelector('#mstatus').textContent;
    return (m.dataset.state === 'ready' && status !== prev && !status.startsWith('Creating')) || m.dataset.state === 'error';
  }, previousStatus, { timeout: LONG });
  assert.equal(await data(page, 'state'), 'ready', await page.textContent('#mstatus'));
}

// One step, then the snapshot after it.
async function oneStep(page) {
  const step = Number(await data(page, 'step'));
  const snaps = Number(await data(page, 'snapshots'));
  await page.click('#mstep');
  await page.waitForFunction(([s, n]) => {
    const m = document.querySelector('#model');
    return Number(m.dataset.step) > s && Number(m.dataset.snapshots) > n && m.dataset.training === '0';
  }, [step, snaps], { timeout: LONG });
}

const LAYERS = { llama2: 2, gemma3: 6, 'gpt-oss': 4, 'qwen3-next': 4, 'kimi-linear': 4, 'deepseek-v3': 2 };
const STATE_LAYERS = { 'qwen3-next': 'Layers 1, 2, 3 (gated-delta)', 'kimi-linear': 'Layers 1, 2, 3 (kda)' };

test('every preset builds, trains a few steps, draws its heatmaps and its KV cache line', async () => {
  const { page, problems } = await suite.open('?form=softmax&task=reverse&mlen=4&msize=tiny&mstart=fresh&msteps=100#model', { model: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.equal(await page.$eval('#mpreset', (s) => s.value), 'none');
  assert.equal(await page.isVisible('#mpreset-about'), false);
  // the panel's own model has its cache line too (2 layers of MHA: 2 x 32 floats a layer)
  assert.match(await page.textContent('#mcache'), /^KV cache \(MHA\): 128 floats = 512 bytes per token/);
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const p of PRESETS) {
    const before = await page.textContent('#mstatus');
    await page.selectOption('#mpreset', p.id);
    await built(page, before);
    assert.match(page.url(), new RegExp(`mpreset=${p.id}`), 'the preset is in the URL');
    const status = await page.textContent('#mstatus');
    assert.match(status, new RegExp(`${p.label} preset: .*${LAYERS[p.id]} layers`), status);
    assert.equal(await page.textContent('#model-title'), `A tiny ${p.label}, as a preset`);
    // its line and its link
    assert.ok(await page.isVisible('#mpreset-about'));
    assert.ok((await page.textContent('#mpreset-about')).includes(p.takes));
    assert.equal(await page.getAttribute('#mpreset-about a', 'href'), p.link.url);
    assert.equal(await page.isDisabled('#march'), true, 'Model is the preset\'s');
    assert.equal(await page.$eval('#march', (s) => s.value), 'llama');
    assert.equal(await page.$eval('#mpos', (s) => s.value), ['kimi-linear', 'deepseek-v3'].includes(p.id) ? 'none' : 'rope');
    // the KV cache line
    const cache = await page.textContent('#mcache');
    assert.match(cache, /^KV cache \(.+\): \d+ floats = \d+ bytes per token.* At maxLen 64: \d+ floats = [\d,]+ bytes\. This library's generation allocates [\d,]+ bytes for maxLen/, cache);
    await oneStep(page);
    await oneStep(page);
    assert.equal(await data(page, 'step'), '2');
    // a heatmap per layer and head, each drawn (a canvas with a size), titled by its layer
    const maps = await page.$$eval('#mheatmaps figure.heatmap', (f) => f.map((x) => ({
      title: x.querySelector('figcaption').textContent, w: x.querySelector('canvas').width })));
    assert.equal(maps.length, LAYERS[p.id] * 4, `${p.id}: ${LAYERS[p.id]} layers x 4 heads`);
    assert.ok(maps.every((m) => m.w > 0), `${p.id}: every map drawn`);
    assert.match(maps[0].title, /^Layer 1/);
    const note = await page.$('#mheatmaps .no-attention');
    if (STATE_LAYERS[p.id]) {
      assert.ok(note, `${p.id}: the recurrent layers say so`);
      assert.ok((await note.textContent()).startsWith(`${STATE_LAYERS[p.id]} have no attention weights`), await note.textContent());
      assert.match(maps[0].title, /: \|A\|$/);
      assert.doesNotMatch(maps[maps.length - 1].title, /\|A\|/, 'the softmax or MLA layer has its weights');
    } else {
      assert.equal(note, null, `${p.id}: every layer has softmax weights`);
    }
    assert.match(await page.textContent('#moutput'), /model:/);
    const box = await page.$('#model');
    await box.screenshot({ path: join(SCREENSHOTS, `presets-${p.id}-1280.png`) });
  }
  // a phone: two presets, the hybrid and the window pattern
  await page.setViewportSize({ width: 390, height: 844 });
  for (const id of ['kimi-linear', 'gemma3']) {
    const before = await page.textContent('#mstatus');
    await page.selectOption('#mpreset', id);
    await built(page, before);
    await oneStep(page);
    // nothing of this panel reaches past the screen's edge (the page is opened at 1280 px and made
    // narrow: the learned panel's heatmaps, not redrawn on a resize, are that panel's business)
    const wide = await page.evaluate(() => [...document.querySelectorAll('#model *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).map((e) => `${e.tagName}#${e.id}.${e.className}`));
    assert.deepEqual(wide, [], `${id}: the panel fits a phone`);
    // what a phone's screen shows: the settings with the preset's line, then the heatmaps
    const show = (sel) => page.$eval(sel, (e) => { e.scrollIntoView({ block: 'start' }); window.scrollBy(0, -110); }); // below the sticky Contents
    await show('#mpreset');
    await page.screenshot({ path: join(SCREENSHOTS, `presets-${id}-390.png`) });
    await show('#mcache');
    await page.screenshot({ path: join(SCREENSHOTS, `presets-${id}-390-cache.png`) });
  }
  // none: the panel's own model again
  const before = await page.textContent('#mstatus');
  await page.selectOption('#mpreset', 'none');
  await built(page, before);
  assert.equal(await page.isDisabled('#march'), false);
  assert.equal(await page.isVisible('#mpreset-about'), false);
  assert.doesNotMatch(await page.textContent('#mstatus'), /preset/);
  assert.deepEqual(problems(), []);
});
