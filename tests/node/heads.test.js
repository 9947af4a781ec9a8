// heads.test.js: what each head does (lab/heads.js) and the repeat task. The scores of hand-made
// weights are what their definitions say; on a model's weights they equal a float64 computation
// written here apart from heads.js; the repeat task lays out k symbols twice at a varying offset;
// and a 2-layer model with rotary positions builds a previous-token head and an induction head on it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds } from './helpers.js';
import { jumpBack, nameHead, phrasePeriod, probeTokens, scoreHead, scoreHeads } from '../../lab/heads.js';
import { MODEL, SETUP, formInduction, formedAt } from '../../lab/induction.js';

const shifted = (T, offset) => { // row i puts all its weight on column i - offset (or 0)
  const w = new Float32Array(T * T);
  for (let i = 0; i < T; i++) w[i * T + Math.max(0, i - offset)] = 1;
  return w;
};

test('heads: hand-made weights score as their definitions say', () => {
  const tokens = probeTokens(50, 10, 3); // 10 tokens, then the same 10
  const T = tokens.length;
  const prev = scoreHead(shifted(T, 1), tokens);
  assert.ok(Math.abs(prev['previous token'] - 1) < 1e-12);
  assert.equal(nameHead(prev).name, 'previous token');
  const ind = scoreHead(shifted(T, 9), tokens); // row i reads i - 9 = (i - 10) + 1: the token after the earlier one
  const repeats = new Set(tokens.slice(0, 10)).size === 10 ? 10 : null;
  assert.equal(ind.repeats, repeats ?? ind.repeats);
  assert.ok(Math.abs(ind.induction - 1) < 1e-12, `induction ${ind.induction}`);
  assert.equal(nameHead(ind).name, 'induction');
  const dup = scoreHead(shifted(T, 10), tokens);
  assert.ok(Math.abs(dup['duplicate token'] - 1) < 1e-12);
  const sink = scoreHead(shifted(T, T), tokens); // everything on column 0
  assert.ok(Math.abs(sink['first token'] - 1) < 1e-12);
  const uniform = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++) uniform[i * T + j] = 1 / (i + 1);
  assert.equal(nameHead(scoreHead(uniform, tokens)).name, 'spread');
});

test('heads: scores of a model weights equal a float64 computation written apart', () => { // shares of each row's |weight|
  const { lib } = builds[0];
  const m = lib.createModel({ vocab: 30, dModel: 16, heads: 2, layers: 2, maxLen: 32, block: 'llama', seed: 9 });
  m.trainStep({ task: 'repeat', length: 8, symbols: 29, lr: 0.01 });
  const tokens = probeTokens(30, 12, 4);
  const { attention } = m.forward(tokens);
  const T = tokens.length;
  for (const h of scoreHeads(attention, tokens)) {
    const w = attention[h.layer][h.head];
    const share = (i, j) => { let s = 0; for (let c = 0; c <= i; c++) s += Math.abs(w[i * T + c]); return Math.abs(w[i * T + j]) / s; };
    let ind = 0, n = 0, prev = 0;
    for (let i = 1; i < T; i++) prev += share(i, i - 1);
    for (let i = 12; i < T; i++) ind += share(i, (i - 12) + 1), n++;
    assert.ok(Math.abs(h.scores['previous token'] - prev / (T - 1)) < 1e-9);
    assert.ok(Math.abs(h.scores.induction - ind / n) < 1e-9, `L${h.layer}H${h.head}: ${h.scores.induction} vs ${ind / n}`);
  }
  m.dispose();
});

for (const { name, lib } of builds) {
  test(`repeat task [${name}]: k symbols twice, k varying, only the second copy scored`, () => {
    const m = lib.createModel({ vocab: 25, dModel: 16, heads: 2, layers: 1, maxLen: 24, seed: 2 });
    const ks = new Set();
    for (let seed = 1; seed <= 40; seed++) {
      const ex = m.example({ task: 'repeat', length: 12, symbols: 24, seed });
      const seq = [...ex.target];
      const k = seq.length / 2; // the real tokens: the run twice (the padding carries no loss)
      ks.add(k);
      assert.ok(k >= 6 && k <= 12, `k = ${k}`);
      assert.deepEqual(seq.slice(0, k), seq.slice(k, 2 * k), 'the run, then the same run');
      assert.equal(new Set(seq.slice(0, k)).size, k, 'distinct symbols when there are enough');
    }
    assert.ok(ks.size >= 5, `the offset varies: ${[...ks]}`);
    m.dispose();
  });
}

