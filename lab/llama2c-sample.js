// llama2c-sample.js: the "Open a model file" panel's sample, a llama2.c model and tokenizer made
// from the shipped sub-word model models/fortunes-bpe.safetensors and its byte-level BPE
// models/fortunes-bpe.tokenizer.json (llama-style block, which llama2.c can run): model.saveLlama2c()
// and the tokenizer's toLlama2c(), whose ids are llama2.c's already (<unk>, <s>, </s>, the 256 bytes,
// then the merges). Used by the page (built in the tab, 2.2 MB, so nothing more is shipped) and by
// scripts/make-sample-llama2c.mjs (which writes the two files for llama2.c's run.c).
//
// The character models (the learned panel's "Save as llama2.c") go through makeSampleLlama2c:
// llama2.c's tokenizer gives ids 1 and 2 to <s> and </s> (run.c's decode prints neither, and
// generation stops at them), while the chars tokenizer's ids 1 and 2 are " " and "\n". So the
// vocabulary is renumbered: rows of the embedding and the classifier move, none changes, and the
// model computes the same function on the renamed tokens:
//   new 0 <unk> <- an unused row     new 1 <s> <- old 0 (the chars tokenizer's unknown)
//   new 2 </s>  <- an unused row     new 3 + k <- old 1 + k, the characters; the rest: unused rows
// The pieces are the chars tokenizer's lower-case characters, with no byte pieces: text outside
// them (capitals, accents) cannot be encoded.
import { readSafetensors, writeSafetensors } from '../wasm/safetensors.js';

export const SAMPLE = Object.freeze({ name: 'fortunes-bpe', source: 'fortunes-bpe.safetensors', tokenizer: 'fortunes-bpe.tokenizer.json',
  prompt: 'The fortune says' });

/**
 * The llama2.c pair of a sub-word model: { bin (model.bin), tokenizer (tokenizer.bin), from } from
 * the checkpoint's bytes and its tokenizer (a tokenizer.json object or lib.loadTokenizer's result);
 * from is the identity (no id moves). name: the checkpoint's, for errors.
 */
export function bpeSampleLlama2c(lib, checkpoint, tokenizer, name = SAMPLE.source) {
  const tok = typeof tokenizer?.toLlama2c === 'function' ? tokenizer : lib.loadTokenizer(tokenizer);
  const model = lib.loadModel(checkpoint, { training: false });
  try {
    if (model.config.vocab < tok.vocabSize) throw new Error(`${name}: vocab ${model.config.vocab} is smaller than its tokenizer's ${tok.vocabSize} pieces`);
    return { bin: model.saveLlama2c(), tokenizer: tok.toLlama2c(), from: Array.from({ length: model.config.vocab }, (_, k) => k) };
  } finally {
    model.dispose();
  }
}

/**
 * The sample pair from the checkpoint's bytes: { bin (model.bin), tokenizer (tokenizer.bin), from }
 * (from[newId] = the checkpoint's id). Any llama-block character model with two unused rows works
 * the same way (the learned panel saves its models so); name: the checkpoint's, for errors.
 */
export function makeSampleLlama2c(lib, checkpoint, name) {
  const { meta, tensors } = readSafetensors(checkpoint, name);
  const vocab = Number(meta.vocab), chars = lib.charsTokenizer.vocab;
  if (vocab < chars + 2) throw new Error(`${name}: needs two unused rows (vocab ${vocab}, ${chars} character tokens)`);
  const from = [chars, 0, chars + 1, ...Array.from({ length: chars - 1 }, (_, k) => 1 + k)];
  for (let old = chars + 2; old < vocab; old++) from.push(old);
  const permute = ({ shape, data }) => {
    const [rows, cols] = shape, out = new Float32Array(data.length);
    if (rows !== vocab) throw new Error(`${name}: expected ${vocab} rows, got ${shape}`);
    from.forEach((old, id) => out.set(data.subarray(old * cols, (old + 1) * cols), id * cols));
    return { shape, data: out };
  };
  for (const name of ['wte', 'out.w']) if (tensors.has(name)) tensors.set(name, permute(tensors.get(name)));
  const model = lib.loadModel(writeSafetensors(meta, tensors), { training: false });
  try {
    const pieces = from.map((old, id) => (id === 0 ? '<unk>' : id === 1 ? '\n<s>\n' : id === 2 ? '\n</s>\n'
      : old < chars ? lib.charsTokenizer.decode([old]) : `<unused${id}>`));
    return { bin: model.saveLlama2c(), tokenizer: lib.writeLlama2cTokenizer(pieces), from };
  } finally {
    model.dispose();
  }
}
