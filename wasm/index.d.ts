// Types for attention-wasm. Each family's API lives in its own .d.ts beside this one.
import type { SoftmaxApi } from './softmax.js';
import type { KernelsApi } from './kernels.js';
import type { LinearApi } from './linear.js';
import type { LocalApi } from './local.js';
import type { RetentionApi } from './retention.js';
import type { GatedApi } from './gated.js';
import type { SynthesizerApi } from './synthesizer.js';
import type { ModelApi } from './model.js';
import type { Llama2cApi } from './llama2c.js';
import type { HuggingFaceApi } from './huggingface.js';
import type { BpeApi } from './bpe.js';
import type { SAEApi } from './sae.js';
import type { AttentionName, CausalAttentionName, AttentionOptionsByForm, FormInfo } from './forms.js';

export interface LoadOptions {
  /** 'auto' (default): SIMD build when the engine validates SIMD128, else scalar. true demands SIMD; false forces scalar. */
  simd?: 'auto' | boolean;
  /**
   * 'auto' (default): the relaxed-SIMD build (fused multiply-add; attention-relaxed.wasm and
   * attention-threads-relaxed.wasm) where the engine validates relaxed SIMD (Chromium 114+, Firefox 145+,
   * Node 22+, Node 20 with --experimental-wasm-relaxed-simd), else SIMD128. true demands it; false keeps SIMD128.
   */
  relaxed?: 'auto' | boolean;
  /** Load these bytes or this URL instead of the bundled .wasm file. */
  wasm?: URL | string | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
  /**
   * 1 (default): the single-thread build. n > 1 or 'auto' (the machine's cores, at most 8): the threaded
   * build (attention-threads.wasm) with n threads where it can run (Node; a cross-origin-isolated page),
   * else one thread and lib.threadsReason says why. Results are bit-identical whatever the count.
   */
  threads?: 'auto' | number;
  /** the matmul kernel variant: 'auto' (default: a ~10 ms timed probe at the first load of each build in a process) or one by name; all give the same bits */
  kernel?: 'auto' | 'measured' | 'unpacked' | 'packed';
  /**
   * Modules compiled elsewhere, by URL (what compiledModules() returned in a page, posted to its Worker):
   * the build is chosen as without them, and a chosen build found here is neither fetched nor compiled again.
   */
  modules?: Record<string, WebAssembly.Module>;
}

// ---- any registry form by name (wasm/attention.js): lib.attention, lib.attentionLayer ------------

/** The sizes and options of lib.attention / lib.attentionLayer for form N. */
export interface FormAttentionOptions<N extends AttentionName = AttentionName> {
  /** query (and output) rows */
  n: number;
  /** key and value rows (default n); causal needs m = n */
  m?: number;
  /** width (all heads together) */
  d: number;
  /** heads; d % heads == 0 (default 1) */
  heads?: number;
  /** default false; only forms with a causal form (CausalAttentionName; lib.forms[i].causal) take true */
  causal?: N extends CausalAttentionName ? boolean : false;
  /** the length that sizes the parameters of fixed-length forms (default max(n, m)) */
  maxLen?: number;
  /** the seed of the form's initial parameters (default 1) */
  seed?: number;
  /** the form's own options (lib.forms[i].options), as createModel takes them */
  attentionOptions?: AttentionOptionsByForm[N];
}

/** The inputs of a form: q (n*d), k, v (m*d) and, for forms that read the input (usesX), x (n*d, default q). */
export interface FormAttentionInputs {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  x?: Float32Array;
}

export interface FormAttentionResult {
  /** (n, d) row-major */
  output: Float32Array;
  /** returnWeights: (heads, n, m), the matrix A with O = A V per head (signed forms: the signed scores) */
  weights?: Float32Array;
}

/** lib.attentionLayer: a layer of form N that keeps its parameters (free it with dispose()). */
export interface AttentionLayer<N extends AttentionName = AttentionName> {
  readonly name: N;
  readonly n: number;
  readonly m: number;
  readonly d: number;
  readonly heads: number;
  readonly causal: boolean;
  readonly maxLen: number;
  /** the layer's parameter tensors, in the order of params and dparams */
  readonly tensors: readonly { readonly name: string; readonly size: number; readonly trainable: boolean }[];
  /** the options as finished: defaults and derived values filled in */
  readonly options: Readonly<AttentionOptionsByForm[N]>;
  forward(data: FormAttentionInputs & { returnWeights?: boolean }): FormAttentionResult;
  /** the gradients of sum(dout * output); dparams: one Float32Array over every tensor, in tensors' order */
  backward(data: FormAttentionInputs & { dout: Float32Array }): {
    dq: Float32Array; dk: Float32Array; dv: Float32Array; dx: Float32Array; dparams: Float32Array;
  };
  /**
   * generation (causal layers of forms with a step): row pos's output (d) from its q, k, v, x rows
   * (d each). pos 0 starts a sequence; then 1, 2, ... in order (a step reads the state the earlier
   * ones left): any other pos is an Error naming the one expected.
   */
  step(pos: number, data: FormAttentionInputs): Float32Array;
  /**
   * sparse forms (NSA): which keys each query's fine-grained reading took, (heads, n, m) row-major,
   * 1 where head h's query t read key j through its selected blocks or its window, else 0; the same
   * inputs as forward. An Error for a form that reads every key its mask allows.
   */
  selection(data: FormAttentionInputs): Float32Array;
  /** a copy of the parameters (setParams writes them) */
  readonly params: Float32Array;
  setParams(values: Float32Array): void;
  /** frees the wasm memory; later calls throw (a second dispose does nothing) */
  dispose(): void;
}

