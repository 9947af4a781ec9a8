// docs.test.js: every code block in README.md and docs/*.md runs as written, so a snippet that
// drifts from the API fails the build.
// - Each ```js block is saved as its own .mjs file in a fresh folder where the package was
//   installed by the README's own install commands (the tarball: `npm pack` of this checkout), and
//   run with node: it must exit 0. A block builds whatever data it needs.
// - Each line of a ```sh block is a command. COMMANDS says what this test does with it: run it
//   (in that folder or in the checkout) and expect exit 0, start it as a server and fetch the page it
//   prints, or why it is not run here (with the suite that covers it). A command that is in no row
//   fails the test, so a new command in the docs gets a row.
// - A block with no language is text (layouts, formulas, printed output); it must not hold a
//   command (a line starting with npm, node, bash or npx), which would escape these checks.
// - Every relative link (and image) in those files points to a file that exists, and a link with a
//   #fragment to a heading of its target, by GitHub's anchor rule.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
// The README's placeholder for a clone of the repository, replaced by this checkout.
const CHECKOUT = '/path/to/attention-wasm';

/** Every fenced block of a Markdown file: { file, line, lang, code }. */
function blocks(file) {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    while (++i < lines.length && !/^```\s*$/.test(lines[i]));
    out.push({ file, line: start + 1, lang: open[1], code: lines.slice(start + 1, i).join('\n') });
  }
  return out;
}
const ALL = DOCS.flatMap(blocks);

const LONG = 'a long run of its own (minutes to an hour), not part of npm test';
const BY_NPM_TEST = 'npm test runs `bash build.sh` (every target) before this suite';
// What this test does with each command of a ```sh block: 'app' runs it in the folder the package is
// installed into, 'root' in the checkout, 'serve' starts it and fetches the page whose URL it prints,
// a string says why it is not run here.
const COMMANDS = {
  'npm install git+https://github.com/attention-wasm/attention-wasm.git':
    'needs the network beyond the registries; tests/node/install.test.js installs from a git URL of a local clone',
  'npm pkg set type=module': 'app',
  'npm install /path/to/attention-wasm': 'app',
  'npm pack /path/to/attention-wasm && npm install ./attention-wasm-0.1.0.tgz': 'app',
  'npx esbuild main.js --bundle --platform=browser --format=esm --outfile=dist/main.js': 'app',
  'cp node_modules/attention-wasm/wasm/*.wasm node_modules/attention-wasm/wasm/thread-worker.js dist/': 'app',
  'npm start': 'serve',
  'PORT=9000 npm start': 'serve',
  'HOST=0.0.0.0 npm start': 'serve',
  'node scripts/serve.js': 'serve',
  'npm test': 'this suite is part of it',
  'npm run test:quick': 'a part of npm test (scripts/test-quick.sh: the node suites but the slow files it lists)',
  'bash scripts/test-loaded.sh': 'npm test itself, beside two busy loops: a long run of its own',
  'npm run gen:types': 'root',
  'bash build.sh': BY_NPM_TEST,
  'bash build.sh wasm': BY_NPM_TEST,
  'bash build.sh native': BY_NPM_TEST,
  'bash build.sh native32': BY_NPM_TEST,
  'bash build.sh relaxed': BY_NPM_TEST,
  'npm run test:relaxed': 'the node suite on the relaxed build: .ci/run runs it after npm test (tests/node/relaxed.test.js covers the build inside npm test)',
  'bash build.sh trainer': 'root',
  'npm run fuzz': LONG,
  'bash scripts/fuzz.sh 120 js': LONG,
  'npm run bench': LONG,
  'node bench/run.js peers': LONG,
  'BENCH_SECTIONS=matmul,attention node bench/run.js peers': LONG,
  'BENCH_SAMPLES=25 BENCH_MIN_MS=15 node bench/run.js peers': LONG,
  'npm run train -- --task reverse --attention softmax --vocab 11 --steps 600 --out reverse.safetensors': 'root',
  'npm run train -- --task recall --attention random --vocab 21 --steps 1500': 'root',
  'npm run train -- --task translate --arch encoder-decoder --steps 1500': 'root',
  'npm run train -- --help': 'root',
};
// Files a 'root' command writes into the checkout, removed after the test.
const WRITES = ['reverse.safetensors'];

/** The commands of a ```sh block: one per line, comments and blank lines dropped. */
const commandsOf = (code) => code.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '').trim()).filter(Boolean);

