// model.js: the model panel. A tiny Transformer (lib.createModel) with the chosen attention form
// learns a task in a worker (../train-worker.js); this view sends it the settings, starts and stops
// training, and draws what comes back: loss and accuracy curves, the model's output on one
// example, and the attention of every layer and head.
import { LIMITS } from '../state.js';
import { MAX_LEN, SCHEDULES, SIZES, TASKS, WARMUP_STEPS, modelConfig, panelLr, taskOptions } from '../tasks.js';
import { drawChart, seriesStyle } from './chart.js';
import { createHeatmapView } from './heatmap.js';

const fmtLr = (x) => x.toExponential(1).replace('e-', 'e−');

function fillSelect(select, values, label = String) {
  select.replaceChildren(...values.map((v) => new Option(label(v), String(v))));
}

/**
 * el: { panel, form, task, mlen, mlenNote, msize, mstart, msteps, mlr, msched, mseed, mtext, mtextLabel, about,
 *   train, stop, step, reset, progress, status, output, loss, acc, curvesLegend, grid, legend, readout, exports }.
 * The panel gets data-state ('busy' while a setup is on its way, 'ready' when its snapshot is shown,
 * 'error', 'unsupported' for a form the decoder cannot use), data-training, data-step, data-snapshots,
 * data-correct, data-eval-loss, data-eval-accuracy, data-lr (the rate of the last step) and
 * data-run-max-loss (the largest progress loss of the current run).
 */
