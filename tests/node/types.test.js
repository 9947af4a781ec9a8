// The TypeScript types (wasm/*.d.ts) compile under --strict and describe real usage:
// tests/types/usage.ts uses every family and marks mistakes with @ts-expect-error, so a type
// that is too loose fails too (an unused @ts-expect-error is an error).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

test('wasm/index.d.ts accepts real usage and rejects the marked mistakes (tsc --strict)', () => {
  const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
  const usage = fileURLToPath(new URL('../types/usage.ts', import.meta.url));
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'es2022',
    '--moduleResolution', 'bundler', '--lib', 'es2022,dom', usage], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
