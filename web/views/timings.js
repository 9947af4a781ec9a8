// timings.js: the timings panel. It asks the worker (../worker.js) to time each chosen form at each
// n from the smallest to the largest power of two, and draws the medians on log-log axes as they come.
import { LIMITS } from '../state.js';
import { drawChart, legendSwatch, logLogSlope, seriesStyle } from './chart.js';
import { download, toCsv } from './export.js';
import { startWorker } from '../worker-page.js';

const SLOPE_POINTS = 3; // the legend's slope is fitted over the 3 largest sizes measured

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * The slope over the SLOPE_POINTS largest sizes, from the per-size medians over rounds, and its
 * uncertainty: the standard error of the slopes fitted to each round on its own (sd / sqrt(rounds)),
 * NaN with fewer than two complete rounds. byN: Map n -> [ms of each round].
 */
export function slopeWithError(byN) {
  const ns = [...byN.keys()].sort((a, b) => a - b).slice(-SLOPE_POINTS);
  const slope = logLogSlope(ns.map((n) => [n, median(byN.get(n))]));
  const rounds = Math.min(...ns.map((n) => byN.get(n).length));
  const perRound = [];
  for (let r = 0; r < rounds && ns.length >= 2; r++) perRound.push(logLogSlope(ns.map((n) => [n, byN.get(n)[r]])));
  let error = NaN;
  if (perRound.length >= 2) {
    const mean = perRound.reduce((a, b) => a + b, 0) / perRound.length;
    const sd = Math.sqrt(perRound.reduce((a, b) => a + (b - mean) ** 2, 0) / (perRound.length - 1));
    error = sd / Math.sqrt(perRound.length);
  }
  return { slope, error, rounds: perRound.length };
}

export const THREAD_HINT_BELOW = 1.1; // a threaded run less than this much faster than one thread gets a hint

/**
 * The one-line hint beside a "1 thread vs every core" result whose threaded run is not faster:
 * ratio = 1-thread time / threaded time (the smallest over the forms), cores =
 * navigator.hardwareConcurrency, threads = the threads the build runs, n = the size the ratio is
 * from. '' when the threads did pay off (ratio >= THREAD_HINT_BELOW) or there is no ratio.
 */
export function threadHint(ratio, { cores, threads, n } = {}) {
  if (!Number.isFinite(ratio) || ratio >= THREAD_HINT_BELOW) return '';
  const coreText = cores ? `${cores} core${cores === 1 ? '' : 's'}` : 'an unknown number of cores';
  return `Why ${threads ?? 'several'} threads are not faster here (${ratio.toFixed(2)}× one thread): this device reports `
    + `${coreText} and ${threads ?? 'several'} thread${threads === 1 ? ' was' : 's were'} asked for; the machine's other `
    + 'work (other tabs, programs, this page\'s other workers) competes for those cores, and a small call'
    + `${n ? ` (n = ${n})` : ''} is dominated by handing the work to the threads and collecting it. `
    + 'Run again on an idle machine, with a larger n, to see the threads pay off.';
}

function fillSelect(select, values) {
  select.replaceChildren(...values.map((v) => new Option(String(v), String(v))));
}

function fmtMs(ms) {
  return ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toPrecision(2);
}

/**
 * el: { panel, form, build, tmin, tmax, td, trounds, tforms, run, stop, progress, status, hint?, chart, legend, table, csv }
 * (hint: the line that says why a threaded run was not faster, see threadHint)
 * (panel gets data-running and data-done = '1' when a run has finished).
 * onChange(patch) reports edited settings; onError(message) shows a failure.
 */
