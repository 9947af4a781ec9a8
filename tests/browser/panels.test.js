// panels.test.js: the page as a table of panels (issue 31, items 1-3). Every panel is made once, so
// no settings change adds a listener to any element; no panel vanishes for a form: each is present
// and visible, applying or saying in one line why not with a button that switches to a form it
// applies to; the table of contents lists web/panels.js's panels in its order, and a hash (clicked,
// or in the address on load) scrolls to the panel. Fails on any console error, page error or failed
// request. Screenshots at 1280 x 800 and 390 x 844 go to tests/browser/screenshots/panels-*.png.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { SCREENSHOTS, playgroundSuite } from './helpers.js';

const LONG = 300000; // ms: a loaded machine may be slow, never a failure
const DESKTOP = { viewport: { width: 1280, height: 800 } };
const PHONE = { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 };

const suite = playgroundSuite({ before, after });
// A request a navigation of the test's own cut short is no problem of the page's.
const real = (list) => list.filter((x) => !/^request failed: .* \(net::ERR_ABORTED\)$/.test(x));
const { open } = suite;

// Counts addEventListener calls per target (elements, document, window), before any page script runs.
function countListeners() {
  const counts = new Map();
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (...args) {
    if (this instanceof Node || this === window) counts.set(this, (counts.get(this) ?? 0) + 1);
    return add.apply(this, args);
  };
  window.__listeners = counts;
}

// The panels' ids and titles, in web/panels.js's order, as the page imports them (a page without
// web/panels.js: its sections, so the checks below still say what is missing).
const table = (page) => page.evaluate(async () => {
  try {
    return (await import('/panels.js')).PANELS.map((p) => ({ id: p.id, title: p.title }));
  } catch {
    return [...document.querySelectorAll('main section.panel')].map((s) => ({ id: s.id, title: s.querySelector('h2').textContent }));
  }
});

