// sae.test.js: the TopK sparse autoencoder (src/sae/sae.c, wasm/sae.js; issue 47 item 3). One
// training step's forward, losses and projected gradient against a float64 reference
// (sae-reference.js), that reference against finite differences, the first step's Adam update,
// the dead-latent counters, save/load, the bad inputs (each an Error naming the argument, the SAE
// usable after), and trainSAE on the shipped sub-word model. PyTorch's twin: sae-torch.test.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, expectError, rand, relMaxErr, TOL } from './helpers.js';
import { loadAttention } from '../../wasm/index.js';
import { fvu64, saeReference } from './sae-reference.js';
import { ensureFortunes, fortunesDocuments } from '../../scripts/fortunes.mjs';

// A tiny SAE where a batch of 4 rows leaves most latents unfired, so with deadTokens 1 the second
// batch has dead latents and AuxK acts.
const CFG = { dIn: 6, dSae: 16, k: 2, auxK: 4, deadTokens: 1, auxCoef: 1 / 32, seed: 5 };
const refOpts = (c, dead, extra = {}) => ({ d: c.dIn, S: c.dSae, k: c.k, auxK: c.auxK, auxCoef: c.auxCoef, dead, ...extra });

// Rows with a mean away from 0 and some spread, as residual streams have.
function batch(rows, seed) {
  const x = rand(rows * CFG.dIn, seed, -1, 1);
  for (let i = 0; i < x.length; i++) x[i] += 0.5 * ((i % CFG.dIn) - 2);
  return x;
}

for (const { name, lib } of builds) {
  test(`SAE (${name}): one step's loss, FVU, L0 and projected gradient equal the float64 reference, AuxK included`, (t) => {
    const sae = lib.createSAE(CFG);
    try {
      const X1 = batch(4, 11), X2 = batch(5, 12);
      const P0 = sae.params();
      P0.b_pre = Float64Array.from({ length: CFG.dIn }, (_, i) => [0, 1, 2, 3].reduce((s, b) => s + X1[b * CFG.dIn + i], 0) / 4);
      sae.trainStep(X1, { lr: 1e-2 });
      const P = sae.params(), since = sae.sinceFired();
      const dead = Array.from(since, (s) => (s >= CFG.deadTokens ? 1 : 0));
      // the counters are the rows since each latent fired: 0 for the first batch's chosen, 4 for the rest
      const before = saeReference(P0, X1, refOpts(CFG, dead.map(() => 0)));
      const firedFirst = new Set(before.chosen.flat());
      assert.deepEqual([...since], Array.from({ length: CFG.dSae }, (_, j) => (firedFirst.has(j) ? 0 : 4)));
      const nDead = dead.reduce((a, b) => a + b, 0);
      assert.ok(nDead >= 8, `${nDead} dead latents: AuxK must have some to act on`);
      const got = sae.gradients(X2);
      const ref = saeReference(P, X2, refOpts(CFG, dead, { grads: true }));
      assert.ok(ref.aux > 0, 'the dead latents reconstruct part of the residual');
      for (const key of ['loss', 'fvu', 'aux', 'l0'])
        assert.ok(Math.abs(got[key] - ref[key]) <= TOL.sae * (1 + Math.abs(ref[key])), `${key}: ${got[key]} vs ${ref[key]}`);
      assert.equal(got.dead, nDead);
      let worst = 0;
      for (const key of Object.keys(ref.grads)) {
        const e = relMaxErr(got.grads[key], ref.grads[key]);
        worst = Math.max(worst, e);
        assert.ok(e <= TOL.sae, `${key}: error ${e} > ${TOL.sae}`);
      }
      // the decoder's gradient is orthogonal to each row (the projection), and not zero
      for (let j = 0; j < CFG.dSae; j++) {
        let along = 0;
        for (let i = 0; i < CFG.dIn; i++) along += got.grads['dec.w'][j * CFG.dIn + i] * P['dec.w'][j * CFG.dIn + i];
        assert.ok(Math.abs(along) < TOL.sae_unit_norm, `row ${j}: gradient . row = ${along}`);
      }
      // a wrong AuxK coefficient is seen: the check can fail
      const wrong = saeReference(P, X2, refOpts({ ...CFG, auxCoef: CFG.auxCoef * 1.1 }, dead, { grads: true }));
      assert.ok(Math.abs(wrong.loss - got.loss) > 100 * TOL.sae * got.loss);
      t.diagnostic(`largest gradient error ${worst.toExponential(2)} (tolerance ${TOL.sae}); ${nDead} dead latents, aux ${ref.aux.toFixed(4)}, fvu ${ref.fvu.toFixed(4)}`);
      // gradients() changes nothing: the same call twice gives the same bits
      assert.deepEqual(sae.gradients(X2).grads['enc.w'], got.grads['enc.w']);
    } finally {
      sae.free();
    }
  });
}

