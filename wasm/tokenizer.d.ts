export interface CharTokenizer {
  /** the number of distinct characters: a model for this text needs vocab >= this */
  readonly vocab: number;
  /** the vocabulary, id order (sorted code points when built from a text) */
  readonly chars: readonly string[];
  encode(text: string): Int32Array;
  decode(ids: ArrayLike<number>): string;
}

/** A character tokenizer built from a text ({ text }) or a given vocabulary ({ chars }). */
export function charTokenizer(options: { text: string; unknown?: string } | { chars: string | string[]; unknown?: string }): CharTokenizer;
