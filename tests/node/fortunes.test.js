// fortunes.test.js: the models that have read real text (Debian's fortunes, read where the package
// installs it; data/README.md). The document split is the trainer's; each shipped model's held-out
// bits per character (web/models/fortunes.json) are reproduced from its checkpoint; and what the
// attention-sinks claim comes to at this scale is held to the bounds measured for it (docs/real-text.md).
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { builds } from './helpers.js';
import { FORTUNES, copyBits, copyBitsBpe, fortunesDocuments, heldOutBits, heldOutBitsBpe, heldOutText } from '../../scripts/fortunes.mjs';
import { probeLetters, scoreHeads, strongestHead } from '../../lab/heads.js';
import { bpeCodec } from '../../lab/codec.js';

const why = existsSync(`${FORTUNES}/fortunes`) ? false : "Debian's fortunes is missing: run bash scripts/setup.sh as root, or apt-get install -y fortunes";
const dir = new URL('../../web/models/', import.meta.url);
const catalog = JSON.parse(readFileSync(new URL('fortunes.json', dir), 'utf8'));
// a sub-word model's tokenizer (the file its entry names), else null: it reads characters
const tokenizerOf = (lib, e) => (e.tokenizer ? lib.loadTokenizer(JSON.parse(readFileSync(new URL(e.tokenizer, dir), 'utf8'))) : null);

test('fortunes: the documents and the held-out tenth are the trainer\'s', { skip: why }, () => {
  const { train, held, files } = fortunesDocuments();
  assert.equal(files, catalog.corpus.files);
  assert.equal(train.length + held.length, catalog.corpus.documents);
  assert.equal(held.length, Math.floor(catalog.corpus.documents / 10));
  const bytes = (docs) => docs.reduce((n, d) => n + Buffer.byteLength(d, 'latin1') + 2, 0);
  assert.equal(bytes(train), catalog.corpus.trainBytes, 'the trainer printed these byte counts');
  assert.equal(bytes(held), catalog.corpus.heldBytes);
});

test('fortunes: each shipped model\'s held-out bits per character come back from its checkpoint', { skip: why }, (t) => {
  const { lib } = builds[0];
  for (const e of catalog.models) {
    const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
    for (const [k, v] of Object.entries(e.config)) assert.equal(m.config[k], v, `${e.file}: config.${k}`);
    const tok = tokenizerOf(lib, e);
    const { bits, count, accuracy } = tok ? heldOutBitsBpe(lib, m, tok, catalog.heldOutChars) : heldOutBits(lib, m, catalog.heldOutChars);
    t.diagnostic(`${e.file}: ${bits.toFixed(4)} bits per character over ${count} held-out characters (catalogue ${e.heldOutBits}), `
      + `${(100 * accuracy).toFixed(1)}% right`);
    assert.equal(count, e.heldOutCount);
    assert.ok(Math.abs(bits - e.heldOutBits) < 5e-4, `${e.file}: ${bits} against ${e.heldOutBits}`);
    assert.ok(Math.abs(accuracy - e.heldOutAccuracy) < 5e-4, `${e.file}: accuracy ${accuracy} against ${e.heldOutAccuracy}`);
    // a held-out passage read twice: the catalogue's figures (docs/real-text.md's "a passage once / again")
    const copy = tok ? copyBitsBpe(lib, m, tok) : copyBits(lib, m);
    t.diagnostic(`${e.file}: a held-out passage, first reading ${copy.first.toFixed(3)}, second ${copy.second.toFixed(3)} bits per character`);
    assert.ok(Math.abs(copy.first - e.copy.first) < 5e-4 && Math.abs(copy.second - e.copy.second) < 5e-4, `${e.file}: copy ${JSON.stringify(copy)}`);
    m.dispose();
  }
});

test('attention sinks, measured on the models that read fortunes: rolling caches read as well as recomputing; the start token helps a small window', { skip: why }, (t) => {
  const { lib } = builds[0];
  const { window: W, within, smallWindow, sinksBetterBy } = catalog.claim;
  for (const e of catalog.models.filter((x) => x.sinks)) {
    const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
    const tokens = Int32Array.from([...(e.bos ? [0] : []), ...lib.charsTokenizer.encode(heldOutText().slice(0, 2048))]);
    const bits = (w, opts) => {
      const xs = m.streamLosses(tokens, { window: w, ...opts });
      return xs.slice(w).reduce((a, b) => a + b, 0) / (xs.length - w) / Math.LN2;
    };
    const win = bits(W, {}), sink = bits(W, { sinks: 4 }), rec = bits(W, { recompute: true });
    t.diagnostic(`${e.file}, window ${W}: window ${win.toFixed(3)}, window + 4 sinks ${sink.toFixed(3)}, recompute ${rec.toFixed(3)} bits per character`);
    assert.ok(Math.abs(sink - rec) < within && Math.abs(win - rec) < within, 'rolling caches read far past the window as recomputing does');
    if (e.bos) { // on prose with no document breaks (the sinks panel's default text) it needs its start token
      const prose = Int32Array.from([0, ...lib.charsTokenizer.encode(readFileSync(new URL('stream-text.txt', dir), 'utf8'))]);
      const pb = (opts) => {
        const xs = m.streamLosses(prose, { window: W, ...opts });
        return xs.slice(W).reduce((a, b) => a + b, 0) / (xs.length - W) / Math.LN2;
      };
      const pw = pb({}), ps = pb({ sinks: 4 });
      t.diagnostic(`${e.file}, stream-text.txt, window ${W}: window ${pw.toFixed(3)}, window + 4 sinks ${ps.toFixed(3)}`);
      assert.ok(pw - ps > catalog.claim.proseSinksBetterBy, `on prose: window only ${pw} against sinks ${ps}`);
    }
    if (e.bos) { // the model that always saw a start token: keeping it helps when the window is small
      const w16 = bits(smallWindow, {}), s16 = bits(smallWindow, { sinks: 4 });
      t.diagnostic(`${e.file}, window ${smallWindow}: window ${w16.toFixed(3)}, window + 4 sinks ${s16.toFixed(3)}`);
      assert.ok(w16 - s16 > sinksBetterBy, `window only ${w16} against sinks ${s16}`);
    }
    m.dispose();
  }
});

