// hf-tokenizer.js: a reader of Hugging Face tokenizer.json files for the BPE families in use (GPT-2,
// Llama 3, Qwen 2/3: byte-level BPE with split patterns; Llama 2, TinyLlama, Gemma 3: SentencePiece-
// style BPE with "▁" and byte fallback), in plain JS with no dependency (docs/tokenizers.md). Its
// behaviour follows @huggingface/tokenizers (the JavaScript tokenizer transformers.js runs), which
// the tests hold it to id for id. lib.loadTokenizer (bpe.js) sends here every tokenizer.json that is
// not this library's own layout. A file is downloaded, so nothing in it may freeze, crash or fool the
// page: its regexes run only when known (or trusted, with a bound), and it is checked as Hugging
// Face's own reader checks it (buildModel, the decoders' parameters) before anything is sized by it.
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
const HEX = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
const utf8 = new TextEncoder();
const NORMALIZERS = ['Sequence', 'Prepend', 'Replace', 'NFC', 'NFD', 'NFKC', 'NFKD', 'Lowercase'];
const PRE_TOKENIZERS = ['Sequence', 'Split', 'ByteLevel', 'Metaspace', 'Digits'];
const DECODERS = ['Sequence', 'ByteLevel', 'Replace', 'ByteFallback', 'Fuse', 'Strip', 'Metaspace'];
const POST_PROCESSORS = ['TemplateProcessing', 'ByteLevel', 'Sequence'];

const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
// a Sequence inside Sequences at most this deep: the readers recurse, and a file can nest without end
const MAX_NESTING = 16;
const checkNesting = (what) => {
  const depth = what.split('[').length - 1; // each level adds one [i] to the path
  if (depth >= MAX_NESTING) fail(`${what} is a Sequence ${depth} Sequences deep; expected at most ${MAX_NESTING - 1}`);
};
// an optional true/false field
const flag = (what, x, dflt) => { if (x === undefined || x === null) return dflt; if (typeof x !== 'boolean') fail(`${what} is ${describe(x)}; expected true or false`); return x; };

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

// ---- patterns: the regexes a file supplies, each run in time linear in the text ------------------
//
// A tokenizer.json brings its own regexes (Split, Replace), and V8 runs a regex by backtracking:
// (a+)+$ on 100 KB of "a" and a "!" never returns. So a Regex runs only when this reader knows it by its exact
// text (KNOWN_PATTERNS: GPT-2's, Llama 3's, Qwen 2/3's, DeepSeek V3's three), through a scanner
// written for it that gives the matches V8 gives for onigurumaToJs(pattern) (hostile-tokenizer.test.js
// compares them) in linear time. Another Regex is refused at load unless the caller trusts the file
// ({ trustPatterns: true }); then it runs in a backtracking matcher that counts its steps and stops
// with an Error at TRUSTED_STEPS per character. A String pattern is a literal: always linear.

// a code point's classes as bits, memoised (one V8 test of one character each, once)
const C_L = 1, C_N = 2, C_WS = 4, C_JSWS = 8, C_M = 16, C_P = 32, C_S = 64, C_SEEN = 128;
const CLASS_TESTS = [[C_L, /\p{L}/u], [C_N, /\p{N}/u], [C_WS, /\p{White_Space}/u], [C_JSWS, /\s/u], [C_M, /\p{M}/u], [C_P, /\p{P}/u], [C_S, /\p{S}/u]];
const bmpClass = new Uint8Array(0x10000), astralClass = new Map();
function classOf(cp) {
  let k = cp < 0x10000 ? bmpClass[cp] : astralClass.get(cp) ?? 0;
  if (k === 0) {
    const ch = String.fromCodePoint(cp);
    k = C_SEEN;
    for (const [bit, re] of CLASS_TESTS) if (re.test(ch)) k |= bit;
    if (cp < 0x10000) bmpClass[cp] = k; else astralClass.set(cp, k);
  }
  return k;
}
const CR = 13, LF = 10, SPACE = 32, QUOTE = 39;
const ASCII_PUNCT = new Set(Array.from('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', (c) => c.charCodeAt(0)));
const isAsciiLetter = (u) => (u | 0x20) >= 97 && (u | 0x20) <= 122;
const isNewline = (k, u) => u === CR || u === LF;

/**
 * The scanners, sharing `work` (work.steps counts the code points they examine). A scanner
 * (s, i) -> the end of the match that starts at i, or -1; reset() before each text.
 */
