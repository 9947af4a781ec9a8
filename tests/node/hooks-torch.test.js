// hooks-torch.test.js (slow tier: Debian's python3-torch): the named points against PyTorch's
// forward hooks (scripts/torch_model.py hooks): for softmax, a linear form, the gated and delta
// forms and a llama2.c model, the clean cache at every point, the logits with heads ablated (zero
// and mean), with activations patched from another input's cache, and the logit lens, to 1e-5.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builds, expectClose, TOL } from './helpers.js';

const PYTHON = '/usr/bin/python3'; // Debian's, where python3-torch installs
const SCRIPT = new URL('../../scripts/torch_model.py', import.meta.url).pathname;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const why = 'python3-torch is missing: run bash scripts/setup.sh as root, or apt-get install -y python3-torch';

function torch(args) {
  const r = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('hooks against PyTorch forward hooks: cache, ablated and patched logits, logit lens', { skip: haveTorch ? false : why }, (t) => {
  const { lib } = builds[0];
  const tol = TOL.hooks_torch;
  const dir = mkdtempSync(join(tmpdir(), 'aw-hooks-'));
  try {
    const base = { vocab: 13, dModel: 16, heads: 4, layers: 2, dFF: 24, maxLen: 12, seed: 3 };
    const rows = [[1, 5, 2, 9, 3, 7, 1, 5, 2, 9, 3], [2, 6, 3, 10, 4, 8, 2, 6, 3, 10, 4]];
    const models = [{ attention: 'softmax' }, { attention: 'linear:elu+1' }, { attention: 'gated' }, { attention: 'delta' },
      { attention: 'gated-delta' }, { block: 'llama', kvHeads: 2 }].map((cfg) => {
      const m = lib.createModel({ ...base, ...cfg });
      for (let s = 0; s < 2; s++) m.trainStep({ inputs: rows, targets: rows.map((r) => r.map((x) => (x + 1) % 13)), lr: 1e-2 });
      return { name: JSON.stringify(cfg), m };
    });
    // a llama2.c model made by the PyTorch reference's own llama (scripts/torch_model.py llama2c-make)
    const bin = join(dir, 'l.bin'), tok = join(dir, 'l.tok');
    torch(['llama2c-make', bin, tok, '--seed', '2', '--kv-heads', '2', '--seq-len', '16']);
    models.push({ name: 'llama2.c', m: lib.loadLlama2c(readFileSync(bin)) });
    const cases = models.map(({ name, m }, i) => {
      const V = m.config.vocab, n = 11;
      const ids = Array.from({ length: n }, (_, p) => (p * 5 + 3) % V), corrupted = ids.map((x, p) => (p === 4 || p === 7 ? (x + 2) % V : x));
      const checkpoint = join(dir, `m${i}.safetensors`);
      writeFileSync(checkpoint, m.save());
      const ablate = [{ layer: 1, head: 0, mode: 'zero' }, { layer: 0, head: 1, mode: 'mean', positions: [2, 3, 5] }];
      const patch = [{ name: 'blocks.1.hook_resid_pre', positions: [4] }, { name: 'blocks.0.attn.hook_z', heads: [1], positions: [4, 5, 7] },
        { name: 'blocks.1.attn.hook_v', heads: [0] }, { name: 'blocks.0.hook_mlp_out', positions: [7] }];
      return { name, checkpoint, tokens: ids, corrupted, ablate, patch, m };
    });
    writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases.map(({ m, ...c }) => c)));
    const ref = JSON.parse(torch(['hooks', join(dir, 'cases.json')]));
    for (const [i, c] of cases.entries()) {
      const r = ref[i], m = c.m;
      const { logits, cache } = m.runWithCache(c.tokens);
      expectClose(t, `${c.name} logits`, logits, r.logits, tol);
      const names = Object.keys(r.cache);
      assert.equal(names.length, Object.keys(cache).length - m.config.layers, `${c.name}: every point but the patterns`);
      for (const name of names) {
        assert.ok(cache[name], `${c.name}: ${name} in the cache`);
        expectClose(t, `${c.name} ${name}`, cache[name].data, r.cache[name], tol);
      }
      expectClose(t, `${c.name} ablated`, m.runWithHooks(c.tokens, { ablate: c.ablate }).logits, r.ablated, tol);
      const from = m.runWithCache(c.corrupted).cache;
      const patched = m.runWithHooks(c.tokens, { patch: c.patch.map((p) => ({ ...p, from })) }).logits;
      expectClose(t, `${c.name} patched`, patched, r.patched, tol);
      expectClose(t, `${c.name} logit lens`, m.logitLens(c.tokens).data, r.lens, tol);
      m.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
