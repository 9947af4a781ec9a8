// fortunes.test.js: the models that have read real text (Debian's fortunes, read where the package
// installs it; data/README.md). The document split is the trainer's; each shipped model's held-out
// bits per character (web/models/fortunes.json) are reproduced from its checkpoint; and the
// attention-sinks claim is measured on the model trained from document starts.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { builds } from './helpers.js';
import { FORTUNES, fortunesDocuments, heldOutBits, heldOutText } from '../../scripts/fortunes.mjs';

const why = existsSync(`${FORTUNES}/fortunes`) ? false : "Debian's fortunes is missing: run bash scripts/setup.sh as root, or apt-get install -y fortunes";
const dir = new URL('../../web/models/', import.meta.url);
const catalog = JSON.parse(readFileSync(new URL('fortunes.json', dir), 'utf8'));

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
    const { bits, count } = heldOutBits(lib, m, catalog.heldOutChars);
    t.diagnostic(`${e.file}: ${bits.toFixed(4)} bits per character over ${count} held-out characters (catalogue ${e.heldOutBits})`);
    assert.ok(Math.abs(bits - e.heldOutBits) < 5e-4, `${e.file}: ${bits} against ${e.heldOutBits}`);
    m.dispose();
  }
});

test('attention sinks, on the model trained from document starts: evicting the start token costs bits, keeping it does not', { skip: why }, (t) => {
  const { lib } = builds[0];
  const e = catalog.models.find((x) => x.bos);
  const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
  const tokens = Int32Array.from([0, ...lib.charsTokenizer.encode(heldOutText().slice(0, 2048))]);
  const W = 64;
  const mean = (xs) => xs.slice(W).reduce((a, b) => a + b, 0) / (xs.length - W) / Math.LN2;
  const win = mean(m.streamLosses(tokens, { window: W })), sink = mean(m.streamLosses(tokens, { window: W, sinks: 4 }));
  const rec = mean(m.streamLosses(tokens, { window: W, recompute: true }));
  t.diagnostic(`bits per character past the window: window ${win.toFixed(3)}, window + 4 sinks ${sink.toFixed(3)}, recompute ${rec.toFixed(3)}`);
  assert.ok(Math.abs(sink - rec) < catalog.claim.sinksWithin, `sinks ${sink} against recompute ${rec}`);
  assert.ok(win - sink > catalog.claim.windowWorseBy, `window only ${win} against sinks ${sink}`);
  m.dispose();
});
