// The native trainer's command line (tools/train.c, `npm run train`): every numeric flag is read
// whole and checked (a word where a number goes is an error that names the flag, never a silent 0),
// and --init fine-tunes a checkpoint: its model, its weights, fresh optimizer moments; --vocab-size
// and --tokenizer train on a byte-level BPE's ids and report bits per character.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { builds } from './helpers.js';
import { fortunesDocuments } from '../../scripts/fortunes.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
// a binary of its own: docs.test.js builds and runs build/trainer at the same time
const BIN = join(mkdtempSync(join(tmpdir(), 'aw-trainer-bin-')), 'trainer');
const build = spawnSync('bash', ['build.sh', 'trainer'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, TRAINER_OUT: BIN } });
const trainer = (...args) => spawnSync(BIN, args, { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
test.after(() => rmSync(dirname(BIN), { recursive: true, force: true }));

test('trainer: a flag given a non-number or a number out of range is an error naming it', () => {
  assert.equal(build.status, 0, build.stderr);
  for (const [flag, v, words] of [['--steps', 'abc', /--steps must be an integer in \[1, /], ['--steps', '10x', /--steps/],
    ['--batch', '0', /--batch must be an integer/], ['--lr', 'fast', /--lr must be a number in/], ['--lr', 'nan', /--lr/],
    ['--repeats', '-1', /--repeats/], ['--twice', 'two', /--twice/], ['--threads', '65', /--threads must be an integer in \[1, 64\]/],
    ['--clip', '', /--clip/], ['--eval-every', '1e3', /--eval-every/]]) {
    const r = trainer('--task', 'reverse', flag, v, '--steps', '1');
    // the flag under test comes first: a later --steps 1 must not hide a bad --steps
    assert.equal(r.status, 2, `${flag} ${JSON.stringify(v)}: exit ${r.status}\n${r.stdout}${r.stderr}`);
    assert.match(r.stderr, words, `${flag} ${JSON.stringify(v)}`);
  }
});

test('trainer: DSA in two runs: --stage warmup freezes all but the indexer (its side loss printed), then --init ... --stage sparse trains on', () => {
  assert.equal(build.status, 0, build.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'aw-trainer-dsa-'));
  try {
    const base = ['--task', 'reverse', '--length', '6', '--symbols', '6', '--batch', '16', '--eval-every', '20', '--threads', '1'];
    const a = join(dir, 'a.safetensors'), b = join(dir, 'b.safetensors');
    const warm = trainer(...base, '--attention', 'dsa', '--stage', 'warmup', '--topK', '3', '--vocab', '8', '--d-model', '16',
      '--heads', '2', '--layers', '1', '--max-len', '16', '--steps', '40', '--out', a);
    assert.equal(warm.status, 0, warm.stderr);
    const lines = [...warm.stdout.matchAll(/^step +\d+ .*side loss ([\d.]+) +\| eval loss ([\d.]+)/gm)];
    assert.equal(lines.length, 2, warm.stdout);
    assert.ok(Number(lines[1][1]) < Number(lines[0][1]), `the indexer's KL falls: ${lines.map((l) => l[1])}`);
    assert.equal(lines[1][2], lines[0][2], "the frozen model's held-out loss stays");
    const { lib } = builds[0];
    const pa = lib.loadModel(readFileSync(a));
    assert.equal(pa.config.attentionOptions.stage, 'warmup');
    const sparse = trainer(...base, '--init', a, '--stage', 'sparse', '--steps', '40', '--out', b);
    assert.equal(sparse.status, 0, sparse.stderr);
    const pb = lib.loadModel(readFileSync(b));
    assert.equal(pb.config.attentionOptions.stage, 'sparse');
    const evals = [...sparse.stdout.matchAll(/\| eval loss ([\d.]+)/g)].map((x) => Number(x[1]));
    assert.ok(evals[1] < Number(lines[1][2]), `sparse training lowers the held-out loss (${lines[1][2]} -> ${evals})`);
    const fixed = trainer(...base, '--init', a, '--topK', '2', '--steps', '1');
    assert.equal(fixed.status, 2);
    assert.match(fixed.stderr, /--topK: attentionOptions\.topK of attention "dsa" is fixed when the model is created/);
    pa.dispose(), pb.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trainer: --init fine-tunes a checkpoint (its model and weights) and refuses model flags beside it', () => {
  assert.equal(build.status, 0, build.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'aw-trainer-'));
  try {
    const base = ['--task', 'reverse', '--length', '6', '--symbols', '6', '--batch', '16', '--eval-every', '50', '--threads', '1'];
    const a = join(dir, 'a.safetensors'), b = join(dir, 'b.safetensors');
    const first = trainer(...base, '--vocab', '8', '--d-model', '16', '--heads', '2', '--layers', '1', '--d-ff', '32',
      '--max-len', '16', '--steps', '150', '--out', a);
    assert.equal(first.status, 0, first.stderr);
    const bad = trainer(...base, '--init', a, '--heads', '4', '--steps', '1');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--init takes the model .* from the checkpoint/);
    const missing = trainer(...base, '--init', join(dir, 'none.safetensors'), '--steps', '1');
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /--init .*none\.safetensors: cannot read the file/);
    const more = trainer(...base, '--init', a, '--steps', '50', '--out', b);
    assert.equal(more.status, 0, more.stderr);
    assert.match(more.stdout, /init .*a\.safetensors: step 150, its weights/);
    const fresh = trainer(...base, '--vocab', '8', '--d-model', '16', '--heads', '2', '--layers', '1', '--d-ff', '32',
      '--max-len', '16', '--steps', '50');
    const loss = (out) => Number(/final: eval loss ([\d.]+)/.exec(out)[1]);
    // 50 steps on top of 150 beat 50 from scratch: the weights came along
    assert.ok(loss(more.stdout) < loss(fresh.stdout), `fine-tuned ${loss(more.stdout)} vs fresh ${loss(fresh.stdout)}`);
    const { lib } = builds[0];
    const ma = lib.loadModel(readFileSync(a)), mb = lib.loadModel(readFileSync(b));
    assert.deepEqual(mb.config, ma.config, 'the fine-tune keeps the model');
    assert.equal(mb.steps, 50, 'the step count restarts with the fresh moments');
    ma.dispose(), mb.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trainer: --vocab-size trains a BPE (written beside the model), --tokenizer reads one, bits/char = bits/token / characters a token', () => {
  assert.equal(build.status, 0, build.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'aw-trainer-bpe-'));
  try {
    // data/chars.txt's paragraphs as fortune(6)'s documents, one file
    const text = readFileSync(join(ROOT, 'data/chars.txt'), 'utf8').split(/\n\n+/).join('\n%\n');
    mkdirSync(join(dir, 'text'));
    writeFileSync(join(dir, 'text', 'doc'), text);
    const { train, held } = fortunesDocuments(join(dir, 'text')); // the trainer's split, read the same way
    const model = ['--task', 'chars', '--text', join(dir, 'text'), '--d-model', '16', '--heads', '2', '--layers', '1',
      '--d-ff', '32', '--max-len', '32', '--batch', '8', '--eval-every', '10', '--threads', '1'];
    const out = join(dir, 'm.safetensors');
    const r = trainer(...model, '--vocab-size', '300', '--steps', '20', '--out', out);
    assert.equal(r.status, 0, r.stderr);
    const { lib } = builds[0];
    const tok = lib.loadTokenizer(readFileSync(join(dir, 'm.tokenizer.json')));
    const same = lib.trainTokenizer(train.map((d) => `${d}\n\n`).join(''), { vocabSize: 300 });
    assert.deepEqual(tok.merges, same.merges, 'the trainer\'s tokenizer is trainTokenizer\'s on the training documents');
    const m = lib.loadModel(readFileSync(out));
    assert.equal(m.config.vocab, tok.vocabSize, 'the model\'s vocab defaults to the tokenizer\'s size');
    m.dispose();
    const heldText = held.map((d) => `${d}\n\n`).join('');
    const perToken = [...heldText].length / tok.encode(heldText).length;
    const f = /final: held out ([\d.]+) bits\/char \(([\d.]+) bits\/token, ([\d.]+) characters a token\)/.exec(r.stdout);
    assert.ok(f, r.stdout);
    assert.ok(Math.abs(Number(f[3]) - perToken) < 1e-4, `characters a token: ${f[3]} vs ${perToken}`);
    assert.ok(Math.abs(Number(f[1]) - Number(f[2]) / Number(f[3])) < 1e-3, f[0]);
    assert.match(r.stdout, /final: eval loss [\d.]+ \([\d.]+ bits\/token\), accuracy/, 'the line scripts read keeps its form');
    // --tokenizer: the file back, as tokenizer.json and as llama2.c's tokenizer.bin
    writeFileSync(join(dir, 't.bin'), tok.toLlama2c());
    const held1 = /held out (\d+) tokens/.exec(r.stdout)[1];
    for (const file of ['m.tokenizer.json', 't.bin']) {
      const again = trainer(...model, '--tokenizer', join(dir, file), '--steps', '2');
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stdout, new RegExp(`tokenizer .*${file}: ${tok.vocabSize} pieces .* held out ${held1} tokens`));
    }
    const errors = [
      [['--vocab-size', '100'], 2, /--vocab-size must be an integer in \[259, 8192\]/],
      [['--vocab-size', '300', '--tokenizer', join(dir, 't.bin')], 2, /give --tokenizer FILE or --vocab-size N, not both/],
      [['--tokenizer', join(dir, 'none.json')], 1, /--tokenizer .*none\.json: cannot read the file/],
      [['--tokenizer', join(dir, 'text', 'doc')], 1, /--tokenizer .*doc: not a llama2.c tokenizer.bin/],
    ];
    for (const [args, status, words] of errors) {
      const e = trainer(...model, ...args, '--steps', '1');
      assert.equal(e.status, status, `${args.join(' ')}: ${e.stdout}${e.stderr}`);
      assert.match(e.stderr, words);
    }
    const noText = trainer('--task', 'reverse', '--vocab-size', '300', '--steps', '1');
    assert.equal(noText.status, 2);
    assert.match(noText.stderr, /--tokenizer and --vocab-size tokenize --text/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trainer: --layer-forms trains a hybrid (a form per layer) the library loads, and names a bad list', () => {
  assert.equal(build.status, 0, build.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'aw-trainer-layers-'));
  try {
    const out = join(dir, 'h.safetensors');
    const r = trainer('--task', 'reverse', '--length', '6', '--symbols', '6', '--vocab', '8', '--d-model', '16', '--heads', '2',
      '--max-len', '16', '--layers', '3', '--layer-forms', 'gated-delta,elu+1,softmax', '--steps', '20', '--threads', '1', '--out', out);
    assert.equal(r.status, 0, r.stderr);
    const m = builds[0].lib.loadModel(readFileSync(out));
    assert.deepEqual(m.config.layerForms.map((f) => f.attention), ['gated-delta', 'linear:elu+1', 'softmax']);
    m.dispose();
    const bad = trainer('--layers', '3', '--layer-forms', 'gated-delta,softmax', '--steps', '1');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /layerForms has 2 entries and layers is 3/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
