// fortunes-catalog.mjs: writes web/models/fortunes.json, the catalogue of the models that have read
// Debian's fortunes: each model's config, training command and budget, the trainer's own held-out
// figure and time (read from its log, `npm run train ... > LOGS/<file stem>.log`; a model whose log
// is not there keeps the figures the catalogue already has), the held-out bits per character and
// accuracy on the first 32768 characters of the held-out documents in windows of maxLen
// (scripts/fortunes.mjs heldOutBits: what tests/node/fortunes.test.js recomputes from the
// checkpoint), each model's strongest induction and previous-token heads on the page's probe
// (lab/heads.js), the bits per character of a held-out passage read once and then again (copy), the
// corpus's split, and the bounds the tests hold the claims to (measured: README).
//   LOGS=/tmp/train node scripts/fortunes-catalog.mjs
// Which models: `sinks` ones are the attention-sinks experiment's (scripts/sinks.mjs); `panel` ones
// are what the page's first panel shows for their form; `compare` ones make the README's table of
// forms trained alike on this text.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { LETTER_PROBE, probeLetters, scoreHeads, strongestHead } from '../lab/heads.js';
import { copyBits, copyBitsBpe, ensureFortunes, fortunesDocuments, heldOutBits, heldOutBitsBpe } from './fortunes.mjs';
import { bpeCodec } from '../lab/codec.js';

const why = ensureFortunes();
if (why) {
  console.error(`fortunes-catalog.mjs: ${why}`);
  process.exit(1);
}
const dir = new URL('../web/models/', import.meta.url);
const LOGS = process.env.LOGS ?? '/tmp/train';
const TEXT = 'npm run train -- --task chars --text /usr/share/games/fortunes';
const SHAPE = '--block llama --d-model 96 --heads 4 --layers 3 --d-ff 256 --max-len 128 --length 128';
const RUN = '--steps 3000 --batch 32 --lr 3e-3 --warmup 200 --eval-every 250 --eval-batches 16 --seed 1';
const LARGE = '--repeats 4 --block llama --d-model 128 --heads 4 --layers 4 --d-ff 352 --max-len 256 --length 256 '
  + '--steps 5000 --batch 16 --lr 2.5e-3 --warmup 200 --eval-every 250 --eval-batches 16 --seed 1';
const SMALL = '--repeats 8 --block llama --d-model 64 --heads 4 --layers 3 --d-ff 176 --max-len 128 --length 128 '
  + '--steps 1500 --batch 32 --lr 3e-3 --warmup 100 --eval-every 250 --eval-batches 16 --seed 1';
const small = (form, stem, panel) => ({ file: `fortunes-small-${stem}.safetensors`, bos: false, threads: 1, repeats: 8,
  compare: true, panel, shared: 'other runs shared the 2 cores: minutes are wall time', command: `${TEXT} --attention ${form} ${SMALL} --threads 1 --out web/models/fortunes-small-${stem}.safetensors` });
const MODELS = [
  // the panel's first softmax model: it reads sub-word pieces (a byte-level BPE of 512 trained by the
  // same command, written beside it as fortunes-bpe.tokenizer.json) and has induction heads
  { file: 'fortunes-bpe.safetensors', tokenizer: 'fortunes-bpe.tokenizer.json', bos: false, threads: 1, twice: 1, panel: true,
    shared: 'other runs shared the 2 cores: minutes are wall time',
    command: `${TEXT} --twice 1 --vocab-size 512 --block llama --d-model 96 --heads 4 --layers 4 --d-ff 256 --max-len 64 `
      + '--length 64 --steps 4000 --batch 32 --lr 3e-3 --warmup 100 --eval-every 500 --threads 1 --out web/models/fortunes-bpe.safetensors' },
  // the sub-word model that reads best (a BPE of 1024, windows of 128 pieces), with no induction head
  { file: 'fortunes-bpe-large.safetensors', tokenizer: 'fortunes-bpe-large.tokenizer.json', bos: false, threads: 1, twice: 3, panel: true,
    shared: 'three other engineers\' builds and tests ran beside it on the 2 cores (load 3 to 10): minutes are wall time',
    command: `${TEXT} --twice 3 --vocab-size 1024 --block llama --tie-embeddings true --d-model 128 --heads 4 --layers 3 `
      + '--d-ff 352 --max-len 128 --length 128 --steps 8000 --batch 16 --lr 3e-3 --warmup 200 --eval-every 250 '
      + '--eval-batches 16 --seed 1 --threads 1 --out web/models/fortunes-bpe-large.safetensors' },
  { file: 'fortunes-bos.safetensors', bos: true, threads: 2, sinks: true,
    command: `${TEXT} --bos ${SHAPE} ${RUN} --threads 2 --out web/models/fortunes-bos.safetensors` },
  { file: 'fortunes-llama.safetensors', bos: false, threads: 1, sinks: true,
    command: `${TEXT} ${SHAPE} ${RUN} --threads 1 --out web/models/fortunes-llama.safetensors` },
  // first of the panel's softmax models: the one with induction heads (each window opens with a passage read twice)
  { file: 'fortunes-induction.safetensors', bos: false, threads: 1, twice: 1, panel: true,
    shared: 'test suites ran beside it on the 2 cores: minutes are wall time',
    command: `${TEXT} --twice 1 --block llama --d-model 64 --heads 4 --layers 3 --d-ff 176 --max-len 64 --length 64 `
      + '--steps 4000 --batch 32 --lr 3e-3 --warmup 100 --eval-every 250 --threads 1 --out web/models/fortunes-induction.safetensors' },
  { file: 'fortunes-large.safetensors', bos: false, threads: 2, repeats: 4, panel: true,
    command: `${TEXT} ${LARGE} --threads 2 --out web/models/fortunes-large.safetensors` },
  small('softmax', 'softmax', false),
  small('linear:elu+1', 'linear-elu1', true),
  small('gla', 'gla', true),
  small('gated-delta', 'gated-delta', true),
];
const previous = existsSync(new URL('fortunes.json', dir)) ? JSON.parse(readFileSync(new URL('fortunes.json', dir), 'utf8')) : { models: [] };

