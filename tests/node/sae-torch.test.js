// sae-torch.test.js: the TopK SAE (src/sae/sae.c) against its PyTorch twin (scripts/sae_torch.py,
// Debian's python3-torch, float64 autograd): the same weights (sae.save()), the same batch and the
// same dead latents give the same loss, FVU, AuxK loss, L0 and projected gradient to 1e-5.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builds, rand, relMaxErr, TOL } from './helpers.js';

const PYTHON = '/usr/bin/python3'; // Debian's, where python3-torch installs (not a pyenv shim)
const SCRIPT = new URL('../../scripts/sae_torch.py', import.meta.url).pathname;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const why = 'python3-torch is missing: run bash scripts/setup.sh as root, or apt-get install -y python3-torch';

test('SAE: PyTorch\'s twin gives the same loss, FVU, AuxK, L0 and projected gradient to 1e-5', { skip: haveTorch ? false : why }, (t) => {
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-sae-torch-'));
  const cfg = { dIn: 16, dSae: 64, k: 4, auxK: 8, deadTokens: 24, seed: 9 };
  const sae = lib.createSAE(cfg);
  try {
    const rows = (n, seed) => rand(n * cfg.dIn, seed, -1, 1).map((v, i) => v + 0.3 * (i % 5));
    for (let s = 0; s < 4; s++) sae.trainStep(rows(8, 100 + s), { lr: 1e-2 }); // 32 rows seen: some latents dead
    const dead = Array.from(sae.sinceFired(), (s) => (s >= cfg.deadTokens ? 1 : 0));
    const X = rows(32, 7);
    const got = sae.gradients(X);
    writeFileSync(join(dir, 'sae.safetensors'), sae.save());
    writeFileSync(join(dir, 'rows.f32'), new Uint8Array(X.buffer));
    writeFileSync(join(dir, 'dead.json'), JSON.stringify(dead));
    const r = spawnSync(PYTHON, [SCRIPT, join(dir, 'sae.safetensors'), join(dir, 'rows.f32'), join(dir, 'dead.json')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const ref = JSON.parse(r.stdout);
    assert.ok(got.dead > 0 && ref.aux > 0, `${got.dead} dead latents: AuxK acts`);
    let worst = 0;
    for (const key of ['loss', 'fvu', 'aux', 'l0']) {
      const e = Math.abs(got[key] - ref[key]) / Math.abs(ref[key]);
      worst = Math.max(worst, e);
      assert.ok(e <= TOL.sae_torch, `${key}: ${got[key]} vs PyTorch ${ref[key]}`);
    }
    for (const key of Object.keys(ref.grads)) {
      const e = relMaxErr(got.grads[key], ref.grads[key]);
      worst = Math.max(worst, e);
      assert.ok(e <= TOL.sae_torch, `${key}: error ${e} > ${TOL.sae_torch}`);
    }
    t.diagnostic(`torch ${ref.torch}: largest relative difference ${worst.toExponential(2)} (tolerance ${TOL.sae_torch}); ` +
      `${got.dead} dead latents, fvu ${ref.fvu.toFixed(4)}, aux ${ref.aux.toFixed(4)}`);
  } finally {
    sae.free();
    rmSync(dir, { recursive: true, force: true });
  }
});
