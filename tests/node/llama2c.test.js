// llama2c.test.js: llama2.c's files both ways. The project's PyTorch reference
// (scripts/torch_model.py's llama2c-make and llama2c-run: a llama written in the manner of
// llama2.c's model.py and run.c, apart from the library's model) writes tiny models and a
// tokenizer in llama2.c's format; lib.loadLlama2c must give its tokens, its logits to 1e-5 and its
// greedy tokens. The other way, model.saveLlama2c() of a model trained here must run in the
// reference with the library's logits. No weights are downloaded: the tests make their own.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builds, expectError, maxErr } from './helpers.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = new URL('../../scripts/torch_model.py', import.meta.url).pathname;
const TOL = 1e-5;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const why = 'python3-torch is missing: run bash scripts/setup.sh as root, or apt-get install -y python3-torch';
const PROMPT = 'Once upon a time, Lily saw a little dog. She was happy! Then the day was over.';

function torch(args) {
  const r = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('llama2.c files written by the PyTorch reference: the same tokens, logits and greedy tokens', { skip: haveTorch ? false : why }, (t) => {
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-l2c-'));
  try {
    writeFileSync(join(dir, 'prompt.txt'), PROMPT);
    const shapes = [
      { name: 'tied, 4 heads sharing 2 K/V heads', args: ['--kv-heads', '2', '--seq-len', '64'] },
      { name: 'untied classifier, multi-head', args: ['--untied', '--dim', '48', '--heads', '6', '--kv-heads', '6', '--hidden', '96', '--seq-len', '64'] },
      { name: 'multi-query, 3 layers', args: ['--kv-heads', '1', '--layers', '3', '--seq-len', '96', '--untied'] },
    ];
    for (const [i, s] of shapes.entries()) {
      const bin = join(dir, `m${i}.bin`), tok = join(dir, `t${i}.bin`);
      torch(['llama2c-make', bin, tok, '--seed', String(i + 1), ...s.args]);
      const ref = JSON.parse(torch(['llama2c-run', bin, tok, join(dir, 'prompt.txt'), '--steps', '12']));
      const m = lib.loadLlama2c(readFileSync(bin), { tokenizer: readFileSync(tok) });
      assert.equal(m.training, false, 'loaded for inference');
      const ids = m.tokenizer.encode(PROMPT);
      assert.deepEqual([...ids], ref.tokens, `${s.name}: run.c's BPE encoding`);
      assert.ok(ref.tokens.length < PROMPT.length, 'merges happened');
      const err = maxErr(m.forward(ids).logits, Float32Array.from(ref.logits));
      const greedy = [...m.generate(ids, { maxTokens: 12, stop: 1 })];
      const full = [...m.generate(ids, { maxTokens: 12, stop: 1, cache: false })];
      t.diagnostic(`${s.name}: ${ids.length} tokens, logits error ${err.toExponential(2)} (tol ${TOL}), greedy ${greedy.join(' ')}`);
      assert.ok(err <= TOL, `${s.name}: logits differ by ${err}`);
      assert.deepEqual(greedy, ref.greedy, `${s.name}: greedy tokens (KV cache)`);
      assert.deepEqual(full, ref.greedy, `${s.name}: greedy tokens (full forward)`);
      assert.equal(m.tokenizer.decode(ids), PROMPT, 'decode undoes encode (BOS prints nothing, the dummy space goes)');
      // the file written back is the file read, weights and header alike
      const again = m.saveLlama2c(), orig = readFileSync(bin);
      assert.equal(again.length, orig.length);
      const h = lib.loadLlama2c(again).config;
      assert.deepEqual(h, m.config);
      const f32 = (u8) => new Float32Array(u8.buffer.slice(u8.byteOffset + 28, u8.byteOffset + u8.length));
      assert.ok(maxErr(f32(again), f32(orig)) <= 1e-6, 'the weights and rotary tables come back');
      assert.deepEqual([...again.subarray(0, 28)], [...orig.subarray(0, 28)], 'the header comes back');
      m.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a model trained here, saved with saveLlama2c, runs in the PyTorch reference with the same logits', { skip: haveTorch ? false : why }, (t) => {
  const { lib } = builds[0];
  const dir = mkdtempSync(join(tmpdir(), 'aw-l2c-'));
  try {
    for (const [i, extra] of [{ kvHeads: 2 }, { kvHeads: 1, tieEmbeddings: true }, {}].entries()) {
      const m = lib.createModel({ vocab: 40, dModel: 32, heads: 4, layers: 2, maxLen: 24, block: 'llama', seed: 7 + i, ...extra });
      const rows = (n, k) => Array.from({ length: n }, (_, r) => Array.from({ length: k }, (_, j) => 1 + ((r * 7 + j * 3) % 39)));
      for (let s = 0; s < 20; s++) m.trainStep({ inputs: rows(4, 16), targets: rows(4, 16).map((r) => r.map((x) => (x % 39) + 1)), lr: 3e-3 });
      const bin = join(dir, `e${i}.bin`), ids = [1, 5, 9, 2, 33, 7, 7, 12];
      writeFileSync(bin, m.saveLlama2c());
      writeFileSync(join(dir, 'ids.json'), JSON.stringify(ids));
      const ref = JSON.parse(torch(['llama2c-run', bin, '-', join(dir, 'ids.json'), '--steps', '10']));
      const err = maxErr(m.forward(ids).logits, Float32Array.from(ref.logits));
      const greedy = [...m.generate(ids, { maxTokens: 10, stop: 1 })];
      t.diagnostic(`${JSON.stringify(extra)}: logits error ${err.toExponential(2)}, greedy ${greedy.join(' ')}`);
      assert.ok(err <= TOL, `logits differ by ${err}`);
      assert.deepEqual(greedy, ref.greedy);
      const back = lib.loadLlama2c(readFileSync(bin)); // and back into the library: the very same logits
      assert.deepEqual([...back.forward(ids).logits], [...m.forward(ids).logits]);
      back.dispose();
      m.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const { name, lib } of builds) {
  test(`llama2c [${name}]: Errors for files and models llama2.c's format cannot carry`, () => {
    const m = lib.createModel({ vocab: 20, dModel: 16, heads: 4, kvHeads: 2, maxLen: 12, block: 'llama' });
    const bin = m.saveLlama2c();
    expectError(() => lib.loadLlama2c(bin.subarray(0, 20)), /20 bytes is too short for a llama2.c model/);
    expectError(() => lib.loadLlama2c(bin.subarray(0, bin.length - 4)), /needs \d+ bytes and the file has \d+: it is cut short/);
    const bad = bin.slice();
    new DataView(bad.buffer).setInt32(12, 3, true); // n_heads 3 with dim 16
    expectError(() => lib.loadLlama2c(bad), /dim \(16\) is not divisible by n_heads \(3\)/);
    new DataView(bad.buffer).setUint32(0, 0x616b3432, true);
    expectError(() => lib.loadLlama2c(bad), /a version-48 export \(magic "ak42"\); this reader takes llama2.c's legacy format .* and version 2 \(runq.c's\)/);
    expectError(() => lib.loadLlama2c('model.bin'), /bytes must be a Uint8Array or ArrayBuffer/);
    expectError(() => lib.loadLlama2c(bin, { tokenizer: new Uint8Array(30) }), /the file ends after \d+ of the model's 20 tokens/);
    expectError(() => lib.loadLlama2c(bin, { vocab: 3 }), /unknown option "vocab"/);
    const loaded = lib.loadLlama2c(bin);
    expectError(() => loaded.trainStep({ inputs: [[1, 2]], targets: [[2, 3]] }), /loaded for inference only.*training: true/);
    loaded.dispose();
    const trainable = lib.loadLlama2c(bin, { training: true });
    assert.ok(Number.isFinite(trainable.trainStep({ inputs: [[1, 2]], targets: [[2, 3]] }).loss));
    trainable.dispose();
    for (const [cfg, part] of [[{ attention: 'linear:elu+1' }, /attention "linear:elu\+1": llama2.c runs softmax attention only/],
      [{ positional: 'learned' }, /positional "learned": llama2.c uses rotary positions/],
      [{ bias: true }, /bias true: llama2.c's linear layers have no biases/],
      [{ normType: 'layernorm' }, /normType "layernorm": llama2.c uses RMSNorm/],
      [{ ffn: 'relu' }, /ffn "relu": llama2.c's feed-forward is SwiGLU/],
      [{ ropeTheta: 500000 }, /ropeTheta 500000: run.c fixes the rotary base at 10000/],
      [{ arch: 'encoder-decoder' }, /arch "encoder-decoder": llama2.c runs decoder-only models/]]) {
      const other = lib.createModel({ vocab: 20, dModel: 16, heads: 4, maxLen: 12, block: 'llama', ...cfg });
      expectError(() => other.saveLlama2c(), part);
      other.dispose();
    }
    // a tokenizer written here: 14 letters, the space and the merges 'ab' and ' ab'; 'é' is not a
    // piece and would fall back to its UTF-8 bytes, which a vocabulary of 20 does not have
    const pieces = ['<unk>', '<s>', '</s>', ...Array.from({ length: 16 }, (_, i) => String.fromCharCode(97 + i)), ' ab'];
    pieces[17] = 'ab', pieces[18] = ' ';
    const tok = lib.writeLlama2cTokenizer(pieces, pieces.map((p) => p.length));
    const withTok = lib.loadLlama2c(bin, { tokenizer: tok });
    assert.deepEqual([...withTok.tokenizer.encode('abc')], [1, 19, 5], "' ' + 'a' + 'b' merge to 'ab', then to ' ab'");
    assert.deepEqual([...withTok.tokenizer.encode('ba', { bos: false, eos: true })], [18, 4, 3, 2]);
    expectError(() => withTok.tokenizer.encode('é'), /"é" is not a piece and this tokenizer of 20 tokens has no byte pieces/);
    expectError(() => withTok.tokenizer.decode([25]), /ids\[0\] is 25, outside \[0, 20\)/);
    withTok.dispose();
    m.dispose();
  });
}
