// owntext-worker.js: the "Train on your own text" model, trained in a Web Worker so that the page's
// main thread never waits on a training step (views/owntext.js is only the view). It loads the
// package itself, builds the tokenizer and model from the posted text, holds out the text's end to
// test the model on, and keeps the model it trained (one at a time) for prompts.
// Messages in:  { type: 'train', id, text, form, steps, tokenizer? }   a fresh model of `form` (an
//                 attention id) trained for `steps` steps on random windows of the text's first part;
//                 its last part (HELD_SHARE of it, at least WINDOW + 2 tokens) is held out. Stops a run
//                 still going first. tokenizer: a tokenizer.json (the tokenizer panel's) whose ids the
//                 model reads instead of characters (its vocabulary: the tokenizer's size)
//               { type: 'stop' }   stops the run between two steps
//               { type: 'prompt', id, prompt }   the model last trained continues prompt (a string),
//                 and its attention on the prompt's tokens (the last WINDOW of them)
// Messages out (each with the request's id, so the page can drop a stopped run's late messages):
//               { type: 'progress', id, step, steps, bits, tokensPerChar, heldBits?, trainBits?, sample? }
//                 every 10 steps; bits: the last step's batch loss in bits per token (a character or a
//                 tokenizer's piece); every 50 steps and at the end also heldBits and trainBits (the
//                 same measure, bitsOn() below, on the held-out part and on the training part) and a sample
//               { type: 'done', id, steps, ms, sample, trainBits, heldBits, split }   ms: training time,
//                 in the worker; split: { trainTokens, heldTokens, heldInTrain } (heldInTrain: the
//                 held-out part also occurs in the training part: the text repeats itself)
//               { type: 'stopped', id, step } | { type: 'error', id, message }
//               { type: 'prompted', id, text, labels, attention, layers, heads }   the continuation (prompt
//                 included) and attention[layer][head] (T*T) over the prompt's tokens, labels their text
//               { type: 'prompt-error', id, message }
import { charTokenizer } from '../wasm/index.js';
import { workerLib } from './worker-page.js';

const WINDOW = 32; // tokens (characters or pieces) per training row (the model's maxLen)
const BATCH = 16;
const SAMPLE = 48; // tokens (characters or pieces) generated per sample
const YIELD_EVERY = 10; // steps between progress messages; 'stop' gets in at each of them
const HELD_SHARE = 0.1; // the text's last tenth is held out (at least WINDOW + 2 tokens)
const EVAL_WINDOWS = 24; // windows each figure reads at most (evenly spread), so a check stays quick

// One thread: this small model (d = 64, 16 x 32 tokens a batch) gains little from a pool, and on a
// 2-core machine a pool would take the core the page (and the model panel's worker) needs.
const libPromise = workerLib(); // the page's compiled wasm (worker-page.js)
libPromise.catch(() => {}); // a failure is reported by the run that awaits it, as an 'error' message
let controller = null; // the run going on, if any
let queue = Promise.resolve(); // runs one after another: a new run starts when the stopped one has ended
let kept = null; // { model, tok }: the model last trained, for prompts

// { vocab, encode, decode, label } of the text's characters or of a tokenizer.json's pieces
function tokenizerOf(lib, text, json) {
  if (!json) {
    const chars = charTokenizer({ text });
    return { ...chars, encode: (s) => chars.encode(s), decode: (ids) => chars.decode(ids), label: (id) => chars.decode([id]) };
  }
  const bpe = lib.loadTokenizer(json);
  return { vocab: bpe.vocabSize, encode: (s) => bpe.encode(s), decode: (ids) => bpe.decode(ids), label: (id) => bpe.decode([id]) };
}

/** A plain-words refusal of a text the model cannot learn from, or null. */
function textProblem(text, ids, vocab, unit) {
  const least = 2 * (WINDOW + 2);
  if (unit === 'characters' && vocab < 2) {
    const only = Array.from(text)[0];
    return text.length ? `the text uses only one character (${JSON.stringify(only)}): a model needs at least two different `
      + 'characters to have anything to predict' : 'the text is empty: paste some text to train on';
  }
  if (ids.length < least)
    return `the text is ${ids.length} ${unit}; paste at least ${least}: the model reads windows of ${WINDOW}, and the `
      + `last ${WINDOW + 2} or more are held out to test it on`;
  return null;
}

// The mean loss in bits per token over windows of ids (at most EVAL_WINDOWS, evenly spread), every
// position scored: -log2 softmax(logits)[next token].
function bitsOn(model, ids) {
  const starts = [], last = ids.length - WINDOW - 1;
  const count = Math.min(EVAL_WINDOWS, Math.floor(last / WINDOW) + 1);
  for (let w = 0; w < count; w++) starts.push(count === 1 ? 0 : Math.round((w * last) / (count - 1)));
  let sum = 0, n = 0;
  const V = model.config.vocab;
  for (const at of starts) {
    const { logits } = model.forward(ids.subarray(at, at + WINDOW));
    for (let i = 0; i < WINDOW; i++) {
      const row = logits.subarray(i * V, (i + 1) * V);
      let max = -Infinity;
      for (const x of row) if (x > max) max = x;
      let z = 0;
      for (const x of row) z += Math.exp(x - max);
      sum += (Math.log(z) + max - row[ids[at + i + 1]]) / Math.LN2;
      n++;
    }
  }
  return sum / n;
}