test('heads of the models that read fortunes on the page\'s probe: the catalogued strongest induction and previous-token heads come back, and the panel\'s softmax model has previous-token and induction heads an untrained one lacks, and copies', (t) => {
  const { lib } = builds[0];
  const { letters } = catalog.probe;
  const probe = lib.charsTokenizer.encode(probeLetters(catalog.probe));
  assert.equal(probe.length, 2 * letters);
  assert.equal(new Set(probe.subarray(0, letters)).size, letters, 'the first copy has no repeats of its own');
  for (const e of catalog.models) {
    const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
    const tok = tokenizerOf(lib, e), ids = tok ? bpeCodec(tok).probe() : probe; // a sub-word model's probe is of its pieces
    if (tok) assert.equal(new Set(ids.subarray(0, letters)).size, letters, `${e.file}: the probe's first copy has no repeats`);
    const heads = scoreHeads(m.forward(ids).attention, [...ids]);
    for (const [kind, want] of [['induction', e.induction], ['previous token', e.previousToken]]) {
      const best = strongestHead(heads, kind);
      t.diagnostic(`${e.file}: strongest ${kind} head layer ${best.layer + 1}, head ${best.head + 1}: ${best.scores[kind].toFixed(3)}`);
      assert.deepEqual([best.layer, best.head], [want.layer, want.head], `${e.file}: ${kind}`);
      assert.ok(Math.abs(best.scores[kind] - want.score) < 1e-4, `${e.file}: ${kind} ${best.scores[kind]} against ${want.score}`);
    }
    m.dispose();
  }
  const shown = catalog.models.find((e) => e.panel && e.config.attention === 'softmax' && !e.tokenizer);
  assert.ok(shown, 'the first panel has a softmax character model that read fortunes');
  assert.ok(shown.previousToken.score > catalog.claim.previousAbove,
    `${shown.file}: previous token ${shown.previousToken.score} against the bound ${catalog.claim.previousAbove}`);
  assert.ok(shown.induction.score > catalog.claim.inductionAbove,
    `${shown.file}: induction ${shown.induction.score} against the bound ${catalog.claim.inductionAbove}`);
  // it reads a held-out passage the second time from the first (measured 0.06 against 1.93 bits)
  assert.ok(shown.copy.second < shown.copy.first / 4, `${shown.file}: copy ${JSON.stringify(shown.copy)}`);
  // the same shape untrained: what the bounds are measured against
  const fresh = lib.createModel({ ...shown.config, seed: 1 });
  const heads = scoreHeads(fresh.forward(probe).attention, [...probe]);
  for (const [kind, bound] of [['previous token', catalog.claim.previousAbove], ['induction', catalog.claim.inductionAbove]]) {
    const untrained = strongestHead(heads, kind).scores[kind];
    t.diagnostic(`untrained ${shown.config.dModel}-wide model: strongest ${kind} score ${untrained.toFixed(3)}`);
    assert.ok(untrained < bound, `an untrained model scores ${untrained} (${kind})`);
  }
  fresh.dispose();
});

test('docs/real-text.md\'s table of the shipped models is the catalogue\'s', () => {
  // the table under "### The shipped models": its header, then its rows up to the first line that is not one
  const lines = readFileSync(new URL('../../docs/real-text.md', import.meta.url), 'utf8').split('\n');
  const at = lines.indexOf('| model | reads | parameters | held-out bits per character | induction score | minutes to train | machine |');
  assert.ok(at > 0, 'docs/real-text.md has the table of the shipped models');
  const end = lines.findIndex((l, i) => i > at && !l.startsWith('|'));
  const rows = lines.slice(at + 2, end);
  assert.ok(rows.every((l) => /^\| `fortunes-[a-z-]+` \|/.test(l)), rows.join('\n'));
  assert.ok(rows.length >= 3, 'the table has the sub-word row and the character rows');
  for (const row of rows) {
    const [name, , params, bits, induction, minutes] = row.split('|').slice(1).map((c) => c.trim());
    const e = catalog.models.find((m) => m.file === `${name.replaceAll('`', '')}.safetensors`);
    assert.ok(e, `${name} is in web/models/fortunes.json`);
    assert.equal(params, e.parameters.toLocaleString('en'), `${name}: parameters`);
    assert.equal(bits, e.heldOutBits.toFixed(3), `${name}: held-out bits per character`);
    assert.equal(induction, e.induction.score.toFixed(2), `${name}: induction score`);
    assert.ok(minutes.startsWith(`${e.minutes} (${e.threads} thread`), `${name}: minutes ${minutes} against ${e.minutes} on ${e.threads}`);
  }
});
