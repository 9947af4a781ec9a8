// hf-tokenizer.js: a reader of Hugging Face tokenizer.json files for the BPE families in use (GPT-2,
// Llama 3, Qwen 2/3: byte-level BPE with split patterns; Llama 2, TinyLlama, Gemma 3: SentencePiece-
// style BPE with "▁" and byte fallback), in plain JS with no dependency (docs/tokenizers.md). Its
// behaviour follows @huggingface/tokenizers (the JavaScript tokenizer transformers.js runs), which
// the tests hold it to id for id. lib.loadTokenizer (bpe.js) sends here every tokenizer.json that is
// not this library's own layout.
import { checkKeys, describe, fail } from './core.js';

// GPT-2's byte-to-unicode table (encoder.py bytes_to_unicode): every byte as one visible character
// (bpe.js's too).
export const BYTE_CHAR = (() => {
  const keep = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCharCode(keep(b) ? b : 256 + extra++);
  return out;
})();
export const CHAR_BYTE = new Map(BYTE_CHAR.map((c, b) => [c, b]));
// GPT-2's pattern, as @huggingface/tokenizers runs it for a ByteLevel pre-tokenizer with use_regex
const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const HEX = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
const utf8 = new TextEncoder();
const NORMALIZERS = ['Sequence', 'Prepend', 'Replace', 'NFC', 'NFD', 'NFKC', 'NFKD', 'Lowercase'];
const PRE_TOKENIZERS = ['Sequence', 'Split', 'ByteLevel', 'Metaspace', 'Digits'];
const DECODERS = ['Sequence', 'ByteLevel', 'Replace', 'ByteFallback', 'Fuse', 'Strip', 'Metaspace'];
const POST_PROCESSORS = ['TemplateProcessing', 'ByteLevel', 'Sequence'];

