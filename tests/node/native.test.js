// Runs the native C suite (built by build.sh under ASan + UBSan: the vector and scalar paths in
// build/native/, and 32-bit x86 binaries in build/native32/, whose 32-bit size_t is wasm32's) and
// reports each binary as a test, with its printed max errors as diagnostics.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

const sources = readdirSync(new URL('../native/', import.meta.url)).filter((f) => /^test_.*\.c$/.test(f));
const builds = [
  { dir: '../../build/native/', suffixes: ['', '_scalar'], label: '', how: 'bash build.sh native' },
  { dir: '../../build/native32/', suffixes: [''], label: ' (32-bit)', how: 'bash build.sh native32' },
];

for (const { dir, suffixes, label, how } of builds)
  for (const src of sources) {
    for (const suffix of suffixes) {
      const bin = src.replace(/\.c$/, suffix);
      test(`native ${bin}${label}`, (t) => {
        const path = new URL(`${dir}${bin}`, import.meta.url).pathname;
        assert.ok(existsSync(path), `${path} is missing: run ${how}`);
        const r = spawnSync(path, [], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
        for (const line of `${r.stdout}${r.stderr}`.trim().split('\n')) t.diagnostic(line);
        assert.equal(r.status, 0, `${bin}${label} exited with ${r.status ?? r.signal}`);
      });
    }
  }
