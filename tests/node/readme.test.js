// readme.test.js: the README stays a front page (issue 45, item 4): at most 300 lines, keeping what a
// newcomer needs first: the pitch, the screenshot, the quick start (one command runs the playground,
// one runs every test), the install routes, the API tour, the benchmarks' headline with its command
// and machine, and a map that links every page of docs/. The rest lives in docs/*.md;
// tests/node/docs.test.js runs every code block of both and checks every relative link.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';

const ROOT = new URL('../../', import.meta.url);
const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
const lines = readme.replace(/\n$/, '').split('\n');
const MAX_LINES = 300;

/** The lines of the section `## title`, up to the next `## ` heading. */
function section(title) {
  const at = lines.indexOf(`## ${title}`);
  assert.ok(at >= 0, `README.md has a "## ${title}" section`);
  const end = lines.findIndex((l, i) => i > at && /^## /.test(l));
  return { at, end: end < 0 ? lines.length : end, text: lines.slice(at + 1, end < 0 ? lines.length : end).join('\n') };
}

test(`README.md has at most ${MAX_LINES} lines`, (t) => {
  t.diagnostic(`${lines.length} lines`);
  assert.ok(lines.length <= MAX_LINES, `README.md has ${lines.length} lines: move the detail into docs/*.md and link it`);
});

test('README: the pitch, then the quick start: npm start runs the playground, npm test runs every suite', () => {
  assert.equal(lines[0], '# attention-wasm');
  const firstSection = lines.findIndex((l) => /^## /.test(l));
  assert.ok(lines.slice(1, firstSection).join(' ').trim().length > 200, 'a pitch before the first section');
  const quick = section('Quick start');
  assert.equal(quick.at, firstSection, 'the quick start is the first section');
  const sh = /```sh\n([\s\S]*?)```/.exec(quick.text);
  assert.ok(sh, 'the quick start has a sh block');
  const commands = sh[1].split('\n').map((l) => l.replace(/(^|\s)#.*$/, '').trim()).filter(Boolean);
  assert.deepEqual(commands, ['npm start', 'npm test']);
  assert.match(quick.text, /Debian 12/);
  assert.match(quick.text, /Node 20/);
  // what the README says these two do is what package.json runs: npm test installs what it lacks first
  const { scripts } = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8'));
  assert.equal(scripts.start, 'bash scripts/start.sh');
  assert.match(scripts.test, /^bash scripts\/setup\.sh && /);
});

test('README: the screenshot, the install routes with the first js block, the API tour, the benchmarks\' headline', () => {
  const shot = /!\[[^\]]+\]\((docs\/screenshot\.png)\)/.exec(section('The playground').text);
  assert.ok(shot, 'the playground section shows docs/screenshot.png');
  assert.ok(existsSync(new URL(shot[1], ROOT)), shot[1]);
  // tests/node/docs.test.js runs the README's first js block as the quick start's main.js
  const install = section('Install');
  const firstJs = lines.indexOf('```js');
  assert.ok(firstJs > install.at && firstJs < install.end, 'the first js block of the README is in its Install section');
  assert.ok((install.text.match(/^npm install /gm) ?? []).length >= 2, 'the install routes');
  assert.match(section('API in brief').text, /\]\(docs\/api\.md\)/, 'the API tour links the reference');
  const bench = section('Benchmarks').text;
  assert.match(bench, /`(npm run bench|node bench\/run\.js[^`]*)`/, 'the benchmarks name their command');
  assert.match(bench, /AMD EPYC|Intel Xeon/, 'and the machine');
  assert.match(bench, /^\| --- \|/m, 'and give a table');
});

test('README: the documentation map links every page of docs/', () => {
  const map = section('Documentation').text;
  const pages = readdirSync(new URL('docs/', ROOT)).filter((f) => f.endsWith('.md'));
  assert.ok(pages.length >= 10, `${pages.length} pages in docs/`);
  for (const f of pages) assert.ok(map.includes(`](docs/${f})`), `the README's documentation map links docs/${f}`);
});
