import type { AttentionResult } from './softmax.js';

/** Sizes and inputs shared by the gated forms: self-attention over one sequence of n positions. */
export interface GatedShapeOptions {
  /** queries (n, d), keys (n, d), values (n, dv), row-major */
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  n: number;
  d: number;
  /** value width (default d) */
  dv?: number;
  /** heads; d % heads == 0 and dv % heads == 0 (default 1) */
  heads?: number;
  /** default 1 / sqrt(d / heads) */
  scale?: number;
  /** also return the (heads, n, n) matrix A with O = A V per head (signed: not probabilities) */
  returnWeights?: boolean;
}

export interface GatedLinearOptions extends GatedShapeOptions {
  /** each head's decay a_t in (0, 1] at each position: n * heads values, position-major (gates[t * heads + h]) */
  gates: ArrayLike<number>;
  /** 'chunked' (default), 'parallel' or 'recurrent': the same numbers */
  mode?: 'parallel' | 'recurrent' | 'chunked';
  /** the chunked form's chunk (default 64); mode 'chunked' only */
  chunk?: number;
}

export interface GlaOptions extends GatedShapeOptions {
  /** each key channel's decay alpha_t in (0, 1] at each position: n * d values, position-major (gates[t * d + c]) */
  gates: ArrayLike<number>;
  /** 'chunked' (default), 'parallel' or 'recurrent': the same numbers */
  mode?: 'parallel' | 'recurrent' | 'chunked';
  /** the chunked form's chunk (default 16); mode 'chunked' only */
  chunk?: number;
}

export interface DeltaRuleOptions extends GatedShapeOptions {
  /** write strengths beta_t in [0, 1]: n * heads values, position-major */
  beta: ArrayLike<number>;
  /** decays in (0, 1]: n * heads values (Gated DeltaNet, one per head) or n * d (Kimi Delta Attention, one per key channel), position-major; omit for DeltaNet */
  gates?: ArrayLike<number>;
  /** 'chunked' (default: the WY form, chunks of `chunk`, default 16) or 'recurrent': the same numbers */
  mode?: 'recurrent' | 'chunked';
  /** the chunked form's chunk (default 16); mode 'chunked' only */
  chunk?: number;
}

export interface GatedApi {
  /** Decay-gated linear attention (Mamba-2's SSD, simple GLA) with the gates given: S_t = a_t S_{t-1} + k_tᵀ v_t, causal. */
  gatedLinearAttention(options: GatedLinearOptions): AttentionResult;
  /** GLA with the gates given: a decay per key channel, S_t = diag(alpha_t) S_{t-1} + k_tᵀ v_t, causal. */
  gla(options: GlaOptions): AttentionResult;
  /** The delta rule (DeltaNet; Gated DeltaNet or KDA with gates) with beta given: S_t = (I - beta_t k_tᵀ k_t) diag(alpha_t) S_{t-1} + beta_t k_tᵀ v_t; causal. */
  deltaRule(options: DeltaRuleOptions): AttentionResult;
}
