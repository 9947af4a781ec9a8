// pretrain.mjs: trains the checkpoints the playground loads instantly (web/models/), with the
// native trainer (build/trainer), one per task x attention form, in the playground's own model
// shape (lab/tasks.js: SIZES.tiny, MAX_LEN 64, vocab = symbols + 1 or the chars vocabulary), and
// writes web/models/index.json describing them (task, form, config, seed, steps, held-out accuracy and,
// for chars, bits per character, and the command that made each). The character model (task chars,
// which the page's first panel runs on typed text) is trained with every form a model can use; the
// other tasks with four. Deterministic: the trainer's batches and weights come from --seed.
//   nice -n 10 node scripts/pretrain.mjs                 (all; a few minutes)
//   node scripts/pretrain.mjs --tasks chars --forms linear:relu
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const FORMS = args.forms?.split(',');
const TASK_FORMS = 'softmax,linear:elu+1,synth:dense,synth:random'.split(',');
// every form a decoder accepts, from the C registry (linear:efficient has no causal form)
const { loadAttention } = await import(new URL('../wasm/index.js', import.meta.url));
const CHARS_FORMS = (await loadAttention()).forms.filter((f) => f.causal).map((f) => f.name);
const SEED = 1;
const CHARS_VOCAB = 50; // lib.charsTokenizer.vocab (1 + the charset of src/model/tasks.c)
// length and symbols as the playground sets them (lab/tasks.js TASKS[...].maxLength / symbols)
const TASKS = {
  copy: { length: 16, symbols: 10, steps: 1500 },
  reverse: { length: 16, symbols: 10, steps: 800 },
  sort: { length: 16, symbols: 10, steps: 1000 },
  recall: { length: 10, symbols: 20, steps: 4000 },
  translate: { length: 6, symbols: 0, steps: 1000 },
  chars: { length: 32, symbols: 0, steps: 3000 },
};
const tasks = (args.tasks ?? Object.keys(TASKS).join(',')).split(',');
const SIZE = { dModel: 32, heads: 2, layers: 2, dFF: 64, maxLen: 64 };

const trainer = new URL('build/trainer', root).pathname;
const build = spawnSync('bash', [new URL('build.sh', root).pathname, 'trainer'], { stdio: 'inherit' });
if (build.status !== 0 || !existsSync(trainer)) process.exit(1);
const outDir = new URL('web/models/', root);
mkdirSync(outDir, { recursive: true });
const indexUrl = new URL('index.json', outDir);
const index = existsSync(indexUrl) ? JSON.parse(readFileSync(indexUrl, 'utf8')) : { models: [] };

for (const task of tasks)
  for (const form of FORMS ?? (task === 'chars' ? CHARS_FORMS : TASK_FORMS)) {
    const t = TASKS[task];
    const vocab = t.symbols ? t.symbols + 1 : CHARS_VOCAB;
    const file = `${task}-${form.replace(':', '-').replace('+', '')}.safetensors`;
    const flags = ['--task', task, '--attention', form, '--length', `${t.length}`, '--vocab', `${vocab}`,
      '--d-model', `${SIZE.dModel}`, '--heads', `${SIZE.heads}`, '--layers', `${SIZE.layers}`, '--d-ff', `${SIZE.dFF}`,
      '--max-len', `${SIZE.maxLen}`, '--steps', `${t.steps}`, '--lr', '3e-3', '--seed', `${SEED}`, '--eval-every', `${t.steps}`];
    if (t.symbols) flags.push('--symbols', `${t.symbols}`);
    flags.push('--out', new URL(file, outDir).pathname);
    const r = spawnSync(trainer, flags, { encoding: 'utf8' });
    process.stdout.write(r.stdout);
    if (r.status !== 0) {
      console.error(r.stderr);
      process.exit(1);
    }
    const m = /final: eval loss ([\d.]+) \(([\d.]+) bits\/token\), accuracy ([\d.]+), ([\d.]+) ms\/step/.exec(r.stdout);
    const entry = {
      file, task, attention: form, length: t.length, symbols: t.symbols, steps: t.steps, seed: SEED, batch: 32,
      config: { vocab, ...SIZE, attention: form }, accuracy: Number(m[3]), loss: Number(m[1]),
      bytes: statSync(new URL(file, outDir)).size, command: `npm run train -- ${flags.slice(0, -2).join(' ')} --out web/models/${file}`,
    };
    if (task === 'chars') entry.bitsPerChar = Number(m[2]);
    index.models = index.models.filter((e) => e.file !== file).concat(entry);
    writeFileSync(indexUrl, JSON.stringify(index, null, 1) + '\n');
  }
const total = index.models.reduce((s, e) => s + e.bytes, 0);
console.log(`web/models: ${index.models.length} checkpoints, ${(total / 2 ** 20).toFixed(2)} MiB`);
