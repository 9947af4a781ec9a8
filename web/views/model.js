// model.js: the model panel. A tiny Transformer (lib.createModel) with the chosen attention form
// learns a task in a worker (../train-worker.js); this view sends it the settings, starts and stops
// training, and draws what comes back: loss and accuracy curves, the model's output on one
// example, and the attention of every layer and head.
import { LIMITS } from '../state.js';
import { MAX_LEN, SCHEDULES, SIZES, TASKS, WARMUP_STEPS, modelConfig, panelLr, taskOptions } from '../../lab/tasks.js';
import { drawChart, seriesStyle } from './chart.js';
import { createHeatmapView } from './heatmap.js';
import { download, llama2cSaveButton } from './export.js';
import { llama2cRefusal } from '../../wasm/llama2c.js';
import { cacheLine, presetById } from '../../lab/presets.js';
import { startWorker } from '../worker-page.js';

const fmtLr = (x) => x.toExponential(1).replace('e-', 'e−');
const plural = (k, word) => `${k} ${word}${k === 1 ? '' : 's'}`;

/**
 * Which model the panel builds for a state and form: 'gru' | 'gru-attention' (the RNN baselines),
 * 'encoder-decoder' (a form with no causal form but a decoderForm in lib.forms, such as Linformer: it
 * serves the encoder, the decoder's self-attention uses decoderForm) or 'decoder' (every other form;
 * one with no causal form and no decoderForm cannot be trained).
 */
export function panelArch(march, form) {
  if (march === 'gru' || march === 'gru-attention') return march;
  return !form.causal && form.decoderForm ? 'encoder-decoder' : 'decoder';
}

/** One layer's form in words: its name and the options that make it what it is ("softmax (window 3, QK-norm)"). */
function layerFormText({ attention, attentionOptions: o = {} }) {
  const parts = [];
  if (o.window && attention === 'softmax') parts.push(`window ${o.window}`);
  if (o.learnedSinks) parts.push('learned sinks');
  if (o.outputGate) parts.push('output gate');
  if (o.qkNorm) parts.push('QK-norm');
  if (o.softcap) parts.push(`softcap ${o.softcap}`);
  if (attention === 'mla') parts.push(`kvRank ${o.kvRank}, ropeDim ${o.ropeDim}${o.qRank ? `, qRank ${o.qRank}` : ''}`);
  return parts.length ? `${attention} (${parts.join(', ')})` : attention;
}

// A layerForms list in words, consecutive equal layers as one group: "1-5 softmax (window 3), 6 softmax".
function layersText(layerForms) {
  const groups = [];
  layerForms.forEach((f, l) => {
    const text = layerFormText(f), last = groups[groups.length - 1];
    if (last && last.text === text) last.to = l;
    else groups.push({ from: l, to: l, text });
  });
  return groups.map((g) => `${g.from === g.to ? `layer ${g.from + 1}` : `layers ${g.from + 1}-${g.to + 1}`} ${g.text}`).join(', ');
}

/** The status line's description of a built model (c: model.config; form: the Settings form;
 * positionals: lib.positionals, whose label names the model's positions). */
export function describeModel(c, form, positionals) {
  if (c.arch === 'gru' || c.arch === 'gru-attention') {
    return `GRU encoder-decoder, ${plural(c.layers, 'GRU layer')} in the encoder and in the decoder, hidden size ${c.dModel}, `
      + `vocab ${c.vocab}; ${c.arch === 'gru' ? 'the decoder reads one context vector (the encoder\'s last state), no attention'
        : 'additive (Bahdanau) attention over every encoder state'}`;
  }
  const block = c.block === 'llama' ? ', llama-style block (RMSNorm, SwiGLU, no biases)' : '';
  const positions = `positions: ${positionals.find((p) => p.name === c.positional)?.label ?? c.positional}`;
  const kv = c.kvHeads && c.kvHeads < c.heads ? ` (${plural(c.kvHeads, 'K/V head')})` : '';
  const shape = `vocab ${c.vocab}, d = ${c.dModel}, ${plural(c.heads, 'head')}${kv}, ${plural(c.layers, 'layer')}`;
  if (c.arch === 'encoder-decoder') {
    const dec = form?.decoderForm ?? 'softmax', cross = form?.crossForm ?? 'softmax';
    return `encoder-decoder Transformer, ${shape} in each stack, ${positions}${block}, decoder self-attention ${dec}, `
      + `cross-attention ${cross}, encoder attention ${c.attention}`;
  }
  return `${shape}, ${positions}${block}, ${c.layerForms ? layersText(c.layerForms) : `attention ${c.attention}`}`;
}

