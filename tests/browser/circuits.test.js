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

// Issue 54 item 3: patching is estimated for every cell at once (attributionPatching, one backward
// pass), drawn before any exact run; then the estimate's 16 largest cells of each grid are patched
// exactly and framed as they come; a sentence says how well the two agree. The init script records
// the panel's data-* changes as they happen (and, when asked, presses Cancel the moment the
// estimate is drawn); violations of "a new model clears the old results" are recorded too.
const RECORD = () => {
  window.__log = [];
  window.__stale = [];
  new MutationObserver(() => {
    const s = document.querySelector('#circuits');
    if (!s) return;
    const d = s.dataset, status = document.querySelector('#hdstatus')?.textContent ?? '';
    const z = document.querySelectorAll('#hdz td[data-exact]').length, grid = document.querySelectorAll('#hdgrid .grid-cell').length;
    const entry = JSON.stringify([d.state, d.estimate, d.exact, z, grid]);
    if (window.__log.at(-1) !== entry) window.__log.push(entry);
    if (window.__cancelOnEstimate && d.estimate === 'ready' && d.state === 'running') {
      window.__cancelOnEstimate = false;
      document.querySelector('#hdcancel').click();
    }
    // the first opened model's grid (2 x 4 cells) or a claim drawn while the panel names another model
    const claim = document.querySelector('#hdclaim')?.textContent ?? '';
    if (window.__first && !status.includes(window.__first) && (grid === 8 || (d.state === 'running' && claim))) window.__stale.push({ status, grid, claim });
  }).observe(document, { subtree: true, attributes: true, childList: true, characterData: true });
};
const steps = async (page) => (await page.evaluate(() => window.__log)).map((x) => JSON.parse(x));

