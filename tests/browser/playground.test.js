// playground.test.js: the playground page (web/) in headless Chromium, served by scripts/serve.js
// on a free port. Every test fails on any console error, page error or failed request.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { startServer } from '../../scripts/serve.js';
import { launch, openPage, screenshot } from './helpers.js';

let server;
let browser;

before(async () => {
  server = await startServer({ port: 0 });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(query = '', viewport) {
  const { page, problems } = await openPage(browser.context);
  if (viewport) await page.setViewportSize(viewport);
  await page.goto(`${server.url}${query}`);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 120000 });
  return { page, problems };
}

function assertNoProblems(problems) {
  assert.deepEqual(problems(), [], 'console errors or failed requests');
}

/**
 * Reads each heatmap back from its canvas: the colour at the centre of every cell.
 * Returns [{ n, m, colours: ['r,g,b', ...] (n*m, row-major), distinct }].
 */
function readHeatmaps(page) {
  return page.$$eval('#heatmaps canvas', (canvases) => canvases.map((c) => {
    const { left, top, cell, n, m } = Object.fromEntries(Object.entries(c.dataset).map(([k, v]) => [k, Number(v)]));
    const scale = c.width / parseFloat(c.style.width);
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const colours = [];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < m; j++) {
        const x = Math.floor((left + (j + 0.5) * cell) * scale), y = Math.floor((top + (i + 0.5) * cell) * scale);
        const p = 4 * (y * c.width + x);
        colours.push(`${data[p]},${data[p + 1]},${data[p + 2]}`);
      }
    }
    return { n, m, colours, distinct: new Set(colours).size };
  }));
}

async function changeAndWait(page, action) {
  const before = Number(await page.getAttribute('body', 'data-renders'));
  await action();
  await page.waitForFunction((b) => Number(document.body.dataset.renders) > b, before);
}

test('the page loads, says which build runs, and draws varying heatmaps', async (t) => {
  const { page, problems } = await open();
  const status = await page.textContent('#status');
  t.diagnostic(status);
  // Chromium validates relaxed SIMD, so the page runs the relaxed build
  assert.match(status, /Running the relaxed-SIMD \(fused multiply-add\) build/);
  const maps = await readHeatmaps(page);
  assert.equal(maps.length, 2, 'two heads by default, one heatmap each');
  for (const map of maps) {
    assert.ok(map.n >= 2 && map.n === map.m, `square map, got ${map.n} x ${map.m}`);
    assert.ok(map.distinct >= map.n, `heatmap has only ${map.distinct} distinct colours for ${map.n * map.m} cells`);
  }
  assert.notDeepEqual(maps[0].colours, maps[1].colours, 'the two heads should attend differently');
  // Token labels: the default text is a sentence, so the figure is labelled with its words.
  const label = await page.getAttribute('#heatmaps canvas', 'aria-label');
  assert.match(label, /Head 1 of 2/);
  const legend = await page.getAttribute('#legend', 'aria-label');
  assert.match(legend, /viridis/);
  await screenshot(page, 'playground-desktop');
  assertNoProblems(problems);
  await page.close();
});

test('every family the library exports appears; switching forms changes formula and heatmap', async (t) => {
  const { page, problems } = await open();
  // What does the package itself offer? Each family it exports must be in the picker.
  const exported = await page.evaluate(async () => {
    const lib = await (await import('/wasm/index.js')).loadAttention();
    return {
      softmax: typeof lib.softmaxAttention === 'function',
      linear: typeof lib.linearAttention === 'function',
      synth: typeof lib.createSynthesizer === 'function',
    };
  });
  const options = await page.$$eval('#form option', (os) => os.map((o) => o.value));
  t.diagnostic(`library exports: ${JSON.stringify(exported)}; picker: ${options.join(', ')}`);
  for (const [family, has] of Object.entries(exported)) {
    const ids = options.filter((id) => id === family || id.startsWith(`${family}:`));
    if (has) assert.ok(ids.length > 0, `the library has ${family} but the picker offers none of its forms`);
    else assert.equal(ids.length, 0, `${family} is not in the library but the picker offers it`);
  }
  // No form of an exported family failed its probe call.
  assert.equal(await page.isHidden('#skipped'), true, await page.textContent('#skipped'));
  const seen = [];
  for (const id of options) {
    if ((await page.inputValue('#form')) !== id) await changeAndWait(page, () => page.selectOption('#form', id));
    const formula = await page.textContent('#formula');
    const maps = await readHeatmaps(page);
    assert.ok(maps[0].distinct > 1, `${id}: heatmap is one flat colour`);
    for (const s of seen) {
      assert.notEqual(formula, s.formula, `${id} shows the same formula as ${s.id}`);
      assert.notDeepEqual(maps[0].colours, s.colours, `${id} draws the same heatmap as ${s.id}`);
    }
    seen.push({ id, formula, colours: maps[0].colours });
    assert.match(page.url(), new RegExp(`form=${encodeURIComponent(id).replace(/[+]/g, '\\+')}`));
    await screenshot(page, `form-${id.replace(/[^a-z0-9]+/gi, '_')}`);
  }
  t.diagnostic(`forms switched through: ${seen.map((s) => s.id).join(', ')}`);
  assert.ok(seen.length >= 1);
  assertNoProblems(problems);
  await page.close();
});

