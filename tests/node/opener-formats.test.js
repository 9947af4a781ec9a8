// opener-formats.test.js: the page's table of model-file formats (web/formats.js, issue 56 item 3),
// imported in Node as the page imports it. Every row is whole (its sniff and its files' sniffs are
// lib.sniffModelFile's formats, one file holds the weights, the functions are there, no two rows
// read the same kind of file); every row's sample, made from the shipped checkpoint, sniffs to that
// row by its bytes whatever the files are called, loads with the row's loader, generates what the
// checkpoint generates and is shown; and a pick is decided by sniffModelFile alone.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { builds } from './helpers.js';
import { MODEL_FILE_FORMATS } from '../../wasm/llama2c.js';
import { FORMATS, SAMPLE_FORMAT, byRole, missing, notOpened, pickFormat, whatIsMissing } from '../../web/formats.js';
import { SAMPLE } from '../../lab/llama2c-sample.js';

const { lib } = builds[0];
const SNIFFS = MODEL_FILE_FORMATS.map((f) => f.format);
const shipped = (name) => readFile(new URL(`../../web/models/${name}`, import.meta.url));
// a sample's files as the panel sniffs them (the first 64 KiB and the size), under any names
const sniffAll = (files, rename = (f) => f.name) => files.map((f) => ({
  file: { name: rename(f), size: f.bytes.length, bytes: f.bytes }, ...lib.sniffModelFile(f.bytes.subarray(0, 65536), f.bytes.length),
}));

test('every row of the format table is whole, and no two rows read the same kind of file', () => {
  assert.ok(FORMATS.length >= 2);
  assert.equal(new Set(FORMATS.map((r) => r.format)).size, FORMATS.length, 'formats are unique');
  assert.ok(FORMATS.includes(SAMPLE_FORMAT));
  const claimed = new Map();
  for (const row of FORMATS) {
    assert.match(row.format, /^[a-z0-9-]+$/);
    assert.ok(SNIFFS.includes(row.sniff), `${row.format}: sniff ${row.sniff} is one of sniffModelFile's formats`);
    for (const k of ['name', 'about']) assert.equal(typeof row[k], 'string', `${row.format}.${k}`);
    for (const k of ['sample', 'load', 'shows', 'tokens']) assert.equal(typeof row[k], 'function', `${row.format}.${k}`);
    assert.equal(typeof row.gathers, 'boolean');
    const roles = Object.entries(row.files);
    assert.equal(roles.filter(([, f]) => f.sniff === row.sniff).length, 1, `${row.format}: one role holds the weights`);
    for (const [role, f] of roles) {
      assert.ok(SNIFFS.includes(f.sniff), `${row.format}.files.${role}: ${f.sniff}`);
      assert.equal(typeof f.label, 'string');
      assert.match(f.ext, /^\.[a-z0-9]+$/);
      assert.ok(!claimed.has(f.sniff), `${f.sniff} is read by ${claimed.get(f.sniff)} and ${row.format}`);
      claimed.set(f.sniff, row.format);
    }
  }
});

