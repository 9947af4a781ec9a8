// Runs the native C suite (built by build.sh under ASan + UBSan, vector and scalar paths)
// and reports each binary as a test, with its printed max errors as diagnostics.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

const dir = new URL('../../build/native/', import.meta.url);
const sources = readdirSync(new URL('../native/', import.meta.url)).filter((f) => /^test_.*\.c$/.test(f));

for (const src of sources) {
  for (const suffix of ['', '_scalar']) {
    const bin = src.replace(/\.c$/, suffix);
    test(`native ${bin}`, (t) => {
      const path = new URL(bin, dir).pathname;
      assert.ok(existsSync(path), `${path} is missing: run bash build.sh native`);
      const r = spawnSync(path, [], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
      for (const line of `${r.stdout}${r.stderr}`.trim().split('\n')) t.diagnostic(line);
      assert.equal(r.status, 0, `${bin} exited with ${r.status ?? r.signal}`);
    });
  }
}