/** One row of the positional encodings' table (lib.positionals). */
export interface PositionalInfo {
  /** what createModel's positional takes: 'sinusoidal' | 'learned' | 'rope' | 'alibi' | 'none' */
  readonly name: string;
  /** a short name for a list, e.g. 'rotary (RoPE)' */
  readonly label: string;
  /** what it does, in a sentence or two */
  readonly words: string;
  /** where it comes from */
  readonly paper: string;
}

export interface AttentionApi {
  /**
   * Runs the registry form `name` standalone, through the same C descriptor the model runs:
   * { output (n*d), weights? (heads*n*m) }. attentionOptions are the form's own
   * (AttentionOptionsByForm[name]); the per-family functions (softmaxAttention, ...) keep the
   * options only their family has (masks, modes, states).
   */
  attention<N extends AttentionName>(name: N, opts: FormAttentionOptions<N> & FormAttentionInputs & { returnWeights?: boolean }): FormAttentionResult;
  /** A layer of form `name` that keeps its parameters: forward, backward, step, params; sizes and options as lib.attention. */
  attentionLayer<N extends AttentionName>(name: N, opts: FormAttentionOptions<N>): AttentionLayer<N>;
}

export interface AttentionLib extends SoftmaxApi, LocalApi, RetentionApi, GatedApi, KernelsApi, LinearApi, SynthesizerApi, ModelApi, AttentionApi, Llama2cApi, BpeApi, HuggingFaceApi, SAEApi {
  /** true when the SIMD128 build runs, false for the scalar build. */
  readonly simd: boolean;
  /** true when the relaxed-SIMD build runs (fused multiply-add; the last bits differ from the SIMD128 build's) */
  readonly relaxed: boolean;
  /** The instance's wasm memory. */
  readonly memory: WebAssembly.Memory;
  /** memory.buffer.byteLength right now (the heap grows and never shrinks). */
  heapBytes(): number;
  /** bytes live objects hold right now (the allocator's count) */
  heapInUse(): number;
  /** the attention forms of the C registry, in order */
  readonly forms: readonly FormInfo[];
  /** the positional encodings of the C table (src/model/positional.h), in order: createModel's positional takes their names */
  readonly positionals: readonly PositionalInfo[];
  /** threads each call runs on (1: the single-thread build, or the threaded build set to 1) */
  readonly threads: number;
  /** why only one thread runs, in one line; null when threads run */
  readonly threadsReason: string | null;
  /** use n threads from now on (1 <= n <= the threads asked for at load; more is an Error saying how many); returns how many run (1 where the threaded build could not start: see threadsReason) */
  setThreads(n: number): number;
  /** items of work the worker threads have run so far (shows they take part) */
  threadWorkItems(): number;
  /** the matmul kernel variant in use and, after a probe, each variant's probe time (ms) */
  readonly kernel: { readonly variant: 'measured' | 'unpacked' | 'packed'; readonly probeMs: Readonly<Record<string, number>> | null };
}

/** Loads and instantiates the library (each call gives an independent instance; compiled modules are cached). */
export function loadAttention(options?: LoadOptions): Promise<AttentionLib>;
export { charTokenizer } from './tokenizer.js';

// Every public type, from the package's root: import type { Model, ModelConfig } from 'attention-wasm'
export type { MatmulOptions, KernelsApi } from './kernels.js';
export type { AttentionShapeOptions, SoftmaxAttentionOptions, AttentionResult, SoftmaxApi } from './softmax.js';
export type { LocalAttentionOptions, LocalApi } from './local.js';
export type { RetentionOptions, LinformerOptions, RetentionApi } from './retention.js';
export { retnetGammas } from './retention.js';
export type { LinearFeature, LinearAttentionOptions, LinearAttentionStateOptions, LinearAttentionState, LinearApi } from './linear.js';
export type {
  SynthesizerVariant, SynthesizerComponent, SynthesizerOptions, SynthesizerForwardOptions, SynthesizerResult,
  SynthesizerLayer, SynthesizerApi,
} from './synthesizer.js';
export type {
  ModelAttention, ModelLayerForm, ModelTask, ModelAttentionOptions, ModelConfig, TaskOptions, TrainStepOptions, OwnBatch,
  Hyperparameters, TrainOptions, EvaluateOptions, ForwardResult, GenerateOptions, Generation, TaskExample, GradientCheckResult,
  FormInfo, Model, ModelApi, HookName, HookTensor, HookCache, AttributionName, Ablation, Patch, HeadAttribution, CompositionScores,
  WeightFormat, WeightBytes,
} from './model.js';
export type {
  AttentionName, CausalAttentionName, NonCausalAttentionName, AttentionFamily, AttentionOptionsByForm,
  FormOption, FormIntOption, FormBoolOption, FormChoiceOption, FormListOption,
} from './forms.js';
export type { CharTokenizer } from './tokenizer.js';
/** The modules this loader compiled so far in this realm, by URL: post them to a Worker for loadAttention({ modules }). */
export function compiledModules(): Record<string, WebAssembly.Module>;
/** True when this engine validates WebAssembly SIMD128. */
export function simdSupported(): boolean;
/** True when this engine validates WebAssembly relaxed SIMD. */
export function relaxedSupported(): boolean;
export default loadAttention;
export type { Llama2cApi, Llama2cModel, Llama2cTokenizer } from './llama2c.js';
export type { HuggingFaceApi, HuggingFaceModel } from './huggingface.js';
export type { BpeApi, BpeTokenizer, BpeTokenizerJSON } from './bpe.js';
export type { SAEApi, SAE, SAEConfig, SAEStats, SAETensors, TrainSAEOptions } from './sae.js';