export function createTimingsView(el, { onChange, onError }) {
  fillSelect(el.tmin, LIMITS.timingSizes);
  fillSelect(el.tmax, LIMITS.timingSizes);
  fillSelect(el.td, LIMITS.timingDims);
  fillSelect(el.trounds, LIMITS.timingRounds);
  let state = null;
  let forms = [];
  let worker = null;
  let runId = 0;
  let results = new Map(); // series key (form id, or form@build when both builds run) -> Map n -> [ms per round]
  let labels = new Map(); // form id -> label
  let skipped = [];
  let runD = 0; // d and build of the run the results come from
  let runBuild = '';

  el.build.addEventListener('change', () => onChange({ build: el.build.value }));
  el.tmin.addEventListener('change', () => onChange({ tmin: Number(el.tmin.value) }));
  el.tmax.addEventListener('change', () => onChange({ tmax: Number(el.tmax.value) }));
  el.td.addEventListener('change', () => onChange({ td: Number(el.td.value) }));
  el.trounds.addEventListener('change', () => onChange({ trounds: Number(el.trounds.value) }));
  // the fold's summary names the forms chosen, so the list can stay closed
  const chosenText = el.tforms.closest('details')?.querySelector('#tforms-chosen');
  function sayChosen() {
    if (!chosenText) return;
    const boxes = [...el.tforms.querySelectorAll('input')];
    const chosen = boxes.filter((b) => b.checked).map((b) => labels.get(b.value) ?? b.value);
    chosenText.textContent = chosen.length === boxes.length ? `all ${boxes.length}` : chosen.length ? chosen.join('; ') : 'none';
  }
  el.tforms.addEventListener('change', () => {
    sayChosen();
    const boxes = [...el.tforms.querySelectorAll('input')];
    const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
    onChange({ tforms: chosen.length === boxes.length ? 'all' : chosen.join(',') });
  });
  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    start();
  });
  el.stop.addEventListener('click', () => stop('Stopped.'));
  // CSV: every round's time, so the spread and the slopes can be checked elsewhere.
  el.csv.addEventListener('click', () => {
    const rows = [['form', 'build', 'n', 'd', 'round', 'ms']];
    for (const [key, byN] of results) {
      const [form, build = runBuild] = key.split('@');
      for (const [n, ms] of [...byN].sort((a, b) => a[0] - b[0])) {
        ms.forEach((t, r) => rows.push([form, build, n, runD, r + 1, t.toPrecision(6)]));
      }
    }
    download('timings.csv', new Blob([toCsv(rows)], { type: 'text/csv' }));
  });

  function chosenForms() {
    if (state.tforms === 'all') return forms.map((f) => f.id);
    const wanted = state.tforms.split(',');
    return forms.map((f) => f.id).filter((id) => wanted.includes(id));
  }

  function sizes() {
    return LIMITS.timingSizes.filter((n) => n >= state.tmin && n <= state.tmax);
  }

  const BUILD_NAMES = { simd: 'SIMD', scalar: 'scalar', auto: 'auto', threads: 'threads', relaxed: 'relaxed SIMD' };
  // settings that measure two builds side by side: [solid, dashed]
  const PAIRS = { both: ['simd', 'scalar'], threadsvs: ['simd', 'threads'], relaxedvs: ['relaxed', 'simd'] };
  let both = false; // the current run measures two builds
  const formOf = (key) => key.split('@')[0];
  const labelOf = (key) => {
    const [form, build] = key.split('@');
    return `${labels.get(form) ?? form}${build ? ` (${BUILD_NAMES[build]})` : ''}`;
  };

  // Each point: [n, median over rounds, fastest round, slowest round].
  const pointsOf = (id) => [...results.get(id)].sort((a, b) => a[0] - b[0])
    .map(([n, ms]) => [n, median(ms), Math.min(...ms), Math.max(...ms)]);

  function redraw() {
    const ids = [...results.keys()];
    // The forms measured take the palette's first colours and markers in the forms' order (Okabe-Ito:
    // blue, vermilion, green, ..., each with its own marker), so three forms never draw as three
    // shades of one hue; with both builds, SIMD is solid and scalar dashed.
    const order = forms.map((f) => f.id);
    const shown = [...new Set(ids.map(formOf))].sort((a, b) => order.indexOf(a) - order.indexOf(b));
    const series = ids.map((id) => {
      const style = seriesStyle(shown.indexOf(formOf(id)));
      if (both && (id.endsWith('@scalar') || id.endsWith('@threads'))) style.dash = [6, 3];
      return { id, label: labelOf(id), points: pointsOf(id), ...style };
    });
    drawChart(el.chart, {
      series, xLabel: 'sequence length n', yLabel: 'time per call (ms)',
      guides: [{ label: '∝ n', slope: 1 }, { label: '∝ n²', slope: 2 }],
    });
    el.legend.replaceChildren(...series.map((s) => {
      const li = document.createElement('li');
      const { slope, error, rounds } = slopeWithError(results.get(s.id));
      const text = !Number.isFinite(slope) ? '' : `: slope ${slope.toFixed(2)}`
        + (Number.isFinite(error) ? ` ± ${error.toFixed(2)}` : '');
      li.append(legendSwatch(s), `${s.label}${text}`);
      if (Number.isFinite(error)) li.title = `± one standard error of the slopes fitted to each of ${rounds} rounds`;
      return li;
    }));
    const ns = [...new Set(ids.flatMap((id) => [...results.get(id).keys()]))].sort((a, b) => a - b);
    const head = document.createElement('tr');
    head.append(...['n', ...ids.map((id) => `${labelOf(id)}, ms`)].map((t) => {
      const th = document.createElement('th');
      th.textContent = t;
      th.scope = 'col';
      return th;
    }));
    const rows = ns.map((n) => {
      const tr = document.createElement('tr');
      tr.append(...[String(n), ...ids.map((id) => {
        const ms = results.get(id).get(n);
        return ms ? fmtMs(median(ms)) : '–';
      })].map((t) => {
        const td = document.createElement('td');
        td.textContent = t;
        return td;
      }));
      return tr;
    });
    el.table.replaceChildren(head, ...rows);
  }

  function setRunning(running) {
    el.run.disabled = running;
    el.stop.disabled = !running;
    el.panel.dataset.running = running ? '1' : '0';
  }

  function stop(message) {
    if (worker) worker.terminate();
    worker = null;
    runId++;
    setRunning(false);
    el.progress.value = 0; // nothing runs any more
    el.status.textContent = message;
  }

  function start() {
    const ids = chosenForms();
    const ns = sizes();
    if (ids.length === 0) {
      el.status.textContent = 'Choose at least one form to time.';
      return;
    }
    if (!worker) {
      worker = startWorker(new URL('../worker.js', import.meta.url));
      worker.onerror = (e) => {
        const message = `The timing worker failed: ${e.message || 'it could not load'}`;
        stop(message);
        onError(message);
      };
      worker.onmessage = (e) => receive(e.data);
    }
    runId++;
    results = new Map();
    setHint('');
    el.csv.disabled = true;
    skipped = [];
    el.panel.dataset.done = '0';
    redraw();
    setRunning(true);
    el.progress.value = 0;
    el.status.textContent = `Loading the ${state.build} build in the worker…`;
    both = state.build in PAIRS;
    runD = state.td;
    runBuild = state.build;
    const builds = PAIRS[state.build] ?? [state.build];
    worker.postMessage({ type: 'run', id: runId, builds, forms: ids, sizes: ns, d: state.td, rounds: state.trounds });
  }

  // Series key of a worker message: the form, plus the build when both run.
  const keyOf = (msg) => (both ? `${msg.form}@${msg.build}` : msg.form);

  // The slower build's time / the faster's per form at the largest n both measured: scalar / SIMD,
  // or one thread / every thread.
  let worst = null; // the smallest ratio of the last ratios() and its n
  function ratios() {
    const [fast, slow] = runBuild === 'threadsvs' ? ['threads', 'simd'] : runBuild === 'relaxedvs' ? ['relaxed', 'simd'] : ['simd', 'scalar'];
    const parts = [];
    worst = null;
    for (const form of new Set([...results.keys()].map(formOf))) {
      const a = results.get(`${form}@${fast}`) ?? new Map(), b = results.get(`${form}@${slow}`) ?? new Map();
      const common = [...a.keys()].filter((n) => b.has(n));
      if (!common.length) continue;
      const n = Math.max(...common);
      const r = median(b.get(n)) / median(a.get(n));
      parts.push(`${labels.get(form) ?? form} ${r.toFixed(2)}× at n = ${n}`);
      if (Number.isFinite(r) && (!worst || r < worst.ratio)) worst = { ratio: r, n };
    }
    const what = runBuild === 'threadsvs' ? `1-thread time / ${threadCount}-thread time`
      : runBuild === 'relaxedvs' ? 'SIMD128 time / relaxed-SIMD time' : 'Scalar time / SIMD time';
    return parts.length ? `${what}: ${parts.join('; ')}.` : '';
  }
  let threadCount = 1;

  function setHint(text) {
    if (!el.hint) return;
    el.hint.textContent = text;
    el.hint.hidden = !text;
  }

  let buildText = '';
  function receive(msg) {
    if (msg.id !== runId) return;
    if (msg.type === 'loaded') {
      const th = msg.builds.find((b) => b.build === 'threads');
      threadCount = th?.threads ?? 1;
      const threadsText = th ? (th.threads > 1 ? `${th.threads} threads (attention-threads.wasm)`
        : `one thread only: ${th.threadsReason}`) : '';
      const rx = msg.builds.find((b) => b.build === 'relaxed');
      buildText = msg.builds.length > 1 ? (th ? `SIMD build on 1 thread and on ${threadsText}, side by side`
        : rx ? 'SIMD128 and relaxed-SIMD builds, side by side' : 'SIMD and scalar builds, side by side')
        : th ? `threaded build, ${threadsText}`
          : msg.builds[0].relaxed ? 'relaxed-SIMD build (attention-relaxed.wasm, lib.relaxed = true: fused multiply-add)'
          : msg.builds[0].simd ? 'SIMD build (attention.wasm, lib.simd = true)'
            : 'scalar build (attention-scalar.wasm, lib.simd = false)';
      for (const f of msg.forms) labels.set(f.id, f.label);
    } else if (msg.type === 'progress') {
      el.progress.max = msg.total;
      el.progress.value = msg.done;
      el.status.textContent = msg.form
        ? `Running the ${buildText}: round ${msg.round + 1} of ${state.trounds}, ${labelOf(keyOf(msg))} at n = ${msg.n} `
          + `(${msg.done + 1} of ${msg.total})…`
        : `Running the ${buildText}: ${msg.done} of ${msg.total} measured.`;
    } else if (msg.type === 'result') {
      const key = keyOf(msg);
      if (!results.has(key)) results.set(key, new Map());
      const byN = results.get(key);
      if (!byN.has(msg.n)) byN.set(msg.n, []);
      byN.get(msg.n).push(msg.ms);
      el.csv.disabled = false;
      redraw();
    } else if (msg.type === 'skipped') {
      skipped.push(`${labelOf(keyOf(msg))} at n = ${msg.n}: ${msg.reason}`);
    } else if (msg.type === 'done') {
      setRunning(false);
      el.panel.dataset.done = '1';
      const count = [...results.values()].reduce((a, r) => a + r.size, 0);
      el.status.textContent = `Done: ${count} measurements with the ${buildText}, d = ${state.td}, `
        + `median of ${state.trounds} round${state.trounds === 1 ? '' : 's'}.`
        + (both ? ` ${ratios()}` : '') + (skipped.length ? ` Skipped: ${skipped.join('; ')}.` : '');
      setHint(runBuild === 'threadsvs' && worst
        ? threadHint(worst.ratio, { cores: navigator.hardwareConcurrency, threads: threadCount, n: worst.n }) : '');
      el.panel.dataset.threadRatio = runBuild === 'threadsvs' && worst ? String(worst.ratio) : '';
    } else if (msg.type === 'error') {
      stop(`Timing failed: ${msg.message}`);
      onError(`Timing failed: ${msg.message}`);
    }
  }

  return {
    update(newState, newForms) {
      state = newState;
      const key = newForms.map((f) => f.id).join();
      if (key !== forms.map((f) => f.id).join()) {
        forms = newForms;
        for (const f of forms) labels.set(f.id, f.label);
        el.tforms.replaceChildren(...forms.map((f) => {
          const label = document.createElement('label');
          const box = document.createElement('input');
          box.type = 'checkbox';
          box.value = f.id;
          label.append(box, ` ${f.label}`);
          return label;
        }));
      }
      const wanted = chosenForms();
      for (const box of el.tforms.querySelectorAll('input')) box.checked = wanted.includes(box.value);
      sayChosen();
      el.build.value = state.build;
      el.tmin.value = String(state.tmin);
      el.tmax.value = String(state.tmax);
      el.td.value = String(state.td);
      el.trounds.value = String(state.trounds);
      if (!worker && results.size === 0) redraw();
    },
    resize: redraw,
  };
}
