// owntext.js: "Train on your own text". Paste any text; a small character model with the form
// chosen in Settings learns it in a Web Worker (../owntext-worker.js builds the tokenizer and the
// model, holds out the text's end and trains on random windows of the rest), so the page's thread
// never runs a training step. This view starts and stops the run and shows what comes back:
// progress, the loss curve (chart.js), the training and held-out figures with a warning when the
// model memorises, a sample from the text's opening, and, for a prompt, the trained model's
// continuation and its heatmaps (heatmap.js). "The model reads" picks its tokens: the text's
// characters, or the ids of the tokenizer panel's tokenizer (views/tokenizer.js).
import { charTokenizer } from '../../wasm/index.js';
import { onTokenizer } from './tokenizer.js';
import { startWorker } from '../worker-page.js';
import { drawChart, legendSwatch, seriesStyle } from './chart.js';
import { createHeatmapView } from './heatmap.js';

// Memorising: the text it trained on reads at least MEMO_GAP bits per token better than the held-out
// part, and at most MEMO_RATIO of it.
const MEMO_GAP = 0.5, MEMO_RATIO = 0.75;

// el: { form, text, steps, train, stop, progress, status, loss, sample, units, unitTok, unitNote }; the
// rest of the panel (figures, warning, curve, prompt, heatmaps) is found in el.form's section by id.
// lib is not needed here (the worker loads its own).
export function createOwnTextView(el, { formOf }) {
  const section = el.form.closest('section') ?? document;
  const q = (id) => section.querySelector(`#${id}`);
  Object.assign(el, {
    figures: q('ofigures'), warn: q('owarn'), curve: q('ocurve'), curveLegend: q('ocurve-legend'), promptForm: q('oprompt-form'),
    prompt: q('oprompt'), generate: q('ogenerate'), promptStatus: q('oprompt-status'), generated: q('ogenerated'),
    results: q('oresults'),
  });
  const heatmaps = createHeatmapView({ grid: q('oheatmaps'), legend: q('ohlegend'), readout: q('ohreadout'), name: 'own-text-attention' });
  let worker = null;
  let curve = { batch: [], train: [], held: [] }; // [step, bits per token] of the run shown
  let promptId = 0;
  let trainedForm = null; // the form of the model the worker keeps (for the legend), null: none yet
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
    el.generate.disabled = !trainedForm;
  }

  const unitName = () => (unit === 'tokens' ? 'token' : 'character');
  function drawCurve() {
    const names = [['batch', 'training batches'], ['train', 'training part'], ['held', 'held-out part']];
    drawChart(el.curve, {
      series: names.map(([k, label], i) => ({ label, ...seriesStyle(i), points: curve[k] })),
      xLabel: 'training step', yLabel: `loss (bits per ${unitName()})`, logX: false, logY: false, emptyText: 'press Train',
    });
    el.curveLegend.replaceChildren(...names.map(([, label], i) => {
      const li = document.createElement('li');
      li.append(legendSwatch(seriesStyle(i)), label);
      return li;
    }));
  }

  // The training and held-out figures, and a warning when the model memorises or the text repeats.
  function showFigures(msg) {
    const per = (b) => (unit === 'tokens' ? `${b.toFixed(2)} bits per token (${(b * msg.tokensPerChar).toFixed(2)} per character)`
      : `${b.toFixed(2)} bits per character`);
    const { split } = msg;
    el.figures.textContent = `On the text it trained on (the first ${split.trainTokens} ${unit}): ${per(msg.trainBits)}. `
      + `On the held-out part (the last ${split.heldTokens} ${unit}, never trained on): ${per(msg.heldBits)}.`;
    const warnings = [];
    if (split.heldInTrain) {
      warnings.push('Your text repeats itself: the held-out part also occurs in the part it trained on, so the held-out '
        + 'figure tests memory too, not reading new text. Paste text that does not repeat to see how well it generalises.');
    }
    if (msg.heldBits - msg.trainBits >= MEMO_GAP && msg.trainBits <= MEMO_RATIO * msg.heldBits) {
      warnings.push(`The model memorises: it reads the text it trained on at ${msg.trainBits.toFixed(2)} bits per ${unitName()}, `
        + `far below the ${msg.heldBits.toFixed(2)} of text it has not seen. More text, or fewer steps, would help it generalise.`);
    }
    el.warn.hidden = !warnings.length;
    el.warn.textContent = warnings.join(' ');
    section.dataset.memorises = String(warnings.length > 0);
  }

  function stop() {
    if (running) worker?.postMessage({ type: 'stop' });
  }

  function receive(msg) {
    if (msg.type === 'prompted' || msg.type === 'prompt-error') {
      receivePrompt(msg);
      return;
    }
    if (msg.id !== runId) return;
    if (msg.type === 'progress') {
      el.progress.value = msg.step / msg.steps;
      const bits = msg.bits;
      curve.batch.push([msg.step, bits]);
      if (msg.heldBits !== undefined) {
        curve.train.push([msg.step, msg.trainBits]);
        curve.held.push([msg.step, msg.heldBits]);
      }
      drawCurve();
      el.loss.textContent = unit === 'tokens'
        ? `step ${msg.step} of ${msg.steps}: training loss ${bits.toFixed(2)} bits per token (${(bits * msg.tokensPerChar).toFixed(2)} per character)`
        : `step ${msg.step} of ${msg.steps}: training loss ${bits.toFixed(2)} bits per character`;
      if (msg.sample !== undefined) el.sample.textContent = msg.sample;
    } else if (msg.type === 'done') {
      status(`Done: ${msg.steps} steps in ${(msg.ms / 1000).toFixed(1)} s. The sample below continues your text's opening; `
        + 'type a prompt further down to see it continue that, and its heads on it.');
      el.sample.textContent = msg.sample;
      showFigures(msg);
      trainedForm = formOf();
      section.dataset.trained = String(Number(section.dataset.trained ?? 0) + 1);
      finish();
      requestPrompt();
    } else if (msg.type === 'stopped') {
      status(`Stopped at step ${msg.step}. Train again to start over.`);
      if (msg.step > 0) trainedForm = formOf(); // the worker keeps a model that took steps
      finish();
    } else if (msg.type === 'error') {
      status(`Training failed: ${msg.message}`);
      finish();
    }
  }

  // The prompt, continued by the model just trained, and that model's heads on it.
  function requestPrompt() {
    if (!trainedForm || running) return;
    el.generate.disabled = true;
    el.promptStatus.textContent = 'Continuing the prompt…';
    ensureWorker().postMessage({ type: 'prompt', id: ++promptId, prompt: el.prompt.value });
  }
  function receivePrompt(msg) {
    if (msg.id !== promptId) return;
    el.generate.disabled = running || !trainedForm;
    if (msg.type === 'prompt-error') {
      el.promptStatus.textContent = `Could not continue the prompt: ${msg.message}`;
      section.dataset.prompt = 'error';
      return;
    }
    el.generated.textContent = msg.text;
    const cut = msg.used < msg.asked.length && unit === 'characters' ? ` (its last ${msg.used} characters: the model reads ${msg.used} at most)` : '';
    el.promptStatus.textContent = `The model just trained continues the prompt${cut}; below, every layer and head on the prompt's `
      + `${msg.labels.length} ${unit}.`;
    const maps = [];
    msg.attention.forEach((heads, l) => heads.forEach((weights, h) => maps.push({ title: `Layer ${l + 1}, head ${h + 1}`, weights })));
    const n = msg.labels.length, labels = msg.labels.map((c) => (c === ' ' ? '␣' : c === '\n' ? '↵' : c));
    heatmaps.render({ maps, n, m: n, rowLabels: labels, colLabels: labels, columns: msg.heads, form: trainedForm });
    section.dataset.prompt = 'ready';
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
    el.generate.disabled = true;
    trainedForm = null; // the worker drops its model when this run starts
    curve = { batch: [], train: [], held: [] };
    el.figures.textContent = '';
    el.warn.hidden = true;
    el.results.hidden = false; // the curve, the prompt and the heatmaps: shown from the first run on
    unit = tokens ? 'tokens' : 'characters';
    drawCurve();
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
  el.promptForm.addEventListener('submit', (event) => {
    event.preventDefault();
    requestPrompt();
  });
  drawCurve();
  return { stop };
}
