// train-worker.js: the tiny Transformer of the model panel, living in a Web Worker so that training
// never freezes the page. It loads the package with the page's compiled wasm, gets checkpoints'
// bytes from the page (worker-page.js), and owns one model at a time.
// Messages in:  { type: 'setup', config, task: {task, length, symbols?}, start, input: { seed, text }, fresh? }
//                 (re)creates the model when config, task or start changed (or fresh), then shows the
//                 input; start 'pretrained' loads the matching checkpoint of web/models/ when there is one
//               { type: 'train', steps, lr, schedule }   train until `steps` more steps are done or 'stop';
//                 the rate of each step is panelLr(lr, model.steps, schedule), so a resumed run goes on
//                 along the schedule
//               { type: 'hyper', lr, schedule }   new peak rate / schedule, taking effect at the next step
//               { type: 'step', lr, schedule }   exactly one step (after a training run, which it stops)
//               { type: 'experiment', runs: [{ config, task }], steps, lr }   train a fresh model per run
//               { type: 'stop' }
//               { type: 'llama2c' }   the model as llama2.c's model.bin and a tokenizer.bin of its tokens
// Messages out: { type: 'created', parameterCount, config, pretrained: { file, steps, length } | null,
//                 generationBytes (model.generationBytes().total for a decoder, else null) }
//               { type: 'progress', step, goal, loss, accuracy, lr }   (means over the last ~50 ms of steps;
//                 lr: the rate of the last step)
//               { type: 'evaluated', step, loss, accuracy }        (held-out batches, fixed seed)
//               { type: 'snapshot', step, labels, maps: [[Float32Array T*T per head] per layer], T, view,
//                 cols?, noAttention? (GRU: the alignment's columns, or why there is none), encoder? (the maps
//                 are an encoder-decoder's encoder self-attention over the source, T = its length) }
//               { type: 'stopped', step, finished, lr, msPerStep?, single? }   (lr: the rate the next step
//                 would take; msPerStep: the mean time of this run's steps, in the worker; single: after 'step')
//               { type: 'cell', index, step, steps, accuracy?, loss?, ms?, done }   experiment progress / result
//               { type: 'experimentDone', finished }
//               { type: 'llama2c', bin, tokenizer } | { type: 'llama2cError', message }
//               { type: 'inputError', message } (a typed input that does not parse) | { type: 'error', message }
import { pageFetch, workerLib } from './worker-page.js';
import { BATCH, TASKS, panelLr, scheduledLr } from '../lab/tasks.js';
import { displayWeights } from '../lab/forms.js';

// every core where the page is cross-origin isolated (npm start's headers); the results are the same
// bits as one thread's (src/kernels/parallel.h), only sooner
const libPromise = workerLib({ threads: 'auto' }); // with the page's compiled wasm (worker-page.js)
let lib = null;
let model = null;
let key = ''; // JSON of the config, task and start the model was made from
let task = null; // { task, length, symbols? }
let input = null; // what the heatmaps show: { seq, labels, prompt, target, kind }
let running = false;
let hyper = { lr: 2e-3, schedule: 'decay' }; // the model panel's peak rate and schedule

const SNAPSHOT_MS = 400; // heatmaps and output during training, at most this often
const EVALS_PER_RUN = 20; // held-out metrics this many times per run of Train (and at its end)
const CHUNK_MS = 50; // train this long between progress messages (and 'stop' checks)

function tokenLabel(t) {
  if (t === 0) return '⟂';
  if (TASKS[task.task].symbols) return String(t);
  const ch = lib.charsTokenizer.decode([t]);
  return ch === ' ' ? '␣' : ch;
}

// Numbers for copy/reverse/sort: 1..symbols, separated by spaces or commas.
function parseNumbers(text, symbols, maxLength) {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) throw new Error('type some numbers, e.g. 3 1 4 1 5');
  if (parts.length > maxLength) throw new Error(`at most ${maxLength} numbers for this task, got ${parts.length}`);
  return parts.map((p) => {
    const x = Number(p);
    if (!Number.isInteger(x) || x < 1 || x > symbols) throw new Error(`"${p}" is not a whole number from 1 to ${symbols}`);
    return x;
  });
}

