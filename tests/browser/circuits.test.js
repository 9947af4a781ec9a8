// circuits.test.js: the "What does this head do?" panel (issue 33) as a learner meets it. On the
// softmax model with induction heads and the learned panel's text read twice, the worker's
// ablation grid names the head the second copy needs most; a click shows that head's pattern and
// what it promotes; the patching and logit-lens tables are drawn; typing another text runs the
// interventions again on it; a form without a model that has read real text says so. Screenshots
// of the panel at 1280 x 800 and 390 x 844 go to tests/browser/screenshots/circuits-*.png.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SCREENSHOTS, launch, playgroundSuite } from './helpers.js';

const LONG = 300000; // ms: a loaded machine may be slow, never a failure
const suite = playgroundSuite({ before, after });
// Waits for a new result (or a state that will not become one), and says which it was.
async function ready(page, previous = '') {
  await page.waitForFunction((prev) => {
    const s = document.querySelector('#circuits');
    return (s.dataset.state === 'ready' && s.dataset.result !== prev) || s.dataset.state === 'error' || s.dataset.state === 'none';
  }, previous, { timeout: LONG });
  const { state, status, form } = await page.evaluate(() => ({ state: document.querySelector('#circuits').dataset.state,
    status: document.querySelector('#hdstatus').textContent, form: new URL(location.href).searchParams.get('form') }));
  assert.equal(state, 'ready', `the panel is ${state} (form ${form}): ${status}`);
}

// The panel's parts after the ablation grid sit in closed folds (issue 45): a learner opens one by its title.
const openFold = (page, id) => page.click(`#circuits details.part:has(#${id}) > summary`);

const fortunes = JSON.parse(readFileSync(new URL('../../web/models/fortunes.json', import.meta.url), 'utf8'));

