// formats.js: the model-file formats "Open a model file" (views/opener.js) opens, one row each, as
// the library's loaders are rows (wasm/huggingface.js's ARCHS). lib.sniffModelFile decides what
// every file is from its bytes; a row says which of those files make its model and how the panel
// opens and shows it. The panel walks this table and knows no format itself: a new format (GGUF,
// once sniffModelFile names it) is one row here. No DOM is touched at import (tests/node imports it).
// A row:
//   format   its name: the panel's data-kind and opened.js's kind
//   sniff    what lib.sniffModelFile says of the file that holds the weights; a file of it picks the row
//   name     the model in the page's words ("A llama2.c model needs ...")
//   about    the versions it reads, for the message about a file the page does not open
//   files    role -> { sniff, many (several files: shards), optional, label (in messages), ext (the
//            file picker's hint only: never decides a format) }, in the order the files line lists them
//   gathers  its files may come in separate picks: a role not given keeps the file given before
//   sample(lib, shipped)  this format's sample, made in the tab from the checkpoint the page ships
//            (shipped(name) -> Promise of web/models/<name>'s bytes): [{ name, bytes }]
//   load(lib, given)      given: role -> [{ name, bytes }] -> the library's model, or an Error saying what is wrong
//   shows(model, { ms, given, id, fetched })  -> { name, status }: the status line once opened (ms
//            loading; id and fetched (ms) for a Hub download) and the name the other panels list it by
//   tokens(model)  the tokenizer's side of the panel: { decode(ids), label(id), stop: { id, name } | null, bos }
import { SAMPLE, bpeSampleLlama2c } from '../lab/llama2c-sample.js';
import { formatMB, safetensorsDtypes } from './views/hub.js';

/** The weights choice and a model's weightBytes.format: format -> what the page calls it. */
export const WEIGHTS = Object.freeze({ fp32: 'fp32', q8_0: '8-bit (q8_0)', q4_0: '4-bit (q4_0)' });

/** Bytes as the files line and the weights table say them: 1.2 MiB, or 3.4 KiB below a MiB. */
export function formatBytes(n) {
  return n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

const params = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n.toLocaleString('en'));
const utf8 = (s) => new TextEncoder().encode(s);
const text = (bytes) => new TextDecoder().decode(bytes);
const bytesOf = (b) => (b instanceof Uint8Array ? b : new Uint8Array(b));

// The checkpoint every sample is made from (lab/llama2c-sample.js: 2.2 MB, so nothing more is shipped).
async function shippedPair(shipped) {
  const [checkpoint, tokenizer] = await Promise.all([shipped(SAMPLE.source), shipped(SAMPLE.tokenizer)]);
  return { checkpoint: bytesOf(checkpoint), tokenizer: bytesOf(tokenizer) };
}

