// codec.js: how a trained model's text becomes its tokens and back, for the page and the scripts.
// Two kinds: the character models' chars tokenizer (lib.charsTokenizer: lower case, one character
// a token, others dropped) and a byte-level BPE (lib.trainTokenizer / lib.loadTokenizer: any text,
// a sub-word piece a token). A codec:
//   kind          'chars' | 'bpe'
//   unit          'character' | 'piece' (what one token is, in the page's words)
//   vocab         the tokenizer's size (a model's vocab may be wider)
//   encode(text)  -> { ids: Int32Array, texts: [the text of each token], dropped: [characters left out] }
//   text(id)      the text of one token ('' for <unk>, <s>, </s>)
//   label(id)     the token as the page shows it: a space as ␣, a newline as ↵, a lone byte as <0xXX>
//   probe()       the standard probe's ids (heads.js): random tokens, then the same again
//   twice(text, tokens)  the user's text as a phrase read twice (heads.js phraseTwice), in at most
//                 `tokens` tokens
//   period(ids)   the offset of the second copy in a phrase read twice (heads.js jumpBack's period), else 0
import { LETTER_PROBE, phrasePeriod, phraseTwice, probeLetters, probeTokens } from './heads.js';

/** A token's text as the page shows it: spaces, newlines and tabs made visible. */
export const visible = (s) => s.replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥');

/** The chars tokenizer's codec (the character models'). */
export function charsCodec(lib) {
  const tok = lib.charsTokenizer;
  const text = (id) => (id === 0 ? '' : tok.decode([id]));
  return {
    kind: 'chars', unit: 'character', vocab: tok.vocab,
    encode(s) {
      const lower = s.toLowerCase();
      const all = tok.encode(lower), chars = [...lower];
      const keep = [], dropped = new Set();
      all.forEach((id, k) => (id !== 0 ? keep.push(k) : dropped.add(chars[k])));
      return { ids: Int32Array.from(keep, (k) => all[k]), texts: keep.map((k) => chars[k]), dropped: [...dropped] };
    },
    text,
    label: (id) => (id === 0 ? '⟂' : visible(text(id))),
    probe: () => tok.encode(probeLetters()),
    twice: (s, tokens) => phraseTwice(s.toLowerCase(), tokens),
    period(ids) {
      return phrasePeriod(Array.from(ids, text));
    },
  };
}

const SPECIALS = 3; // <unk>, <s>, </s> at 0..2; the 256 bytes at 3..258; merged pieces after

/**
 * A BPE piece's bytes as text (a byte of a longer character alone becomes U+FFFD). The codec's
 * text(id) and label(id), and the feature browser's worker (web/features-worker.js), read pieces so.
 */
export const pieceString = (tokenizer, id) => new TextDecoder('utf-8', { fatal: false }).decode(tokenizer.pieceBytes(id));

/** A byte-level BPE's codec (lib.loadTokenizer's or lib.trainTokenizer's tokenizer). */
export function bpeCodec(tokenizer) {
  const pieceText = (id) => (id < SPECIALS ? '' : pieceString(tokenizer, id));
  const label = (id) => {
    if (id < SPECIALS) return ['<unk>', '<s>', '</s>'][id];
    const b = tokenizer.pieceBytes(id), s = pieceText(id);
    // a piece that is not whole UTF-8 characters (part of one) shows its bytes
    if (s.includes('\uFFFD')) return [...b].map((x) => `<0x${x.toString(16).toUpperCase().padStart(2, '0')}>`).join('');
    return visible(s);
  };
  const firstMerged = SPECIALS + 256;
  return {
    kind: 'bpe', unit: 'piece', vocab: tokenizer.vocabSize, tokenizer,
    encode(s) {
      const ids = tokenizer.encode(s);
      // each piece's text: the characters it completes (a character split over pieces goes with its
      // last piece), so that the texts join to s exactly
      const dec = new TextDecoder('utf-8', { fatal: false });
      return { ids, texts: Array.from(ids, (id) => (id < SPECIALS ? '' : dec.decode(tokenizer.pieceBytes(id), { stream: true }))), dropped: [] };
    },
    text: pieceText,
    label,
    // random merged pieces (the text's common tokens, not the 256 raw bytes, most of which a model
    // of English text has never read), then the same again
    probe: () => Int32Array.from(probeTokens(tokenizer.vocabSize, LETTER_PROBE.letters, LETTER_PROBE.seed,
      tokenizer.vocabSize > firstMerged + LETTER_PROBE.letters ? firstMerged : SPECIALS)),
    twice(s, tokens) {
      // phraseTwice counts characters: cut the phrase until both copies fit in `tokens` pieces
      for (let chars = tokens * 4; chars > 8; chars = Math.floor(chars * 0.85)) {
        const t = phraseTwice(s, chars);
        if (tokenizer.encode(t).length <= tokens) return t;
      }
      return phraseTwice(s, 8);
    },
    period: tokenPeriod,
  };
}

/**
 * The period p of a phrase read twice as tokens: from a little after p on, the second copy repeats
 * the first token for token at p places back, over at least 3 tokens. A BPE spells a word after a
 * space as other pieces than at the start of the text ("t", "he" there, " the" here), so the second
 * copy's first 1 to 3 tokens may differ; the copies' offset after them is p. Else 0. jumpBack(weights,
 * T, p) then reads from each token of the second copy to the one after the same place in the first.
 */
export function tokenPeriod(ids) {
  const T = ids.length;
  for (let p = Math.max(2, Math.ceil(T / 2) - 2); p <= T - 3; p++) {
    for (let s = p + 1; s <= p + 3 && T - s >= 3; s++) {
      let same = true;
      for (let i = s; i < T && same; i++) same = ids[i] === ids[i - p];
      if (same) return p;
    }
  }
  return 0;
}

const cache = new Map(); // url -> Promise<codec>
const defaultFetch = async (url) => {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`could not fetch ${url.split('/').pop()}: HTTP ${r.status}`);
  return r.arrayBuffer();
};
/**
 * The codec of a catalogue entry (web/models/*.json): its `tokenizer` file (a tokenizer.json beside
 * the model, fetched relative to base) when it names one, else the chars tokenizer. fetchBytes(url)
 * -> Promise<ArrayBuffer> fetches it (the page passes web/fetch-once.js fetchOnce: one download per page).
 */
export function entryCodec(lib, entry, base, fetchBytes = defaultFetch) {
  if (!entry?.tokenizer) return Promise.resolve(charsCodec(lib));
  const url = new URL(entry.tokenizer, base).href;
  if (!cache.has(url)) {
    cache.set(url, fetchBytes(url).then((bytes) => bpeCodec(lib.loadTokenizer(JSON.parse(new TextDecoder().decode(bytes))))));
    cache.get(url).catch(() => cache.delete(url));
  }
  return cache.get(url);
}
