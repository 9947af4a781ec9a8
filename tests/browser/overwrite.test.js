// overwrite.test.js: the "Why the delta rule" panel runs the two rules on the real library and
// prints what it measured: the additive state's error grows as keys are rewritten, the delta
// rule's does not, and a key written twice reads 6 (old + new) against 5 (the new value). Waits
// on the panel's DOM state only; fails on any console error, page error or failed request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { playgroundSuite, screenshot } from './helpers.js';

const { open } = playgroundSuite({ before, after });

test('why the delta rule: rewritten keys pile up in the additive state and not in the delta rule', async (t) => {
  const { page, problems } = await open();
  await page.waitForSelector('#overwrite[data-done="1"]', { timeout: 300000 });
  const read = async () => JSON.parse(await page.getAttribute('#overwrite', 'data-rows'));
  for (const width of ['8', '16', '32']) {
    await page.evaluate(() => { delete document.querySelector('#overwrite').dataset.rows; });
    await page.selectOption('#owidth', width);
    await page.waitForFunction(() => document.querySelector('#overwrite').dataset.rows, null, { timeout: 300000 });
    const rows = await read();
    assert.equal(rows.length, 8);
    const first = rows[0], last = rows[rows.length - 1];
    t.diagnostic(`d = ${width}: written once ${first.additive.toFixed(3)} / ${first.delta.toFixed(3)}, ` +
      `8 times ${last.additive.toFixed(3)} / ${last.delta.toFixed(3)} (additive / delta)`);
    // the additive error grows with every rewrite; the delta rule's stays near where it started
    assert.ok(last.additive > 2.5 * first.additive, `additive: ${first.additive} -> ${last.additive}`);
    assert.ok(last.delta < 0.5 * last.additive, `delta ${last.delta} vs additive ${last.additive} after 8 rewrites`);
    for (const r of rows) assert.ok(Number.isFinite(r.additive) && Number.isFinite(r.delta));
  }
  const summary = await page.textContent('#osummary');
  assert.match(summary, /^Measured just now, d = 32, 16 random keys: written once, the additive state reads back with error \d\.\d{3}/);
  assert.match(await page.textContent('#ooverwrite'), /the additive state returns 6\.000 \(old \+ new\), the delta rule returns 5\.000 \(the new value\)/);
  const legend = await page.$$eval('#olegend li', (lis) => lis.map((li) => li.textContent));
  assert.deepEqual(legend, ['delta rule', 'additive (linear attention)']);
  await page.$eval('#overwrite', (el) => el.scrollIntoView());
  await screenshot(page, 'overwrite');
  assert.deepEqual(problems(), []);
  await page.close();
});