// The trainer's last line: "final: eval loss L (B bits/token), accuracy A, M ms/step, S s".
function fromLog(file) {
  const log = `${LOGS}/${file.replace(/\.safetensors$/, '')}.log`;
  if (existsSync(log)) {
    const m = /final: eval loss [\d.]+ \(([\d.]+) bits\/token\), accuracy [\d.]+, [\d.]+ ms\/step, ([\d.]+) s/.exec(readFileSync(log, 'utf8'));
    // a sub-word model's log also says "final: held out B bits/char (...)": the trainer's own count per character
    const c = /final: held out ([\d.]+) bits\/char/.exec(readFileSync(log, 'utf8'));
    if (m) return { trainerBits: Number(m[1]), ...(c ? { trainerBitsPerChar: Number(c[1]) } : {}), minutes: Number((Number(m[2]) / 60).toFixed(1)) };
  }
  const old = previous.models.find((e) => e.file === file);
  if (old?.trainerBits) return { trainerBits: old.trainerBits, ...(old.trainerBitsPerChar ? { trainerBitsPerChar: old.trainerBitsPerChar } : {}), minutes: old.minutes };
  throw new Error(`no trainer log ${log} and no earlier figures for ${file}`);
}

const lib = await loadAttention();
const { train, held, files } = fortunesDocuments();
const bytes = (docs) => docs.reduce((n, d) => n + Buffer.byteLength(d, 'latin1') + 2, 0);
// the page's probe (web/views/learned.js): distinct random letters, then the same again
const probe = lib.charsTokenizer.encode(probeLetters());
const catalog = {
  corpus: { source: "Debian package fortunes, /usr/share/games/fortunes (BSD; data/README.md)", files,
    documents: train.length + held.length, trainBytes: bytes(train), heldBytes: bytes(held), heldOut: 'every 10th document' },
  heldOutChars: 32768,
  probe: { ...LETTER_PROBE },
  claim: JSON.parse(process.env.CLAIM ?? JSON.stringify(previous.claim ?? {})),
  models: [],
};
for (const e of MODELS) {
  if (!existsSync(new URL(e.file, dir))) {
    console.error(`fortunes-catalog.mjs: web/models/${e.file} is missing (its command: ${e.command})`);
    process.exit(1);
  }
  const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
  // a sub-word model: its tokenizer's held-out count and probe (random merged pieces twice: lab/codec.js)
  const tok = e.tokenizer ? lib.loadTokenizer(JSON.parse(readFileSync(new URL(e.tokenizer, dir), 'utf8'))) : null;
  const { bits, count, accuracy, charsPerToken } = tok ? heldOutBitsBpe(lib, m, tok, catalog.heldOutChars) : heldOutBits(lib, m, catalog.heldOutChars);
  const probeIds = tok ? bpeCodec(tok).probe() : probe;
  const heads = scoreHeads(m.forward(probeIds).attention, [...probeIds]);
  const best = strongestHead(heads, 'induction'), prev = strongestHead(heads, 'previous token');
  const c = m.config;
  catalog.models.push({ ...e, ...fromLog(e.file), bytes: statSync(new URL(e.file, dir)).size, parameters: m.parameterCount,
    steps: m.steps,
    config: { vocab: c.vocab, dModel: c.dModel, heads: c.heads, layers: c.layers, dFF: c.dFF, maxLen: c.maxLen,
      attention: c.attention, positional: c.positional, block: c.block },
    heldOutBits: Number(bits.toFixed(5)), heldOutAccuracy: Number(accuracy.toFixed(5)), heldOutCount: count,
    ...(tok ? { charsPerToken: Number(charsPerToken.toFixed(4)), tokenizerBytes: statSync(new URL(e.tokenizer, dir)).size } : {}),
    induction: { layer: best.layer, head: best.head, score: Number(best.scores.induction.toFixed(5)) },
    previousToken: { layer: prev.layer, head: prev.head, score: Number(prev.scores['previous token'].toFixed(5)) },
    copy: Object.fromEntries(Object.entries(tok ? copyBitsBpe(lib, m, tok) : copyBits(lib, m)).map(([k, v]) => [k, Number(v.toFixed(5))])) });
  console.log(`${e.file}: ${bits.toFixed(4)} bits per character over ${count} held-out characters, accuracy `
    + `${(100 * accuracy).toFixed(1)}%; strongest induction head on the probe: layer ${best.layer + 1}, head ${best.head + 1}, `
    + `${best.scores.induction.toFixed(3)}; previous token: layer ${prev.layer + 1}, head ${prev.head + 1}, `
    + `${prev.scores['previous token'].toFixed(3)}`);
  m.dispose();
}
writeFileSync(new URL('fortunes.json', dir), `${JSON.stringify(catalog, null, 1)}\n`);
