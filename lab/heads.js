// heads.js: what each attention head does, scored on its weights (Olsson et al. 2022, "In-context
// Learning and Induction Heads"; Elhage et al. 2021). For a head's weights A (T x T, row i reads
// column j <= i) over tokens x:
//   previous token  mean over i >= 1 of A[i, i-1]
//   induction       mean over positions i whose token occurred before (last at j < i - 1) of
//                   A[i, j+1]: the token that followed the earlier occurrence
//   duplicate token the same positions, A[i, j]: the earlier occurrence itself
//   first token     mean over i >= 1 of A[i, 0] (a sink)
//   local           mean over i of the weight on the last four positions, A[i, i-3 .. i]
// The standard probe is a random token sequence repeated twice: every position of the second half
// has an earlier occurrence, so induction and duplicate-token scores are defined on all of them.
// Each row is first made a share of its total: |A[i, j]| / sum over j of |A[i, j]| (a softmax row
// already sums to 1; retention's and the delta rule's weights are signed and unnormalised, and
// their scores are then shares of the head's absolute weight).
// Pure functions in double precision, shared by the page and the tests.

export const KINDS = ['previous token', 'induction', 'duplicate token', 'first token', 'local'];

/** A random sequence of `length` tokens in [lo, vocab) (distinct when there are enough), repeated twice (seeded). */
export function probeTokens(vocab, length, seed = 1, lo = 1) {
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  const seen = new Set(), half = [];
  while (half.length < length) {
    const t = lo + (next() % (vocab - lo));
    if (seen.has(t) && vocab - lo >= length) continue;
    seen.add(t);
    half.push(t);
  }
  return [...half, ...half];
}

/** The character models' probe: this many distinct random letters, then the same again (seeded). */
export const LETTER_PROBE = Object.freeze({ letters: 24, seed: 7 });

/** probeTokens over the letters a-z (character tokens 1-26 of the chars alphabet), as a string. */
export function probeLetters({ letters, seed } = LETTER_PROBE) {
  return probeTokens(27, letters, seed, 1).map((t) => String.fromCharCode(96 + t)).join('');
}

/** The share of a head's weight in one pattern from which nameHead names the head by it. */
export const NAMED_AT = 0.3;

/** The head of scoreHeads' list with the largest score of one kind ('induction', 'previous token', ...). */
export function strongestHead(heads, kind) {
  return heads.reduce((a, b) => (b.scores[kind] > a.scores[kind] ? b : a));
}

// Each row of a head's weights (T x T) as shares of its absolute total, in double precision.
function rowShares(weights, T) {
  const w = new Float64Array(T * T);
  for (let i = 0; i < T; i++) {
    let total = 0;
    for (let j = 0; j <= i; j++) total += Math.abs(weights[i * T + j]);
    for (let j = 0; j <= i && total > 0; j++) w[i * T + j] = Math.abs(weights[i * T + j]) / total;
  }
  return w;
}

/** The five scores of one head's weights w (T*T, row-major) over tokens (T). */
export function scoreHead(weights, tokens) {
  const T = tokens.length;
  const w = rowShares(weights, T);
  const last = new Map(); // token -> its latest position so far
  let prev = 0, first = 0, local = 0, ind = 0, dup = 0, repeats = 0;
  for (let i = 0; i < T; i++) {
    const row = i * T;
    if (i >= 1) prev += w[row + i - 1], first += w[row];
    let l = 0;
    for (let j = Math.max(0, i - 3); j <= i; j++) l += w[row + j];
    local += l;
    const j = last.get(tokens[i]);
    if (j !== undefined && j + 1 < i) {
      ind += w[row + j + 1];
      dup += w[row + j];
      repeats++;
    }
    last.set(tokens[i], i);
  }
  const n = Math.max(1, T - 1);
  return {
    'previous token': prev / n, induction: repeats ? ind / repeats : 0, 'duplicate token': repeats ? dup / repeats : 0,
    'first token': first / n, local: local / T, repeats,
  };
}

/**
 * For a text that is a phrase and then the same phrase again `period` tokens later (T tokens in all):
 * the mean over positions i >= period of the share of row i on column i - period + 1, the token after
 * the same place in the first copy. What an induction head does on real text, where letters recur
 * inside the phrase and the induction score's latest earlier occurrence is often another place.
 */
export function jumpBack(weights, T, period) {
  if (!(period >= 1 && period < T)) return 0;
  const w = rowShares(weights, T);
  let sum = 0;
  for (let i = period; i < T; i++) sum += w[i * T + i - period + 1];
  return sum / (T - period);
}

