/** The shapes every attention call shares (checked by checkAttentionShapes in softmax.js). */
export interface AttentionShapeOptions {
  /** queries, (n, d) row-major */
  q: Float32Array;
  /** keys, (m, d) */
  k: Float32Array;
  /** values, (m, dv) */
  v: Float32Array;
  n: number;
  /** key/value positions; default n (self-attention) */
  m?: number;
  d: number;
  /** value width; default d */
  dv?: number;
  /** heads split the columns of q, k, v into equal blocks; default 1 */
  heads?: number;
}

export interface SoftmaxAttentionOptions extends AttentionShapeOptions {
  /** query i may attend only to keys j <= i; default false */
  causal?: boolean;
  /** length m, 1 = attend, 0 = never (key padding) */
  keyMask?: Uint8Array | ArrayLike<number | boolean>;
  /** logit scale; default 1 / sqrt(d / heads) */
  scale?: number;
  /** also return the attention matrix (heads, n, m); default false (streaming path, no n x m buffer) */
  returnWeights?: boolean;
  /** run the naive C reference instead of the fast path (for tests) */
  reference?: boolean;
}

export interface AttentionResult {
  /** (n, dv) */
  output: Float32Array;
  /** (heads, n, m), rows sum to 1 (or are all zero when nothing is allowed); only when returnWeights */
  weights?: Float32Array;
}

export interface SoftmaxApi {
  /** O = softmax(Q K^T * scale + M) V per head. */
  softmaxAttention(options: SoftmaxAttentionOptions): AttentionResult;
}