test('the interventions run on the learned panel\'s first model, the sub-word one, on its pieces', async () => {
  const first = fortunes.models.find((e) => e.panel && e.config.attention === 'softmax');
  assert.ok(first.tokenizer, 'the first softmax model reads sub-word pieces');
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await ready(page);
  const result = JSON.parse(await page.getAttribute('#circuits', 'data-result'));
  assert.equal(result.file, first.file);
  const { layers, heads } = first.config;
  assert.equal(result.rows.filter((r) => r.mode === 'zero').length, layers * heads);
  assert.ok(result.clean.second < result.clean.first, 'the second copy reads better than the first');
  assert.match(await page.textContent('#hdtexts'), /Corrupted \(the first copy's pieces swapped for others\)/);
  assert.match(await page.textContent('#hdstatus'), /bits per piece/);
  // the claim names the heads the probe (random pieces twice) calls induction heads
  if (first.induction.score >= 0.3) {
    assert.match(await page.textContent('#hdclaim'), new RegExp(`^The probe names .*L${first.induction.layer + 1} H${first.induction.head + 1}.*Switched off together, the second copy costs \\+\\d\\.\\d\\d bits per piece`));
  }
  const labels = await page.$$eval('#hdlens th', (t) => t.map((x) => x.textContent));
  assert.ok(labels.some((l) => l.startsWith('␣')), `pieces with a leading space shown as ␣: ${labels.slice(0, 12)}`);
  await (await page.$('#circuits')).screenshot({ path: `${SCREENSHOTS}circuits-subword-desktop.png` });
  assert.deepEqual(problems(), []);
  await page.close();
});

test('the interventions run on the trained model and the phrase twice, and follow the text', async () => {
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await ready(page);
  let result = JSON.parse(await page.getAttribute('#circuits', 'data-result'));
  if (result.file !== 'fortunes-induction.safetensors') { // the character model with induction heads, from the list
    await page.selectOption('#hdmodel', 'fortunes-induction.safetensors');
    await ready(page, JSON.stringify(result));
    result = JSON.parse(await page.getAttribute('#circuits', 'data-result'));
  }
  assert.equal(result.file, 'fortunes-induction.safetensors');
  const zero = result.rows.filter((r) => r.mode === 'zero');
  assert.equal(zero.length, 12); // 3 layers x 4 heads
  const top = zero.reduce((a, b) => (b.second > a.second ? b : a));
  assert.ok(top.second > 1, `some head costs the second copy over a bit: ${JSON.stringify(top)}`);
  assert.ok(result.clean.second < result.clean.first, 'the second copy reads better than the first');
  // the grid: a button per head, the strongest pressed; its pattern and what it promotes beside
  assert.equal(await page.$$eval('#hdgrid .grid-cell', (b) => b.length), 12);
  assert.equal(await page.$$eval('#hdgrid .grid-cell[aria-pressed="true"]', (b) => b.length), 1);
  assert.match(await page.textContent('#hdhead-title'), new RegExp(`^Layer ${top.layer + 1}, head ${top.head + 1} \\(`));
  assert.equal(await page.$$eval('#hdpattern canvas', (c) => c.length), 1);
  assert.equal(await page.$$eval('#hdpromoted li', (l) => l.length), 5);
  // another head, clicked
  const cells = await page.$$('#hdgrid .grid-cell');
  await cells[0].click();
  assert.match(await page.textContent('#hdhead-title'), /^Layer 1, head 1 \(/);
  assert.equal(await page.$eval('#hdgrid .grid-cell', (b) => b.getAttribute('aria-pressed')), 'true'); // the grid is drawn anew
  // the sortable table: every head, sorted by a click on a column
  await page.click('#circuits details.heads-box > summary');
  assert.equal(await page.$$eval('#hdtable tr[data-head]', (r) => r.length), 12);
  await page.click('#hdtable th:nth-child(3) button');
  const sorted = await page.$$eval('#hdtable tr[data-head] td:nth-child(3)', (t) => t.map((x) => Number(x.textContent)));
  assert.deepEqual(sorted, [...sorted].sort((a, b) => a - b), 'a second click sorts ascending');
  // patching and the lens: layers x positions tables
  assert.equal(await page.$$eval('#hdresid tr', (r) => r.length), 4);
  assert.equal(await page.$$eval('#hdz tr', (r) => r.length), 4);
  assert.equal(await page.$$eval('#hdlens tr', (r) => r.length), 4);
  assert.match(await page.textContent('#hdstatus'), /ablations in [\d.]+ s/);
  // the claim, on this text: the probe's induction heads off together
  assert.match(await page.textContent('#hdclaim'), /^The probe names 3 induction heads \(L3 H1, L3 H2, L3 H4\)\. Switched off together, the second copy costs \+\d\.\d\d bits/);

  mkdirSync(SCREENSHOTS, { recursive: true });
  await (await page.$('#circuits')).screenshot({ path: `${SCREENSHOTS}circuits-desktop.png` });

  // the text changes: the interventions run again on it
  await page.fill('#ltext', 'a quiet river by the bridge');
  await ready(page, JSON.stringify(result));
  assert.match(await page.textContent('#hdtexts'), /a quiet river by the bridge\. a quiet river by the bridge/);
  assert.deepEqual(problems(), []);
  await page.close();
});

test('a form with no model that has read real text runs on its character model and says which; on a phone the panel fits', async () => {
  const { page, problems } = await suite.open('?form=linear:relu#circuits');
  await ready(page);
  assert.match(await page.textContent('#hdstatus'), /^The heads of chars-linear-relu, a character model of .* trained on this project's 28 KB of English prose \(data\/chars\.txt/);
  await page.close();
  const phone = await launch({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  const p2 = await suite.open('?form=softmax#circuits', { context: phone.context });
  await ready(p2.page);
  const overflow = await p2.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
  await (await p2.page.$('#circuits')).screenshot({ path: `${SCREENSHOTS}circuits-phone.png` });
  assert.deepEqual(problems(), []);
  assert.deepEqual(p2.problems(), []);
  await phone.close();
});

// Head composition (issue 47): after the interventions, the worker reads model.compositionScores()
// from the weights; the panel draws a box per later head with a square per earlier head, and one
// sentence names each induction head's strongest partner. Screenshots of the view at 1280 x 800 and
// 390 x 844 go to /tmp/comp-shots/.
const SHOTS = '/tmp/comp-shots/';
async function composition(page, kind) {
  await page.waitForFunction((k) => ['none', k].includes(document.querySelector('#circuits').dataset.composition), kind, { timeout: LONG });
  assert.equal(await page.getAttribute('#circuits', 'data-composition'), kind, await page.textContent('#hdcompclaim'));
}

test('the head composition view: a box per later head, a Q/K/V switch, the induction heads\' partners named', async () => {
  const first = fortunes.models.find((e) => e.panel && e.config.attention === 'softmax');
  const { layers, heads } = first.config;
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await ready(page);
  await openFold(page, 'hdcomp');
  assert.equal(JSON.parse(await page.getAttribute('#circuits', 'data-result')).file, first.file);
  await composition(page, 'k');
  // rows: the later layers (layer 1 reads no head); in each box, its earlier layers x heads squares
  assert.equal(await page.$$eval('#hdcomp .comp-cell', (c) => c.length), (layers - 1) * heads);
  const squares = await page.$$eval('#hdcomp .comp-cell', (c) => c.map((x) => [x.dataset.head, x.querySelectorAll('.comp-sq').length]));
  for (const [at, n] of squares) assert.equal(n, Number(at.split(',')[0]) * heads, `the box of head ${at}`);
  assert.equal(await page.$$eval('#hdcomp .comp-sq.best', (c) => c.length), (layers - 1) * heads, 'one strongest partner per box');
  const claim = await page.textContent('#hdcompclaim');
  const named = /^(Of the induction heads, L\d+ H\d+ reads its keys most from L\d+ H\d+ \(K-composition 0\.\d{3}\)|No head here is an induction head; the strongest pair is L\d+ H\d+ reading its keys from L\d+ H\d+)/;
  assert.match(claim, named);
  if (first.induction.score >= 0.3 && first.induction.layer > 0) {
    const me = `L${first.induction.layer + 1} H${first.induction.head + 1}`;
    assert.match(claim, new RegExp(`${me} reads its keys most from L\\d+ H\\d+ \\(K-composition 0\\.\\d{3}\\)`));
    assert.equal(await page.$eval(`#hdcomp .comp-cell[data-head="${first.induction.layer},${first.induction.head}"]`, (c) => c.classList.contains('induction')), true);
  }
  // the switch: queries, then values
  await page.selectOption('#hdcompkind', 'q');
  await composition(page, 'q');
  assert.match(await page.textContent('#hdcompclaim'), /reads? its queries .*Q-composition 0\.\d{3}/);
  await page.selectOption('#hdcompkind', 'v');
  await composition(page, 'v');
  assert.match(await page.textContent('#hdcompclaim'), /V-composition 0\.\d{3}/);
  await page.selectOption('#hdcompkind', 'k');
  await composition(page, 'k');
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.$eval('#hdcompkind', (e) => { e.closest('.row').previousElementSibling.scrollIntoView(); scrollBy(0, -90); });
  await page.screenshot({ path: `${SHOTS}composition-1280.png` });
  assert.deepEqual(problems(), []);
  await page.close();

  const phone = await launch({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  const p2 = await suite.open('?form=softmax#circuits', { context: phone.context });
  await ready(p2.page);
  await openFold(p2.page, 'hdcomp');
  await composition(p2.page, 'k');
  const overflow = await p2.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
  await p2.page.$eval('#hdcompkind', (e) => { e.closest('.row').previousElementSibling.scrollIntoView(); scrollBy(0, -90); });
  await p2.page.screenshot({ path: `${SHOTS}composition-390.png` });
  assert.deepEqual(p2.problems(), []);
  await phone.close();
});

// Steering (issue 47): a unit direction (one token's embedding minus another's) added at a layer's
// input; the greedy continuations without and with it. At strength 0 they are the same.
test('steering: the continuation without and with a direction added to the residual stream', async () => {
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await ready(page);
  await openFold(page, 'hdsteer');
  const steered = async () => {
    await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#circuits').dataset.steer), undefined, { timeout: LONG });
    assert.equal(await page.getAttribute('#circuits', 'data-steer'), 'ready', await page.textContent('#hdsteer'));
    return { plain: await page.textContent('#hdsteer .steer-plain ins'), steered: await page.textContent('#hdsteer .steer-steered ins'),
      note: await page.textContent('#hdsteer .note') };
  };
  const first = await steered();
  assert.ok(first.plain.length > 0 && first.steered.length > 0, JSON.stringify(first));
  assert.match(first.note, /^Towards “.+” and away from “.+”, at layer \d+'s input \(blocks\.\d+\.hook_resid_pre\), 2 × \d+\.\d\d/);
  const { layers: L } = fortunes.models.find((e) => e.panel && e.config.attention === 'softmax').config;
  assert.match(first.note, new RegExp(`at layer ${Math.floor(L / 2) + 1}'s input`), 'the middle layer first');
  const { layers } = JSON.parse(await page.getAttribute('#circuits', 'data-result')).rows.reduce((a, r) => ({ layers: Math.max(a.layers, r.layer + 1) }), { layers: 0 });
  assert.equal(await page.$$eval('#hdsteer-layer option', (o) => o.length), layers);
  // strength 0: nothing added, the same continuation
  const set = (v) => page.$eval('#hdsteer-strength', (e, x) => { e.value = x; e.dispatchEvent(new Event('input')); }, v);
  await page.evaluate(() => { document.querySelector('#circuits').dataset.steer = ''; });
  await set('0');
  const zero = await steered();
  assert.equal(zero.steered, zero.plain);
  assert.match(zero.note, /, 0 × /);
  // the first layer, pushed hard
  await page.evaluate(() => { document.querySelector('#circuits').dataset.steer = ''; });
  await page.selectOption('#hdsteer-layer', '0');
  await set('4');
  const hard = await steered();
  assert.match(hard.note, /at layer 1's input \(blocks\.0\.hook_resid_pre\), 4 × /);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.$eval('#hdsteer', (e) => { e.scrollIntoView({ block: 'end' }); scrollBy(0, 60); });
  await page.screenshot({ path: '/tmp/comp-shots/steering-1280.png' });
  console.log(JSON.stringify({ first, zero, hard }));
  assert.deepEqual(problems(), []);
  await page.close();
  const phone = await launch({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  const p2 = await suite.open('?form=softmax#circuits', { context: phone.context });
  await ready(p2.page);
  await openFold(p2.page, 'hdsteer');
  await p2.page.waitForSelector('#circuits[data-steer="ready"]', { timeout: LONG });
  const overflow = await p2.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
  await p2.page.$eval('#hdsteer', (e) => { e.scrollIntoView({ block: 'end' }); scrollBy(0, 60); });
  await p2.page.screenshot({ path: '/tmp/comp-shots/steering-390.png' });
  assert.deepEqual(p2.problems(), []);
  await phone.close();
});
