// Compiled (not run) by tests/node/types.test.js: the package's .d.ts must accept real usage
// of every family and reject the mistakes marked @ts-expect-error.
import { charTokenizer, loadAttention, simdSupported } from '../../wasm/index.js';
import type {
  Model, ModelConfig, AttentionResult, CharTokenizer, FormInfo, AttentionName, AttentionLayer, ModelAttention, FormOption,
  BpeTokenizer, BpeTokenizerJSON, CompositionScores, WeightBytes, Generation,
} from '../../wasm/index.js';

const lib = await loadAttention({ simd: 'auto' });
const ok: boolean = lib.simd && simdSupported();
const q = new Float32Array(8);
const r = lib.softmaxAttention({ q, k: q, v: q, n: 2, d: 4, heads: 2, causal: true, keyMask: [1, 0], returnWeights: true });
const w: Float32Array | undefined = r.weights;
lib.linearAttention({ q, k: q, v: q, n: 2, d: 4, feature: 'taylor', causal: true, mode: 'recurrent' });
const state = lib.linearAttentionState({ d: 4, feature: 'elu+1' });
const row: Float32Array = state.step(q.subarray(0, 4), q.subarray(0, 4), q.subarray(0, 4));
state.dispose();
const layer = lib.createSynthesizer({ variant: 'factorized-dense', d: 4, maxLen: 16, a: 4, b: 4 });
layer.forward({ x: q, v: q, n: 2 });
layer.dispose();
const model = lib.createModel({ vocab: 11, dModel: 32, heads: 2, layers: 1, maxLen: 32, attention: 'synth:random' });
const step: { loss: number; accuracy: number } = model.trainStep({ task: 'reverse', batchSize: 4 });
const bytes: Uint8Array = model.save({ optimizer: true });
model.trainStep({ inputs: [[1, 2]], targets: [[2, 3]], mask: [[1, 0]], lr: 1e-3 });
const dsa = lib.createModel({ vocab: 11, dModel: 16, heads: 2, layers: 1, maxLen: 16, attention: 'dsa', attentionOptions: { stage: 'warmup', topK: 4 } });
const indexerKl: number = dsa.trainStep({ task: 'reverse', batchSize: 4 }).sideLoss;
const stage: string | undefined = dsa.setAttentionOptions({ stage: 'sparse' }).attentionOptions?.stage;
// @ts-expect-error DSA's stages are 'warmup' and 'sparse'
dsa.setAttentionOptions({ stage: 'dense' });
const held: number = model.evaluate({ inputs: [[1, 2]], targets: [[2, 3]] }).loss;
const weights: WeightBytes = lib.createModel({ vocab: 11, dModel: 32, heads: 2, layers: 1, maxLen: 32 }, { training: false }).quantize('q8_0', { groupSize: 32 });
const saved: number = weights.fp32 - model.weightBytes.bytes;
// @ts-expect-error an unknown weight format
model.quantize('q5_1');
await model.train({ steps: 2, task: 'copy', lr: (s: number) => 1e-3 / (1 + s), onProgress: (p) => p.loss, signal: new AbortController().signal });
const causalForms: string[] = lib.forms.filter((f) => f.causal).map((f) => f.name);
const inUse: number = lib.heapInUse();
lib.loadModel(bytes).dispose();
// hooks (docs/interpretability.md)
const run = model.runWithCache([1, 2, 3], { names: ['blocks.0.hook_resid_pre', 'blocks.0.attn.hook_z'] });
const z: Float32Array = run.cache['blocks.0.attn.hook_z'].data;
model.runWithHooks([1, 2, 3], { ablate: [{ layer: 0, head: 1, mode: 'mean', positions: [2] }], patch: [{ name: 'blocks.0.hook_resid_pre', from: run.cache }] });
// @ts-expect-error: modes are 'zero' and 'mean'
model.runWithHooks([1, 2, 3], { ablate: [{ layer: 0, head: 1, mode: 'resample' }] });
// @ts-expect-error: not a hook name
model.runWithCache([1, 2, 3], { names: ['blocks.0.resid'] });
const stopped: null = model.runWithCache([1, 2, 3], { names: ['blocks.0.hook_resid_post'], stopAfter: true }).logits;
// @ts-expect-error: stopAfter's run has no logits
const noLogits: Float32Array = model.runWithCache([1, 2, 3], { stopAfter: true }).logits;
const lensShape: number[] = model.logitLens([1, 2, 3]).shape;
const dla: Float32Array = model.headAttribution([1, 2, 3], { target: 4 }).heads.data;
const grid: Float32Array = model.ablationGrid([1, 2, 3], { modes: ['zero'] }).clean;
const patchGrid: number[] = model.patchingGrid([1, 2, 3], { from: run.cache }).shape;
const composition: CompositionScores = model.compositionScores();
const attr = model.attributionPatching([1, 2, 3], [1, 5, 3], { metric: { target: 2, versus: 4 }, names: ['attn.hook_z', 'hook_mlp_out'], perPosition: true });
const attrGrid: Float32Array = attr.grids['attn.hook_z'].data, attrClean: number = attr.clean;
// @ts-expect-error: attributionPatching's names are a block's points without "blocks.{l}."
model.attributionPatching([1, 2], [1, 3], { metric: { target: 2 }, names: ['blocks.0.hook_mlp_out'] });
// @ts-expect-error: the metric is required
model.attributionPatching([1, 2], [1, 3]);
const kComposition: Float32Array = composition.k.data;
// @ts-expect-error: compositionScores reads the weights only, no ids
model.compositionScores([1, 2, 3]);
const gen: Generation = model.startGeneration([1, 2], { maxTokens: 4, temperature: 0.8, topK: 3, seed: 2, stop: 0 });
const fresh: Int32Array = gen.next(2);
const why: null | 'stop' | 'maxTokens' | 'maxLen' = gen.stopReason;
const all: Int32Array = gen.done ? gen.tokens : fresh;
gen.dispose();
// @ts-expect-error: window and sinks are generate's alone
model.startGeneration([1, 2], { window: 8 });
model.dispose();
lib.kernels.matmul(q, q, { M: 2, N: 2, K: 4, transB: true });

