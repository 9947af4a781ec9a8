// compare.js: two attention forms side by side. Two training workers (../train-worker.js, one per
// form) get the same task, the same seeded initial weights and batches, the same budget and
// schedule; the panel draws both held-out curves on one chart, both models' heatmaps next to each
// other, and their accuracy, loss and time per step in a table.
import { LIMITS } from '../state.js';
import { COMPARE_TASKS, SIZES, TASKS, modelConfig, taskOptions } from '../../lab/tasks.js';
import { drawChart, legendSwatch, seriesStyle } from './chart.js';
import { createHeatmapView } from './heatmap.js';
import { startWorker } from '../worker-page.js';

const LR = 2e-3; // peak; the model panel's default schedule (warm-up, then decay)
const SIDES = ['a', 'b'];

function fillSelect(select, values, label = String) {
  select.replaceChildren(...values.map((v) => new Option(label(v), String(v))));
}

/**
 * el: { panel, form, a, b, task, steps, run, stop, progress, status, loss, acc, legend, table,
 *   sides: { a: { title, grid, legend, readout, exports }, b: { ... } } }.
 * The panel gets data-done = '1' when both runs finished, data-running while they run.
 */
export function createCompareView(el, { onChange, charsVocab }) {
  fillSelect(el.task, LIMITS.compareTasks, (t) => `${TASKS[t].label} (length ${COMPARE_TASKS[t]})`);
  fillSelect(el.steps, LIMITS.budgets);
  el.a.addEventListener('change', () => onChange({ ca: el.a.value }));
  el.b.addEventListener('change', () => onChange({ cb: el.b.value }));
  el.task.addEventListener('change', () => onChange({ ctask: el.task.value }));
  el.steps.addEventListener('change', () => onChange({ csteps: Number(el.steps.value) }));
  const heatmaps = Object.fromEntries(SIDES.map((s) => [s, createHeatmapView({
    grid: el.sides[s].grid, legend: el.sides[s].legend, readout: el.sides[s].readout, exports: el.sides[s].exports,
    name: `compare-${s}`,
  })]));

  let state = null;
  let forms = []; // the forms a decoder can use
  const workers = {};
  let runs = null; // { a: { form, curves, done, msPerStep, params, eval }, b: ... } of the current run
  let scheduled = false;

  const labelOf = (id) => forms.find((f) => f.id === id)?.label ?? id;
  // A and B: the first two colours of the palette (blue, vermillion), B dashed too, whatever the forms.
  const styleOf = (side) => (side === 'a' ? seriesStyle(0) : { ...seriesStyle(1), dash: [6, 3] });

  function drawCurves() {
    scheduled = false;
    const series = (key) => (runs ? SIDES.map((s) => ({ label: s, points: runs[s].curves[key], ...styleOf(s) })) : []);
    // an empty chart names the button that fills it, by its own label
    const emptyText = `press ${el.run.textContent.trim()}`;
    drawChart(el.loss, { series: series('loss'), xLabel: 'step', yLabel: 'held-out loss (bits per token)', logX: false, emptyText });
    drawChart(el.acc, {
      series: series('acc'), xLabel: 'step', yLabel: 'held-out accuracy', logX: false, logY: false, yRange: [0, 1],
      emptyText,
    });
  }
  const scheduleCurves = () => {
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(drawCurves);
    }
  };
  drawCurves();

  function drawTable() {
    const head = document.createElement('tr');
    head.append(...['', 'form', 'held-out accuracy', 'held-out loss (bits per token)', 'ms per step', 'parameters'].map((t) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = t;
      return th;
    }));
    const rows = runs ? SIDES.map((s) => {
      const r = runs[s];
      const tr = document.createElement('tr');
      tr.dataset.side = s;
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = s.toUpperCase();
      const cells = [labelOf(r.form), r.eval ? `${(100 * r.eval.accuracy).toFixed(1)}%` : '–',
        r.eval ? (r.eval.loss / Math.LN2).toFixed(3) : '–', r.done ? r.msPerStep.toFixed(2) : '–', r.params?.toLocaleString('en') ?? '–'];
      tr.append(th, ...cells.map((t) => {
        const td = document.createElement('td');
        td.textContent = t;
        return td;
      }));
      if (r.eval) tr.dataset.accuracy = String(r.eval.accuracy);
      if (r.done) tr.dataset.msPerStep = String(r.msPerStep);
      return tr;
    }) : [];
    el.table.replaceChildren(head, ...rows);
    el.legend.replaceChildren(...(runs ? SIDES.map((s) => {
      const li = document.createElement('li');
      li.append(legendSwatch(styleOf(s)), `${s.toUpperCase()}: ${labelOf(runs[s].form)}`);
      return li;
    }) : []));
  }

  function setRunning(on) {
    el.run.disabled = on;
    el.stop.disabled = !on;
    el.panel.dataset.running = on ? '1' : '0';
  }

  const pending = {};
  let frame = 0;
  function drawSnapshot() {
    frame = 0;
    const side = SIDES.find((s) => pending[s]);
    if (!side) return;
    const msg = pending[side];
    delete pending[side];
    const maps = [];
    msg.maps.forEach((heads, l) => heads.forEach((weights, h) => maps.push({ title: `Layer ${l + 1}, head ${h + 1}`, weights })));
    heatmaps[side].render({ maps, n: msg.T, m: msg.T, rowLabels: msg.labels, colLabels: msg.labels, scale: state.scale });
    if (SIDES.some((s) => pending[s])) frame = requestAnimationFrame(drawSnapshot);
  }

  function receive(side, msg) {
    const r = runs?.[side];
    if (!r) return;
    if (msg.type === 'created') {
      r.params = msg.parameterCount;
    } else if (msg.type === 'progress') {
      r.step = msg.step;
      el.progress.value = SIDES.reduce((a, s) => a + (runs[s].step ?? 0), 0);
    } else if (msg.type === 'evaluated') {
      r.curves.loss.push([msg.step, msg.loss / Math.LN2]); // the library's nats, drawn in bits
      r.curves.acc.push([msg.step, msg.accuracy]);
      r.eval = msg;
      scheduleCurves();
      drawTable();
    } else if (msg.type === 'snapshot') {
      pending[side] = msg; // the latest of each side, drawn one side a frame (two at once can block the page)
      if (!frame) frame = requestAnimationFrame(drawSnapshot);
    } else if (msg.type === 'stopped') {
      r.done = msg.finished;
      r.stopped = true;
      r.msPerStep = msg.msPerStep;
      drawTable();
      finish();
    } else if (msg.type === 'error') {
      r.stopped = true;
      r.failed = `${side.toUpperCase()} (${labelOf(r.form)}) could not run: ${msg.message}`;
      stop(r.failed);
      finish();
    }
  }

  // When both sides have stopped (finished, stopped or failed): the buttons, the bar, the summary.
  function finish() {
    if (!SIDES.every((s) => runs[s].stopped)) return;
    setRunning(false);
    const all = SIDES.every((s) => runs[s].done);
    el.panel.dataset.done = all ? '1' : '0';
    el.progress.value = all ? el.progress.max : 0;
    const [a, b] = SIDES.map((s) => runs[s]);
    el.status.textContent = all
      ? `Done: ${state.csteps} steps each. Held-out accuracy A ${(100 * a.eval.accuracy).toFixed(1)}%, `
        + `B ${(100 * b.eval.accuracy).toFixed(1)}%; A ${a.msPerStep.toFixed(2)} ms per step, B ${b.msPerStep.toFixed(2)} `
        + '(both trained at once, each in its own worker, so they share this device\'s cores).'
      : SIDES.map((s) => runs[s].failed).filter(Boolean).join(' ') || 'Stopped.';
  }

  function stop(message) {
    for (const s of SIDES) workers[s]?.postMessage({ type: 'stop' });
    el.status.textContent = message;
  }

  function worker(side) {
    if (!workers[side]) {
      const w = startWorker(new URL('../train-worker.js', import.meta.url));
      w.onmessage = (e) => receive(side, e.data);
      w.onerror = (e) => receive(side, { type: 'error', message: `its worker failed: ${e.message || 'it could not load'}` });
      workers[side] = w;
    }
    return workers[side];
  }

  el.stop.addEventListener('click', () => stop('Stopping…'));
  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const task = taskOptions({ task: state.ctask, mlen: COMPARE_TASKS[state.ctask] });
    runs = Object.fromEntries(SIDES.map((s) => [s, { form: el[s].value, curves: { loss: [], acc: [] } }]));
    el.panel.dataset.done = '0';
    el.progress.max = 2 * state.csteps;
    el.progress.value = 0;
    setRunning(true);
    el.panel.querySelector('.results').hidden = false; // the curves and heatmaps take room from the first run on
    const size = SIZES.tiny;
    el.status.textContent = `Training both on ${state.ctask} (length ${task.length}) for ${state.csteps} steps: the same `
      + `seeded initial weights and batches, d = ${size.dModel}, ${size.heads} heads, ${size.layers} layers…`;
    drawTable();
    drawCurves();
    for (const s of SIDES) el.sides[s].title.textContent = `${s.toUpperCase()}: ${labelOf(runs[s].form)}, every layer and head`;
    for (const s of SIDES) {
      const config = modelConfig({ task: state.ctask, msize: 'tiny', form: runs[s].form }, charsVocab);
      const w = worker(s);
      w.postMessage({ type: 'setup', config, task, start: 'fresh', input: { seed: 1, text: '' }, fresh: true });
      w.postMessage({ type: 'train', steps: state.csteps, lr: LR, schedule: 'decay' });
    }
  });

  return {
    /** allForms: every available form; the panel offers those with a causal version. */
    update(newState, allForms) {
      state = newState;
      const usable = allForms.filter((f) => f.causal);
      if (usable.map((f) => f.id).join() !== forms.map((f) => f.id).join()) {
        forms = usable;
        for (const sel of [el.a, el.b]) fillSelect(sel, forms.map((f) => f.id), labelOf);
      }
      el.a.value = forms.some((f) => f.id === state.ca) ? state.ca : forms[0].id;
      el.b.value = forms.some((f) => f.id === state.cb) ? state.cb : forms[Math.min(1, forms.length - 1)].id;
      el.task.value = state.ctask;
      el.steps.value = String(state.csteps);
    },
  };
}