test('SAE reference: its gradient matches central finite differences of its own loss (the AuxK target held fixed)', (t) => {
  const { lib } = builds[0];
  const sae = lib.createSAE(CFG);
  sae.trainStep(batch(4, 11), { lr: 1e-2 });
  const P64 = Object.fromEntries(Object.entries(sae.params()).map(([k, v]) => [k, Float64Array.from(v)]));
  const dead = Array.from(sae.sinceFired(), (s) => (s >= 1 ? 1 : 0));
  sae.free();
  const X = batch(5, 12);
  const base = saeReference(P64, X, refOpts(CFG, dead, { grads: true }));
  const opts = refOpts(CFG, dead, { residual: base.residuals });
  const eps = 1e-6;
  let worst = 0;
  for (const key of Object.keys(P64)) {
    const fd = new Float64Array(P64[key].length);
    for (let i = 0; i < fd.length; i++) {
      const keep = P64[key][i];
      P64[key][i] = keep + eps;
      const up = saeReference(P64, X, opts).loss;
      P64[key][i] = keep - eps;
      const down = saeReference(P64, X, opts).loss;
      P64[key][i] = keep;
      fd[i] = (up - down) / (2 * eps);
    }
    if (key === 'dec.w') // the same projection as the analytic gradient's
      for (let j = 0; j < CFG.dSae; j++) {
        let along = 0;
        for (let i = 0; i < CFG.dIn; i++) along += fd[j * CFG.dIn + i] * P64[key][j * CFG.dIn + i];
        for (let i = 0; i < CFG.dIn; i++) fd[j * CFG.dIn + i] -= along * P64[key][j * CFG.dIn + i];
      }
    const e = relMaxErr(base.grads[key], fd);
    worst = Math.max(worst, e);
    assert.ok(e <= TOL.sae_grad_fd, `${key}: analytic vs finite differences ${e}`);
    // a 10% error in one entry would show: the check can fail
    const off = Float64Array.from(base.grads[key]);
    const big = off.reduce((m, v, i) => (Math.abs(v) > Math.abs(off[m]) ? i : m), 0);
    off[big] *= 1.1;
    assert.ok(relMaxErr(off, fd) > 10 * TOL.sae_grad_fd, `${key}: a 10% error goes unseen`);
  }
  t.diagnostic(`largest analytic-vs-finite-difference error ${worst.toExponential(2)} (tolerance ${TOL.sae_grad_fd})`);
});

test('SAE: the first step sets b_pre to the batch mean, takes Adam\'s first step and keeps decoder rows unit', () => {
  const { lib } = builds[0];
  const sae = lib.createSAE(CFG);
  try {
    const P0 = sae.params(), X = batch(8, 21), lr = 1e-3, d = CFG.dIn;
    const mean = Array.from({ length: d }, (_, i) => {
      let s = 0;
      for (let b = 0; b < 8; b++) s += X[b * d + i];
      return s / 8;
    });
    const ref = saeReference({ ...P0, b_pre: Float64Array.from(mean) }, X, refOpts(CFG, new Array(CFG.dSae).fill(0), { grads: true }));
    sae.trainStep(X, { lr });
    const P1 = sae.params();
    // Adam's first step is lr * g / (|g| + eps): lr times the sign where g is well resolved
    for (const key of ['enc.w', 'enc.b', 'b_pre']) {
      const g = ref.grads[key], top = g.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      const start = key === 'b_pre' ? mean : P0[key];
      let checked = 0;
      for (let i = 0; i < g.length; i++) {
        if (Math.abs(g[i]) < 1e-3 * top) continue;
        checked++;
        assert.ok(Math.abs(P1[key][i] - (start[i] - lr * Math.sign(g[i]))) <= TOL.sae, `${key}[${i}]: ${P1[key][i]} vs ${start[i]} - ${lr} sign(${g[i]})`);
      }
      assert.ok(checked > 0, key);
    }
    for (let j = 0; j < CFG.dSae; j++) {
      let ss = 0;
      for (let i = 0; i < d; i++) ss += P1['dec.w'][j * d + i] ** 2;
      assert.ok(Math.abs(Math.sqrt(ss) - 1) < TOL.sae_unit_norm, `decoder row ${j} has norm ${Math.sqrt(ss)}`);
    }
    assert.equal(sae.steps, 1);
  } finally {
    sae.free();
  }
});

