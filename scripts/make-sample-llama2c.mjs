// make-sample-llama2c.mjs: writes the "Open a model file" panel's sample pair as files,
// web/models/sample/model.bin and tokenizer.bin (not committed: 2.2 MB, and the page builds the
// same pair from web/models/fortunes-bpe.safetensors and its tokenizer in the tab;
// lab/llama2c-sample.js says how),
// for llama2.c's run.c:  ./run web/models/sample/model.bin -z web/models/sample/tokenizer.bin -t 0
// Checks that the files generate what the original checkpoint generates.
// Usage: node scripts/make-sample-llama2c.mjs
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { SAMPLE, bpeSampleLlama2c } from '../lab/llama2c-sample.js';

const SRC = new URL(`../web/models/${SAMPLE.source}`, import.meta.url);
const OUT = new URL('../web/models/sample/', import.meta.url);

const lib = await loadAttention();
const json = JSON.parse(readFileSync(new URL(`../web/models/${SAMPLE.tokenizer}`, import.meta.url), 'utf8'));
const { bin, tokenizer, from } = bpeSampleLlama2c(lib, readFileSync(SRC), json);
mkdirSync(OUT, { recursive: true });
writeFileSync(new URL('model.bin', OUT), bin);
writeFileSync(new URL('tokenizer.bin', OUT), tokenizer);

const opened = lib.loadLlama2c(bin, { tokenizer });
const original = lib.loadModel(readFileSync(SRC), { training: false });
const ids = opened.tokenizer.encode(SAMPLE.prompt);
const out = [...opened.generate(ids, { maxTokens: 40, stop: 1 })];
const want = [...original.generate(Int32Array.from(ids, (id) => from[id]), { maxTokens: 40 })].slice(0, out.length).map((old) => from.indexOf(old));
if (String(want) !== String(out)) throw new Error(`the llama2.c files generate ${out}, the checkpoint ${want}`);
console.log(`web/models/sample/model.bin: ${bin.length} bytes; tokenizer.bin: ${tokenizer.length} bytes`);
console.log(`${JSON.stringify(SAMPLE.prompt)} -> ${JSON.stringify(opened.tokenizer.decode([...ids, ...out]))}`);
for (const m of [opened, original]) m.dispose();
