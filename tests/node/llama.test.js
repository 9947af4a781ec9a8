// llama.test.js: the llama-style block's switches in the model (RMSNorm, SwiGLU, rotary
// positions, grouped- and multi-query heads, no biases, a tied classifier), on both builds:
// finite-difference gradients that a 10% error in any of the new tensors fails, cached generation
// equal to the full forward, checkpoints, the K/V cache's size, and the Errors for what does not fit.
// PyTorch reproduces these models' logits in torch.test.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { TOL, builds, expectError } from './helpers.js';
import { readSafetensors } from '../../wasm/safetensors.js';

const tensorsOf = (m) => readSafetensors(m.save()).tensors;

const small = { vocab: 12, dModel: 8, heads: 4, layers: 2, maxLen: 10, seed: 5 }; // head width 2: one rotary pair
const CONFIGS = [
  { block: 'llama' },
  { block: 'llama', kvHeads: 2 },
  { block: 'llama', kvHeads: 1, tieEmbeddings: true },
  { block: 'llama', kvHeads: 2, arch: 'encoder-decoder' },
  { block: 'llama', attention: 'linear:elu+1', kvHeads: 2 },
  { block: 'llama', attention: 'local', attentionOptions: { window: 3 } },
  { block: 'llama', attention: 'retention' },
  { block: 'llama', attention: 'gla', kvHeads: 1 },
  { block: 'llama', attention: 'gated-delta' },
  { positional: 'rope', ropeTheta: 100 },
  { normType: 'rmsnorm', norm: 'post', ffn: 'swiglu', bias: true },
  { positional: 'none', bias: false, tieEmbeddings: true },
  { positional: 'alibi', block: 'llama', kvHeads: 2 },
  { positional: 'alibi', arch: 'encoder-decoder' },
  // Hugging Face's switches (docs/huggingface.md): heads wider and narrower than dModel / heads,
  // QK-norm with them, q/k/v-only biases, another norm epsilon, Llama 3.1's rotary scaling, GPT-2's block
  { block: 'llama', headDim: 6, kvHeads: 2 },
  { block: 'llama', headDim: 4, attentionOptions: { qkNorm: true } },
  { block: 'llama', qkvBias: true, normEps: 1e-3 },
  { block: 'llama', ropeScaling: { factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxLen: 4 } },
  { ffn: 'gelu', positional: 'learned', tieEmbeddings: true },
];
const label = (c) => JSON.stringify(c);

