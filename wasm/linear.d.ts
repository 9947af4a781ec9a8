import type { AttentionResult, AttentionShapeOptions } from './softmax.js';

/** 'elu+1': phi(x) = elu(x) + 1; 'relu': max(x, 0); 'efficient': softmax_2(Q) softmax_1(K)^T (no causal form);
 *  'taylor': sim(q, k) = 1 + cos(q, k) (a zero vector has cosine 0, so sim = 1). */
export type LinearFeature = 'elu+1' | 'relu' | 'efficient' | 'taylor';

export interface LinearAttentionOptions extends AttentionShapeOptions {
  /** feature map; default 'elu+1' */
  feature?: LinearFeature;
  /** query i uses keys j <= i only; default false. An Error with feature 'efficient'. */
  causal?: boolean;
  /** causal form: 'parallel' (chunked prefix sums, default) or 'recurrent' (the RNN form); same numbers */
  mode?: 'parallel' | 'recurrent';
  /** also return the implied attention matrix (heads, n, m), built only then; default false */
  returnWeights?: boolean;
  /** run the naive C reference (every sim(q_i, k_j) in double, normalised) instead (for tests) */
  reference?: boolean;
}

export interface LinearAttentionStateOptions {
  d: number;
  /** default d */
  dv?: number;
  /** default 1 */
  heads?: number;
  /** default 'elu+1'; 'efficient' is an Error (no causal form) */
  feature?: Exclude<LinearFeature, 'efficient'>;
}

/** Constant-size causal decoding state (S, z per head) in wasm memory. */
export interface LinearAttentionState {
  readonly d: number;
  readonly dv: number;
  readonly heads: number;
  readonly feature: LinearFeature;
  /** Adds k (d), v (dv) at the next position; returns that position's output row (dv) for q (d). */
  step(q: Float32Array, k: Float32Array, v: Float32Array): Float32Array;
  /** Positions stepped since creation or the last reset(). */
  readonly position: number;
  /** Back to an empty sequence. */
  reset(): void;
  /** Frees the wasm memory; later use throws. */
  dispose(): void;
}

export interface LinearApi {
  /** O_i = sum_j sim(q_i, k_j) v_j / sum_j sim(q_i, k_j), per head, in time linear in n. */
  linearAttention(options: LinearAttentionOptions): AttentionResult;
  /** A decoding state whose step() reproduces the causal linearAttention rows one at a time. */
  linearAttentionState(options: LinearAttentionStateOptions): LinearAttentionState;
}