for (const row of FORMATS) {
  test(`${row.format}: its sample sniffs to it by its bytes, loads, generates what the checkpoint does, and is shown`, async (t) => {
    const files = await row.sample(lib, shipped);
    const sniffed = sniffAll(files);
    t.diagnostic(sniffed.map((x) => `${x.file.name}: ${x.format}`).join(', '));
    assert.ok(sniffed.some((x) => x.format === row.sniff), `a file of the sample sniffs as ${row.sniff}`);
    assert.equal(pickFormat(sniffed).row, row);
    // names decide nothing: the same bytes under other names pick the same row and the same roles
    const renamed = sniffAll(files, (f) => `file-${files.indexOf(f)}.dat`);
    assert.equal(pickFormat(renamed).row, row);
    const roles = byRole(row, sniffed);
    assert.deepEqual(Object.keys(byRole(row, renamed)).sort(), Object.keys(roles).sort());
    assert.equal(whatIsMissing(row, roles), null, 'the sample has every file the row needs');
    for (const [role, list] of Object.entries(roles)) for (const f of list) assert.equal(lib.sniffModelFile(f.bytes).format, row.files[role].sniff);

    const given = Object.fromEntries(Object.entries(roles).map(([role, list]) => [role, list.map((f) => ({ name: f.name, bytes: f.bytes }))]));
    const model = row.load(lib, given);
    const original = lib.loadModel(await shipped(SAMPLE.source), { training: false });
    try {
      const shown = row.shows(model, { ms: 12, given });
      t.diagnostic(shown.status);
      assert.match(shown.status, /^Loaded .*in 12 ms.*: dim 96, 4 layers/);
      assert.equal(typeof shown.name, 'string');
      const tok = row.tokens(model);
      const ids = model.tokenizer.encode(SAMPLE.prompt);
      const out = [...model.generate(ids, { maxTokens: 12 })];
      assert.deepEqual(out, [...original.generate(ids, { maxTokens: 12 })], 'the sample is the shipped checkpoint: the same tokens');
      const text = tok.decode([...ids, ...out]);
      assert.ok(text.startsWith(SAMPLE.prompt) && text.length > SAMPLE.prompt.length, text);
      assert.equal(typeof tok.label(out[0]), 'string');
      assert.ok(tok.stop === null || Number.isInteger(tok.stop.id));
    } finally {
      model.dispose();
      original.dispose();
    }
  });
}

test('a pick is decided by sniffModelFile: a file no row opens is named with what the page opens; a lone part says what is missing', async () => {
  const v1 = new Uint8Array(256); // export.py's version 1 (float32 behind a 256-byte header)
  new DataView(v1.buffer).setUint32(0, 0x616b3432, true);
  new DataView(v1.buffer).setInt32(4, 1, true);
  const tokenizer = new Uint8Array(await shipped(SAMPLE.tokenizer));
  const llama = await SAMPLE_FORMAT.sample(lib, shipped);
  // a version-1 export with its tokenizer.bin: the export is named, not the tokenizer's missing model
  const { unread } = pickFormat(sniffAll([{ name: 'stories15M.bin', bytes: v1 }, llama[1]]));
  assert.equal(unread.format, 'llama2c-export');
  const said = notOpened(unread);
  assert.match(said, /^stories15M\.bin is llama2\.c's export in a version other than 2 .*: this page opens /);
  for (const row of FORMATS) assert.ok(said.includes(row.about), `names ${row.format}`);
  // tokenizer.json alone: the Hugging Face row, which lacks config.json and the weights
  const hf = FORMATS.find((r) => r.format === 'huggingface');
  const alone = sniffAll([{ name: 'tokenizer.json', bytes: tokenizer }]);
  assert.equal(pickFormat(alone).row, hf);
  assert.deepEqual(missing(hf, byRole(hf, alone)), ['config.json', 'model.safetensors (or its shards)']);
  assert.equal(whatIsMissing(hf, byRole(hf, alone)), 'A Hugging Face model needs config.json, model.safetensors (or its shards) and tokenizer.json: '
    + 'config.json and model.safetensors (or its shards) are missing.');
  const half = sniffAll([llama[1]]);
  assert.equal(pickFormat(half).row, SAMPLE_FORMAT);
  assert.match(whatIsMissing(SAMPLE_FORMAT, byRole(SAMPLE_FORMAT, half)), /^A llama2\.c model needs a model \.bin and its tokenizer\.bin: a model \.bin is missing\.$/);
  // a CSV (named model.bin): no row
  const csv = new TextEncoder().encode('form,n,d,ms per call\nsoftmax,64,32,0.12\n');
  assert.deepEqual(pickFormat(sniffAll([{ name: 'model.bin', bytes: csv }])), { row: null });
  // the weights pick the row even beside another row's files
  assert.equal(pickFormat(sniffAll([llama[1], ...(await hf.sample(lib, shipped))])).row, hf);
});