test('(a) settings changes add no listener to any element: every panel is made once', async () => {
  await suite.browser().context.addInitScript(countListeners);
  const { page: p, problems } = await open('');
  try {
    await p.waitForTimeout(1500); // let lazy parts settle (fetches, first draws)
    await p.evaluate(() => {
      window.__before = new Map(window.__listeners);
    });
    const renders = async () => Number(await p.getAttribute('body', 'data-renders'));
    for (const [sel, value] of [['#d', '16'], ['#d', '64'], ['#d', '32'], ['#form', 'linear:elu+1']]) {
      const r = await renders();
      await p.selectOption(sel, value);
      await p.waitForFunction((n) => Number(document.body.dataset.renders) > n, r);
      await p.waitForTimeout(300);
    }
    await p.waitForTimeout(1000);
    const gained = await p.evaluate(() => {
      const name = (t) => (t === window ? 'window' : t === document ? 'document'
        : `${t.nodeName.toLowerCase()}${t.id ? `#${t.id}` : ''}${t.className && typeof t.className === 'string' ? `.${t.className.split(' ')[0]}` : ''}`);
      const out = [];
      for (const [t, n] of window.__before) {
        const now = window.__listeners.get(t) ?? 0;
        if (now > n) out.push(`${name(t)}: ${n} -> ${now}`);
      }
      return { out, watched: window.__before.size };
    });
    assert.ok(gained.watched > 50, `only ${gained.watched} targets had listeners after load`);
    assert.deepEqual(gained.out, [], `listeners gained on elements that existed after load: ${gained.out.join('; ')}`);
    assert.deepEqual(problems(), []);
  } finally {
    await p.close();
  }
});

test('(b) for every form, every panel is present and visible, and one that does not apply says why and switches', async () => {
  const lib = await loadAttention({ simd: 'auto' });
  const names = lib.forms.map((f) => f.name);
  assert.ok(names.length > 10);
  const { page, problems } = await open('');
  const panels = await table(page);
  let switched = 0;
  try {
    for (const name of names) {
      await page.goto(`${suite.server().url}?form=${encodeURIComponent(name)}`);
      await page.waitForSelector('body[data-state="ready"]', { timeout: LONG });
      for (const { id, title } of panels) { // first: every panel is there
        const section = page.locator(`main section#${id}`);
        assert.equal(await section.count(), 1, `${name}: no section #${id} (${title})`);
        assert.ok(await section.isVisible(), `${name}: #${id} is not visible`);
        assert.ok(await section.locator('h2').isVisible(), `${name}: #${id}'s title is not visible`);
      }
      for (const { id } of panels) { // then: it applies, or says why and switches
        const section = page.locator(`main section#${id}`);
        const applies = await section.getAttribute('data-applies');
        assert.ok(applies === 'yes' || applies === 'no', `${name}: #${id} does not say whether it applies (${applies})`);
        if (applies === 'yes') continue;
        const note = section.locator(':scope > p.applies');
        assert.ok(await note.isVisible(), `${name}: #${id} does not apply and says nothing`);
        const text = await note.locator('span').textContent();
        assert.match(text, /^Not for this form: \S.*[.]$/, `${name}: #${id}'s reason: ${text}`);
        assert.ok(!text.includes('\n'), `${name}: #${id}'s reason is more than one line`);
        const button = note.locator('button');
        assert.ok(await button.isVisible(), `${name}: #${id} has no switch button`);
        assert.match(await button.textContent(), /^Switch to /);
        {
          const r = Number(await page.getAttribute('body', 'data-renders'));
          await button.click();
          await page.waitForFunction((n) => Number(document.body.dataset.renders) > n, r);
          assert.equal(await section.getAttribute('data-applies'), 'yes', `${name}: #${id} does not apply after its switch button`);
          assert.ok(!(await note.isVisible()), `${name}: #${id}'s reason stays after its switch`);
          assert.notEqual(new URL(page.url()).searchParams.get('form'), name);
          switched++;
          break; // the form has changed: the next form
        }
      }
    }
    assert.ok(switched > 0, 'no form left a panel out, so no switch button was tried');
    assert.deepEqual(real(problems()), []);
  } finally {
    await page.close();
  }
});

test('(c) the table of contents lists the panels in the table\'s order and a hash scrolls to its section', async () => {
  const { page, problems } = await open('');
  try {
    await page.setViewportSize(DESKTOP.viewport);
    const panels = await table(page);
    const links = await page.$$eval('#toc a', (as) => as.map((a) => ({ href: a.getAttribute('href'), text: a.textContent })));
    assert.deepEqual(links, panels.map((p) => ({ href: `#${p.id}`, text: p.title })));
    assert.deepEqual(await page.$$eval('main section.panel', (s) => s.map((x) => x.id)), panels.map((p) => p.id), 'the sections are not in the table\'s order');
    assert.ok(await page.locator('#toc ol').isVisible(), 'the contents are not open on a wide screen');
    assert.equal(await page.$eval('#toc', (n) => getComputedStyle(n).position), 'sticky');
    const top = (id) => page.$eval(`#${id}`, (s) => s.getBoundingClientRect().top);
    for (const id of ['timings', 'induction']) {
      await page.click(`#toc a[href="#${id}"]`);
      await page.waitForFunction((x) => Math.abs(document.getElementById(x).getBoundingClientRect().top) < 80, id);
      assert.equal(new URL(page.url()).hash, `#${id}`);
      assert.ok(await page.locator('#toc ol').isVisible(), 'the contents are not in view after a jump');
    }
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${SCREENSHOTS}panels-desktop-top.png` });
    // On load: the address's hash, after the page has grown.
    await page.goto(`${suite.server().url}?form=softmax#llama2c`);
    await page.waitForSelector('body[data-state="ready"]', { timeout: LONG });
    await page.waitForFunction(() => Math.abs(document.getElementById('llama2c').getBoundingClientRect().top) < 80);
    assert.ok(Math.abs(await top('llama2c')) < 80);
    // A panel that does not apply, at 1280 x 800.
    await page.goto(`${suite.server().url}?form=linformer#owntext`);
    await page.waitForSelector('body[data-state="ready"]', { timeout: LONG });
    await page.waitForFunction(() => Math.abs(document.getElementById('owntext').getBoundingClientRect().top) < 80);
    await page.screenshot({ path: `${SCREENSHOTS}panels-desktop-not-applying.png` });
    assert.deepEqual(real(problems()), []);
  } finally {
    await page.close();
  }
  // A phone: a menu, closed until opened, that closes again when a link is followed.
  const { page: phone, problems: phoneProblems } = await open('', { context: await phoneContext() });
  try {
    assert.ok(!(await phone.locator('#toc ol').isVisible()), 'the contents are open on a phone');
    await phone.screenshot({ path: `${SCREENSHOTS}panels-phone-top.png` });
    await phone.click('#toc summary');
    assert.ok(await phone.locator('#toc ol').isVisible());
    await phone.screenshot({ path: `${SCREENSHOTS}panels-phone-menu.png` });
    await phone.click('#toc a[href="#compare"]');
    await phone.waitForFunction(() => Math.abs(document.getElementById('compare').getBoundingClientRect().top) < 80);
    assert.ok(!(await phone.locator('#toc ol').isVisible()), 'the menu stays open after a jump');
    await phone.goto(`${suite.server().url}?form=linformer#learned`);
    await phone.waitForSelector('body[data-state="ready"]', { timeout: LONG });
    await phone.waitForFunction(() => Math.abs(document.getElementById('learned').getBoundingClientRect().top) < 80);
    await phone.screenshot({ path: `${SCREENSHOTS}panels-phone-not-applying.png` });
    assert.deepEqual(real(phoneProblems()), []);
  } finally {
    await phone.close();
  }
});

let phoneCtx = null;
async function phoneContext() {
  const { launch } = await import('./helpers.js');
  phoneCtx = await launch(PHONE);
  return phoneCtx.context;
}
after(async () => { await phoneCtx?.close(); });