const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * An Oniguruma/Rust pattern (tokenizer.json's Split "Regex") as a JavaScript `u` regex: `(?i:...)`
 * folds ASCII letters ([sS]) since V8 before 12.5 has no inline flags; \s \S \d \D \w \W take their
 * Unicode meaning (\p{White_Space}: JS's \s adds U+FEFF and lacks U+0085); possessive quantifiers
 * and atomic groups lose their (here harmless) backtracking control. The rewriting that
 * @huggingface/tokenizers does, for the constructs these files use.
 */
export function onigurumaToJs(src) {
  const word = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}';
  const esc = { s: '\\p{White_Space}', S: '\\P{White_Space}', d: '\\p{Nd}', D: '\\P{Nd}', w: `[${word}]`, W: `[^${word}]` };
  const inClass = { s: '\\p{White_Space}', S: '\\P{White_Space}', d: '\\p{Nd}', D: '\\P{Nd}', w: word };
  let out = '', fold = false, depth = 0, quant = false; // quant: the last thing written was a quantifier
  const folds = [];
  for (let i = 0; i < src.length;) {
    const c = src[i];
    const wasQuant = quant;
    quant = false;
    if (c === '\\') {
      const braced = /^\\([pPxu])\{([^}]*)\}/.exec(src.slice(i));
      if (braced) { out += braced[1] === 'x' ? `\\u{${braced[2]}}` : braced[0]; i += braced[0].length; continue; }
      const n = src[i + 1];
      if (n === undefined) throw new SyntaxError('a pattern ending in a backslash');
      if (depth > 0 && inClass[n]) out += inClass[n];
      else if (depth === 0 && esc[n]) out += esc[n];
      else if (n === 'x' || n === 'u' || n === 'c') { // \xHH \uHHHH \cX
        const m = /^\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|c[A-Za-z])/.exec(src.slice(i));
        if (!m) throw new SyntaxError(`an escape ${src.slice(i, i + 4)} this reader does not know`);
        out += m[0]; i += m[0].length; continue;
      } else if (/[A-Za-z0-9]/.test(n)) {
        if (!'nrtfvbB0123456789'.includes(n) && !(depth === 0 && 'AzZ'.includes(n))) throw new SyntaxError(`the escape \\${n}, which this reader does not translate`);
        out += n === 'A' ? '(?<![\\s\\S])' : n === 'z' ? '(?![\\s\\S])' : n === 'Z' ? '(?=\\n?(?![\\s\\S]))' : `\\${n}`;
      } else out += '^$\\.*+?()[]{}|/'.includes(n) || (depth > 0 && n === '-') ? `\\${n}` : n;
      i += 2;
      continue;
    }
    if (depth > 0) { // inside a character class
      if (c === '[') { if (src.startsWith('[:', i)) throw new SyntaxError('POSIX bracket classes'); depth++; out += c; }
      else if (c === ']') { depth--; out += c; }
      else if (fold && /[A-Za-z]/.test(c)) throw new SyntaxError('letters in a character class inside (?i:...)');
      else out += c;
      i++;
      continue;
    }
    if (c === '[') { depth = 1; out += c; if (src[i + 1] === '^') { out += '^'; i++; } if (src[i + 1] === ']') { out += '\\]'; i++; } i++; continue; }
    if (c === '(') {
      if (src.startsWith('(?i:', i)) { folds.push(fold); fold = true; out += '(?:'; i += 4; continue; }
      if (src.startsWith('(?>', i)) { folds.push(fold); out += '(?:'; i += 3; continue; }
      if (/^\(\?[a-z-]+[:)]/.test(src.slice(i)) && !/^\(\?[:=!<]/.test(src.slice(i))) throw new SyntaxError('inline flags other than (?i:...)');
      folds.push(fold); out += c; i++; continue;
    }
    if (c === ')') { fold = folds.pop() ?? false; out += c; i++; continue; }
    if (c === '+' && wasQuant) { i++; continue; } // possessive: x++ -> x+
    if (c === '+' || c === '*') { out += c; quant = true; i++; continue; }
    if (c === '?') { out += c; quant = !wasQuant; i++; continue; } // after a quantifier, ? makes it lazy
    if (c === '{') {
      const q = /^\{(\d+(?:,\d*)?|,\d+)\}/.exec(src.slice(i));
      if (q) { out += q[1].startsWith(',') ? `{0${q[1]}}` : q[0]; quant = true; i += q[0].length; continue; }
      out += '\\{'; i++; continue;
    }
    if (c === '.') { out += '[^\\n]'; i++; continue; }
    if (c === '^') { out += '(?:(?<![\\s\\S])|(?<=\\n))'; i++; continue; } // Oniguruma's ^ and $ are line anchors
    if (c === '$') { out += '(?:(?=\\n)|(?![\\s\\S]))'; i++; continue; }
    out += fold && /[A-Za-z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c;
    i++;
  }
  return out;
}

function compilePattern(what, pattern) {
  if (!isObject(pattern)) fail(`${what} is ${describe(pattern)}; expected { "String": ... } or { "Regex": ... }`);
  if (typeof pattern.String === 'string') return new RegExp(escapeRegExp(pattern.String), 'gu');
  if (typeof pattern.Regex === 'string') {
    try {
      return new RegExp(onigurumaToJs(pattern.Regex), 'gu');
    } catch (e) {
      return fail(`${what}.Regex ${JSON.stringify(pattern.Regex)} has no JavaScript equivalent here (${e.message})`);
    }
  }
  return fail(`${what} has neither a "String" nor a "Regex" (keys: ${Object.keys(pattern).join(', ')})`);
}

// ---- normalizers: string -> string --------------------------------------------------------------

function makeNormalizer(what, n) {
  if (n === null || n === undefined) return null;
  if (!isObject(n)) fail(`${what} is ${describe(n)}; expected an object with a "type"`);
  switch (n.type) {
    case 'Sequence': {
      if (!Array.isArray(n.normalizers)) fail(`${what}.normalizers is ${describe(n.normalizers)}; expected an array`);
      const steps = n.normalizers.map((x, i) => makeNormalizer(`${what}.normalizers[${i}]`, x)).filter(Boolean);
      return (s) => { for (const f of steps) s = f(s); return s; };
    }
    case 'Prepend': {
      if (typeof n.prepend !== 'string') fail(`${what}.prepend is ${describe(n.prepend)}; expected a string`);
      return (s) => n.prepend + s;
    }
    case 'Replace': {
      const re = compilePattern(`${what}.pattern`, n.pattern), content = n.content ?? '';
      if (typeof content !== 'string') fail(`${what}.content is ${describe(content)}; expected a string`);
      if (typeof n.pattern.String === 'string') {
        const from = n.pattern.String;
        return from === '' ? (s) => s : (s) => s.replaceAll(from, content);
      }
      return (s) => s.replace(re, () => content);
    }
    case 'NFC': case 'NFD': case 'NFKC': case 'NFKD': return (s) => s.normalize(n.type);
    case 'Lowercase': return (s) => s.toLowerCase();
    default:
      return fail(`${what}.type is ${describe(n.type)}, a normalizer this reader does not run (it runs ${NORMALIZERS.join(', ')})`);
  }
}

// ---- pre-tokenizers: the pieces of a section, then whether the model reads them as bytes -------

// split text by re (global) with a Split's behaviour (as the Rust tokenizers define them; on
// "the-final--countdown" by "-": Isolated the,-,final,-,-,countdown; Removed the,final,countdown;
// MergedWithPrevious the-,final-,-,countdown; MergedWithNext the,-final,-,-countdown; Contiguous
// the,-,final,--,countdown), appended to out; no piece is empty
function splitBy(text, re, behavior, out) {
  const base = out.length;
  let prev = 0, lastMatch = null; // lastMatch: whether the previous piece of this text was a match
  const piece = (s, isMatch) => {
    if (behavior === 'Removed' && isMatch) { lastMatch = true; return; }
    const join = lastMatch !== null && out.length > base && (
      (behavior === 'Contiguous' && isMatch && lastMatch) ||
      (behavior === 'MergedWithPrevious' && isMatch && !lastMatch) ||
      (behavior === 'MergedWithNext' && !isMatch && lastMatch));
    if (join) out[out.length - 1] += s; else out.push(s);
    lastMatch = isMatch;
  };
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    if (m.index > prev) piece(text.slice(prev, m.index), false);
    piece(m[0], true);
    prev = m.index + m[0].length;
  }
  if (prev < text.length) piece(text.slice(prev), false);
  return out;
}

