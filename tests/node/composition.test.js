// composition.test.js: model.compositionScores (src/model/composition.c, wasm/hooks.js) against a
// float64 reference that builds every head's full dModel x dModel W_QK and W_OV from the saved weights
// (the safetensors layout of docs/model.md, nn.Linear's (out, in)) and takes the Frobenius norms of
// their products naively, on random models whose norm weights are random too (so the folding shows):
// classic blocks (LayerNorm, biases), llama blocks (RMSNorm) with and without grouped-query heads, and
// a head width other than dModel / heads. A deliberately wrong reference (W_OV transposed) must miss
// by more than the tolerance; bad models are Errors naming why.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError, TOL } from './helpers.js';
import { readSafetensors, writeSafetensors } from '../../wasm/safetensors.js';

// Seeded uniform [lo, hi) (xorshift32), as numbers.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return (lo, hi) => {
    s ^= s << 13, s >>>= 0, s ^= s >>> 17, s ^= s << 5, s >>>= 0;
    return lo + (hi - lo) * (s / 2 ** 32);
  };
}

// The model with every tensor random (norm weights in [0.5, 1.5], so folding them matters), reloaded.
function randomModel(lib, cfg, seed) {
  const made = lib.createModel({ vocab: 9, maxLen: 8, seed, ...cfg });
  const { meta, tensors } = readSafetensors(made.save());
  made.dispose();
  const r = rng(seed * 7919);
  for (const [name, t] of tensors)
    for (let i = 0; i < t.data.length; i++) t.data[i] = /\.ln\.w$/.test(name) ? r(0.5, 1.5) : r(-0.5, 0.5);
  return { model: lib.loadModel(writeSafetensors(meta, tensors)), tensors };
}

// a (r x k) times b (k x c), row-major Float64Arrays.
function mul(a, b, r, k, c) {
  const out = new Float64Array(r * c);
  for (let i = 0; i < r; i++)
    for (let t = 0; t < k; t++) {
      const x = a[i * k + t];
      for (let j = 0; j < c; j++) out[i * c + j] += x * b[t * c + j];
    }
  return out;
}
const transpose = (a, r, c) => Float64Array.from({ length: r * c }, (_, i) => a[(i % r) * c + Math.floor(i / r)]);
const frob = (a) => Math.sqrt(a.reduce((s, x) => s + x * x, 0));

// The float64 reference: { q, k, v } as Float64Arrays (L, H, L, H) from the stored tensors; wrongOV
// transposes every W_OV (the deliberately wrong variant).
function reference(config, tensors, { wrongOV = false } = {}) {
  const { layers: L, heads: H, dModel: C } = config, KH = config.kvHeads ?? H, hd = config.headDim ?? C / H;
  const layerNorm = config.normType === 'layernorm';
  const heads = [];
  for (let l = 0; l < L; l++) {
    const t = (n) => tensors.get(`dec.${l}.self.${n}`).data;
    const g = t('ln.w');
    // x W with W (C, cols): the stored (cols, C) transposed, the norm weight folded in, centred with LayerNorm
    const read = (stored, cols) => {
      const w = new Float64Array(C * cols);
      for (let c = 0; c < C; c++) for (let j = 0; j < cols; j++) w[c * cols + j] = g[c] * stored[j * C + c];
      if (layerNorm)
        for (let j = 0; j < cols; j++) {
          let mean = 0;
          for (let c = 0; c < C; c++) mean += w[c * cols + j] / C;
          for (let c = 0; c < C; c++) w[c * cols + j] -= mean;
        }
      return w;
    };
    const A = H * hd, wq = read(t('wq'), A), wk = read(t('wk'), KH * hd), wv = read(t('wv'), KH * hd);
    const wo = transpose(Float64Array.from(t('wo')), C, A); // (A, C)
    if (layerNorm)
      for (let a = 0; a < A; a++) {
        let mean = 0;
        for (let c = 0; c < C; c++) mean += wo[a * C + c] / C;
        for (let c = 0; c < C; c++) wo[a * C + c] -= mean;
      }
    const cols = (w, width, at) => Float64Array.from({ length: C * hd }, (_, i) => w[Math.floor(i / hd) * width + at + (i % hd)]);
    for (let h = 0; h < H; h++) {
      const kv = Math.floor(h / (H / KH)) * hd;
      const Q = cols(wq, A, h * hd), K = cols(wk, KH * hd, kv), V = cols(wv, KH * hd, kv);
      const O = wo.slice(h * hd * C, (h + 1) * hd * C);
      const qk = mul(Q, transpose(K, C, hd), C, hd, C);
      let ov = mul(V, O, C, hd, C);
      if (wrongOV) ov = transpose(ov, C, C);
      heads.push({ qk, qkT: transpose(qk, C, C), ov, nqk: frob(qk), nov: frob(ov) });
    }
  }
  const out = { q: new Float64Array(L * H * L * H), k: new Float64Array(L * H * L * H), v: new Float64Array(L * H * L * H) };
  for (let l2 = 1; l2 < L; l2++)
    for (let h2 = 0; h2 < H; h2++)
      for (let l1 = 0; l1 < l2; l1++)
        for (let h1 = 0; h1 < H; h1++) {
          const e = heads[l1 * H + h1], later = heads[l2 * H + h2], at = ((l2 * H + h2) * L + l1) * H + h1;
          out.q[at] = frob(mul(e.ov, later.qk, C, C, C)) / (e.nov * later.nqk);
          out.k[at] = frob(mul(e.ov, later.qkT, C, C, C)) / (e.nov * later.nqk);
          out.v[at] = frob(mul(e.ov, later.ov, C, C, C)) / (e.nov * later.nov);
        }
  return out;
}

