// Types for attention-wasm. Each family's API lives in its own .d.ts beside this one.
import type { SoftmaxApi } from './softmax.js';
import type { KernelsApi } from './kernels.js';
import type { LinearApi } from './linear.js';
import type { LocalApi } from './local.js';
import type { RetentionApi } from './retention.js';
import type { SynthesizerApi } from './synthesizer.js';
import type { FormInfo, ModelApi } from './model.js';

export interface LoadOptions {
  /** 'auto' (default): SIMD build when the engine validates SIMD128, else scalar. true demands SIMD; false forces scalar. */
  simd?: 'auto' | boolean;
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
}

export interface AttentionLib extends SoftmaxApi, LocalApi, RetentionApi, KernelsApi, LinearApi, SynthesizerApi, ModelApi {
  /** true when the SIMD128 build runs, false for the scalar build. */
  readonly simd: boolean;
  /** The instance's wasm memory. */
  readonly memory: WebAssembly.Memory;
  /** memory.buffer.byteLength right now (the heap grows and never shrinks). */
  heapBytes(): number;
  /** bytes live objects hold right now (the allocator's count) */
  heapInUse(): number;
  /** the attention forms of the C registry, in order */
  readonly forms: readonly FormInfo[];
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
  ModelAttention, ModelTask, ModelAttentionOptions, ModelConfig, TaskOptions, TrainStepOptions, OwnBatch,
  Hyperparameters, TrainOptions, EvaluateOptions, ForwardResult, GenerateOptions, TaskExample, GradientCheckResult,
  FormInfo, Model, ModelApi,
} from './model.js';
export type { CharTokenizer } from './tokenizer.js';
/** True when this engine validates WebAssembly SIMD128. */
export function simdSupported(): boolean;
export default loadAttention;
