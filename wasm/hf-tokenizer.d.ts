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
  /**
   * The steps encode has taken since the file was read: code points the split scanners examined,
   * the added-token matcher's and the merges' steps. It grows in proportion to the text (the tests
   * measure linear time with it, not with a clock).
   */
  workDone(): number;
}

/** How a tokenizer.json is read. */
export interface HfTokenizerOptions {
  /**
   * Run a Regex pattern (Split, or a normalizer's or decoder's Replace) that is not one of
   * KNOWN_PATTERNS instead of refusing the file. It runs in a backtracking matcher that counts its
   * steps: past 256 per character of a piece (plus 4096) encode throws an Error naming the pattern,
   * so a pattern that backtracks without bound stops instead of freezing the page. Default false:
   * such a file is an Error at load, naming the pattern and the ones that are known.
   */
  trustPatterns?: boolean;
}

/** A Regex pattern this reader runs by a linear-time scanner of its own, recognised by its exact text. */
export interface KnownPattern {
  /** whose pattern it is: 'GPT-2', 'Llama 3', 'Qwen 2/3', 'DeepSeek V3 numbers', 'DeepSeek V3 kana and CJK', 'DeepSeek V3 words' */
  readonly name: string;
  /** the Regex as tokenizer.json spells it (\r \n may also be literal characters, \uXXXX the character itself) */
  readonly pattern: string;
}

/** The Regex patterns that load without trustPatterns. */
export const KNOWN_PATTERNS: readonly KnownPattern[];

/**
 * The matches of a tokenizer.json pattern ({ String } or { Regex }) in text, as this reader runs
 * them: [start, end] UTF-16 offsets, left to right, as matchAll gives them for the pattern's `u`
 * regex. An unknown Regex is an Error unless options.trustPatterns.
 */
export function patternMatches(pattern: { String: string } | { Regex: string }, text: string, options?: HfTokenizerOptions): [number, number][];

/**
 * Reads a Hugging Face tokenizer.json (object, text or UTF-8 bytes) of a BPE model: GPT-2, Llama 3,
 * Qwen (byte-level, with their Split patterns) and Llama 2, TinyLlama, Gemma 3 (SentencePiece-style,
 * byte fallback). config: tokenizer_config.json (object or text), optional, for specialTokens.
 * Another model type (WordPiece, Unigram) or a normalizer, pre-tokenizer, decoder or post-processor
 * this reader does not run is an Error naming the field and its value; so is what Hugging Face's
 * own reader refuses (ids not dense, a merge of or into a piece not in the vocabulary, two pieces
 * or added tokens with one id, an unk_token not in the vocabulary, a decoder parameter out of
 * range), and a Regex not in KNOWN_PATTERNS unless options.trustPatterns.
 */
export function readHfTokenizer(source: object | string | Uint8Array | ArrayBuffer, config?: object | string | null, options?: HfTokenizerOptions): HfTokenizer;

/** Oniguruma/Rust regex syntax (tokenizer.json's Split patterns) as the source of a JavaScript `u` regex. */
export function onigurumaToJs(pattern: string): string;

/** readHfTokenizer with `what` naming the caller in error messages. */
export function hfTokenizerFrom(what: string, source: object | string | Uint8Array | ArrayBuffer, config?: object | string | null, options?: HfTokenizerOptions): HfTokenizer;