// a pre-tokenizer: (pieces, sectionIndex) -> pieces; byteLevel: its last step turns pieces into bytes
function makePreTokenizer(what, p, state) {
  if (p === null || p === undefined) return null;
  if (!isObject(p)) fail(`${what} is ${describe(p)}; expected an object with a "type"`);
  if (state.byteLevel) fail(`${what} comes after a ByteLevel pre-tokenizer; this reader needs ByteLevel last`);
  switch (p.type) {
    case 'Sequence': {
      if (!Array.isArray(p.pretokenizers)) fail(`${what}.pretokenizers is ${describe(p.pretokenizers)}; expected an array`);
      const steps = p.pretokenizers.map((x, i) => makePreTokenizer(`${what}.pretokenizers[${i}]`, x, state)).filter(Boolean);
      return (pieces, section) => { for (const f of steps) pieces = f(pieces, section); return pieces; };
    }
    case 'Split': {
      const re = compilePattern(`${what}.pattern`, p.pattern);
      if (p.invert) fail(`${what}.invert is true; this reader splits on matches only (invert false)`);
      const behavior = p.behavior ?? 'Isolated';
      const known = ['Isolated', 'Removed', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'];
      if (!known.includes(behavior)) fail(`${what}.behavior is ${describe(behavior)}; expected one of ${known.join(', ')}`);
      return (pieces) => { const out = []; for (const s of pieces) splitBy(s, re, behavior, out); return out; };
    }
    case 'ByteLevel': {
      state.byteLevel = true;
      const prefix = !!p.add_prefix_space, regex = p.use_regex ?? true;
      return (pieces) => {
        const out = [];
        for (let s of pieces) {
          if (prefix && !s.startsWith(' ')) s = ' ' + s;
          if (regex) { for (const m of s.matchAll(GPT2_PATTERN)) out.push(m[0]); } else if (s.length) out.push(s);
        }
        return out;
      };
    }
    case 'Digits': { // SmolLM's: digits apart from the rest, each alone with individual_digits (ASCII \d, as the oracle)
      const re = p.individual_digits ? /[^\d]+|\d/gu : /[^\d]+|\d+/gu;
      return (pieces) => { const out = []; for (const s of pieces) for (const m of s.matchAll(re)) out.push(m[0]); return out; };
    }
    case 'Metaspace': {
      const rep = p.replacement ?? '▁';
      if (typeof rep !== 'string' || [...rep].length !== 1) fail(`${what}.replacement is ${describe(rep)}; expected one character`);
      const scheme = p.prepend_scheme ?? (p.add_prefix_space === false ? 'never' : 'always');
      if (!['always', 'first', 'never'].includes(scheme)) fail(`${what}.prepend_scheme is ${describe(scheme)}; expected "always", "first" or "never"`);
      const split = p.split === true;
      return (pieces, section) => {
        const out = [];
        for (let s of pieces) {
          s = s.replaceAll(' ', rep);
          if (!s.startsWith(rep) && (scheme === 'always' || (scheme === 'first' && section === 0))) s = rep + s;
          if (!split) { out.push(s); continue; }
          let at = 0; // split: each "▁" starts a piece (MergedWithNext)
          for (let i = s.indexOf(rep, 1); i > 0; i = s.indexOf(rep, i + 1)) { if (i > at) out.push(s.slice(at, i)); at = i; }
          out.push(s.slice(at));
        }
        return out;
      };
    }
    default:
      return fail(`${what}.type is ${describe(p.type)}, a pre-tokenizer this reader does not run (it runs ${PRE_TOKENIZERS.join(', ')})`);
  }
}

// ---- decoders: tokens (strings) -> tokens ---------------------------------------------------------

function makeDecoder(what, d, addedContents) {
  if (d === null || d === undefined) return null;
  if (!isObject(d)) fail(`${what} is ${describe(d)}; expected an object with a "type"`);
  switch (d.type) {
    case 'Sequence': {
      if (!Array.isArray(d.decoders)) fail(`${what}.decoders is ${describe(d.decoders)}; expected an array`);
      const steps = d.decoders.map((x, i) => makeDecoder(`${what}.decoders[${i}]`, x, addedContents)).filter(Boolean);
      return (toks) => { for (const f of steps) toks = f(toks); return toks; };
    }
    case 'ByteLevel': {
      const td = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
      const bytesOf = (run) => {
        const text = run.join(''), b = new Uint8Array(text.length);
        let n = 0;
        for (const ch of text) { const v = CHAR_BYTE.get(ch); if (v !== undefined) b[n++] = v; }
        return td.decode(b.subarray(0, n));
      };
      return (toks) => {
        const out = [];
        let run = [];
        for (const t of toks) {
          if (addedContents.has(t)) { if (run.length) out.push(bytesOf(run)), run = []; out.push(t); } else run.push(t);
        }
        if (run.length) out.push(bytesOf(run));
        return out;
      };
    }
    case 'Replace': {
      const content = d.content ?? '';
      if (isObject(d.pattern) && typeof d.pattern.String === 'string') {
        const from = d.pattern.String;
        return (toks) => toks.map((t) => t.replaceAll(from, content));
      }
      const re = compilePattern(`${what}.pattern`, d.pattern);
      return (toks) => toks.map((t) => t.replace(re, () => content));
    }
    case 'ByteFallback': {
      const td = new TextDecoder();
      return (toks) => {
        const out = [];
        let bytes = [];
        for (const t of toks) {
          const b = t.length === 6 && t.startsWith('<0x') && t.endsWith('>') ? parseInt(t.slice(3, 5), 16) : NaN;
          if (!Number.isNaN(b)) { bytes.push(b); continue; }
          if (bytes.length) out.push(td.decode(Uint8Array.from(bytes))), bytes = [];
          out.push(t);
        }
        if (bytes.length) out.push(td.decode(Uint8Array.from(bytes)));
        return out;
      };
    }
    case 'Fuse': return (toks) => [toks.join('')];
    case 'Strip': {
      const c = d.content ?? '', start = d.start ?? 0, stop = d.stop ?? 0;
      return (toks) => toks.map((t) => {
        let a = 0, b = t.length;
        for (let i = 0; i < start && t[i] === c; i++) a = i + 1;
        for (let i = 0; i < stop && t[t.length - 1 - i] === c; i++) b = t.length - 1 - i;
        return t.slice(a, Math.max(a, b));
      });
    }
    case 'Metaspace': {
      const rep = d.replacement ?? '▁';
      return (toks) => toks.map((t, i) => { const s = t.replaceAll(rep, ' '); return i === 0 && s.startsWith(' ') ? s.slice(1) : s; });
    }
    default:
      return fail(`${what}.type is ${describe(d.type)}, a decoder this reader does not run (it runs ${DECODERS.join(', ')})`);
  }
}

// ---- post-processors: which special tokens surround a sequence ----------------------------------

function makePostProcessor(what, p) {
  if (p === null || p === undefined) return { before: [], after: [] };
  if (!isObject(p)) fail(`${what} is ${describe(p)}; expected an object with a "type"`);
  switch (p.type) {
    case 'ByteLevel': return { before: [], after: [] };
    case 'Sequence': {
      if (!Array.isArray(p.processors)) fail(`${what}.processors is ${describe(p.processors)}; expected an array`);
      const all = p.processors.map((x, i) => makePostProcessor(`${what}.processors[${i}]`, x));
      // each TemplateProcessing wraps the previous result
      return all.reduce((acc, x) => ({ before: [...x.before, ...acc.before], after: [...acc.after, ...x.after] }), { before: [], after: [] });
    }
    case 'TemplateProcessing': {
      if (!Array.isArray(p.single)) fail(`${what}.single is ${describe(p.single)}; expected an array`);
      const before = [], after = [];
      let seen = false;
      p.single.forEach((item, i) => {
        if (isObject(item) && isObject(item.SpecialToken)) (seen ? after : before).push(String(item.SpecialToken.id));
        else if (isObject(item) && isObject(item.Sequence)) {
          if (item.Sequence.id !== 'A' || seen) fail(`${what}.single[${i}] is the sequence ${describe(item.Sequence.id)}; expected one sequence "A"`);
          seen = true;
        } else fail(`${what}.single[${i}] is ${describe(item)}; expected { SpecialToken } or { Sequence }`);
      });
      return { before, after };
    }
    default:
      return fail(`${what}.type is ${describe(p.type)}, a post-processor this reader does not run (it runs ${POST_PROCESSORS.join(', ')})`);
  }
}

// ---- splitting on added tokens (longest match at the leftmost position, on UTF-16 units) --------

function makeSplitter(contents) {
  const root = new Map();
  for (const w of contents) {
    if (!w.length) continue;
    let node = root;
    for (let i = 0; i < w.length; i++) {
      const c = w.charCodeAt(i);
      let next = node.get(c);
      if (!next) node.set(c, next = new Map());
      node = next;
    }
    node.end = w;
  }
  if (root.size === 0) return (text) => [text];
  return (text) => {
    const out = [], n = text.length;
    let start = 0;
    for (let i = 0; i < n;) {
      let node = root.get(text.charCodeAt(i));
      if (!node) { i++; continue; }
      let match = node.end ?? null;
      for (let j = i + 1; j < n && (node = node.get(text.charCodeAt(j))); j++) if (node.end) match = node.end;
      if (match === null) { i++; continue; }
      if (i > start) out.push(text.slice(start, i));
      out.push(match);
      i += match.length;
      start = i;
    }
    if (start < n) out.push(text.slice(start));
    return out;
  };
}

// ---- the BPE model -------------------------------------------------------------------------------

/**
 * The merges as an open-addressed hash of (left symbol, right symbol) -> rank, and each rank's
 * result symbol. Symbols are ids into `symbols` (every string of the vocabulary, the merges and the
 * added tokens).
 */
function buildModel(what, m, addedTokens) {
  if (!isObject(m.vocab)) fail(`${what}.vocab must be an object of piece: id, got ${describe(m.vocab)}`);
  if (!Array.isArray(m.merges)) fail(`${what}.merges must be an array, got ${describe(m.merges)}`);
  const sym = new Map(), symbols = [];
  const symOf = (s) => { let id = sym.get(s); if (id === undefined) { id = symbols.length; sym.set(s, id); symbols.push(s); } return id; };
  const vocab = new Map();
  for (const [p, id] of Object.entries(m.vocab)) {
    if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) fail(`${what}.vocab[${JSON.stringify(p)}] is ${describe(id)}; expected an id >= 0`);
    vocab.set(p, id);
    symOf(p);
  }
  for (const t of addedTokens) symOf(t.content);
  const nMerges = m.merges.length;
  const left = new Int32Array(nMerges), right = new Int32Array(nMerges), result = new Int32Array(nMerges);
  for (let r = 0; r < nMerges; r++) {
    const mg = m.merges[r];
    let a, b;
    if (typeof mg === 'string') {
      const sp = mg.indexOf(' ');
      if (sp < 0) fail(`${what}.merges[${r}] is ${describe(mg)}; expected "left right" or [left, right]`);
      a = mg.slice(0, sp); b = mg.slice(sp + 1);
      const sp2 = b.indexOf(' ');
      if (sp2 >= 0) b = b.slice(0, sp2); // as split(" ", 2)
    } else if (Array.isArray(mg) && mg.length === 2 && typeof mg[0] === 'string' && typeof mg[1] === 'string') [a, b] = mg;
    else fail(`${what}.merges[${r}] is ${describe(mg)}; expected "left right" or [left, right]`);
    left[r] = symOf(a); right[r] = symOf(b); result[r] = symOf(a + b);
  }
  // the pair table; a pair listed twice keeps its first (lowest) rank
  let cap = 16;
  while (cap < 2 * nMerges) cap *= 2;
  const keyA = new Int32Array(cap).fill(-1), keyB = new Int32Array(cap), rankAt = new Int32Array(cap), mask = cap - 1;
  const slot = (a, b) => (Math.imul(a, 0x9E3779B1) ^ Math.imul(b + 0x7f4a7c15, 0x85EBCA77)) >>> 0 & mask;
  for (let r = 0; r < nMerges; r++) {
    let h = slot(left[r], right[r]);
    while (keyA[h] !== -1 && !(keyA[h] === left[r] && keyB[h] === right[r])) h = (h + 1) & mask;
    if (keyA[h] === -1) { keyA[h] = left[r]; keyB[h] = right[r]; rankAt[h] = r; }
  }
  const rankOf = (a, b) => {
    if (a < 0 || b < 0) return -1;
    let h = slot(a, b);
    for (;;) {
      const k = keyA[h];
      if (k === -1) return -1;
      if (k === a && keyB[h] === b) return rankAt[h];
      h = (h + 1) & mask;
    }
  };
  return { sym, symbols, vocab, rankOf, result, nMerges };
}

