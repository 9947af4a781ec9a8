// tokenizer.js: a character tokenizer for your own text (the model's own-data training,
// docs/model.md). Token ids are positions in a sorted list of code points (astral characters
// such as emoji count as one); the list is built from a text, or given.
import { describe, fail, isIntIn } from './core.js';

/**
 * charTokenizer({ text }) builds the vocabulary from a text; charTokenizer({ chars }) takes it as
 * given (a string or an array of single characters, no repeats). `unknown`: a character given
 * here maps unknown input characters to its id instead of throwing.
 * Returns { vocab, chars, encode(text) -> Int32Array, decode(ids) -> string }.
 */
export function charTokenizer(opts) {
  const what = 'charTokenizer';
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) fail(`${what} expects { text } or { chars }, got ${describe(opts)}`);
  for (const key of Object.keys(opts))
    if (!['text', 'chars', 'unknown'].includes(key)) fail(`${what}: unknown option "${key}" (known: text, chars, unknown)`);
  if ((opts.text === undefined) === (opts.chars === undefined)) fail(`${what}: give exactly one of text (to build the vocabulary from) or chars`);
  let chars;
  if (opts.text !== undefined) {
    if (typeof opts.text !== 'string' || opts.text.length === 0) fail(`${what}: text must be a non-empty string, got ${describe(opts.text)}`);
    chars = [...new Set(Array.from(opts.text))].sort((a, b) => a.codePointAt(0) - b.codePointAt(0));
  } else {
    const given = typeof opts.chars === 'string' ? Array.from(opts.chars) : opts.chars;
    if (!Array.isArray(given) || given.length === 0) fail(`${what}: chars must be a non-empty string or array of characters, got ${describe(opts.chars)}`);
    given.forEach((c, i) => {
      if (typeof c !== 'string' || Array.from(c).length !== 1) fail(`${what}: chars[${i}] must be one character, got ${describe(c)}`);
    });
    if (new Set(given).size !== given.length) {
      const dup = given.find((c, i) => given.indexOf(c) !== i);
      fail(`${what}: chars lists ${JSON.stringify(dup)} twice`);
    }
    chars = [...given];
  }
  const ids = new Map(chars.map((c, i) => [c, i]));
  let unknownId = -1;
  if (opts.unknown !== undefined) {
    if (!ids.has(opts.unknown)) fail(`${what}: unknown must be one of the vocabulary's characters, got ${describe(opts.unknown)}`);
    unknownId = ids.get(opts.unknown);
  }
  return Object.freeze({
    vocab: chars.length,
    chars: Object.freeze(chars),
    /** text -> ids (Int32Array); a character outside the vocabulary is an Error naming it and its position */
    encode(text) {
      if (typeof text !== 'string') fail(`charTokenizer.encode: text must be a string, got ${describe(text)}`);
      const cps = Array.from(text);
      const out = new Int32Array(cps.length);
      cps.forEach((c, i) => {
        const id = ids.get(c);
        if (id === undefined) {
          if (unknownId < 0) fail(`charTokenizer.encode: ${JSON.stringify(c)} at position ${i} is not in the vocabulary (pass unknown to map such characters)`);
          out[i] = unknownId;
        } else out[i] = id;
      });
      return out;
    },
    /** ids -> text; an id outside [0, vocab) is an Error naming it */
    decode(tokens) {
      const ok = Array.isArray(tokens) || (ArrayBuffer.isView(tokens) && !(tokens instanceof DataView));
      if (!ok) fail(`charTokenizer.decode: ids must be an array of token ids, got ${describe(tokens)}`);
      let s = '';
      for (let i = 0; i < tokens.length; i++) {
        const t = tokens[i];
        if (!isIntIn(t, 0, chars.length - 1)) fail(`charTokenizer.decode: ids[${i}] is ${describe(t)}, outside [0, ${chars.length})`);
        s += chars[t];
      }
      return s;
    },
  });
}