const llama2c = {
  format: 'llama2c',
  sniff: 'llama2c',
  name: 'llama2.c model',
  about: 'llama2.c\'s model .bin in export.py\'s legacy format (--version 0, the format of the published stories*.bin files) '
    + 'or version 2 (--version 2, runq.c\'s 8-bit weights), with its tokenizer.bin',
  files: {
    model: { sniff: 'llama2c', label: 'a model .bin', ext: '.bin' },
    tokenizer: { sniff: 'llama2c-tokenizer', label: 'its tokenizer.bin', ext: '.bin' },
  },
  gathers: true,
  async sample(lib, shipped) {
    const { checkpoint, tokenizer } = await shippedPair(shipped);
    const pair = bpeSampleLlama2c(lib, checkpoint, JSON.parse(text(tokenizer)));
    return [{ name: `${SAMPLE.name}.bin`, bytes: pair.bin }, { name: 'tokenizer.bin', bytes: pair.tokenizer }];
  },
  load: (lib, { model: [m], tokenizer: [t] }) => lib.loadLlama2c(m.bytes, { tokenizer: t.bytes }),
  shows(model, { ms, given }) {
    const c = model.config, w = model.weightBytes;
    const shared = c.kvHeads < c.heads ? `${c.kvHeads} K/V heads, each shared by ${c.heads / c.kvHeads} query heads` : 'a K/V head per head';
    return {
      name: given.model[0].name,
      status: `Loaded in ${ms.toFixed(0)} ms: dim ${c.dModel}, ${c.layers} layers, ${c.heads} heads (${shared}), `
        + `vocab ${c.vocab}, up to ${c.maxLen} tokens, ${params(w.fp32 / 4)} parameters`
        + `${c.tieEmbeddings ? ', classifier tied to the embedding' : ''}`
        + `${w.format === 'fp32' ? '' : `; ${WEIGHTS[w.format]} weights as the file holds them (llama2.c's version 2), ${formatBytes(w.bytes)}`}.`,
    };
  },
  // llama2.c's convention: token 1 is <s> (generation stops there) and 2 is </s>, and decode prints
  // neither. A tokenizer whose pieces 1 and 2 are ordinary tokens (a model saved here from the
  // number tasks or the chars tokenizer) neither stops there nor drops them.
  tokens(model) {
    const tok = model.tokenizer, marks = /<s>/.test(tok.pieces[1] ?? '');
    return {
      decode: (ids) => (marks ? tok.decode(ids) : Array.from(ids, (id) => tok.piece(id)).join('')),
      label: (id) => tok.piece(id),
      stop: marks ? { id: 1, name: 'the start-of-text token <s> (id 1), where llama2.c\'s models end a text' } : null,
      bos: 1,
    };
  },
};

const huggingface = {
  format: 'huggingface',
  sniff: 'safetensors',
  name: 'Hugging Face model',
  about: 'Hugging Face\'s config.json, model.safetensors (or its shards) and tokenizer.json',
  files: {
    config: { sniff: 'hf-config', label: 'config.json', ext: '.json' },
    index: { sniff: 'hf-index', label: 'model.safetensors.index.json', ext: '.json', optional: true },
    weights: { sniff: 'safetensors', label: 'model.safetensors (or its shards)', ext: '.safetensors', many: true },
    tokenizer: { sniff: 'hf-tokenizer', label: 'tokenizer.json', ext: '.json' },
  },
  gathers: false,
  // the shipped checkpoint saved as Hugging Face's files (model.saveHuggingFace), with its tokenizer.json
  async sample(lib, shipped) {
    const { checkpoint, tokenizer } = await shippedPair(shipped);
    const model = lib.loadModel(checkpoint, { training: false });
    try {
      const { config, weights } = model.saveHuggingFace();
      return [{ name: 'config.json', bytes: utf8(JSON.stringify(config)) }, { name: 'model.safetensors', bytes: weights },
        { name: 'tokenizer.json', bytes: tokenizer }];
    } finally {
      model.dispose();
    }
  },
  // every shard the index names must be there
  load(lib, { config: [config], index: [index] = [], weights, tokenizer: [tokenizer] }) {
    if (typeof lib.loadHuggingFace !== 'function') throw new Error('this build of the library has no loadHuggingFace: it opens llama2.c files only');
    if (index) {
      const map = JSON.parse(text(index.bytes))?.weight_map ?? {};
      const have = new Set(weights.map((f) => f.name));
      const absent = [...new Set(Object.values(map))].filter((f) => !have.has(f));
      if (absent.length) throw new Error(`${index.name} names ${absent.length} shard(s) not given: ${absent.join(', ')}`);
    }
    return lib.loadHuggingFace({ config: text(config.bytes), weights: weights.map((w) => w.bytes), tokenizer: text(tokenizer.bytes) });
  },
  shows(model, { ms, given, id = null, fetched = null }) {
    const c = model.config, arch = model.huggingFace.architecture, weights = given.weights;
    const bytes = weights.reduce((a, w) => a + w.bytes.length, 0);
    const dtypes = [...new Set(weights.flatMap((w) => safetensorsDtypes(w.bytes)))].join('+') || 'no tensors';
    const source = weights.length > 1 ? `${weights.length} shards` : weights[0].name;
    const kv = c.kvHeads < c.heads ? ` (${c.kvHeads} K/V heads)` : '';
    return {
      name: id ?? `${arch} (${source})`,
      status: `Loaded ${arch} in ${ms.toFixed(0)} ms${fetched !== null ? ` (fetched in ${(fetched / 1000).toFixed(1)} s)` : ''}: `
        + `dim ${c.dModel}, ${c.layers} layers x ${c.heads} heads${kv}, vocab ${c.vocab}, up to ${c.maxLen} tokens, `
        + `${params(model.parameterCount)} parameters, ${dtypes}, ${formatMB(bytes)} of weights.`
        // what the load adapted (a tokenizer with fewer ids than a padded vocabulary), one sentence each
        + (model.huggingFace.notes ?? []).map((n) => ` Note: ${n}.`).join(''),
    };
  },
  // config.json's eos_token_id (the first of a list) ends a text, its bos_token_id starts one
  tokens(model) {
    const tok = model.tokenizer, { eos_token_id: eosIds, bos_token_id: bosIds } = model.huggingFace.config;
    const eos = [eosIds].flat()[0];
    return {
      decode: (ids) => tok.decode(ids),
      label: (id) => tok.decode([id]),
      stop: Number.isInteger(eos) && eos >= 0 && eos < model.config.vocab ? { id: eos, name: `the end-of-text token (id ${eos})` } : null,
      bos: [bosIds].flat()[0],
    };
  },
};

/** The formats the page opens, in the order they are tried when a pick holds files of several. */
export const FORMATS = Object.freeze([huggingface, llama2c]);

/** The format whose sample "Open the sample" opens. */
export const SAMPLE_FORMAT = llama2c;

/**
 * What a pick of sniffed files ({ file, format, label } each, lib.sniffModelFile's) opens: { row }, the
 * first row whose weights file is among them; else { unread }, a file of a format no row opens
 * (llama2.c's version-1 export); else { row }, the first row any of whose files is among them (the
 * panel then says what is missing); else { row: null }.
 */
export function pickFormat(sniffed) {
  const given = (format) => sniffed.some((x) => x.format === format);
  const reads = (row, format) => Object.values(row.files).some((f) => f.sniff === format);
  const byWeights = FORMATS.find((row) => given(row.sniff));
  if (byWeights) return { row: byWeights };
  const unread = sniffed.find((x) => x.format !== null && !FORMATS.some((row) => reads(row, x.format)));
  if (unread) return { unread };
  return { row: FORMATS.find((row) => sniffed.some((x) => reads(row, x.format))) ?? null };
}

/** The status line for a file of a format the page does not open: what it is, and what the page opens. */
export const notOpened = ({ file, label }) => `${file.name} is ${label}: this page opens ${FORMATS.map((row) => row.about).join('; or ')}.`;

/** The files of a pick by role of row: role -> [File] (only the roles given). */
export function byRole(row, sniffed) {
  const out = {};
  for (const [role, spec] of Object.entries(row.files)) {
    const files = sniffed.filter((x) => x.format === spec.sniff).map((x) => x.file);
    if (files.length) out[role] = spec.many ? files : files.slice(0, 1);
  }
  return out;
}

/** The labels of the files row needs that given (role -> [File]) lacks. */
export const missing = (row, given) => Object.entries(row.files).filter(([role, f]) => !f.optional && !given[role]?.length).map(([, f]) => f.label);

// A list in words: "a", "a and b", "a, b and c".
const inWords = (xs) => (xs.length > 1 ? `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}` : xs[0] ?? '');

/** The status line when given (role -> [File]) lacks files row needs ("A ... needs ...: ... is missing."), else null. */
export function whatIsMissing(row, given) {
  const lacking = missing(row, given);
  if (!lacking.length) return null;
  const needs = Object.values(row.files).filter((f) => !f.optional).map((f) => f.label);
  return `A ${row.name} needs ${inWords(needs)}: ${inWords(lacking)} ${lacking.length > 1 ? 'are' : 'is'} missing.`;
}
