// features.test.js: lab/features.js, the feature browser's measures (issue 47, item 4), on the
// shipped sub-word model and an SAE trained on the project's corpus: the study's densities, maxima,
// top contexts and histograms agree with the SAE's own encode() row by row; its held-out FVU with a
// float64 computation from decode(); each feature's decoder direction (dec.w) with decode(e_j) - decode(0); the
// promoted tokens with the classifier read by hand; and a continuation with a zero add is the plain one.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadAttention } from '../../wasm/index.js';
import { readSafetensors } from '../../wasm/safetensors.js';
import { BINS, activations, continueGreedy, featureDirections, studyFeatures } from '../../lab/features.js';
import { fvu64 } from './sae-reference.js';

const root = new URL('../../', import.meta.url);
const lib = await loadAttention();
const bytes = new Uint8Array(readFileSync(new URL('web/models/fortunes-bpe.safetensors', root)));
const model = lib.loadModel(bytes, { training: false });
const tok = lib.loadTokenizer(JSON.parse(readFileSync(new URL('web/models/fortunes-bpe.tokenizer.json', root), 'utf8')));
const st = readSafetensors(bytes);
const corpus = readFileSync(new URL('data/chars.txt', root), 'utf8');
const held = readFileSync(new URL('web/models/stream-text.txt', root), 'utf8');
const hook = 'blocks.1.hook_resid_post';

test('the study agrees with the SAE read directly', async () => {
  const cut = corpus.indexOf(held.slice(0, 200));
  assert.ok(cut > 0, 'the held-out text is the corpus\'s end');
  const sae = await lib.trainSAE({ model, hook, ids: tok.encode(corpus.slice(0, cut)), dSae: 192, k: 8, steps: 40, batch: 256, lr: 3e-3 });
  const ids = tok.encode(held).slice(0, 400);
  const unembed = { weight: st.tensors.get('out.w').data, gain: st.tensors.get('lnf.w').data, limit: tok.vocabSize };
  const study = studyFeatures({ model, sae, hook, ids, unembed });
  const { dSae, dIn, k } = sae.config;
  const { data, n } = activations(model, hook, ids);
  assert.equal(n, ids.length);
  const code = sae.encode(data);
  // per feature: every row's activation, from encode
  const act = Array.from({ length: dSae }, () => new Float64Array(n));
  for (let r = 0; r < n; r++) for (let t = 0; t < k; t++) if (code.values[r * k + t] > 0) act[code.indices[r * k + t]][r] = code.values[r * k + t];
  let alive = 0;
  for (const f of study.features) {
    const a = act[f.id];
    const on = a.filter((x) => x > 0);
    assert.equal(f.fires, on.length);
    assert.equal(f.density, on.length / n);
    if (!on.length) continue;
    alive++;
    assert.equal(f.max, Math.max(...on));
    assert.equal(f.hist.length, BINS);
    assert.equal(f.hist.reduce((s, x) => s + x, 0), on.length);
    const want = [...on].sort((x, y) => y - x).slice(0, f.top.length);
    assert.deepEqual(f.top.map((c) => c.value), want);
    for (const c of f.top) assert.equal(a[c.pos], c.value);
  }
  assert.ok(alive > dSae / 2, `${alive} of ${dSae} features fire on held-out text`);
  // FVU in float64 from a dense z
  const z = new Float32Array(n * dSae);
  for (let j = 0; j < dSae; j++) for (let r = 0; r < n; r++) z[r * dSae + j] = act[j][r];
  const want = fvu64(data, sae.decode(z), n, dIn);
  assert.ok(Math.abs(study.fvu - want) < 1e-9, `${study.fvu} against ${want}`);
  assert.ok(study.fvu < 0.5, `held-out FVU ${study.fvu} after 40 steps`);
  // directions: dec.w's row j is what the decoder adds for feature j, decode(e_j) - decode(0)
  const dirs = featureDirections(sae);
  const eye = new Float32Array(dSae * dSae);
  for (let j = 0; j < dSae; j++) eye[j * dSae + j] = 1;
  const [rows, bias] = [sae.decode(eye), sae.decode(new Float32Array(dSae))];
  for (let x = 0; x < dirs.length; x++) {
    const want = rows[x] - bias[x % dIn];
    assert.ok(Math.abs(dirs[x] - want) < 1e-5, `direction ${Math.floor(x / dIn)}: ${dirs[x]} against ${want}`);
  }
  // promoted tokens of one feature, by hand
  const f = study.features.find((g) => g.fires > 0);
  const V = tok.vocabSize, W = st.tensors.get('out.w').data, g = st.tensors.get('lnf.w').data;
  const logit = (v) => { let s = 0; for (let i = 0; i < dIn; i++) s += W[v * dIn + i] * g[i] * dirs[f.id * dIn + i]; return s; };
  const best = Array.from({ length: V }, (_, v) => v).sort((a, b) => logit(b) - logit(a)).slice(0, 5);
  assert.deepEqual(f.promoted.slice(0, 5).map((p) => p.token), best);
  sae.free();
});

test('a continuation with nothing added is the plain one; a large add changes it', () => {
  const ids = tok.encode('Fold the paper in half');
  const plain = continueGreedy({ model, ids, tokens: 8, limit: tok.vocabSize });
  assert.equal(plain.length, 8);
  const vector = new Float32Array(model.config.dModel);
  vector[3] = 1;
  const zero = continueGreedy({ model, ids, tokens: 8, limit: tok.vocabSize, hooks: () => ({ add: [{ name: hook, vector, scale: 0 }] }) });
  assert.deepEqual(zero, plain);
  const big = continueGreedy({ model, ids, tokens: 8, limit: tok.vocabSize, hooks: () => ({ add: [{ name: hook, vector, scale: 200 }] }) });
  assert.notDeepEqual(big, plain);
  // the greedy step is the forward pass's argmax
  const { logits } = model.forward(Int32Array.from(ids));
  const V = model.config.vocab, row = logits.subarray((ids.length - 1) * V, ids.length * V);
  let arg = 1;
  for (let v = 1; v < tok.vocabSize; v++) if (row[v] > row[arg]) arg = v;
  assert.equal(plain[0], arg);
});