test('SAE: encode is TopK(ReLU(.)), decode is z W_dec + b_pre, and save/loadSAE round-trips the same bits', () => {
  const { lib } = builds[0];
  const sae = lib.createSAE({ ...CFG, deadTokens: 100 });
  const X = batch(6, 31);
  for (let s = 0; s < 5; s++) sae.trainStep(X, { lr: 1e-2 });
  sae.hook = 'blocks.0.hook_resid_post';
  const P = sae.params();
  const enc = sae.encode(X);
  const ref = saeReference(P, X, refOpts(CFG, new Array(CFG.dSae).fill(0)));
  assert.equal(enc.rows, 6);
  for (let b = 0; b < 6; b++) {
    const nonzero = [...enc.indices.subarray(b * CFG.k, (b + 1) * CFG.k)].filter((_, s) => enc.values[b * CFG.k + s] > 0);
    assert.deepEqual(nonzero, ref.chosen[b], `row ${b}`);
  }
  // decode of the dense code is x^ = z W_dec + b_pre (float64 here)
  const z = new Float32Array(6 * CFG.dSae);
  for (let b = 0; b < 6; b++) for (let s = 0; s < CFG.k; s++) z[b * CFG.dSae + enc.indices[b * CFG.k + s]] += enc.values[b * CFG.k + s];
  const xhat = sae.decode(z), want = new Float64Array(xhat.length);
  for (let b = 0; b < 6; b++)
    for (let i = 0; i < CFG.dIn; i++) {
      let v = P.b_pre[i];
      for (let j = 0; j < CFG.dSae; j++) v += z[b * CFG.dSae + j] * P['dec.w'][j * CFG.dIn + i];
      want[b * CFG.dIn + i] = v;
    }
  assert.ok(relMaxErr(xhat, want) <= TOL.sae, `decode: error ${relMaxErr(xhat, want)}`);
  const bytes = sae.save();
  const back = lib.loadSAE(bytes);
  try {
    assert.deepEqual(back.config, sae.config);
    assert.equal(back.hook, 'blocks.0.hook_resid_post');
    for (const [key, v] of Object.entries(back.params())) assert.deepEqual(v, P[key], key);
    const e2 = back.encode(X);
    assert.deepEqual(e2.indices, enc.indices);
    assert.deepEqual(e2.values, enc.values);
    assert.deepEqual(back.decode(z), xhat);
    back.trainStep(X, { lr: 1e-3 }); // it trains on, from its own b_pre (no new mean: Adam moves each by <= lr)
    const moved = back.params().b_pre.map((v, i) => Math.abs(v - P.b_pre[i]));
    assert.ok(Math.max(...moved) <= 1.001e-3 && Math.max(...moved) > 0, `b_pre moved by ${Math.max(...moved)}`);
    // a file that is not an SAE's, or with a decoder row that is not a unit vector
    expectError(() => lib.loadSAE(new Uint8Array(3)), /loadSAE: 3 bytes is too short/);
    const text = new TextDecoder().decode(bytes.subarray(8, 8 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true))));
    const h = JSON.parse(text);
    const at = 8 + text.length + h['dec.w'].data_offsets[0];
    const bad = bytes.slice();
    new DataView(bad.buffer).setFloat32(at, 3, true);
    expectError(() => lib.loadSAE(bad), /loadSAE: dec.w row 0 has norm [\d.]+; a TopK SAE's decoder rows are unit vectors/);
    const noFormat = bytes.slice();
    noFormat.set(new TextEncoder().encode('"format":"attention-wasm-xxx"'), 8 + text.indexOf('"format"'));
    expectError(() => lib.loadSAE(noFormat), /loadSAE: the file's __metadata__.format is "attention-wasm-xxx", expected "attention-wasm-sae"/);
  } finally {
    back.free();
    sae.free();
  }
});

