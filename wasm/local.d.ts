import type { AttentionResult, AttentionShapeOptions } from './softmax.js';

export interface LocalAttentionOptions extends AttentionShapeOptions {
  /** the band's width w >= 1 */
  window: number;
  /** strided sparse attention: every stride-th key as well (|i - j| a multiple of it); default none */
  stride?: number;
  /** true (default): the last w positions (i - w < j <= i); false: w / 2 on each side */
  causal?: boolean;
  /** logit scale; default 1 / sqrt(d / heads) */
  scale?: number;
  /** also return the (heads, n, m) weights, zero outside the band */
  returnWeights?: boolean;
  /** run the naive C reference (every logit, the band as a mask, in double) */
  reference?: boolean;
}

export interface LocalApi {
  /** Softmax attention over a sliding window of keys, O(n w d). */
  localAttention(options: LocalAttentionOptions): AttentionResult;
}
