// tokenizer.test.js: the "How text becomes tokens" panel (issue 34, item 3) as a learner meets it.
// The starting text is cut into chips whose ids are the library's (computed here in Node on the
// same tokenizer); the slider at 0 merges shows one chip per byte (bytes of a split character as
// <0xXX>), part way it names the merge just added; "Train on your text" trains in a Worker and the
// chips switch to it; bad input shows the library's Error; the own-text panel trains on that
// tokenizer's ids. A catalogue entry naming a `tokenizer` file makes that the starting tokenizer.
// Screenshots at 1280 x 800 and 390 x 844: tests/browser/screenshots/tokenizer-*.png.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SCREENSHOTS, launch, playgroundSuite } from './helpers.js';
import { loadAttention } from '../../wasm/index.js';

const LONG = 300000; // ms: a loaded machine may be slow, never a failure
const suite = playgroundSuite({ before, after });
const lib = await loadAttention();
const MODELS = new URL('../../web/models/', import.meta.url);
const readJSON = (f) => JSON.parse(readFileSync(new URL(f, MODELS), 'utf8'));
const CATALOGUES = ['fortunes.json', 'index.json'].map(readJSON);
const shipped = CATALOGUES.flatMap((c) => c.models ?? []).find((e) => typeof e.tokenizer === 'string');
// the page's starting tokenizer, built here the way the page builds it
const startTok = shipped ? lib.loadTokenizer(readFileSync(new URL(shipped.tokenizer, MODELS), 'utf8'))
  : lib.trainTokenizer(readFileSync(new URL('stream-text.txt', MODELS), 'utf8'), { vocabSize: 512 });
const unmark = (s) => s.replaceAll('␣', ' ').replaceAll('↵', '\n');

const chips = (page) => page.$$eval('#tkchips .tk-chip', (cs) => cs.map((c) => ({
  piece: c.querySelector('.tk-piece').textContent, id: Number(c.querySelector('.tk-id').textContent) })));
async function slide(page, k) {
  await page.$eval('#tkmerges', (s, v) => { s.value = String(v); s.dispatchEvent(new Event('input', { bubbles: true })); }, k);
}
const ready = (page) => page.waitForSelector('#tokenizer[data-state="ready"]', { timeout: LONG });

