// tasks.js: the model panel's tasks and sizes, shared by the page and the training worker.
// The data generators themselves live in the C core (src/model/tasks.c); this only says how the
// playground sets them up. Token 0 is the separator (and a variable target's end marker).

export const TASKS = {
  copy: { label: 'copy', symbols: 10, maxLength: 16, typed: 'numbers', about: 'repeat the sequence' },
  reverse: { label: 'reverse', symbols: 10, maxLength: 16, typed: 'numbers', about: 'write the sequence backwards' },
  sort: { label: 'sort', symbols: 10, maxLength: 16, typed: 'numbers', about: 'write the sequence in ascending order' },
  recall: {
    label: 'recall', symbols: 20, maxLength: 10, typed: null,
    about: 'key-value pairs, then a key: answer its value (content-based lookup)',
  },
  translate: { label: 'translate', symbols: 0, maxLength: 6, typed: null, about: 'digits to number words' },
  chars: { label: 'chars', symbols: 0, maxLength: 32, typed: 'text', about: 'predict the next character of English text' },
};

/** Model sizes: a few tens of thousands of parameters at most, so training takes seconds. */
export const SIZES = {
  tiny: { dModel: 32, heads: 2, layers: 2, dFF: 64 },
  small: { dModel: 64, heads: 4, layers: 2, dFF: 128 },
};

export const MAX_LEN = 64; // positions; every task above fits (reverse 16: 33 positions)
export const BATCH = 16;

/** The task options of trainStep / evaluate / example. */
export function taskOptions({ task, mlen }) {
  const t = TASKS[task];
  const opts = { task, length: Math.min(mlen, t.maxLength) };
  if (t.symbols) opts.symbols = t.symbols;
  return opts;
}

export const MODEL_SEED = 1; // the initial weights: the same for every run, so results reproduce

/** The createModel config for a state; charsVocab is lib.charsTokenizer.vocab. */
export function modelConfig({ task, msize, form }, charsVocab) {
  const t = TASKS[task];
  return {
    vocab: t.symbols ? t.symbols + 1 : charsVocab, ...SIZES[msize], maxLen: MAX_LEN, attention: form, seed: MODEL_SEED,
  };
}