/** Runs a shell command; resolves { code, out } (stdout + stderr), killing it after capMs. */
function sh(command, cwd, capMs = 600_000) {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', command], { cwd, env: { ...process.env, CI: 'true' } });
    let out = '';
    child.stdout.on('data', (b) => { out += b; });
    child.stderr.on('data', (b) => { out += b; });
    const timer = setTimeout(() => child.kill('SIGKILL'), capMs);
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code: signal ? signal : code, out }); });
  });
}

/** Starts a server command, waits for the first http:// URL it prints, fetches it, stops it. */
async function serveOnce(command) {
  const child = spawn('bash', ['-c', command], { cwd: ROOT, detached: true, env: { ...process.env } });
  let out = '';
  let timer;
  try {
    const url = await new Promise((resolve, reject) => {
      const look = (b) => {
        out += b;
        const m = /http:\/\/[0-9.]+:\d+\//.exec(out);
        if (m) resolve(m[0]);
      };
      child.stdout.on('data', look);
      child.stderr.on('data', look);
      child.on('close', (code) => reject(new Error(`${command} exited (${code}) before printing a URL:\n${out}`)));
      // generous: npm start may rebuild the wasm first (about a minute on 2 idle cores)
      timer = setTimeout(() => reject(new Error(`${command} printed no URL in 10 minutes:\n${out}`)), 600_000);
    });
    const res = await fetch(url.replace('0.0.0.0', '127.0.0.1'));
    const body = await res.text();
    return { url, status: res.status, isolated: res.headers.get('cross-origin-opener-policy'), body, out };
  } finally {
    clearTimeout(timer); // or it keeps this process alive for 10 minutes
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
  }
}

let app; // the folder the package is installed into by the README's own commands

before(async () => {
  app = mkdtempSync(join(tmpdir(), 'aw-docs-'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'aw-docs-check', private: true, type: 'module' }));
});

after(() => {
  if (app) rmSync(app, { recursive: true, force: true });
  for (const f of WRITES) rmSync(join(ROOT, f), { force: true });
});

test('every code block is js, sh, c or text, and text blocks hold no command', () => {
  for (const b of ALL) {
    assert.ok(['js', 'sh', 'c', ''].includes(b.lang), `${b.file}:${b.line}: a \`\`\`${b.lang} block: this test knows js, sh, c and text`);
    if (b.lang !== '') continue;
    const cmd = b.code.split('\n').find((l) => /^\s*(npm|node|npx|bash)\s/.test(l));
    assert.equal(cmd, undefined, `${b.file}:${b.line}: a text block holds a command (${cmd}); mark the block \`\`\`sh`);
  }
});

/** A heading's anchor as GitHub makes it: its text without markup, lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading) => heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '').toLowerCase()
  .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');

/** The anchors of a Markdown file's headings (outside fenced blocks), a repeated one numbered as GitHub does. */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  let fenced = false;
  for (const line of readFileSync(join(ROOT, file), 'utf8').split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    const h = !fenced && /^#{1,6} (.*?)\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Every link target of a Markdown file outside fenced blocks and code spans: { line, target }. */
function links(file) {
  const out = [];
  let fenced = false;
  readFileSync(join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
    if (/^```/.test(line)) fenced = !fenced;
    if (fenced) return;
    for (const [, target] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) out.push({ line: i + 1, target });
  });
  return out;
}

test('every relative link in the docs points to a file that exists, and to a heading of it', (t) => {
  let checked = 0;
  for (const file of DOCS) {
    for (const { line, target } of links(file)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, fragment] = target.split('#');
      const to = path ? join(dirname(file), path) : file;
      assert.ok(existsSync(join(ROOT, to)), `${file}:${line}: ${target}: ${to} does not exist`);
      if (fragment !== undefined && to.endsWith('.md')) {
        assert.ok(anchors(to).has(decodeURIComponent(fragment)), `${file}:${line}: ${target}: ${to} has no heading with the anchor #${fragment}`);
      }
      checked++;
    }
  }
  t.diagnostic(`${checked} relative links in ${DOCS.length} files`);
  assert.ok(checked >= 10, `found only ${checked} relative links`);
});

test('every shell command in the docs has a row in COMMANDS', () => {
  for (const b of ALL.filter((b) => b.lang === 'sh')) {
    for (const c of commandsOf(b.code)) {
      assert.ok(c in COMMANDS, `${b.file}:${b.line}: \`${c}\` is not in tests/node/docs.test.js COMMANDS: say how it is checked`);
    }
  }
});

