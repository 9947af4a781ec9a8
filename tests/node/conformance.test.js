// conformance.test.js: every form of the registry (lib.forms), one loop, no form named here (the
// per-form code is tests/node/reference.js): forward vs a float64 reference on both builds;
// finite-difference gradients of every input and trainable tensor, sensitive to a 10% error in
// each; bit-identical outputs and gradients at 1, 2 and 4 threads; step vs the causal forward;
// the model checkpoint round trip; option errors; the PyTorch script's coverage.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, rand, relMaxErr, stepThrough } from './helpers.js';
import { REFERENCES } from './reference.js';
import { loadAttention } from '../../wasm/index.js';

const lib = builds[0].lib;
const forms = lib.forms;
const threaded = await loadAttention({ threads: 4 });
const TOL_FWD = 1e-5, TOL_STEP = 1e-5, TOL_FD = 0.03;

// seeded integer stream (xorshift32)
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32; };
}
const pick = (r, a) => a[Math.floor(r() * a.length)];
const irange = (r, lo, hi) => lo + Math.floor(r() * (hi - lo + 1));

const bitSame = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

/** name -> Float32Array of each tensor, from a layer's params. */
function tensorMap(layer, params = layer.params) {
  const out = {};
  let o = 0;
  for (const t of layer.tensors) out[t.name] = params.slice(o, (o += t.size));
  return out;
}

// Random valid values for a form's options (generic, from the option's declaration); an int
// without a default (derived by the form) stays unset.
function randomOptions(form, r) {
  const out = {};
  for (const o of form.options) {
    if (r() < 0.5) continue;
    if (o.kind === 'int' && o.default !== null) out[o.name] = irange(r, o.min, Math.min(o.max, 7));
    else if (o.kind === 'bool') out[o.name] = r() < 0.5;
    else if (o.kind === 'choice') out[o.name] = o.above !== undefined && r() < 0.5 ? o.above + (o.below - o.above) * (0.5 + 0.45 * r()) : pick(r, o.words);
    else if (o.kind === 'list') out[o.name] = o.words.filter(() => r() < 0.5).concat(o.words.length ? [] : []);
    if (Array.isArray(out[o.name]) && !out[o.name].length) out[o.name] = [pick(r, o.words)];
  }
  return out;
}

// A layer with these options, or (when the form refuses this combination of random options)
// with the ones it takes one by one; returns [layer, refused option names].
function makeLayer(L, name, shape, options) {
  try {
    return [L.attentionLayer(name, { ...shape, attentionOptions: options }), []];
  } catch (e) {
    const kept = {}, refused = [];
    for (const [k, val] of Object.entries(options)) {
      try {
        L.attentionLayer(name, { ...shape, attentionOptions: { ...kept, [k]: val } }).dispose();
        kept[k] = val;
      } catch {
        refused.push(k);
      }
    }
    return [L.attentionLayer(name, { ...shape, attentionOptions: kept }), refused];
  }
}

// Adds seeded noise to every parameter (so biases are not all zero and results depend on them).
function perturbParams(layer, seed, scale = 0.1) {
  const p = layer.params;
  if (!p.length) return p;
  const noise = rand(p.length, seed, -scale, scale);
  const out = p.map((x, i) => x + noise[i]);
  layer.setParams(out);
  return out;
}

function reference(form, layer, data, options) {
  const ref = REFERENCES[form.name];
  if (!ref) throw new Error(`add a float64 reference for "${form.name}" to tests/node/reference.js`);
  return ref({ ...data, n: layer.n, m: layer.m, d: layer.d, heads: layer.heads, causal: layer.causal,
    options: options ?? layer.options, params: tensorMap(layer), maxLen: layer.maxLen });
}

const causalModes = (form) => [...(form.nonCausal ? [false] : []), ...(form.causal ? [true] : [])];