test('causal masking zeroes the upper triangle; typed tokens and hover read the values', async () => {
  const { page, problems } = await open('?form=softmax&input=tokens&text=a+b+c+d+e+f&heads=1&d=16');
  let [map] = await readHeatmaps(page);
  assert.equal(map.n, 6, 'six tokens typed, six rows');
  // Each cell has the viridis colour of the library's own weight (computed here straight from the package).
  const want = await page.evaluate(async () => {
    const { loadAttention } = await import('/wasm/index.js');
    const { makeInputs } = await import('/inputs.js');
    const { VIRIDIS } = await import('/views/colormap.js');
    const x = makeInputs({ input: 'tokens', text: 'a b c d e f', d: 16, seed: 1 }, 64);
    const lib = await loadAttention();
    const { weights } = lib.softmaxAttention({ q: x.q, k: x.k, v: x.v, n: x.n, d: 16, heads: 1, returnWeights: true });
    const vmax = Math.max(...weights);
    return [...weights].map((w) => {
      const c = 4 * Math.round((w / vmax) * 255);
      return `${VIRIDIS[c]},${VIRIDIS[c + 1]},${VIRIDIS[c + 2]}`;
    });
  });
  assert.deepEqual(map.colours, want, 'drawn colours vs the weights of lib.softmaxAttention');
  const zero = await page.evaluate(async () => {
    const { VIRIDIS } = await import('/views/colormap.js');
    return `${VIRIDIS[0]},${VIRIDIS[1]},${VIRIDIS[2]}`;
  });
  const upper = (mp) => mp.colours.filter((_, idx) => idx % mp.m > Math.floor(idx / mp.m));
  assert.ok(upper(map).some((c) => c !== zero), 'without the mask some j > i entries are non-zero');
  await changeAndWait(page, () => page.check('#causal'));
  [map] = await readHeatmaps(page);
  assert.ok(upper(map).every((c) => c === zero), 'causal: every j > i entry is drawn as 0');
  assert.notEqual(map.colours[0], zero, 'row 0 attends to itself with weight 1');

  // Per-row colour scale: every row's largest weight is drawn at the top of the colormap.
  await changeAndWait(page, () => page.selectOption('#scale', 'row'));
  assert.match(page.url(), /scale=row/);
  [map] = await readHeatmaps(page);
  const top = await page.evaluate(async () => {
    const { VIRIDIS } = await import('/views/colormap.js');
    return `${VIRIDIS[1020]},${VIRIDIS[1021]},${VIRIDIS[1022]}`;
  });
  for (let i = 0; i < map.n; i++) assert.ok(map.colours.slice(i * map.m, (i + 1) * map.m).includes(top), `row ${i} has no row-max colour`);
  await changeAndWait(page, () => page.selectOption('#scale', 'max'));

  await changeAndWait(page, () => page.fill('#text', 'one two three one two three four'));
  [map] = await readHeatmaps(page);
  assert.equal(map.n, 7);

  // The learned panel comes first: bring the sandbox's heatmap into view before pointing at it.
  await page.locator('#heatmaps canvas').first().scrollIntoViewIfNeeded();
  const box = await page.locator('#heatmaps canvas').first().boundingBox();
  const ds = await page.$eval('#heatmaps canvas', (c) => ({ ...c.dataset }));
  await page.mouse.move(box.x + Number(ds.left) + 1.5 * Number(ds.cell), box.y + Number(ds.top) + 2.5 * Number(ds.cell));
  await page.waitForFunction(() => /row i = 2/.test(document.querySelector('#readout').textContent));
  const readout = await page.textContent('#readout');
  assert.match(readout, /row i = 2 “three” → column j = 1 “two”: A = 0\.\d{4}/);
  // Keyboard: with the mouse away, focus the heatmap (cursor at 0, 0) and move with the arrows.
  await page.mouse.move(0, 0);
  await page.focus('#heatmaps canvas');
  assert.match(await page.textContent('#readout'), /row i = 0 “one” → column j = 0 “one”/);
  for (const key of ['ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowRight', 'ArrowUp']) await page.keyboard.press(key);
  assert.match(await page.textContent('#readout'), /row i = 2 “three” → column j = 1 “two”/);
  assertNoProblems(problems);
  await page.close();
});