test('induction heads form: a previous-token head in layer 1, an induction head in layer 2', async (t) => {
  const { lib } = builds[0];
  const m = lib.createModel({ vocab: SETUP.symbols + 1, maxLen: 2 * SETUP.length, ...MODEL, attention: 'softmax', seed: 1 });
  const points = await formInduction(m, { steps: 1000, every: 100 });
  const at = formedAt(points, 0.5), last = points.at(-1);
  t.diagnostic(`formed at step ${at}; induction scores at the end ${last.scores.map((x) => x.toFixed(2)).join(', ')}; loss ${last.loss.toFixed(3)}`);
  assert.ok(at !== null && Math.max(...last.scores) > 0.8, 'measured 0.97 at step 1000, formed at step 400');
  assert.ok(Math.max(...points[0].scores) < 0.3);
  m.dispose();
});

test('the induction panel\'s table of forms is docs/real-text.md\'s (form, formed, steps, best score)', () => {
  const readme = readFileSync(new URL('../../docs/real-text.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Induction heads: which forms build one'));
  const fromReadme = section.split('\n').filter((l) => /^\| [a-z]/.test(l) && !/^\| form /.test(l))
    .slice(0, 12).map((l) => l.split('|').slice(1, 5).map((c) => c.trim().replace(/\*\*/g, '')));
  const html = readFileSync(new URL('../../web/index.html', import.meta.url), 'utf8');
  const table = html.slice(html.indexOf('id="iforms"'), html.indexOf('</table>', html.indexOf('id="iforms"')));
  const fromPage = [...table.matchAll(/<tr><td>(.*?)<\/td><\/tr>/g)].map((m) => m[1].split('</td><td>'));
  assert.equal(fromPage.length, 12);
  assert.deepEqual(fromPage, fromReadme);
});

test('jumpBack: the share of each second-copy row on the character after the same place in the first copy', () => {
  const text = [...'the old lamp. the old lamp'];
  assert.equal(phrasePeriod(text), 14);
  assert.equal(phrasePeriod([...'the old lamp. the old lamb']), 0, 'not the same phrase');
  assert.equal(phrasePeriod([...'the old lamp  the old lamp']), 0, 'no ". " between');
  assert.equal(phrasePeriod([...'ab']), 0);
  const T = text.length, P = 14;
  const build = (f) => {
    const w = new Float32Array(T * T);
    for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++) w[i * T + j] = f(i, j);
    return w;
  };
  // a perfect induction head on the second copy (uniform before it) scores 1; one a step off scores 0
  assert.equal(jumpBack(build((i, j) => (i < P ? 1 : j === i - P + 1 ? 1 : 0)), T, P), 1);
  assert.equal(jumpBack(build((i, j) => (i < P ? 1 : j === i - P ? 1 : 0)), T, P), 0);
  // a uniform head: the mean of 1 / (i + 1) over the second copy, in float64
  let want = 0;
  for (let i = P; i < T; i++) want += 1 / (i + 1);
  assert.ok(Math.abs(jumpBack(build(() => 0.5), T, P) - want / (T - P)) < 1e-12);
  // signed, unnormalised weights count by their share of the row's absolute weight
  const signed = build((i, j) => (j === i - P + 1 ? -3 : 1));
  let wantSigned = 0;
  for (let i = P; i < T; i++) wantSigned += 3 / (3 + i);
  assert.ok(Math.abs(jumpBack(signed, T, P) - wantSigned / (T - P)) < 1e-6);
  assert.equal(jumpBack(build(() => 1), T, 0), 0, 'no period, no score');
});