function scanners(work) {
  const kind = (s, i) => { work.steps++; return classOf(s.codePointAt(i)); };
  const after = (s, i) => i + (s.codePointAt(i) > 0xffff ? 2 : 1);
  const run = (s, i, has) => { while (i < s.length && has(kind(s, i), s.charCodeAt(i))) i = after(s, i); return i; };
  const isL = (k) => k & C_L, isLM = (k) => k & (C_L | C_M), isPS = (k) => k & (C_P | C_S);
  // 's|'t|'re|'ve|'m|'ll|'d (fold: each letter either case, as onigurumaToJs writes (?i:...))
  const contraction = (s, i, fold) => {
    const low = (u) => (fold && u >= 65 && u <= 90 ? u + 32 : u);
    const a = low(s.charCodeAt(i + 1)), b = low(s.charCodeAt(i + 2));
    work.steps++;
    if (a === 115 || a === 116 || a === 109 || a === 100) return i + 2; // s t m d
    if (((a === 114 || a === 118) && b === 101) || (a === 108 && b === 108)) return i + 3; // re ve ll
    return -1;
  };
  // [\s]*[\r\n]+|\s+(?!\S)|\s+ at a white-space code point i (the \s of `ws`): through the run's last
  // newline; else the run but its last character when a non-space follows; else the whole run.
  // The run found last is kept, so each run is read once however many matches it gives.
  let runEnd = -1, runLastNl = -1;
  const spaceTail = (s, i, ws, newlines) => {
    if (i >= runEnd) {
      runLastNl = -1;
      let j = i;
      for (; j < s.length && kind(s, j) & ws; j++) if (newlines && isNewline(0, s.charCodeAt(j))) runLastNl = j; // white space is BMP
      runEnd = j;
    }
    if (runLastNl >= i) return runLastNl + 1;
    return runEnd < s.length && runEnd - 1 > i ? runEnd - 1 : runEnd;
  };
  const reset = () => { runEnd = -1; };

  // GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (ws: which \s)
  const gpt2 = (ws) => {
    const other = (k) => !(k & (ws | C_L | C_N));
    return (s, i) => {
      const u = s.charCodeAt(i);
      if (u === QUOTE) { const e = contraction(s, i, false); if (e > 0) return e; }
      let k = kind(s, i), at = i;
      if (u === SPACE && i + 1 < s.length && !(kind(s, i + 1) & ws)) k = kind(s, ++at); // " ?" takes the space
      if (k & C_L) return run(s, at, isL);
      if (k & C_N) return run(s, at, (k) => k & C_N);
      if (other(k)) return run(s, at, other);
      return spaceTail(s, i, ws, false);
    };
  };
  // Llama 3 (digits 3) and Qwen 2/3 (digits 1): (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|
  // \p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  const llama3 = (digits) => {
    const other = (k) => !(k & (C_WS | C_L | C_N));
    return (s, i) => {
      const u = s.charCodeAt(i), n = s.length;
      if (u === QUOTE) { const e = contraction(s, i, true); if (e > 0) return e; }
      const k = kind(s, i), j = after(s, i);
      if (!(k & (C_L | C_N)) && u !== CR && u !== LF && j < n && kind(s, j) & C_L) return run(s, j, isL);
      if (k & C_L) return run(s, i, isL);
      if (k & C_N) { let e = i; for (let d = 0; d < digits && e < n && kind(s, e) & C_N; d++) e = after(s, e); return e; }
      if (u === SPACE && j < n && other(kind(s, j))) return run(s, run(s, j, other), isNewline);
      if (other(k)) return run(s, run(s, i, other), isNewline);
      return spaceTail(s, i, C_WS, true);
    };
  };
  // DeepSeek V3's third Split: [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
  //  ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  const deepseekWords = (s, i) => {
    const u = s.charCodeAt(i), n = s.length, k = kind(s, i), j = after(s, i);
    if (ASCII_PUNCT.has(u) && j < n && isAsciiLetter(s.charCodeAt(j))) return run(s, j, (k, u) => isAsciiLetter(u));
    if (!(k & (C_L | C_P | C_S)) && u !== CR && u !== LF && j < n && isLM(kind(s, j))) return run(s, j, isLM);
    if (isLM(k)) return run(s, i, isLM);
    if (u === SPACE && j < n && isPS(kind(s, j))) return run(s, run(s, j, isPS), isNewline);
    if (isPS(k)) return run(s, run(s, i, isPS), isNewline);
    if (k & C_WS) return spaceTail(s, i, C_WS, true);
    return -1;
  };
  // DeepSeek V3's first two: \p{N}{1,3} and [一-龥\u3040-ゟ゠-ヿ]+ (kana and the CJK ideographs to U+9FA5)
  const numbers3 = (s, i) => { let e = i; for (let d = 0; d < 3 && e < s.length && kind(s, e) & C_N; d++) e = after(s, e); return e > i ? e : -1; };
  const isKanaHan = (k, u) => (u >= 0x4e00 && u <= 0x9fa5) || (u >= 0x3040 && u <= 0x30ff);
  const kanaHan = (s, i) => { const e = run(s, i, isKanaHan); return e > i ? e : -1; };
  // SmolLM's Digits: [^\d]+|\d (individual) or [^\d]+|\d+, ASCII \d
  const isDigit = (k, u) => u >= 48 && u <= 57;
  const digits = (individual) => (s, i) => (isDigit(0, s.charCodeAt(i)) ? (individual ? (work.steps++, i + 1) : run(s, i, isDigit)) : run(s, i, (k, u) => !isDigit(k, u)));
  return { reset, after, gpt2, llama3, deepseekWords, numbers3, kanaHan, digits };
}

