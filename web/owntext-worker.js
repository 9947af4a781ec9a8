// owntext-worker.js: the "Train on your own text" model, trained in a Web Worker so that the page's
// main thread never waits on a training step (views/owntext.js is only the view). It loads the
// package itself, builds the character tokenizer and model from the posted text, and owns one run
// (and one model) at a time.
// Messages in:  { type: 'train', id, text, form, steps, tokenizer? }   a fresh model of `form` (an
//                 attention id) trained for `steps` steps on random windows of `text`; stops a run
//                 still going first. tokenizer: a tokenizer.json (the tokenizer panel's) whose ids the
//                 model reads instead of characters (its vocabulary: the tokenizer's size)
//               { type: 'stop' }   stops the run between two steps
// Messages out (each with the run's id, so the page can drop a stopped run's late messages):
//               { type: 'progress', id, step, steps, loss, tokensPerChar, sample? }   every 10 steps; loss in
//                 nats per token (a character, or a tokenizer's piece; the mean of the last step's batch);
//                 sample every 50 steps and at the end
//               { type: 'done', id, steps, ms, sample }   ms: training time, in the worker
//               { type: 'stopped', id, step } | { type: 'error', id, message }
import { charTokenizer } from '../wasm/index.js';
import { workerLib } from './worker-page.js';

const WINDOW = 32; // tokens (characters or pieces) per training row (the model's maxLen)
const BATCH = 16;
const SAMPLE = 48; // tokens (characters or pieces) generated per sample
const YIELD_EVERY = 10; // steps between progress messages; 'stop' gets in at each of them

// One thread: this small model (d = 64, 16 x 32 tokens a batch) gains little from a pool, and on a
// 2-core machine a pool would take the core the page (and the model panel's worker) needs.
const libPromise = workerLib(); // the page's compiled wasm (worker-page.js)
libPromise.catch(() => {}); // a failure is reported by the run that awaits it, as an 'error' message
let controller = null; // the run going on, if any
let queue = Promise.resolve(); // runs one after another: a new run starts when the stopped one has ended

// { vocab, encode, decode } of the text's characters or of a tokenizer.json's pieces
function tokenizerOf(lib, text, json) {
  if (!json) return charTokenizer({ text });
  const bpe = lib.loadTokenizer(json);
  return { vocab: bpe.vocabSize, encode: (s) => bpe.encode(s), decode: (ids) => bpe.decode(ids) };
}

async function train({ id, text, form, steps, tokenizer }, signal) {
  const lib = await libPromise;
  const tok = tokenizerOf(lib, text, tokenizer);
  const ids = tok.encode(text);
  if (ids.length < WINDOW + 2)
    throw new Error(`the text is ${ids.length} ${tokenizer ? "tokens with the tokenizer panel's tokenizer" : 'characters'}; paste at least ${WINDOW + 2} (the model reads windows of ${WINDOW})`);
  const tokensPerChar = ids.length / Array.from(text).length;
  const model = lib.createModel({ vocab: tok.vocab, dModel: 64, heads: 4, layers: 2, maxLen: WINDOW, attention: form, seed: 1 });
  try {
    // the same seeded window sampler as when this trained on the page, so runs give the same losses
    let seed = 7;
    const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 2 ** 32; };
    const batch = () => {
      const inputs = [], targets = [];
      for (let r = 0; r < BATCH; r++) {
        const at = Math.floor(rand() * (ids.length - WINDOW - 1));
        inputs.push(ids.subarray(at, at + WINDOW));
        targets.push(ids.subarray(at + 1, at + WINDOW + 1));
      }
      return { inputs, targets };
    };
    const prompt = ids.subarray(0, Math.min(8, ids.length));
    // the 8 likeliest characters, or every one of a text with fewer (topK past the vocabulary is an Error)
    const sample = () => tok.decode([...prompt, ...model.generate(prompt, { maxTokens: SAMPLE, temperature: 0.7, topK: Math.min(8, tok.vocab), seed: 3 })]);
    const t0 = performance.now();
    try {
      // train() hands the worker's thread back every YIELD_EVERY steps, which lets a 'stop' message
      // abort the signal; it then throws the AbortError at the next step
      const r = await model.train({
        steps, batch, signal, yieldEvery: YIELD_EVERY,
        lr: (s) => 3e-3 * Math.min(1, (s + 1) / 50), // warm-up over 50 steps
        onProgress: ({ step, loss }) => {
          const msg = { type: 'progress', id, step, steps, loss, tokensPerChar };
          if (step % 50 === 0 || step === steps) msg.sample = sample();
          postMessage(msg);
        },
      });
      postMessage({ type: 'done', id, steps: r.steps, ms: performance.now() - t0, sample: sample() });
    } catch (e) {
      if (e.name === 'AbortError') postMessage({ type: 'stopped', id, step: model.steps });
      else throw e;
    }
  } finally {
    model.dispose();
  }
}

onmessage = (e) => {
  const msg = e.data;
  if (msg?.type === 'stop') {
    controller?.abort();
    return;
  }
  if (msg?.type !== 'train') return;
  controller?.abort(); // a new run stops the one going on
  const own = new AbortController();
  controller = own;
  queue = queue.then(async () => {
    if (own.signal.aborted) {
      // stopped (or replaced) before it began: say so without building a model
      postMessage({ type: 'stopped', id: msg.id, step: 0 });
      return;
    }
    try {
      await train(msg, own.signal);
    } catch (err) {
      postMessage({ type: 'error', id: msg.id, message: err?.message ?? String(err) });
    } finally {
      if (controller === own) controller = null;
    }
  });
};