/**
 * Merges symbols s[0..n) in place, lowest rank first and leftmost first among equal ranks (as
 * @huggingface/tokenizers' heap); returns the new length. Short words: a scan; long: a heap.
 */
function makeMerger(rankOf, result) {
  let rk = new Int32Array(64), prev = new Int32Array(64), next = new Int32Array(64), heap = new Float64Array(256);
  const SHORT = 48, TWO32 = 4294967296;
  return (s, n) => {
    if (n < 2) return n;
    if (n <= SHORT) {
      for (let i = 0; i + 1 < n; i++) rk[i] = rankOf(s[i], s[i + 1]);
      for (;;) {
        let best = 0x7fffffff, at = -1;
        for (let i = 0; i + 1 < n; i++) { const r = rk[i]; if (r >= 0 && r < best) best = r, at = i; }
        if (at < 0) return n;
        s[at] = result[best];
        for (let i = at + 1; i + 1 < n; i++) s[i] = s[i + 1], rk[i] = rk[i + 1];
        n--;
        if (at > 0) rk[at - 1] = rankOf(s[at - 1], s[at]);
        if (at + 1 < n) rk[at] = rankOf(s[at], s[at + 1]);
      }
    }
    if (prev.length < n) { prev = new Int32Array(2 * n); next = new Int32Array(2 * n); }
    if (heap.length < 3 * n) heap = new Float64Array(3 * n + 16);
    let size = 0;
    const push = (key) => {
      let i = size++;
      while (i > 0) { const p = (i - 1) >> 1; if (heap[p] <= key) break; heap[i] = heap[p]; i = p; }
      heap[i] = key;
    };
    const pop = () => {
      const top = heap[0], last = heap[--size];
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && heap[c + 1] < heap[c]) c++;
        if (heap[c] >= last) break;
        heap[i] = heap[c]; i = c;
      }
      heap[i] = last;
      return top;
    };
    for (let i = 0; i < n; i++) { prev[i] = i - 1; next[i] = i + 1 < n ? i + 1 : -1; }
    for (let i = 0; i + 1 < n; i++) { const r = rankOf(s[i], s[i + 1]); if (r >= 0) push(r * TWO32 + i); }
    while (size > 0) {
      const key = pop(), r = Math.floor(key / TWO32), i = key - r * TWO32, j = next[i];
      if (s[i] < -1 || j < 0 || rankOf(s[i], s[j]) !== r) continue; // s[i] = -2: merged away
      s[i] = result[r];
      const k = next[j];
      next[i] = k; if (k >= 0) prev[k] = i;
      s[j] = -2;
      const p = prev[i];
      if (p >= 0) { const q = rankOf(s[p], s[i]); if (q >= 0) push(q * TWO32 + p); }
      if (k >= 0) { const q = rankOf(s[i], s[k]); if (q >= 0) push(q * TWO32 + i); }
    }
    let m = 0;
    for (let i = 0; i >= 0; i = next[i]) s[m++] = s[i];
    return m;
  };
}