test('the panel cuts the text into the library\'s pieces; the slider replays the merges; training on pasted text is used here and by the own-text panel', async () => {
  const { page, problems } = await suite.open('?form=softmax#tokenizer');
  await ready(page);
  // the starting text: its chips are the library's ids, and their pieces spell the text
  const text = await page.inputValue('#tktext');
  assert.ok(text.length > 40, 'the text box starts filled');
  const first = await chips(page);
  assert.deepEqual(first.map((c) => c.id), [...startTok.encode(text)]);
  assert.equal(unmark(first.map((c) => c.piece).join('')), text);
  assert.ok(first.some((c) => c.piece.startsWith('␣') && c.piece.length > 2), 'a word with its leading space is one piece');
  assert.ok(first.length < text.length * 0.6, `merges shorten the text: ${first.length} tokens for ${text.length} characters`);
  assert.match(await page.textContent('#tkabout'), shipped ? /sub-word model/ : /trained on this page's sample text .* at vocabulary 512/);
  const n = startTok.merges.length;
  assert.equal(Number(await page.getAttribute('#tkmerges', 'max')), n);
  assert.match(await page.textContent('#tkcounts'),
    new RegExp(`^${text.length} characters · ${text.length} bytes · ${first.length} tokens · ${(text.length / first.length).toFixed(2)} characters per token$`));
  assert.match(await page.textContent('#tkmerges-label'), new RegExp(`^Merges applied: ${n} of ${n} \\(a vocabulary of ${startTok.vocabSize} pieces\\)$`));

  // no merge: one chip per byte, a split character's bytes as <0xXX>
  const cafe = 'Café crème, naïve ☕ — 42!';
  await page.fill('#tktext', cafe);
  await slide(page, 0);
  const bytes = new TextEncoder().encode(cafe);
  const zero = await chips(page);
  assert.equal(zero.length, bytes.length, 'one chip per byte');
  assert.deepEqual(zero.map((c) => c.id), [...bytes].map((b) => b + 3));
  assert.deepEqual(zero.filter((c) => /^<0x[0-9A-F]{2}>$/.test(c.piece)).map((c) => c.piece).slice(0, 2), ['<0xC3>', '<0xA9>'], 'é is two bytes');
  assert.match(await page.textContent('#tkmerge'), /^No merge yet/);
  assert.match(await page.textContent('#tkmerges-label'), new RegExp(`^Merges applied: 0 of ${n} \\(a vocabulary of 259 pieces\\)`));
  // part way: the merge just added, its two halves and the new piece
  await slide(page, 10);
  const [a, b, z] = startTok.merges[9];
  const show = (id) => unmark(new TextDecoder().decode(startTok.pieceBytes(id)));
  const merge = await page.textContent('#tkmerge');
  assert.match(merge, new RegExp(`^merge 10 \\(piece ${z}\\): '.+' \\+ '.+' → '.+'$`));
  const [, l, r, j] = /'(.+)' \+ '(.+)' → '(.+)'/.exec(merge);
  assert.deepEqual([unmark(l), unmark(r), unmark(j)], [show(a), show(b), show(z)]);
  assert.deepEqual((await chips(page)).map((c) => c.id), [...startTok.encode(cafe, { merges: 10 })]);
  await page.fill('#tktext', text);
  await slide(page, n);

  // train on pasted text in the worker: the chips use the new tokenizer
  const pasted = readFileSync(new URL('../../data/chars.txt', import.meta.url), 'utf8').slice(0, 8000);
  const mine = lib.trainTokenizer(pasted, { vocabSize: 400 });
  await page.click('#tktrain-box summary');
  await page.fill('#tktrain-text', pasted);
  await page.fill('#tkvocab', '400');
  await page.click('#tktrain');
  await page.waitForFunction(() => /^Trained in|failed/.test(document.querySelector('#tkstatus').textContent), null, { timeout: LONG });
  assert.match(await page.textContent('#tkstatus'), /^Trained in [\d.]+ m?s: 400 pieces\. The chips above use it now\.$/);
  assert.match(await page.textContent('#tkabout'), /trained on your text \(8000 characters\) at vocabulary 400/);
  assert.deepEqual((await chips(page)).map((c) => c.id), [...mine.encode(text)]);
  assert.equal(Number(await page.getAttribute('#tkmerges', 'max')), 141);
  await page.setViewportSize({ width: 1280, height: 800 });
  mkdirSync(SCREENSHOTS, { recursive: true });
  await (await page.$('#tokenizer')).screenshot({ path: `${SCREENSHOTS}tokenizer-desktop.png` });

  // bad input: the library's Error (or the panel's cap), in the panel
  const bad = async (textValue, vocab, pattern) => {
    await page.fill('#tktrain-text', textValue);
    await page.fill('#tkvocab', vocab);
    await page.click('#tktrain');
    await page.waitForSelector('#tokenizer[data-state="error"]', { timeout: LONG });
    assert.match(await page.textContent('#tkstatus'), pattern);
    assert.equal(await page.isDisabled('#tktrain'), false);
  };
  await bad('', '400', /trainTokenizer: text is empty/);
  await bad(pasted, '100', /Vocabulary size must be a whole number from 259 to 8192 .*got 100/);
  await bad(pasted, '9000', /Vocabulary size must be a whole number from 259 to 8192 .*got 9000/);
  await bad(pasted, '', /Vocabulary size must be a whole number from 259 to 8192 .*got nothing/);
  assert.deepEqual((await chips(page)).map((c) => c.id), [...mine.encode(text)], 'a refused run leaves the tokenizer as it was');

  // the own-text panel trains on this tokenizer's ids
  assert.equal(await page.isDisabled('#ounit-tok'), false);
  assert.match(await page.textContent('#ounit-note'), /trained on your text .*; the model's vocabulary is then its 400 pieces\./);
  await page.check('#ounit-tok');
  const own = pasted.slice(0, 1500);
  await page.fill('#otext', own);
  await page.selectOption('#osteps', '100');
  await page.click('#otrain');
  assert.match(await page.textContent('#ostatus'), /on the ids of the tokenizer panel's tokenizer \(vocabulary of 400 pieces\)/);
  await page.waitForFunction(() => /^(Done|Training failed)/.test(document.getElementById('ostatus').textContent), null, { timeout: LONG });
  assert.match(await page.textContent('#ostatus'), /^Done: 100 steps/);
  const loss = await page.textContent('#oloss');
  const [, perToken, perChar] = /loss ([\d.]+) bits per token \(([\d.]+) per character\)/.exec(loss) ?? [];
  assert.ok(perToken, `the loss is per token: ${loss}`);
  const tpc = mine.encode(own).length / Array.from(own).length;
  assert.ok(Math.abs(Number(perChar) - Number(perToken) * tpc) < 0.02, `per character = per token x tokens per character (${tpc.toFixed(3)}): ${loss}`);
  assert.ok(Number(perToken) < Math.log2(400), `it learned something: ${perToken} bits per token < log2(400)`);
  const sample = await page.textContent('#osample');
  assert.ok(sample.length > 48, `a sample decoded by the tokenizer: ${JSON.stringify(sample)}`);
  // a text too short in tokens says so
  await page.fill('#otext', 'the lamplighter walked the road, and the road was long and old.');
  await page.click('#otrain');
  await page.waitForFunction(() => /^Training failed/.test(document.getElementById('ostatus').textContent), null, { timeout: LONG });
  assert.match(await page.textContent('#ostatus'), /the text is \d+ tokens with the tokenizer panel's tokenizer; paste at least 68/);
  // and characters still work as before
  await page.check('input[name="ounit"][value="chars"]');
  await page.fill('#otext', own); // 63 characters is too short for characters too: 34 are held out
  await page.click('#otrain');
  assert.match(await page.textContent('#ostatus'), /character model \(vocabulary of \d+ characters/);
  await page.click('#ostop');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('a catalogue entry naming a tokenizer file makes it the starting tokenizer; on a phone the chips wrap', async () => {
  const tok = lib.trainTokenizer(readFileSync(new URL('../../data/chars.txt', import.meta.url), 'utf8'), { vocabSize: 700 });
  const phone = await launch({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
  try {
    const fortunes = readJSON('fortunes.json');
    const entry = { file: 'test-bpe.safetensors', tokenizer: 'test-bpe.tokenizer.json', config: { attention: 'softmax', maxLen: 64 } };
    const catalogue = { ...fortunes, models: [...fortunes.models.filter((e) => !e.tokenizer), entry] };
    await phone.context.route('**/models/fortunes.json', (r) => r.fulfill({ contentType: 'application/json', body: JSON.stringify(catalogue) }));
    await phone.context.route('**/models/test-bpe.tokenizer.json',
      (r) => r.fulfill({ contentType: 'application/json', body: JSON.stringify(tok.toJSON()) }));
    const { page, problems } = await suite.open('?form=softmax#tokenizer', { context: phone.context });
    await ready(page);
    assert.match(await page.textContent('#tkabout'), /the tokenizer of the page's sub-word model test-bpe\.safetensors \(models\/test-bpe\.tokenizer\.json, 700 pieces\)/);
    const text = 'The lamplighter walked the north road with a ladder on his shoulder, lighting the lamps one by one.';
    await page.fill('#tktext', text);
    assert.deepEqual((await chips(page)).map((c) => c.id), [...tok.encode(text)]);
    assert.equal(Number(await page.getAttribute('#tkmerges', 'max')), 700 - 259);
    // on a phone: nothing sticks out sideways, and the chips take more than one line
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    const rows = await page.$$eval('#tkchips .tk-chip', (cs) => new Set(cs.map((c) => Math.round(c.getBoundingClientRect().top))).size);
    assert.ok(rows > 2, `the chips wrap onto ${rows} lines`);
    const box = await page.$eval('#tokenizer', (s) => { const r = s.getBoundingClientRect(); return { left: r.left, right: r.right }; });
    const out = await page.$$eval('#tokenizer *', (els, b) => els.filter((e) => e.getBoundingClientRect().right > b.right + 1 && e.offsetParent)
      .map((e) => e.id || e.className || e.tagName), box);
    assert.deepEqual(out, [], 'no element sticks out of the panel');
    await page.click('#tktrain-box summary');
    await (await page.$('#tokenizer')).screenshot({ path: `${SCREENSHOTS}tokenizer-phone.png` });
    assert.deepEqual(problems(), []);
    await page.close();
  } finally {
    await phone.close();
  }
});