test('SAE: bad inputs are Errors naming the argument, and the SAE stays usable', () => {
  const { lib } = builds[0];
  expectError(() => lib.createSAE({ dIn: 8, dSae: 16, k: 17 }), /createSAE: k is 17; expected 1 <= k <= dSae = 16/);
  expectError(() => lib.createSAE({ dIn: 8, dSae: 16, k: 2, auxK: 32 }), /createSAE: auxK is 32; expected 0 <= auxK <= dSae = 16/);
  expectError(() => lib.createSAE({ dIn: 0, dSae: 16, k: 2 }), /createSAE: dIn must be a positive integer, got 0/);
  expectError(() => lib.createSAE({ dIn: 8, dSae: 16, k: 2, seed: -1 }), /createSAE: seed/);
  expectError(() => lib.createSAE({ dIn: 8, dSae: 16, k: 2, dModel: 3 }), /createSAE: unknown option "dModel"/);
  // sizes past wasm32's 32-bit size_t: refused before anything is allocated
  expectError(() => lib.createSAE({ dIn: 70000, dSae: 70000, k: 2 }), /createSAE: dSae x dIn = 70000 x 70000 is too large/);
  const heap = lib.heapInUse();
  const sae = lib.createSAE(CFG);
  const X = batch(4, 41);
  const first = sae.trainStep(X, { lr: 1e-3 });
  assert.ok(Number.isFinite(first.loss));
  const P = sae.params();
  const nan = X.slice();
  nan[7] = NaN;
  expectError(() => sae.trainStep(nan), /trainStep: acts\[7\] is NaN; inputs must be finite/);
  expectError(() => sae.encode(nan), /encode: acts\[7\] is NaN/);
  expectError(() => sae.gradients(Float32Array.of(1, 2, 3)), /gradients: acts has 3 values, expected a positive multiple of dIn = 6/);
  expectError(() => sae.trainStep([1, 2, 3, 4, 5, 6]), /trainStep: acts must be a Float32Array of rows x dIn = rows x 6 values, got Array\(6\)/);
  expectError(() => sae.trainStep(X, { lr: -1 }), /trainStep: lr must be >= 0/);
  expectError(() => sae.trainStep(X, { lr: NaN }), /trainStep: lr must be a finite number/);
  expectError(() => sae.trainStep(new Float32Array(12).fill(2)), /trainStep: acts: the 2 rows are all equal/);
  expectError(() => sae.trainStep(X.subarray(0, 6)), /trainStep: acts holds 1 row; a training batch needs at least 2 rows/);
  const inf = X.slice();
  inf[20] = -Infinity;
  expectError(() => sae.gradients(inf), /gradients: acts\[20\] is -Infinity; inputs must be finite/);
  expectError(() => sae.decode(new Float32Array(15)), /decode: z has 15 values, expected a positive multiple of dSae = 16/);
  // nothing changed, and it still trains
  for (const [key, v] of Object.entries(sae.params())) assert.deepEqual(v, P[key], key);
  assert.ok(Number.isFinite(sae.trainStep(X, { lr: 1e-3 }).loss));
  sae.free();
  expectError(() => sae.encode(X), /encode: this SAE was freed/);
  sae.free(); // twice is fine
  assert.equal(lib.heapInUse(), heap, 'free() returns every byte');
});