test('the timings panel measures two sizes in a worker and plots them', async (t) => {
  const { page, problems } = await open('?tmin=64&tmax=128&td=32&build=scalar');
  const ids = await page.$$eval('#tforms input', (bs) => bs.map((b) => b.value));
  await page.click('#timings summary:has(#tforms-chosen)'); // the list of forms sits in a fold
  // Time softmax and, when present, one linear form (the page has them as checkboxes).
  const keep = ['softmax', ids.find((id) => id.startsWith('linear:'))].filter(Boolean);
  for (const id of ids) {
    const box = page.locator(`#tforms input[value="${id}"]`);
    if (keep.includes(id) !== (await box.isChecked())) await changeAndWait(page, () => box.click());
  }
  assert.match(page.url(), new RegExp(`tforms=${keep.map(encodeURIComponent).join('%2C').replace(/[+]/g, '\\+')}`));
  await page.click('#trun');
  // While it runs the page stays responsive: the heatmap still redraws on an edit.
  await changeAndWait(page, () => page.fill('#seed', '5'));
  await page.waitForSelector('#timings[data-done="1"]', { timeout: 600000 });
  const status = await page.textContent('#tstatus');
  t.diagnostic(status);
  assert.match(status, /Done: \d+ measurements with the scalar build/);
  const rows = await page.$$eval('#ttable tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
  t.diagnostic(JSON.stringify(rows));
  assert.equal(rows.length, 3, 'a header and one row per size');
  assert.deepEqual(rows.slice(1).map((r) => r[0]), ['64', '128']);
  for (const r of rows.slice(1)) {
    assert.equal(r.length, keep.length + 1);
    for (const cell of r.slice(1)) assert.ok(Number(cell) > 0, `time ${cell} is not a positive number`);
  }
  assert.equal(await page.$eval('#tprogress', (p) => p.value === p.max), true);
  const chartColours = await page.$eval('#tchart', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const set = new Set();
    for (let i = 0; i < d.length; i += 4 * 7) set.add(`${d[i]},${d[i + 1]},${d[i + 2]},${d[i + 3]}`);
    return set.size;
  });
  assert.ok(chartColours > 5, `the chart has only ${chartColours} colours`);
  const legend = await page.textContent('#tlegend');
  assert.match(legend, /slope -?\d+\.\d\d/);
  await screenshot(page, 'timings');

  // Both builds side by side: one column per (form, build) and the scalar/SIMD ratio per form.
  await changeAndWait(page, () => page.selectOption('#build', 'both'));
  await page.click('#trun');
  await page.waitForSelector('#timings[data-done="1"]', { timeout: 600000 });
  const both = await page.textContent('#tstatus');
  t.diagnostic(both);
  assert.match(both, /with the SIMD and scalar builds, side by side.*Scalar time \/ SIMD time: Softmax \(scaled dot-product\) \d+\.\d\d× at n = 128/);
  const header = await page.$$eval('#ttable th', (ths) => ths.map((th) => th.textContent));
  assert.equal(header.length, 1 + 2 * keep.length);
  assert.ok(header.includes('Softmax (scaled dot-product) (SIMD), ms') && header.includes('Softmax (scaled dot-product) (scalar), ms'));
  await screenshot(page, 'timings-both');

  // One thread and every core side by side (the page is cross-origin isolated: 2 threads here)
  await changeAndWait(page, () => page.selectOption('#build', 'threadsvs'));
  await page.click('#trun');
  await page.waitForSelector('#timings[data-done="1"]', { timeout: 600000 });
  const threads = await page.textContent('#tstatus');
  t.diagnostic(threads);
  assert.match(threads, /with the SIMD build on 1 thread and on \d+ threads \(attention-threads.wasm\), side by side.*1-thread time \/ \d+-thread time: Softmax \(scaled dot-product\) \d+\.\d\d× at n = 128/);
  const header2 = await page.$$eval('#ttable th', (ths) => ths.map((th) => th.textContent));
  assert.ok(header2.includes('Softmax (scaled dot-product) (threads), ms'), header2.join(', '));

  // SIMD128 and relaxed SIMD side by side
  await changeAndWait(page, () => page.selectOption('#build', 'relaxedvs'));
  await page.click('#trun');
  await page.waitForSelector('#timings[data-done="1"]', { timeout: 600000 });
  const relaxed = await page.textContent('#tstatus');
  t.diagnostic(relaxed);
  assert.match(relaxed, /with the SIMD128 and relaxed-SIMD builds, side by side.*SIMD128 time \/ relaxed-SIMD time: Softmax \(scaled dot-product\) \d+\.\d\d× at n = 128/);
  const header3 = await page.$$eval('#ttable th', (ths) => ths.map((th) => th.textContent));
  assert.ok(header3.includes('Softmax (scaled dot-product) (relaxed SIMD), ms'), header3.join(', '));
  assertNoProblems(problems);
  await page.close();
});

