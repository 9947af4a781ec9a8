// fuzz-js.test.js: the JavaScript file readers' fuzzer (tests/fuzz-js/fuzz.mjs) in npm test: every
// committed corpus input and every saved reproducer (tests/fuzz-js/regressions/<target>/) replays
// clean, then each target runs a short seeded run (a fixed seed and iteration count, so the same
// inputs every time) that must find nothing but the findings listed open below. `npm run fuzz`
// (scripts/fuzz.sh) runs it for minutes per target.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const script = new URL('../fuzz-js/fuzz.mjs', import.meta.url).pathname;

// Findings of issue 55 not fixed yet (regular expressions over a finding's kind, as fuzz.mjs prints
// it): the seeded run counts them without failing. This list must be empty when issue 55 is resolved.
const KNOWN_OPEN = [];

// Inputs per target: the seeded run's size (about 20-40 s in all on a busy 2-core machine). The time
// bound per input is 2 s: each known hang costs it, and an input otherwise takes milliseconds.
const RUNS = { tokenizer: ['800'], huggingface: ['3000'], llama2c: ['3000'], sae: ['3000'] };

function fuzz(t, args) {
  const known = KNOWN_OPEN.flatMap((k) => ['--known', k]);
  const r = spawnSync(process.execPath, [script, '--timeout', '2', ...known, ...args], { encoding: 'utf8', timeout: 600_000 });
  for (const line of `${r.stdout}${r.stderr}`.trim().split('\n')) t.diagnostic(line);
  assert.equal(r.status, 0, `node tests/fuzz-js/fuzz.mjs ${args.join(' ')} found something:\n${r.stdout}${r.stderr}`);
}

test('fuzz-js: every corpus input and regression replays clean', (t) => fuzz(t, ['--replay']));

for (const [target, [n, ...more]] of Object.entries(RUNS))
  test(`fuzz-js: ${target}: ${n} seeded inputs find nothing but the open findings`, (t) => fuzz(t, ['--seed', '1', '--iterations', n, ...more, target]));
