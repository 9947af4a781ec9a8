// state.test.js: the URL state made from the panels' props (web/panels.js, web/state.js): one prop per
// key, today's keys and values parse as before, every state written reads back the same, bad values
// take their defaults, and the invariants (heads divide d, tmin <= tmax) hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PANELS, PROPS } from '../../web/panels.js';
import { defaultsOf, parseState, stateToSearch } from '../../web/state.js';
import { loadAttention } from '../../wasm/index.js';

// props whose values the library lists (the positional encodings) take them as the page does
const lib = await loadAttention();
for (const p of PROPS) if (p.fromLib) Object.assign(p, p.fromLib(lib));

const KEYS = ['form', 'input', 'text', 'n', 'd', 'heads', 'causal', 'seed', 'scale', 'ptext', 'tktext', 'ltext', 'task', 'mlen', 'msize', 'mstart', 'march',
  'mpos', 'mseed', 'mtext', 'msteps', 'mlr', 'msched', 'mpreset', 'ca', 'cb', 'ctask', 'csteps', 'ebudget', 'build', 'tmin', 'tmax', 'td', 'trounds', 'tforms', 'hub'];

test('one prop per URL key, the keys of before; panel ids unique; a labelled choice labels every value', () => {
  const names = PROPS.map((p) => p.name);
  assert.equal(new Set(names).size, names.length);
  assert.deepEqual([...names].sort(), [...KEYS].sort());
  assert.equal(new Set(PANELS.map((p) => p.id)).size, PANELS.length);
  for (const p of PROPS) {
    if (p.type === 'choice') assert.ok(p.values.includes(p.default), `${p.name}: default ${p.default} is not a value`);
    if (p.labels) assert.deepEqual(Object.keys(p.labels).sort(), p.values.map(String).sort(), `${p.name}: labels`);
  }
});

test('the positions choice is the library\'s table, in its order', () => {
  const mpos = PROPS.find((p) => p.name === 'mpos');
  assert.deepEqual(mpos.values, lib.positionals.map((p) => p.name));
  assert.deepEqual([...mpos.values].sort(), ['alibi', 'learned', 'none', 'rope', 'sinusoidal']);
});

test('values parse as before; bad ones take the default; every state reads back the same', () => {
  const d = defaultsOf(PROPS);
  assert.deepEqual(parseState('', PROPS), d);
  const s = parseState('?form=gla&input=random&n=64&d=16&heads=8&causal=1&seed=5&scale=row&build=relaxedvs&tmin=4096&tmax=16'
    + '&task=chars&mlen=32&march=llama&mpos=alibi&mlr=0.01&msched=constant&ca=delta&ctask=sort&csteps=2000&tforms=all&text=hi', PROPS);
  assert.deepEqual([s.form, s.input, s.n, s.d, s.heads, s.causal, s.seed, s.scale, s.build, s.tmin, s.tmax, s.task, s.mlen, s.march, s.mpos,
    s.mlr, s.msched, s.ca, s.ctask, s.csteps, s.tforms, s.text],
  ['gla', 'random', 64, 16, 8, true, 5, 'row', 'relaxedvs', 16, 4096, 'chars', 32, 'llama', 'alibi', 0.01, 'constant', 'delta', 'sort', 2000, 'all', 'hi']);
  const bad = parseState('?form=bad%20form!&input=x&n=129&d=7&heads=3&causal=no&seed=-1&scale=z&build=nope&td=17&mlen=33&march=x&mlr=0.5'
    + `&tforms=a%20b&ltext=${'y'.repeat(300)}`, PROPS);
  for (const k of ['form', 'input', 'n', 'd', 'heads', 'causal', 'seed', 'scale', 'build', 'td', 'mlen', 'march', 'mlr', 'tforms']) assert.equal(bad[k], d[k], k);
  assert.equal(bad.ltext.length, 200);
  assert.equal(parseState('?d=8&heads=8', PROPS).heads, 8);
  assert.equal(parseState('?d=16&heads=8', PROPS).heads, 8);
  assert.equal(parseState('?d=8&heads=4', PROPS).heads, 4);
  assert.deepEqual(parseState(stateToSearch(s, PROPS), PROPS), s);
  assert.deepEqual(parseState(stateToSearch(bad, PROPS), PROPS), bad);
});
