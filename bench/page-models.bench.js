// page-models.bench.js: the playground on real model sizes (issue 54), in headless Chromium on this
// machine. scripts/make-page-models.mjs writes two random-weight checkpoints in the Hub's layouts
// (GPT-2 small in F32 with GPT-2's tokenizer, SmolLM2-135M in BF16) to .cache/page-models; each is
// picked in "Open a model file" as a user picks files, then the page is driven as a user would:
// the picture, a generation, "What does this head do?" on the opened model (the estimated grids,
// then the top cells patched exactly) and, for GPT-2, the feature browser on its layer-6 residual
// stream (4 x 768 features, k 32, 300 steps). Printed: the wall time of each step, measured in the
// page (performance.now() marks the views set), the longest main-thread task in each (Chromium's
// longtask observer), and the model host's wasm memory against the fp32 weights. Times are
// printed, never asserted (tests/browser asserts states). GPT-2 and SmolLM2 at 1280 x 800, and
// SmolLM2 at 390 x 844.
//   node bench/run.js page-models      (BENCH_PAGE_MODELS=gpt2 or smollm2 picks one; BENCH_PAGE_SAE=0 skips the SAE)
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LONG = 100; // ms: a main-thread task longer than this is a freeze a user feels
const CAP = 900_000; // ms any one step may take before the bench gives up on it

const RUNS = [
  { model: 'gpt2', label: 'GPT-2 small (F32)', viewport: { width: 1280, height: 800 }, sae: true },
  { model: 'smollm2', label: 'SmolLM2-135M (BF16)', viewport: { width: 1280, height: 800 }, sae: false },
  { model: 'smollm2', label: 'SmolLM2-135M (BF16)', viewport: { width: 390, height: 844 }, sae: false },
];

const fmt = (ms) => (ms === null || ms === undefined ? '–' : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(0)} ms`);
const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;

// One run: the page opened fresh, the model's files picked, each step timed in the page.
async function drive(browser, url, dir, run) {
  const page = await browser.context.newPage();
  await page.setViewportSize(run.viewport);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${url}?form=softmax`);
    await page.waitForSelector('body[data-state="ready"]', { timeout: CAP });
    await page.waitForSelector('#picture[data-state="ready"]', { timeout: CAP });
    await page.evaluate(() => {
      window.longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.longTasks.push({ start: e.startTime, duration: e.duration });
      }).observe({ type: 'longtask', buffered: false });
    });
    const now = () => page.evaluate(() => performance.now());
    const longest = async (from, to) => {
      const tasks = await page.evaluate(([a, b]) => window.longTasks.filter((t) => t.start + t.duration >= a && t.start <= b), [from, to]);
      return tasks.reduce((m, t) => Math.max(m, t.duration), 0);
    };
    const row = { steps: [] };
    const heap = async () => (await page.evaluate(async () => (await import('./host.js')).hostCall('opener', { type: 'memory' }))).heap;
    const step = async (name, ms, from, to) => row.steps.push({ name, ms, from, to, heap: await heap() });

    // open: from the pick to the model loaded (the status's wait), then to the picture drawn
    const files = ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(dir, run.model, f));
    const t0 = await now();
    await page.setInputFiles('#l2files', files);
    await page.waitForSelector('#llama2c[data-loaded="1"]', { timeout: CAP });
    const loaded = await now();
    const waited = Number(await page.getAttribute('#llama2c', 'data-waited'));
    await step('pick → loaded', waited, t0, loaded);
    await page.waitForFunction(() => {
      const p = document.querySelector('#picture');
      return p.dataset.state !== 'loading' && (p.dataset.source ?? '').length > 0 && document.querySelector('#pmodel')?.value === 'opened'
        && Number(p.dataset.drawnAt ?? 0) > 0 && p.dataset.state === 'ready';
    }, null, { timeout: CAP });
    const drawnAt = Number(await page.getAttribute('#picture', 'data-drawn-at'));
    // BENCH_PAGE_SHOTS=<dir>: the panels as a user sees them, after each step
    const tag = `${run.model}-${run.viewport.width}`;
    const shot = async (sel, name) => {
      if (!process.env.BENCH_PAGE_SHOTS) return;
      await page.$eval(sel, (el) => el.scrollIntoView());
      await page.locator(sel).screenshot({ path: join(process.env.BENCH_PAGE_SHOTS, `${name}-${tag}.png`) });
    };
    await shot('#picture', 'picture');
    await step('loaded → picture drawn', drawnAt - loaded, loaded, drawnAt);
    row.memory = await page.evaluate(async () => (await import('./host.js')).hostCall('opener', { type: 'memory' }));
    row.fp32 = Number(await page.getAttribute('#llama2c', 'data-fp32'));

    // generation: 24 tokens, the first one's wait and the whole
    await page.$eval('#llama2c', (el) => el.scrollIntoView());
    await page.selectOption('#l2count', '24');
    const g0 = await now();
    await page.click('#l2generate');
    await page.waitForSelector('#llama2c[data-done]', { timeout: CAP });
    const g1 = await now();
    await step('Generate → first token', Number(await page.getAttribute('#llama2c', 'data-first-token')), g0, g0 + Number(await page.getAttribute('#llama2c', 'data-first-token')));
    await step('Generate → drawn', g1 - g0, g0, g1);
    row.generate = await page.textContent('#l2status');
    await shot('#llama2c', 'opener');

    // What does this head do?: the opened model picked; the estimated grid, then the top cells exactly
    await page.$eval('#circuits', (el) => el.scrollIntoView());
    await page.waitForSelector('#hdmodel option[value="opened"]', { state: 'attached', timeout: CAP });
    const c0 = await now();
    if ((await page.$eval('#hdmodel', (s) => s.value)) !== 'opened') await page.selectOption('#hdmodel', 'opened');
    await page.waitForFunction(() => {
      const s = document.querySelector('#circuits');
      return s.dataset.state === 'error' || (Number(s.dataset.estimateAt) > Number(s.dataset.startedAt) && (s.dataset.file ?? '').startsWith('opened-'));
    }, null, { timeout: CAP });
    // the panel starts on an opened model by itself (it runs on it when it opens): timed from that start
    const started = Number(await page.getAttribute('#circuits', 'data-started-at'));
    const c1 = Number(await page.getAttribute('#circuits', 'data-estimate-at'));
    row.estimate = await page.getAttribute('#circuits', 'data-estimate');
    await step('circuits start → estimated grid', c1 - started, started, c1);
    await page.waitForFunction(() => {
      const s = document.querySelector('#circuits');
      return s.dataset.state === 'error' || Number(s.dataset.agreementAt) > Number(s.dataset.startedAt) || s.dataset.state === 'ready';
    }, null, { timeout: CAP });
    const c2 = Number(await page.getAttribute('#circuits', 'data-agreement-at') ?? (await now()));
    await step('circuits start → top 16 exact', c2 - started, started, c2);
    await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#circuits').dataset.state), null, { timeout: CAP });
    const c3 = await now();
    await step('circuits start → every grid', c3 - started, started, c3);
    row.circuits = await page.textContent('#hdstatus');
    await shot('#circuits', 'circuits');

    // the feature browser on the opened model: GPT-2's layer-6 residual stream
    if (run.sae && process.env.BENCH_PAGE_SAE !== '0') {
      await page.$eval('#features', (el) => el.scrollIntoView());
      await page.waitForSelector('#fsmodel option[value="opened"]', { state: 'attached', timeout: CAP });
      await page.selectOption('#fsmodel', 'opened');
      await page.selectOption('#fslayer', 'blocks.5.hook_resid_post');
      await page.selectOption('#fssize', '4');
      await page.selectOption('#fsk', '32');
      await page.selectOption('#fssteps', '300');
      const s0 = await now();
      await page.click('#fstrain');
      await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#features').dataset.state), null, { timeout: CAP });
      const s1 = await now();
      await step('SAE 3072 x 768, k 32, 300 steps', s1 - s0, s0, s1);
      row.sae = await page.textContent('#fsstatus');
      await shot('#features', 'features');
    }
    row.memoryAfter = await page.evaluate(async () => (await import('./host.js')).hostCall('opener', { type: 'memory' }));
    for (const s of row.steps) s.longest = await longest(s.from, s.to);
    row.longestAll = await longest(t0, await now());
    row.errors = errors;
    return row;
  } finally {
    await page.close();
  }
}

