// Types for lib.createSynthesizer (wasm/synthesizer.js). Full description: docs/synthesizer.md.

export type SynthesizerVariant = 'dense' | 'random' | 'factorized-dense' | 'factorized-random' | 'mixture';
/** A mixture component: any variant but 'mixture', or 'dot' (scaled Q K^T logits). */
export type SynthesizerComponent = 'dense' | 'random' | 'factorized-dense' | 'factorized-random' | 'dot';

export interface SynthesizerOptions {
  variant: SynthesizerVariant;
  /** width of x (n, d), which feeds the dense forms; every head reads the full row of x */
  d: number;
  /** L: the longest sequence the layer accepts; n < L uses the top-left n x n block of the logits */
  maxLen: number;
  /** each head has its own logits parameters and mixes its own column block of v; default 1 */
  heads?: number;
  /** initialisation seed, an integer in [0, 2^32 - 1]; the same seed gives the same numbers in every build; default 0 */
  seed?: number;
  /** random forms (and a mixture containing them): false keeps R (R1, R2) fixed in training; default true */
  trainable?: boolean;
  /** factorized-dense: a * b must equal maxLen; B[i, j] = Ba[i, floor(j / b)] * Bb[i, j mod b] */
  a?: number;
  b?: number;
  /** factorized-random: the rank of R1 R2^T (R1, R2: maxLen x k) */
  k?: number;
  /** mixture: distinct components, e.g. ['random', 'dot'] */
  components?: SynthesizerComponent[];
}

export interface SynthesizerForwardOptions {
  /** (n, d): required when a dense form is present; checked (and unused) otherwise */
  x?: Float32Array;
  /** (n, dv), dv = v.length / n must be divisible by heads; head h mixes column block h */
  v: Float32Array;
  /** positions, 1 <= n <= maxLen */
  n: number;
  /** (n, dqk), for a mixture with 'dot' (dqk % heads == 0, scale 1 / sqrt(dqk / heads)) */
  q?: Float32Array;
  k?: Float32Array;
  /** position i uses positions j <= i only; default false */
  causal?: boolean;
  /** also return A (heads, n, n); default false */
  returnWeights?: boolean;
  /** run the naive C reference (explicit logits, softmax and A V in double) instead of the fast path */
  reference?: boolean;
}

export interface SynthesizerResult {
  /** (n, dv) */
  output: Float32Array;
  /** (heads, n, n), rows sum to 1; only with returnWeights */
  weights?: Float32Array;
}

export interface SynthesizerLayer {
  readonly variant: SynthesizerVariant;
  readonly d: number;
  readonly maxLen: number;
  readonly heads: number;
  readonly seed: number;
  /** [variant] for a plain variant, the mixture's components otherwise */
  readonly components: readonly SynthesizerComponent[] | readonly SynthesizerVariant[];
  readonly a?: number;
  readonly b?: number;
  readonly k?: number;
  readonly trainable?: boolean;
  /** tensor names in parameter-block order: 'W1', 'b1', ... or, in a mixture, 'dense.W1', ..., 'alphaLogits' */
  readonly paramNames: readonly string[];
  /** name -> shape, heads first, e.g. W2: [heads, d, maxLen] */
  readonly paramShapes: Readonly<Record<string, readonly number[]>>;
  /**
   * name -> the layer's Float32Array of that tensor, in JS memory: read it, or write into it to
   * set parameters; every forward uses what it holds then. It never aliases wasm memory, so it
   * stays valid across calls, and one kept after dispose() cannot touch other objects.
   */
  readonly params: Readonly<Record<string, Float32Array>>;
  /** mixture only: (heads * C) softmax of alphaLogits per head (each head's C values sum to 1) */
  readonly alphas?: Float32Array;
  readonly disposed: boolean;
  forward(options: SynthesizerForwardOptions): SynthesizerResult;
  /** Frees the layer's wasm memory; calling it again does nothing, any other use throws. */
  dispose(): void;
}

export interface SynthesizerApi {
  /** Creates a Synthesizer attention layer whose parameters live in wasm memory. */
  createSynthesizer(options: SynthesizerOptions): SynthesizerLayer;
}