// ---- the tokenizer ------------------------------------------------------------------------------

function detectFamily(json, byteLevel) {
  const m = json.model, pre = JSON.stringify(json.pre_tokenizer ?? null), added = new Set((json.added_tokens ?? []).map((t) => t?.content));
  if (byteLevel) {
    if (added.has('<|begin_of_text|>')) return 'llama3';
    if (added.has('<|im_start|>')) return 'qwen';
    if (/Split/.test(pre)) return 'byte-level-bpe';
    return added.has('<|endoftext|>') ? 'gpt2' : 'byte-level-bpe';
  }
  if (added.has('<start_of_turn>') || added.has('<bos>') && m.byte_fallback) return 'gemma';
  if (m.byte_fallback && added.has('<s>')) return 'llama2';
  return 'bpe';
}

/**
 * readHfTokenizer(source, config?): a Hugging Face tokenizer.json (object, text or UTF-8 bytes) of
 * a BPE model as a tokenizer. config (optional) is tokenizer_config.json (object or text); its
 * bos_token, eos_token, pad_token and unk_token name specialTokens when given.
 */
export function readHfTokenizer(source, config) {
  return hfTokenizerFrom('readHfTokenizer', source, config);
}

const tokenName = (x) => (typeof x === 'string' ? x : isObject(x) && typeof x.content === 'string' ? x.content : null);