// The sequence the model reads for one example, laid out as in training (teacher forcing):
// decoder tasks read source, separator, target but its last token; chars reads the text.
function makeInput({ seed, text }) {
  const t = TASKS[task.task];
  if (text && t.typed === 'numbers') {
    const source = parseNumbers(text, t.symbols, t.maxLength);
    const target = task.task === 'copy' ? [...source] : task.task === 'reverse' ? [...source].reverse()
      : [...source].sort((a, b) => a - b);
    const prompt = model.config.arch === 'decoder' ? [...source, 0] : [0]; // an encoder reads the source
    return { kind: 'seq2seq', source, target, prompt, seq: [...prompt, ...target.slice(0, -1)], typed: true };
  }
  if (text && t.typed === 'text') {
    const seq = [...lib.charsTokenizer.encode(text.slice(0, model.config.maxLen))];
    if (seq.length === 0) throw new Error('type some text');
    return { kind: 'text', seq, prompt: seq, target: [] };
  }
  const ex = model.example({ ...task, seed });
  if (task.task === 'chars') {
    const all = [...ex.target];
    const half = Math.max(1, Math.floor(all.length / 2));
    return { kind: 'text', seq: all.slice(0, -1), prompt: all.slice(0, half), target: all.slice(half) };
  }
  const source = [...ex.source], target = [...ex.target];
  return { kind: 'seq2seq', source, target, prompt: [...ex.prompt], seq: [...ex.prompt, ...target.slice(0, -1)] };
}

function snapshot() {
  if (!input) return;
  const { seq, prompt, target, kind } = input;
  // a GRU encoder-decoder reads the source in its encoder; its map is the alignment (or none). An
  // encoder-decoder Transformer (a form with no causal form, e.g. Linformer, in its encoder): the maps
  // are the encoder's self-attention over the source, every layer and head.
  const arch = model.config.arch;
  const rnn = arch === 'gru' || arch === 'gru-attention';
  const encoder = arch === 'encoder-decoder';
  const src = rnn || encoder ? { source: Int32Array.from(input.source) } : {};
  const fwd = model.forward(Int32Array.from(seq), src);
  const attention = rnn ? (fwd.crossAttention ?? []) : encoder ? (fwd.encoderAttention ?? []) : fwd.attention;
  const room = model.config.maxLen - prompt.length + 1;
  const maxTokens = Math.max(0, Math.min(kind === 'text' && target.length === 0 ? 16 : target.length, room));
  const output = [...model.generate(Int32Array.from(prompt), { maxTokens, ...src })];
  // Numbers joined by spaces; text as text (real spaces; the heatmap labels show them as ␣).
  const words = (ids) => (TASKS[task.task].symbols ? ids.map(tokenLabel).join(' ')
    : ids.map((t) => (t === 0 ? '⟂' : lib.charsTokenizer.decode([t]))).join(''));
  const view = {
    kind, prompt: words(rnn || encoder ? input.source : prompt), target: words(target), output: words(output),
    correct: target.length > 0 && output.length === target.length && output.every((x, i) => x === target[i]),
    // a typed sequence: its length and the one the model trained on
    ...(input.typed ? { length: input.source.length, trained: task.length } : {}),
  };
  const sourceLabels = rnn || encoder ? input.source.map(tokenLabel) : null;
  postMessage({ type: 'snapshot', step: model.steps, labels: encoder ? sourceLabels : seq.map(tokenLabel),
    // layerForms (decoders): each layer's maps shown as its own form's
    maps: attention.map((heads, l) => heads.map((w) => displayWeights(model.config.layerForms?.[l]?.attention ?? model.config.attention ?? '', w, lib.forms))),
    T: encoder ? input.source.length : seq.length, view,
    ...(rnn ? { cols: sourceLabels, noAttention: fwd.noAttention } : {}), ...(encoder ? { encoder: true } : {}) });
}

function evaluate() {
  const r = model.evaluate({ ...task, batches: 4, batchSize: 32 });
  postMessage({ type: 'evaluated', step: model.steps, loss: r.loss, accuracy: r.accuracy });
}

const nextLr = () => panelLr(hyper.lr, model.steps, hyper.schedule);