// Does the held-out text occur in the training text (a text repeated, or pasted twice)? Any of its
// WINDOW-long stretches found there counts.
function heldInTrain(ids, cut) {
  const key = (a, b) => Array.prototype.join.call(ids.subarray(a, b), ',');
  const seen = new Set();
  for (let at = 0; at + WINDOW <= cut; at++) seen.add(key(at, at + WINDOW));
  for (let at = cut; at + WINDOW <= ids.length; at += WINDOW / 4) if (seen.has(key(at, at + WINDOW))) return true;
  return false;
}

async function train({ id, text, form, steps, tokenizer }, signal) {
  const lib = await libPromise;
  const unit = tokenizer ? 'tokens' : 'characters';
  const tok = tokenizerOf(lib, text, tokenizer);
  const ids = tok.encode(text);
  const problem = textProblem(text, ids, tok.vocab, tokenizer ? "tokens with the tokenizer panel's tokenizer" : unit);
  if (problem) throw new Error(problem);
  const tokensPerChar = ids.length / Array.from(text).length;
  const held = Math.max(WINDOW + 2, Math.round(HELD_SHARE * ids.length));
  const cut = ids.length - held;
  const trainIds = ids.subarray(0, cut), heldIds = ids.subarray(cut);
  const split = { trainTokens: cut, heldTokens: held, heldInTrain: heldInTrain(ids, cut) };
  kept?.model.dispose();
  kept = null;
  const model = lib.createModel({ vocab: tok.vocab, dModel: 64, heads: 4, layers: 2, maxLen: WINDOW, attention: form, seed: 1 });
  let ok = false;
  try {
    // a seeded window sampler over the training part, so runs give the same losses
    let seed = 7;
    const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 2 ** 32; };
    const batch = () => {
      const inputs = [], targets = [];
      for (let r = 0; r < BATCH; r++) {
        const at = Math.floor(rand() * (trainIds.length - WINDOW)); // the last window ends the part
        inputs.push(trainIds.subarray(at, at + WINDOW));
        targets.push(trainIds.subarray(at + 1, at + WINDOW + 1));
      }
      return { inputs, targets };
    };
    const prompt = ids.subarray(0, Math.min(8, ids.length));
    // the 8 likeliest characters, or every one of a text with fewer (topK past the vocabulary is an Error)
    const sample = () => tok.decode([...prompt, ...model.generate(prompt, { maxTokens: SAMPLE, temperature: 0.7, topK: Math.min(8, tok.vocab), seed: 3 })]);
    const figures = () => ({ trainBits: bitsOn(model, trainIds), heldBits: bitsOn(model, heldIds) });
    const t0 = performance.now();
    try {
      // train() hands the worker's thread back every YIELD_EVERY steps, which lets a 'stop' message
      // abort the signal; it then throws the AbortError at the next step
      const r = await model.train({
        steps, batch, signal, yieldEvery: YIELD_EVERY,
        lr: (s) => 3e-3 * Math.min(1, (s + 1) / 50), // warm-up over 50 steps
        onProgress: ({ step, loss }) => {
          const msg = { type: 'progress', id, step, steps, bits: loss / Math.LN2, tokensPerChar };
          if (step % 50 === 0 || step === steps) Object.assign(msg, figures(), { sample: sample() });
          postMessage(msg);
        },
      });
      const ms = performance.now() - t0;
      postMessage({ type: 'done', id, steps: r.steps, ms, sample: sample(), ...figures(), split, tokensPerChar });
      ok = true;
    } catch (e) {
      if (e.name === 'AbortError') {
        postMessage({ type: 'stopped', id, step: model.steps });
        ok = model.steps > 0;
      } else throw e;
    }
  } finally {
    if (ok) kept = { model, tok };
    else model.dispose();
  }
}

// The kept model continues the prompt; its attention on the prompt's last WINDOW tokens.
function prompted({ id, prompt }) {
  if (!kept) throw new Error('train a model first: there is no model to continue the prompt');
  const { model, tok } = kept;
  if (typeof prompt !== 'string' || !prompt.length) throw new Error('type a prompt for the model to continue');
  let ids;
  try {
    ids = tok.encode(prompt);
  } catch (e) {
    // a character the text never had: the model has no token for it
    const ch = /"(.+?)" at position/.exec(e.message)?.[1];
    throw ch ? new Error(`"${ch}" is not in the text it trained on, so the model has no token for it: use the text's characters`) : e;
  }
  if (!ids.length) throw new Error('the prompt has no token the model knows');
  ids = ids.subarray(Math.max(0, ids.length - WINDOW));
  const room = Math.max(1, WINDOW - ids.length);
  const more = model.generate(ids, { maxTokens: Math.min(SAMPLE, room), temperature: 0.7, topK: Math.min(8, tok.vocab), seed: 3 });
  const { attention } = model.forward(ids);
  postMessage({ type: 'prompted', id, text: tok.decode([...ids, ...more]), labels: Array.from(ids, tok.label), attention,
    layers: model.config.layers, heads: model.config.heads, asked: prompt, used: ids.length });
}

onmessage = (e) => {
  const msg = e.data;
  if (msg?.type === 'stop') {
    controller?.abort();
    return;
  }
  if (msg?.type === 'prompt') {
    // after any run queued before it, so it reads the model that run leaves
    queue = queue.then(async () => {
      try {
        prompted(msg);
      } catch (err) {
        postMessage({ type: 'prompt-error', id: msg.id, message: err?.message ?? String(err) });
      }
    });
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
