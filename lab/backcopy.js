// backcopy.js: the bigram-backcopy text (Guo et al. 2024, "Active-Dormant Attention Heads:
// Mechanistically Demystifying Extreme-Token Phenomena in LLMs", arXiv 2410.13835), in letters: a
// random bigram chain over 23 letters, where three trigger letters (q, x, z) are each followed by a
// copy of the letter before them. Only after a trigger does the next letter depend on more than the
// current one, so a head that fetches "the letter before" has work at one position in about ten and
// nothing to do elsewhere: the setting in which Guo et al. find a head resting on the first token
// (an attention sink) at every other position. scripts/sink-claims.mjs --part backcopy trains on it, and the attention-sinks panel reads it.
//   backcopyText(seed, { docs, minChars, maxChars }): fortune(6)'s format (documents between "%" lines)
//   backcopyStream(seed, chars): one document of `chars` letters (reading past the window)
export const TRIGGERS = 'qxz';
export const LETTERS = [...'abcdefghijklmnopqrstuvwxyz'].filter((c) => !TRIGGERS.includes(c));
export const TRIGGER_SHARE = 0.12; // the chance that a letter is followed by a trigger

// mulberry32: a small seeded generator, so a seed gives the same text everywhere
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The chain, fixed for every text (seed 0): each letter's next letter among 4 favourites (weights
// 8, 4, 2, 1 over 15 of 16) and any other letter (1 of 16, spread), then scaled by 1 - TRIGGER_SHARE;
// the triggers share TRIGGER_SHARE evenly.
function chain() {
  const r = rng(0), table = new Map();
  for (const c of LETTERS) {
    const others = LETTERS.slice(), fav = [];
    for (let k = 0; k < 4; k++) fav.push(others.splice(Math.floor(r() * others.length), 1)[0]);
    const p = new Map(LETTERS.map((l) => [l, 1 / 16 / LETTERS.length]));
    fav.forEach((l, k) => p.set(l, p.get(l) + ((15 / 16) * 2 ** (3 - k)) / 15));
    const row = [...p].map(([l, w]) => [l, w * (1 - TRIGGER_SHARE)]);
    for (const t of TRIGGERS) row.push([t, TRIGGER_SHARE / TRIGGERS.length]);
    table.set(c, row);
  }
  return table;
}
const CHAIN = chain();

function pick(row, u) {
  for (const [l, w] of row) if ((u -= w) < 0) return l;
  return row[row.length - 1][0];
}

function letters(r, n) {
  let s = LETTERS[Math.floor(r() * LETTERS.length)];
  while (s.length < n) {
    const last = s[s.length - 1];
    s += TRIGGERS.includes(last) ? s[s.length - 2] : pick(CHAIN.get(last), r());
  }
  return s;
}

/** Documents of minChars..maxChars letters in fortune(6)'s format, from this seed. */
export function backcopyText(seed, { docs = 20000, minChars = 160, maxChars = 320 } = {}) {
  const r = rng(seed), out = [];
  for (let d = 0; d < docs; d++) out.push(letters(r, minChars + Math.floor(r() * (maxChars - minChars + 1))));
  return `${out.join('\n%\n')}\n`;
}

/** One document of `chars` letters from this seed. */
export const backcopyStream = (seed, chars) => letters(rng(seed), chars);

/** The rows attention has work on, for restingWeights (lab/heads.js): row i of ids when its token is a
 * trigger (the next letter is the one before it). encode: the chars tokenizer's. */
export function triggerRows(encode) {
  const ids = new Set(encode(TRIGGERS));
  return (tokens, i) => ids.has(tokens[i]);
}
