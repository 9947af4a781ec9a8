// torch.test.js: checkpoints carry to PyTorch and back (scripts/torch_model.py, Debian's
// python3-torch). For every attention form the registry offers a decoder, and for encoder-decoders,
// post-norm and learned positions: the library trains a small model a little and saves it; the
// PyTorch model loads it (the GRU baselines into nn.GRU) and reproduces the library's logits to 1e-4, trains 3 steps and writes
// safetensors; the library loads that file, gives PyTorch's logits to 1e-4 and trains on from it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builds, maxErr } from './helpers.js';

const PYTHON = '/usr/bin/python3'; // Debian's, where python3-torch installs (not a pyenv shim)
const SCRIPT = new URL('../../scripts/torch_model.py', import.meta.url).pathname;
const TOL = 1e-4;

const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const why = 'python3-torch is missing: run bash scripts/setup.sh as root, or apt-get install -y python3-torch';

test('checkpoints go to PyTorch and back: same logits, training continues on both sides', { skip: haveTorch ? false : why }, (t) => {
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-torch-'));
  try {
    const base = { vocab: 13, dModel: 16, heads: 2, layers: 2, dFF: 24, maxLen: 10, seed: 3 };
    const configs = lib.forms.filter((f) => f.causal).map((f) => ({ attention: f.name }));
    configs.push({ attention: 'synth:mixture', attentionOptions: { components: ['dense', 'factorized-random', 'dot'], k: 3 } },
      { attention: 'synth:random', attentionOptions: { trainable: false } },
      { attention: 'softmax', norm: 'post', positional: 'learned' },
      { attention: 'softmax', arch: 'encoder-decoder' }, { attention: 'linear:elu+1', arch: 'encoder-decoder', norm: 'post' },
      { attention: 'synth:dense', arch: 'encoder-decoder' },
      { arch: 'gru', layers: 1 }, { arch: 'gru-attention', layers: 1 }, // nn.GRU / nn.GRUCell
      { attention: 'retention', attentionOptions: { decay: 'learned' }, arch: 'encoder-decoder' },
      { attention: 'retention', attentionOptions: { decay: 0.8 } },
      { attention: 'linformer', attentionOptions: { k: 3 }, arch: 'encoder-decoder' },
      { attention: 'dsa', attentionOptions: { topK: 3, indexHeads: 3, indexDim: 4 } }, { attention: 'dsa', attentionOptions: { topK: 2, stage: 'warmup' } },
      // the llama-style block's switches: RMSNorm, SwiGLU, rotary positions, no biases, grouped-
      // query and multi-query heads, the tied classifier, and no positions at all
      { block: 'llama' }, { block: 'llama', kvHeads: 1, tieEmbeddings: true }, { block: 'llama', attention: 'gla' }, { block: 'llama', attention: 'kda', attentionOptions: { gateRank: 4 } },
      { block: 'llama', arch: 'encoder-decoder', kvHeads: 1 }, { positional: 'rope', ropeTheta: 500 },
      { ffn: 'swiglu', normType: 'rmsnorm', norm: 'post', tieEmbeddings: true }, { positional: 'none', bias: false },
      { positional: 'alibi', kvHeads: 1 }, { positional: 'alibi', arch: 'encoder-decoder', block: 'llama' },
      // softmax's 2025 switches (docs/attention-forms.md section 1b), alone and together, with GQA and positions
      { block: 'llama', kvHeads: 1, attentionOptions: { window: 3 } }, { attentionOptions: { softcap: 1.5 } },
      { positional: 'alibi', attentionOptions: { learnedSinks: true, window: 4 } }, { attentionOptions: { outputGate: true } },
      { block: 'llama', attentionOptions: { qkNorm: true } },
      { block: 'llama', kvHeads: 1, attentionOptions: { window: 2, softcap: 2, learnedSinks: true, outputGate: true, qkNorm: true } },
      // NSA where the choice matters (blocks of one key, one chosen by importance), shared by a K/V group, with RoPE
      { attention: 'nsa', block: 'llama', kvHeads: 1, attentionOptions: { blockSize: 1, topBlocks: 1, window: 2 } },
      { attention: 'nsa', attentionOptions: { blockSize: 2, topBlocks: 1, window: 2, compress: 'mlp' } });
    const rng = (() => { let s = 7; return (n) => { s = (s * 1103515245 + 12345) % 2 ** 31; return s % n; }; })();
    const row = (n) => Array.from({ length: n }, () => 1 + rng(12));
    const cases = configs.map((cfg, i) => {
      // the GRU archs refuse the transformer options (heads, dFF) they do not read
      const { heads, dFF, ...gruBase } = base;
      const m = lib.createModel({ ...(cfg.arch?.startsWith('gru') ? gruBase : base), ...cfg });
      const encdec = m.config.arch !== 'decoder';
      const batch = { inputs: [row(8), row(8)], targets: [row(8), row(8)], mask: [[1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1]] };
      if (encdec) batch.source = [row(6), row(6)];
      for (let s = 0; s < 2; s++) m.trainStep({ ...batch, lr: 1e-2 }); // weights away from their init
      const tokens = row(7), source = encdec ? row(6) : undefined;
      const checkpoint = join(dir, `m${i}.safetensors`);
      writeFileSync(checkpoint, m.save());
      const logits = [...m.forward(tokens, encdec ? { source } : {}).logits];
      m.dispose();
      return { name: JSON.stringify(cfg), cfg, checkpoint, tokens, source, logits, batch, out: join(dir, `t${i}.safetensors`) };
    });
    writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
    const r = spawnSync(PYTHON, [SCRIPT, 'check', join(dir, 'cases.json')], { encoding: 'utf8', maxBuffer: 1 << 26 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    for (const [i, c] of cases.entries()) {
      const rep = report[i];
      const back = lib.loadModel(readFileSync(c.out));
      const again = back.forward(c.tokens, c.source ? { source: c.source } : {}).logits;
      const err = maxErr(again, Float32Array.from(rep.trained_logits));
      t.diagnostic(`${c.name}: library vs PyTorch logits ${rep.logits_error.toExponential(2)}; PyTorch trained 3 steps ` +
        `(loss ${rep.losses.map((x) => x.toFixed(3)).join(' -> ')}); loaded back: ${err.toExponential(2)} (tol ${TOL})`);
      assert.ok(rep.logits_error <= TOL, `${c.name}: PyTorch reproduces the logits to ${rep.logits_error}`);
      assert.ok(err <= TOL, `${c.name}: the library reads PyTorch's checkpoint to ${err}`);
      assert.ok(rep.losses[2] < rep.losses[0], `${c.name}: PyTorch's training lowers the loss`);
      assert.equal(back.steps, 5, 'the step count travels: 2 here + 3 there');
      const more = back.trainStep({ ...c.batch, lr: 1e-3 }); // and training goes on in the library
      assert.ok(Number.isFinite(more.loss));
      back.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The files --help describes are what the commands read: its tokens.json and batch.json examples,
// as printed, run on a model the library saved.
test('torch_model.py --help describes tokens.json and batch.json, and its examples run', { skip: haveTorch ? false : why }, () => {
  const help = spawnSync(PYTHON, [SCRIPT, '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  const tokens = /tokens\.json .*?:\s+(\[[^\]]*\])/.exec(help.stdout);
  const batch = /batch\.json .*?(\{"inputs"[^}]*\})/s.exec(help.stdout);
  assert.ok(tokens && batch, `--help gives a tokens.json and a batch.json example:\n${help.stdout}`);
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-torch-help-'));
  try {
    const example = JSON.parse(batch[1]);
    delete example.source; // a decoder-only model: the help says source is for an encoder-decoder
    const m = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 1, maxLen: 8, seed: 1 });
    writeFileSync(join(dir, 'm.safetensors'), m.save());
    writeFileSync(join(dir, 'tokens.json'), tokens[1]);
    writeFileSync(join(dir, 'batch.json'), JSON.stringify(example));
    const logits = spawnSync(PYTHON, [SCRIPT, 'logits', join(dir, 'm.safetensors'), join(dir, 'tokens.json')], { encoding: 'utf8' });
    assert.equal(logits.status, 0, logits.stderr);
    const rows = JSON.parse(logits.stdout);
    assert.equal(rows.length, JSON.parse(tokens[1]).length);
    const want = m.forward(JSON.parse(tokens[1])).logits;
    assert.ok(maxErr(Float32Array.from(rows.flat()), want) < TOL, 'the logits are the library\'s');
    const train = spawnSync(PYTHON, [SCRIPT, 'train', join(dir, 'm.safetensors'), join(dir, 'batch.json'), join(dir, 'out.safetensors'), '--steps', '2'], { encoding: 'utf8' });
    assert.equal(train.status, 0, train.stderr);
    assert.match(train.stdout, /step 2 loss/);
    lib.loadModel(readFileSync(join(dir, 'out.safetensors'))).dispose();
    m.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
