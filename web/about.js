// about.js: the page's plain words. For each attention form, what it does and when it wins, in two
// or three sentences, and its paper; the glossary of terms the page uses. The formulas themselves
// are in docs/attention-forms.md (and, as text, in forms.js).

const PAPERS = {
  vaswani: { cite: 'Vaswani et al. 2017, Attention Is All You Need', url: 'https://arxiv.org/abs/1706.03762' },
  katharopoulos: {
    cite: 'Katharopoulos et al. 2020, Transformers are RNNs', url: 'https://arxiv.org/abs/2006.16236',
  },
  shen: { cite: 'Shen et al. 2018, Efficient Attention', url: 'https://arxiv.org/abs/1812.01243' },
  tay: { cite: 'Tay et al. 2020, Synthesizer', url: 'https://arxiv.org/abs/2005.00743' },
  beltagy: { cite: 'Beltagy et al. 2020, Longformer', url: 'https://arxiv.org/abs/2004.05150' },
  sun: { cite: 'Sun et al. 2023, Retentive Network (RetNet)', url: 'https://arxiv.org/abs/2307.08621' },
  wang: { cite: 'Wang et al. 2020, Linformer', url: 'https://arxiv.org/abs/2006.04768' },
  child: { cite: 'Child et al. 2019, Generating Long Sequences with Sparse Transformers', url: 'https://arxiv.org/abs/1904.10509' },
};

const ABOUT = {
  softmax: ['vaswani', 'Every query is compared with every key by a dot product, and a softmax turns the scores of '
    + 'a row into weights that sum to 1: each position reads a weighted average of the values. It is the most '
    + 'expressive form here (it can look a token up by its content, sharply), and it costs time n² in the '
    + 'sequence length: the choice when n is a few thousand or less.'],
  local: ['beltagy', 'Softmax attention where each query sees only a band of nearby keys: the last w positions in '
    + 'a decoder, w / 2 on each side in an encoder. Time grows like n w instead of n², and much of what text needs '
    + 'is near; a key further away than the window is out of reach in one layer (stacked layers widen the view). '
    + 'Longformer and the Sparse Transformer combine such a band with a few global or strided positions.'],
  strided: ['child', 'The local band plus every s-th earlier key: one head looks near, and reaches far back in '
    + 'steps of s, so in two layers any position can reach any other. It is the Sparse Transformer\'s pattern for '
    + 'long sequences (images, music), where a full n² softmax is too costly and a band alone too short-sighted.'],
  'linear:elu+1': ['katharopoulos', 'Replaces the softmax of q·k by φ(q)·φ(k) with φ(x) = elu(x) + 1, so the sum '
    + 'over keys can be done once, before any query looks: time grows like n, and a causal model runs as an RNN '
    + 'with a fixed-size state. It wins for long sequences and streaming generation; its weights are flatter '
    + 'than softmax\'s, so exact lookups are harder.'],
  'linear:relu': ['katharopoulos', 'Linear attention with φ(x) = relu(x): the same linear time and constant-size '
    + 'state as elu + 1, with a feature map that is exactly zero for negative inputs, so some pairs get no '
    + 'weight at all. Cheap and simple; it can leave a row with nothing to attend to.'],
  'linear:efficient': ['shen', 'Normalises queries over their features and keys over the positions, then computes '
    + 'K ᵀ V first: linear time with no approximation of a kernel. It suits vision and encoders, where every '
    + 'position sees every other; it has no causal form, so it cannot drive a left-to-right language model.'],
  'linear:taylor': ['katharopoulos', 'Approximates exp(q·k) by its first-order Taylor term 1 + q̂·k̂ on unit '
    + 'vectors, which stays positive, so linear attention applies (the kernel view of Katharopoulos et al.). '
    + 'Linear in n like the other linear forms; its weights vary little across keys.'],
  retention: ['sun', 'Causal linear attention with a decay: the running state is multiplied by γ before each new '
    + 'key-value pair is added, so old tokens fade, and each head fades at its own rate (RetNet\'s 1 − 2^(−5−h)). '
    + 'There is no softmax. The same numbers come out of a parallel form (for training), a recurrent form (an RNN '
    + 'with a d × d state, for generation) and a chunked mix of both: the RNN story of attention, told forward.'],
  linformer: ['wang', 'Projects the n keys and values along the sequence to k rows with learned matrices E and F, '
    + 'then runs softmax attention over those k rows: time grows like n k. It fixes a longest length L when '
    + 'created, and because every projected row mixes all positions, later ones included, it has no causal form: '
    + 'it serves encoders (in the library, an encoder-decoder\'s encoder; this page\'s models are decoders, so its '
    + 'model panels cannot train it).'],
  'synth:dense': ['tay', 'No query-key comparison at all: each token\'s own vector goes through a small MLP '
    + 'that writes its whole row of attention logits. It can learn position patterns that depend on the token; '
    + 'the paper finds it competitive with softmax on several tasks, though it cannot compare two tokens.'],
  'synth:random': ['tay', 'A learned (or fixed) table of logits, one per pair of positions, shared by every '
    + 'input: attention by position alone. It is the fastest form here and enough for tasks like reverse, but '
    + 'it cannot find a token by its content (see the experiment below).'],
  'synth:factorized-dense': ['tay', 'The dense Synthesizer with its row of L logits built from two shorter heads '
    + '(a · b = L) multiplied together: fewer parameters for long maximum lengths, with the same limits as the '
    + 'dense form.'],
  'synth:factorized-random': ['tay', 'The random table written as a product R₁ R₂ᵀ of two thin matrices: a '
    + 'low-rank position pattern with far fewer parameters than a full L × L table.'],
  'synth:mixture': ['tay', 'Adds weighted logits of several forms, here the random table and the dot product '
    + 'Q Kᵀ, with weights α it learns: position patterns plus content lookup. In the README\'s experiment this '
    + 'restores recall to 100%.'],
};

/** { text, paper: { cite, url } } for a form id, or null for one this page has no words for. */
export function aboutForm(id) {
  const a = ABOUT[id];
  return a ? { text: a[1], paper: PAPERS[a[0]] } : null;
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
