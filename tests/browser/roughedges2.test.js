// roughedges2.test.js: rough edges a learner meets in the page (issue 32, items 6-11), one test
// each: the value of a heatmap cell in a tooltip beside the cell (mouse and tap), selects that show
// their option in full, the sinks chart smoothed with its window named and the window marked, no
// "strongest induction head" of score 0.02, the learned panel's layer x head thumbnails, and the
// llama2.c sample opened with one click. Waits on the page's DOM state only; every test fails on
// any console error, page error or failed request. Screenshots of each panel changed go to
// tests/browser/screenshots/ (roughedges2-*.png).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { NAMED_AT, describeInduction } from '../../lab/heads.js';
import { SAMPLE } from '../../lab/llama2c-sample.js';
import { SCREENSHOTS, launch, playgroundSuite } from './helpers.js';

const LONG = 300000; // ms: a loaded machine may be slow, never a failure
const PHONE = { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 };

const { open } = playgroundSuite({ before, after });

async function shoot(page, selector, name) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.locator(selector).screenshot({ path: `${SCREENSHOTS}roughedges2-${name}.png` });
}

// The box of cell (i, j) of a heatmap canvas on the screen, from the canvas's data-left/top/cell.
async function cellBox(page, canvas, i, j) {
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const ds = await canvas.evaluate((c) => ({ left: Number(c.dataset.left), top: Number(c.dataset.top), cell: Number(c.dataset.cell) }));
  const x = box.x + ds.left + j * ds.cell, y = box.y + ds.top + i * ds.cell;
  return { x, y, cell: ds.cell, cx: x + ds.cell / 2, cy: y + ds.cell / 2 };
}

// The gap in px between the tooltip's box and the cell's (0 when they touch or overlap).
const gap = (tip, c) => Math.hypot(Math.max(0, tip.left - (c.x + c.cell), c.x - tip.right),
  Math.max(0, tip.top - (c.y + c.cell), c.y - tip.bottom));

test('item 6: no head is called the strongest induction head when none reaches NAMED_AT', () => {
  const head = (layer, h, induction) => ({ layer, head: h, scores: { induction } });
  const none = describeInduction([head(0, 0, 0.01), head(0, 1, 0.02), head(1, 0, 0.015)]);
  assert.equal(none.found, false);
  assert.match(none.text, /^no head is an induction head/);
  assert.match(none.text, new RegExp(`below the ${NAMED_AT} that names one`));
  const one = describeInduction([head(0, 0, 0.01), head(2, 1, NAMED_AT + 0.4)]);
  assert.equal(one.found, true);
  assert.equal(one.text, `the strongest induction head is layer 3, head 2 (score ${(NAMED_AT + 0.4).toFixed(2)})`);
});

