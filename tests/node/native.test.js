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
        // through bash's exec, which reports a binary the kernel cannot run (126, "Exec format
        // error") where Node's spawn would hand it to /bin/sh as a script
        const r = spawnSync('bash', ['-c', 'exec "$0"', path], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
        // Some hosts' kernels run no 32-bit x86 program (IA-32 emulation off): say so, do not fail.
        // The wasm suites still run every size check on wasm32's own 32-bit size_t.
        if (label && r.status === 126 && /Exec format error/.test(r.stderr)) return t.skip(`this kernel cannot run 32-bit x86 binaries: ${r.stderr.trim()}`);
        for (const line of `${r.stdout}${r.stderr}`.trim().split('\n')) t.diagnostic(line);
        assert.equal(r.status, 0, `${bin}${label} exited with ${r.status ?? r.signal}`);
      });
    }
  }
