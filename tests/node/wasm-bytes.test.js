// wasm-bytes.test.js: the committed wasm/*.wasm (what npm start, a git-URL install and the
// tarball use without Emscripten) are exactly what src/ builds to. npm test rebuilds them first
// (build.sh), so any difference from the committed bytes means a C change was committed without
// its rebuilt wasm.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const inGit = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim() === 'true';

test('the committed wasm files are what the sources build to', { skip: inGit ? false : 'not a git checkout' }, () => {
  for (const f of ['wasm/attention.wasm', 'wasm/attention-scalar.wasm', 'wasm/attention-threads.wasm',
    'wasm/attention-relaxed.wasm', 'wasm/attention-threads-relaxed.wasm']) {
    const tracked = spawnSync('git', ['ls-files', '--error-unmatch', f], { cwd: ROOT });
    assert.equal(tracked.status, 0, `${f} is not committed: run bash build.sh wasm and commit it`);
    const diff = spawnSync('git', ['diff', '--quiet', 'HEAD', '--', f], { cwd: ROOT });
    assert.equal(diff.status, 0, `${f} differs from the committed one after a rebuild: run bash build.sh wasm and commit wasm/*.wasm with the C change`);
  }
});

// npm start rebuilds only when wasm/sources.sha256 no longer matches the sources' hash: a stale
// stamp would make it serve a wasm built from other sources, or rebuild on every start.
test('wasm/sources.sha256 is committed and is the hash of the sources the wasm is built from', { skip: inGit ? false : 'not a git checkout' }, () => {
  const f = 'wasm/sources.sha256';
  assert.equal(spawnSync('git', ['diff', '--quiet', 'HEAD', '--', f], { cwd: ROOT }).status, 0, `${f} differs from the committed one after a rebuild: commit it with the C change`);
  const hash = spawnSync('bash', ['build.sh', 'hash'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(hash.status, 0, hash.stderr);
  assert.equal(readFileSync(join(ROOT, f), 'utf8').trim(), hash.stdout.trim());
});
