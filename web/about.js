// about.js: the page's plain words. For each attention form, what it does and when it wins, its
// cost and its paper, read from the library's registry (lib.forms: the words live with each form's
// C descriptor); the glossary of terms the page uses.

/**
 * The plain words of a form, from the library's registry (lib.forms, the C descriptors): { text (what
 * it does and when it wins), cost (its time, e.g. 'O(n² d)'), paper: { cite, url, year } }, or null
 * when the registry gives no summary. form: a form from forms.js's probeForms or a registry entry.
 */
export function aboutForm(form) {
  const entry = form?.entry ?? form;
  if (!entry?.summary) return null;
  return { text: entry.summary, cost: entry.cost || null, paper: entry.paper?.url ? entry.paper : null };
}

/** The glossary: [term, explanation], shown in the page's header. */
export const GLOSSARY = [
  ['φ (phi)', 'the feature map of linear attention: a function applied to every query and key so that '
    + 'φ(q)·φ(k) can stand in for the softmax of q·k (elu + 1, relu, ...).'],
  ['held-out', 'examples the model never trained on, drawn from a fixed seed; accuracy or loss on them says '
    + 'whether it learned the task rather than memorised its batches.'],
  ['streaming', 'computing the output without ever storing the n × n matrix A: softmax passes over the keys '
    + 'once keeping a running maximum and sum (online softmax); causal linear attention keeps a fixed-size '
    + 'running state, which also lets it generate one token at a time.'],
  ['SIMD', 'single instruction, multiple data: WebAssembly\'s 128-bit instructions work on 4 floats at once. The '
    + 'page runs the SIMD build when the browser supports it, and a plain scalar build otherwise.'],
  ['bits per character', 'the character model\'s held-out loss in bits: how many yes/no questions, on average, '
    + 'it would need to guess the next character. Uniform guessing over this alphabet is about 5.6; lower is better.'],
];