for (const [fi, form] of forms.entries()) {
  const name = form.name;

  // 1. forward vs the float64 reference on both builds
  test(`${name}: forward matches the float64 reference (both builds, n = 1, heads, causal/not, m != n when cross, options)`, (t) => {
    if (!REFERENCES[name]) assert.fail(`add a float64 reference for "${name}" to tests/node/reference.js`);
    let worst = 0, cases = 0;
    const refusedAll = new Set();
    for (const { name: build, lib: L } of builds) {
      const r = rng(1000 + 31 * fi);
      for (let c = 0; c < 10; c++) {
        const heads = pick(r, [1, 2, 4]), d = heads * pick(r, [2, 4, 6]);
        const n = c === 0 ? 1 : irange(r, 1, 10);
        const causal = pick(r, causalModes(form));
        let m = n;
        if (form.cross && !causal && c % 2 === 1) do m = irange(r, 1, 11); while (m === n);
        const maxLen = Math.max(n, m) + irange(r, 0, 3);
        const seed = irange(r, 1, 1e6);
        const shape = { n, m, d, heads, causal, maxLen, seed };
        const options = c < 2 ? {} : randomOptions(form, r);
        const [layer, refused] = makeLayer(L, name, shape, options);
        refused.forEach((x) => refusedAll.add(x));
        const data = { q: rand(n * d, seed + 1), k: rand(m * d, seed + 2), v: rand(m * d, seed + 3), x: rand(n * d, seed + 4) };
        const label = `${build} n=${n} m=${m} d=${d} heads=${heads}${causal ? ' causal' : ''} options=${JSON.stringify(layer.options)}`;
        // lib.attention with the layer's seed: the initial parameters
        const opts = Object.fromEntries(Object.entries(options).filter(([k]) => !refused.includes(k)));
        const once = L.attention(name, { ...shape, ...data, attentionOptions: opts }).output;
        const want0 = reference(form, layer, data);
        const e0 = relMaxErr(once, want0);
        assert.ok(e0 <= TOL_FWD, `${label}: lib.attention vs reference: rel err ${e0} > ${TOL_FWD}`);
        // the layer with perturbed parameters
        perturbParams(layer, seed + 5);
        const got = layer.forward(data).output;
        const want = reference(form, layer, data);
        const e1 = relMaxErr(got, want);
        assert.ok(e1 <= TOL_FWD, `${label}: layer.forward vs reference: rel err ${e1} > ${TOL_FWD}`);
        worst = Math.max(worst, e0, e1);
        cases++;
        layer.dispose();
      }
    }
    t.diagnostic(`${name}: forward ${cases} cases, worst rel err ${worst.toExponential(2)} (tol ${TOL_FWD})` +
      (refusedAll.size ? `; random options refused in some combinations: ${[...refusedAll].join(', ')}` : ''));
  });

  // 2. finite-difference gradients, sensitive to a 10% error in each tensor
  test(`${name}: gradients match central differences in float32 and a 10% error in any one tensor is caught`, (t) => {
    let worst = 0, worstScaled = Infinity;
    const notes = [];
    // option sets: the defaults, each word or number of a choice, the other bool, every item of a list
    const sets = [{}];
    for (const o of form.options) {
      if (o.kind === 'choice') sets.push(...o.words.map((w) => ({ [o.name]: w })), ...(o.above !== undefined ? [{ [o.name]: (o.above + o.below) / 2 }] : []));
      if (o.kind === 'bool') sets.push({ [o.name]: !o.default });
      if (o.kind === 'list') sets.push({ [o.name]: [...o.words] });
    }
    const seen = new Set();
    for (const { name: build, lib: L } of builds)
      for (const causal of causalModes(form))
      for (const set of sets) {
        const n = 5, m = form.cross && !causal ? 4 : n, d = 8, heads = 2, seed = 77 + fi;
        const [layer] = makeLayer(L, name, { n, m, d, heads, causal, maxLen: 6, seed }, set);
        const key = `${build} ${causal} ${JSON.stringify(layer.options)}`;
        if (seen.has(key)) { layer.dispose(); continue; }
        seen.add(key);
        perturbParams(layer, seed + 9);
        const base = { q: rand(n * d, seed + 1), k: rand(m * d, seed + 2), v: rand(m * d, seed + 3), x: rand(n * d, seed + 4) };
        const dout = rand(n * d, seed + 5);
        const loss = (data) => {
          const o = layer.forward(data).output;
          let s = 0;
          for (let i = 0; i < o.length; i++) s += dout[i] * o[i];
          return s;
        };
        layer.forward(base); // some forms' backward reads the weights of a forward of the same shape
        const g = layer.backward({ ...base, dout });
        const P0 = layer.params;
        const targets = [
          { key: 'q', grad: g.dq, used: form.usesQK }, { key: 'k', grad: g.dk, used: form.usesQK },
          { key: 'v', grad: g.dv, used: true }, ...(form.usesX ? [{ key: 'x', grad: g.dx, used: true }] : []),
        ];
        let off = 0;
        for (const tn of layer.tensors) {
          if (tn.trainable) targets.push({ key: tn.name, param: true, off, size: tn.size, grad: g.dparams.slice(off, off + tn.size), used: true });
          off += tn.size;
        }
        for (const tg of targets) {
          const label = `${build}${causal ? ' causal' : ''} ${JSON.stringify(layer.options)} d${tg.key}`;
          const x0 = tg.param ? P0.slice(tg.off, tg.off + tg.size) : base[tg.key];
          const at = (xs) => {
            if (!tg.param) return loss({ ...base, [tg.key]: xs });
            const p = P0.slice();
            p.set(xs, tg.off);
            layer.setParams(p);
            const f = loss(base);
            layer.setParams(P0);
            return f;
          };
          const gnorm = Math.hypot(...tg.grad);
          // directions: the analytic gradient itself, then two random unit directions
          const dirs = [];
          if (gnorm > 0) dirs.push(Float64Array.from(tg.grad, (z) => z / gnorm));
          for (let s = 0; s < 2; s++) {
            const u = Float64Array.from(rand(x0.length, seed * 13 + s + 100 * off));
            const un = Math.hypot(...u);
            dirs.push(u.map((z) => z / un));
          }
          const eps = 1e-2; // a step of 1e-2 along a unit direction
          const fd = [], an = [];
          for (const u of dirs) {
            const plus = Float32Array.from(x0, (z, i) => z + eps * u[i]), minus = Float32Array.from(x0, (z, i) => z - eps * u[i]);
            // f(x + h) - f(x - h) against g . (the displacement actually taken in float32)
            let dot = 0;
            for (let i = 0; i < u.length; i++) dot += tg.grad[i] * (plus[i] - minus[i]);
            fd.push(at(plus) - at(minus));
            an.push(dot);
          }
          const norm = (a) => Math.hypot(...a);
          const errOf = (scale) => norm(fd.map((z, i) => z - scale * an[i])) / Math.max(norm(an) * scale, norm(fd), 1e-12);
          if (!tg.used || gnorm === 0) {
            // a tensor the form does not read (or cannot feel here): both sides are zero
            const fdMax = Math.max(...fd.map(Math.abs));
            assert.ok(gnorm === 0 && fdMax <= 1e-6 * Math.max(1, norm(an)), `${name} ${label}: the gradient should be zero (|analytic| ${gnorm}, |fd| ${fdMax})`);
            if (tg.used) notes.push(`${label} zero`);
            continue;
          }
          const e = errOf(1), es = errOf(1.1);
          worst = Math.max(worst, e), worstScaled = Math.min(worstScaled, es);
          assert.ok(e <= TOL_FD, `${name} ${label}: analytic vs central differences: rel err ${e.toExponential(3)} > ${TOL_FD} (fd ${fd.map((z) => z.toExponential(4))}, analytic ${an.map((z) => z.toExponential(4))})`);
          assert.ok(es > TOL_FD, `${name} ${label}: the check does not catch the gradient scaled by 1.1 (rel err ${es.toExponential(3)} <= ${TOL_FD})`);
        }
        layer.dispose();
      }
    t.diagnostic(`${name}: gradients (${seen.size} layers) worst rel err ${worst.toExponential(2)}, with one tensor x1.1 the smallest ${worstScaled.toExponential(2)} (tol ${TOL_FD})` +
      (notes.length ? `; zero gradients: ${notes.join(', ')}` : ''));
  });

  // 3. bit-identical outputs and gradients at 1, 2 and 4 threads
  test(`${name}: outputs and gradients are bit-identical at 1, 2 and 4 threads`, (t) => {
    assert.equal(threaded.threads, 4, threaded.threadsReason ?? 'threads: 4');
    const n = 300, d = 32, heads = 4, seed = 500 + fi;
    for (const causal of causalModes(form)) {
      const m = form.cross && !causal ? 280 : n;
      const layer = threaded.attentionLayer(name, { n, m, d, heads, causal, maxLen: Math.max(n, m), seed });
      perturbParams(layer, seed + 1);
      const data = { q: rand(n * d, seed + 2), k: rand(m * d, seed + 3), v: rand(m * d, seed + 4), x: rand(n * d, seed + 5) };
      const dout = rand(n * d, seed + 6);
      const runs = [1, 2, 4, 1].map((th) => {
        assert.equal(threaded.setThreads(th), th);
        const o = layer.forward(data).output;
        const g = layer.backward({ ...data, dout });
        return { o, ...g };
      });
      threaded.setThreads(4);
      for (let i = 1; i < runs.length; i++)
        for (const key of ['o', 'dq', 'dk', 'dv', 'dx', 'dparams'])
          assert.ok(bitSame(runs[i][key], runs[0][key]),
            `${name}${causal ? ' causal' : ''}: ${key} at ${[1, 2, 4, 1][i]} threads differs from 1 thread (max diff ${relMaxErr(runs[i][key], runs[0][key]).toExponential(2)} rel)`);
      layer.dispose();
    }
    t.diagnostic(`${name}: threads 1/2/4 bit-identical (n=${n}, d=${d}, heads=${heads}; ${causalModes(form).length} mode(s)); work items ${threaded.threadWorkItems?.() ?? '?'}`);
  });

  // 4. step vs the causal forward
  if (form.step && form.causal)
    test(`${name}: step-by-step generation equals the full causal forward`, (t) => {
      let worst = 0;
      for (const { name: build, lib: L } of builds)
        for (const [n, heads] of [[1, 1], [9, 2], [12, 4]]) {
          const d = 8, seed = 900 + fi + n;
          const layer = L.attentionLayer(name, { n, d, heads, causal: true, maxLen: n + 2, seed });
          perturbParams(layer, seed + 1);
          const data = { q: rand(n * d, seed + 2), k: rand(n * d, seed + 3), v: rand(n * d, seed + 4), x: rand(n * d, seed + 5) };
          const full = layer.forward(data).output;
          const steps = stepThrough(layer, data, n, d);
          const e = relMaxErr(steps, full);
          worst = Math.max(worst, e);
          assert.ok(e <= TOL_STEP, `${name} ${build} n=${n} heads=${heads}: step vs forward rel err ${e} > ${TOL_STEP}`);
          layer.dispose();
        }
      t.diagnostic(`${name}: step vs causal forward worst rel err ${worst.toExponential(2)} (tol ${TOL_STEP})`);
    });

  // 5. the model checkpoint round trip
  const arch = form.causal ? 'decoder' : form.decoderForm ? 'encoder-decoder' : null;
  const modelConfig = (extra = {}) => ({ attention: name, vocab: 12, dModel: 16, heads: 2, layers: 1, maxLen: 16, arch, ...extra });
  test(`${name}: a model saves and loads with the same config and logits`, (t) => {
    if (!arch) return t.skip(`"${name}" can serve no model (no causal form and no decoderForm)`);
    for (const { name: build, lib: L } of builds) {
      const m = L.createModel(modelConfig({ seed: 3 + fi }));
      const tokens = [1, 5, 3, 7, 2, 0, 11, 4];
      const opts = arch === 'encoder-decoder' ? { source: [2, 4, 6, 8, 10, 1, 3] } : {};
      const a = m.forward(tokens, opts).logits;
      const bytes = m.save();
      const m2 = L.loadModel(bytes);
      assert.deepEqual(m2.config, m.config, `${build}: config after the round trip`);
      const b = m2.forward(tokens, opts).logits;
      assert.ok(bitSame(a, b), `${build}: logits after the round trip differ (rel ${relMaxErr(b, a)})`);
      m.dispose(), m2.dispose();
    }
    t.diagnostic(`${name}: model (${arch}) round trip: same config and bit-identical logits on both builds`);
  });

  // 6. bad option values and foreign options
  test(`${name}: bad option values and other forms' options are Errors naming attentionOptions.<option>`, (t) => {
    const n = 4, d = 8;
    // a form with no non-causal form is asked causally: the option, not the mode, must be what fails
    const shape = { q: rand(n * d, 1), k: rand(n * d, 2), v: rand(n * d, 3), n, d, heads: 2, maxLen: 8, causal: !form.nonCausal };
    const expectNamed = (fn, opt, what) => {
      let err = null;
      try {
        fn();
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof Error, `${name}: ${what}: expected an Error naming attentionOptions.${opt}, nothing was thrown`);
      assert.ok(err.message.includes(`attentionOptions.${opt}`), `${name}: ${what}: the Error does not name attentionOptions.${opt}: ${err.message}`);
    };
    let count = 0;
    const badValues = (o) => {
      if (o.kind === 'int') return [o.min - 1, o.max + 1, 1.5, 'x'];
      if (o.kind === 'bool') return ['yes', 1];
      if (o.kind === 'choice') return ['no-such-word', ...(o.above !== undefined ? [o.above, o.below, o.above - 1, o.below + 1] : [])];
      if (o.kind === 'list') return [[], ['nope'], [o.words[0], o.words[0]]];
      return [];
    };
    const check = (opt, value) => {
      const what = `attentionOptions.${opt} = ${JSON.stringify(value)}`;
      expectNamed(() => lib.attention(name, { ...shape, attentionOptions: { [opt]: value } }), opt, `lib.attention ${what}`);
      if (arch) expectNamed(() => lib.createModel(modelConfig({ attentionOptions: { [opt]: value } })), opt, `createModel ${what}`);
      count++;
    };
    for (const o of form.options) for (const value of badValues(o)) check(o.name, value);
    const mine = new Set(form.options.map((o) => o.name));
    const foreign = forms.flatMap((f) => f.options).find((o) => !mine.has(o.name));
    if (foreign) check(foreign.name, foreign.default ?? foreign.min ?? foreign.words?.[0]);
    t.diagnostic(`${name}: ${count} bad or foreign option values refused, each naming its option${arch ? ' (lib.attention and createModel)' : ' (lib.attention; no model)'}`);
  });
}

