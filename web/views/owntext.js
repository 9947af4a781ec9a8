// owntext.js: "Train on your own text". Paste any text; a small character model with the form
// chosen in Settings learns it in a Web Worker (../owntext-worker.js builds the tokenizer and the
// model and trains on random windows of the text), so the page's thread never runs a training
// step. This view checks the input, starts and stops the run, and shows what comes back: progress,
// the loss, and a fresh sample generated from the text's opening. "The model reads" picks its
// tokens: the text's characters, or the ids of the tokenizer panel's tokenizer (views/tokenizer.js).
import { charTokenizer } from '../../wasm/index.js';
import { onTokenizer } from './tokenizer.js';
import { startWorker } from '../worker-page.js';

const WINDOW = 32; // characters per training row (the worker's model maxLen)

// lib is not needed here any more (the worker loads its own); the parameter stays so main.js calls
// this as before.
export function createOwnTextView(el, { formOf }) {
  let worker = null;
  let runId = 0; // the run whose messages are shown; a stopped run's late messages carry an older id
  let running = false;
  let sharedTok = null; // the tokenizer panel's tokenizer: { json, vocabSize, label } or null
  let unit = 'characters'; // what the run going on reads: 'characters' or 'tokens'

  const readsTokens = () => Array.from(el.units ?? []).some((u) => u.checked && u.value === 'tokenizer');
  if (el.unitTok) {
    onTokenizer((t) => {
      sharedTok = t;
      el.unitTok.disabled = !t;
      if (!t && el.unitTok.checked) el.units[0].checked = true;
      el.unitNote.textContent = t ? `That tokenizer is ${t.label}; the model's vocabulary is then its ${t.vocabSize} pieces.`
        : 'That tokenizer has not loaded yet.';
    });
  }

  function status(text) {
    el.status.textContent = text;
  }

  function finish() {
    running = false;
    el.train.disabled = false;
    el.stop.disabled = true;
  }

  function stop() {
    if (running) worker?.postMessage({ type: 'stop' });
  }

  function receive(msg) {
    if (msg.id !== runId) return;
    if (msg.type === 'progress') {
      el.progress.value = msg.step / msg.steps;
      const bits = msg.loss / Math.LN2;
      el.loss.textContent = unit === 'tokens'
        ? `step ${msg.step} of ${msg.steps}: training loss ${bits.toFixed(2)} bits per token (${(bits * msg.tokensPerChar).toFixed(2)} per character)`
        : `step ${msg.step} of ${msg.steps}: training loss ${bits.toFixed(2)} bits per character`;
      if (msg.sample !== undefined) el.sample.textContent = msg.sample;
    } else if (msg.type === 'done') {
      status(`Done: ${msg.steps} steps in ${(msg.ms / 1000).toFixed(1)} s. The sample below continues your text's opening.`);
      el.sample.textContent = msg.sample;
      finish();
    } else if (msg.type === 'stopped') {
      status(`Stopped at step ${msg.step}. Train again to start over.`);
      finish();
    } else if (msg.type === 'error') {
      status(`Training failed: ${msg.message}`);
      finish();
    }
  }

  // One worker for the page's life: it keeps the loaded library between runs.
  function ensureWorker() {
    if (!worker) {
      worker = startWorker(new URL('../owntext-worker.js', import.meta.url));
      worker.onmessage = (e) => receive(e.data);
      // the worker could not load or threw outside a run: it is of no more use, so a later Train
      // starts a new one
      worker.onerror = (e) => {
        e.preventDefault?.();
        worker.terminate();
        worker = null;
        if (running) {
          status(`Training failed: ${e.message || 'the training worker could not load'}`);
          finish();
        }
      };
    }
    return worker;
  }

  function trainOnText() {
    const text = el.text.value;
    const tokens = readsTokens();
    if (tokens && !sharedTok) {
      status('The tokenizer panel\'s tokenizer has not loaded yet; read characters, or wait for it.');
      return;
    }
    if (!tokens && Array.from(text).length < WINDOW + 2) {
      status(`Paste at least ${WINDOW + 2} characters (the model reads windows of ${WINDOW}).`);
      return;
    }
    const form = formOf();
    if (!form.causal) {
      status(`"${form.label}" has no causal form, so it cannot drive a character model; pick another form in Settings.`);
      return;
    }
    const steps = Number(el.steps.value);
    runId++;
    running = true;
    el.train.disabled = true;
    el.stop.disabled = false;
    el.progress.value = 0;
    unit = tokens ? 'tokens' : 'characters';
    if (tokens) {
      status(`Training a ${form.label} model on the ids of the tokenizer panel's tokenizer (vocabulary of ${sharedTok.vocabSize} pieces)…`);
    } else {
      // the tokenizer is built here too, only for the vocabulary size the status line names (cheap)
      const vocab = charTokenizer({ text }).vocab;
      status(`Training a ${form.label} character model (vocabulary of ${vocab} characters from your text)…`);
    }
    // the worker stops a run still going before it starts this one
    ensureWorker().postMessage({ type: 'train', id: runId, text, form: form.id, steps, tokenizer: tokens ? sharedTok.json : undefined });
  }

  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    trainOnText();
  });
  el.stop.addEventListener('click', stop);
  return { stop };
}
