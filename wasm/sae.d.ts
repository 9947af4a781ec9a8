// Types of wasm/sae.js: TopK sparse autoencoders (Gao et al. 2024; docs/interpretability.md).
import type { HookName, Model } from './model.js';

export interface SAEConfig {
  /** width of the activations (a row) */
  dIn: number;
  /** latents */
  dSae: number;
  /** latents kept per row, 1 <= k <= dSae */
  k: number;
  /** dead latents that reconstruct the residual in the AuxK loss (0 <= auxK <= dSae; default a power of two near dIn / 2) */
  auxK?: number;
  /** rows without firing after which a latent is dead (default 65536) */
  deadTokens?: number;
  /** the AuxK loss's coefficient (default 1/32, the paper's) */
  auxCoef?: number;
  /** the decoder's random initial directions (default 0) */
  seed?: number;
}

/** What one batch measured: loss = fvu + auxCoef * aux. */
export interface SAEStats {
  loss: number;
  /** the batch's normalised MSE: sum ||x^ - x||^2 / sum ||x - mean x||^2 */
  fvu: number;
  /** the AuxK loss (0 while no latent is dead) */
  aux: number;
  /** mean latents firing per row */
  l0: number;
  /** latents that have not fired for deadTokens rows */
  dead: number;
}

/** enc.w (dSae, dIn), enc.b (dSae), dec.w (dSae, dIn, unit rows), b_pre (dIn) */
export interface SAETensors {
  'enc.w': Float32Array;
  'enc.b': Float32Array;
  'dec.w': Float32Array;
  b_pre: Float32Array;
}

export interface SAE {
  readonly config: Readonly<Required<SAEConfig>>;
  /** the hook point it was trained on (trainSAE, or the checkpoint's), or null */
  hook: string | null;
  /** Adam steps since it was created or loaded */
  readonly steps: number;
  /** one Adam step on acts (rows x dIn, at least 2 rows that differ); lr default 1e-3 */
  trainStep(acts: Float32Array, opts?: { lr?: number }): SAEStats;
  /** the loss and its gradient (the decoder's projected), without a step */
  gradients(acts: Float32Array): SAEStats & { grads: SAETensors };
  /** the k largest latents of each row: indices and values, rows x k each, largest first */
  encode(acts: Float32Array): { indices: Int32Array; values: Float32Array; rows: number; k: number };
  /** z W_dec + b_pre for a dense z (rows x dSae): rows x dIn */
  decode(z: Float32Array): Float32Array;
  /** copies of the parameters */
  params(): SAETensors;
  /** rows since each latent last fired (dSae) */
  sinceFired(): Uint32Array;
  /** a safetensors file (lib.loadSAE reads it) */
  save(): Uint8Array;
  free(): void;
  dispose(): void;
}

export interface TrainSAEOptions extends Omit<SAEConfig, 'dIn'> {
  model: Model;
  /** a point with one row per position: blocks.{l}.hook_resid_post, hook_mlp_out, attn.hook_z, ... */
  hook: HookName;
  /** the text (with tokenizer), or its ids: integers in [0, model.config.vocab) */
  text?: string;
  tokenizer?: { encode(text: string): Int32Array | number[] };
  ids?: Int32Array | number[];
  /** Adam steps (default 300), each on batch rows (default 1024) */
  steps?: number;
  batch?: number;
  lr?: number;
  /** tokens per runWithCache window: an integer in [2, model.config.maxLen] (default maxLen) */
  window?: number;
  /** true: keep each window's rows after its first read, so later passes run the model no more
   *  (the same SAE; refused when ids x dIn x 4 bytes pass 512 MiB); default false */
  reuse?: boolean;
  /** after each window's first read (total: the windows); yields to the event loop there */
  onRead?: (p: { done: number; total: number }) => void;
  onProgress?: (p: SAEStats & { step: number; steps: number }) => void;
}

export interface SAEApi {
  /** trainSAE's option names, so a caller can tell what this library's trainSAE takes (frozen) */
  readonly trainSAEOptions: readonly (keyof TrainSAEOptions)[];
  /** a new TopK SAE */
  createSAE(config: SAEConfig): SAE;
  /** an SAE from save()'s bytes (a Node Buffer too); a missing tensor, or sizes its bytes do not hold, is an Error naming them */
  loadSAE(bytes: Uint8Array | ArrayBuffer): SAE;
  /** trains a new SAE on a model's activations at hook, streamed a window at a time through runWithCache
   *  (stopAfter: the blocks after the hook's are skipped);
   *  rejects (the SAE freed) when the model is disposed before it resolves, from onProgress say */
  trainSAE(opts: TrainSAEOptions): Promise<SAE>;
}
