// fortunes.mjs: real English text from Debian's `fortunes` package (fortune(6)'s files, BSD licence;
// data/README.md), read where the package installs it, split into documents exactly as the native
// trainer's --text does (tools/train.c): the files in name order (not the .dat indexes or the .u8
// links), documents between lines holding only "%", trimmed, and every 10th document held out.
// Installs the package with apt when run as root and it is missing; else says what to run.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const FORTUNES = '/usr/share/games/fortunes';

/** Makes sure the package is here (apt as root); returns null or the reason it is not. */
export function ensureFortunes() {
  if (existsSync(join(FORTUNES, 'fortunes'))) return null;
  if (process.getuid?.() === 0) {
    const r = spawnSync('bash', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fortunes >/dev/null'],
      { stdio: 'inherit' });
    if (r.status === 0 && existsSync(join(FORTUNES, 'fortunes'))) return null;
  }
  return `Debian's fortunes package is not installed (sudo apt-get install -y fortunes)`;
}

/** { train: [docs], held: [docs], files } in the trainer's order and split. */
export function fortunesDocuments(dir = FORTUNES) {
  const names = readdirSync(dir).filter((n) => !n.startsWith('.') && !n.endsWith('.dat') && !n.endsWith('.u8')).sort();
  const train = [], held = [];
  let docs = 0, files = 0;
  for (const name of names) {
    const path = join(dir, name);
    if (!statSync(path).isFile()) continue;
    files++;
    const text = readFileSync(path, 'latin1'); // bytes as the C trainer reads them
    for (const part of text.split(/(?<=^|\n)%(?=\n|$)/)) {
      const doc = part.replace(/^[\n \t]+|[\n \t]+$/g, '');
      if (!doc) continue;
      (++docs % 10 === 0 ? held : train).push(doc);
    }
  }
  return { train, held, files };
}

/** The held-out documents as one stream (each followed by a blank line, as the trainer joins them). */
export function heldOutText(dir = FORTUNES) {
  return fortunesDocuments(dir).held.map((d) => `${d}\n\n`).join('');
}

// -log p(target) in nats under the softmax of one row of logits.
function nats(row, target) {
  let mx = -Infinity;
  for (const x of row) mx = Math.max(mx, x);
  let s = 0;
  for (const x of row) s += Math.exp(x - mx);
  return Math.log(s) + mx - row[target];
}

// ids read in consecutive windows of the model's maxLen (each window's first token has no context
// and is not scored): the summed nats of the scored tokens, how many, how many were the top guess,
// and the summed weight(token) of them (the characters each spells).
function scoreWindows(model, ids, weight) {
  const L = model.config.maxLen, V = model.config.vocab;
  let total = 0, count = 0, right = 0, spelled = 0;
  for (let a = 0; a + 1 < ids.length; a += L) {
    const w = ids.subarray(a, Math.min(a + L, ids.length));
    if (w.length < 2) break;
    const { logits } = model.forward(w);
    for (let i = 0; i + 1 < w.length; i++) {
      const row = logits.subarray(i * V, (i + 1) * V);
      let arg = 0;
      for (let v = 1; v < V; v++) if (row[v] > row[arg]) arg = v;
      right += arg === w[i + 1];
      total += nats(row, w[i + 1]);
      spelled += weight(w[i + 1]);
      count++;
    }
  }
  return { total, count, right, spelled };
}

/**
 * Held-out bits per character of a chars model: the first `chars` characters of the held-out
 * documents, read in consecutive windows of the model's maxLen (each window's first character
 * has no context and is not scored). Deterministic: what the catalogue and its test compute.
 * Returns { bits, count, accuracy } (accuracy: the share of next characters that were the top guess).
 */
export function heldOutBits(lib, model, chars = 32768, dir = FORTUNES) {
  const { total, count, right } = scoreWindows(model, lib.charsTokenizer.encode(heldOutText(dir).slice(0, chars)), () => 1);
  return { bits: total / count / Math.LN2, count, accuracy: right / count };
}

/**
 * Held-out bits per character of a model that reads a byte-level BPE's pieces (tokenizer:
 * lib.loadTokenizer's): the first `chars` bytes of the held-out documents (the trainer reads bytes;
 * the text is almost all ASCII, so a byte is a character), encoded with the tokenizer and read in
 * consecutive windows of the model's maxLen tokens; each window's first token has no context and is
 * not scored, and the bits of the scored tokens are divided by the bytes those tokens spell. Case is
 * kept (the chars models read lower case). Returns { bits, count (tokens scored), chars (bytes
 * scored), accuracy, charsPerToken }.
 */
export function heldOutBitsBpe(lib, model, tokenizer, chars = 32768, dir = FORTUNES) {
  const bytes = Buffer.from(heldOutText(dir).slice(0, chars), 'latin1');
  const ids = tokenizer.encode(bytes);
  const { total, count, right, spelled } = scoreWindows(model, ids, (id) => tokenizer.pieceBytes(id).length);
  return { bits: total / spelled / Math.LN2, count, chars: spelled, accuracy: right / count, charsPerToken: bytes.length / ids.length };
}

/**
 * copyBits for a BPE model: a held-out passage of as many pieces as fit twice in maxLen (at most
 * 60), read once and then again, as bits per character of each copy (each copy's first piece not
 * scored). Returns { first, second }.
 */
export function copyBitsBpe(lib, model, tokenizer, from = 5000, dir = FORTUNES) {
  const length = Math.min(60, Math.floor((model.config.maxLen - 1) / 2));
  const start = tokenizer.encode(Buffer.from(heldOutText(dir).slice(from, from + 8 * length), 'latin1'));
  const passage = tokenizer.decodeBytes(start.subarray(1, 1 + length)); // whole pieces
  // a passage that starts with a space (most pieces do) is read again straight after itself, so
  // both copies are the same pieces; else a space goes between them
  const ids = tokenizer.encode(Buffer.concat([passage, Buffer.from(passage[0] === 0x20 ? '' : ' '), passage]));
  const split = tokenizer.encode(passage).length;
  const V = model.config.vocab;
  const { logits } = model.forward(ids);
  const bits = (a, b) => {
    let s = 0, n = 0;
    for (let i = a; i < b; i++) {
      s += nats(logits.subarray((i - 1) * V, i * V), ids[i]);
      n += tokenizer.pieceBytes(ids[i]).length;
    }
    return s / n / Math.LN2;
  };
  return { first: bits(1, split), second: bits(split + 1, ids.length) };
}

/**
 * Does the model copy? A held-out passage of `length` characters (60, or as many as fit twice in the
 * model's maxLen; from character `from` of the held-out stream), then a space, then the same passage
 * again: the bits per character of the first
 * copy (its 2nd character on) and of the second copy (its 2nd character on, where an induction head
 * could read the answer from the first). Returns { first, second }.
 */
export function copyBits(lib, model, from = 5000, length = Math.min(60, Math.floor((model.config.maxLen - 1) / 2)), dir = FORTUNES) {
  const text = heldOutText(dir).slice(from, from + length);
  const ids = lib.charsTokenizer.encode(`${text} ${text}`);
  const V = model.config.vocab;
  const { logits } = model.forward(ids);
  const bits = (a, b) => { // mean over predicted positions a..b-1
    let s = 0;
    for (let i = a; i < b; i++) s += nats(logits.subarray((i - 1) * V, i * V), ids[i]);
    return s / (b - a) / Math.LN2;
  };
  return { first: bits(1, length), second: bits(length + 2, ids.length) };
}
