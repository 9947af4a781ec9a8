// fuzz.test.js: the libFuzzer targets (tests/fuzz/) in npm test: every committed corpus input and
// every saved reproducer of an earlier finding replays clean, then each target fuzzes for 8 s, so
// a regression fails CI. `npm run fuzz` runs them for 10 minutes each.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

test('fuzz targets: corpora and regressions replay clean, then 8 s of fuzzing each finds nothing', (t) => {
  const script = new URL('../../scripts/fuzz.sh', import.meta.url).pathname;
  const r = spawnSync('bash', [script, '--replay', '8'], { encoding: 'utf8', timeout: 600_000 });
  for (const line of `${r.stdout}${r.stderr}`.trim().split('\n')) t.diagnostic(line);
  assert.equal(r.status, 0, `scripts/fuzz.sh --replay failed:\n${r.stdout}${r.stderr}`);
});
