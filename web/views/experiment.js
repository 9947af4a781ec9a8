// experiment.js: the experiment panel. One worker (../train-worker.js, its own instance) trains a
// fresh tiny model per (form, task) cell with the same budget, and the table fills in as cells finish.
import { LIMITS } from '../state.js';
import { download, toCsv } from './export.js';
import { BATCH, EXPERIMENT, README_EXPERIMENT, SIZES, modelConfig, taskOptions } from '../../lab/tasks.js';
import { startWorker } from '../worker-page.js';

const pct = (x) => `${(100 * x).toFixed(1)}%`;

/** The note beside the budget control: which budgets are too small to show the claim, in words. */
export function budgetNote(budget, claim = EXPERIMENT.claim) {
  const few = claim.tooFew.join(' and ');
  return claim.tooFew.includes(budget)
    ? `${budget} steps: too few for softmax to find recall, so every form stays near 50% (a guess between the two `
      + `values) and the table shows no claim; the claim shows from ${claim.from} steps.`
    : `${budget} steps: enough for softmax to learn recall here, so the forms separate (${few} steps are too few; `
      + `the claim shows from ${claim.from} steps).`;
}

/**
 * What a finished run can say: results [{ form, task, accuracy }] of `steps` steps each. Returns
 * { separable, text }: separable is false when softmax's recall is under claim.threshold (no form
 * has learned the lookup, so the table cannot tell the forms apart); null when softmax's recall is
 * not among the results.
 */
export function claimVerdict(results, steps, claim = EXPERIMENT.claim) {
  const r = results.find((x) => x.form === claim.form && x.task === claim.task);
  if (!r) return { separable: null, text: '' };
  if (r.accuracy < claim.threshold) {
    return {
      separable: false,
      text: `These results cannot separate the forms: softmax reached only ${pct(r.accuracy)} on ${claim.task}, under `
        + `the ${pct(claim.threshold)} this panel needs (50% is a guess between the two values), so no form has learned `
        + `the lookup yet and the differences in the ${claim.task} column are noise. ${steps} steps are too few; choose `
        + `${claim.from} or more steps per run and run again.`,
    };
  }
  return {
    separable: true,
    text: `Softmax learned ${claim.task} (${pct(r.accuracy)}, at least ${pct(claim.threshold)}), so the ${claim.task} `
      + 'column can separate the forms: a form far below softmax there did not find the key by its content.',
  };
}

/**
 * el: { panel, form, budget, budgetNote?, verdict?, run, stop, progress, status, table, readout, compare, csv }; the panel gets data-done = '1'
 * when every cell has its result. charsVocab: lib.charsTokenizer.vocab.
 */
export function createExperimentView(el, { onChange, charsVocab }) {
  el.budget.replaceChildren(...LIMITS.budgets.map((b) => new Option(String(b), String(b))));
  el.budget.addEventListener('change', () => onChange({ ebudget: Number(el.budget.value) }));
  const say = (node, text) => {
    if (!node) return;
    node.textContent = text;
    node.hidden = !text;
  };
  // This table and docs/experiments.md's come from different setups: say which, where the numbers stand.
  const size = SIZES[EXPERIMENT.size];
  const recall = EXPERIMENT.tasks.find((t) => t.task === 'recall');
  const r = README_EXPERIMENT;
  const doc = document.createElement('a');
  doc.href = new URL('../../docs/experiments.md', import.meta.url).href; // served at /docs/ (scripts/serve.js)
  doc.textContent = 'docs/experiments.md';
  el.compare.replaceChildren('Why the table in ', doc, ' differs: there (npm run experiment) each model has ' + `${r.model} and `
    + `trains ${r.steps} steps of ${r.batch} examples on recall with ${r.recallPairs} pairs (reverse of length `
    + `${r.reverseLength}); here each has d = ${size.dModel}, ${size.heads} heads, ${size.layers} layers and trains the `
    + `steps chosen above, in batches of ${BATCH}, on recall with ${recall.mlen} pairs. With ${r.recallPairs} pairs to tell apart, `
    + `linear attention stops at ${r.linearRecall} there; with ${recall.mlen} its φ(q)·φ(k), which compares content `
    + 'but less sharply than softmax, is often enough, so it can score far higher here. Both are true: recall gets '
    + 'harder with every pair added, and most of all for forms without a sharp token-to-token comparison.');
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
            + `held-out loss ${(c.loss / Math.LN2).toFixed(3)} bits per token, trained ${c.steps} steps in ${(c.ms / 1000).toFixed(1)} s `
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
    const rows = [['form', 'task', 'length', 'steps', 'batch', 'held_out_accuracy', 'held_out_bits_per_token', 'seconds', 'ms_per_step']];
    runs.forEach((r, i) => {
      const c = cells[i];
      if (!c?.done) return;
      rows.push([r.form, r.task.task, r.task.length, c.steps, BATCH, c.accuracy.toFixed(4), (c.loss / Math.LN2).toFixed(4),
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
      worker = startWorker(new URL('../train-worker.js', import.meta.url));
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
          config: modelConfig({ task: t.task, msize: EXPERIMENT.size, form: f.arch ? 'softmax' : f.id, march: f.arch }, charsVocab),
        });
      }
    }
    cells = [];
    say(el.verdict, '');
    delete el.panel.dataset.separable;
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
      // Whether these numbers can show the claim at all, in words beside them.
      const verdict = claimVerdict(runs.map((r, i) => ({ form: r.form, task: r.task.task, accuracy: cells[i]?.accuracy }))
        .filter((x) => x.accuracy !== undefined), cells.find((c) => c?.done)?.steps ?? state.ebudget);
      say(el.verdict, verdict.text);
      if (verdict.separable === null) delete el.panel.dataset.separable;
      else el.panel.dataset.separable = verdict.separable ? '1' : '0';
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
      say(el.budgetNote, budgetNote(state.ebudget));
      // the attention forms, then the RNN baselines (the model's GRU encoder-decoders)
      const next = [...allForms.filter((f) => EXPERIMENT.forms.includes(f.id)), ...EXPERIMENT.rnns];
      if (next.map((f) => f.id).join() !== forms.map((f) => f.id).join()) {
        forms = next;
        drawTable();
      }
    },
  };
}