// @ts-expect-error simd takes 'auto' or a boolean
await loadAttention({ simd: 'yes' });
// @ts-expect-error q must be a Float32Array
lib.softmaxAttention({ q: [1, 2], k: q, v: q, n: 2, d: 4 });
// @ts-expect-error unknown feature map
lib.linearAttention({ q, k: q, v: q, n: 2, d: 4, feature: 'elu' });
// @ts-expect-error unknown variant
lib.createSynthesizer({ variant: 'sparse', d: 4, maxLen: 16 });

// @ts-expect-error save takes an options object
model.save(true);

const config: ModelConfig = { vocab: 11, attention: 'local', attentionOptions: { window: 4 } };
const rnn: ModelConfig = { vocab: 11, arch: 'gru-attention', dModel: 32 };
const gru: Model = lib.createModel({ ...rnn, arch: 'gru' });
const note: string | undefined = gru.forward([0], { source: [1, 2] }).noAttention;
gru.dispose();
// @ts-expect-error unknown architecture
lib.createModel({ arch: 'lstm' });
const typed: Model = lib.createModel(config);
const res: AttentionResult = lib.localAttention({ q, k: q, v: q, n: 2, d: 4, window: 2 });
const tk: CharTokenizer = charTokenizer({ text: 'hello' });
const first: FormInfo = lib.forms[0];
typed.dispose();

