// hf-tokenizer.d.ts: Hugging Face tokenizer.json files of the BPE families (wasm/hf-tokenizer.js, docs/tokenizers.md).

/** The family readHfTokenizer detected: GPT-2, Llama 3, Qwen 2/3, Llama 2 / TinyLlama, Gemma 3, or another BPE. */
export type HfTokenizerFamily = 'gpt2' | 'llama3' | 'qwen' | 'llama2' | 'gemma' | 'byte-level-bpe' | 'bpe';

/** A tokenizer read from a Hugging Face tokenizer.json (model type BPE), ids as @huggingface/tokenizers gives them. */
export interface HfTokenizer {
  /** the detected family */
  readonly family: HfTokenizerFamily;
  /** max id + 1 over the vocabulary and the added tokens */
  readonly vocabSize: number;
  /** id -> token as tokenizer.json spells it (byte-level: GPT-2's alphabet, "Ġ" a space; SentencePiece-style: "▁" a space); null where no token has that id */
  readonly pieces: readonly (string | null)[];
  /** ids of the special tokens: from tokenizer_config.json when given, else the post-processor's template, the model's unk and the usual names; null when absent */
  readonly specialTokens: { readonly bos: number | null; readonly eos: number | null; readonly pad: number | null; readonly unk: number | null };
  /**
   * text -> ids. Added tokens written in the text are matched first (also with addSpecialTokens
   * false, as Hugging Face does); addSpecialTokens (default true) adds what the post-processor's
   * template adds (Llama 2's and Gemma's <s>/<bos>).
   */
  encode(text: string, opts?: { addSpecialTokens?: boolean }): Int32Array;
  /** ids -> text through the file's decoder; skipSpecialTokens drops the special added tokens */
  decode(ids: ArrayLike<number>, opts?: { skipSpecialTokens?: boolean }): string;
  /** a token's id (vocabulary or added token), or null */
  tokenToId(token: string): number | null;
  /** an id's token, or null */
  idToToken(id: number): string | null;
  /** the tokenizer.json object that was read (JSON.stringify writes the same file) */
  toJSON(): object;
}

/**
 * Reads a Hugging Face tokenizer.json (object, text or UTF-8 bytes) of a BPE model: GPT-2, Llama 3,
 * Qwen (byte-level, with their Split patterns) and Llama 2, TinyLlama, Gemma 3 (SentencePiece-style,
 * byte fallback). config: tokenizer_config.json (object or text), optional, for specialTokens.
 * Another model type (WordPiece, Unigram) or a normalizer, pre-tokenizer, decoder or post-processor
 * this reader does not run is an Error naming the field and its value.
 */
export function readHfTokenizer(source: object | string | Uint8Array | ArrayBuffer, config?: object | string): HfTokenizer;

/** Oniguruma/Rust regex syntax (tokenizer.json's Split patterns) as the source of a JavaScript `u` regex. */
export function onigurumaToJs(pattern: string): string;

/** readHfTokenizer with `what` naming the caller in error messages. */
export function hfTokenizerFrom(what: string, source: object | string | Uint8Array | ArrayBuffer, config?: object | string): HfTokenizer;
