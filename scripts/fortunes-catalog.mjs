// fortunes-catalog.mjs: writes web/models/fortunes.json, the catalogue of the models that have read
// Debian's fortunes: each model's config, training command and budget, the trainer's own held-out
// figure, and the held-out bits per character on the first 32768 characters of the held-out
// documents in windows of maxLen (scripts/fortunes.mjs heldOutBits: what tests/node/fortunes.test.js
// recomputes from the checkpoint), the corpus's split, and the bounds the sinks test holds the claim
// to (measured by scripts/sinks.mjs; see the README).
//   node scripts/fortunes-catalog.mjs
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { ensureFortunes, fortunesDocuments, heldOutBits } from './fortunes.mjs';

const why = ensureFortunes();
if (why) {
  console.error(`fortunes-catalog.mjs: ${why}`);
  process.exit(1);
}
const dir = new URL('../web/models/', import.meta.url);
const SHAPE = '--block llama --d-model 96 --heads 4 --layers 3 --d-ff 256 --max-len 128 --length 128';
const RUN = '--steps 3000 --batch 32 --lr 3e-3 --warmup 200 --eval-every 250 --eval-batches 16 --seed 1';
const MODELS = [
  { file: 'fortunes-bos.safetensors', bos: true, threads: 2, trainerBits: Number(process.env.BOS_BITS), minutes: Number(process.env.BOS_MIN),
    command: `npm run train -- --task chars --text /usr/share/games/fortunes --bos ${SHAPE} ${RUN} --threads 2 --out web/models/fortunes-bos.safetensors` },
  { file: 'fortunes-llama.safetensors', bos: false, threads: 1, trainerBits: 2.224, minutes: 33.9,
    command: `npm run train -- --task chars --text /usr/share/games/fortunes ${SHAPE} ${RUN} --threads 1 --out web/models/fortunes-llama.safetensors` },
];
const lib = await loadAttention();
const { train, held, files } = fortunesDocuments();
const bytes = (docs) => docs.reduce((n, d) => n + Buffer.byteLength(d, 'latin1') + 2, 0);
const catalog = {
  corpus: { source: "Debian package fortunes, /usr/share/games/fortunes (BSD; data/README.md)", files,
    documents: train.length + held.length, trainBytes: bytes(train), heldBytes: bytes(held), heldOut: 'every 10th document' },
  heldOutChars: 32768,
  claim: JSON.parse(process.env.CLAIM ?? '{"sinksWithin": 0.05, "windowWorseBy": 0.1}'),
  models: [],
};
for (const e of MODELS) {
  const m = lib.loadModel(readFileSync(new URL(e.file, dir)), { training: false });
  const { bits, count } = heldOutBits(lib, m, catalog.heldOutChars);
  const c = m.config;
  catalog.models.push({ ...e, bytes: statSync(new URL(e.file, dir)).size, parameters: m.parameterCount, steps: m.steps,
    config: { vocab: c.vocab, dModel: c.dModel, heads: c.heads, layers: c.layers, dFF: c.dFF, maxLen: c.maxLen,
      attention: c.attention, positional: c.positional, block: c.block },
    heldOutBits: Number(bits.toFixed(5)), heldOutCount: count });
  console.log(`${e.file}: ${bits.toFixed(4)} bits per character over ${count} held-out characters`);
  m.dispose();
}
writeFileSync(new URL('fortunes.json', dir), `${JSON.stringify(catalog, null, 1)}\n`);
