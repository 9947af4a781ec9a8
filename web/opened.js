// opened.js: the model open in "Open a model file" (views/opener.js), shared with the panels that
// can run on it ("What does this head do?", views/circuits.js). A tiny store: opener.js publishes
// the model when it opens one and null when it closes it; a panel reads openedModel() and listens
// with onOpened(fn). Nothing here holds the model's weights: bytes() asks the library for its own
// checkpoint (model.save(), which lib.loadModel(bytes, { training: false }) reads back, in a worker
// too) only when a panel needs them, and throws once the model was closed.
//   { key, name, kind, config, live() -> the model, bytes(), encode(text) -> Int32Array, decode(ids) -> string,
//     piece(id) -> string, vocabSize, tokenizer }
// key is new for every model opened (a worker caches the loaded model by it).
import { bpeCodec, tokenPeriod, visible } from '../lab/codec.js';
import { LETTER_PROBE, phraseTwice, probeTokens } from '../lab/heads.js';

const target = new EventTarget();
let current = null;
let serial = 0;

/** The model open now, or null. */
export const openedModel = () => current;

/** fn(opened or null) on every change. Returns a function that stops listening. */
export function onOpened(fn) {
  const listener = (e) => fn(e.detail);
  target.addEventListener('change', listener);
  return () => target.removeEventListener('change', listener);
}

/**
 * Publishes a model just opened (model: the library's, kind: 'llama2c' | 'huggingface', name: what
 * the page calls it), or null when it was closed. llama2.c's tokenizers mark <s> (1) and </s> (2)
 * only when their piece 1 says so (the same rule as web/formats.js).
 */
export function publishOpened(model, kind, name) {
  if (!model) {
    if (current === null) return;
    current = null;
  } else {
    const tok = model.tokenizer;
    if (!tok) return; // nothing to read text with
    const config = { ...model.config };
    const marks = kind === 'llama2c' && /<s>/.test(tok.pieces?.[1] ?? '');
    const vocabSize = Math.min(config.vocab, tok.vocabSize ?? tok.vocab ?? tok.pieces?.length ?? config.vocab);
    current = {
      key: `opened-${++serial}`, name, kind, config, tokenizer: tok, vocabSize,
      // the model itself, for a panel that reads it on the page's thread (views/picture.js)
      live: () => {
        if (!model.handle) throw new Error(`${name} was closed in "Open a model file": open it again`);
        return model;
      },
      bytes: () => {
        if (!model.handle) throw new Error(`${name} was closed in "Open a model file": open it again`);
        return model.save();
      },
      // llama2.c's tokenizers spell some texts in lower case only (web/formats.js does the same)
      encode(text) {
        try {
          return tok.encode(text);
        } catch (e) {
          if (text.toLowerCase() === text) throw e;
          return tok.encode(text.toLowerCase());
        }
      },
      decode: (ids) => (kind === 'huggingface' || marks ? tok.decode(ids) : Array.from(ids, (id) => tok.piece(id)).join('')),
      piece: (id) => (kind === 'llama2c' ? (marks && (id === 1 || id === 2) ? '' : tok.piece(id)) : tok.decode([id])),
    };
  }
  target.dispatchEvent(new CustomEvent('change', { detail: current }));
}

/**
 * The opened model's tokenizer as lab/codec.js's codec (what views/circuits.js reads): this repo's
 * byte-level BPE (a tokenizer.json it wrote: pieceBytes) is bpeCodec itself; any other (a Hugging
 * Face tokenizer.json of another family, llama2.c's tokenizer.bin) gets the same interface from its
 * encode, decode and pieces, with kind 'bpe' (sub-word ids, not characters) and unit 'token'.
 */
export function openedCodec(opened) {
  const tok = opened.tokenizer;
  if (opened.kind === 'huggingface' && typeof tok.pieceBytes === 'function') return bpeCodec(tok);
  const vocab = opened.vocabSize;
  const text = (id) => {
    try {
      return opened.piece(id) ?? '';
    } catch {
      return '';
    }
  };
  const encode = (s) => Int32Array.from(opened.encode(s));
  return {
    kind: 'bpe', unit: 'token', vocab, tokenizer: { decode: (ids) => opened.decode(ids) },
    encode(s) {
      const ids = encode(s);
      return { ids, texts: Array.from(ids, text), dropped: [] };
    },
    text,
    // llama2.c's <s> and </s> print nothing but are labelled
    label: (id) => visible(text(id)) || (opened.kind === 'llama2c' ? tok.piece(id) : '') || `#${id}`,
    // random ordinary tokens (past the byte pieces when there is room), then the same again
    probe: () => Int32Array.from(probeTokens(vocab, LETTER_PROBE.letters, LETTER_PROBE.seed, vocab > 259 + LETTER_PROBE.letters ? 259 : 3)),
    twice(s, tokens) {
      for (let chars = tokens * 4; chars > 8; chars = Math.floor(chars * 0.85)) {
        const t = phraseTwice(s, chars);
        if (encode(t).length <= tokens) return t;
      }
      return phraseTwice(s, 8);
    },
    period: tokenPeriod,
  };
}
