// Types for lib.createModel / lib.loadModel: the tiny Transformer (docs/model.md).

import type { AttentionName, ModelAttentionOptions } from './forms.js';
export type { ModelAttentionOptions, FormInfo } from './forms.js';

/**
 * Attention form ids (as in the playground): every form of the C registry (wasm/forms.d.ts, generated).
 * 'linear:efficient' has no causal form, so a decoder rejects it; 'linformer' has none either and
 * serves an encoder-decoder's encoder (the decoder's self-attention is softmax). An alias of AttentionName.
 */
export type ModelAttention = AttentionName;

/** repeat: k random symbols then the same k again (k from [length/2, length] per example): the
 *  second copy is predictable only by an induction head */
export type ModelTask = 'copy' | 'reverse' | 'sort' | 'recall' | 'translate' | 'chars' | 'repeat' | 'mqar';

/** the weight formats of model.quantize: int8 in groups (llama2.c's runq.c), ggml's 4-bit Q4_0 */
export type WeightFormat = 'q8_0' | 'q4_0';
/** format 'bf16': the matrices kept in 16 bits (loadHuggingFace's dtype: 'bf16'); groupSize 0 for fp32 and bf16 */
export interface WeightBytes { format: 'fp32' | WeightFormat | 'bf16'; groupSize: number; fp32: number; bytes: number }

export interface ModelConfig {
  /** token ids are 0..vocab-1; default 64 (chars needs lib.charsTokenizer.vocab = 50) */
  vocab?: number;
  /** width, default 64 */
  dModel?: number;
  /** attention heads; dModel % heads == 0; default 4 */
  heads?: number;
  /** blocks (encoder-decoder: this many in each); 1..16, default 2 (gru archs: must be 1, default 1) */
  layers?: number;
  /** FFN hidden width, default 4 * dModel */
  dFF?: number;
  /** the longest sequence (positions), default 64; a Synthesizer's L */
  maxLen?: number;
  /** default 'softmax'. Cross-attention (encoder-decoder) uses the same form, except that a
   *  Synthesizer replaces self-attention only and cross-attention stays softmax. */
  attention?: ModelAttention;
  attentionOptions?: ModelAttentionOptions;
  /** decoder only: each layer's form and options, one entry per layer (length `layers`), for hybrid
   *  stacks (3 'gated-delta' : 1 'softmax') and window/global patterns; with it, attention and
   *  attentionOptions are Errors (each layer names its own). docs/model.md */
  layerForms?: ModelLayerForm[];
  /** default 'sinusoidal' ('rope' with block 'llama'); 'none' adds no positions (the causal mask
   *  still tells them apart); 'rope' rotates every self-attention's queries and keys (llama2.c's
   *  pairing: columns (2i, 2i+1) of each head turn by p * ropeTheta^(-2i/headWidth)) and needs an
   *  even head width and a form that reads queries and keys; 'alibi' adds -m_h |i - j| to every
   *  self-attention score, m_h = 2^(-8h/heads) for heads h = 1..heads (softmax only) */
  positional?: 'sinusoidal' | 'learned' | 'none' | 'rope' | 'alibi';
  /** rotary positions' base, default 10000 */
  ropeTheta?: number;
  /** Llama 3.1's rotary scaling (transformers' rope_type "llama3"): wavelengths past
   *  originalMaxLen / lowFreqFactor turn factor times slower, those under originalMaxLen /
   *  highFreqFactor are kept, the band between is blended; all four or none; positional 'rope' only */
  ropeScaling?: { factor: number; lowFreqFactor: number; highFreqFactor: number; originalMaxLen: number };
  /** the epsilon of every LayerNorm and RMSNorm (QK-norm's too), in (0, 0.1], default 1e-5 */
  normEps?: number;
  /** with bias false: q, k and v keep their biases (Qwen2); default false */
  qkvBias?: boolean;
  /** a preset of the block's switches: 'classic' (default: LayerNorm, ReLU FFN, biases) or 'llama'
   *  (RMSNorm, SwiGLU, rotary positions, no biases); the fields below, given, override it */
  block?: 'classic' | 'llama';
  /** 'layernorm' (default) or 'rmsnorm' (no shift; eps normEps) */
  normType?: 'layernorm' | 'rmsnorm';
  /** 'relu' (default): relu(x W1 + b1) W2 + b2; 'swiglu': (silu(x W1) * x W3) W2, default dFF
   *  8/3 dModel rounded up to a multiple of 8; 'gelu': GPT-2's tanh GELU ("gelu_new") in place of relu */
  ffn?: 'relu' | 'swiglu' | 'gelu';
  /** linear layers with biases, default true (false with block 'llama') */
  bias?: boolean;
  /** the classifier is the token embedding transposed (no out.w), default false */
  tieEmbeddings?: boolean;
  /** key/value heads (grouped-query attention): divides heads; default heads, 1 = multi-query.
   *  Wk and Wv shrink to kvHeads * headWidth columns and so does the KV cache of generation */
  kvHeads?: number;
  /** LayerNorm placement, default 'pre' */
  norm?: 'pre' | 'post';
  /** default 'decoder' (causal LM); 'encoder-decoder' adds a bidirectional encoder and cross-attention;
   *  'gru' and 'gru-attention': the RNN baselines, a GRU encoder-decoder with a fixed context vector
   *  or with Bahdanau's additive attention (layers must be 1, its default for them; heads,
   *  attention, positional, norm and dFF are not used) */
  arch?: 'decoder' | 'encoder-decoder' | 'gru' | 'gru-attention';
  /** initialisation and training-batch stream, default 1 */
  seed?: number;
}