test('item 7: hovering or tapping a cell shows its value in a tooltip beside the cell', async () => {
  const { page, problems } = await open('?form=softmax&input=tokens&text=one+two+three+four+five&heads=2&d=16');
  const canvas = page.locator('#heatmaps canvas').nth(1);
  const c = await cellBox(page, canvas, 3, 1);
  await page.mouse.move(c.cx, c.cy);
  await page.waitForSelector('#heatmaps ~ .heatmap-tip:not([hidden])');
  const tip = await page.$eval('#heatmaps ~ .heatmap-tip', (t) => ({ text: t.textContent, ...t.getBoundingClientRect().toJSON() }));
  assert.match(tip.text, /^A\[3, 1\] = \d\.\d{3}/);
  assert.ok(gap(tip, c) <= 40, `the tooltip is ${gap(tip, c).toFixed(0)} px from the cell`);
  assert.ok(tip.left >= 0 && tip.right <= 1280, 'inside the viewport');
  // the readout line still says it at length, with the same value
  assert.match(await page.textContent('#readout'), /row i = 3 “four” → column j = 1 “two”: A = \d\.\d{4}/);
  // leaving the canvas hides it
  await page.mouse.move(2, 2);
  await page.waitForSelector('#heatmaps ~ .heatmap-tip[hidden]', { state: 'attached' });
  await shoot(page, '#attention', 'attention-1280');
  assert.deepEqual(problems(), []);
  await page.close();

  // a phone: a tap shows the value beside the tapped cell, inside the screen
  const phone = await launch(PHONE);
  try {
    const { page: p, problems: pp } = await open('?form=softmax&input=tokens&text=one+two+three+four+five&heads=1&d=16',
      { context: phone.context });
    await p.waitForSelector('#learned[data-state="ready"]', { timeout: LONG }); // the page above stops moving
    const cv = p.locator('#heatmaps canvas').first();
    for (let attempt = 1; ; attempt++) {
      const cc = await cellBox(p, cv, 4, 4);
      await p.touchscreen.tap(cc.cx, cc.cy);
      try {
        await p.waitForFunction(() => /^A\[4, 4\]/.test(document.querySelector('#heatmaps ~ .heatmap-tip:not([hidden])')?.textContent ?? ''),
          null, { timeout: 15000 });
      } catch (e) {
        if (attempt === 4) throw e;
        continue;
      }
      const t = await p.$eval('#heatmaps ~ .heatmap-tip', (el) => el.getBoundingClientRect().toJSON());
      assert.ok(gap(t, cc) <= 40, `the tooltip is ${gap(t, cc).toFixed(0)} px from the tapped cell`);
      assert.ok(t.left >= 0 && t.right <= 390, `inside the phone's screen: ${t.left}..${t.right}`);
      break;
    }
    await shoot(p, '#attention', 'attention-390');
    assert.deepEqual(pp(), []);
    await p.close();
  } finally {
    await phone.close();
  }
});