/** The panel's heading, by panelArch. */
const TITLES = {
  decoder: 'A tiny Transformer with this attention',
  'encoder-decoder': 'A tiny encoder-decoder Transformer with this attention in its encoder',
  gru: 'A tiny GRU encoder-decoder (no attention)',
  'gru-attention': 'A tiny GRU encoder-decoder with additive attention',
};

/** The panel's description of the model it builds, by panelArch. */
function aboutModel(arch, form) {
  if (arch === 'gru') {
    return 'A GRU encoder-decoder (Cho et al. 2014), the recurrent network attention grew out of: one GRU layer reads '
      + 'the input, and its last state, one context vector, is all the decoder learns about it; the decoder reads '
      + 'only the separator ⟂ and the output so far. It has no attention, so there is no heatmap, and the attention '
      + 'form chosen in Settings is not used. It learns a task from seeded examples drawn by the package; training '
      + 'runs in a Web Worker, so the page stays usable.';
  }
  if (arch === 'gru-attention') {
    return 'A GRU encoder-decoder with additive attention (Bahdanau et al. 2015): one GRU layer reads the input, and '
      + 'at every output step the decoder weighs all of the encoder\'s states instead of one context vector; the '
      + 'decoder reads only the separator ⟂ and the output so far. The heatmap is that alignment: decoder steps '
      + '(rows) against encoder states (columns). The attention form chosen in Settings is not used. Training runs '
      + 'in a Web Worker, so the page stays usable.';
  }
  if (arch === 'encoder-decoder') {
    return `An encoder-decoder Transformer: ${form.label} has no causal form, so it serves here as the self-attention `
      + 'of the encoder, which reads the whole input at once (every position may read every other); a decoder with '
      + `causal ${form.decoderForm} self-attention and ${form.crossForm ?? 'softmax'} cross-attention to the encoder `
      + 'writes the output after the separator ⟂. The heatmaps show the encoder\'s attention, every layer and head, '
      + 'on one example\'s input as it learns. Training runs in a Web Worker, so the page stays usable. Tasks with '
      + 'an input to read: copy, reverse, sort, recall, translate.';
  }
  return 'A decoder-only Transformer (token embedding and the positions chosen below, pre-norm blocks of causal '
    + 'self-attention and a feed-forward layer) whose attention is the form chosen in Settings. It learns a task '
    + 'from seeded examples drawn by the package; training runs in a Web Worker, so the page stays usable. The '
    + 'heatmaps show every layer and head on one example as it learns. Model swaps in the recurrent network '
    + 'attention grew out of: a GRU encoder-decoder that reads the input with its encoder (its decoder reads only '
    + 'the separator ⟂ and the output so far), whose heatmap, with additive attention, is its alignment of decoder '
    + 'steps to encoder states.';
}

function fillSelect(select, values, label = String) {
  select.replaceChildren(...values.map((v) => new Option(label(v), String(v))));
}

/**
 * el: { panel, form, task, mlen, mlenNote, msize, mstart, msteps, mlr, msched, mseed, mtext, mtextLabel, about, modelAbout?, title?,
 *   train, stop, step, reset, progress, status, output, loss, acc, curvesLegend, grid, legend, readout, exports }.
 * The panel gets data-state ('busy' while a setup is on its way, 'ready' when its snapshot is shown,
 * 'error', 'unsupported' for a form no model here can use, or a task the chosen model cannot learn), data-arch
 * (panelArch: 'decoder' | 'encoder-decoder' | 'gru' | 'gru-attention'), data-training, data-step, data-snapshots,
 * data-correct, data-eval-loss, data-eval-accuracy, data-lr (the rate of the last step) and
 * data-run-max-loss (the largest progress loss of the current run).
 */
