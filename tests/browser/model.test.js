// model.test.js: the playground's model panel (web/views/model.js, web/train-worker.js) in headless
// Chromium: a tiny Transformer with the chosen attention learns a task in a worker while the page
// stays usable. The panel exists exactly when the package has lib.createModel.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServer } from '../../scripts/serve.js';
import { launch, openPage, screenshot } from './helpers.js';

let server;
let browser;
let hasModel;

before(async () => {
  server = await startServer({ port: 0 });
  browser = await launch();
  const { page } = await openPage(browser.context);
  await page.goto(server.url);
  await page.waitForSelector('body[data-state="ready"]');
  hasModel = await page.evaluate(async () => {
    const lib = await (await import('/wasm/index.js')).loadAttention();
    return typeof lib.createModel === 'function';
  });
  assert.equal(await page.isVisible('#model'), hasModel, 'the model panel is shown exactly when lib.createModel exists');
  await page.close();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(query) {
  const { page, problems } = await openPage(browser.context);
  await page.goto(`${server.url}${query}`);
  await page.waitForSelector('body[data-state="ready"]');
  await page.waitForSelector('#model[data-state="ready"]', { timeout: 120000 });
  return { page, problems };
}

function heatmapColours(page) {
  return page.$$eval('#mheatmaps canvas', (cs) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let h = 0;
    for (let i = 0; i < d.length; i += 4) h = (Math.imul(h, 31) + d[i] * 65536 + d[i + 1] * 256 + d[i + 2]) | 0;
    return h;
  }));
}

const data = (page, name) => page.getAttribute('#model', `data-${name}`);

