// newcomer-list.test.js: issue 45's newcomer's list, items b, d, e, h, i (the second part) and c,
// as a new user meets them at 1280 x 800. Each test failed on the code before its fix.
// Screenshots: tests/browser/screenshots/newcomer-*.png.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SCREENSHOTS, launch, playgroundSuite } from './helpers.js';
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
  assert.doesNotMatch(await page.evaluate(() => document.body.innerText), /\bnats?\b/, 'no panel prints nats');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('3c: own text: a held-out figure and a warning when the model memorises, a loss curve, a prompt and its heatmaps, plain-words errors, no long task', async (t) => {
  const { page, problems } = await suite.open('?form=softmax#owntext');
  await page.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); })
      .observe({ type: 'longtask', buffered: false });
  });
  // the other panels' start-up first (they draw once when the page opens): from a quiet page on,
  // every long task is this panel's
  for (let quiet = 0; quiet < 40; quiet++) {
    await page.evaluate(() => { window.__long.length = 0; });
    await page.waitForTimeout(3000);
    if (!(await page.evaluate(() => window.__long.length))) break;
  }
  const train = async (text, steps = '300') => {
    await page.fill('#otext', text);
    await page.selectOption('#osteps', steps);
    await page.click('#otrain');
    await page.waitForFunction(() => /^(Done|Training failed)/.test(document.getElementById('ostatus').textContent), null, { timeout: LONG });
    return page.textContent('#ostatus');
  };
  // plain words, not the library's createModel message
  const one = await train('a'.repeat(42));
  assert.match(one, /^Training failed: the text uses only one character \("a"\): a model needs at least two different characters/);
  assert.doesNotMatch(one, /createModel|vocab must be/);
  assert.match(await train('the cat sat on the mat'), /the text is 22 characters; paste at least 68/);

  // a text that does not repeat, read too often: the held-out figure sits far above the training one
  const prose = 'To be, or not to be, that is the question: whether \'tis nobler in the mind to suffer the slings and arrows of '
    + 'outrageous fortune, or to take arms against a sea of troubles and by opposing end them. To die, to sleep, no more; and by '
    + 'a sleep to say we end the heart-ache and the thousand natural shocks that flesh is heir to.';
  assert.match(await train(prose), /^Done: 300 steps/);
  const figures = await page.textContent('#ofigures');
  const [, trainBits, heldBits] = /trained on \(the first \d+ characters\): ([\d.]+) bits per character\. On the held-out part \(the last \d+ characters, never trained on\): ([\d.]+) bits per character/.exec(figures) ?? [];
  assert.ok(trainBits && heldBits, figures);
  t.diagnostic(`prose, 300 steps: ${trainBits} bits per character trained on, ${heldBits} held out`);
  assert.ok(Number(heldBits) > Number(trainBits) + 0.5, figures);
  assert.ok(await page.isVisible('#owarn'));
  assert.match(await page.textContent('#owarn'), /The model memorises/);
  // the curve: three series, drawn (an empty chart is 60 px tall)
  assert.deepEqual(await page.$$eval('#ocurve-legend li', (lis) => lis.map((li) => li.textContent)), ['training batches', 'training part', 'held-out part']);
  assert.ok((await page.$eval('#ocurve', (c) => c.getBoundingClientRect().height)) > 100);
  // the prompt: the model just trained continues it, and its heads are drawn on it
  await page.waitForSelector('#owntext[data-prompt="ready"]', { timeout: LONG });
  assert.ok((await page.textContent('#ogenerated')).startsWith(await page.inputValue('#oprompt')));
  assert.equal(await page.$$eval('#oheatmaps canvas', (cs) => cs.length), 2 * 4, 'every layer and head of the 2-layer, 4-head model');
  await page.fill('#oprompt', 'To be, or not Z');
  await page.click('#ogenerate');
  await page.waitForSelector('#owntext[data-prompt="error"]', { timeout: LONG });
  assert.match(await page.textContent('#oprompt-status'), /"Z" is not in the text it trained on/);
  await shot(page, '#owntext', 'owntext');

  // the same prose three times: 0.16 bits per character was shown with no word; now the repeat is named
  assert.match(await train([prose, prose, prose].join(' ')), /^Done: 300 steps/);
  assert.ok(await page.isVisible('#owarn'));
  assert.match(await page.textContent('#owarn'), /Your text repeats itself: the held-out part also occurs in the part it trained on/);

  const long = await page.evaluate(() => window.__long);
  t.diagnostic(`main-thread long tasks (over 50 ms) while training: ${long.map((d) => d.toFixed(0)).join(', ') || 'none'}`);
  assert.ok(long.every((d) => d <= 100), `no main-thread task over 100 ms: ${long}`);
  assert.deepEqual(problems(), []);
  await page.close();
});

test('3e: a CSV given to Open a model file is named as none of the formats tried, by name or renamed .bin', async () => {
  const { page, problems } = await suite.open('#llama2c');
  const csv = Buffer.from('form,n,d,ms per call\nsoftmax,64,32,0.12\nlinear:elu+1,64,32,0.05\n');
  for (const name of ['timings.csv', 'model.bin']) {
    await page.setInputFiles('#l2files', { name, mimeType: 'text/plain', buffer: csv });
    await page.waitForFunction((n) => document.getElementById('l2status').textContent.startsWith(n), name, { timeout: LONG });
    const said = await page.textContent('#l2status');
    assert.match(said, new RegExp(`^${name.replace('.', '\\.')} is none of the formats a model is opened from: tried `));
    for (const f of ['safetensors', 'config\\.json', 'tokenizer\\.json', 'llama2\\.c\'s model \\.bin', 'tokenizer\\.bin', 'ak42'])
      assert.match(said, new RegExp(f), `names ${f}: ${said}`);
    assert.match(said, /It looks like text starting "form,n,d,ms per call"\.$/);
    assert.doesNotMatch(said, /divisible/);
  }
  await shot(page, '#llama2c', 'llama2c-csv');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('3c and 3i at 390 x 844: the own-text panel after training and a prompt, and the KDA sandbox legend, fit a phone', async () => {
  const phone = await launch({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  try {
    const { page, problems } = await suite.open('?form=softmax#owntext', { context: phone.context });
    await page.selectOption('#osteps', '100');
    await page.click('#otrain');
    await page.waitForSelector('#owntext[data-prompt="ready"]', { timeout: LONG });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    await shot(page, '#owntext', 'owntext-phone');
    assert.deepEqual(problems(), []);
    await page.close();
    const k = await suite.open('?form=kda#attention', { context: phone.context });
    await k.page.waitForSelector('#attention .legend-note:not([hidden])', { timeout: LONG });
    assert.ok(await k.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth) <= 0);
    await shot(k.page, '#attention', 'legend-kda-phone');
    assert.deepEqual(k.problems(), []);
  } finally {
    await phone.close();
  }
});