// Any registry form by name (lib.attention / lib.attentionLayer), its options typed per form.
const soft = lib.attention('softmax', { q, k: q, v: q, n: 2, d: 4, heads: 2, causal: true, returnWeights: true });
const out: Float32Array = soft.output;
const sw: Float32Array | undefined = soft.weights;
lib.attention('local', { q, k: q, v: q, n: 2, d: 4, attentionOptions: { window: 2 } });
lib.attention('retention', { q, k: q, v: q, n: 2, d: 4, causal: true, attentionOptions: { decay: 0.9 } });
lib.attention('linformer', { q, k: q, v: q, n: 2, d: 4, maxLen: 8, attentionOptions: { k: 4 } });
lib.attention('synth:mixture', { q, k: q, v: q, x: q, n: 2, d: 4, seed: 3, attentionOptions: { components: ['dense', 'dot'], trainable: false } });
const alayer: AttentionLayer<'synth:dense'> = lib.attentionLayer('synth:dense', { n: 2, d: 4, maxLen: 4, causal: true });
const grads = alayer.backward({ q, k: q, v: q, x: q, dout: q });
const dparams: Float32Array = grads.dparams;
alayer.setParams(alayer.params);
const next: Float32Array = alayer.step(0, { q: q.subarray(0, 4), k: q.subarray(0, 4), v: q.subarray(0, 4) });
const tensorNames: string[] = alayer.tensors.map((t) => t.name);
const trainableSynth: boolean | undefined = alayer.options.trainable;
alayer.forward({ q, k: q, v: q, returnWeights: true });
alayer.dispose();
const someName: AttentionName = lib.forms[1].name;
lib.attention(someName, { q, k: q, v: q, n: 2, d: 4 });
const asModel: ModelAttention = someName;
const encoderOnly: AttentionName | null = lib.forms[lib.forms.length - 1].decoderForm;
const options: readonly FormOption[] = lib.forms[1].options;
const ranges: string[] = options.map((o) => (o.kind === 'int' ? `${o.min}..${o.max}` : o.kind === 'bool' ? String(o.default) : o.words.join('|')));
const year: number = first.paper.year;

// @ts-expect-error unknown form name
lib.attention('sparse', { q, k: q, v: q, n: 2, d: 4 });
// @ts-expect-error softmax has no stride (strided's)
lib.attention('softmax', { q, k: q, v: q, n: 2, d: 4, attentionOptions: { stride: 4 } });
lib.attention('softmax', { q, k: q, v: q, n: 2, d: 4, causal: true, attentionOptions: { window: 4, softcap: 30, learnedSinks: true, outputGate: true, qkNorm: true } });
// @ts-expect-error softmax's softcap is 'off' or a number
lib.attention('softmax', { q, k: q, v: q, n: 2, d: 4, attentionOptions: { softcap: 'on' } });
// @ts-expect-error retention's decay is 'retnet', 'learned' or a number
lib.attention('retention', { q, k: q, v: q, n: 2, d: 4, attentionOptions: { decay: 'nope' } });
// @ts-expect-error synth:mixture's components are from a fixed list
lib.attention('synth:mixture', { q, k: q, v: q, n: 2, d: 4, attentionOptions: { components: ['sparse'] } });
// @ts-expect-error linformer has no causal form
lib.attention('linformer', { q, k: q, v: q, n: 2, d: 4, causal: true });
// @ts-expect-error a layer takes its data in forward, not at creation
lib.attentionLayer('softmax', { q, n: 2, d: 4 });
// @ts-expect-error forms' names are the registry's
const wrongName: FormInfo['name'] = 'linear:elu';
// @ts-expect-error createModel's attention is a registry form
lib.createModel({ attention: 'linear' });
// layerForms: a registry form and its options per layer
const hybrid: Model = lib.createModel({ layers: 2, layerForms: [{ attention: 'gated-delta', attentionOptions: { chunk: 8 } }, { attention: 'softmax' }] });
const layerNames: string[] = (hybrid.config.layerForms ?? []).map((f) => f.attention);
// @ts-expect-error each entry of layerForms names a registry form
lib.createModel({ layers: 1, layerForms: [{ attention: 'linear' }] });
// @ts-expect-error createModel's attentionOptions are the forms' options
lib.createModel({ attention: 'local', attentionOptions: { width: 4 } });

// the byte-level BPE (wasm/bpe.d.ts)
const bpe: BpeTokenizer = lib.trainTokenizer('some text to learn pieces from', { vocabSize: 300 });
const bpeIds: Int32Array = bpe.encode('some text');
const bpeBack: string = bpe.decode(bpeIds) + bpe.pieces[bpeIds[0]] + bpe.merges.length;
const bpeJson: BpeTokenizerJSON = bpe.toJSON();
const bpeBin: Uint8Array = lib.loadTokenizer(bpe.toLlama2c()).toLlama2c();
lib.loadTokenizer(JSON.stringify(bpeJson));
// @ts-expect-error trainTokenizer's option is vocabSize
lib.trainTokenizer('text', { vocab: 300 });
// @ts-expect-error encode takes text or bytes
bpe.encode(42);

