// hook-ops.test.js: runWithHooks' hook operations (issue 47): add a vector to the residual stream
// (steering), scale a head, replace rows. Each edited activation is held to a float64 computation of
// the same edit on the clean activation, the untouched rows stay bit for bit, and the run goes on
// from the edited activation exactly as a patch of it does. Bad inputs are Errors naming them, and
// the model runs afterwards.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError, maxErr, rand } from './helpers.js';

const IDS = [5, 9, 2, 7, 11, 3, 5, 9, 2, 7];
const TOL = 2e-6; // one float32 multiply-add on values of order 1

for (const { name, lib } of builds) {
  const model = lib.createModel({ vocab: 16, dModel: 32, heads: 4, kvHeads: 2, layers: 2, maxLen: 16, block: 'llama', seed: 4 });
  const { logits: clean, cache } = model.runWithCache(IDS);
  const C = 32, n = IDS.length;

  test(`${name}: add at a position is the float64 residual plus scale x vector, and the run goes on from it`, (t) => {
    const point = 'blocks.1.hook_resid_pre', v = rand(C, 3), scale = 2.5;
    const { logits, cache: got } = model.runWithHooks(IDS, { add: [{ name: point, vector: v, scale, positions: [3, 6] }], names: [point] });
    const x = cache[point].data, y = got[point].data, want = Float64Array.from(x);
    for (const p of [3, 6]) for (let c = 0; c < C; c++) want[p * C + c] = x[p * C + c] + scale * v[c];
    const e = maxErr(y, want);
    t.diagnostic(`edited rows: max err ${e.toExponential(2)} against float64`);
    assert.ok(e <= TOL);
    for (const p of [0, 1, 2, 4, 5, 7, 8, 9]) assert.deepEqual(y.subarray(p * C, p * C + C), x.subarray(p * C, p * C + C), `row ${p} untouched`);
    const patched = model.runWithHooks(IDS, { patch: [{ name: point, from: got }] }).logits;
    assert.deepEqual(logits, patched, 'the run from the edited stream is the run patched with it');
    assert.ok(maxErr(logits, clean) > 1e-3, 'steering changes the logits');
    // without positions: every row; scale defaults to 1
    const all = model.runWithHooks(IDS, { add: [{ name: 'hook_embed', vector: v }], names: ['hook_embed'] }).cache.hook_embed.data;
    for (let p = 0; p < n; p++) for (let c = 0; c < C; c++) assert.ok(Math.abs(all[p * C + c] - (cache.hook_embed.data[p * C + c] + v[c])) <= TOL);
  });

  test(`${name}: scaling a head equals the run with that head's hook_z times the factor`, (t) => {
    // z as runWithHooks computes it (runWithCache's forward also keeps every head's weights for
    // display, which may round differently in the last place)
    const z = model.runWithHooks(IDS, { names: ['blocks.0.attn.hook_z'] }).cache['blocks.0.attn.hook_z'];
    const [, H, hd] = z.shape, head = 2, factor = 0.37;
    const scaled = Float32Array.from(z.data);
    for (let p = 0; p < n; p++) for (let i = 0; i < hd; i++) scaled[(p * H + head) * hd + i] = Math.fround(z.data[(p * H + head) * hd + i] * Math.fround(factor)); // float x float, as C
    const want = model.runWithHooks(IDS, { patch: [{ name: 'blocks.0.attn.hook_z', from: { 'blocks.0.attn.hook_z': { data: scaled, shape: z.shape } } }] }).logits;
    const got = model.runWithHooks(IDS, { scale: [{ name: 'blocks.0.attn.hook_z', heads: [head], factor }] }).logits;
    t.diagnostic(`scaled head vs patched scaled z: max err ${maxErr(got, want).toExponential(2)}`);
    assert.deepEqual(got, want);
    assert.ok(maxErr(got, clean) > 1e-4);
    // factor 0 is zero ablation
    const zero = model.runWithHooks(IDS, { scale: [{ name: 'blocks.0.attn.hook_z', heads: [head], factor: 0 }] }).logits;
    assert.deepEqual(zero, model.runWithHooks(IDS, { ablate: [{ layer: 0, head, mode: 'zero' }] }).logits);
  });

  test(`${name}: replace sets the rows given, in the order given, and only the heads given`, () => {
    const point = 'blocks.1.hook_mlp_out', rows = rand(2 * C, 9);
    const { cache: got } = model.runWithHooks(IDS, { replace: [{ name: point, positions: [7, 2], data: rows }], names: [point] });
    const y = got[point].data, x = cache[point].data;
    assert.deepEqual(y.subarray(7 * C, 8 * C), rows.subarray(0, C));
    assert.deepEqual(y.subarray(2 * C, 3 * C), rows.subarray(C, 2 * C));
    assert.deepEqual(y.subarray(0, 2 * C), x.subarray(0, 2 * C));
    const q = cache['blocks.1.attn.hook_q'], [, H, hd] = q.shape, data = rand(H * hd, 5);
    const qq = model.runWithHooks(IDS, { replace: [{ name: 'blocks.1.attn.hook_q', positions: [4], heads: [1], data }], names: ['blocks.1.attn.hook_q'] })
      .cache['blocks.1.attn.hook_q'].data;
    for (let h = 0; h < H; h++) {
      const at = (4 * H + h) * hd;
      assert.deepEqual(qq.subarray(at, at + hd), h === 1 ? data.subarray(h * hd, h * hd + hd) : q.data.subarray(at, at + hd));
    }
  });

  test(`${name}: bad hook operations are Errors naming them; the model runs afterwards`, () => {
    const v = rand(C, 1);
    const bad = (opts, re) => expectError(() => model.runWithHooks(IDS, opts), re);
    bad({ add: [{ name: 'blocks.9.hook_resid_pre', vector: v }] }, /add\[0\]: name.*blocks\.9|layer 9/);
    bad({ add: [{ name: 'hook_resid', vector: v }] }, /unknown|hook_resid/);
    bad({ add: [{ name: 'blocks.0.hook_resid_pre', vector: rand(C - 1, 1) }] }, /vector has 31 values, and one position of blocks\.0\.hook_resid_pre has 32 \(dModel\)/);
    bad({ add: [{ name: 'blocks.0.hook_resid_pre', vector: [...v.subarray(1), NaN] }] }, /add\[0\]: vector\[31\] is NaN; expected a finite number/);
    bad({ add: [{ name: 'blocks.0.hook_resid_pre', vector: v, scale: Infinity }] }, /add\[0\]: scale must be a finite number/);
    bad({ add: [{ name: 'blocks.0.hook_resid_pre', vector: v, heads: [0] }] }, /heads is only for the per-head names/);
    bad({ add: [{ name: 'blocks.0.hook_resid_pre', vector: v, positions: [10] }] }, /positions\[0\] is 10, outside \[0, 10\)/);
    bad({ scale: [{ name: 'blocks.0.attn.hook_pattern', factor: 2 }] }, /hook_pattern is read-only/);
    bad({ scale: [{ name: 'blocks.0.attn.hook_z', factor: 2, heads: [4] }] }, /heads\[0\] is 4, outside \[0, 4\)/);
    bad({ scale: [{ name: 'blocks.0.attn.hook_z' }] }, /scale\[0\]: factor must be a finite number, got undefined/);
    bad({ replace: [{ name: 'blocks.0.hook_mlp_out', positions: [1, 1], data: rand(2 * C, 1) }] }, /positions\[0\] and positions\[1\] are both 1/);
    bad({ replace: [{ name: 'blocks.0.hook_mlp_out', positions: [1], data: rand(C + 1, 1) }] }, /data has 33 values, expected \(positions, row\) = \(1, 32\) = 32/);
    bad({ steer: [] }, /unknown option "steer"/);
    bad({ add: {} }, /add must be an array/);
    assert.deepEqual(model.runWithHooks(IDS).logits, clean, 'the model runs as before');
  });
}