export interface TaskOptions {
  task: ModelTask;
  /** copy/reverse/sort: symbols (16); recall: key-value pairs (8); translate: digits (4); chars: characters (min(64, maxLen)) */
  length?: number;
  /** distinct symbols, ids 1..symbols (copy/reverse/sort 10, recall 20: keys from the first half) */
  symbols?: number;
}

export interface TrainStepOptions extends TaskOptions {
  /** default 32 */
  batchSize?: number;
  /** AdamW: lr 2e-3, beta1 0.9, beta2 0.98, eps 1e-8, weightDecay 0.01 (matrices only); clip: global norm 1 (<= 0: none) */
  lr?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  clip?: number;
}

/** The caller's own batch: rows of token ids, position i of inputs[r] predicting targets[r][i]. */
export interface OwnBatch {
  inputs: ArrayLike<number>[];
  targets: ArrayLike<number>[];
  /** 0 (or false) = no loss at that position; default all 1 */
  mask?: ArrayLike<number | boolean>[];
  /** encoder-decoder, gru, gru-attention: one source row per input row */
  source?: ArrayLike<number>[];
}

export type Hyperparameters = Pick<TrainStepOptions, 'lr' | 'beta1' | 'beta2' | 'eps' | 'weightDecay' | 'clip'>;

export interface TrainOptions {
  steps: number;
  /** called every `yieldEvery` steps (default 10), after which the thread is handed back */
  onProgress?: (p: { step: number; steps: number; loss: number; accuracy: number; gradNorm: number }) => void;
  /** a real AbortSignal (an AbortController's); an object with an aborted flag is refused */
  signal?: AbortSignal;
  yieldEvery?: number;
  /** a constant, or a schedule of the step */
  lr?: number | ((step: number) => number);
  /** every step's trainStep options (your own data stream); otherwise the task or batch given here */
  batch?: (step: number) => TrainStepOptions | (OwnBatch & Hyperparameters);
  [option: string]: unknown;
}

export interface EvaluateOptions extends TaskOptions {
  /** default 8 */
  batches?: number;
  /** default 64 */
  batchSize?: number;
  /** the data seed (default 12345: the same held-out batches every call) */
  seed?: number;
}

/** model.sparseReading: per head h, (n x n) row-major: row t is query t, column s key s. */
export interface SparseReading {
  layer: number;
  heads: number;
  n: number;
  /** 1 where the head's query read the key through its selection, else 0 */
  selected: Float32Array[];
  /** the causal softmax of the same queries and keys: the dense attention the selection replaces */
  dense: Float32Array[];
  /** the layer's weights, as forward returns them */
  weights: Float32Array[];
  /** per query, the share of its dense attention on the selected keys */
  kept: Float64Array[];
}

export interface ForwardResult {
  /** (T, vocab) row-major */
  logits: Float32Array;
  /** attention[layer][head]: the decoder self-attention weights, (T, T) row-major; [] for gru archs */
  attention: Float32Array[][];
  /** encoder-decoder: [layer][head] (T, S); gru-attention: [[a]], the alignment weights a_ij (T, S) */
  crossAttention?: Float32Array[][];
  /** arch 'gru': why there is no attention map (one fixed context vector) */
  noAttention?: string;
  /** encoder-decoder: [layer][head] (S, S) */
  encoderAttention?: Float32Array[][];
}

