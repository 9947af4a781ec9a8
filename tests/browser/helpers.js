// helpers.js (browser suites): Debian's Chromium driven by playwright-core, a fresh profile per
// launch, and a page wrapper that records every console error, page error and failed request so a
// test can fail on them. Never downloads a browser.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const { chromium } = await import('playwright-core');

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));

const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

/** Makes sure /usr/bin/chromium exists: installs it with apt when root, else throws a one-line how-to. */
export function ensureChromium() {
  if (existsSync(CHROMIUM)) return;
  const root = process.getuid?.() === 0;
  const apt = existsSync('/usr/bin/apt-get');
  if (!root || !apt) {
    throw new Error(`${CHROMIUM} is missing: install it with \`sudo apt-get install -y --no-install-recommends chromium\``);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'ignore', env });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { stdio: 'ignore', env });
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is still missing`);
}

/**
 * Launches headless Chromium with a fresh temporary profile.
 * Returns { context, close } (close also deletes the profile).
 */
export async function launch(options = {}) {
  ensureChromium();
  const dir = mkdtempSync(join(tmpdir(), 'aw-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 }, ...options,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// The one request allowed to fail: the catalogue of pretrained checkpoints, which the page asks for
// and treats as empty when missing, and only while web/models/index.json does not exist.
const CATALOG = fileURLToPath(new URL('../../web/models/index.json', import.meta.url));
const allowed = (url) => url.endsWith('/models/index.json') && !existsSync(CATALOG);

/**
 * Opens a page that records problems: console errors, uncaught page errors, failed requests and
 * HTTP errors. problems() returns them as strings.
 */
export async function openPage(context) {
  const page = await context.newPage();
  // Generous caps for every click, fill and wait that names none: the tests run on busy machines,
  // and a cap only bounds a hang (nothing asserts how long a step took).
  page.setDefaultTimeout(120_000);
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !allowed(msg.location()?.url ?? '')) problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
  page.on('response', (r) => {
    if (r.status() >= 400 && !allowed(r.url())) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return { page, problems: () => [...problems] };
}

export async function screenshot(page, name) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * One static server and one browser for a suite file (registered with node:test's before/after),
 * and open(query, { context, model }): a recorded page at that query, waited on until the page
 * (and, with model, the model panel) is ready. Returns { open, server(), browser() }.
 */
export function playgroundSuite({ before, after }, { timeout = 300_000 } = {}) {
  let server, browser;
  before(async () => {
    const { startServer } = await import('../../scripts/serve.js');
    server = await startServer({ port: 0 });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  async function open(query = '', { context = browser.context, model = false } = {}) {
    const { page, problems } = await openPage(context);
    await page.goto(`${server.url}${query}`);
    await page.waitForSelector('body[data-state="ready"]', { timeout });
    if (model) await page.waitForSelector('#model[data-state="ready"]', { timeout });
    return { page, problems };
  }
  return { open, server: () => server, browser: () => browser };
}
