// experiment.js: the experiment panel. One worker (../train-worker.js, its own instance) trains a
// fresh tiny model per (form, task) cell with the same budget, and the table fills in as cells finish.
import { LIMITS } from '../state.js';
import { EXPERIMENT, modelConfig, taskOptions } from '../tasks.js';

/**
 * el: { panel, form, budget, run, stop, progress, status, table }; the panel gets data-done = '1'
 * when every cell has its result. charsVocab: lib.charsTokenizer.vocab.
 */
export function createExperimentView(el, { onChange, charsVocab }) {
  el.budget.replaceChildren(...LIMITS.budgets.map((b) => new Option(String(b), String(b))));
  el.budget.addEventListener('change', () => onChange({ ebudget: Number(el.budget.value) }));
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
          td.title = `held-out loss ${c.loss.toFixed(3)}, ${(c.ms / 1000).toFixed(1)} s`;
          td.dataset.accuracy = String(c.accuracy);
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
          config: modelConfig({ task: t.task, msize: EXPERIMENT.size, form: f.id }, charsVocab),
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
      el.progress.value = msg.index * msg.steps + msg.step;
      drawTable();
    } else if (msg.type === 'experimentDone') {
      setRunning(false);
      const done = cells.filter((c) => c?.done).length;
      el.panel.dataset.done = msg.finished && done === runs.length ? '1' : '0';
      el.status.textContent = msg.finished
        ? `Done: ${done} models, ${state.ebudget} steps each (batch 16). Hover a cell for its loss and time.`
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
      const next = allForms.filter((f) => EXPERIMENT.forms.includes(f.id));
      if (next.map((f) => f.id).join() !== forms.map((f) => f.id).join()) {
        forms = next;
        drawTable();
      }
    },
  };
}