/** A hook point's name (TransformerLens's, layers from 0; docs/interpretability.md). */
export type HookName =
  | 'hook_embed'
  | 'ln_final.hook_normalized'
  | `blocks.${number}.${'hook_resid_pre' | 'hook_attn_out' | 'hook_resid_mid' | 'hook_mlp_out' | 'hook_resid_post'}`
  | `blocks.${number}.attn.${'hook_q' | 'hook_k' | 'hook_v' | 'hook_pattern' | 'hook_z'}`;

/** One activation: data row-major in `shape` ((n, dModel), (n, heads, dHead), (heads, n, n), ...). */
export interface HookTensor {
  data: Float32Array;
  shape: number[];
}

export type HookCache = { [name: string]: HookTensor };
/** the block points attributionPatching estimates, each at every layer (without "blocks.{l}.") */
export type AttributionName = 'attn.hook_q' | 'attn.hook_k' | 'attn.hook_v' | 'attn.hook_z' | 'hook_resid_pre' | 'hook_attn_out' | 'hook_resid_mid' | 'hook_mlp_out' | 'hook_resid_post';

/** model.compositionScores(): one [layers, heads, layers, heads] tensor per kind of composition. */
export interface CompositionScores {
  /** the later head's queries read the earlier head's output: ||W_OV^1 W_QK^2||_F / (||W_OV^1||_F ||W_QK^2||_F) */
  q: HookTensor;
  /** its keys: ||W_OV^1 W_QK^2^T||_F / (||W_OV^1||_F ||W_QK^2||_F) */
  k: HookTensor;
  /** its values: ||W_OV^1 W_OV^2||_F / (||W_OV^1||_F ||W_OV^2||_F) */
  v: HookTensor;
}

export interface Ablation {
  layer: number;
  head: number;
  /** 'zero': z = 0; 'mean': z = its mean over every position of this input */
  mode: 'zero' | 'mean';
  /** default: every position */
  positions?: ArrayLike<number>;
}

export interface Patch {
  name: HookName;
  positions?: ArrayLike<number>;
  /** per-head names only (attn.hook_q, hook_k, hook_v, hook_z) */
  heads?: ArrayLike<number>;
  /** a runWithCache cache of another input of the same length that kept `name` */
  from: HookCache;
}

export interface HeadAttribution {
  /** (layers, heads, n) */
  heads: HookTensor;
  /** (layers, n) */
  mlp: HookTensor;
  embed: Float32Array;
  /** attention output biases, the final norm's shift, the classifier's bias */
  rest: Float32Array;
  /** the clean logit of the target, which the parts sum to */
  logit: Float32Array;
  target: Int32Array;
}

export interface GenerateOptions {
  /** default 16; generation also stops when the sequence reaches maxLen (unless window is given) */
  maxTokens?: number;
  /** 0 (default) = greedy */
  temperature?: number;
  /** 0 (default) = all tokens */
  topK?: number;
  /** sampling seed, default 1 */
  seed?: number;
  /** stop after this token (it is included) */
  stop?: number;
  /** encoder-decoder, gru, gru-attention: the source tokens */
  source?: ArrayLike<number>;
  /** true (default): KV cache (softmax) / recurrent state (causal linear); false: re-run the full forward */
  cache?: boolean;
  /** a rolling KV cache of this many positions, so generation goes past maxLen (softmax decoders
   *  with positional 'rope' or 'none'; positions are cache slots, as in StreamingLLM) */
  window?: number;
  /** with window: keep the first `sinks` tokens in the cache for ever (attention sinks), default 0 */
  sinks?: number;
}

/** model.startGeneration's session: generate's tokens, made a few at a time. */
export interface Generation {
  /** makes up to count (a positive integer, default 1) more tokens and returns them; empty once done.
   *  Throws once the generation or its model was disposed, or the model changed (trainStep, quantize,
   *  setAttentionOptions, sampleVocab) since it began */
  next(count?: number): Int32Array;
  /** true once it ended (stopReason says why) */
  readonly done: boolean;
  /** every token made so far (a copy) */
  readonly tokens: Int32Array;
  /** null while it runs; 'stop': it made the stop token (included); 'maxTokens': it made maxTokens;
   *  'maxLen': the sequence filled maxLen */
  readonly stopReason: null | 'stop' | 'maxTokens' | 'maxLen';
  /** frees its caches; safe to call twice (model.dispose frees it too) */
  dispose(): void;
}

