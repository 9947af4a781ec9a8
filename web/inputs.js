// inputs.js: what the attention forms are fed. Either seeded random Q, K, V, or a typed token
// sequence turned into vectors by a fixed seeded embedding, so a student sees token labels:
//   X = E[token] + PE(pos)      (n, d)   E: a hash of the token and the seed, PE: sinusoidal
//   Q = X Wq, K = X Wk, V = X Wv         W*: (d, d), seeded
// The same token always gets the same embedding for a given seed, so repeated words attend alike.

/** xorshift32 stream: returns a function giving uniform [0, 1). */
export function rng(seed) {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

/** Seeded uniform [lo, hi) Float32Array. */
export function randomF32(length, seed, lo = -1, hi = 1) {
  const next = rng(seed);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = lo + next() * (hi - lo);
  return out;
}

/** FNV-1a 32-bit hash of a string, mixed with a seed. */
function hash(text, seed) {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Splits text into tokens: words when it has spaces, characters otherwise. At most maxTokens. */
export function tokenize(text, maxTokens) {
  const trimmed = text.trim();
  const tokens = /\s/.test(trimmed) ? trimmed.split(/\s+/) : [...trimmed];
  return tokens.filter(Boolean).slice(0, maxTokens);
}

// y (n, dout) = x (n, din) W (din, dout)
function matmul(x, w, n, din, dout) {
  const y = new Float32Array(n * dout);
  for (let i = 0; i < n; i++) {
    for (let p = 0; p < din; p++) {
      const a = x[i * din + p];
      for (let j = 0; j < dout; j++) y[i * dout + j] += a * w[p * dout + j];
    }
  }
  return y;
}

// Logit spread: q and k entries get variance about 2, so softmax rows are neither flat nor one-hot.
const QK_RANGE = Math.sqrt(3 * 2);

/**
 * Builds the inputs for one view from the state.
 * Returns { n, d, labels: string[], x, q, k, v } with x, q, k, v Float32Arrays of n*d.
 */
export function makeInputs({ input, text, n, d, seed }, maxTokens) {
  if (input === 'random') {
    const labels = Array.from({ length: n }, (_, i) => String(i));
    const q = randomF32(n * d, seed * 4 + 1, -QK_RANGE, QK_RANGE);
    const k = randomF32(n * d, seed * 4 + 2, -QK_RANGE, QK_RANGE);
    const v = randomF32(n * d, seed * 4 + 3, -1, 1);
    const x = randomF32(n * d, seed * 4 + 4, -1, 1);
    return { n, d, labels, x, q, k, v };
  }
  let labels = tokenize(text, maxTokens);
  if (labels.length < 2) labels = [...labels, ...['<empty>', '<empty>']].slice(0, 2);
  const len = labels.length;
  const x = new Float32Array(len * d);
  for (let i = 0; i < len; i++) {
    const e = randomF32(d, hash(labels[i], seed), -1, 1);
    for (let c = 0; c < d; c++) {
      const angle = i / 10000 ** ((2 * Math.floor(c / 2)) / d);
      x[i * d + c] = e[c] + (c % 2 === 0 ? Math.sin(angle) : Math.cos(angle));
    }
  }
  // x entries have variance about 1/3 + 1/2; a weight range of sqrt(3 * 2.4 / d) gives q, k variance about 2.
  const wr = Math.sqrt((3 * 2.4) / d);
  const wq = randomF32(d * d, seed * 8 + 5, -wr, wr);
  const wk = randomF32(d * d, seed * 8 + 6, -wr, wr);
  const wv = randomF32(d * d, seed * 8 + 7, -Math.sqrt(3 / d), Math.sqrt(3 / d));
  return {
    n: len, d, labels, x,
    q: matmul(x, wq, len, d, d), k: matmul(x, wk, len, d, d), v: matmul(x, wv, len, d, d),
  };
}
