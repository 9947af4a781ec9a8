// composition.mjs: Elhage et al. 2021's composition scores (model.compositionScores, from the weights
// alone) on the shipped model with induction heads (web/models/fortunes-induction.safetensors): the
// K-composition of every earlier head into every later head, the heads the standard probe names
// (lab/heads.js: random letters read twice), and each induction head's strongest K-composition
// partner. Olsson et al. 2022's mechanism says an induction head's keys read a previous-token head's
// output; the ablation (scripts/ablation-claim.mjs) names that head L2H3 on this model.
//   node scripts/composition.mjs [--model FILE]
import { readFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { NAMED_AT, probeLetters, scoreHeads } from '../lab/heads.js';

const at = process.argv.indexOf('--model');
const FILE = at > 0 ? process.argv[at + 1] : new URL('../web/models/fortunes-induction.safetensors', import.meta.url).pathname;
const lib = await loadAttention();
const model = lib.loadModel(readFileSync(FILE), { training: false });
const { layers: L, heads: H } = model.config;
const label = (l, h) => `L${l + 1}H${h + 1}`; // counted from 1, as the page prints them

const probe = lib.charsTokenizer.encode(probeLetters());
const named = scoreHeads(model.forward(probe).attention, [...probe]);
const induction = named.filter((h) => h.scores.induction >= NAMED_AT);
const previous = named.filter((h) => h.name === 'previous token');
console.log(`# ${FILE.split('/').pop()}: ${L} layers x ${H} heads, dModel ${model.config.dModel}, ${model.config.normType}, ${model.config.positional}`);
console.log(`# heads named on the probe: ${named.map((h) => `${label(h.layer, h.head)} ${h.name} ${h.score.toFixed(2)}`).join(', ')}`);
console.log(`# induction heads (score >= ${NAMED_AT}): ${induction.map((h) => label(h.layer, h.head)).join(', ') || 'none'}`);

const scores = model.compositionScores();
const get = (mode, l2, h2, l1, h1) => scores[mode].data[((l2 * H + h2) * L + l1) * H + h1];
const earlier = (l2) => Array.from({ length: l2 * H }, (_, i) => [Math.floor(i / H), i % H]);

for (const mode of ['k', 'q', 'v']) {
  console.log(`\n${mode.toUpperCase()}-composition: rows the later head, columns the earlier head`);
  const cols = earlier(L - 1);
  console.log(`| later \\ earlier | ${cols.map(([l, h]) => label(l, h)).join(' | ')} |`);
  console.log(`| --- | ${cols.map(() => '---').join(' | ')} |`);
  for (let l2 = 1; l2 < L; l2++)
    for (let h2 = 0; h2 < H; h2++) {
      const cells = cols.map(([l1, h1]) => (l1 < l2 ? get(mode, l2, h2, l1, h1).toFixed(3) : ''));
      console.log(`| ${label(l2, h2)} | ${cells.join(' | ')} |`);
    }
}

console.log('\nEach induction head\'s K-composition partners, strongest first (the top three):');
for (const ih of induction) {
  const ranked = earlier(ih.layer).map(([l1, h1]) => ({ l1, h1, s: get('k', ih.layer, ih.head, l1, h1) })).sort((a, b) => b.s - a.s);
  const prev = previous.map((p) => {
    const rank = ranked.findIndex((r) => r.l1 === p.layer && r.h1 === p.head);
    return rank < 0 ? '' : `; the previous-token head ${label(p.layer, p.head)} ranks ${rank + 1} of ${ranked.length}`;
  }).join('');
  console.log(`${label(ih.layer, ih.head)}: ${ranked.slice(0, 3).map((r) => `${label(r.l1, r.h1)} ${r.s.toFixed(3)}`).join(', ')}${prev}`);
}
// what a head of the same shapes would score by chance: the mean over every pair
let sum = 0, count = 0;
for (let l2 = 1; l2 < L; l2++) for (let h2 = 0; h2 < H; h2++) for (const [l1, h1] of earlier(l2)) sum += get('k', l2, h2, l1, h1), count++;
console.log(`mean K-composition over all ${count} pairs: ${(sum / count).toFixed(3)}`);
model.dispose();