async function train({ steps, lr, schedule }) {
  if (running) return;
  hyper = { lr, schedule };
  running = true;
  const goal = model.steps + steps;
  const evalEvery = Math.max(10, Math.round(steps / EVALS_PER_RUN));
  let nextEval = model.steps + evalEvery;
  let lastSnapshot = performance.now();
  const first = model.steps;
  let stepMs = 0; // time in trainStep only (not evaluations or snapshots)
  while (running && model.steps < goal) {
    const t0 = performance.now();
    let loss = 0, accuracy = 0, count = 0, used = 0;
    while (performance.now() - t0 < CHUNK_MS && model.steps < goal && model.steps < nextEval) {
      used = nextLr();
      const r = model.trainStep({ ...task, batchSize: BATCH, lr: used });
      loss += r.loss;
      accuracy += r.accuracy;
      count++;
    }
    stepMs += performance.now() - t0;
    postMessage({ type: 'progress', step: model.steps, goal, loss: loss / count, accuracy: accuracy / count, lr: used });
    if (model.steps >= nextEval && model.steps < goal) {
      evaluate();
      nextEval += evalEvery;
    }
    if (performance.now() - lastSnapshot > SNAPSHOT_MS) {
      snapshot();
      lastSnapshot = performance.now();
    }
    await new Promise((r) => setTimeout(r, 0)); // lets a 'stop' message in
  }
  const finished = model.steps >= goal;
  running = false;
  evaluate();
  snapshot();
  postMessage({ type: 'stopped', step: model.steps, finished, lr: nextLr(), msPerStep: stepMs / Math.max(1, model.steps - first) });
}

// One step, then the held-out metrics and the heatmaps, as at the end of a run.
function singleStep({ lr, schedule }) {
  hyper = { lr, schedule };
  const used = nextLr();
  const r = model.trainStep({ ...task, batchSize: BATCH, lr: used });
  postMessage({ type: 'progress', step: model.steps, goal: model.steps, loss: r.loss, accuracy: r.accuracy, lr: used });
  evaluate();
  snapshot();
  postMessage({ type: 'stopped', step: model.steps, finished: true, lr: nextLr(), single: true });
}

// The experiment: one fresh model per run, the same budget and schedule for each, then held-out
// accuracy on a fixed set of batches. A progress cell goes out after every chunk.
async function experiment({ runs, steps, lr }) {
  running = true;
  for (let index = 0; index < runs.length && running; index++) {
    const { config, task: spec } = runs[index];
    const m = lib.createModel(config);
    try {
      const t0 = performance.now();
      while (running && m.steps < steps) {
        const c0 = performance.now();
        while (performance.now() - c0 < CHUNK_MS && m.steps < steps) {
          m.trainStep({ ...spec, batchSize: BATCH, lr: scheduledLr(lr, m.steps, steps) });
        }
        postMessage({ type: 'cell', index, step: m.steps, steps, done: false });
        await new Promise((r) => setTimeout(r, 0)); // lets a 'stop' message in
      }
      if (m.steps >= steps) {
        const r = m.evaluate({ ...spec, batches: 8, batchSize: 64 });
        postMessage({ type: 'cell', index, step: m.steps, steps, done: true, loss: r.loss, accuracy: r.accuracy,
          ms: performance.now() - t0 });
      }
    } finally {
      m.dispose();
    }
  }
  const finished = running;
  running = false;
  postMessage({ type: 'experimentDone', finished });
}

// The pretrained checkpoints (web/models/index.json, written by scripts/pretrain.mjs):
// [{ file, task, attention, length, symbols, steps, config, accuracy, ... }]; none when it is missing.
let catalog = null;
function checkpoints() {
  catalog ??= pageFetch(new URL('./models/index.json', import.meta.url)) // the page's copy (worker-page.js)
    .then((bytes) => JSON.parse(new TextDecoder().decode(bytes)).models ?? [], () => []);
  return catalog;
}

const SHAPE_KEYS = ['vocab', 'dModel', 'heads', 'layers', 'dFF', 'maxLen', 'attention'];

