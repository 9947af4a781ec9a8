// llama2c.d.ts: llama2.c's model and tokenizer files (wasm/llama2c.js).
import type { Model } from './model.js';

/** llama2.c's tokenizer.bin, as run.c encodes and decodes with it. */
export interface Llama2cTokenizer {
  readonly vocab: number;
  readonly maxTokenLength: number;
  /** each piece as a string of one char per byte (llama2.c's bytes) */
  readonly pieces: readonly string[];
  readonly scores: Float32Array;
  /** run.c's BPE: BOS (1) first unless bos is false, the dummy prefix " ", characters or byte
   *  tokens, then the best-scoring merges; EOS (2) last when eos is true */
  encode(text: string, opts?: { bos?: boolean; eos?: boolean }): Int32Array;
  /** ids -> text: <0xXX> pieces are bytes, a piece after BOS loses its leading space, BOS/EOS print
   *  nothing; prev: the token before ids[0] (for that space rule) */
  decode(ids: ArrayLike<number>, prev?: number): string;
  /** one token as a label ('<s>' and '</s>' for BOS and EOS) */
  piece(id: number): string;
}

export interface Llama2cModel extends Model {
  /** the tokenizer given to loadLlama2c, or null */
  readonly tokenizer: Llama2cTokenizer | null;
}

export interface Llama2cApi {
  /**
   * A llama2.c model file (export.py's legacy format: the 7-integer header, a negative vocab_size
   * for an untied classifier, the rotary tables skipped) as a model with block 'llama' and the
   * file's sizes. It computes run.c's logits and generates with a KV cache of n_kv_heads heads.
   * training (default false): false keeps the parameters only; true also allocates gradients and
   * AdamW state (four times the memory) so it can be fine-tuned. A version 2 file (runq.c's int8,
   * magic "ak42") loads as a q8_0 model holding the file's integers (model.quantize); training must be false.
   * bytes and tokenizer may be Node Buffers (readFileSync's, or pooled ones at an offset); the
   * header's sizes are checked against the file's length before anything is built from them.
   */
  loadLlama2c(bytes: Uint8Array | ArrayBuffer, opts?: { tokenizer?: Uint8Array | ArrayBuffer; training?: boolean }): Llama2cModel;
  /** llama2.c's tokenizer.bin from pieces (UTF-8 strings) and their merge scores: one finite number
   *  per piece (a list of another length is an Error), or left out for all 0 */
  writeLlama2cTokenizer(pieces: string[], scores?: ArrayLike<number>): Uint8Array;
  /**
   * What a model file's bytes are, from their opening (the first 64 KiB are plenty; size: the whole
   * file's length when only its opening is given, an integer at least bytes' length): a format of MODEL_FILE_FORMATS and what it is,
   * or format null with what the bytes look like and every format tried.
   */
  sniffModelFile(bytes: Uint8Array | ArrayBuffer, size?: number): {
    format: 'llama2c-export' | 'safetensors' | 'hf-index' | 'hf-config' | 'hf-tokenizer' | 'llama2c' | 'llama2c-tokenizer' | null;
    label: string;
    tried?: string[];
  };
}