// Hugging Face checkpoints (wasm/huggingface.d.ts)
const hfSaved = lib.createModel({ block: 'llama', qkvBias: true, normEps: 1e-6 }).saveHuggingFace({ dtype: 'BF16' });
const hf = lib.loadHuggingFace({ config: JSON.stringify(hfSaved.config), weights: [hfSaved.weights], maxLen: 32 });
const hfArch: string = hf.huggingFace.architecture + (hf.tokenizer ? hf.tokenizer.decode(hf.tokenizer.encode('x')) : '');
lib.createModel({ ffn: 'gelu', positional: 'learned', ropeScaling: undefined }, { training: false });
const steered = hf.runWithHooks([1, 2, 3], { add: [{ name: 'blocks.0.hook_resid_pre', vector: new Float32Array(64), scale: 4 }],
  scale: [{ name: 'blocks.0.attn.hook_z', heads: [1], factor: 0.5 }], replace: [{ name: 'hook_embed', positions: [0], data: new Float32Array(64) }],
  names: ['blocks.0.hook_resid_pre'] });
const steeredRow: Float32Array | undefined = steered.cache?.['blocks.0.hook_resid_pre'].data;
// @ts-expect-error add's vector is numbers
hf.runWithHooks([1], { add: [{ name: 'hook_embed', vector: 'up' }] });
// @ts-expect-error weights are bytes
lib.loadHuggingFace({ config: '{}', weights: 'model.safetensors' });
// @ts-expect-error saveHuggingFace writes F32 or BF16
hf.saveHuggingFace({ dtype: 'F16' });
const hfQ8 = lib.loadHuggingFace({ config: hfSaved.config, weights: hfSaved.weights, quantize: 'q8_0', groupSize: 32 });
const hfQ8Bytes: number = hfQ8.weightBytes.bytes;
const hfQ4Copy: Promise<Model> = hf.quantizedCopy('q4_0', { signal: new AbortController().signal });
// @ts-expect-error quantizedCopy's signal is an AbortSignal
hf.quantizedCopy('q8_0', { signal: true });
// @ts-expect-error quantize is 'q8_0' or 'q4_0'
lib.loadHuggingFace({ config: hfSaved.config, weights: hfSaved.weights, quantize: 'q5_1' });

// TopK sparse autoencoders (wasm/sae.d.ts)
const sae = lib.createSAE({ dIn: 64, dSae: 256, k: 8 });
const saeStats: number = sae.trainStep(new Float32Array(128), { lr: 1e-3 }).fvu + sae.encode(new Float32Array(64)).indices[0];
const saeBack = lib.loadSAE(sae.save());
const trainedSAE: Promise<number> = lib.trainSAE({ model, hook: 'blocks.0.hook_resid_post', ids: [1, 2, 3], dSae: 64, k: 4 }).then((s) => s.config.dSae);
lib.trainSAE({ model, hook: 'blocks.0.hook_resid_post', ids: [1, 2, 3], dSae: 64, k: 4, window: 2, reuse: true, onRead: ({ done, total }) => done / total });
const saeOptionNames: readonly string[] = lib.trainSAEOptions;
// @ts-expect-error reuse is a boolean
lib.trainSAE({ model, hook: 'blocks.0.hook_resid_post', ids: [1, 2], dSae: 64, k: 4, reuse: 1 });
// @ts-expect-error trainSAE's hook is a hook name
lib.trainSAE({ model, hook: 'blocks.0.resid', ids: [1, 2], dSae: 64, k: 4 });
// @ts-expect-error encode takes a Float32Array
sae.encode([1, 2]);
saeBack.free();

export {
  saeStats, trainedSAE,
  steeredRow, hfArch, hfQ8Bytes, hfQ4Copy, bpeBack, bpeBin,
  ok, w, row, step, held, causalForms, inUse, res, tk, first, note, out, sw, dparams, next, tensorNames, trainableSynth,
  asModel, encoderOnly, ranges, year, wrongName, hybrid, layerNames, kComposition,
};