export interface TaskExample {
  source: Int32Array;
  /** what the model should produce */
  target: Int32Array;
  /** what generate() continues: decoder source + [0] (recall: the source alone); encoder-decoder [0] (source goes to the encoder) */
  prompt: Int32Array;
}

export interface GradientCheckResult {
  error: number;
  worstTensor: string;
  worstTensorError: number;
  checked: number;
  skipped: number;
  zeroGradTensors: number;
  firstZeroGradTensor: string;
  fixedWithGrad: number;
}

/** One decoder layer's form in createModel's layerForms. */
export interface ModelLayerForm {
  attention: ModelAttention;
  attentionOptions?: ModelAttentionOptions;
}

export interface Model {
  /** the resolved config (defaults filled in); a model made with layerForms has layerForms (every
   *  layer, options filled in) and no attention or attentionOptions */
  readonly config: Readonly<Required<Omit<ModelConfig, 'attention' | 'attentionOptions' | 'layerForms'>> &
    { attention?: ModelAttention; attentionOptions?: ModelAttentionOptions; layerForms?: ModelLayerForm[] }>;
  /** false when loaded with { training: false } or by loadLlama2c: it runs and generates, and does not train */
  readonly training: boolean;
  /** ids generation may pick: the vocabulary, or a tokenizer's fewer ids when a checkpoint pads its vocabulary (loadHuggingFace sets it); an integer in [1, vocab] */
  sampleVocab: number;
  readonly parameterCount: number;
  /** AdamW steps taken (restored by loadModel; the optimizer moments are not saved) */
  readonly steps: number;
  /** the bytes this library's generation keeps for one sequence of maxLen, per decoder layer (its KV
   *  cache or recurrent state as allocated, scratch included; null: no step, generation recomputes)
   *  and in all; an Error for a model that is not a decoder */
  generationBytes(): { layers: (number | null)[]; total: number };
  /** quantizes every matrix a decoder reads per token (q, k, v, o, the FFN's, the classifier; a q4_0
   *  model keeps a q8_0 classifier) and frees their float32 copies; inference-only decoders. Forward,
   *  generate and streamLosses then use integer dot products; trainStep and save are Errors. In place:
   *  memory grows by at most one matrix, and the float32 copies' room is freed */
  quantize(format: WeightFormat, opts?: { groupSize?: number }): WeightBytes;
  /** a quantized copy for inference, bit for bit what quantize would make, this model left as it is:
   *  made in pieces of about a million values with a macrotask between them (no long task in a page),
   *  never copying the float32 weights whole; rejects with the signal's reason when aborted (signal: a
   *  real AbortSignal, an AbortController's; an object with an aborted flag is refused) */
  quantizedCopy(format: WeightFormat, opts?: { groupSize?: number; signal?: AbortSignal }): Promise<Model>;
  /** the weights' format and bytes: fp32 (in float32, before quantize) and bytes (held now) */
  readonly weightBytes: WeightBytes;
  /** sideLoss: the forms' own side losses this step (DSA's indexer KL, a mean over the batch's queries; 0 for other forms) */
  trainStep(opts: TrainStepOptions | (OwnBatch & Hyperparameters)): { loss: number; accuracy: number; gradNorm: number; sideLoss: number };
  /** changes attentionOptions a built form lets change (DSA's stage); others are Errors, the model then unchanged; returns the new config */
  setAttentionOptions(opts: ModelAttentionOptions): this['config'];
  evaluate(opts: EvaluateOptions | OwnBatch): { loss: number; accuracy: number; tokens: number; bitsPerChar?: number };
  /** many steps without blocking; rejects with the signal's reason when aborted */
  train(opts: TrainOptions & (Partial<TrainStepOptions> | Partial<OwnBatch>)): Promise<{ loss: number; accuracy: number; gradNorm: number; steps: number }>;
  forward(tokens: ArrayLike<number>, opts?: { source?: ArrayLike<number> }): ForwardResult;
  /** which keys a sparse layer (nsa, dsa) read on tokens, beside the dense attention it replaces */
  sparseReading(tokens: ArrayLike<number>, opts?: { layer?: number }): SparseReading;
  generate(prompt?: ArrayLike<number>, opts?: GenerateOptions): Int32Array;
  /** generate in steps: next(count) makes the same tokens a few at a time (window and sinks are
   *  generate's alone: Errors here) */
  startGeneration(prompt?: ArrayLike<number>, opts?: Omit<GenerateOptions, 'window' | 'sinks'>): Generation;
  example(opts: TaskOptions & { seed?: number }): TaskExample;
  /** safetensors bytes (PyTorch's layout); the config is in __metadata__; optimizer: true adds AdamW's state */
  save(opts?: { optimizer?: boolean }): Uint8Array;
  /** llama2.c's model file (what run.c reads); only a model llama2.c can run (block 'llama' with
   *  softmax, ropeTheta 10000, decoder-only): any other is an Error naming the part llama2.c lacks */
  /** The loss (nats) of every next token of a stream of any length, read with a rolling KV cache of
   *  `window` positions (default maxLen) keeping the first `sinks` tokens (StreamingLLM; positions
   *  are cache slots), or with recompute a fresh forward over the last `window` tokens at every
   *  position. Softmax decoders with positional 'rope' or 'none'. tokens.length - 1 values. */
  streamLosses(tokens: ArrayLike<number>, opts?: { window?: number; sinks?: number; recompute?: boolean }): Float32Array;
  /** llama2.c's model file: version 0 (default; float32, run.c's) or 2 (int8 in groups of groupSize, runq.c's) */
  saveLlama2c(opts?: { version?: 0 | 2; groupSize?: number }): Uint8Array;
  /** Hugging Face's files for this model (docs/huggingface.md): config.json's object and
   *  model.safetensors' bytes (F32 by default, or BF16), that transformers' AutoModelForCausalLM
   *  loads as LlamaForCausalLM, MistralForCausalLM (window), Qwen2ForCausalLM (qkvBias),
   *  Qwen3ForCausalLM (qkNorm) or GPT2LMHeadModel (layernorm, gelu, learned positions, biases,
   *  tied); tokenizer: tokenizer.json's text when the model has a tokenizer that writes one.
   *  Anything the format cannot express is an Error naming it. */
  saveHuggingFace(opts?: { dtype?: 'F32' | 'BF16' }): { config: Record<string, unknown>; weights: Uint8Array; tokenizer?: string };
  /** forward's logits and the activations at every hook point (or `names`); decoder-only models.
   *  stopAfter: true ends the forward once every named point is computed (the later blocks, the
   *  final norm unless ln_final is named, and the classifier skipped): the same cache, logits null */
  runWithCache(ids: ArrayLike<number>, opts: { names?: HookName[]; stopAfter: true }): { logits: null; cache: HookCache };
  runWithCache(ids: ArrayLike<number>, opts?: { names?: HookName[]; stopAfter?: false }): { logits: Float32Array; cache: HookCache };
  runWithCache(ids: ArrayLike<number>, opts?: { names?: HookName[]; stopAfter?: boolean }): { logits: Float32Array | null; cache: HookCache };
  /** the logits with heads ablated, activations patched from another input's cache, and hook
   *  operations: replace rows, scale, add a vector (steering); at a point they apply in the order
   *  patch, replace, ablate, scale, add. names: the edited activations to return in cache */
  runWithHooks(ids: ArrayLike<number>, opts?: {
    ablate?: Ablation[]; patch?: Patch[];
    /** rows (one per position, in the order given; all positions when absent) set at name; per-head names: only `heads` */
    replace?: { name: HookName; positions?: ArrayLike<number>; heads?: ArrayLike<number>; data: ArrayLike<number> }[];
    /** name's activation times factor at positions (and heads), each listed once */
    scale?: { name: HookName; factor: number; positions?: ArrayLike<number>; heads?: ArrayLike<number> }[];
    /** scale (default 1) x vector added to each selected row (positions and heads each listed once): vector is one position's row (dModel, or heads x dHead) */
    add?: { name: HookName; vector: ArrayLike<number>; scale?: number; positions?: ArrayLike<number>; heads?: ArrayLike<number> }[];
    names?: HookName[];
  }): { logits: Float32Array; cache?: HookCache };
  /** each layer's resid_post through the final norm and the classifier: shape [layers, n, vocab] */
  logitLens(ids: ArrayLike<number>): HookTensor;
  /** direct logit attribution of target (default: the next token) per head, MLP and the embeddings */
  headAttribution(ids: ArrayLike<number>, opts?: { target?: number | ArrayLike<number> }): HeadAttribution;
  /** log p(ids[p + 1]) with each head ablated alone: shape [modes, layers, heads, n - 1]; clean: none ablated */
  ablationGrid(ids: ArrayLike<number>, opts?: { modes?: ('zero' | 'mean')[] }): HookTensor & { modes: ('zero' | 'mean')[]; clean: Float32Array };
  /** activation patching over layers x positions: log p(targets[q]) for each (layer, patched position, q); shape [layers, n, n - 1] */
  patchingGrid(ids: ArrayLike<number>, opts: { from: HookCache; name?: 'hook_resid_pre' | 'hook_attn_out' | 'hook_resid_mid' | 'hook_mlp_out' | 'hook_resid_post'; targets?: ArrayLike<number> }): HookTensor & { clean: Float32Array };
  /** attribution patching (Nanda 2023; Syed, Rager and Conmy 2023): the metric's change when each
   *  activation of `clean` is patched with `corrupt`'s, estimated as (corrupt - clean) . d metric /
   *  d activation from one forward of each and one backward. metric: log p(target) at position
   *  (default the last; patchingGrid's number there) or, with versus, logit[target] - logit[versus].
   *  names (default attn.hook_z, hook_attn_out, hook_mlp_out, hook_resid_pre; each at every layer):
   *  grids of shape [layers, heads] (per-head names) or [layers], the point patched at every position;
   *  perPosition: [layers, heads, n] or [layers, n]. Float32 decoders, trainable or inference-only
   *  ({ training: false }, loadHuggingFace, loadLlama2c: the activations' gradients alone, for the
   *  call's length, freed after it); quantized models are an Error */
  attributionPatching(clean: ArrayLike<number>, corrupt: ArrayLike<number>, opts: {
    metric: { target: number; position?: number; versus?: number };
    names?: AttributionName[];
    perPosition?: boolean;
  }): { clean: number; corrupt: number; grids: { [name: string]: HookTensor } };
  /** ablationGrid's cost of each head estimated to first order (one clean forward, one backward per span:
   *  the sum over positions of (z_ablated - z) . d metric / d z), as attributionPatching estimates patching.
   *  spans: [from, to) ranges of positions p (0 <= from < to <= n - 1), each with the metric sum over p of
   *  log p(ids[p + 1] | ids[0..p]). data, shape [modes, spans, layers, heads]: the estimated change of each
   *  span's loss in bits per token, ablated minus clean (lab/circuits.js ablationGrid's deltas); clean: each
   *  span's loss in bits per token. Float32 decoders, trainable or inference-only; quantized models are an Error */
  ablationEstimate(ids: ArrayLike<number>, opts: { spans: [number, number][]; modes?: ('zero' | 'mean')[] }):
    HookTensor & { modes: ('zero' | 'mean')[]; spans: [number, number][]; clean: Float32Array };
  /** Elhage et al. 2021's Q-, K- and V-composition of every earlier head into every later head, from the weights
   *  (norm weights folded in, biases and positions left out; docs/interpretability.md): each shape
   *  [layers, heads, layers, heads], [l2, h2, l1, h1] the earlier head (l1, h1) into the later (l2, h2), 0 where
   *  l1 >= l2. Pre-norm decoders with softmax attention in every layer; other models are an Error naming why */
  compositionScores(): CompositionScores;
  /** finite-difference check of every gradient on a random batch (for tests); mutate scales one tensor's analytic gradient */
  gradientCheck(opts?: { batchSize?: number; length?: number; sourceLength?: number; seed?: number; mutate?: { tensor: string; factor: number } }): GradientCheckResult;
  /** frees the wasm memory; later calls throw */
  dispose(): void;
}

export interface ModelApi {
  /** opts.training (default true): false makes the parameters only (no gradients or AdamW state) */
  createModel(config?: ModelConfig, opts?: { training?: boolean }): Model;
  /** from save() or the native trainer's .safetensors file */
  /** training: false keeps the parameters only (no gradients or AdamW state: a quarter of the memory; trainStep is an Error) */
  loadModel(bytes: Uint8Array | ArrayBuffer, opts?: { training?: boolean }): Model;
  /** the built-in task names */
  readonly tasks: readonly string[];
  /** the chars task's tokenizer (lower-cases; unknown characters become 0) */
  readonly charsTokenizer: { readonly vocab: number; encode(text: string): Int32Array; decode(ids: ArrayLike<number>): string };
}