/** readHfTokenizer with `what` naming the caller in messages (lib.loadTokenizer passes its name). */
export function hfTokenizerFrom(what, source, config) {
  let json = source;
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) source = new TextDecoder().decode(source);
  if (typeof source === 'string') {
    try { json = JSON.parse(source); } catch (e) { fail(`${what}: the text is not JSON (${e.message}); expected a tokenizer.json`); }
  }
  if (!isObject(json)) fail(`${what}: expected a tokenizer.json (object, text or bytes), got ${describe(source)}`);
  if (typeof config === 'string') {
    try { config = JSON.parse(config); } catch (e) { fail(`${what}: config is not JSON (${e.message}); expected tokenizer_config.json`); }
  }
  if (config !== undefined && config !== null && !isObject(config)) fail(`${what}: config must be tokenizer_config.json's object, got ${describe(config)}`);
  const m = json.model;
  if (!isObject(m)) fail(`${what}: a tokenizer.json has a "model" object; this one has ${describe(m)}`);
  if (m.type !== 'BPE') fail(`${what}: model.type is ${describe(m.type)}; expected "BPE" (this reader runs BPE models: GPT-2, Llama 2/3, Qwen, Gemma; not WordPiece or Unigram)`);
  if (m.dropout) fail(`${what}: model.dropout is ${describe(m.dropout)}; expected null (dropout makes encoding random)`);
  for (const key of ['continuing_subword_prefix', 'end_of_word_suffix'])
    if (m[key]) fail(`${what}: model.${key} is ${describe(m[key])}; this reader runs BPE without one (expected null or "")`);
  const addedList = json.added_tokens ?? [];
  if (!Array.isArray(addedList)) fail(`${what}: added_tokens is ${describe(addedList)}; expected an array`);
  const added = addedList.map((t, i) => {
    if (!isObject(t) || typeof t.content !== 'string' || !Number.isInteger(t.id) || t.id < 0)
      fail(`${what}: added_tokens[${i}] is ${describe(t)}; expected { id, content, ... }`);
    const special = t.special ?? false;
    return { id: t.id, content: t.content, special, lstrip: !!t.lstrip, rstrip: !!t.rstrip, normalized: t.normalized ?? !special };
  });

  const normalize = makeNormalizer(`${what}: normalizer`, json.normalizer);
  const state = { byteLevel: false };
  const preTokenize = makePreTokenizer(`${what}: pre_tokenizer`, json.pre_tokenizer, state);
  const byteLevel = state.byteLevel;
  const post = makePostProcessor(`${what}: post_processor`, json.post_processor);
  const addedContents = new Set(added.map((t) => t.content));
  const decoder = makeDecoder(`${what}: decoder`, json.decoder, addedContents);
  const model = buildModel(`${what}: model`, m, added);
  const { sym, symbols, vocab, rankOf, result } = model;
  const merge = makeMerger(rankOf, result);

  // token -> id as the model sees it (vocab, then added contents) and as encode maps (added first)
  const modelIds = new Map(vocab);
  for (const t of added) modelIds.set(t.content, t.id);
  const addedMap = new Map(); // content (and normalized content) -> added token
  const rawContents = [], normContents = [];
  for (const t of added) {
    addedMap.set(t.content, t);
    if (t.normalized && normalize) { const nc = normalize(t.content); normContents.push(nc); addedMap.set(nc, t); } else rawContents.push(t.content);
  }
  const idOfToken = (t) => addedMap.get(t)?.id ?? modelIds.get(t);
  const splitRaw = makeSplitter(rawContents), splitNorm = makeSplitter(normContents);
  const unk = m.unk_token == null ? null : String(m.unk_token);
  const unkId = unk === null ? undefined : idOfToken(unk);
  const byteFallback = !!m.byte_fallback, ignoreMerges = !!m.ignore_merges;
  const hexIds = HEX.map((h) => idOfToken(h));
  const hasAllHex = hexIds.every((x) => x !== undefined);

  // each symbol's output id, or -1 (not a token: byte fallback or unk)
  const symOut = new Int32Array(symbols.length);
  symbols.forEach((s, i) => { symOut[i] = modelIds.has(s) ? idOfToken(s) : -1; });
  const byteSym = Int32Array.from(BYTE_CHAR, (c) => sym.get(c) ?? -(c.charCodeAt(0) + 3));
  const cpSym = new Map(); // code point -> symbol (or -(cp + 3) when no symbol)
  const symOfCp = (cp) => { let s = cpSym.get(cp); if (s === undefined) { s = sym.get(String.fromCodePoint(cp)) ?? -(cp + 3); cpSym.set(cp, s); } return s; };

  // SentencePiece-style words can be whole sections: cut them before a "▁" where no merge joins across
  const cutBefore = '▁';
  const joins = new Set(); // the UTF-16 units some merge puts right before a "▁" (other than "▁")
  if (!byteLevel && !ignoreMerges) {
    for (let r = 0; r < model.nMerges; r++) {
      const a = symbols[result[r]];
      for (let i = a.indexOf(cutBefore, 1); i > 0; i = a.indexOf(cutBefore, i + 1)) if (a[i - 1] !== cutBefore) joins.add(a.charCodeAt(i - 1));
    }
  }

  let scratch = new Int32Array(256), bytes = new Uint8Array(1024);
  const out = { ids: new Int32Array(1024), n: 0 };
  const emit = (id) => {
    if (out.n === out.ids.length) { const g = new Int32Array(2 * out.n); g.set(out.ids); out.ids = g; }
    out.ids[out.n++] = id;
  };
  // a symbol that is no token: its text's bytes as <0xNN>, or unk, or nothing (as @huggingface/tokenizers)
  const fallback = (s, into) => {
    const text = s >= 0 ? symbols[s] : String.fromCodePoint(-s - 3);
    if (byteFallback && hasAllHex) { for (const b of utf8.encode(text)) into.push(hexIds[b]); return; }
    if (unk !== null) into.push(unkId ?? -1);
  };
  const cache = new Map();
  const CACHE_MAX = 50000, CACHE_LEN = 256;

  // one pre-token -> ids (cached)
  const wordIds = (w) => {
    let hit = cache.get(w);
    if (hit !== undefined) return hit;
    let n = 0;
    if (byteLevel) {
      if (bytes.length < 4 * w.length) bytes = new Uint8Array(8 * w.length);
      const enc = utf8.encodeInto(w, bytes);
      n = enc.written;
      if (scratch.length < n) scratch = new Int32Array(2 * n);
      for (let i = 0; i < n; i++) scratch[i] = byteSym[bytes[i]];
      if (ignoreMerges) {
        let s = '';
        for (let i = 0; i < n; i++) s += BYTE_CHAR[bytes[i]];
        const id = modelIds.has(s) ? idOfToken(s) : undefined;
        if (id !== undefined) { hit = Int32Array.of(id); if (w.length < CACHE_LEN) cache.set(w, hit); return hit; }
      }
    } else {
      if (ignoreMerges && modelIds.has(w)) { hit = Int32Array.of(idOfToken(w)); if (w.length < CACHE_LEN) cache.set(w, hit); return hit; }
      if (scratch.length < w.length) scratch = new Int32Array(2 * w.length);
      for (let i = 0; i < w.length; i++) {
        const c = w.codePointAt(i);
        if (c > 0xffff) i++;
        scratch[n++] = symOfCp(c);
      }
    }
    n = merge(scratch, n);
    const ids = [];
    for (let i = 0; i < n; i++) {
      const s = scratch[i], id = s >= 0 ? symOut[s] : -1;
      if (id >= 0) ids.push(id); else fallback(s, ids);
    }
    hit = Int32Array.from(ids);
    if (w.length < CACHE_LEN) { if (cache.size >= CACHE_MAX) cache.clear(); cache.set(w, hit); }
    return hit;
  };
  const modelWord = (w) => {
    if (!byteLevel && !ignoreMerges && w.length >= CACHE_LEN) { // cut a long word where merges never join
      let at = 0;
      for (let i = w.indexOf(cutBefore, 1); i > 0; i = w.indexOf(cutBefore, i + 1)) {
        const c = w.charCodeAt(i - 1);
        if (c !== 0x2581 && !joins.has(c)) { for (const id of wordIds(w.slice(at, i))) emit(id); at = i; }
      }
      if (at > 0) { for (const id of wordIds(w.slice(at))) emit(id); return; }
    }
    const ids = wordIds(w);
    for (let i = 0; i < ids.length; i++) emit(ids[i]);
  };

  // the lstrip/rstrip of added tokens, on the sections around them
  const stripAround = (sections) => {
    sections.forEach((s, i) => {
      const t = addedMap.get(s);
      if (!t) return;
      if (t.lstrip && i > 0) sections[i - 1] = sections[i - 1].trimEnd();
      if (t.rstrip && i < sections.length - 1) sections[i + 1] = sections[i + 1].trimStart();
    });
    return sections;
  };

  const specialIds = (names) => names.map((name) => {
    const id = idOfToken(name);
    if (id === undefined) fail(`${what}: post_processor names the special token ${JSON.stringify(name)}, which is neither an added token nor in model.vocab`);
    return id;
  });
  const beforeIds = specialIds(post.before), afterIds = specialIds(post.after);

  const encode = (text, opts = {}) => {
    if (typeof text !== 'string') fail(`tokenizer.encode: text must be a string, got ${describe(text)}`);
    checkKeys('tokenizer.encode', opts, ['addSpecialTokens']);
    const addSpecial = opts.addSpecialTokens ?? true;
    if (typeof addSpecial !== 'boolean') fail(`tokenizer.encode: addSpecialTokens must be true or false, got ${describe(addSpecial)}`);
    out.n = 0;
    if (addSpecial) for (const id of beforeIds) emit(id);
    const sections = stripAround(splitRaw(text));
    for (let si = 0; si < sections.length; si++) {
      let s = sections[si];
      if (!s.length) continue;
      const t = addedMap.get(s);
      if (t) { emit(t.id); continue; }
      if (normalize) s = normalize(s);
      if (!s.length) continue;
      const subs = stripAround(splitNorm(s));
      for (const sub of subs) {
        if (!sub.length) continue;
        const u = addedMap.get(sub);
        if (u) { emit(u.id); continue; }
        const words = preTokenize ? preTokenize([sub], si) : [sub];
        for (const w of words) if (w.length) modelWord(w);
      }
    }
    if (addSpecial) for (const id of afterIds) emit(id);
    return out.ids.slice(0, out.n);
  };

  // id -> token string (vocab, then added tokens over it)
  let maxId = -1;
  for (const id of vocab.values()) if (id > maxId) maxId = id;
  for (const t of added) if (t.id > maxId) maxId = t.id;
  const vocabSize = maxId + 1;
  const pieces = new Array(vocabSize).fill(null);
  for (const [p, id] of vocab) pieces[id] = p;
  for (const t of added) pieces[t.id] = t.content;
  Object.freeze(pieces);
  const specialSet = new Set(added.filter((t) => t.special).map((t) => t.id));

  const decode = (ids, opts = {}) => {
    const ok = Array.isArray(ids) || (ArrayBuffer.isView(ids) && !(ids instanceof DataView));
    if (!ok) fail(`tokenizer.decode: ids must be an array of token ids, got ${describe(ids)}`);
    checkKeys('tokenizer.decode', opts, ['skipSpecialTokens']);
    const skip = opts.skipSpecialTokens ?? false;
    const toks = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize || pieces[id] === null)
        fail(`tokenizer.decode: ids[${i}] is ${describe(id)}, not a token id of this tokenizer (0..${vocabSize - 1})`);
      if (skip && specialSet.has(id)) continue;
      toks.push(pieces[id]);
    }
    return decoder ? decoder(toks).join('') : toks.join(' ');
  };

  // bos/eos/pad/unk: tokenizer_config.json when given; else the template, the model's unk, known names
  const byName = (names) => { for (const n of names) { const id = idOfToken(n); if (id !== undefined && addedContents.has(n)) return id; } return null; };
  const fromConfig = (key) => { const n = config ? tokenName(config[key]) : null; return n === null ? undefined : idOfToken(n) ?? null; };
  const specialTokens = Object.freeze({
    bos: fromConfig('bos_token') ?? (beforeIds.length ? beforeIds[0] : byName(['<|begin_of_text|>', '<bos>', '<s>', '<|startoftext|>'])),
    eos: fromConfig('eos_token') ?? (afterIds.length ? afterIds[afterIds.length - 1] : byName(['<|end_of_text|>', '<eos>', '</s>', '<|endoftext|>'])),
    pad: fromConfig('pad_token') ?? byName(['<pad>', '<|pad|>', '[PAD]', '<|finetune_right_pad_id|>']),
    unk: fromConfig('unk_token') ?? unkId ?? null,
  });

  return Object.freeze({
    /** the family detected from the file: 'gpt2' | 'llama3' | 'qwen' | 'llama2' | 'gemma' | 'byte-level-bpe' | 'bpe' */
    family: detectFamily(json, byteLevel),
    /** max id + 1 over the vocabulary and the added tokens */
    vocabSize,
    /** id -> token as tokenizer.json spells it (null for an id that has none) */
    pieces,
    specialTokens,
    encode,
    decode,
    tokenToId: (s) => (typeof s === 'string' ? modelIds.get(s) ?? null : null),
    idToToken: (id) => (Number.isInteger(id) && id >= 0 && id < vocabSize ? pieces[id] : null),
    /** the tokenizer.json object read (JSON.stringify writes the same file) */
    toJSON: () => json,
  });
}