test('SAE: 1 and 2 threads give the same bits (the threaded build), and the same as the single-thread SIMD build', async () => {
  const two = await loadAttention({ threads: 2 });
  const run = (lib) => {
    const sae = lib.createSAE({ dIn: 48, dSae: 384, k: 8, auxK: 16, deadTokens: 200, seed: 4 });
    const stats = [];
    for (let s = 0; s < 6; s++) stats.push(sae.trainStep(rand(300 * 48, 50 + s, -1, 1), { lr: 3e-3 }));
    const out = { params: sae.params(), stats, code: sae.encode(rand(40 * 48, 99, -1, 1)) };
    sae.free();
    return out;
  };
  const serial = run(builds[0].lib);
  if (two.threads < 2) return; // the machine reports one core: nothing more to compare
  const items = two.threadWorkItems();
  const at2 = run(two);
  assert.ok(two.threadWorkItems() > items, 'the worker thread took part');
  two.setThreads(1);
  const at1 = run(two);
  for (const other of [at2, at1]) {
    for (const key of Object.keys(serial.params)) assert.deepEqual(other.params[key], serial.params[key], key);
    assert.deepEqual(other.stats, serial.stats);
    assert.deepEqual(other.code, serial.code);
  }
});

const skipFortunes = ensureFortunes();
test('trainSAE: on the shipped sub-word model\'s middle residual stream, a few hundred steps reach a sane FVU', { skip: skipFortunes ?? false }, async (t) => {
  const { lib } = builds[0];
  const dir = new URL('../../web/models/', import.meta.url);
  const model = lib.loadModel(readFileSync(new URL('fortunes-bpe.safetensors', dir)), { training: false });
  const tokenizer = lib.loadTokenizer(JSON.parse(readFileSync(new URL('fortunes-bpe.tokenizer.json', dir), 'utf8')));
  const { train, held } = fortunesDocuments();
  const text = train.slice(0, 3000).map((d) => `${d}\n\n`).join('');
  const hook = `blocks.${model.config.layers / 2 - 1}.hook_resid_post`;
  try {
    // bad inputs first: an unknown hook, k > dSae; the model is usable after
    await assert.rejects(lib.trainSAE({ model, hook: 'blocks.9.hook_nope', text, tokenizer, dSae: 64, k: 4, steps: 1 }),
      /trainSAE: hook: .*blocks\.9\.hook_nope/);
    await assert.rejects(lib.trainSAE({ model, hook, text, tokenizer, dSae: 64, k: 65, steps: 1 }), /trainSAE: k is 65; expected 1 <= k <= dSae = 64/);
    await assert.rejects(lib.trainSAE({ model, hook: 'blocks.0.attn.hook_pattern', text, tokenizer, dSae: 64, k: 4, steps: 1 }),
      /not one row per position/);
    const progress = [];
    const sae = await lib.trainSAE({ model, hook, text, tokenizer, dSae: 8 * model.config.dModel, k: 16, steps: 200, batch: 256,
      lr: 3e-3, onProgress: (p) => progress.push(p) });
    try {
      assert.equal(progress.length, 20);
      assert.equal(sae.hook, hook);
      assert.equal(sae.config.dIn, model.config.dModel);
      // FVU on held-out activations, measured here: x^ from encode + decode against the rows
      const rows = [];
      for (const doc of held.slice(0, 40)) {
        const ids = tokenizer.encode(doc).slice(0, model.config.maxLen);
        if (ids.length > 1) rows.push(model.runWithCache(ids, { names: [hook] }).cache[hook].data);
      }
      const X = new Float32Array(rows.reduce((s, r) => s + r.length, 0));
      rows.reduce((at, r) => (X.set(r, at), at + r.length), 0);
      const d = sae.config.dIn, B = X.length / d, S = sae.config.dSae;
      const { indices, values } = sae.encode(X);
      const z = new Float32Array(B * S);
      for (let i = 0; i < indices.length; i++) z[Math.floor(i / 16) * S + indices[i]] += values[i];
      const fvu = fvu64(X, sae.decode(z), B, d);
      const first = progress[0].fvu, last = progress.at(-1);
      t.diagnostic(`${hook}: training FVU ${first.toFixed(3)} at step 10 -> ${last.fvu.toFixed(3)} at step 200; held-out FVU ${fvu.toFixed(3)} on ${B} rows; L0 ${last.l0}`);
      assert.ok(last.fvu < 0.5 * first, 'training lowers the FVU');
      assert.ok(fvu < 0.35, `held-out FVU ${fvu}`);
      assert.ok(last.l0 <= 16);
    } finally {
      sae.free();
    }
    assert.equal(model.runWithCache(Int32Array.of(1, 2, 3), { names: [hook] }).cache[hook].shape.join(), `3,${model.config.dModel}`);
  } finally {
    model.dispose();
  }
});
