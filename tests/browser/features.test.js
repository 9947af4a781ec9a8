// features.test.js: the feature browser (issue 47, item 4) at 1280 x 800 and 390 x 844. Training runs
// in its worker with progress and never blocks the page (no long task over 100 ms while it trains);
// the trained SAE reports its held-out FVU and dead features; the list is searchable by token; a
// picked feature shows its top contexts, each with its token marked, its histogram and the tokens it
// promotes; steering at strength 0 leaves the continuation as it was, and a strong push changes
// it; ablation answers; the features download as JSON and the SAE as safetensors that
// lib.loadSAE reads. Screenshots: tests/browser/screenshots/features-*.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { SCREENSHOTS, launch, playgroundSuite } from './helpers.js';

const suite = playgroundSuite({ before, after });
const LONG = 300_000;

for (const [width, height] of [[1280, 800], [390, 844]]) {
  test(`${width} px: train a sparse autoencoder, browse its features, steer and ablate one, download both`, async () => {
    const phone = width < 600 ? await launch({ viewport: { width, height }, hasTouch: true, isMobile: true, deviceScaleFactor: 2, acceptDownloads: true }) : null;
    const { page, problems } = await suite.open('#features', phone ? { context: phone.context } : {});
    if (!phone) await page.setViewportSize({ width, height });
    await page.evaluate(() => {
      window.longTasks = [];
      new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); }).observe({ type: 'longtask' });
    });
    await page.selectOption('#fssteps', '200');
    await page.click('#fstrain');
    await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#features').dataset.state), undefined, { timeout: LONG });
    const status = await page.textContent('#fsstatus');
    assert.equal(await page.getAttribute('#features', 'data-state'), 'ready', status);
    assert.match(status, /^Trained 768 features \(k = 16\) on blocks\.1\.hook_resid_post over [\d,]+ tokens in [\d.]+ s\. On [\d,]+ held-out tokens it leaves [\d.]+% of the variance unexplained/);
    const fvu = Number(await page.getAttribute('#features', 'data-fvu'));
    assert.ok(fvu > 0 && fvu < 0.2, `held-out FVU ${fvu} after 200 steps`);
    const long = await page.evaluate(() => window.longTasks.filter((d) => d > 100));
    console.log(`# ${width} px: ${status}; long tasks over 100 ms while training: ${long.length ? long.map(Math.round).join(', ') : 'none'}`);
    // search by token: every chip shown names a feature whose contexts or promoted tokens hold it
    const all = await page.locator('#fslist button').count();
    await page.fill('#fssearch', 'the');
    await page.waitForFunction(() => /matching “the”/.test(document.getElementById('fscount').textContent));
    const some = await page.locator('#fslist button').count();
    assert.ok(some > 0 && some <= all, `${some} of ${all} chips match "the"`);
    await page.locator('#fslist button').first().click();
    const picked = await page.getAttribute('#features', 'data-picked');
    assert.match(await page.textContent('#fstitle'), new RegExp(`^Feature ${picked}: fires on [\\d.]+% of held-out tokens`));
    const contexts = await page.$$eval('#fscontexts li', (lis) => lis.map((li) => li.querySelectorAll('mark').length));
    assert.ok(contexts.length > 0 && contexts.every((m) => m === 1), `marks per context: ${contexts}`);
    assert.match(await page.textContent('#fscontexts'), /the/i);
    assert.equal(await page.locator('#fshist span').count(), 12);
    assert.match(await page.textContent('#fspromoted'), /^Its direction promotes: “/);
    // steering at 0: the same continuation; at 8 it changes
    const steer = async (value, button = '#fssteer') => {
      await page.$eval('#fsstrength', (e, v) => { e.value = v; e.dispatchEvent(new Event('input')); }, String(value));
      await page.evaluate(() => { document.querySelector('#features').dataset.steer = ''; });
      await page.click(button);
      await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#features').dataset.steer), undefined, { timeout: LONG });
      assert.equal(await page.getAttribute('#features', 'data-steer'), 'ready', await page.textContent('#fssteered'));
      const texts = await page.$$eval('#fssteered ins', (i) => i.map((x) => x.textContent));
      assert.equal(texts.length, 2);
      return texts;
    };
    const [plain0, steered0] = await steer(0);
    assert.equal(steered0, plain0);
    const [plain8, steered8] = await steer(8);
    assert.equal(plain8, plain0);
    assert.notEqual(steered8, plain8, 'a push of 8 times the stream\'s size changes the continuation');
    const [plainA] = await steer(0, '#fsablate');
    assert.equal(plainA, plain0);
    assert.match(await page.textContent('#fssteered'), /ablated:/);
    // downloads
    const [json] = await Promise.all([page.waitForEvent('download'), page.click('#fsjson')]);
    const features = JSON.parse(readFileSync(await json.path(), 'utf8'));
    assert.equal(features.features.length, 768);
    assert.equal(features.hook, 'blocks.1.hook_resid_post');
    const [file] = await Promise.all([page.waitForEvent('download'), page.click('#fssae')]);
    const lib = await loadAttention();
    const sae = lib.loadSAE(new Uint8Array(readFileSync(await file.path())));
    assert.deepEqual([sae.config.dSae, sae.config.k, sae.config.dIn], [768, 16, 96]);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), true, 'the page scrolls sideways');
    await page.locator('#features').screenshot({ path: `${SCREENSHOTS}features-${width}.png` });
    assert.deepEqual(problems(), []);
    await page.close();
    await phone?.close();
  });
}