test('trains reverse in a worker: held-out loss falls, the answer comes out right, the heatmaps change', async (t) => {
  if (!hasModel) return t.skip('the package has no lib.createModel yet');
  const { page, problems } = await open('?form=softmax&task=reverse&mlen=6&msize=tiny&mstart=fresh&msteps=500&mseed=1');
  assert.match(await page.textContent('#mstatus'), /New model: [\d,]+ parameters .*attention softmax/);
  const maps = await page.$$eval('#mheatmaps figcaption', (fs) => fs.map((f) => f.textContent));
  assert.deepEqual(maps, ['Layer 1, head 1', 'Layer 1, head 2', 'Layer 2, head 1', 'Layer 2, head 2']);
  const before = await heatmapColours(page);
  const loss0 = Number(await data(page, 'eval-loss'));
  t.diagnostic(`held-out loss before training: ${loss0.toFixed(3)}`);
  assert.ok(loss0 > 1, 'an untrained model is not good at reverse');

  await page.click('#mtrain');
  // While it trains the page answers: an edit in Settings redraws the attention panel.
  const renders = Number(await page.getAttribute('body', 'data-renders'));
  await page.fill('#seed', '3');
  await page.waitForFunction((r) => Number(document.body.dataset.renders) > r, renders);
  await page.waitForSelector('#model[data-training="0"]', { timeout: 900000 });
  const status = await page.textContent('#mstatus');
  t.diagnostic(status);
  assert.match(status, /Done at step 500: held-out accuracy \d+\.\d%/);
  const loss1 = Number(await data(page, 'eval-loss'));
  const acc1 = Number(await data(page, 'eval-accuracy'));
  t.diagnostic(`held-out after 500 steps: loss ${loss1.toFixed(4)}, accuracy ${acc1.toFixed(4)}`);
  assert.ok(loss1 < loss0 / 4, `held-out loss ${loss1} did not fall well below ${loss0}`);
  assert.ok(acc1 > 0.9, `held-out accuracy ${acc1} after 500 steps of reverse`);
  const output = await page.textContent('#moutput');
  t.diagnostic(output);
  const [, target] = output.match(/target: (.*)\n/);
  const [, model] = output.match(/model: {2}(.*?) {3}/);
  assert.equal(model, target);
  assert.match(output, /✓ correct/);
  const after = await heatmapColours(page);
  assert.equal(after.length, 4);
  after.forEach((h, i) => assert.notEqual(h, before[i], `heatmap ${i} did not change with training`));
  // The curves: both charts drawn with points.
  const progress = await page.$eval('#mprogress', (p) => [p.value, p.max]);
  assert.deepEqual(progress, [500, 500]);
  await screenshot(page, 'model-trained');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('the RNN baselines in the model panel: a GRU with additive attention trains and draws its alignment; one context vector draws none', async (t) => {
  if (!hasModel) return t.skip('the package has no lib.createModel yet');
  const { page, problems } = await open('?form=softmax&task=reverse&mlen=5&msize=tiny&mstart=fresh&msteps=600&mseed=1&march=gru-attention');
  assert.match(await page.textContent('#mstatus'), /New model: [\d,]+ parameters/);
  assert.deepEqual(await page.$$eval('#mheatmaps figcaption', (fs) => fs.map((f) => f.textContent)),
    ['Additive attention: decoder step i reads encoder state j']);
  await page.click('#mtrain');
  await page.waitForSelector('#model[data-training="0"]', { timeout: 900000 });
  const acc = Number(await data(page, 'eval-accuracy'));
  const output = await page.textContent('#moutput');
  t.diagnostic(`gru-attention, reverse of 5, 600 steps: held-out accuracy ${acc}; ${output}`);
  assert.ok(acc > 0.8, `held-out accuracy ${acc}`);
  assert.match(output, /input: {2}\d( \d+)+\ntarget: /, 'the input row shows the source, not the separator');
  // one context vector: the model trains, and the panel says why it has no heatmap
  await page.selectOption('#march', 'gru');
  await page.waitForFunction(() => /No heatmap: .*one fixed context vector/.test(document.querySelector('#mheatmaps').textContent),
    null, { timeout: 120000 }).catch(async (e) => {
    t.diagnostic(`heatmaps: ${await page.textContent('#mheatmaps')} | status: ${await page.textContent('#mstatus')} | ${page.url()}`);
    throw e;
  });
  assert.equal(await page.$$eval('#mheatmaps canvas', (cs) => cs.length), 0);
  assert.match(page.url(), /march=gru(&|$)/);
  // chars has no source: the panel says so instead of failing
  await page.selectOption('#task', 'chars');
  await page.waitForFunction(() => /chars task is one running text with no source/.test(document.querySelector('#mstatus').textContent));
  assert.equal(await page.getAttribute('#model', 'data-state'), 'unsupported');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('Stop and resume; typed input; the URL keeps the model settings', async (t) => {
  if (!hasModel) return t.skip('the package has no lib.createModel yet');
  const { page, problems } = await open('?form=softmax&task=sort&mlen=5&msize=tiny&mstart=fresh&msteps=5000');
  await page.click('#mtrain');
  await page.waitForFunction(() => Number(document.querySelector('#model').dataset.step) >= 100);
  await page.click('#mstop');
  await page.waitForSelector('#model[data-training="0"]');
  const stoppedAt = Number(await data(page, 'step'));
  assert.ok(stoppedAt >= 100 && stoppedAt < 5000, `stopped at ${stoppedAt}`);
  assert.match(await page.textContent('#mstatus'), new RegExp(`Stopped at step ${stoppedAt}`));
  // Resume: the same model goes on from there.
  await page.selectOption('#msteps', '100');
  await page.click('#mtrain');
  await page.waitForSelector('#model[data-training="0"]');
  assert.match(await page.textContent('#mstatus'), new RegExp(`Done at step ${stoppedAt + 100}`));

  // Typed input: the page shows it, its sorted target, and the model's answer.
  const snaps = Number(await data(page, 'snapshots'));
  await page.fill('#mtext', '9 2 7 2');
  await page.waitForFunction((s) => Number(document.querySelector('#model').dataset.snapshots) > s, snaps);
  const out = await page.textContent('#moutput');
  assert.match(out, /input: {2}9 2 7 2 ⟂\ntarget: 2 2 7 9\nmodel: {2}[\d ]+/);
  await page.fill('#mtext', '9 x');
  await page.waitForFunction(() => /Your input: "x" is not a whole number from 1 to 10/.test(document.querySelector('#moutput').textContent));

  // The URL holds the model settings; a reload restores them.
  await page.selectOption('#task', 'recall');
  await page.fill('#mlen', '4');
  await page.selectOption('#msize', 'small');
  await page.fill('#mseed', '7');
  await page.waitForFunction(() => /mseed=7/.test(location.search));
  const url = page.url();
  assert.match(url, /task=recall&mlen=4&msize=small&mstart=fresh&march=transformer&mpos=sinusoidal&mseed=7&mtext=&msteps=100/);
  await page.reload();
  await page.waitForSelector('#model[data-state="ready"]');
  assert.equal(await page.inputValue('#task'), 'recall');
  assert.equal(await page.inputValue('#mlen'), '4');
  assert.equal(await page.inputValue('#msize'), 'small');
  assert.equal(await page.inputValue('#mseed'), '7');
  assert.equal(await page.isDisabled('#mtext'), true, 'recall takes no typed input');
  assert.match(await page.textContent('#mstatus'), /heads/);
  assert.equal((await page.$$('#mheatmaps canvas')).length, 8, 'small: 2 layers x 4 heads');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('every attention form the model accepts builds and runs a forward pass; efficient says why not, Linformer serves an encoder-decoder\'s encoder', async (t) => {
  if (!hasModel) return t.skip('the package has no lib.createModel yet');
  // the forms without a causal form, from the registry: the page's decoder models cannot use them
  const { loadAttention } = await import('../../wasm/index.js');
  const noCausal = (await loadAttention()).forms.filter((f) => !f.causal).map((f) => f.name);
  assert.ok(noCausal.includes('linear:efficient') && noCausal.includes('linformer'));
  // of those, a form with a decoderForm (Linformer) builds an encoder-decoder; the rest are refused
  const refused = (await loadAttention()).forms.filter((f) => !f.causal && !f.decoderForm).map((f) => f.name);
  assert.ok(refused.includes('linear:efficient') && !refused.includes('linformer'));
  const { page, problems } = await open('?form=softmax&task=copy&mlen=4&mstart=fresh');
  const forms = await page.$$eval('#form option', (os) => os.map((o) => o.value));
  const ran = ['softmax'];
  assert.match(await page.textContent('#mstatus'), /attention softmax\)/);
  for (const id of forms) {
    const snaps = Number(await data(page, 'snapshots'));
    if ((await page.inputValue('#form')) === id) continue; // softmax: built and checked by open()
    await page.selectOption('#form', id);
    await page.waitForFunction((s) => {
      const m = document.querySelector('#model');
      return Number(m.dataset.snapshots) > s || m.dataset.state === 'error' || m.dataset.state === 'unsupported';
    }, snaps);
    const status = await page.textContent('#mstatus');
    if (refused.includes(id)) {
      assert.match(status, /has no causal form/);
      assert.equal(await page.getAttribute('#model', 'data-state'), 'unsupported');
      assert.equal(await page.isDisabled('#mtrain'), true);
      // Back to a working form, the panel recovers.
      continue;
    }
    if (noCausal.includes(id)) assert.match(status, /encoder-decoder Transformer, .*encoder attention linformer\)/);
    assert.match(status, new RegExp(`attention ${id.replace(/[+]/g, '\\+')}\\)`));
    assert.equal(await page.getAttribute('#model', 'data-state'), 'ready');
    ran.push(id);
  }
  t.diagnostic(`model built with: ${ran.join(', ')}`);
  assert.deepEqual(problems(), []);
  await page.close();
});

test('the experiment: Random Synthesizer reverses as well as softmax but cannot recall; local attention cannot copy from far', async (t) => {
  if (!hasModel) return t.skip('the package has no lib.createModel yet');
  const { page, problems } = await open('?ebudget=1000');
  await page.click('#erun');
  await page.waitForSelector('#experiment[data-done="1"]', { timeout: 900000 });
  const cells = await page.$$eval('#etable td', (tds) => tds.map((td) => ({ ...td.dataset, text: td.textContent })));
  const acc = (form, task) => Number(cells.find((c) => c.form === form && c.task === task).accuracy);
  t.diagnostic(cells.map((c) => `${c.form} ${c.task}: ${c.text}`).join('; '));
  assert.ok(cells.every((c) => /^\d+\.\d%$/.test(c.text)), 'every cell has a result');
  assert.ok(acc('softmax', 'reverse') > 0.95 && acc('synth:random', 'reverse') > 0.95, 'both learn reverse');
  assert.ok(acc('softmax', 'recall') > 0.9, 'softmax learns recall');
  assert.ok(acc('synth:random', 'recall') < 0.7, 'Random Synthesizer stays near chance (50%) on recall');
  assert.ok(acc('softmax', 'copy') > 0.95 && acc('local', 'reverse') > 0.95, 'softmax copies from far; local reverses');
  assert.ok(acc('local', 'copy') < 0.3, 'local attention copies 17 back at chance (10%)');
  assert.ok(acc('gru-attention', 'copy') > acc('gru', 'copy') + 0.1, 'attention lifts the GRU past its one context vector');
  await screenshot(page, 'experiment');
  assert.deepEqual(problems(), []);
  await page.close();
});

test('a pretrained checkpoint loads at once when the catalogue has one for the task, form and size', async (t) => {
  if (!hasModel) return t.skip('the package has no lib.createModel yet');
  const { copyFileSync, mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const { loadAttention } = await import('../../wasm/index.js');
  const { modelConfig, taskOptions } = await import('../../lab/tasks.js');
  // A catalogue of one checkpoint, trained here as scripts/pretrain.mjs would (reverse, length 5).
  const lib = await loadAttention();
  const config = modelConfig({ task: 'reverse', msize: 'tiny', form: 'softmax' }, lib.charsTokenizer.vocab);
  const spec = taskOptions({ task: 'reverse', mlen: 5 });
  const m = lib.createModel(config);
  for (let i = 0; i < 400; i++) m.trainStep({ ...spec, batchSize: 16, lr: 3e-3 });
  const { accuracy } = m.evaluate({ ...spec, batches: 4 });
  const dir = mkdtempSync(join(tmpdir(), 'aw-models-'));
  writeFileSync(join(dir, 'reverse-softmax.safetensors'), m.save());
  m.dispose();
  writeFileSync(join(dir, 'index.json'), JSON.stringify({ models: [{
    file: 'reverse-softmax.safetensors', task: 'reverse', attention: 'softmax', length: 5, symbols: 10, steps: 400,
    config: { ...config, seed: undefined }, accuracy,
  }] }));
  // the first panel's catalogue of models that read real text: none in this folder
  writeFileSync(join(dir, 'fortunes.json'), JSON.stringify({ models: [] }));
  // and the sample text the tokenizer and sinks panels read (no sub-word model here to take a tokenizer from)
  copyFileSync(new URL('../../web/models/stream-text.txt', import.meta.url), join(dir, 'stream-text.txt'));
  t.diagnostic(`checkpoint: reverse length 5, 400 steps, held-out accuracy ${accuracy.toFixed(3)}`);
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const other = await startServer({ port: 0, mounts: { '/': join(root, 'web'), '/wasm/': join(root, 'wasm'), '/lab/': join(root, 'lab'), '/models/': dir } });
  try {
    const { page, problems } = await openPage(browser.context);
    await page.goto(`${other.url}?form=softmax&task=reverse&mlen=9&msize=tiny&mstart=pretrained&mseed=4`);
    await page.waitForSelector('#model[data-state="ready"]', { timeout: 120000 });
    const status = await page.textContent('#mstatus');
    t.diagnostic(status);
    assert.match(status, /Pretrained model loaded from models\/reverse-softmax.safetensors: .* trained 400 steps at length 5/);
    assert.equal(await page.inputValue('#mlen'), '5', 'the checkpoint\'s own length');
    assert.equal(await page.isDisabled('#mlen'), true);
    assert.match(await page.textContent('#moutput'), /input: {2}(\d+ ){5}⟂\n.*✓ correct/s, 'trained already, no Train pressed');
    // Another form has no checkpoint: a fresh model, and the page says so.
    await page.selectOption('#form', 'linear:elu+1');
    await page.waitForFunction(() => /No pretrained checkpoint/.test(document.querySelector('#mstatus').textContent));
    assert.equal(await page.isDisabled('#mlen'), false);
    assert.deepEqual(problems(), []);
    await page.close();
  } finally {
    await other.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the shipped catalogue (web/models/index.json, when present) fits the playground\'s model shapes', async (t) => {
  const { existsSync, readFileSync, statSync } = await import('node:fs');
  const { modelConfig, TASKS } = await import('../../lab/tasks.js');
  const catalog = new URL('../../web/models/index.json', import.meta.url);
  if (!existsSync(catalog)) return t.skip('no web/models/index.json yet');
  const { models } = JSON.parse(readFileSync(catalog, 'utf8'));
  for (const e of models) {
    assert.ok(TASKS[e.task], `${e.file}: unknown task ${e.task}`);
    assert.ok(e.length <= TASKS[e.task].maxLength, `${e.file}: length ${e.length} > the page's maximum`);
    const want = modelConfig({ task: e.task, msize: 'tiny', form: e.attention }, e.config.vocab);
    for (const k of ['vocab', 'dModel', 'heads', 'layers', 'dFF', 'maxLen', 'attention']) {
      assert.equal(e.config[k], want[k], `${e.file}: config.${k}`);
    }
    assert.ok(statSync(new URL(`../../web/models/${e.file}`, import.meta.url)).size > 0, `${e.file} is missing`);
  }
  t.diagnostic(`${models.length} checkpoints fit`);
});
