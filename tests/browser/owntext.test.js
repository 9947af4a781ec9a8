// owntext.test.js: the "Train on your own text" panel (issue 14): paste a text, train a character
// model on it in the page with model.train() (the page stays responsive: a click lands during
// training), watch the loss fall and a sample of the text's own characters appear; Stop aborts.
import test from 'node:test';
import assert from 'node:assert/strict';
import { launch, openPage, screenshot } from './helpers.js';
import { startServer } from '../../scripts/serve.js';

test('own text: a character model trains on pasted text, samples from its characters, and stops on Stop', async () => {
  const server = await startServer({ port: 0 });
  const browser = await launch();
  try {
    const { page, problems } = await openPage(browser.context);
    await page.goto(`${server.url}?form=softmax`);
    await page.waitForSelector('body[data-state="ready"]');
    const text = 'abcabd abcabd abcabd abcabd abcabd abcabd abcabd abcabd abcabd abcabd abcabd abcabd ';
    await page.fill('#otext', text);
    await page.selectOption('#osteps', '300');
    await page.click('#otrain');
    // the page answers while training runs: a second click on Settings works at once
    await page.waitForFunction(() => document.getElementById('oloss').textContent.includes('step'), null, { timeout: 30000 });
    const t0 = Date.now();
    await page.click('#controls-title');
    assert.ok(Date.now() - t0 < 2000, 'the page stayed responsive during training');
    await page.waitForFunction(() => document.getElementById('ostatus').textContent.startsWith('Done'), null, { timeout: 120000 });
    const loss = await page.textContent('#oloss');
    const bits = Number(/loss ([0-9.]+) bits/.exec(loss)[1]);
    assert.ok(bits < 1.5, `the loss fell on a 5-character text: ${loss}`);
    const sample = await page.textContent('#osample');
    assert.ok(sample.length > 20 && [...sample].every((c) => text.includes(c)), `the sample uses the text's characters: ${sample}`);
    await screenshot(page, 'owntext');
    // Stop aborts a long run
    await page.selectOption('#osteps', '3000');
    await page.click('#otrain');
    await page.waitForFunction(() => / of 3000:/.test(document.getElementById('oloss').textContent), null, { timeout: 30000 });
    await page.click('#ostop');
    await page.waitForFunction(() => document.getElementById('ostatus').textContent.startsWith('Stopped at step'), null, { timeout: 30000 });
    assert.equal(await page.isDisabled('#otrain'), false);
    assert.deepEqual(problems(), [], 'console errors or failed requests');
  } finally {
    await browser.close();
    await server.close();
  }
});
