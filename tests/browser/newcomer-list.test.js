// newcomer-list.test.js: issue 45's newcomer's list, items b, d, e, h, i (the second part) and c,
// as a new user meets them at 1280 x 800. Each test failed on the code before its fix.
// Screenshots: tests/browser/screenshots/newcomer-*.png.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SCREENSHOTS, playgroundSuite } from './helpers.js';
import { loadAttention } from '../../wasm/index.js';

const LONG = 300000; // ms: a cap on a wait on a busy machine, never a measure
const suite = playgroundSuite({ before, after });
const lib = await loadAttention();
const shot = async (page, sel, name) => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await (await page.$(sel)).screenshot({ path: `${SCREENSHOTS}newcomer-${name}.png` });
};

test('3b: the circuits panel names the model its grids are of, and what it read, for a form with no fortunes model', async () => {
  for (const form of ['synth:dense', 'kda', 'mla']) {
    const { page, problems } = await suite.open(`?form=${encodeURIComponent(form)}#circuits`);
    await page.waitForSelector('#circuits:is([data-state="ready"], [data-state="none"], [data-state="error"])', { timeout: LONG });
    const status = await page.textContent('#hdstatus');
    assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready', `${form}: ${status}`);
    const file = (await page.getAttribute('#circuits', 'data-file')).replace(/\.safetensors$/, '');
    assert.match(file, /^chars-/, form);
    assert.doesNotMatch(status, /No model/, `${form}: the status and the grid agree`);
    assert.ok(status.startsWith(`The heads of ${file}, a character model of `), `${form}: ${status}`);
    assert.match(status, /data\/chars\.txt/, `${form}: says what the model read`);
    assert.ok(await page.isVisible('#hdgrid table'), `${form}: the grid it names is drawn`);
    if (form === 'kda') await shot(page, '#circuits', 'circuits-kda');
    assert.deepEqual(problems(), []);
    await page.close();
  }
});

test('3d: the tokenizer panel\'s vocabulary range is the library\'s, in the label, the input\'s bounds and the message', async () => {
  const { page, problems } = await suite.open('#tokenizer');
  await page.waitForSelector('#tokenizer[data-state="ready"]', { timeout: LONG });
  const { min, max } = lib.tokenizerVocabSize;
  assert.equal(await page.textContent('label[for="tkvocab"]'), `Vocabulary size (${min} to ${max})`);
  assert.equal(await page.getAttribute('#tkvocab', 'min'), String(min));
  assert.equal(await page.getAttribute('#tkvocab', 'max'), String(max));
  await page.click('#tktrain-box summary');
  await page.fill('#tktrain-text', 'the cat sat on the mat and the dog sat on the log '.repeat(4));
  for (const v of [String(min - 1), String(max + 1)]) {
    await page.fill('#tkvocab', v);
    await page.click('#tktrain');
    await page.waitForSelector('#tokenizer[data-state="error"]', { timeout: LONG });
    const said = await page.textContent('#tkstatus');
    assert.ok(said.includes(`${min} to ${max}`), `the message gives the label's range: ${said}`);
    assert.doesNotMatch(said, /4096/);
  }
  // the top of the range trains (in the worker)
  await page.fill('#tkvocab', String(max));
  await page.click('#tktrain');
  await page.waitForFunction(() => /^Trained in|failed/.test(document.querySelector('#tkstatus').textContent), null, { timeout: LONG });
  assert.match(await page.textContent('#tkstatus'), /^Trained in/);
  assert.deepEqual(problems(), []);
  await page.close();
});

test('3i: KDA\'s and GLA\'s colour scales say they are not probabilities; softmax\'s says nothing', async () => {
  for (const [form, expect] of [['kda', /delta rule/], ['gla', /decayed by the gates/], ['softmax', null]]) {
    const { page, problems } = await suite.open(`?form=${form}#attention`);
    await page.waitForSelector('#heatmaps canvas', { timeout: LONG });
    const note = await page.$('#attention .legend-note');
    if (!expect) {
      assert.ok(!note || !(await note.isVisible()), `${form}: no note`);
    } else {
      assert.ok(note && await note.isVisible(), `${form}: a note beside the scale`);
      const text = await note.textContent();
      assert.match(text, /^Not probabilities: /);
      assert.match(text, /rows need not sum to 1/);
      assert.match(text, expect);
      assert.match(await page.getAttribute('#legend', 'aria-label'), /Not probabilities/);
      if (form === 'kda') await shot(page, '#attention', 'legend-kda');
    }
    assert.deepEqual(problems(), []);
    await page.close();
  }
});

test('3h: the induction panel speaks bits, and its headline\'s best score is the per-head list\'s', async () => {
  const { page, problems } = await suite.open('#induction');
  await page.waitForSelector('#induction:not([hidden])', { timeout: LONG });
  await page.selectOption('#isteps', '600');
  await page.click('#irun');
  await page.waitForSelector('#induction[data-done="1"]', { timeout: LONG });
  const status = await page.textContent('#istatus');
  assert.match(status, /loss [\d.]+ bits per token/, status);
  const summary = await page.textContent('#isummary');
  const [, best] = /(?:the best is|best induction score at the end is) ([\d.]+)/.exec(summary) ?? [];
  assert.ok(best, `the summary gives the best score: ${summary}`);
  const list = await page.$$eval('#inames li', (lis) => lis.map((li) => li.textContent));
  const scores = list.map((l) => Number(/induction ([\d.]+)/.exec(l)[1]));
  assert.equal(best, Math.max(...scores).toFixed(2), `headline ${best}, list ${scores}`);
  assert.ok(status.endsWith(`best induction score ${best} (${/\(([\d.]+ s)\)$/.exec(status)[1]})`), `the last status line agrees: ${status}`);
  assert.doesNotMatch(await page.textContent('#induction'), /\bnats?\b/);
  assert.deepEqual(problems(), []);
  await page.close();
});
