import type { AttentionResult, AttentionShapeOptions } from './softmax.js';

export interface RetentionOptions extends AttentionShapeOptions {
  /** true (default): D_ij = gamma^(i-j) for j <= i; false: gamma^|i-j| over every key */
  causal?: boolean;
  /** one decay in (0, 1] for every head, or one per head; default RetNet's 1 - 2^(-5-h) */
  gamma?: number | number[] | Float32Array;
  /** 'parallel' (default), 'recurrent' (the RNN: S_i = gamma S_{i-1} + k_iᵀ v_i) or 'chunked'; causal only for the last two */
  mode?: 'parallel' | 'recurrent' | 'chunked';
  /** the chunked form's chunk (default 64); mode 'chunked' only (an Error with the other modes) */
  chunk?: number;
  /** default 1 / sqrt(d / heads) */
  scale?: number;
  /** also return the (heads, n, n) decayed scores scale q_i·k_j D_ij (not probabilities) */
  returnWeights?: boolean;
  /** run the naive C reference (every score from its definition, in double) */
  reference?: boolean;
}

export interface LinformerOptions extends AttentionShapeOptions {
  /** the projections (proj, maxLen), row-major; default: seeded random, as nn.Linear initialises them */
  E?: Float32Array;
  F?: Float32Array;
  /** projected rows k (default 8) */
  proj?: number;
  /** the projections' columns, the longest n they take (default n); n > maxLen is an Error */
  maxLen?: number;
  /** seed of the default E and F, an integer in [0, 2^32 - 1] (default 1); not with E and F */
  seed?: number;
  /** must be false: Linformer has no causal form (true is an Error that says why) */
  causal?: boolean;
  scale?: number;
  /** also return the implied (heads, n, n) matrix P F that multiplies V */
  returnWeights?: boolean;
  reference?: boolean;
}

export interface RetentionApi {
  /** Retention (RetNet): decayed linear attention, parallel, recurrent or chunked. */
  retention(options: RetentionOptions): AttentionResult;
  /** Linformer: softmax attention over keys and values projected to proj rows along the sequence. */
  linformer(options: LinformerOptions): AttentionResult;
}

/** RetNet's decays 1 - 2^(-5-h) for h = 0 .. heads - 1. */
export function retnetGammas(heads: number): Float32Array;