// 7. the PyTorch script knows every form
// The PyTorch round trip is of models (tests/node/torch.test.js), so a form no model can use (no
// causal form and no decoderForm) needs no module there.
test('scripts/torch_model.py handles every form of the registry that a model can use', (t) => {
  const py = readFileSync(new URL('../../scripts/torch_model.py', import.meta.url), 'utf8');
  const quoted = (s) => py.includes(`'${s}'`) || py.includes(`"${s}"`);
  const missing = [];
  const usable = forms.filter((f) => f.causal || f.decoderForm);
  for (const form of usable) {
    const name = form.name;
    // its exact name, or a family prefix the script dispatches on ("<prefix>:" and
    // form[len(prefix) + 1:]) with the rest of the name in one of its tables
    const i = name.indexOf(':');
    const prefixed = i > 0 && py.includes(`startswith('${name.slice(0, i + 1)}')`) && py.includes(`form[${i + 1}:]`) && quoted(name.slice(i + 1));
    if (!quoted(name) && !prefixed) missing.push(name);
  }
  assert.ok(usable.length > 0);
  assert.deepEqual(missing, [], missing.map((x) => `add "${x}" to scripts/torch_model.py`).join('; '));
  t.diagnostic(`torch_model.py covers the ${usable.length} forms a model can use (of ${forms.length})`);
});