export function createModelView(el, { onChange, charsVocab, positionals, forms = [] }) {
  fillSelect(el.task, LIMITS.tasks, (t) => TASKS[t].label);
  // the sizes in the terms of the model built: a GRU has a hidden size and one layer, no heads
  const sizeLabel = (s, gru) => {
    const z = SIZES[s];
    return gru ? `${s} (hidden size ${z.dModel}, 1 GRU layer each side)` : `${s} (d = ${z.dModel}, ${z.heads} heads, ${z.layers} layers)`;
  };
  fillSelect(el.msize, LIMITS.modelSizes, (s) => sizeLabel(s, false));
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
  el.preset?.addEventListener('change', () => onChange({ mpreset: el.preset.value }));
  el.mpos?.addEventListener('change', () => onChange({ mpos: el.mpos.value }));
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
  let built = null; // the config of the model the worker holds (model.config)
  let preset = null; // the chosen preset (lab/presets.js), or null
  // The one "No heatmap" note of a model without attention weights, kept in the grid while it applies.
  const noAttentionNote = document.createElement('p');
  noAttentionNote.className = 'note no-attention';
  let curves = { loss: [], acc: [], evalLoss: [], evalAcc: [] };
  // "Save as llama2.c": the model as llama2.c's two files, for the "Open a model file" panel or run.c;
  // only a model llama2.c can hold (the llama block), else disabled with the reason as its title.
  const save = llama2cSaveButton(el.exports, 'msave-llama2c');
  save.title = 'No model yet';
  function allowSave(config) {
    const why = config ? llama2cRefusal(config) : 'no model yet';
    save.disabled = Boolean(why);
    save.title = why ? `llama2.c cannot hold this model: ${why}. Choose Architecture: the llama block to save one.`
      : 'Download model.bin and tokenizer.bin, the files "Open a model file" (and llama2.c\'s run.c) reads. '
        + 'llama2.c reads token 1 as <s> and 2 as </s>.';
  }
  save.addEventListener('click', () => worker?.postMessage({ type: 'llama2c' }));
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
      xLabel: 'step', yLabel: 'loss (bits per token)', logX: false, emptyText: 'press Train',
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
    allowSave(null);
    setTraining(false);
    resetCurves();
    el.progress.value = 0;
    heatmaps.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
    noAttentionNote.remove();
    el.readout.textContent = '';
    el.output.textContent = '';
    built = null;
    showCache(null);
  }

  // The KV cache a decoder keeps per token (lab/presets.js counts it from the model's config).
  // generation: the bytes the library's generation allocates for maxLen (model.generationBytes).
  function showCache(c, generation = null) {
    if (!el.cache) return;
    let text = '';
    if (c && (c.arch ?? 'decoder') === 'decoder') {
      try {
        text = cacheLine(c);
      } catch (e) {
        text = `KV cache: ${e.message.replace(/^cache: /, '')}.`;
      }
      if (generation !== null) {
        text += ` This library's generation allocates ${generation.toLocaleString('en')} bytes for maxLen `
          + '(a window layer a ring of twice its window, a recurrent state its step\'s scratch).';
      }
    }
    el.cache.textContent = text;
    el.cache.hidden = !text;
    el.panel.dataset.cache = text ? '1' : '0';
  }

  // A layer's heatmap title: its form when the layers differ, and a form with no softmax weights says so.
  function layerTitle(l, h) {
    const f = built?.layerForms?.[l] ?? (built ? { attention: built.attention, attentionOptions: built.attentionOptions } : null);
    const signed = f && forms.find((x) => x.name === f.attention)?.signed;
    const name = !built?.layerForms ? '' : f.attention === 'softmax' && f.attentionOptions?.window ? ` · window ${f.attentionOptions.window}`
      : ` · ${f.attention}`;
    return `Layer ${l + 1}${name}, head ${h + 1}${signed ? ': |A|' : ''}`;
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
    if (msg.type === 'llama2c') {
      download('model.bin', new Blob([msg.bin], { type: 'application/octet-stream' }));
      download('tokenizer.bin', new Blob([msg.tokenizer], { type: 'application/octet-stream' }));
      el.panel.dataset.savedLlama2c = String(msg.bin.byteLength);
    } else if (msg.type === 'llama2cError') {
      status(`Save as llama2.c: ${msg.message}`);
    } else if (msg.type === 'created') {
      allowSave(msg.config);
      built = msg.config;
      showCache(msg.config, msg.generationBytes ?? null);
      resetCurves();
      el.progress.value = 0;
      const c = msg.config;
      const p = msg.pretrained;
      const shape = `${msg.parameterCount.toLocaleString('en')} parameters (${preset ? `${preset.label} preset: ` : ''}`
        + `${describeModel(c, form, positionals)})`;
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
      curves.loss.push([msg.step, msg.loss / Math.LN2]); // the library's nats, drawn in bits
      curves.acc.push([msg.step, msg.accuracy]);
      el.progress.max = msg.goal;
      el.progress.value = msg.step;
      el.panel.dataset.step = String(msg.step);
      el.panel.dataset.lr = String(msg.lr);
      runMaxLoss = Math.max(runMaxLoss, msg.loss);
      el.panel.dataset.runMaxLoss = String(runMaxLoss);
      status(`Training: step ${msg.step} of ${msg.goal}, loss ${(msg.loss / Math.LN2).toPrecision(3)} bits per token, accuracy ${(100 * msg.accuracy).toFixed(1)}%, `
        + `learning rate ${fmtLr(msg.lr)}`);
      scheduleCurves();
    } else if (msg.type === 'evaluated') {
      curves.evalLoss.push([msg.step, msg.loss / Math.LN2]);
      curves.evalAcc.push([msg.step, msg.accuracy]);
      el.panel.dataset.evalLoss = String(msg.loss);
      el.panel.dataset.evalAccuracy = String(msg.accuracy);
      scheduleCurves();
    } else if (msg.type === 'snapshot') {
      const maps = [];
      msg.maps.forEach((heads, l) => heads.forEach((weights, h) => {
        maps.push({ title: msg.cols ? 'Additive attention: decoder step i reads encoder state j'
          : msg.encoder ? `Encoder layer ${l + 1}, head ${h + 1}` : layerTitle(l, h), weights });
      }));
      // layers with no softmax weights (a linear state: gated-delta, kda, ...): their slots say what they show
      const stateLayers = msg.encoder || msg.cols ? [] : msg.maps.map((_, l) => l).filter((l) => layerTitle(l, 0).endsWith(': |A|'));
      // a GRU with additive attention: its alignment (target x source); a GRU with one context vector: none
      // a layer whose weights are not a distribution: the legend says what its colours are
      const notProbabilities = msg.cols ? null
        : (built?.layerForms ?? [built]).map((f) => forms.find((x) => x.name === f?.attention)).find((x) => x?.signed) ?? null;
      heatmaps.render({ maps, n: msg.T, m: msg.cols ? msg.cols.length : msg.T, rowLabels: msg.labels,
        colLabels: msg.cols ?? msg.labels, scale: state.scale, form: notProbabilities });
      // said where the heatmaps would be, once (the same element, whatever the number of snapshots);
      // gone as soon as the model has attention weights
      if (msg.noAttention || stateLayers.length) {
        noAttentionNote.textContent = msg.noAttention ? `No heatmap: ${msg.noAttention}.`
          : `${stateLayers.length === 1 ? 'Layer' : 'Layers'} ${stateLayers.map((l) => l + 1).join(', ')} (${[...new Set(stateLayers.map((l) => built.layerForms?.[l]?.attention ?? built.attention))].join(', ')}) `
            + 'have no attention weights: a recurrent state has no softmax over the keys. Their maps (marked |A|) show '
            + 'the matrix the state implies, O = A V, as magnitudes.';
        if (noAttentionNote.parentNode !== el.grid) el.grid.append(noAttentionNote);
      } else {
        noAttentionNote.remove();
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
      worker = startWorker(new URL('../train-worker.js', import.meta.url));
      worker.onmessage = (e) => receive(e.data);
      worker.onerror = (e) => {
        setTraining(false);
        status(`The training worker failed: ${e.message || 'it could not load'}`);
      };
    }
    return worker;
  }

  function setupMessage(fresh = false) {
    const task = taskOptions(state);
    const config = preset ? preset.config(task, { charsVocab, size: state.msize })
      : modelConfig({ ...state, form: form.id, encoderDecoder: panelArch(state.march, form) === 'encoder-decoder' }, charsVocab);
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
      if (el.mpos) el.mpos.value = state.mpos;
      preset = presetById(el.preset ? state.mpreset : 'none');
      if (el.preset) el.preset.value = state.mpreset;
      // a preset is a decoder of its own: Model, Positions and the Settings form are its, not the page's
      const rnn = !preset && (state.march === 'gru' || state.march === 'gru-attention');
      el.march.disabled = Boolean(preset);
      if (el.mpos) el.mpos.disabled = rnn || Boolean(preset);
      el.march.title = preset ? `set by the ${preset.label} preset (the llama block)` : '';
      if (el.mpos) el.mpos.title = preset ? `set by the ${preset.label} preset` : '';
      if (el.presetAbout) {
        el.presetAbout.hidden = !preset;
        el.presetAbout.replaceChildren();
        if (preset) {
          const a = document.createElement('a');
          a.href = preset.link.url;
          a.textContent = preset.link.title;
          a.rel = 'noopener';
          el.presetAbout.append(`${preset.label} at tiny scale takes ${preset.takes} `, a, '. The attention form in Settings is not used.');
        }
      }
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

      const arch = preset ? 'decoder' : panelArch(state.march, form);
      if (el.modelAbout) {
        el.modelAbout.textContent = preset ? `A decoder-only Transformer laid out as ${preset.label} is (below: what it takes from `
          + 'the real model and what it leaves out), a few tens of thousands of parameters instead of billions. It learns '
          + 'a task from seeded examples; training runs in a Web Worker, so the page stays usable. The heatmaps show '
          + 'every layer and head on one example as it learns, and the line under the status counts the KV cache it '
          + 'keeps per token when it generates.' : aboutModel(arch, form);
      }
      if (el.title) el.title.textContent = preset ? `A tiny ${preset.label}, as a preset` : TITLES[arch];
      for (const o of el.msize.options) o.textContent = preset ? `${o.value} (d = ${SIZES[o.value].dModel})` : sizeLabel(o.value, rnn);
      el.panel.dataset.arch = arch;
      // The decoder's self-attention is causal: a form without a causal version serves in the encoder of
      // an encoder-decoder when the library names a decoderForm for it (Linformer), else it cannot be
      // used; an encoder-decoder (GRU or Transformer) reads a source, so it has no character model
      // (chars is one text).
      const noSource = 'the chars task is one running text with no source. Choose copy, reverse, sort, recall or '
        + 'translate to train it.';
      const why = preset ? '' : rnn ? (state.task === 'chars' ? `A GRU encoder-decoder reads a source and writes a target; ${noSource}` : '')
        : arch === 'encoder-decoder' ? (state.task === 'chars' ? `${form.label} has no causal form, so it trains here in the `
          + `encoder of an encoder-decoder Transformer, which reads a source and writes a target; ${noSource}` : '')
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
      let msg;
      try {
        msg = setupMessage();
      } catch (e) { // a preset that cannot take this task says why
        if (training) worker.postMessage({ type: 'stop' });
        lastSetup = lastModel = '';
        clearModel();
        el.panel.dataset.state = 'error';
        status(e.message);
        return;
      }
      if (preset) { // the disabled selects show what the preset builds
        el.march.value = 'llama';
        if (el.mpos) el.mpos.value = msg.config.positional;
      }
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
