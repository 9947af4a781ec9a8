// hooks.test.js: the named points of a decoder's forward (src/model/hooks.c, wasm/hooks.js):
// the cache and interventions against forward's own numbers (exact where the same arithmetic
// runs), the tools' identities (the logit lens's last layer is forward; direct logit attribution
// sums to the logit; the grid is the single ablations), shapes, and every bad input an Error that
// leaves the model as it was. PyTorch's reference of the same points: hooks-torch.test.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError, TOL } from './helpers.js';

const exactly = (a, b, label) => {
  assert.equal(a.length, b.length, `${label}: lengths`);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${label}: [${i}] ${a[i]} != ${b[i]}`);
};

function trained(lib, cfg) {
  const m = lib.createModel({ vocab: 11, dModel: 16, heads: 4, layers: 2, dFF: 24, maxLen: 12, seed: 5, ...cfg });
  const row = (s) => Array.from({ length: 10 }, (_, i) => 1 + ((i * 7 + s) % 10));
  for (let s = 0; s < 2; s++) m.trainStep({ inputs: [row(s), row(s + 3)], targets: [row(s + 1), row(s + 4)], lr: 1e-2 });
  return m;
}

const IDS = [1, 4, 2, 7, 3, 9, 1, 4, 2, 7];
const OTHER = [1, 4, 2, 7, 3, 5, 1, 8, 2, 7];

const logSoftmaxAt = (logits, V, p, t) => {
  let mx = -Infinity;
  for (let v = 0; v < V; v++) mx = Math.max(mx, logits[p * V + v]);
  let z = 0;
  for (let v = 0; v < V; v++) z += Math.exp(logits[p * V + v] - mx);
  return logits[p * V + t] - mx - Math.log(z);
};

for (const { name, lib } of builds) {
  test(`hooks [${name}]: the cache, an empty run and a full clean patch give forward's logits bit for bit`, () => {
    for (const cfg of [{}, { block: 'llama', kvHeads: 2 }, { attention: 'linear:elu+1' }, { attention: 'gated-delta' }, { norm: 'post', positional: 'learned' }]) {
      const m = trained(lib, cfg);
      const ref = m.forward(IDS).logits;
      const { logits, cache } = m.runWithCache(IDS);
      exactly(logits, ref, `${JSON.stringify(cfg)} runWithCache`);
      exactly(m.runWithHooks(IDS, { ablate: [] }).logits, ref, 'empty ablate');
      exactly(m.runWithHooks(IDS, {}).logits, ref, 'no options');
      const all = IDS.map((_, i) => i);
      exactly(m.runWithHooks(IDS, { patch: [{ name: 'blocks.0.hook_resid_pre', from: cache, positions: all }] }).logits, ref, 'clean patch');
      exactly(m.runWithHooks(IDS, { patch: [{ name: 'blocks.1.attn.hook_z', from: cache }] }).logits, ref, 'clean z patch');
      // the shapes of hooks.h; K/V heads for hook_k, hook_v
      const { heads: H, kvHeads: KH, dModel: C, layers: L } = m.config, n = IDS.length, hd = C / H;
      assert.deepEqual(cache['hook_embed'].shape, [n, C]);
      assert.deepEqual(cache['blocks.1.attn.hook_q'].shape, [n, H, hd]);
      assert.deepEqual(cache['blocks.1.attn.hook_k'].shape, [n, KH, hd]);
      assert.deepEqual(cache['blocks.0.attn.hook_pattern'].shape, [H, n, n]);
      assert.deepEqual(cache['blocks.0.attn.hook_z'].shape, [n, H, hd]);
      const names = Object.keys(cache);
      assert.equal(names.length, 1 + 10 * L + (m.config.norm === 'pre' ? 1 : 0), names.join());
      // the pattern is forward's attention
      exactly(cache['blocks.1.attn.hook_pattern'].data.subarray(2 * n * n, 3 * n * n), m.forward(IDS).attention[1][2], 'pattern');
      // the residual stream adds up: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out (pre-norm)
      if (m.config.norm === 'pre') {
        const [pre, ao, mid, mo, post] = ['hook_resid_pre', 'hook_attn_out', 'hook_resid_mid', 'hook_mlp_out', 'hook_resid_post'].map((s) => cache[`blocks.1.${s}`].data);
        for (let i = 0; i < pre.length; i++) {
          assert.equal(mid[i], Math.fround(pre[i] + ao[i]));
          assert.equal(post[i], Math.fround(mid[i] + mo[i]));
        }
        exactly(cache['blocks.0.hook_resid_pre'].data, cache['hook_embed'].data, 'resid_pre 0 = embed');
        exactly(cache['blocks.1.hook_resid_pre'].data, cache['blocks.0.hook_resid_post'].data, 'resid_pre 1 = resid_post 0');
      }
      // names limits the cache
      const some = m.runWithCache(IDS, { names: ['blocks.1.hook_resid_post', 'blocks.0.attn.hook_z'] }).cache;
      assert.deepEqual(Object.keys(some).sort(), ['blocks.0.attn.hook_z', 'blocks.1.hook_resid_post']);
      exactly(some['blocks.0.attn.hook_z'].data, cache['blocks.0.attn.hook_z'].data, 'names cache');
      m.dispose();
    }
  });

  test(`hooks [${name}]: every causal form in lib.forms: the cache and a clean patch are forward, the tools run`, () => {
    for (const f of lib.forms.filter((x) => x.causal)) {
      const m = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 2, dFF: 16, maxLen: 12, seed: 2, attention: f.name });
      const ref = m.forward(IDS).logits;
      const { logits, cache } = m.runWithCache(IDS);
      exactly(logits, ref, `${f.name} runWithCache`);
      exactly(m.runWithHooks(IDS, { patch: [{ name: 'blocks.1.hook_resid_pre', from: cache }] }).logits, ref, `${f.name} clean patch`);
      assert.equal('blocks.0.attn.hook_q' in cache, f.usesQK, `${f.name}: hook_q exactly when the form reads queries`);
      const ablated = m.runWithHooks(IDS, { ablate: [{ layer: 0, head: 1, mode: 'mean' }] }).logits;
      assert.ok(ablated.every(Number.isFinite), f.name);
      const grid = m.ablationGrid(IDS);
      assert.ok(grid.data.every((x) => x <= 0), `${f.name}: log-probabilities`);
      exactly(m.logitLens(IDS).data.subarray(IDS.length * 11), ref, `${f.name} lens`);
      m.dispose();
    }
  });

  test(`hooks [${name}]: ablation and patching change what they should, and the grid is the single ablations`, () => {
    const m = trained(lib, { block: 'llama' });
    const { layers: L, heads: H, vocab: V } = m.config, n = IDS.length;
    const ref = m.forward(IDS).logits;
    const clean = m.runWithCache(IDS).cache, other = m.runWithCache(OTHER).cache;
    // patching position 5 of resid_pre 1 changes that position and later ones, no earlier one (causal)
    const patched = m.runWithHooks(IDS, { patch: [{ name: 'blocks.1.hook_resid_pre', positions: [5], from: other }] }).logits;
    exactly(patched.subarray(0, 5 * V), ref.subarray(0, 5 * V), 'before the patched position');
    assert.notDeepEqual([...patched.subarray(5 * V)], [...ref.subarray(5 * V)]);
    // patching every position of resid_pre 0 from the other input's cache is the other input's run
    exactly(m.runWithHooks(IDS, { patch: [{ name: 'blocks.0.hook_resid_pre', from: other }] }).logits, m.forward(OTHER).logits, 'full patch');
    // patching a head's z with zeros is its zero ablation
    const zeros = { 'blocks.1.attn.hook_z': { data: new Float32Array(clean['blocks.1.attn.hook_z'].data.length), shape: clean['blocks.1.attn.hook_z'].shape } };
    exactly(m.runWithHooks(IDS, { patch: [{ name: 'blocks.1.attn.hook_z', heads: [2], from: zeros }] }).logits,
      m.runWithHooks(IDS, { ablate: [{ layer: 1, head: 2, mode: 'zero' }] }).logits, 'zero patch = zero ablation');
    // at one point, patches apply before ablations: the ablated head ends at 0 whatever was patched in
    exactly(m.runWithHooks(IDS, { ablate: [{ layer: 1, head: 2, mode: 'zero' }], patch: [{ name: 'blocks.1.attn.hook_z', from: other }] }).logits,
      m.runWithHooks(IDS, { ablate: [{ layer: 1, head: 2, mode: 'zero' }], patch: [{ name: 'blocks.1.attn.hook_z', heads: [0, 1, 3], from: other }] }).logits,
      'patch, then ablate');
    const grid = m.ablationGrid(IDS);
    assert.deepEqual(grid.shape, [2, L, H, n - 1]);
    assert.deepEqual(grid.modes, ['zero', 'mean']);
    for (let p = 0; p + 1 < n; p++) assert.ok(Math.abs(grid.clean[p] - logSoftmaxAt(ref, V, p, IDS[p + 1])) < 1e-5);
    for (const [mi, mode] of grid.modes.entries())
      for (let l = 0; l < L; l++)
        for (let h = 0; h < H; h++) {
          const lg = m.runWithHooks(IDS, { ablate: [{ layer: l, head: h, mode }] }).logits;
          for (let p = 0; p + 1 < n; p++) {
            const got = grid.data[((mi * L + l) * H + h) * (n - 1) + p];
            assert.ok(Math.abs(got - logSoftmaxAt(lg, V, p, IDS[p + 1])) < 1e-5, `${mode} ${l} ${h} ${p}`);
          }
        }
    // the patching grid is the single patches (here: the other input run with the clean stream at one (layer, position))
    for (const name of ['hook_resid_pre', 'hook_mlp_out']) {
      const pg = m.patchingGrid(OTHER, { from: clean, name, targets: IDS.slice(1) });
      assert.deepEqual(pg.shape, [L, n, n - 1]);
      const base = m.forward(OTHER).logits;
      for (let p = 0; p + 1 < n; p++) assert.ok(Math.abs(pg.clean[p] - logSoftmaxAt(base, V, p, IDS[p + 1])) < 1e-5);
      for (let l = 0; l < L; l++)
        for (let q = 0; q < n; q++) {
          const lg = m.runWithHooks(OTHER, { patch: [{ name: `blocks.${l}.${name}`, positions: [q], from: clean }] }).logits;
          for (let p = 0; p + 1 < n; p++)
            assert.ok(Math.abs(pg.data[(l * n + q) * (n - 1) + p] - logSoftmaxAt(lg, V, p, IDS[p + 1])) < 1e-5, `${name} ${l} ${q} ${p}`);
        }
    }
    const own = m.patchingGrid(IDS, { from: other });
    for (let p = 0; p + 1 < n; p++) assert.ok(Math.abs(own.clean[p] - logSoftmaxAt(ref, V, p, IDS[p + 1])) < 1e-5, 'default targets: the next ids');
    const meanOnly = m.ablationGrid(IDS, { modes: ['mean'] });
    exactly(meanOnly.data, grid.data.subarray(L * H * (n - 1)), 'mean-only grid');
    // ablating at position 6 only (mean over every position) leaves positions 0..5 exactly as they were
    const late = m.runWithHooks(IDS, { ablate: [{ layer: 0, head: 1, mode: 'mean', positions: [6] }] }).logits;
    exactly(late.subarray(0, 6 * V), ref.subarray(0, 6 * V), 'positions before the ablated one');
    m.dispose();
  });

  test(`hooks [${name}]: the logit lens's last layer is forward, and direct logit attribution sums to the logit`, (t) => {
    for (const cfg of [{ block: 'llama' }, {}, { tieEmbeddings: true }]) {
      const m = trained(lib, cfg);
      const { layers: L, heads: H, vocab: V } = m.config, n = IDS.length;
      const ref = m.forward(IDS).logits;
      const lens = m.logitLens(IDS);
      assert.deepEqual(lens.shape, [L, n, V]);
      exactly(lens.data.subarray((L - 1) * n * V), ref, 'last layer');
      const a = m.headAttribution(IDS);
      assert.deepEqual(a.heads.shape, [L, H, n]);
      let worst = 0;
      for (let p = 0; p < n; p++) {
        let s = a.embed[p] + a.rest[p];
        for (let l = 0; l < L; l++) {
          s += a.mlp.data[l * n + p];
          for (let h = 0; h < H; h++) s += a.heads.data[(l * H + h) * n + p];
        }
        worst = Math.max(worst, Math.abs(s - a.logit[p]) / (1 + Math.abs(a.logit[p])));
        const tgt = p + 1 < n ? IDS[p + 1] : a.target[p];
        assert.equal(a.target[p], tgt);
        assert.equal(a.logit[p], ref[p * V + tgt]);
      }
      t.diagnostic(`${JSON.stringify(cfg)}: max |sum of parts - logit| / (1 + |logit|) = ${worst.toExponential(2)}`);
      assert.ok(worst <= TOL.attention, `attribution sums to the logit: ${worst}`);
      const fixed = m.headAttribution(IDS, { target: 3 });
      for (let p = 0; p < n; p++) assert.equal(fixed.logit[p], ref[p * V + 3]);
      m.dispose();
    }
  });

  test(`hooks [${name}]: bad inputs are Errors naming them and their range; the model stays as it was`, () => {
    const m = trained(lib, {});
    const ref = m.forward(IDS).logits;
    const { cache } = m.runWithCache(IDS);
    const ab = (a) => () => m.runWithHooks(IDS, { ablate: [a] });
    expectError(ab({ layer: 2, head: 0, mode: 'zero' }), /ablate\[0\]: layer 2 is outside \[0, 2\)/);
    expectError(ab({ layer: -1, head: 0, mode: 'zero' }), /layer -1 is outside \[0, 2\)/);
    expectError(ab({ layer: 0, head: 4, mode: 'mean' }), /ablate\[0\]: head 4 is outside \[0, 4\)/);
    expectError(ab({ layer: 0, head: 0, mode: 'zero', positions: [1, 10] }), /positions\[1\] is 10, outside \[0, 10\)/);
    expectError(ab({ layer: 0, head: 0, mode: 'resample' }), /mode must be one of "zero", "mean"/);
    expectError(ab({ layer: 0.5, head: 0, mode: 'zero' }), /layer must be an integer/);
    expectError(ab({ layer: 0, head: 0, mode: 'zero', pos: [1] }), /unknown option "pos"/);
    const pa = (p) => () => m.runWithHooks(IDS, { patch: [p] });
    expectError(pa({ name: 'blocks.2.hook_resid_pre', from: { 'blocks.2.hook_resid_pre': cache['blocks.1.hook_resid_pre'] } }), /layer 2 is outside \[0, 2\)/);
    expectError(pa({ name: 'blocks.0.hook_resid', from: cache }), /from has no "blocks.0.hook_resid"/);
    expectError(pa({ name: 'blocks.0.hook_resid', from: { 'blocks.0.hook_resid': cache['hook_embed'] } }), /unknown hook name "blocks.0.hook_resid": the names are hook_embed/);
    expectError(pa({ name: 'blocks.0.attn.hook_pattern', from: cache }), /hook_pattern is read-only/);
    expectError(pa({ name: 'blocks.0.attn.hook_z', heads: [5], from: cache }), /heads\[0\] is 5, outside \[0, 4\)/);
    expectError(pa({ name: 'blocks.0.hook_resid_pre', heads: [0], from: cache }), /heads is only for the per-head names/);
    const short = m.runWithCache(IDS.slice(1)).cache;
    expectError(pa({ name: 'blocks.0.hook_resid_pre', from: short }), /from's blocks.0.hook_resid_pre has 144 values, expected \(n, dModel\) = \(10, 16\) = 160/);
    expectError(pa({ name: 'blocks.0.attn.hook_z', from: short }), /expected \(n, heads, dHead\) = \(10, 4, 4\) = 160/);
    const nan = { 'hook_embed': { data: new Float32Array(160).fill(NaN), shape: [10, 16] } };
    expectError(pa({ name: 'hook_embed', from: nan }), /holds NaN or Infinity/);
    expectError(() => m.runWithCache(IDS, { names: ['blocks.9.attn.hook_q'] }), /blocks.9.attn.hook_q: layer 9 is outside \[0, 2\)/);
    expectError(() => m.runWithCache(IDS, { names: 'hook_embed' }), /names must be an array/);
    expectError(() => m.runWithCache([1, 2, 11]), /tokens\[2\] is 11, outside the vocabulary \[0, 11\)/);
    expectError(() => m.runWithCache(new Array(13).fill(1)), /13 tokens; this model takes 1 to maxLen = 12/);
    expectError(() => m.runWithCache([]), /empty/);
    expectError(() => m.logitLens(new Array(13).fill(1)), /maxLen = 12/);
    expectError(() => m.headAttribution(IDS, { target: 11 }), /target\[0\] is 11, outside the vocabulary \[0, 11\)/);
    expectError(() => m.headAttribution(IDS, { target: [1, 2] }), /target has 2 ids, expected one per position \(10\)/);
    expectError(() => m.patchingGrid(IDS, { from: cache, name: 'hook_nothing' }), /from has no "blocks.0.hook_nothing"/);
    expectError(() => m.patchingGrid(IDS, { from: { 'blocks.0.attn.hook_z': cache['blocks.0.attn.hook_z'], 'blocks.1.attn.hook_z': cache['blocks.1.attn.hook_z'] }, name: 'attn.hook_z' }), /name must be a block's whole-row point/);
    expectError(() => m.patchingGrid(IDS.slice(1), { from: cache }), /from's blocks.0.hook_resid_pre has 160 values, expected \(n, dModel\) = \(9, 16\) = 144/);
    expectError(() => m.patchingGrid(IDS, { from: cache, targets: [1, 2] }), /targets has 2 ids, expected n - 1 = 9/);
    expectError(() => m.patchingGrid(IDS, { from: cache, targets: IDS.map(() => 11).slice(1) }), /targets\[0\] is 11, outside the vocabulary \[0, 11\)/);
    expectError(() => m.ablationGrid([3]), /at least 2 tokens/);
    expectError(() => m.ablationGrid(IDS, { modes: ['zero', 'zero'] }), /modes must be a non-empty array of distinct/);
    // nothing changed: the same logits, training still runs
    exactly(m.forward(IDS).logits, ref, 'after the Errors');
    exactly(m.runWithCache(IDS).logits, ref, 'a hooked run after the Errors');
    assert.ok(Number.isFinite(m.trainStep({ inputs: [IDS], targets: [OTHER] }).loss));
    m.dispose();
    expectError(() => m.runWithCache(IDS), /runWithCache: this model was disposed/);
  });

  test(`hooks [${name}]: models without a point refuse it, saying why`, () => {
    const ed = lib.createModel({ vocab: 11, dModel: 16, heads: 4, layers: 1, dFF: 24, maxLen: 12, arch: 'encoder-decoder' });
    expectError(() => ed.runWithCache(IDS), /hooks need a decoder-only model: arch "encoder-decoder"/);
    ed.dispose();
    const gru = lib.createModel({ vocab: 11, dModel: 16, layers: 1, maxLen: 12, arch: 'gru' });
    expectError(() => gru.logitLens(IDS), /arch "gru" is a recurrent network/);
    gru.dispose();
    const post = trained(lib, { norm: 'post' });
    expectError(() => post.runWithCache(IDS, { names: ['ln_final.hook_normalized'] }), /a post-norm model has no final norm/);
    expectError(() => post.headAttribution(IDS), /headAttribution needs a pre-norm model/);
    assert.deepEqual(post.logitLens(IDS).shape, [2, 10, 11]); // resid_post is already normalised
    post.dispose();
    const synth = trained(lib, { attention: 'synth:random' });
    expectError(() => synth.runWithCache(IDS, { names: ['blocks.0.attn.hook_q'] }), /attention "synth:random" reads no queries or keys/);
    assert.ok(synth.runWithCache(IDS).cache['blocks.0.attn.hook_z']);
    synth.dispose();
  });
}
