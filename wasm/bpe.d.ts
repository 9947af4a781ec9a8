// bpe.d.ts: the byte-level BPE tokenizer (wasm/bpe.js, src/model/bpe.h, docs/tokenizers.md).
import type { HfTokenizer, HfTokenizerOptions } from './hf-tokenizer.js';

/** How lib.loadTokenizer reads a file: trustPatterns applies to a Hugging Face tokenizer.json. */
export type LoadTokenizerOptions = HfTokenizerOptions;

/** A byte-level BPE: <unk>, <s>, </s> at ids 0..2, the 256 bytes at 3..258, then one piece per merge. */
export interface BpeTokenizer {
  /** the number of pieces (a model reading these ids needs vocab >= this) */
  readonly vocabSize: number;
  /** each piece as tokenizer.json spells it: one character per byte in GPT-2's alphabet ("Ġ" is a space, "Ċ" a newline) */
  readonly pieces: readonly string[];
  /** the merges in rank order: [left id, right id, result id] */
  readonly merges: readonly (readonly [number, number, number])[];
  /**
   * text (a string, encoded as UTF-8, or a Uint8Array of any bytes) -> ids. `merges: k` applies
   * only the first k merges (ranks 0..k-1, k from 0 to merges.length): the encoding of the
   * tokenizer as it was after k merges of its training (0: one id per byte). Default: all.
   */
  encode(text: string | Uint8Array, opts?: { merges?: number }): Int32Array;
  /** ids -> text (the bytes as UTF-8) */
  decode(ids: ArrayLike<number>): string;
  /** ids -> their bytes joined: the exact inverse of encode on any bytes */
  decodeBytes(ids: ArrayLike<number>): Uint8Array;
  /** the bytes of one piece */
  pieceBytes(id: number): Uint8Array;
  /** Hugging Face's tokenizer.json as an object (JSON.stringify writes the file) */
  toJSON(): BpeTokenizerJSON;
  /** llama2.c's tokenizer.bin with the same ids; run.c encodes " " + text as encode(" " + text) */
  toLlama2c(): Uint8Array;
}

/** The parts of Hugging Face's tokenizer.json this library writes and reads. */
export interface BpeTokenizerJSON {
  version: string;
  added_tokens: unknown[];
  normalizer: null;
  pre_tokenizer: { type: 'ByteLevel'; add_prefix_space: boolean; trim_offsets: boolean; use_regex: boolean };
  decoder: { type: 'ByteLevel'; add_prefix_space: boolean; trim_offsets: boolean; use_regex: boolean } | null;
  model: { type: 'BPE'; vocab: Record<string, number>; merges: (string | [string, string])[]; [key: string]: unknown };
  [key: string]: unknown;
}

export interface BpeApi {
  /** trainTokenizer's vocabSize range and default, read from the C trainer ({ min: 259, max: 8192, default: 512 }). */
  readonly tokenizerVocabSize: { readonly min: number; readonly max: number; readonly default: number };
  /**
   * Trains a byte-level BPE on text: merges by pair count inside GPT-2's pre-tokens until
   * vocabSize pieces (259..8192, default 512), or fewer when the text runs out of pairs.
   */
  trainTokenizer(text: string | Uint8Array, opts?: { vocabSize?: number }): BpeTokenizer;
  /**
   * Reads llama2.c's tokenizer.bin (bytes) or this library's own tokenizer.json back (the C
   * byte-level BPE). The bytes of a Hugging Face tokenizer.json also go through here at run time
   * and give an HfTokenizer: pass its text or object to have that typed.
   */
  loadTokenizer(source: BpeTokenizerJSON | Uint8Array | ArrayBuffer, opts?: LoadTokenizerOptions): BpeTokenizer;
  /**
   * Reads any tokenizer.json (object, text or bytes): this library's own layout gives a
   * BpeTokenizer; a Hugging Face file with added tokens, a normalizer, a post-processor, a Split,
   * Sequence or Metaspace pre-tokenizer, byte fallback or ignore_merges (GPT-2, Llama 2/3, Qwen,
   * Gemma) gives an HfTokenizer (wasm/hf-tokenizer.js).
   */
  loadTokenizer(source: object | string | Uint8Array | ArrayBuffer, opts?: LoadTokenizerOptions): BpeTokenizer | HfTokenizer;
}