test('item 10: at 1280 x 800 every select shows its chosen option in full', async () => {
  const { page, problems } = await open('?form=softmax');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.waitForSelector('#learned[data-state="ready"]', { timeout: LONG });
  await page.waitForTimeout(300); // one layout after the resize
  const cut = await page.evaluate(() => {
    const ctx = document.createElement('canvas').getContext('2d');
    const ARROW = 20; // px Chromium's drop-down arrow takes (a select's own width is its longest option + 20 px)
    const out = [];
    for (const s of document.querySelectorAll('select')) {
      if (!s.offsetParent) continue;
      const cs = getComputedStyle(s);
      ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const content = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const text = s.selectedOptions[0]?.text ?? '';
      const w = ctx.measureText(text).width;
      if (s.scrollWidth > s.clientWidth + 1 || w + ARROW > content) out.push(`#${s.id} "${text}" (${Math.round(w)} px in ${Math.round(content)} px)`);
    }
    return out;
  });
  assert.deepEqual(cut, [], 'selects whose chosen option is cut');
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 1280, 'no sideways scrolling');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('item 9: the sinks chart is a moving average with its window named and the window marked; the text box starts full', async () => {
  const { page, problems } = await open();
  await page.waitForSelector('#sinks:not([hidden])', { timeout: LONG });
  await page.$eval('#sinks', (el) => el.scrollIntoView()); // the text comes when the panel is in view
  await page.waitForFunction(() => document.querySelector('#stext').value.length > 1000, null, { timeout: LONG });
  await page.click('#srun');
  await page.waitForSelector('#sinks[data-done="1"]', { timeout: LONG });
  const ds = await page.$eval('#schart', (c) => ({ ...c.dataset }));
  assert.equal(ds.smooth, '100');
  assert.ok(Number(ds.points) < Number(ds.raw) / 2, `${ds.points} points for ${ds.raw} characters`);
  const caption = await page.textContent('#sinks figcaption');
  assert.match(caption, /moving average over 100 characters/);
  assert.match(caption, /position 32, where the window fills/);
  // the legend is the three ways, as before
  assert.deepEqual(await page.$$eval('#slegend li', (lis) => lis.map((li) => li.textContent)),
    ['window only', 'window + 4 sinks', 'recompute']);
  await page.$eval('#sinks', (el) => el.scrollIntoView());
  await shoot(page, '#sinks', 'sinks-1280');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('item 8: the learned panel is a layer x head grid of thumbnails; a title shows one large, every character labelled', async () => {
  const { page, problems } = await open('?form=softmax&ltext=the+lamplighter+walked+the+road');
  await page.waitForSelector('#learned[data-state="ready"]', { timeout: LONG });
  const heads = JSON.parse(await page.getAttribute('#learned', 'data-heads'));
  const H = Math.max(...heads.map((h) => h.head)) + 1, L = Math.max(...heads.map((h) => h.layer)) + 1;
  // one row per layer: the thumbnails of a row share their top, H to a row
  const tops = await page.$$eval('#lheatmaps canvas', (cs) => cs.map((c) => Math.round(c.getBoundingClientRect().top)));
  assert.equal(tops.length, L * H);
  for (let l = 0; l < L; l++) assert.equal(new Set(tops.slice(l * H, (l + 1) * H)).size, 1, `layer ${l + 1} is one row`);
  assert.equal(new Set(tops).size, L, 'one row per layer');
  // thumbnails use the width: the grid spans most of its box
  const use = await page.$eval('#lheatmaps', (g) => {
    const cs = [...g.querySelectorAll('canvas')].map((c) => c.getBoundingClientRect());
    return (Math.max(...cs.map((r) => r.right)) - g.getBoundingClientRect().left) / g.clientWidth;
  });
  assert.ok(use > 0.7, `the thumbnails use ${(100 * use).toFixed(0)}% of the width`);
  // a title shows that head large, at the grid's width, every character labelled
  await page.click('#lheatmaps figure:nth-child(6) figcaption button');
  await page.waitForSelector('.heatmap-big:not([hidden]) canvas');
  const big = await page.$eval('.heatmap-big canvas', (c) => ({ ...c.dataset, width: c.getBoundingClientRect().width,
    grid: document.querySelector('#lheatmaps').clientWidth, caption: c.parentElement.querySelector('figcaption').textContent }));
  assert.equal(big.caption, await page.textContent('#lheatmaps figure:nth-child(6) figcaption'));
  assert.ok(big.width > 0.8 * big.grid && big.width <= big.grid + 1, `${big.width} px in a grid of ${big.grid}`);
  assert.ok(Number(big.cell) >= 9, `cells of ${big.cell} px hold every character's label`);
  await shoot(page, '#learned', 'learned-1280');
  // the learned models have the llama block: "Save as llama2.c" downloads the two files
  assert.equal(await page.$eval('#lsave-llama2c', (b) => b.disabled), false);
  const names = [];
  page.on('download', (d) => names.push(d.suggestedFilename()));
  await page.click('#lsave-llama2c');
  for (let k = 0; k < 50 && names.length < 2; k++) await page.waitForTimeout(100);
  assert.deepEqual(names.sort(), ['model.bin', 'tokenizer.bin']);
  assert.deepEqual(problems(), []);
  await page.close();

  const phone = await launch(PHONE);
  try {
    const { page: p, problems: pp } = await open('?form=softmax&ltext=the+lamplighter+walked+the+road', { context: phone.context });
    await p.waitForSelector('#learned[data-state="ready"]', { timeout: LONG });
    assert.equal(await p.evaluate(() => document.documentElement.scrollWidth), 390, 'no sideways scrolling');
    await shoot(p, '#learned', 'learned-390');
    assert.deepEqual(pp(), []);
    await p.close();
  } finally {
    await phone.close();
  }
});

test('item 11: the llama2.c sample opens with one click and generates; the probe never calls a weak head the strongest induction head', async () => {
  const { page, problems } = await open();
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
  await page.click('#l2sample');
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  const sample = JSON.parse(readFileSync(new URL('../../web/models/fortunes.json', import.meta.url), 'utf8')).models
    .find((e) => e.file === SAMPLE.source).config; // the sample's checkpoint, as llama2.c's pair
  assert.match(await page.textContent('#l2status'), new RegExp(`Loaded in \\d+ ms: dim ${sample.dModel}, ${sample.layers} layers, ${sample.heads} heads`));
  const prompt = await page.inputValue('#l2text');
  await page.click('#l2generate');
  await page.waitForSelector('#llama2c[data-done]', { timeout: LONG });
  const output = await page.textContent('#l2output');
  const tokens = JSON.parse(await page.getAttribute('#llama2c', 'data-tokens'));
  assert.ok(tokens.length > 0 && output.startsWith(prompt) && output.length > prompt.length + 5, output);
  assert.match(output.slice(prompt.length), /[a-zA-Z]{2,}/, 'it writes letters, words');
  const status = await page.textContent('#l2status');
  const stop = await page.getAttribute('#llama2c', 'data-stop');
  if (stop === 'bos') assert.match(status, /stopped at the start-of-text token/);
  if (stop === 'length') assert.match(status, /stopped at \d+:/);
  await page.click('#l2probe');
  await page.waitForSelector('#llama2c[data-probe]', { timeout: LONG });
  const probe = JSON.parse(await page.getAttribute('#llama2c', 'data-probe'));
  const best = Math.max(...probe.map((h) => h.induction));
  const said = await page.textContent('#l2status');
  if (best < NAMED_AT) assert.match(said, /no head is an induction head/);
  else assert.match(said, /the strongest induction head is layer \d, head \d \(score \d\.\d\d\): it looks/);
  await page.$eval('#llama2c', (el) => el.scrollIntoView());
  await shoot(page, '#llama2c', 'llama2c-1280');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('item 10/11: the model panel with the llama block saves as llama2.c; other blocks say why not; one point sits mid-chart', async () => {
  const { page, problems } = await open('?form=softmax&task=reverse&mlen=5&msize=tiny&mstart=fresh&msteps=50&march=llama', { model: true });
  await page.waitForSelector('#msave-llama2c:not([disabled])', { timeout: LONG });
  const names = [];
  page.on('download', (d) => names.push(d.suggestedFilename()));
  await page.click('#msave-llama2c');
  await page.waitForFunction(() => document.querySelector('#model').dataset.savedLlama2c, null, { timeout: LONG });
  for (let k = 0; k < 50 && names.length < 2; k++) await page.waitForTimeout(100);
  assert.deepEqual(names.sort(), ['model.bin', 'tokenizer.bin']);
  await page.selectOption('#march', 'transformer');
  await page.waitForSelector('#msave-llama2c[disabled]', { timeout: LONG });
  assert.match(await page.getAttribute('#msave-llama2c', 'title'), /^llama2\.c cannot hold this model: /);
  // a chart of one point: the point is inside the plot, not on its frame
  const at = await page.evaluate(async () => {
    const { drawChart } = await import('/views/chart.js');
    const fig = document.createElement('figure');
    const c = document.createElement('canvas');
    fig.append(c);
    document.body.append(fig);
    drawChart(c, { series: [{ label: 'loss', color: '#0072B2', points: [[800, 3.24e-5]] }], xLabel: 'step', yLabel: 'loss', logX: false });
    const ctx = c.getContext('2d'), d = ctx.getImageData(0, 0, c.width, c.height).data;
    let sx = 0, sy = 0, n = 0; // the marker's blue pixels
    for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) {
      const p = 4 * (y * c.width + x);
      if (d[p] < 40 && d[p + 1] > 90 && d[p + 1] < 140 && d[p + 2] > 150) sx += x, sy += y, n++;
    }
    fig.remove();
    return { x: sx / n / c.width, y: sy / n / c.height, n };
  });
  assert.ok(at.n > 0, 'the point is drawn');
  assert.ok(at.x > 0.3 && at.x < 0.8 && at.y > 0.2 && at.y < 0.8, `the point sits at ${at.x.toFixed(2)}, ${at.y.toFixed(2)} of the chart`);
  assert.deepEqual(problems(), []);
  await page.close();
});
