// induction.test.js: "Induction heads, forming live". The page trains the 2-layer model on the
// repeat task, on one thread and then on every core; within its 1000 steps some head's induction
// score must rise past 0.5 (measured: 0.89-0.97 at the end, formed at steps 400-550 over three seeds
// in Node), the heads must then be named (an induction head in layer 2, a previous-token head in
// layer 1), and the time to form is printed for both thread counts. No wall-clock assertion:
// generous caps on the waits only. Fails on any console error, page error or failed request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { playgroundSuite, screenshot } from './helpers.js';

const { open } = playgroundSuite({ before, after });

test('induction heads form live in the page, on 1 thread and on every core', async (t) => {
  const { page, problems } = await open();
  await page.waitForSelector('#induction:not([hidden])', { timeout: 300000 });
  for (const [i, threads] of ['1', 'all'].entries()) {
    await page.selectOption('#ithreads', threads);
    await page.click('#irun');
    await page.waitForSelector(`#induction[data-done="${i + 1}"]`, { timeout: 600000 });
    const r = JSON.parse(await page.getAttribute('#induction', 'data-result'));
    t.diagnostic(`${r.attention} on ${r.threads} thread(s): formed at step ${r.formedAt}, ${(r.formedMs / 1000).toFixed(1)} s ` +
      `into training; 1000 steps in ${(r.ms / 1000).toFixed(1)} s; heads ${r.named.map((h) => `L${h.layer + 1}H${h.head + 1} ${h.name} ${h.score.toFixed(2)}`).join(', ')}`);
    assert.ok(r.formedAt !== null, 'an induction head formed within the budget');
    const first = r.points[0], last = r.points.at(-1);
    assert.ok(Math.max(...first.scores) < 0.3, `no head starts as an induction head (${first.scores})`);
    assert.ok(Math.max(...last.scores) > 0.5, `the best head's induction score ends at ${Math.max(...last.scores)}`);
    assert.ok(r.named.some((h) => h.layer === 1 && h.name === 'induction'), 'layer 2 holds an induction head');
    assert.ok(r.named.some((h) => h.layer === 0 && h.name === 'previous token'), 'layer 1 holds a previous-token head');
    assert.match(await page.textContent('#isummary'), /^Measured just now: an induction head formed at step \d+/);
  }
  await page.$eval('#induction', (el) => el.scrollIntoView());
  await screenshot(page, 'induction');
  assert.deepEqual(problems(), []);
  await page.close();
});