test('the URL restores every setting after a reload', async () => {
  const { page, problems } = await open();
  const forms = await page.$$eval('#form option', (os) => os.map((o) => o.value));
  const form = forms.find((id) => id.startsWith('linear:')) ?? 'softmax';
  await changeAndWait(page, () => page.selectOption('#form', form));
  await changeAndWait(page, () => page.check('input[name="input"][value="random"]'));
  await changeAndWait(page, () => page.fill('#n', '24'));
  await changeAndWait(page, () => page.fill('#seed', '42'));
  await changeAndWait(page, () => page.selectOption('#d', '64'));
  await changeAndWait(page, () => page.selectOption('#heads', '4'));
  await changeAndWait(page, () => page.selectOption('#tmax', '256'));
  await changeAndWait(page, () => page.selectOption('#scale', 'row'));
  const url = page.url();
  const before = await readHeatmaps(page);
  assert.equal(before.length, 4);
  assert.equal(before[0].n, 24);

  // the panels below may still be fetching a model for the chosen form: a reload would abort that
  // request (net::ERR_ABORTED), which is the test's doing, not the page's
  await page.waitForLoadState('networkidle');
  await page.reload();
  await page.waitForSelector('body[data-state="ready"]');
  assert.equal(page.url(), url);
  assert.equal(await page.inputValue('#form'), form);
  assert.equal(await page.isChecked('input[name="input"][value="random"]'), true);
  assert.equal(await page.inputValue('#n'), '24');
  assert.equal(await page.inputValue('#seed'), '42');
  assert.equal(await page.inputValue('#d'), '64');
  assert.equal(await page.inputValue('#heads'), '4');
  assert.equal(await page.inputValue('#tmax'), '256');
  assert.equal(await page.inputValue('#scale'), 'row');
  assert.deepEqual((await readHeatmaps(page)).map((m) => m.colours), before.map((m) => m.colours));

  // The same link in a fresh tab gives the same view.
  const other = await openPage(browser.context);
  await other.page.goto(url);
  await other.page.waitForSelector('body[data-state="ready"]');
  assert.deepEqual((await readHeatmaps(other.page)).map((m) => m.colours), before.map((m) => m.colours));
  assertNoProblems(problems);
  assertNoProblems(other.problems);
  await other.page.close();
  await page.close();
});

