// opened.js: the model open in "Open a model file" (views/opener.js), shared with the panels that
// can run on it ("What does this head do?", the picture). A tiny store: opener.js publishes what the
// model host (host.js, model-host.js) answered when it opened one, and null when it closed it; a
// panel reads openedModel() and listens with onOpened(fn). Nothing here holds the model or its
// tokenizer: they stay in the host, and what a panel needs of them is a request there.
//   { key, name, kind, config, vocabSize, stop, bos,
//     forward(ids, { lens }) -> Promise<{ attention, logits, lens }>   (in the host)
//     encode(text) -> Promise<Int32Array>, decode(ids) -> Promise<string>   (in the host)
//     piece(id) -> string, label(id) -> string   (every token's, sent once when it opened) }
// key is new for every model opened (the host's tasks find the model by it).
import { tokenPeriod, visible } from '../lab/codec.js';
import { LETTER_PROBE, phraseTwice, probeTokens } from '../lab/heads.js';
import { hostCall } from './host.js';

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

/** The i-th of a list the host packed ({ text, offsets }: host-opener.js), or '' past its end. */
export function unpackStrings({ text, offsets }) {
  return (i) => (i >= 0 && i + 1 < offsets.length ? text.slice(offsets[i], offsets[i + 1]) : '');
}

/**
 * Publishes a model just opened (info: the host's answer to 'open', host-opener.js), or null when it
 * was closed.
 */
export function publishOpened(info) {
  if (!info) {
    if (current === null) return;
    current = null;
  } else {
    const { key, name, kind, config, vocabSize, stop, bos } = info;
    const labels = unpackStrings(info.labels), texts = unpackStrings(info.texts);
    const gone = () => new Error(`${name} was closed in "Open a model file": open it again`);
    const alive = () => { if (current?.key !== key) throw gone(); };
    current = {
      key, name, kind, config: { ...config }, vocabSize, stop, bos,
      async forward(ids, { lens = false } = {}) {
        alive();
        return hostCall('opener', { type: 'forward', key, ids: Array.from(ids), lens });
      },
      async encode(text) {
        alive();
        return Int32Array.from((await hostCall('opener', { type: 'encode', text })).ids);
      },
      async decode(ids) {
        alive();
        return hostCall('opener', { type: 'decode', ids: Array.from(ids) });
      },
      piece: texts,
      label: (id) => labels(id) || `#${id}`,
    };
  }
  target.dispatchEvent(new CustomEvent('change', { detail: current }));
}

/**
 * The opened model's tokenizer as lab/codec.js's codec (what views/circuits.js and the picture read),
 * with kind 'bpe' (sub-word ids, not characters) and unit 'token'. Its text and labels are the host's
 * (sent once); encode, twice and tokenizer.decode ask the host, so they return Promises (a panel awaits
 * every codec's encode: a shipped codec's plain value passes through await unchanged).
 */
export function openedCodec(opened) {
  const vocab = opened.vocabSize;
  const text = (id) => opened.piece(id);
  const encode = async (s) => {
    const ids = await opened.encode(s);
    return { ids, texts: Array.from(ids, text), dropped: [] };
  };
  return {
    kind: 'bpe', unit: 'token', vocab, tokenizer: { decode: (ids) => opened.decode(ids) },
    encode,
    text,
    // llama2.c's <s> and </s> print nothing but are labelled
    label: (id) => visible(text(id)) || opened.label(id),
    // random ordinary tokens (past the byte pieces when there is room), then the same again
    probe: () => Int32Array.from(probeTokens(vocab, LETTER_PROBE.letters, LETTER_PROBE.seed, vocab > 259 + LETTER_PROBE.letters ? 259 : 3)),
    async twice(s, tokens) {
      for (let chars = tokens * 4; chars > 8; chars = Math.floor(chars * 0.85)) {
        const t = phraseTwice(s, chars);
        if ((await encode(t)).ids.length <= tokens) return t;
      }
      return phraseTwice(s, 8);
    },
    period: tokenPeriod,
  };
}
