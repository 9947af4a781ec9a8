// opener-formats.test.js: "Open a model file" walks the page's table of formats (web/formats.js,
// issue 56 item 3). For every row, its sample is made here by the row itself from the shipped
// checkpoint (as the page makes it), sniffs as the row's format (lib.sniffModelFile), and is given
// to the page's file input, once by its own names and once under names that say nothing: the page
// must open it with that row (data-kind), say what the row's shows() says, generate the tokens the
// row's loader gives in Node and draw every head. "Open the sample" opens the sample row's files.
// Panel screenshots at 1280 x 800 and 390 x 844 go to /tmp/shots. Waits on the panel's DOM state.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { FORMATS, SAMPLE_FORMAT } from '../../web/formats.js';
import { SAMPLE } from '../../lab/llama2c-sample.js';
import { playgroundSuite } from './helpers.js';

const LONG = 180_000;
const SHOTS = '/tmp/shots';
const { open } = playgroundSuite({ before, after });
const shipped = (name) => readFile(new URL(`../../web/models/${name}`, import.meta.url));
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// the status line the row's shows() gives, with the page's own load time
const statusLike = (row, model, given) => new RegExp(`^${escape(row.shows(model, { ms: 0, given }).status).replace(/ in 0 ms/, ' in \\d+ ms')}$`);

async function give(page, files, rename = (f) => f.name) {
  await page.setInputFiles('#l2files', files.map((f) => ({ name: rename(f), mimeType: 'application/octet-stream', buffer: Buffer.from(f.bytes) })));
}

for (const row of FORMATS) {
  test(`the format table's ${row.format} row: its sample is opened by it, shown and generating as in Node`, async (t) => {
    const lib = await loadAttention();
    const files = await row.sample(lib, shipped);
    const formats = files.map((f) => lib.sniffModelFile(f.bytes).format);
    t.diagnostic(`${files.map((f, k) => `${f.name}: ${formats[k]}`).join(', ')}`);
    assert.ok(formats.includes(row.sniff), `the sample has a ${row.sniff} file`);
    // the row's loader in Node, on the files by role (their sniffs)
    const given = {};
    for (const [role, spec] of Object.entries(row.files)) {
      const mine = files.filter((f, k) => formats[k] === spec.sniff);
      if (mine.length) given[role] = mine;
    }
    const node = row.load(lib, given);
    const prompt = node.tokenizer.encode(SAMPLE.prompt);
    const expected = [...node.generate(prompt, { maxTokens: 8, ...(row.tokens(node).stop ? { stop: row.tokens(node).stop.id } : {}) })];

    const { page, problems } = await open();
    await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
    for (const rename of [undefined, (f) => `file-${files.indexOf(f)}.dat`]) {
      await page.evaluate(() => { delete document.querySelector('#llama2c').dataset.loaded; });
      await give(page, files, rename);
      await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
      assert.equal(await page.getAttribute('#llama2c', 'data-kind'), row.format, rename ? 'opened by its bytes, under other names' : '');
    }
    const status = await page.textContent('#l2status');
    t.diagnostic(status);
    assert.match(status, statusLike(row, node, Object.fromEntries(Object.entries(given).map(([role, list]) => [role,
      list.map((f) => ({ name: `file-${files.indexOf(f)}.dat`, bytes: f.bytes }))]))));
    await page.fill('#l2text', SAMPLE.prompt);
    await page.selectOption('#l2count', '8');
    await page.click('#l2generate');
    await page.waitForSelector('#llama2c[data-done]', { timeout: LONG });
    assert.deepEqual(JSON.parse(await page.getAttribute('#llama2c', 'data-tokens')), expected, 'the page generates what the row\'s loader gives in Node');
    assert.equal(await page.textContent('#l2output'), row.tokens(node).decode([...prompt, ...expected]));
    assert.equal(await page.$$eval('#l2heatmaps figure canvas', (cs) => cs.length), node.config.heads, 'every head of the layer is drawn');
    mkdirSync(SHOTS, { recursive: true });
    for (const [width, height] of [[1280, 800], [390, 844]]) {
      await page.setViewportSize({ width, height });
      await page.waitForTimeout(400); // the page's resize handler lays the heatmaps out again
      const overflow = await page.$eval('#llama2c', (s) => s.scrollWidth - s.clientWidth);
      assert.ok(overflow <= 1, `the panel does not overflow at ${width} px (by ${overflow} px)`);
      await page.locator('#llama2c').screenshot({ path: join(SHOTS, `opener-${row.format}-${width}.png`) });
    }
    assert.deepEqual(problems(), []);
    node.dispose();
    await page.close();
  });
}

test('"Open the sample" opens the sample row\'s files', async () => {
  const { page, problems } = await open();
  await page.waitForSelector('#llama2c:not([hidden])', { timeout: LONG });
  await page.click('#l2sample');
  await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: LONG });
  assert.equal(await page.getAttribute('#llama2c', 'data-kind'), SAMPLE_FORMAT.format);
  assert.equal(await page.inputValue('#l2text'), SAMPLE.prompt);
  assert.match(await page.textContent('#l2files-names'), new RegExp(`^${Object.keys(SAMPLE_FORMAT.files).map((role) => `${role}: \\S+ \\(`).join('.*; ')}`));
  assert.deepEqual(problems(), []);
  await page.close();
});