const raw = String.raw;
/** The Regex patterns this reader runs, by exact text (as tokenizer.json spells them), and their scanners. */
export const KNOWN_PATTERNS = Object.freeze([
  { name: 'GPT-2', pattern: raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, scanner: (k) => k.gpt2(C_WS) },
  { name: 'Llama 3', pattern: raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, scanner: (k) => k.llama3(3) },
  { name: 'Qwen 2/3', pattern: raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, scanner: (k) => k.llama3(1) },
  { name: 'DeepSeek V3 numbers', pattern: raw`\p{N}{1,3}`, scanner: (k) => k.numbers3 },
  { name: 'DeepSeek V3 kana and CJK', pattern: '[一-龥\u3040-ゟ゠-ヿ]+', scanner: (k) => k.kanaHan },
  { name: 'DeepSeek V3 words', pattern: raw`[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + '`' + raw`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, scanner: (k) => k.deepseekWords },
].map(Object.freeze));
// the same text written with literal control characters or \uXXXX escapes: one key
const patternKey = (src) => src.replace(/\r/g, '\\r').replace(/\n/g, '\\n').replace(/\t/g, '\\t')
  .replace(/\\u([0-9A-Fa-f]{4})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
const KNOWN_BY_KEY = new Map(KNOWN_PATTERNS.map((p) => [patternKey(p.pattern), p]));

// TRUSTED_STEPS per character of a piece (and TRUSTED_BASE more) bound a trusted pattern's work:
// the known patterns take under 20 per character in the backtracking matcher
const TRUSTED_STEPS = 256, TRUSTED_BASE = 4096;
const OVER_BUDGET = Symbol('over budget');

/**
 * A regex in JavaScript's syntax (onigurumaToJs's output) as nodes for `backtrack`: what V8 would
 * run, with each single-character test (class, escape, literal, ".") left to V8 on one character.
 */
function parseRegex(src) {
  let i = 0;
  const oneChar = (text) => {
    const re = new RegExp(`^(?:${text})$`, 'u'), memo = new Map();
    return (cp) => { let r = memo.get(cp); if (r === undefined) memo.set(cp, r = re.test(String.fromCodePoint(cp))); return r; };
  };
  const alt = () => { const alts = [seq()]; while (src[i] === '|') { i++; alts.push(seq()); } return alts.length === 1 ? alts[0] : { t: 'alt', alts }; };
  const seq = () => { const items = []; while (i < src.length && src[i] !== '|' && src[i] !== ')') items.push(quantified(atom())); return items.length === 1 ? items[0] : { t: 'seq', items }; };
  const single = (node) => (node.t === 'char' ? node.test : node.t === 'alt' && node.alts.every((a) => a.t === 'char') ? ((cp) => node.alts.some((a) => a.test(cp))) : null);
  const atom = () => {
    const c = src[i], rest = src.slice(i);
    if (c === '(') {
      const open = /^\((\?:|\?=|\?!|\?<=|\?<!|\?<[A-Za-z_$][\w$]*>)?/.exec(rest)[0];
      i += open.length;
      const body = alt();
      if (src[i] !== ')') throw new SyntaxError('a group that is not closed');
      i++;
      if (open === '(?=' || open === '(?!') return { t: 'ahead', neg: open === '(?!', body };
      if (open === '(?<=' || open === '(?<!') {
        const test = single(body);
        if (!test) throw new SyntaxError('a lookbehind longer than one character');
        return { t: 'behind', neg: open === '(?<!', test };
      }
      return body;
    }
    if (c === '[') {
      const m = /^\[(?:\\.|[^\\\]])*\]/su.exec(rest);
      if (!m) throw new SyntaxError('a character class that is not closed');
      i += m[0].length;
      return { t: 'char', test: oneChar(m[0]) };
    }
    if (c === '\\') {
      const m = /^\\(?:[pP]\{[^}]*\}|u\{[0-9A-Fa-f]+\}|u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|c[A-Za-z]|k<[^>]*>|[1-9]\d*|.)/su.exec(rest);
      i += m[0].length;
      if (m[0] === '\\b' || m[0] === '\\B') return { t: 'word', neg: m[0] === '\\B' };
      if (/^\\([1-9]|k<)/.test(m[0])) throw new SyntaxError('backreferences');
      return { t: 'char', test: oneChar(m[0]) };
    }
    if (c === '^' || c === '$') { i++; return { t: c === '^' ? 'start' : 'end' }; }
    if ('*+?{})|'.includes(c)) throw new SyntaxError(`a ${c} with nothing before it`);
    const ch = String.fromCodePoint(src.codePointAt(i));
    i += ch.length;
    return { t: 'char', test: oneChar(ch === '.' ? '.' : ch.replace(/[\\^$*+?.()|[\]{}/]/g, '\\$&')) };
  };
  const quantified = (node) => {
    const q = /^(?:\*|\+|\?|\{(\d+)(,(\d*))?\})(\??)/.exec(src.slice(i));
    if (!q) return node;
    i += q[0].length;
    const [min, max] = q[0][0] === '*' ? [0, Infinity] : q[0][0] === '+' ? [1, Infinity] : q[0][0] === '?' ? [0, 1]
      : [Number(q[1]), q[2] === undefined ? Number(q[1]) : q[3] === '' ? Infinity : Number(q[3])];
    return { t: 'rep', min, max, greedy: q[4] !== '?', body: node };
  };
  const root = alt();
  if (i < src.length) throw new SyntaxError(`an unexpected ${src[i]}`);
  return root;
}

const isWordUnit = (u) => (u >= 48 && u <= 57) || (u >= 65 && u <= 90) || (u >= 97 && u <= 122) || u === 95;

/** The match of `root` anchored at i, as V8's backtracking finds it: its end, or -1. Throws OVER_BUDGET past `limit` steps. */
function backtracker(root, work) {
  let s = '', limit = 0;
  const tick = () => { if (++work.steps > limit) throw OVER_BUDGET; };
  const cpAt = (i) => s.codePointAt(i), width = (cp) => (cp > 0xffff ? 2 : 1);
  const before = (i) => { const lo = s.charCodeAt(i - 1); return i >= 2 && lo >= 0xdc00 && lo <= 0xdfff && s.charCodeAt(i - 2) >= 0xd800 && s.charCodeAt(i - 2) <= 0xdbff ? s.codePointAt(i - 2) : lo; };
  const m = (node, i, k) => {
    tick();
    switch (node.t) {
      case 'char': { if (i >= s.length) return -1; const cp = cpAt(i); return node.test(cp) ? k(i + width(cp)) : -1; }
      case 'seq': { const go = (x, j) => (x === node.items.length ? k(j) : m(node.items[x], j, (e) => go(x + 1, e))); return go(0, i); }
      case 'alt': for (const a of node.alts) { const r = m(a, i, k); if (r >= 0) return r; } return -1;
      case 'rep': return node.body.t === 'char' ? repeatChar(node, i, k) : repeat(node, 0, i, k);
      case 'ahead': return (m(node.body, i, (j) => j) >= 0) !== node.neg ? k(i) : -1;
      case 'behind': return (i > 0 && node.test(before(i))) !== node.neg ? k(i) : -1;
      case 'start': return i === 0 ? k(i) : -1;
      case 'end': return i === s.length ? k(i) : -1;
      case 'word': return (i > 0 && isWordUnit(s.charCodeAt(i - 1))) !== (i < s.length && isWordUnit(s.charCodeAt(i))) !== node.neg ? k(i) : -1;
      default: throw new Error(`unreachable: ${node.t}`);
    }
  };
  // a repeat of one character without recursion per character: greedy reads the run, then tries
  // each length from the longest; lazy tries each length from the shortest, reading as it goes
  const repeatChar = (node, i, k) => {
    const test = node.body.test;
    if (!node.greedy) {
      for (let c = 0, j = i; ; c++) {
        if (c >= node.min) { const r = k(j); if (r >= 0) return r; }
        if (c >= node.max || j >= s.length) return -1;
        tick();
        const cp = cpAt(j);
        if (!test(cp)) return -1;
        j += width(cp);
      }
    }
    const ends = [i];
    for (let j = i; ends.length - 1 < node.max && j < s.length;) { tick(); const cp = cpAt(j); if (!test(cp)) break; ends.push(j += width(cp)); }
    for (let c = ends.length - 1; c >= node.min; c--) { const r = k(ends[c]); if (r >= 0) return r; }
    return -1;
  };
  // any other repeat; an iteration past the minimum that matches nothing fails (ECMAScript's RepeatMatcher)
  const repeat = (node, count, i, k) => {
    tick();
    const more = () => (count < node.max ? m(node.body, i, (j) => (j === i && count >= node.min ? -1 : repeat(node, count + 1, j, k))) : -1);
    if (count < node.min) return more();
    if (node.greedy) { const r = more(); return r >= 0 ? r : k(i); }
    const r = k(i);
    return r >= 0 ? r : more();
  };
  return (text, i, stepLimit) => { s = text; limit = stepLimit; return m(root, i, (j) => j); };
}

// a scanner as { each(text, cb) }: its matches left to right, the positions where none starts skipped
const scanning = (kit, scan) => ({
  each(text, cb) {
    kit.reset();
    for (let i = 0; i < text.length;) {
      const e = scan(text, i);
      if (e < 0) i = kit.after(text, i); else { cb(i, e); i = e; }
    }
  },
});

/**
 * A pattern ({ String } or { Regex }) as { each(text, cb) }: cb(start, end) for every match, left to
 * right, as String.prototype.matchAll with a global `u` regex gives them (empty matches included).
 * opts: { trustPatterns, work }.
 */
function compilePattern(what, pattern, opts) {
  const work = opts.work;
  if (!isObject(pattern)) fail(`${what} is ${describe(pattern)}; expected { "String": ... } or { "Regex": ... }`);
  if (typeof pattern.String === 'string') {
    const lit = pattern.String;
    return {
      each(text, cb) {
        work.steps += text.length; // indexOf: V8's string search, linear
        if (lit === '') return;
        for (let at = text.indexOf(lit); at >= 0; at = text.indexOf(lit, at + lit.length)) cb(at, at + lit.length);
      },
    };
  }
  if (typeof pattern.Regex !== 'string') return fail(`${what} has neither a "String" nor a "Regex" (keys: ${Object.keys(pattern).join(', ')})`);
  const src = pattern.Regex;
  const known = KNOWN_BY_KEY.get(patternKey(src));
  const kit = scanners(work);
  if (known) return scanning(kit, known.scanner(kit));
  if (!opts.trustPatterns) {
    fail(`${what}.Regex ${JSON.stringify(src)} is not a pattern this reader knows: a regex from a file can take ` +
      `exponential time in JavaScript's backtracking engine, so it runs only the split patterns of ${KNOWN_PATTERNS.map((p) => p.name).join(', ')} ` +
      '(by their exact text); pass { trustPatterns: true } to run this one with a bound on its work');
  }
  let match;
  try {
    const js = onigurumaToJs(src);
    new RegExp(js, 'u'); // eslint-disable-line no-new -- the syntax V8 accepts, and only that
    match = backtracker(parseRegex(js), work);
  } catch (e) {
    return fail(`${what}.Regex ${JSON.stringify(src)} has no JavaScript equivalent here (${e.message})`);
  }
  const field = what.replace(/^[^:]*: /, '');
  return {
    each(text, cb) {
      const budget = TRUSTED_STEPS * text.length + TRUSTED_BASE, limit = work.steps + budget;
      try {
        for (let i = 0; i <= text.length;) {
          const e = match(text, i, limit);
          if (e >= 0) cb(i, e);
          i = e > i ? e : i < text.length ? kit.after(text, i) : i + 1; // after an empty match or none: the next code point
        }
      } catch (e) {
        if (e !== OVER_BUDGET && !(e instanceof RangeError)) throw e;
        const stopped = e === OVER_BUDGET ? `took more than ${budget} steps (${TRUSTED_STEPS} per character)` : 'nested deeper than the stack allows';
        fail(`tokenizer: the trusted pattern ${field}.Regex ${JSON.stringify(src)} ${stopped} on a piece of ${text.length} characters; ` +
          'it backtracks without bound on such text: the file needs a pattern that does not');
      }
    },
  };
}

/**
 * The matches of a tokenizer.json pattern ({ String } or { Regex }) in text, as this reader runs
 * them: [start, end] pairs of UTF-16 offsets, left to right (what matchAll gives for the pattern's
 * global `u` regex). options.trustPatterns: as readHfTokenizer's.
 */
export function patternMatches(pattern, text, options = {}) {
  const what = 'patternMatches';
  checkKeys(what, options, ['trustPatterns']);
  if (typeof text !== 'string') fail(`${what}: text must be a string, got ${describe(text)}`);
  const out = [];
  compilePattern(`${what}: pattern`, pattern, { trustPatterns: flag(`${what}: trustPatterns`, options.trustPatterns, false), work: { steps: 0 } })
    .each(text, (start, end) => out.push([start, end]));
  return out;
}

// text with each match of `matcher` replaced by content
function replaceAll(matcher, text, content) {
  let out = '', prev = 0;
  matcher.each(text, (start, end) => { out += text.slice(prev, start) + content; prev = end; });
  return out + text.slice(prev);
}

// ---- normalizers: string -> string --------------------------------------------------------------

function makeNormalizer(what, n, opts) {
  if (n === null || n === undefined) return null;
  if (!isObject(n)) fail(`${what} is ${describe(n)}; expected an object with a "type"`);
  switch (n.type) {
    case 'Sequence': {
      if (!Array.isArray(n.normalizers)) fail(`${what}.normalizers is ${describe(n.normalizers)}; expected an array`);
      checkNesting(what);
      const steps = n.normalizers.map((x, i) => makeNormalizer(`${what}.normalizers[${i}]`, x, opts)).filter(Boolean);
      return (s) => { for (const f of steps) s = f(s); return s; };
    }
    case 'Prepend': {
      if (typeof n.prepend !== 'string') fail(`${what}.prepend is ${describe(n.prepend)}; expected a string`);
      return (s) => n.prepend + s;
    }
    case 'Replace': {
      const matcher = compilePattern(`${what}.pattern`, n.pattern, opts), content = n.content ?? '';
      if (typeof content !== 'string') fail(`${what}.content is ${describe(content)}; expected a string`);
      if (typeof n.pattern.String === 'string') {
        const from = n.pattern.String;
        return from === '' ? (s) => s : (s) => s.replaceAll(from, content);
      }
      return (s) => replaceAll(matcher, s, content);
    }
    case 'NFC': case 'NFD': case 'NFKC': case 'NFKD': return (s) => s.normalize(n.type);
    case 'Lowercase': return (s) => s.toLowerCase();
    default:
      return fail(`${what}.type is ${describe(n.type)}, a normalizer this reader does not run (it runs ${NORMALIZERS.join(', ')})`);
  }
}

// ---- pre-tokenizers: the pieces of a section, then whether the model reads them as bytes -------

// split text by the matches of matcher (compilePattern) with a Split's behaviour (as the Rust
// tokenizers define them; on "the-final--countdown" by "-": Isolated the,-,final,-,-,countdown;
// Removed the,final,countdown; MergedWithPrevious the-,final-,-,countdown; MergedWithNext
// the,-final,-,-countdown; Contiguous the,-,final,--,countdown), appended to out; no piece is empty
function splitBy(text, matcher, behavior, out) {
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
  matcher.each(text, (start, end) => {
    if (end === start) return;
    if (start > prev) piece(text.slice(prev, start), false);
    piece(text.slice(start, end), true);
    prev = end;
  });
  if (prev < text.length) piece(text.slice(prev), false);
  return out;
}

// a pre-tokenizer: (pieces, sectionIndex) -> pieces; state.byteLevel: its last step turns pieces
// into bytes; state.trustPatterns, state.work: compilePattern's opts
function makePreTokenizer(what, p, state) {
  if (p === null || p === undefined) return null;
  if (!isObject(p)) fail(`${what} is ${describe(p)}; expected an object with a "type"`);
  if (state.byteLevel) fail(`${what} comes after a ByteLevel pre-tokenizer; this reader needs ByteLevel last`);
  switch (p.type) {
    case 'Sequence': {
      if (!Array.isArray(p.pretokenizers)) fail(`${what}.pretokenizers is ${describe(p.pretokenizers)}; expected an array`);
      checkNesting(what);
      const steps = p.pretokenizers.map((x, i) => makePreTokenizer(`${what}.pretokenizers[${i}]`, x, state)).filter(Boolean);
      return (pieces, section) => { for (const f of steps) pieces = f(pieces, section); return pieces; };
    }
    case 'Split': {
      const matcher = compilePattern(`${what}.pattern`, p.pattern, state);
      if (p.invert) fail(`${what}.invert is true; this reader splits on matches only (invert false)`);
      const behavior = p.behavior ?? 'Isolated';
      const known = ['Isolated', 'Removed', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'];
      if (!known.includes(behavior)) fail(`${what}.behavior is ${describe(behavior)}; expected one of ${known.join(', ')}`);
      return (pieces) => { const out = []; for (const s of pieces) splitBy(s, matcher, behavior, out); return out; };
    }
    case 'ByteLevel': {
      state.byteLevel = true;
      const prefix = flag(`${what}.add_prefix_space`, p.add_prefix_space, false), regex = flag(`${what}.use_regex`, p.use_regex, true);
      // GPT-2's pattern with JavaScript's \s, as @huggingface/tokenizers runs it for use_regex
      const kit = scanners(state.work), gpt2 = scanning(kit, kit.gpt2(C_JSWS));
      return (pieces) => {
        const out = [];
        for (let s of pieces) {
          if (prefix && !s.startsWith(' ')) s = ' ' + s;
          if (regex) gpt2.each(s, (start, end) => out.push(s.slice(start, end))); else if (s.length) out.push(s);
        }
        return out;
      };
    }
    case 'Digits': { // SmolLM's: digits apart from the rest, each alone with individual_digits (ASCII \d, as the oracle)
      const kit = scanners(state.work), digits = scanning(kit, kit.digits(flag(`${what}.individual_digits`, p.individual_digits, false)));
      return (pieces) => { const out = []; for (const s of pieces) digits.each(s, (start, end) => out.push(s.slice(start, end))); return out; };
    }
    case 'Metaspace': {
      const rep = p.replacement ?? '▁';
      if (typeof rep !== 'string' || [...rep].length !== 1) fail(`${what}.replacement is ${describe(rep)}; expected one character`);
      const scheme = p.prepend_scheme ?? (p.add_prefix_space === false ? 'never' : 'always');
      if (!['always', 'first', 'never'].includes(scheme)) fail(`${what}.prepend_scheme is ${describe(scheme)}; expected "always", "first" or "never"`);
      const split = flag(`${what}.split`, p.split, false);
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

function makeDecoder(what, d, addedContents, opts) {
  if (d === null || d === undefined) return null;
  if (!isObject(d)) fail(`${what} is ${describe(d)}; expected an object with a "type"`);
  switch (d.type) {
    case 'Sequence': {
      if (!Array.isArray(d.decoders)) fail(`${what}.decoders is ${describe(d.decoders)}; expected an array`);
      checkNesting(what);
      const steps = d.decoders.map((x, i) => makeDecoder(`${what}.decoders[${i}]`, x, addedContents, opts)).filter(Boolean);
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
      if (typeof content !== 'string') fail(`${what}.content is ${describe(content)}; expected a string`);
      const matcher = compilePattern(`${what}.pattern`, d.pattern, opts);
      if (typeof d.pattern.String === 'string') {
        const from = d.pattern.String;
        return (toks) => toks.map((t) => t.replaceAll(from, content));
      }
      return (toks) => toks.map((t) => replaceAll(matcher, t, content));
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
      // up to `start` copies of content off each token's start and `stop` off its end (Rust: a char and two usize)
      const c = d.content, start = d.start ?? 0, stop = d.stop ?? 0;
      if (typeof c !== 'string' || [...c].length !== 1) fail(`${what}.content is ${describe(c)}; expected one character`);
      for (const [key, x] of [['start', start], ['stop', stop]])
        if (!Number.isSafeInteger(x) || x < 0) fail(`${what}.${key} is ${describe(x)}; expected a count of characters >= 0`);
      return (toks) => toks.map((t) => {
        let a = 0, b = t.length;
        for (let i = 0; i < start && t.startsWith(c, a); i++) a += c.length;
        for (let i = 0; i < stop && b - c.length >= a && t.endsWith(c, b); i++) b -= c.length;
        return t.slice(a, b);
      });
    }
    case 'Metaspace': {
      const rep = d.replacement ?? '▁';
      if (typeof rep !== 'string' || [...rep].length !== 1) fail(`${what}.replacement is ${describe(rep)}; expected one character`);
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
      checkNesting(what);
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

// the longest added token (UTF-16 units): the splitter walks at most this far from each position
const ADDED_MAX_LENGTH = 256;

// ---- splitting on added tokens (longest match at the leftmost position, on UTF-16 units) --------

function makeSplitter(contents, work) {
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
    work.steps += n;
    for (let i = 0; i < n;) {
      let node = root.get(text.charCodeAt(i));
      if (!node) { i++; continue; }
      let match = node.end ?? null, j = i + 1;
      for (; j < n && (node = node.get(text.charCodeAt(j))); j++) if (node.end) match = node.end;
      work.steps += j - i; // the walk: at most ADDED_MAX_LENGTH from each position
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
 * The model checked as Hugging Face's reader checks it (ids dense: each of 0..count-1 once over the
 * vocabulary and the added tokens; merges of vocabulary pieces into vocabulary pieces; the unk
 * token in the vocabulary), then the merges as an open-addressed hash of (left symbol, right symbol)
 * -> rank and each rank's result symbol. Symbols are ids into `symbols` (the vocabulary's pieces,
 * then the added tokens' contents). reader names the caller in messages.
 */
function buildModel(reader, m, addedTokens) {
  const what = `${reader}: model`;
  if (!isObject(m.vocab)) fail(`${what}.vocab must be an object of piece: id, got ${describe(m.vocab)}`);
  if (!Array.isArray(m.merges)) fail(`${what}.merges must be an array, got ${describe(m.merges)}`);
  const entries = Object.entries(m.vocab);
  if (entries.length === 0) fail(`${what}.vocab is empty; expected the model's pieces with their ids`);
  // every id below the file's own count of tokens, each once: no table larger than the file
  const count = entries.length + addedTokens.filter((t) => !Object.hasOwn(m.vocab, t.content)).length;
  const sym = new Map(), symbols = [];
  const symOf = (s) => { let id = sym.get(s); if (id === undefined) { id = symbols.length; sym.set(s, id); symbols.push(s); } return id; };
  const vocab = new Map(), owner = new Array(count);
  for (const [p, id] of entries) {
    if (!Number.isInteger(id) || id < 0 || id >= count)
      fail(`${what}.vocab[${JSON.stringify(p)}] is ${describe(id)}; expected an id in 0..${count - 1} (the file has ${count} tokens, and ids are dense)`);
    if (owner[id] !== undefined) fail(`${what}.vocab gives the id ${id} to both ${JSON.stringify(owner[id])} and ${JSON.stringify(p)}; expected one piece per id`);
    owner[id] = p;
    vocab.set(p, id);
    symOf(p);
  }
  const addedAt = new Map(); // id -> index in added_tokens
  addedTokens.forEach((t, i) => {
    const at = `${reader}: added_tokens[${i}]`;
    if (t.content === '') fail(`${at}.content is ""; expected the token's text`);
    if (t.content.length > ADDED_MAX_LENGTH) fail(`${at}.content has ${t.content.length} UTF-16 units; expected at most ${ADDED_MAX_LENGTH} (added tokens are matched at every position of a text)`);
    if (t.id >= count) fail(`${at}.id is ${t.id}; expected an id in 0..${count - 1} (the file has ${count} tokens, and ids are dense)`);
    if (addedAt.has(t.id)) fail(`${at}.id is ${t.id}, as added_tokens[${addedAt.get(t.id)}].id; expected one added token per id`);
    addedAt.set(t.id, i);
    const inVocab = vocab.get(t.content);
    if (inVocab !== undefined && inVocab !== t.id) fail(`${at} is ${JSON.stringify(t.content)} with id ${t.id}, but model.vocab gives it the id ${inVocab}; expected the same id`);
    if (inVocab === undefined && owner[t.id] !== undefined) fail(`${at} is ${JSON.stringify(t.content)} with id ${t.id}, which model.vocab gives to ${JSON.stringify(owner[t.id])}; expected one token per id`);
    if (inVocab === undefined && sym.has(t.content)) fail(`${at}.content ${JSON.stringify(t.content)} is listed twice in added_tokens; expected each once`);
    symOf(t.content);
  });
  if (m.unk_token !== null && m.unk_token !== undefined && !(typeof m.unk_token === 'string' && vocab.has(m.unk_token)))
    fail(`${what}.unk_token is ${describe(m.unk_token)}, which is not in model.vocab; expected a piece of model.vocab or null`);
  const nMerges = m.merges.length;
  const left = new Int32Array(nMerges), right = new Int32Array(nMerges), result = new Int32Array(nMerges);
  const pieceId = (r, p) => {
    const s = sym.get(p);
    if (s === undefined || !vocab.has(p)) fail(`${what}.merges[${r}] names ${JSON.stringify(p)}, which is not in model.vocab; expected merges of vocabulary pieces`);
    return s;
  };
  for (let r = 0; r < nMerges; r++) {
    const mg = m.merges[r];
    const parts = typeof mg === 'string' ? mg.split(' ') : mg;
    if (!Array.isArray(parts) || parts.length !== 2 || typeof parts[0] !== 'string' || typeof parts[1] !== 'string')
      fail(`${what}.merges[${r}] is ${describe(mg)}; expected two pieces, "left right" or [left, right]`);
    const [a, b] = parts;
    left[r] = pieceId(r, a); right[r] = pieceId(r, b);
    if (!vocab.has(a + b)) fail(`${what}.merges[${r}] joins ${JSON.stringify(a)} and ${JSON.stringify(b)} into ${JSON.stringify(a + b)}, which is not in model.vocab; expected a vocabulary piece`);
    result[r] = sym.get(a + b);
  }
  // the pair table; a pair listed twice keeps its first (lowest) rank. The seed is random so that
  // no file can choose pairs that all land in one slot (linear probing would go quadratic).
  let cap = 16;
  while (cap < 2 * nMerges) cap *= 2;
  const keyA = new Int32Array(cap).fill(-1), keyB = new Int32Array(cap), rankAt = new Int32Array(cap), mask = cap - 1;
  const seed = (Math.random() * 0x100000000) | 1;
  const slot = (a, b) => {
    let h = Math.imul(a ^ seed, 0x9E3779B1) ^ b;
    h = Math.imul(h ^ (h >>> 15), 0x85EBCA77);
    return (h ^ (h >>> 13)) & mask;
  };
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
function makeMerger(rankOf, result, work) {
  let rk = new Int32Array(64), prev = new Int32Array(64), next = new Int32Array(64), heap = new Float64Array(256);
  const SHORT = 48, TWO32 = 4294967296;
  return (s, n) => {
    if (n < 2) return n;
    if (n <= SHORT) {
      for (let i = 0; i + 1 < n; i++) rk[i] = rankOf(s[i], s[i + 1]);
      for (;;) {
        let best = 0x7fffffff, at = -1;
        work.steps += n; // n <= SHORT per merge
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
      work.steps++; // each merge pushes at most 2 and pops what was pushed: linear
      let i = size++;
      while (i > 0) { const p = (i - 1) >> 1; if (heap[p] <= key) break; heap[i] = heap[p]; i = p; }
      heap[i] = key;
    };
    const pop = () => {
      work.steps++;
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
 * readHfTokenizer(source, config?, options?): a Hugging Face tokenizer.json (object, text or UTF-8
 * bytes) of a BPE model as a tokenizer. config (optional) is tokenizer_config.json (object or text);
 * its bos_token, eos_token, pad_token and unk_token name specialTokens when given. options:
 * { trustPatterns: true } runs a Regex pattern that is not one of KNOWN_PATTERNS (with a bound on its work).
 */
export function readHfTokenizer(source, config, options) {
  return hfTokenizerFrom('readHfTokenizer', source, config, options);
}

const tokenName = (x) => (typeof x === 'string' ? x : isObject(x) && typeof x.content === 'string' ? x.content : null);

/** readHfTokenizer with `what` naming the caller in messages (lib.loadTokenizer passes its name). */
export function hfTokenizerFrom(what, source, config, options = {}) {
  checkKeys(what, options ?? {}, ['trustPatterns']);
  const trustPatterns = flag(`${what}: trustPatterns`, options?.trustPatterns, false);
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

  const work = { steps: 0 }; // what encode has done: the scanners' characters, the matchers' and merges' steps
  const opts = { trustPatterns, work };
  const normalize = makeNormalizer(`${what}: normalizer`, json.normalizer, opts);
  const state = { byteLevel: false, ...opts };
  const preTokenize = makePreTokenizer(`${what}: pre_tokenizer`, json.pre_tokenizer, state);
  const byteLevel = state.byteLevel;
  const post = makePostProcessor(`${what}: post_processor`, json.post_processor);
  const addedContents = new Set(added.map((t) => t.content));
  const decoder = makeDecoder(`${what}: decoder`, json.decoder, addedContents, opts);
  const model = buildModel(what, m, added);
  const { sym, symbols, vocab, rankOf, result } = model;
  const merge = makeMerger(rankOf, result, work);

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
  const splitRaw = makeSplitter(rawContents, work), splitNorm = makeSplitter(normContents, work);
  const unk = m.unk_token ?? null; // buildModel checked that it is in the vocabulary
  const unkId = unk === null ? null : vocab.get(unk);
  const byteFallback = flag(`${what}: model.byte_fallback`, m.byte_fallback, false), ignoreMerges = flag(`${what}: model.ignore_merges`, m.ignore_merges, false);
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
    if (unkId !== null) into.push(unkId);
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
    unk: fromConfig('unk_token') ?? unkId,
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
    /** the steps encode has taken since the file was read (characters scanned, merges' heap steps): linear in the text */
    workDone: () => work.steps,
  });
}