for (const { name, lib } of builds) {
  test(`llama [${name}]: gradient checks, and a 10% error in each new kind of tensor fails them`, (t) => {
    for (const c of CONFIGS) {
      const m = lib.createModel({ ...small, ...c });
      const g = m.gradientCheck();
      t.diagnostic(`${label(c)}: error ${g.error.toExponential(2)}, worst ${g.worstTensor} ${g.worstTensorError.toExponential(2)}`);
      assert.ok(g.error <= TOL.grad_check, `${label(c)}: gradient error ${g.error}`);
      assert.ok(g.worstTensorError <= TOL.grad_check_tensor, `${label(c)}: ${g.worstTensor} ${g.worstTensorError}`);
      assert.equal(g.zeroGradTensors, 0, `${label(c)}: ${g.firstZeroGradTensor} has no gradient`);
      assert.ok(g.skipped * 4 <= g.checked);
      m.dispose();
    }
    // the tensors these switches add or reshape: SwiGLU's up projection, a K/V head's (kvHeads 1)
    // keys and values, RMSNorm's weight, the embedding that is also the classifier
    const m = lib.createModel({ ...small, block: 'llama', kvHeads: 1, tieEmbeddings: true });
    for (const tensor of ['dec.0.ffn.w3', 'dec.1.self.wk', 'dec.0.self.wv', 'dec.1.ffn.ln.w', 'lnf.w', 'wte', 'dec.0.self.wq']) {
      const bad = m.gradientCheck({ mutate: { tensor, factor: 1.1 } });
      t.diagnostic(`${tensor} x 1.1: error ${bad.worstTensorError.toExponential(2)}`);
      assert.ok(bad.worstTensorError > TOL.grad_check_tensor, `a 10% error in ${tensor}'s gradient passes (${bad.worstTensorError})`);
    }
    m.dispose();
    // and where headDim reshapes Wq, Wo and the K/V heads, GELU's W1, and qkvBias's biases
    const wide = lib.createModel({ ...small, block: 'llama', headDim: 6, kvHeads: 2, qkvBias: true });
    const gelu = lib.createModel({ ...small, ffn: 'gelu', positional: 'learned' });
    for (const [mm, tensor] of [[wide, 'dec.0.self.wq'], [wide, 'dec.1.self.wo'], [wide, 'dec.0.self.wk'], [wide, 'dec.1.self.bq'],
      [wide, 'dec.0.self.bv'], [gelu, 'dec.0.ffn.w1'], [gelu, 'dec.1.ffn.b1']]) {
      const bad = mm.gradientCheck({ mutate: { tensor, factor: 1.1 } });
      t.diagnostic(`${tensor} x 1.1: error ${bad.worstTensorError.toExponential(2)}`);
      assert.ok(bad.worstTensorError > TOL.grad_check_tensor, `a 10% error in ${tensor}'s gradient passes (${bad.worstTensorError})`);
    }
    wide.dispose();
    gelu.dispose();
  });

  test(`llama [${name}]: cached generation samples what the full forward samples`, () => {
    for (const c of CONFIGS) {
      const m = lib.createModel({ ...small, ...c });
      const src = m.config.arch !== 'decoder' ? { source: [[3, 1, 4]] } : {};
      m.trainStep({ inputs: [[1, 2, 3, 4, 5, 6, 7, 8]], targets: [[2, 3, 4, 5, 6, 7, 8, 9]], lr: 0.05, ...src }); // away from init
      const opts = { maxTokens: 7, temperature: 1, seed: 9, ...(m.config.arch !== 'decoder' ? { source: [3, 1, 4] } : {}) };
      assert.deepEqual([...m.generate([1, 2, 3], opts)], [...m.generate([1, 2, 3], { ...opts, cache: false })], label(c));
      m.dispose();
    }
  });

  test(`llama [${name}]: the config, checkpoints and the tensors the switches make`, () => {
    const m = lib.createModel({ ...small, block: 'llama', kvHeads: 2, tieEmbeddings: true });
    const c = m.config;
    assert.equal(c.positional, 'rope');
    assert.equal(c.normType, 'rmsnorm');
    assert.equal(c.ffn, 'swiglu');
    assert.equal(c.bias, false);
    assert.equal(c.kvHeads, 2);
    assert.equal(c.dFF, 24, 'SwiGLU: 8/3 dModel rounded up to a multiple of 8');
    const names = [...tensorsOf(m).keys()];
    for (const n of ['dec.0.self.bq', 'dec.0.self.ln.b', 'out.w', 'out.b', 'wpe', 'dec.0.ffn.b1'])
      assert.ok(!names.includes(n), `${n} should not exist`);
    const wk = tensorsOf(m).get('dec.0.self.wk');
    assert.deepEqual(wk.shape, [4, 8], 'K projects to kvHeads * head width = 4 columns, stored (out, in)');
    assert.ok(names.includes('dec.1.ffn.w3'));
    // given fields override the preset
    const mixed = lib.createModel({ ...small, block: 'llama', positional: 'learned', bias: true });
    assert.equal(mixed.config.positional, 'learned');
    assert.ok(tensorsOf(mixed).has('dec.0.self.bq'));
    mixed.dispose();
    // a checkpoint keeps every switch
    m.trainStep({ inputs: [[1, 2, 3, 4]], targets: [[2, 3, 4, 5]] });
    const back = lib.loadModel(m.save());
    assert.deepEqual(back.config, m.config);
    const a = m.forward([1, 5, 2, 7]).logits, b = back.forward([1, 5, 2, 7]).logits;
    assert.deepEqual([...a], [...b]);
    back.dispose();
    m.dispose();
  });

  test(`llama [${name}]: Errors for switches that do not fit`, () => {
    expectError(() => lib.createModel({ ...small, kvHeads: 3 }), /kvHeads must divide heads \(4\).*got 3/);
    expectError(() => lib.createModel({ ...small, kvHeads: 0 }), /kvHeads must be an integer in \[1, 4096\], got 0/);
    expectError(() => lib.createModel({ ...small, heads: 8, positional: 'rope' }),
      /positional "rope" turns pairs of a head's columns: the head width dModel \/ heads must be even, got 1/);
    expectError(() => lib.createModel({ ...small, positional: 'rope', attention: 'synth:random' }),
      /positional "rope" rotates queries and keys, and attention "synth:random" reads neither/);
    expectError(() => lib.createModel({ ...small, positional: 'alibi', attention: 'linear:elu+1' }),
      /positional "alibi" adds a distance bias to softmax scores, and attention "linear:elu\+1" has none to bias/);
    expectError(() => lib.createModel({ ...small, ropeTheta: 1 }), /ropeTheta must be a number in \(1, 1e9\], got 1/);
    expectError(() => lib.createModel({ ...small, bias: 'no' }), /bias must be a boolean, got/);
    expectError(() => lib.createModel({ ...small, normType: 'batchnorm' }), /normType must be one of "layernorm", "rmsnorm", got "batchnorm"/);
    expectError(() => lib.createModel({ ...small, ffn: 'geglu' }), /ffn must be one of "relu", "swiglu", "gelu", got "geglu"/);
    expectError(() => lib.createModel({ ...small, block: 'gpt' }), /block must be one of "classic", "llama", got "gpt"/);
    expectError(() => lib.createModel({ vocab: 12, arch: 'gru', kvHeads: 1 }), /kvHeads does not apply to arch "gru"/);
    const ok = lib.createModel({ ...small, block: 'llama' }); // the library is still usable
    assert.ok(Number.isFinite(ok.forward([1, 2]).logits[0]));
    ok.dispose();
  });
}