/** A phrase for the guided step (the learned panel's) and the interventions' text: the user's text cut to fit twice in `max` characters, then twice. */
export function phraseTwice(text, max) {
  let phrase = text.trim().replace(/\s+/g, ' ');
  const room = Math.floor((max - 2) / 2);
  if (phrase.length > room) phrase = phrase.slice(0, room).replace(/\s+\S*$/, '') || phrase.slice(0, room);
  if (phrase.length < 4) phrase = 'the old lamp';
  return `${phrase}. ${phrase}`;
}

/** The period of a text that is a phrase, ". ", and the phrase again (the guided step's), else 0. */
export function phrasePeriod(chars) {
  const T = chars.length, L = (T - 2) / 2;
  if (!Number.isInteger(L) || L < 1 || chars[L] !== '.' || chars[L + 1] !== ' ') return 0;
  for (let k = 0; k < L; k++) if (chars[k] !== chars[L + 2 + k]) return 0;
  return L + 2;
}

/**
 * Every head's scores: attention[layer][head] (T*T each, as model.forward returns it) over tokens.
 * Returns [{ layer, head, scores, name, score }] with the head named by what it does (nameHead).
 */
export function scoreHeads(attention, tokens) {
  const out = [];
  attention.forEach((heads, layer) => heads.forEach((w, head) => {
    const scores = scoreHead(w, tokens);
    out.push({ layer, head, scores, ...nameHead(scores) });
  }));
  return out;
}

/** A model's weight on the first token of ids: its 'first token' score (a sink) averaged over every
 * layer's heads, one forward pass (the attention-sinks panel and scripts/sink-claims.mjs). */
export function firstTokenWeight(model, ids) {
  const hs = scoreHeads(model.forward(ids).attention, ids).map((h) => h.scores['first token']);
  return hs.reduce((a, b) => a + b, 0) / hs.length;
}

/** The first token's share of a causal row's weight if every row i = 1 .. T - 1 spread it evenly
 * (1 / (i + 1)), averaged over those rows: what firstTokenWeight and restingWeights compare with. */
export function evenFirstWeight(T) {
  let s = 0;
  for (let i = 1; i < T; i++) s += 1 / (i + 1) / (T - 1);
  return s;
}

/** Where the weight goes on rows that rest and rows that work: the mean over layers, heads and query
 * positions >= 1 of the weight on the first token, split by working(ids, i) (a row whose token has a
 * job for attention) and resting rows, and the weight no key takes (a learned sink's column: 1 less
 * the row's sum), on resting rows. Raw softmax weights, not re-normalised over the keys; null for a
 * kind of row the starts do not have (a text with no trigger has no working rows). */
export function restingWeights(model, starts, working) {
  const sum = { resting: 0, working: 0, sink: 0 }, count = { resting: 0, working: 0 };
  for (const ids of starts) {
    const T = ids.length, att = model.forward(ids).attention;
    for (const heads of att) for (const w of heads) for (let i = 1; i < T; i++) {
      const kind = working(ids, i) ? 'working' : 'resting';
      sum[kind] += w[i * T];
      count[kind]++;
      if (kind === 'resting') {
        let row = 0;
        for (let j = 0; j <= i; j++) row += w[i * T + j];
        sum.sink += Math.max(0, 1 - row); // rows without a sink sum to 1 up to rounding
      }
    }
  }
  const per = (k, n) => (count[n] ? sum[k] / count[n] : null);
  return { resting: per('resting', 'resting'), working: per('working', 'working'), sink: per('sink', 'resting') };
}

/**
 * A name for a head from its scores: the strongest of induction, previous token, duplicate token
 * and first token when it holds at least 0.3 of the head's weight; else "local" when the last four
 * positions hold at least 0.6 of it; else "spread" (no one pattern).
 */
export function nameHead(s) {
  let best = null;
  for (const k of ['induction', 'previous token', 'duplicate token', 'first token'])
    if (!best || s[k] > s[best]) best = k;
  if (s[best] >= NAMED_AT) return { name: best, score: s[best] };
  if (s.local >= 0.6) return { name: 'local', score: s.local };
  return { name: 'spread', score: Math.max(s[best], s.local) };
}

/**
 * One sentence on the strongest induction head of scoreHeads' list, or that there is none: a head
 * is called an induction head only when its induction score reaches NAMED_AT (the share nameHead
 * names a head by), so 0.02 is never "the strongest induction head" without saying it is none.
 */
export function describeInduction(heads) {
  const top = strongestHead(heads, 'induction'), s = top.scores.induction.toFixed(2);
  const where = `layer ${top.layer + 1}, head ${top.head + 1}`;
  return top.scores.induction >= NAMED_AT
    ? { found: true, head: top, text: `the strongest induction head is ${where} (score ${s})` }
    : { found: false, head: top, text: `no head is an induction head: none puts ${NAMED_AT} of its weight on the token that followed `
      + `an earlier occurrence (measured that way, the strongest induction head is ${where} (score ${s}), below the ${NAMED_AT} `
      + 'that names one)' };
}