const err = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]) / (1 + Math.abs(b[i]))), 0);

const CASES = [
  { dModel: 16, heads: 4, layers: 3, block: 'classic' },
  { dModel: 16, heads: 4, layers: 3, block: 'llama' },
  { dModel: 24, heads: 4, layers: 3, block: 'llama', kvHeads: 2 },
  { dModel: 16, heads: 4, layers: 2, block: 'llama', kvHeads: 1 },
  { dModel: 16, heads: 2, layers: 2, block: 'llama', headDim: 12 },
  { dModel: 96, heads: 2, layers: 2, block: 'classic' }, // C > 64: the product's chunks of the C axis
];

for (const { name, lib } of builds) {
  test(`compositionScores [${name}]: a float64 reference from the full dModel x dModel matrices`, () => {
    for (const [i, cfg] of CASES.entries()) {
      const { model, tensors } = randomModel(lib, cfg, 11 + i);
      const got = model.compositionScores();
      const { layers: L, heads: H } = model.config;
      const ref = reference(model.config, tensors), wrong = reference(model.config, tensors, { wrongOV: true });
      let worst = 0, wrongMiss = 0;
      for (const mode of ['q', 'k', 'v']) {
        assert.deepEqual(got[mode].shape, [L, H, L, H]);
        assert.ok(got[mode].data instanceof Float32Array);
        const e = err(got[mode].data, ref[mode]);
        worst = Math.max(worst, e);
        wrongMiss = Math.max(wrongMiss, err(got[mode].data, wrong[mode]));
        assert.ok(e <= TOL.composition, `${JSON.stringify(cfg)} ${mode}: error ${e} > ${TOL.composition}`);
        // 0 where the earlier head is not earlier; scores of a later head strictly inside (0, 1]
        for (let l2 = 0; l2 < L; l2++)
          for (let l1 = 0; l1 < L; l1++)
            for (let h2 = 0; h2 < H; h2++)
              for (let h1 = 0; h1 < H; h1++) {
                const x = got[mode].data[((l2 * H + h2) * L + l1) * H + h1];
                if (l1 >= l2) assert.equal(x, 0, `${mode}[${l2}, ${h2}, ${l1}, ${h1}]`);
                else assert.ok(x > 0 && x <= 1 + 1e-6, `${mode}[${l2}, ${h2}, ${l1}, ${h1}] = ${x}`);
              }
      }
      // the wrong variant (W_OV transposed) differs from the right one by far more than the tolerance
      assert.ok(wrongMiss > 100 * TOL.composition, `${JSON.stringify(cfg)}: the wrong reference is only ${wrongMiss} away`);
      console.log(`# ${JSON.stringify(cfg)}: max error ${worst.toExponential(2)} (tolerance ${TOL.composition}); the W_OV-transposed reference misses by ${wrongMiss.toFixed(3)}`);
      model.dispose();
    }
  });

  test(`compositionScores [${name}]: Q and K composition differ, and the scores do not depend on a head's scale`, () => {
    const { model, tensors } = randomModel(lib, { dModel: 16, heads: 4, layers: 2, block: 'llama' }, 3);
    const a = model.compositionScores();
    let qk = 0;
    for (let i = 0; i < a.q.data.length; i++) qk = Math.max(qk, Math.abs(a.q.data[i] - a.k.data[i]));
    assert.ok(qk > 0.01, `q and k agree to ${qk}: the transpose of W_QK is not taken`);
    // doubling layer 0's W_V (and so every W_OV of layer 0) leaves every score as it was
    const { meta } = readSafetensors(model.save());
    const wv = tensors.get('dec.0.self.wv').data;
    for (let i = 0; i < wv.length; i++) wv[i] *= 2;
    const scaled = lib.loadModel(writeSafetensors(meta, tensors));
    const b = scaled.compositionScores();
    let e = 0;
    for (const mode of ['q', 'k', 'v']) e = Math.max(e, err(b[mode].data, a[mode].data));
    console.log(`# scale invariance: max change ${e.toExponential(2)}`);
    assert.ok(e <= TOL.composition, `scaling W_V changed a score by ${e}`);
    model.dispose(), scaled.dispose();
  });

  test(`compositionScores [${name}]: bad models are Errors naming why, and the model stays usable`, () => {
    const linear = lib.createModel({ vocab: 9, dModel: 16, heads: 4, layers: 2, maxLen: 8, attention: 'linear:elu+1' });
    expectError(() => linear.compositionScores(), /softmax attention in every layer.*layer 0's attention is "linear:elu\+1"/);
    assert.equal(linear.forward([1, 2, 3]).logits.length, 27); // still usable
    linear.dispose();
    const mixed = lib.createModel({ vocab: 9, dModel: 16, heads: 4, layers: 2, maxLen: 8,
      layerForms: [{ attention: 'softmax' }, { attention: 'gated-delta' }] });
    expectError(() => mixed.compositionScores(), /layer 1's attention is "gated-delta"/);
    mixed.dispose();
    const post = lib.createModel({ vocab: 9, dModel: 16, heads: 4, layers: 2, maxLen: 8, norm: 'post' });
    expectError(() => post.compositionScores(), /pre-norm model/);
    post.dispose();
    const encdec = lib.createModel({ vocab: 9, dModel: 16, heads: 4, layers: 2, maxLen: 8, arch: 'encoder-decoder' });
    expectError(() => encdec.compositionScores(), /decoder-only.*encoder-decoder/);
    encdec.dispose();
    const gone = lib.createModel({ vocab: 9, dModel: 16, heads: 4, layers: 2, maxLen: 8 });
    gone.dispose();
    expectError(() => gone.compositionScores(), /compositionScores: this model was disposed/);
  });
}
