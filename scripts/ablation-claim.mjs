// ablation-claim.mjs: Olsson et al. 2022's ablation argument (In-context Learning and Induction
// Heads, arXiv:2209.11895), measured on the shipped model with induction heads
// (web/models/fortunes-induction.safetensors). Held-out fortunes passages (every 10th document,
// never trained on) are read twice ("passage passage"); the heads the standard probe names
// "induction" (lab/heads.js: induction score >= 0.3 on random letters read twice) are switched off
// together (their hook_z set to zero, then to its mean over the text), and the bits per character
// of the first and of the second copy are compared with the unablated run. Then every head alone:
// which heads the second copy depends on (the previous-token head that feeds the induction heads
// should be among them, by K-composition: Elhage et al. 2021) and which it does not.
//   node scripts/ablation-claim.mjs [--passages 5] [--length 30] [--model FILE]
import { readFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { cpuName } from '../lab/cpu.js';
import { spanBits } from '../lab/circuits.js';
import { NAMED_AT, probeLetters, scoreHeads } from '../lab/heads.js';
import { ensureFortunes, heldOutText } from './fortunes.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const FILE = args.model ?? new URL('../web/models/fortunes-induction.safetensors', import.meta.url).pathname;
const PASSAGES = Number(args.passages ?? 5);
const why = ensureFortunes();
if (why) {
  console.error(`ablation-claim.mjs: ${why}`);
  process.exit(1);
}
const lib = await loadAttention();
const model = lib.loadModel(readFileSync(FILE), { training: false });
const { layers, heads, vocab, maxLen } = model.config;
const LENGTH = Number(args.length ?? Math.min(30, Math.floor((maxLen - 1) / 2)));
const tok = lib.charsTokenizer;

// the heads the probe names "induction"
const probe = tok.encode(probeLetters());
const named = scoreHeads(model.forward(probe).attention, [...probe]);
const induction = named.filter((h) => h.scores.induction >= NAMED_AT);
const label = (h) => `L${h.layer + 1}H${h.head + 1}`;
console.log(`# ${FILE.split('/').pop()}: ${layers} layers x ${heads} heads, dModel ${model.config.dModel}; ${cpuName()}`);
console.log(`# heads named on the probe (random letters read twice): ${named.map((h) => `${label(h)} ${h.name} ${h.score.toFixed(2)}`).join(', ')}`);
console.log(`# induction heads (score >= ${NAMED_AT}): ${induction.map(label).join(', ') || 'none'}`);
if (!induction.length) process.exit(1);

// held-out passages: the stream's text at evenly spaced places, cut at a word boundary, read twice
const stream = heldOutText().replace(/\s+/g, ' ');
const passages = [];
for (let k = 0; passages.length < PASSAGES && k < 200; k++) {
  const at = 1000 + k * 4000;
  const raw = stream.slice(at, at + LENGTH + 20);
  const start = raw.indexOf(' ') + 1;
  const p = raw.slice(start, start + LENGTH);
  if (p.length === LENGTH) passages.push(p);
}

const ablate = (hs, mode) => hs.map((h) => ({ layer: h.layer, head: h.head, mode }));
const rows = [];
const perHead = new Map(); // label -> [second-copy change per passage]
for (const p of passages) {
  const text = `${p} ${p}`;
  const ids = tok.encode(text);
  const period = LENGTH + 1; // the second copy's first character is predicted by the first copy's end
  const bits = (logits) => ({ first: spanBits(logits, ids, vocab, 1, LENGTH), second: spanBits(logits, ids, vocab, period, ids.length) });
  const clean = bits(model.runWithHooks(ids, { ablate: [] }).logits);
  const zero = bits(model.runWithHooks(ids, { ablate: ablate(induction, 'zero') }).logits);
  const mean = bits(model.runWithHooks(ids, { ablate: ablate(induction, 'mean') }).logits);
  rows.push({ p, clean, zero, mean });
  for (const h of named) {
    const b = bits(model.runWithHooks(ids, { ablate: ablate([h], 'mean') }).logits);
    if (!perHead.has(label(h))) perHead.set(label(h), { h, d2: [], d1: [] });
    perHead.get(label(h)).d2.push(b.second - clean.second);
    perHead.get(label(h)).d1.push(b.first - clean.first);
  }
}
const f = (x) => x.toFixed(2), sd = (xs) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / Math.max(1, xs.length - 1));
};
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(`\nThe induction heads ${induction.map(label).join(', ')} switched off together; bits per character of each copy of a `
  + `held-out passage of ${LENGTH} characters read twice:\n`);
console.log('| passage | 1st copy | 2nd copy | 1st, zero-ablated | 2nd, zero-ablated | 1st, mean-ablated | 2nd, mean-ablated |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| "${r.p}" | ${f(r.clean.first)} | ${f(r.clean.second)} | ${f(r.zero.first)} | ${f(r.zero.second)} | ${f(r.mean.first)} | ${f(r.mean.second)} |`);
}
const d = (k, c) => rows.map((r) => r[k][c] - r.clean[c]);
console.log(`| mean change (sd) | | | ${f(mean(d('zero', 'first')))} (${f(sd(d('zero', 'first')))}) | ${f(mean(d('zero', 'second')))} (${f(sd(d('zero', 'second')))}) `
  + `| ${f(mean(d('mean', 'first')))} (${f(sd(d('mean', 'first')))}) | ${f(mean(d('mean', 'second')))} (${f(sd(d('mean', 'second')))}) |`);
console.log(`\nEvery head mean-ablated alone: the change in bits per character of the second copy and of the first, mean over the ${rows.length} passages (sd):\n`);
console.log('| head | named on the probe | 2nd copy | 1st copy |');
console.log('|---|---|---|---|');
for (const { h, d2, d1 } of [...perHead.values()].sort((a, b) => mean(b.d2) - mean(a.d2))) {
  console.log(`| ${label(h)} | ${h.name} (${h.score.toFixed(2)}) | ${f(mean(d2))} (${f(sd(d2))}) | ${f(mean(d1))} (${f(sd(d1))}) |`);
}