export default async function run() {
  let launch, startServer, writePageModels, DEFAULT_DIR;
  try {
    ({ launch } = await import('../tests/browser/helpers.js'));
    ({ startServer } = await import('../scripts/serve.js'));
    ({ writePageModels, DEFAULT_DIR } = await import('../scripts/make-page-models.mjs'));
  } catch (e) {
    return console.log(`skipped: ${e.message}`);
  }
  const dir = join(ROOT, DEFAULT_DIR);
  const want = (process.env.BENCH_PAGE_MODELS ?? 'gpt2,smollm2').split(',');
  writePageModels(dir, { only: want, log: (s) => console.log(`# ${s}`) });
  for (const m of want) if (!existsSync(join(dir, m, 'model.safetensors'))) return console.log(`skipped: ${m} was not written`);
  const server = await startServer({ root: ROOT });
  const browser = await launch();
  try {
    console.log(`# ${(await import('./timing.js')).cpuName()}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} (2 cores shared)`);
    console.log('| model | viewport | step | time | longest main-thread task | wasm heap after it |');
    console.log('|---|---|---|---|---|---|');
    for (const r of RUNS.filter((x) => want.includes(x.model))) {
      const row = await drive(browser, server.url, dir, r);
      for (const s of row.steps) {
        console.log(`| ${r.label} | ${r.viewport.width} x ${r.viewport.height} | ${s.name} | ${fmt(s.ms)} | ${s.longest ? fmt(s.longest) : 'none over 50 ms'}${s.longest > LONG ? ' (over 100 ms)' : ''} | ${mib(s.heap)} |`);
      }
      const fp32 = row.fp32;
      console.log(`| ${r.label} | ${r.viewport.width} x ${r.viewport.height} | wasm heap after load / at the end | `
        + `${mib(row.memory.heap)} / ${mib(row.memoryAfter.heap)} (${(row.memoryAfter.heap / fp32).toFixed(2)} x the fp32 weights' ${mib(fp32)}) | | |`);
      console.log(`#   ${r.label}: generation: ${row.generate}`);
      console.log(`#   circuits (estimate ${row.estimate}): ${row.circuits.slice(0, 300)}`);
      if (row.sae) console.log(`#   features: ${row.sae}`);
      console.log(`#   longest main-thread task in the whole run: ${fmt(row.longestAll)}${row.errors.length ? `; page errors: ${row.errors.join(' | ')}` : ''}`);
    }
    console.log(`# load average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } finally {
    await browser.close();
    await server.close();
  }
}
