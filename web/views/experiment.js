// experiment.js: the experiment panel. One worker (../train-worker.js, its own instance) trains a
// fresh tiny model per (form, task) cell with the same budget, and the table fills in as cells finish.
import { LIMITS } from '../state.js';
import { download, toCsv } from './export.js';
import { BATCH, EXPERIMENT, README_EXPERIMENT, SIZES, modelConfig, taskOptions } from '../tasks.js';

/**
 * el: { panel, form, budget, run, stop, progress, status, table, readout, compare, csv }; the panel gets data-done = '1'
 * when every cell has its result. charsVocab: lib.charsTokenizer.vocab.
 */
export function createExperimentView(el, { onChange, charsVocab }) {
  el.budget.replaceChildren(...LIMITS.budgets.map((b) => new Option(String(b), String(b))));
  el.budget.addEventListener('change', () => onChange({ ebudget: Number(el.budget.value) }));
  // This table and the README's come from different setups: say which, where the numbers stand.
  const size = SIZES[EXPERIMENT.size];
  const recall = EXPERIMENT.tasks.find((t) => t.task === 'recall');
  const r = README_EXPERIMENT;
  el.compare.textContent = `Why the README's table differs: there (npm run experiment) each model has ${r.model} and `
    + `trains ${r.steps} steps of ${r.batch} examples on recall with ${r.recallPairs} pairs (reverse of length `
    + `${r.reverseLength}); here each has d = ${size.dModel}, ${size.heads} heads, ${size.layers} layers and trains the `
    + `steps chosen above, in batches of ${BATCH}, on recall with ${recall.mlen} pairs. With ${r.recallPairs} pairs to tell apart, `
    + `linear attention stops at ${r.linearRecall} there; with ${recall.mlen} its φ(q)·φ(k), which compares content `
    + 'but less sharply than softmax, is often enough, so it can score far higher here. Both are true: recall gets '
    + 'harder with every pair added, and most of all for forms without a sharp token-to-token comparison.';
  let state = null;
  let forms = [];
  let worker = null;
  let runs = [];
  let cells = [];

  function drawTable() {
    const head = document.createElement('tr');
    head.append(...['attention form', ...EXPERIMENT.tasks.map((t) => `${t.task} (length ${t.mlen})`)].map((text) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = text;
      return th;
    }));
    const rows = forms.map((f) => {
      const tr = document.createElement('tr');
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = f.label;
      tr.append(th, ...EXPERIMENT.tasks.map((t) => {
        const td = document.createElement('td');
        const i = runs.findIndex((r) => r.form === f.id && r.task.task === t.task);
        const c = cells[i];
        td.dataset.form = f.id;
        td.dataset.task = t.task;
        if (c?.done) {
          td.textContent = `${(100 * c.accuracy).toFixed(1)}%`;
          td.dataset.read = `${f.label} on ${t.task}: held-out accuracy ${(100 * c.accuracy).toFixed(1)}%, `
            + `held-out loss ${c.loss.toFixed(3)}, trained ${c.steps} steps in ${(c.ms / 1000).toFixed(1)} s `
            + `(${(c.ms / c.steps).toFixed(2)} ms per step)`;
          td.title = td.dataset.read;
          td.tabIndex = 0;
          td.dataset.accuracy = String(c.accuracy);
        } else if (c?.stopped) {
          td.textContent = `stopped at ${c.step}/${c.steps}`;
          td.dataset.stopped = '1';
        } else if (c) {
          td.textContent = `training… ${c.step}/${c.steps}`;
        } else {
          td.textContent = '–';
        }
        return td;
      }));
      return tr;
    });
    el.table.replaceChildren(head, ...rows);
  }

  function setRunning(on) {
    el.run.disabled = on;
    el.stop.disabled = !on;
  }

  function stop(message) {
    worker?.postMessage({ type: 'stop' });
    el.status.textContent = message;
  }

  el.stop.addEventListener('click', () => stop('Stopping after the current chunk…'));
  // CSV: one row per finished cell, with the setup it ran under.
  el.csv.addEventListener('click', () => {
    const rows = [['form', 'task', 'length', 'steps', 'batch', 'held_out_accuracy', 'held_out_loss', 'seconds', 'ms_per_step']];
    runs.forEach((r, i) => {
      const c = cells[i];
      if (!c?.done) return;
      rows.push([r.form, r.task.task, r.task.length, c.steps, BATCH, c.accuracy.toFixed(4), c.loss.toFixed(4),
        (c.ms / 1000).toFixed(2), (c.ms / c.steps).toFixed(3)]);
    });
    download('experiment.csv', new Blob([toCsv(rows)], { type: 'text/csv' }));
  });
  // A finished cell reads out below the table on hover, on a tap (touch or pen) or on focus.
  const readCell = (e) => {
    const td = e.target.closest?.('td[data-read]');
    if (td) el.readout.textContent = td.dataset.read;
  };
  el.table.addEventListener('pointerover', (e) => {
    if (e.pointerType === 'mouse') readCell(e);
  });
  el.table.addEventListener('pointerdown', readCell);
  el.table.addEventListener('focusin', readCell);
  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!worker) {
      worker = new Worker(new URL('../train-worker.js', import.meta.url), { type: 'module' });
      worker.onerror = (ev) => {
        setRunning(false);
        el.status.textContent = `The experiment worker failed: ${ev.message || 'it could not load'}`;
      };
      worker.onmessage = (ev) => receive(ev.data);
    }
    runs = [];
    for (const t of EXPERIMENT.tasks) {
      for (const f of forms) {
        runs.push({
          form: f.id, task: taskOptions(t),
          config: f.arch ? { ...modelConfig({ task: t.task, msize: EXPERIMENT.size, form: 'softmax' }, charsVocab), arch: f.arch, layers: 1 }
            : modelConfig({ task: t.task, msize: EXPERIMENT.size, form: f.id }, charsVocab),
        });
      }
    }
    cells = [];
    el.panel.dataset.done = '0';
    el.progress.max = runs.length * state.ebudget;
    el.progress.value = 0;
    setRunning(true);
    el.status.textContent = `Training ${runs.length} models for ${state.ebudget} steps each…`;
    drawTable();
    worker.postMessage({
      type: 'experiment', steps: state.ebudget, lr: EXPERIMENT.lr,
      runs: runs.map((r) => ({ config: r.config, task: r.task })),
    });
  });

  function receive(msg) {
    if (msg.type === 'cell') {
      cells[msg.index] = msg;
      el.csv.disabled = !cells.some((c) => c?.done);
      el.progress.value = msg.index * msg.steps + msg.step;
      drawTable();
    } else if (msg.type === 'experimentDone') {
      setRunning(false);
      const done = cells.filter((c) => c?.done).length;
      if (!msg.finished) {
        // The cell that was training says where it stopped; the bar empties, as nothing runs.
        cells = cells.map((c) => (c && !c.done ? { ...c, stopped: true } : c));
        el.progress.value = 0;
        drawTable();
      }
      el.panel.dataset.done = msg.finished && done === runs.length ? '1' : '0';
      el.status.textContent = msg.finished
        ? `Done: ${done} models, ${state.ebudget} steps each (batch ${BATCH}). Hover over or tap a cell for its loss and time.`
        : `Stopped: ${done} of ${runs.length} cells finished.`;
    } else if (msg.type === 'error') {
      setRunning(false);
      el.status.textContent = `The experiment could not run: ${msg.message}`;
    }
  }

  return {
    /** forms: the available forms (the experiment uses those of EXPERIMENT.forms the library has). */
    update(newState, allForms) {
      state = newState;
      el.budget.value = String(state.ebudget);
      // the attention forms, then the RNN baselines (the model's GRU encoder-decoders)
      const next = [...allForms.filter((f) => EXPERIMENT.forms.includes(f.id)), ...EXPERIMENT.rnns];
      if (next.map((f) => f.id).join() !== forms.map((f) => f.id).join()) {
        forms = next;
        drawTable();
      }
    },
  };
}