// The README's install lines first, in order (`npm pkg set` too): the package the js blocks import comes from them.
test('the install commands, then every js block, run as written against the installed package', async (t) => {
  const shBlocks = ALL.filter((b) => b.lang === 'sh');
  const installs = shBlocks.flatMap((b) => commandsOf(b.code).filter((c) => COMMANDS[c] === 'app' && /^npm (install|pack|pkg)/.test(c)));
  assert.ok(installs.length >= 2, 'the README names its install commands');
  for (const c of installs) {
    const r = await sh(c.replaceAll(CHECKOUT, ROOT), app);
    assert.equal(r.code, 0, `\`${c}\` failed:\n${r.out.slice(-3000)}`);
    t.diagnostic(`ran: ${c}`);
  }
  const installed = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')).dependencies['attention-wasm'];
  assert.match(installed, /\.tgz$/, `the last install is the tarball (${installed})`);
  const js = ALL.filter((b) => b.lang === 'js');
  assert.ok(js.length >= 6, `found ${js.length} js blocks`);
  for (const b of js) {
    const name = `${b.file.replace(/[/.]/g, '_')}_${b.line}.mjs`;
    writeFileSync(join(app, name), b.code + '\n');
    const r = await sh(`node ${name}`, app);
    assert.equal(r.code, 0, `${b.file}:${b.line}: the block does not run as written:\n${r.out.slice(-3000)}`);
    t.diagnostic(`${b.file}:${b.line}: ran (${r.out.split('\n').filter(Boolean).length} lines printed)`);
  }
  // The README's first block prints a sample of the text it trained on.
  const quick = ALL.find((b) => b.file === 'README.md' && b.lang === 'js');
  writeFileSync(join(app, 'main.js'), quick.code + '\n');
  const r = await sh('node main.js', app);
  const lines = r.out.trim().split('\n');
  assert.equal(lines[0], '32 16', 'the quick start prints the output and weights sizes');
  assert.ok(Number(lines.at(-2).split(' ')[1]) < 1, `the quick start's loss falls below 1 nat: ${lines.at(-2)}`);
  // esbuild with the README's flags bundles that same block; the cp line puts the loader's files beside it
  const esbuild = await sh('npm install esbuild@0.25 --no-audit --no-fund', app);
  assert.equal(esbuild.code, 0, esbuild.out);
  for (const c of shBlocks.flatMap((b) => commandsOf(b.code)).filter((c) => COMMANDS[c] === 'app' && !/^npm /.test(c))) {
    const r2 = await sh(c, app);
    assert.equal(r2.code, 0, `\`${c}\` failed:\n${r2.out.slice(-3000)}`);
    t.diagnostic(`ran: ${c}`);
  }
  for (const f of ['main.js', 'attention.wasm', 'attention-scalar.wasm', 'attention-threads.wasm', 'thread-worker.js']) {
    assert.ok(existsSync(join(app, 'dist', f)), `dist/${f} after the README's esbuild lines`);
  }
});

test('the commands run in the checkout exit 0 as written', async (t) => {
  for (const c of Object.keys(COMMANDS).filter((c) => COMMANDS[c] === 'root')) {
    // a training command runs as written but for its budget: every flag is parsed and checked, the
    // model trains and the checkpoint is written in 20 steps as in 1500 (its accuracy is not asserted
    // here; tests/node/trainer.test.js and the model suites hold what training reaches)
    const run = c.replace(/--steps \d+/, '--steps 20');
    const r = await sh(run, ROOT);
    assert.equal(r.code, 0, `\`${c}\` failed:\n${r.out.slice(-3000)}`);
    if (c.endsWith('--help')) assert.match(r.out, /--task/, 'the trainer lists its flags');
    if (c.includes('--out reverse.safetensors')) assert.ok(existsSync(join(ROOT, 'reverse.safetensors')), 'the checkpoint was written');
    t.diagnostic(`ran: ${run}: ${r.out.trim().split('\n').at(-1)}`);
  }
});

test('npm start and the server commands print their URL and serve the page, cross-origin isolated', async (t) => {
  for (const c of Object.keys(COMMANDS).filter((c) => COMMANDS[c] === 'serve')) {
    const r = await serveOnce(c);
    assert.equal(r.status, 200, `${c}: GET ${r.url}`);
    assert.match(r.body, /<title>/, `${c}: the playground page`);
    assert.equal(r.isolated, 'same-origin', `${c}: COOP header (threads need it)`);
    if (c.includes('PORT=9000')) assert.match(r.url, /:9000\//);
    if (c.includes('npm start')) assert.match(r.out, /start\.sh: /, `${c} says what it does before serving`);
    t.diagnostic(`${c}: ${r.url}`);
  }
});