test('controls are labelled and keyboard-operable; a phone-width window does not scroll sideways', async () => {
  const { page, problems } = await open('', { width: 390, height: 844 });
  const unlabelled = await page.$$eval('input, select, button, canvas[tabindex]', (els) => els
    .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim()))
    .map((e) => e.outerHTML.slice(0, 80)));
  assert.deepEqual(unlabelled, []);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a 390px window`);
  // Keyboard only: Tab to the form picker, change it with the arrow keys.
  await page.focus('#seed');
  await changeAndWait(page, () => page.keyboard.press('ArrowUp'));
  assert.equal(await page.inputValue('#seed'), '2');
  assert.match(page.url(), /seed=2/);
  if (await page.$$eval('#form option', (os) => os.length) > 1) {
    const first = await page.inputValue('#form');
    await page.focus('#form');
    await changeAndWait(page, () => page.keyboard.press('ArrowDown'));
    assert.notEqual(await page.inputValue('#form'), first);
  }
  await screenshot(page, 'playground-phone');
  assertNoProblems(problems);
  await page.close();
});

// Not a check: refreshes the README's screenshot (docs/screenshot.png: the learned-attention panel
// on a phrase typed twice, its induction head read and its guesses) and docs/compare.png (two forms side by side) when asked to.
test('docs screenshots (AW_UPDATE_DOCS_SCREENSHOT=1 to refresh docs/screenshot.png and docs/compare.png)', async (t) => {
  if (process.env.AW_UPDATE_DOCS_SCREENSHOT !== '1') {
    t.skip('set AW_UPDATE_DOCS_SCREENSHOT=1 to refresh them');
    return;
  }
  const { page, problems } = await open('?form=softmax&ltext=the+lamplighter+walked+the+road&ca=softmax&cb=synth:random'
    + '&ctask=reverse&csteps=500', { width: 1280, height: 900 });
  await page.waitForSelector('#learned[data-state="ready"]');
  // The guided step (the phrase twice), then a row of the second copy of the strongest induction head read, to show
  // the jump back and the guesses.
  await page.click('#ltwice');
  await page.waitForFunction(() => /Your phrase, twice/.test(document.querySelector('#lstatus').textContent));
  const heads = JSON.parse(await page.getAttribute('#learned', 'data-heads'));
  const top = heads.reduce((a, b) => (b.induction > a.induction ? b : a));
  const canvas = page.locator('#lheatmaps canvas').nth(heads.indexOf(top));
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const ds = await canvas.evaluate((c) => ({ ...c.dataset }));
  // a row of the second copy (the model reads characters or sub-word pieces: ds.n of them), and about
  // the column an induction head reads from there
  const n = Number(ds.n), row = n - 4, col = row - Math.floor(n / 2) + 1;
  await page.mouse.move(box.x + Number(ds.left) + (col + 0.5) * Number(ds.cell), box.y + Number(ds.top) + (row + 0.5) * Number(ds.cell));
  await page.waitForFunction((r) => document.querySelector('#lguesses').dataset.position === String(r), row);
  // the panel alone: a full-page picture would show the sticky contents and settings column halfway down
  await page.locator('#learned').screenshot({ path: fileURLToPath(new URL('../../docs/screenshot.png', import.meta.url)) });
  await page.click('#crun');
  await page.waitForSelector('#compare[data-done="1"]', { timeout: 900000 });
  await page.locator('#compare').screenshot({ path: fileURLToPath(new URL('../../docs/compare.png', import.meta.url)) });
  assertNoProblems(problems);
  await page.close();
});

test('Synthesizer random ignores the input (position only); softmax does not', async () => {
  const { page, problems } = await open('?form=synth:random&input=tokens&text=a+b+c+d+e&heads=1&d=16');
  const a = (await readHeatmaps(page))[0].colours;
  await changeAndWait(page, () => page.fill('#text', 'v w x y z'));
  const b = (await readHeatmaps(page))[0].colours;
  assert.deepEqual(b, a, 'random synthesizer: same length, other tokens, same A');
  await changeAndWait(page, () => page.selectOption('#form', 'softmax'));
  const c = (await readHeatmaps(page))[0].colours;
  await changeAndWait(page, () => page.fill('#text', 'a b c d e'));
  const d = (await readHeatmaps(page))[0].colours;
  assert.notDeepEqual(c, d, 'softmax: other tokens, other A');
  assertNoProblems(problems);
  await page.close();
});

test('Stop ends a long timing run at once; bad URL values fall back to defaults', async () => {
  const { page, problems } = await open('?tmin=1024&tmax=8192&tforms=softmax&build=scalar&n=abc&heads=3&form=bogus&seed=-4&input=x');
  // Bad values: the defaults, and the URL rewritten to a valid state.
  assert.equal(await page.inputValue('#form'), 'softmax');
  assert.equal(await page.inputValue('#heads'), '2');
  assert.equal(await page.inputValue('#seed'), '1');
  assert.equal(await page.isChecked('input[name="input"][value="tokens"]'), true);
  assert.match(page.url(), /form=softmax&input=tokens&.*&n=16&d=32&heads=2&causal=0&seed=1&/);
  await page.click('#trun');
  await page.waitForFunction(() => document.querySelector('#tstop').disabled === false);
  await page.click('#tstop');
  assert.equal(await page.textContent('#tstatus'), 'Stopped.');
  assert.equal(await page.isEnabled('#trun'), true);
  assert.equal(await page.getAttribute('#timings', 'data-done'), '0');
  // The panel works again after a stop (a new worker).
  await changeAndWait(page, () => page.selectOption('#tmax', '1024'));
  await page.click('#trun');
  await page.waitForSelector('#timings[data-done="1"]', { timeout: 600000 });
  assertNoProblems(problems);
  await page.close();
});