test('patching: the estimate of every cell at once, then the 16 largest patched exactly, and how well they agree', async () => {
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await ready(page);
  await page.evaluate(RECORD);
  const before = await page.getAttribute('#circuits', 'data-result');
  await page.selectOption('#hdmodel', 'fortunes-induction.safetensors');
  await ready(page, before);
  const log = await steps(page);
  // the estimate came (the last run's: a run may have started again while the page settled) with the
  // head grid drawn (12 cells) and no exact cell yet, while running
  const first = log.findLastIndex(([state, estimate, n]) => state === 'running' && estimate === 'ready' && n === '0');
  assert.ok(first >= 0, JSON.stringify(log));
  assert.equal(log[first][3], 12, JSON.stringify(log));
  // then the exact cells one by one (12 heads and 16 of the layers x positions), before the result
  const exact = log.slice(first).filter(([state]) => state === 'running').map(([, , n]) => Number(n));
  assert.deepEqual(exact, [...exact].sort((a, b) => a - b), `the exact cells only grow: ${JSON.stringify(log)}`);
  assert.ok(exact.length > 1, `exact cells came after the estimate was drawn: ${JSON.stringify(log)}`);
  assert.ok(exact.at(-1) === 28 || log.some(([state, , n]) => state === 'ready' && n === '28'), JSON.stringify(log));
  assert.equal(await page.getAttribute('#circuits', 'data-exact'), '28');
  await openFold(page, 'hdz');
  assert.equal(await page.$$eval('#hdz td[data-exact="1"]', (t) => t.length), 12, 'every head of 12 patched exactly (12 <= 16)');
  assert.equal(await page.$$eval('#hdresid td[data-exact="1"]', (t) => t.length), 16);
  assert.ok(await page.$$eval('#hdresid td[data-exact="0"]', (t) => t.length) > 100, 'the other layers x positions: the estimate');
  const agree = JSON.parse(await page.getAttribute('#circuits', 'data-agreement'));
  assert.equal(agree.z.cells, 12);
  assert.equal(agree.resid.cells, 16);
  const sentence = await page.textContent('#hdz .hd-agree');
  const r = Number(/correlation (-?\d\.\d\d)/.exec(sentence)?.[1]);
  assert.ok(Math.abs(r - agree.z.pearson) < 0.006, `${sentence} / ${agree.z.pearson}`);
  assert.match(sentence, /^Estimate against real patching, on the 12 heads patched for real: they (agree closely|roughly agree|agree only loosely|disagree) \(correlation -?\d\.\d\d; 1 would be a perfect match\), and (the 3 heads the estimate ranks highest are also the 3|(only \d|none) of the estimate's 3 highest heads (is|are) among the 3) that matter most/);
  assert.ok(agree.z.pearson >= 0.8, `the shipped induction model's heads: ${sentence}`);
  assert.match(await page.textContent('#hdresid .hd-agree-resid'), /on the 16 cells patched for real \(of \d+; the rest show the estimate only\): .*correlation -?\d\.\d\d/);
  assert.match(await page.textContent('#hdstatus'), /patching estimated for all \d+ cells in \d+ ms, and 28 of them patched exactly in [\d.]+ m?s \(all \d+ would take about [\d.]+ m?s\)/);
  assert.equal(await page.isHidden('#hdcancel'), true, 'no Cancel once done');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('patching: Cancel stops the run, keeps the estimate, and the next text runs again', async () => {
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await ready(page);
  await page.evaluate(RECORD);
  await page.evaluate(() => { window.__cancelOnEstimate = true; });
  await page.selectOption('#hdmodel', 'fortunes-induction.safetensors');
  await page.waitForSelector('#circuits[data-state="cancelled"]', { timeout: LONG });
  assert.match(await page.textContent('#hdstatus'), /^Stopped\. The estimate of every cell is drawn under Patching; \d+ cells? (was|were) patched exactly before the stop, and the heads were not ablated\./);
  assert.equal(await page.isHidden('#hdcancel'), true);
  // whatever the worker still sends for that run is dropped: no result, no ablation grid, the state stays
  await page.evaluate(() => new Promise((r) => setTimeout(r, 1500)));
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'cancelled');
  assert.equal(await page.getAttribute('#circuits', 'data-result'), null);
  assert.equal(await page.$$eval('#hdgrid .grid-cell', (b) => b.length), 0);
  assert.equal(await page.$$eval('#hdz td', (t) => t.length), 12, 'the estimate stays drawn');
  // the worker is free: another text runs to the end
  await page.fill('#ltext', 'a quiet river by the bridge');
  await ready(page);
  assert.equal(JSON.parse(await page.getAttribute('#circuits', 'data-result')).file, 'fortunes-induction.safetensors');
  assert.deepEqual(problems(), []);
  await page.close();
});

// A tiny llama2.c model and its tokenizer (llama2c.test.js's recipe): layers x heads of our choosing.
async function llama2c(layers, heads, seed) {
  const { loadAttention } = await import('../../wasm/index.js');
  const lib = await loadAttention();
  const pieces = ['<unk>', '\n<s>\n', '\n</s>\n', ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`),
    ' ', ...'abcdefghijklmnopqrstuvwxyz.,!'.split(''), 'th', 'he', ' t', ' a', 'the', ' the', 'an', 'nd', ' and', 'in', 'ing'];
  const m = lib.createModel({ vocab: pieces.length, dModel: 16, heads, layers, maxLen: 64, block: 'llama', seed });
  const bin = m.saveLlama2c();
  m.dispose();
  return { bin: Buffer.from(bin), tok: Buffer.from(lib.writeLlama2cTokenizer(pieces, pieces.map((p, i) => (i < 259 ? 0 : p.length * 10 - i * 1e-3)))) };
}

test('another model opened: the old grid and its sentences go at once, then the new model\'s come', async () => {
  const a = await llama2c(2, 4, 1), b = await llama2c(3, 2, 2);
  const { page, problems } = await suite.open('?form=softmax#circuits');
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
  const open = async (name, files) => {
    await page.setInputFiles('#l2files', [{ name, mimeType: 'application/octet-stream', buffer: files.bin },
      { name: 'tokenizer.bin', mimeType: 'application/octet-stream', buffer: files.tok }]);
    await page.waitForFunction((n) => document.querySelector('#hdmodel option[value="opened"]')?.textContent.includes(n), name, { timeout: LONG });
  };
  const onOpened = (name) => page.waitForFunction((n) => {
    const s = document.querySelector('#circuits');
    return s.dataset.state === 'error' || (s.dataset.state === 'ready' && document.querySelector('#hdstatus').textContent.includes(n));
  }, name, { timeout: LONG });
  await open('alpha.bin', a);
  await page.selectOption('#hdmodel', 'opened');
  await onOpened('alpha');
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready', await page.textContent('#hdstatus'));
  assert.equal(await page.$$eval('#hdgrid .grid-cell', (c) => c.length), 8, 'alpha: 2 layers x 4 heads');
  assert.ok((await page.textContent('#hdclaim')).length > 0);
  await page.evaluate(RECORD);
  await page.evaluate(() => { window.__first = 'alpha'; });
  await open('beta.bin', b);
  // at once: nothing of alpha's is left while the panel names another model
  assert.equal(await page.$$eval('#hdgrid .grid-cell', (c) => c.length) === 8 && !(await page.textContent('#hdstatus')).includes('alpha'), false,
    'alpha\'s 2 x 4 grid still drawn under another model\'s name');
  await onOpened('beta');
  assert.equal(await page.getAttribute('#circuits', 'data-state'), 'ready', await page.textContent('#hdstatus'));
  assert.equal(await page.$$eval('#hdgrid .grid-cell', (c) => c.length), 6, 'beta: 3 layers x 2 heads');
  assert.equal(await page.$$eval('#hdz td', (t) => t.length), 6);
  assert.deepEqual(await page.evaluate(() => window.__stale), [], 'alpha\'s grid or claim shown under another model');
  assert.deepEqual(problems(), []);
  await page.close();
});