// The checkpoint for this task and config, if one was trained: same task, attention and shape.
async function findCheckpoint(config, spec) {
  const list = await checkpoints();
  return list.find((e) => e.task === spec.task && e.config && (e.config.arch ?? 'decoder') === (config.arch ?? 'decoder')
    && SHAPE_KEYS.every((k) => e.config[k] === config[k]) && (e.symbols ?? 0) === (spec.symbols ?? 0)
    && (e.config.positional ?? 'sinusoidal') === (config.positional ?? 'sinusoidal') && !config.block);
}

// What the library's generation allocates for the model (a decoder's), or null where it cannot say.
function generationBytes() {
  try {
    return (model.config.arch ?? 'decoder') === 'decoder' ? model.generationBytes().total : null;
  } catch {
    return null; // a build of the library from before generationBytes
  }
}

async function setup(msg) {
  const newKey = JSON.stringify([msg.config, msg.task, msg.start]);
  if (newKey !== key || !model || msg.fresh) {
    running = false;
    model?.dispose();
    model = null;
    key = newKey;
    task = msg.task;
    const entry = msg.start === 'pretrained' ? await findCheckpoint(msg.config, msg.task) : undefined;
    let pretrained = null;
    if (entry) {
      const bytes = await pageFetch(new URL(`./models/${entry.file}`, import.meta.url)).catch((e) => {
        throw new Error(`could not fetch the checkpoint models/${entry.file}: ${e.message}`);
      });
      model = lib.loadModel(new Uint8Array(bytes));
      // The checkpoint was trained at its own task length: keep to it.
      task = { ...task, length: entry.length };
      pretrained = { file: entry.file, steps: model.steps, length: entry.length };
    } else {
      model = lib.createModel(msg.config);
    }
    postMessage({
      type: 'created', parameterCount: model.parameterCount, config: model.config, pretrained,
      // what this library's generation allocates (C's count), beside the design's count the page makes
      generationBytes: generationBytes(),
      available: msg.start === 'pretrained' && !entry ? 'none' : undefined,
    });
    evaluate();
  }
  // A typed input that does not parse leaves the model as it is and says what is wrong.
  try {
    input = makeInput(msg.input);
  } catch (e) {
    input = null;
    postMessage({ type: 'inputError', message: e.message });
    return;
  }
  snapshot();
}

// llama2.c's files: the model (model.saveLlama2c refuses what run.c cannot run) and a tokenizer
// whose pieces are the model's tokens (the characters, or the numbers as text; token 0 "<unk>").
function saveLlama2c() {
  try {
    if (!model) throw new Error('no model yet');
    const pieces = Array.from({ length: model.config.vocab }, (_, t) => {
      if (t === 0) return '<unk>';
      if (TASKS[task.task].symbols) return String(t);
      return t < lib.charsTokenizer.vocab ? lib.charsTokenizer.decode([t]) : `<unused${t}>`;
    });
    const bin = model.saveLlama2c(), tokenizer = lib.writeLlama2cTokenizer(pieces);
    postMessage({ type: 'llama2c', bin, tokenizer }, [bin.buffer, tokenizer.buffer]);
  } catch (e) {
    postMessage({ type: 'llama2cError', message: e.message });
  }
}

let queue = Promise.resolve();
onmessage = (e) => {
  const msg = e.data;
  if (msg?.type === 'stop') {
    running = false;
    return;
  }
  if (msg?.type === 'hyper') {
    hyper = { lr: msg.lr, schedule: msg.schedule };
    return;
  }
  // Messages run one after another (a setup waits for a training run to end: the page sends 'stop'
  // first); the training loop yields between chunks, so 'stop' gets through at once.
  const step = async () => {
    lib ??= await libPromise;
    if (msg.type === 'setup') await setup(msg);
    else if (msg.type === 'llama2c') saveLlama2c();
    else if (msg.type === 'experiment') await experiment(msg);
    else if (msg.type === 'train' || msg.type === 'step') {
      if (!model) throw new Error('no model yet');
      if (msg.type === 'train') await train(msg);
      else singleStep(msg);
    }
  };
  queue = queue.then(step).catch((err) => {
    running = false;
    postMessage({ type: 'error', message: err.message });
  });
};
