// Compiled (not run) by tests/node/types.test.js: the package's .d.ts must accept real usage
// of every family and reject the mistakes marked @ts-expect-error.
import { charTokenizer, loadAttention, simdSupported } from '../../wasm/index.js';
import type { Model, ModelConfig, AttentionResult, CharTokenizer, FormInfo } from '../../wasm/index.js';

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
const held: number = model.evaluate({ inputs: [[1, 2]], targets: [[2, 3]] }).loss;
await model.train({ steps: 2, task: 'copy', lr: (s: number) => 1e-3 / (1 + s), onProgress: (p) => p.loss, signal: new AbortController().signal });
const causalForms: string[] = lib.forms.filter((f) => f.causal).map((f) => f.name);
const inUse: number = lib.heapInUse();
lib.loadModel(bytes).dispose();
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

export { ok, w, row, step, held, causalForms, inUse, res, tk, first, note };