export function createModelView(el, { onChange, charsVocab }) {
  fillSelect(el.task, LIMITS.tasks, (t) => TASKS[t].label);
  fillSelect(el.msize, LIMITS.modelSizes, (s) => {
    const z = SIZES[s];
    return `${s} (d = ${z.dModel}, ${z.heads} heads, ${z.layers} layers)`;
  });
  fillSelect(el.msteps, LIMITS.trainSteps);
  fillSelect(el.mlr, LIMITS.lrs, fmtLr);
  fillSelect(el.msched, LIMITS.schedules, (k) => SCHEDULES[k]);
  const heatmaps = createHeatmapView({
    grid: el.grid, legend: el.legend, readout: el.readout, exports: el.exports, name: 'model-attention',
  });

  const intValue = (input, lo, hi) => {
    const x = Number(input.value);
    const ok = input.value !== '' && Number.isInteger(x) && x >= lo && x <= hi;
    input.setAttribute('aria-invalid', String(!ok));
    return ok ? x : undefined;
  };
  el.task.addEventListener('change', () => onChange({ task: el.task.value, mtext: '' }));
  el.msize.addEventListener('change', () => onChange({ msize: el.msize.value }));
  el.march.addEventListener('change', () => onChange({ march: el.march.value }));
  el.mstart.addEventListener('change', () => onChange({ mstart: el.mstart.value }));
  el.msteps.addEventListener('change', () => onChange({ msteps: Number(el.msteps.value) }));
  // Live: the worker takes a new rate or schedule at its next step, mid-run.
  const sendHyper = () => worker?.postMessage({ type: 'hyper', lr: state.mlr, schedule: state.msched });
  el.mlr.addEventListener('change', () => {
    onChange({ mlr: Number(el.mlr.value) });
    sendHyper();
  });
  el.msched.addEventListener('change', () => {
    onChange({ msched: el.msched.value });
    sendHyper();
  });
  el.mlen.addEventListener('input', () => {
    const v = intValue(el.mlen, 1, TASKS[state.task].maxLength);
    if (v !== undefined) onChange({ mlen: v });
  });
  el.mseed.addEventListener('input', () => {
    const v = intValue(el.mseed, LIMITS.seed.min, LIMITS.seed.max);
    if (v !== undefined) onChange({ mseed: v, mtext: '' });
  });
  el.mtext.addEventListener('input', () => onChange({ mtext: el.mtext.value }));

  let state = null;
  let form = null;
  let worker = null;
  let lastSetup = ''; // the last setup message sent
  let lastModel = ''; // its config and task part
  let training = false;
  let hasModel = false; // the worker holds a model Train can go on with
  let unsupported = false; // the chosen form cannot run in this (causal) decoder
  let runMaxLoss = 0;
  let curves = { loss: [], acc: [], evalLoss: [], evalAcc: [] };
  let scheduled = false;
  requestAnimationFrame(drawCurves);
  el.curvesLegend.replaceChildren(...[['training batches (mean over ~50 ms of steps)', seriesStyle(0)],
    ['held-out batches (fixed seed)', seriesStyle(1)]].map(([text, style]) => {
    const li = document.createElement('li');
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.borderColor = style.color;
    li.append(sw, text);
    return li;
  }));

  function resetCurves() {
    curves = { loss: [], acc: [], evalLoss: [], evalAcc: [] };
    drawCurves();
  }

  function drawCurves() {
    scheduled = false;
    const [train, held] = [seriesStyle(0), seriesStyle(1)];
    drawChart(el.loss, {
      series: [{ label: 'training batches', points: curves.loss, ...train },
        { label: 'held-out', points: curves.evalLoss, ...held }],
      xLabel: 'step', yLabel: 'loss', logX: false, emptyText: 'press Train',
    });
    drawChart(el.acc, {
      series: [{ label: 'training batches', points: curves.acc, ...train },
        { label: 'held-out', points: curves.evalAcc, ...held }],
      xLabel: 'step', yLabel: 'accuracy', logX: false, logY: false, yRange: [0, 1], emptyText: 'press Train',
    });
  }

  // Curves redraw at most once per frame, however fast progress messages arrive.
  function scheduleCurves() {
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(drawCurves);
    }
  }

  function setTraining(on) {
    training = on;
    el.train.disabled = on || !hasModel;
    el.step.disabled = !hasModel;
    el.stop.disabled = !on;
    el.reset.disabled = unsupported;
    el.panel.dataset.training = on ? '1' : '0';
  }

  // No model to show: empty curves, heatmaps and output, and Train off until one is made.
  function clearModel() {
    hasModel = false;
    setTraining(false);
    resetCurves();
    el.progress.value = 0;
    heatmaps.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
    el.readout.textContent = '';
    el.output.textContent = '';
  }

  // What the schedule does next, in words (status line).
  const lrText = (lr) => `learning rate ${fmtLr(lr)}`
    + (state.msched === 'constant' ? ' (constant)' : ` (peak ${fmtLr(state.mlr)}, warm-up ${WARMUP_STEPS} steps, then decay)`);

  // A typed input of another length than the model learned: say so beside its answer.
  function lengthWarning(v) {
    if (v.length === undefined || v.length === v.trained) return '';
    return `\nnote:   this model learned inputs of length ${v.trained}; yours has ${v.length}, which it has never seen, `
      + 'so expect mistakes. To learn another length, choose Start from: fresh seeded weights, set Length and Train.';
  }

  function status(text) {
    el.status.textContent = text;
  }

  function receive(msg) {
    if (msg.type === 'created') {
      resetCurves();
      el.progress.value = 0;
      const c = msg.config;
      const p = msg.pretrained;
      const shape = `${msg.parameterCount.toLocaleString('en')} parameters (vocab ${c.vocab}, d = ${c.dModel}, `
        + `${c.heads} heads, ${c.layers} layers, attention ${c.attention})`;
      status(p ? `Pretrained model loaded from models/${p.file}: ${shape}, trained ${p.steps} steps at length ${p.length}. `
        + 'Train to go on.'
        : `New model: ${shape}.${state.mstart === 'pretrained' ? ' (No pretrained checkpoint for this task, form and size.)' : ''} `
        + 'Press Train.');
      hasModel = true;
      setTraining(false);
      el.mlen.disabled = Boolean(p);
      el.mlenNote.hidden = !p;
      el.mlenNote.textContent = p ? `Length ${p.length} is fixed by the checkpoint (it learned that length only). `
        + 'For another length, choose Start from: fresh seeded weights.' : '';
      el.panel.dataset.pretrained = p ? p.file : '';
      el.panel.dataset.step = String(p ? p.steps : 0);
      el.panel.dataset.lr = String(panelLr(state.mlr, p ? p.steps : 0, state.msched));
      // The URL says the length the model really has.
      if (p && taskOptions(state).length !== p.length) onChange({ mlen: p.length });
    } else if (msg.type === 'progress') {
      curves.loss.push([msg.step, msg.loss]);
      curves.acc.push([msg.step, msg.accuracy]);
      el.progress.max = msg.goal;
      el.progress.value = msg.step;
      el.panel.dataset.step = String(msg.step);
      el.panel.dataset.lr = String(msg.lr);
      runMaxLoss = Math.max(runMaxLoss, msg.loss);
      el.panel.dataset.runMaxLoss = String(runMaxLoss);
      status(`Training: step ${msg.step} of ${msg.goal}, loss ${msg.loss.toPrecision(3)}, accuracy ${(100 * msg.accuracy).toFixed(1)}%, `
        + `learning rate ${fmtLr(msg.lr)}`);
      scheduleCurves();
    } else if (msg.type === 'evaluated') {
      curves.evalLoss.push([msg.step, msg.loss]);
      curves.evalAcc.push([msg.step, msg.accuracy]);
      el.panel.dataset.evalLoss = String(msg.loss);
      el.panel.dataset.evalAccuracy = String(msg.accuracy);
      scheduleCurves();
    } else if (msg.type === 'snapshot') {
      const maps = [];
      msg.maps.forEach((heads, l) => heads.forEach((weights, h) => {
        maps.push({ title: msg.cols ? 'Additive attention: decoder step i reads encoder state j' : `Layer ${l + 1}, head ${h + 1}`, weights });
      }));
      // a GRU with additive attention: its alignment (target x source); a GRU with one context vector: none
      heatmaps.render({ maps, n: msg.T, m: msg.cols ? msg.cols.length : msg.T, rowLabels: msg.labels,
        colLabels: msg.cols ?? msg.labels, scale: state.scale });
      if (msg.noAttention) { // said where the heatmaps would be
        const note = document.createElement('p');
        note.className = 'note';
        note.textContent = `No heatmap: ${msg.noAttention}.`;
        el.grid.append(note);
      }
      const v = msg.view;
      el.output.textContent = v.kind === 'seq2seq'
        ? `input:  ${v.prompt}\ntarget: ${v.target}\nmodel:  ${v.output}   ${v.correct ? '✓ correct' : '✗ not yet'}   (step ${msg.step})`
        : `text:   ${v.prompt}\nmodel:  ${v.prompt}[${v.output}]${v.target ? `\nreal:   ${v.prompt}[${v.target}]` : ''}   (step ${msg.step})`;
      el.output.textContent += lengthWarning(v);
      el.panel.dataset.correct = v.correct ? '1' : '0';
      el.panel.dataset.state = 'ready';
      el.panel.dataset.snapshots = String(Number(el.panel.dataset.snapshots ?? 0) + 1);
    } else if (msg.type === 'stopped') {
      setTraining(false);
      const last = curves.evalAcc[curves.evalAcc.length - 1];
      el.panel.dataset.lr = String(msg.lr);
      status(`${msg.single ? 'One step' : msg.finished ? 'Done' : 'Stopped'} at step ${msg.step}`
        + (last ? `: held-out accuracy ${(100 * last[1]).toFixed(1)}%` : '')
        + `. Train again to go on from the same point of the schedule (next step: ${lrText(msg.lr)}).`);
    } else if (msg.type === 'inputError') {
      el.output.textContent = `Your input: ${msg.message}`;
    } else if (msg.type === 'error') {
      clearModel();
      el.panel.dataset.state = 'error';
      status(`The model could not run: ${msg.message}. Press Reset model to start again.`);
      el.mlen.disabled = false;
    }
  }

  function ensureWorker() {
    if (!worker) {
      worker = new Worker(new URL('../train-worker.js', import.meta.url), { type: 'module' });
      worker.onmessage = (e) => receive(e.data);
      worker.onerror = (e) => {
        setTraining(false);
        status(`The training worker failed: ${e.message || 'it could not load'}`);
      };
    }
    return worker;
  }

  function setupMessage(fresh = false) {
    const config = modelConfig({ ...state, form: form.id }, charsVocab);
    const task = taskOptions(state);
    const text = TASKS[state.task].typed ? state.mtext : '';
    return { type: 'setup', config, task, start: state.mstart, input: { seed: state.mseed, text }, fresh };
  }

  function startRun() {
    runMaxLoss = 0;
    setTraining(true);
    status(`Training… (${lrText(panelLr(state.mlr, Number(el.panel.dataset.step ?? 0), state.msched))})`);
    ensureWorker().postMessage({ type: 'train', steps: state.msteps, lr: state.mlr, schedule: state.msched });
  }

  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (training || !hasModel) return;
    startRun();
  });
  el.stop.addEventListener('click', () => worker?.postMessage({ type: 'stop' }));
  // One step: stops a run first (the worker finishes its chunk, then steps once).
  el.step.addEventListener('click', () => {
    if (!hasModel) return;
    if (training) worker.postMessage({ type: 'stop' });
    ensureWorker().postMessage({ type: 'step', lr: state.mlr, schedule: state.msched });
  });
  el.reset.addEventListener('click', () => {
    if (training) worker.postMessage({ type: 'stop' });
    ensureWorker().postMessage(setupMessage(true));
  });

  return {
    /** Shows the state; form is the attention form chosen in Settings. */
    update(newState, newForm) {
      state = newState;
      form = newForm;
      const t = TASKS[state.task];
      el.task.value = state.task;
      el.mlen.max = String(t.maxLength);
      const mlen = Math.min(state.mlen, t.maxLength);
      if (Number(el.mlen.value) !== mlen || el.mlen.value === '') el.mlen.value = String(mlen);
      el.msize.value = state.msize;
      el.march.value = state.march;
      const rnn = state.march !== 'transformer';
      el.mstart.value = state.mstart;
      el.msteps.value = String(state.msteps);
      el.mlr.value = String(state.mlr);
      el.msched.value = state.msched;
      if (Number(el.mseed.value) !== state.mseed || el.mseed.value === '') el.mseed.value = String(state.mseed);
      el.about.textContent = `${t.label}: ${t.about}. At most ${MAX_LEN} positions.`;
      el.mtext.disabled = !t.typed;
      el.mtextLabel.textContent = t.typed === 'numbers' ? `Your own input (numbers 1 to ${t.symbols}; empty: the example)`
        : t.typed === 'text' ? 'Your own input (text; empty: the example)' : 'Your own input (not for this task)';
      if (el.mtext.value !== state.mtext) el.mtext.value = state.mtext;

      // The decoder's self-attention is causal: a form without a causal version cannot be used; a
      // GRU encoder-decoder reads a source, so it has no character model (chars is one text).
      const why = rnn ? (state.task === 'chars' ? 'A GRU encoder-decoder reads a source and writes a target; the chars task '
        + 'is one running text with no source. Choose copy, reverse, sort, recall or translate to train it.' : '')
        : !form.causal ? `${form.label} has no causal form: every position would read the positions after it, and this model `
          + 'predicts each token from the ones before it. Choose another form in Settings to train a model; the '
          + 'attention panel above still shows this one.' : '';
      if (why) {
        if (!unsupported) {
          if (training) worker.postMessage({ type: 'stop' });
          unsupported = true;
          lastSetup = '';
          lastModel = '';
          clearModel();
          el.panel.dataset.state = 'unsupported';
        }
        status(why);
        return;
      }
      unsupported = false;
      const msg = setupMessage();
      const whole = JSON.stringify(msg);
      if (whole === lastSetup) return;
      const modelPart = JSON.stringify([msg.config, msg.task, msg.start]);
      if (modelPart !== lastModel && training) worker.postMessage({ type: 'stop' });
      lastSetup = whole;
      lastModel = modelPart;
      el.panel.dataset.state = 'busy';
      ensureWorker().postMessage(msg);
    },
  };
}
