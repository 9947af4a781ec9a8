// fortunes.test.js: the models that have read real text (Debian's fortunes, read where the package
// installs it; data/README.md). The document split is the trainer's; each shipped model's held-out
// bits per character (web/models/fortunes.json) are reproduced from its checkpoint; and what the
// attention-sinks claim comes to at this scale is held to the bounds measured for it (README).
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

test('attention sinks, measured on the models that read fortunes: rolling caches read as well as recomputing; the start token helps a small window', { skip: why }, (t) => {
  const { lib } = builds[0];
  const { window: W, within, smallWindow, sinksBetterBy } = catalog.claim;
  for (const e of catalog.models) {
    const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
    const tokens = Int32Array.from([...(e.bos ? [0] : []), ...lib.charsTokenizer.encode(heldOutText().slice(0, 2048))]);
    const bits = (w, opts) => {
      const xs = m.streamLosses(tokens, { window: w, ...opts });
      return xs.slice(w).reduce((a, b) => a + b, 0) / (xs.length - w) / Math.LN2;
    };
    const win = bits(W, {}), sink = bits(W, { sinks: 4 }), rec = bits(W, { recompute: true });
    t.diagnostic(`${e.file}, window ${W}: window ${win.toFixed(3)}, window + 4 sinks ${sink.toFixed(3)}, recompute ${rec.toFixed(3)} bits per character`);
    assert.ok(Math.abs(sink - rec) < within && Math.abs(win - rec) < within, 'rolling caches read far past the window as recomputing does');
    if (e.bos) { // the model that always saw a start token: keeping it helps when the window is small
      const w16 = bits(smallWindow, {}), s16 = bits(smallWindow, { sinks: 4 });
      t.diagnostic(`${e.file}, window ${smallWindow}: window ${w16.toFixed(3)}, window + 4 sinks ${s16.toFixed(3)}`);
      assert.ok(w16 - s16 > sinksBetterBy, `window only ${w16} against sinks ${s16}`);
    }
    m.dispose();
  }
});
