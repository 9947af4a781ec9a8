// subword.test.js: the learned panel's first softmax model reads sub-word pieces (issue 34): the
// heatmaps are labelled with its tokenizer's pieces (a leading space shown as ␣), the guesses are
// pieces with the probabilities model.forward gives, the probe is random pieces read twice and
// names the catalogue's induction head, the guided "your phrase twice" step names a head that jumps
// back, and "Save as llama2.c" writes the pair. Screenshots at 1280 x 800 and 390 x 844 go to
// tests/browser/screenshots/subword-*.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SCREENSHOTS, launch, playgroundSuite } from './helpers.js';

const LONG = 300000; // ms: a loaded machine may be slow, never a failure
const suite = playgroundSuite({ before, after });
const fortunes = JSON.parse(readFileSync(new URL('../../web/models/fortunes.json', import.meta.url), 'utf8'));
const entry = fortunes.models.find((e) => e.panel && e.config.attention === 'softmax');
const TEXT = 'The lamplighter walked down the road at dusk';

const shoot = (page, name) => page.locator('#learned').screenshot({ path: `${SCREENSHOTS}${name}.png` });

test('the sub-word model: pieces as labels, its guesses, the probe, the phrase twice, llama2.c', async () => {
  assert.ok(entry.tokenizer, `the first softmax model of the learned panel reads sub-word pieces (${entry.file})`);
  const { page, problems } = await suite.open(`?form=softmax&ltext=${encodeURIComponent(TEXT)}`);
  await page.waitForFunction((f) => document.querySelector('#learned').dataset.state === 'ready'
    && document.querySelector('#learned').dataset.file === f, entry.file, { timeout: LONG });
  // what the page should show, computed apart from the panel: the tokenizer's pieces and forward's logits
  const want = await page.evaluate(async ([f, tok, text]) => {
    const lib = await (await import('/wasm/index.js')).loadAttention();
    const t = lib.loadTokenizer(await (await fetch(`/models/${tok}`)).json());
    const m = lib.loadModel(new Uint8Array(await (await fetch(`/models/${f}`)).arrayBuffer()));
    const ids = t.encode(text);
    const { logits } = m.forward(ids);
    const V = m.config.vocab, last = [...logits.subarray((ids.length - 1) * V, ids.length * V)];
    m.dispose();
    const mx = Math.max(...last), e = last.map((x) => Math.exp(x - mx)), s = e.reduce((a, b) => a + b, 0);
    const top = e.slice(0, t.vocabSize).map((x, i) => [i < 3 ? '' : new TextDecoder().decode(t.pieceBytes(i)), x / s, i])
      .sort((a, b) => b[1] - a[1]).slice(0, 5);
    return { n: ids.length, pieces: Array.from(ids, (i) => new TextDecoder().decode(t.pieceBytes(i))), top };
  }, [entry.file, entry.tokenizer, TEXT]);
  assert.ok(want.n < TEXT.length / 1.5, `${want.n} pieces for ${TEXT.length} characters`);
  assert.equal(want.pieces.join(''), TEXT, 'the pieces spell the text');
  // one row and column per piece
  assert.equal(await page.$eval('#lheatmaps canvas', (c) => Number(c.dataset.n)), want.n);
  // the guesses at the last piece: forward's top 5 over the tokenizer's pieces, probabilities to 1e-6
  await page.waitForFunction((n) => document.querySelector('#lguesses').dataset.position === String(n - 1), want.n);
  const shown = await page.$$eval('#lguesses li', (lis) => lis.map((li) => [li.dataset.char, Number(li.dataset.p)]));
  assert.equal(shown.length, 5);
  shown.forEach(([piece, p], k) => {
    assert.equal(piece, want.top[k][0]);
    assert.ok(Math.abs(p - want.top[k][1]) < 1e-6, `${p} against ${want.top[k][1]}`);
  });
  assert.match(await page.textContent('#lguesses'), /the model guesses the next piece:/);
  assert.match(await page.textContent('#labout'), /reading sub-word pieces: a byte-level BPE of \d+ pieces/);
  assert.match(await page.textContent('label[for="ltext"]'), /sub-word pieces; the first \d+ pieces/);
  const chips = await page.$$eval('#lguesses .guess-char', (s) => s.map((x) => x.textContent));
  assert.ok(chips.every((c) => !c.includes(' ')), `a space is shown as ␣: ${chips}`);
  await shoot(page, 'subword-1280');

  // the probe: random pieces twice; the strongest induction head is the catalogue's
  await page.click('#lprobe');
  await page.waitForFunction(() => document.querySelector('#learned').dataset.view === 'probe'
    && document.querySelector('#learned').dataset.state === 'ready');
  const probe = JSON.parse(await page.getAttribute('#learned', 'data-heads'));
  const top = probe.reduce((a, b) => (b.induction > a.induction ? b : a));
  assert.deepEqual([top.layer, top.head], [entry.induction.layer, entry.induction.head]);
  assert.ok(Math.abs(top.induction - entry.induction.score) < 1e-4, `${top.induction} against ${entry.induction.score}`);
  assert.equal(await page.$eval('#lheatmaps canvas', (c) => Number(c.dataset.n)), 2 * fortunes.probe.letters);
  assert.match(await page.textContent('#lstatus'), /random pieces, then the same \d+ again/);

  // the guided step: the phrase twice in at most the panel's pieces, and a head that jumps back named
  await page.click('#lprobe');
  await page.waitForFunction(() => document.querySelector('#learned').dataset.view === 'text');
  await page.click('#ltwice');
  await page.waitForFunction(() => /Your phrase, twice/.test(document.querySelector('#lstatus').textContent), null, { timeout: LONG });
  const twice = await page.inputValue('#ltext');
  assert.match(twice, /^The lamplighter.*\. The lamplighter/);
  if (entry.induction.score >= 0.3) assert.match(await page.textContent('#lstatus'), /Layer \d, head \d jumps back: from each piece of the second copy/);

  // Save as llama2.c: the model and its BPE as llama2.c's pair
  const names = [];
  page.on('download', (d) => names.push(d.suggestedFilename()));
  assert.ok(!(await page.isDisabled('#lsave-llama2c')), await page.getAttribute('#lsave-llama2c', 'title'));
  await page.click('#lsave-llama2c');
  for (let k = 0; k < 100 && names.length < 2; k++) await page.waitForTimeout(100);
  assert.deepEqual(names.sort(), ['model.bin', 'tokenizer.bin']);
  assert.deepEqual(problems(), []);
  await page.close();
});

test('the sub-word model on a phone: no sideways scrolling', async () => {
  const phone = await launch({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  try {
    const { page, problems } = await suite.open(`?form=softmax&ltext=${encodeURIComponent(TEXT)}`, { context: phone.context });
    await page.waitForFunction((f) => document.querySelector('#learned').dataset.state === 'ready'
      && document.querySelector('#learned').dataset.file === f, entry.file, { timeout: LONG });
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390, 'no sideways scrolling');
    await shoot(page, 'subword-390');
    assert.deepEqual(problems(), []);
    await page.close();
  } finally {
    await phone.close();
  }
});
