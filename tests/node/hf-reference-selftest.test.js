// hf-reference-selftest.test.js: scripts/hf_reference.py, the float64 reference for Hugging Face
// checkpoints (issue 43), checks itself: float32 vs float64 forwards, the rotate_half pairing equal
// to the interleaved one after permuting q/k rows, causality, Mistral's window (i - j < W), Llama 3.1
// rope scaling, BF16/F16 rounding, shards and the CLI. Needs only Debian's python3-torch; no wasm.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const PYTHON = '/usr/bin/python3'; // Debian's, where python3-torch installs (not a pyenv shim)
const SCRIPT = new URL('../../scripts/hf_reference.py', import.meta.url).pathname;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch, numpy'], { encoding: 'utf8' }).status === 0;
const why = 'python3-torch is missing: run bash scripts/setup.sh as root, or apt-get install -y python3-torch';

test('hf_reference.py selftest passes', { skip: haveTorch ? false : why }, () => {
  const r = spawnSync(PYTHON, [SCRIPT, 'selftest'], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /^FAIL/m, r.stdout);
  assert.match(r.stdout, /^PASS: \d+ checks, 0 failed$/m);
});
