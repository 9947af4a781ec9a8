// circuits.js (view): "What does this head do?". On the trained model of "A trained model on your
// text" and its text read twice, the heads are tested by intervention (lab/circuits.js, run in
// web/circuits-worker.js): what zero- and mean-ablating each head costs on each copy, what patching
// the clean run into a corrupted one restores (by layer and position, and by head), the logit lens
// (each layer's guess), and for a picked head its pattern beside the characters its output promotes
// (direct logit attribution), and from the weights alone which earlier heads each head reads through its
// keys, queries or values (composition scores). Layers and heads are labelled from 1 here; the API counts from 0.
// Patching is drawn at once as an estimate (attributionPatching: one backward pass), then its largest
// cells are patched exactly, framed as they come, and a sentence says how well the two agree. A
// new model or text clears what was drawn; Cancel stops the worker at its next pass.
import { createHeatmapView } from './heatmap.js';
import { viridisCss } from './colormap.js';
import { corruptFirstCopy, corruptFirstCopyIds } from '../../lab/circuits.js';
import { modelCatalog } from './learned.js';
import { phrasePeriod, phraseTwice, scoreHead, nameHead } from '../../lab/heads.js';
import { charsCodec, entryCodec } from '../../lab/codec.js';
import { onOpened, openedCodec, openedModel } from '../opened.js';
import { hostChannel } from '../host.js';
import { fetchOnce } from '../fetch-once.js';

const SHOWN = 64; // tokens at most: the learned panel's
const MODELS = new URL('../models/', import.meta.url);
const headName = (l, h) => `L${l + 1} H${h + 1}`;
const OPENED = 'opened'; // the picker's value for the model open in "Open a model file" (opened.js)
// what a head promotes is searched over at most this many tokens of an opened model's vocabulary
// (one headAttribution call per token: a 50,000-token vocabulary would take minutes)
const seconds = (ms) => (ms < 1000 ? `${Math.max(1, Math.round(ms))} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`);

// A diverging colour for x in [-1, 1]: blue below 0, white at 0, red above.
function diverging(x) {
  const t = Math.max(-1, Math.min(1, x));
  const a = Math.round(255 * (1 - Math.abs(t)));
  return t >= 0 ? `rgb(255, ${a}, ${a})` : `rgb(${a}, ${a}, 255)`;
}

function cell(tag, text, title, className) {
  const c = document.createElement(tag);
  if (className) c.className = className;
  c.textContent = text;
  if (title) c.title = title;
  return c;
}

/**
 * el: { panel, model, modelField, about, texts, status, progress, mode, grid, table, pattern, patternLegend,
 *   patternReadout, promoted, headTitle, resid, z, lens, claim, compKind, compClaim, comp, steerLayer, steerPlus,
 *   steerMinus, steerStrength, steerStrengthOut, steer }
 * ctx: { lib }. The panel gets data-state: 'running' | 'ready' | 'cancelled' |
 * 'none' | 'error', data-file, data-result (JSON of the ablation rows and patching grids), data-composition
 * ('pending' | 'k' | 'q' | 'v' | 'none'), data-steer ('running' | 'ready' | 'error'), data-estimate
 * ('ready' | 'none': no estimate, e.g. a quantized model), data-exact (cells patched exactly so far) and
 * data-agreement (JSON: per grid, lab/circuits.js agreement() of the estimate with the exact cells).
 */
export function createCircuitsView(el, { lib }) {
  let worker = null;
  let id = 0;
  let result = null;
  let codec = charsCodec(lib); // the shown model's tokens (lab/codec.js): characters, or a BPE's pieces
  let picked = null; // { layer, head }
  let sortBy = { key: 'zero2', dir: -1 };
  let form = null;
  let text = '';
  const chosen = new Map(); // form id -> file
  let pending = 0; // the timer of a run waiting for typing to pause
  let shown = null; // the opened model's key when the result drawn is its
  let patch = null; // the patching grids drawn: the worker's estimate, then its exact cells as they come
  let cells = new Map(); // 'grid,layer,index' -> the <td> of that cell, to frame an exact value in place
  // Cancel: shown while a run is under way; the worker stops at its next pass, what was drawn stays
  const cancel = cell('button', 'Cancel', 'Stop the interventions; what is drawn stays');
  cancel.type = 'button';
  cancel.id = 'hdcancel';
  cancel.hidden = true;
  el.progress.after(cancel);
  cancel.addEventListener('click', () => {
    worker?.postMessage({ type: 'cancel', id });
    ++id; // what the worker still posts for it is dropped
    cancel.hidden = true;
    el.panel.dataset.state = 'cancelled';
    const done = Number(el.panel.dataset.exact ?? 0);
    el.status.textContent = patch
      ? `Stopped. ${patch.estimate ? 'The estimate of every cell is drawn under Patching' : 'No estimate'}; ${done} `
        + `cell${done === 1 ? ' was' : 's were'} patched exactly before the stop${result ? '' : ', and the heads were not ablated'}. `
        + 'Change the text or the model to run again.'
      : 'Stopped before anything was measured. Change the text or the model to run again.';
  });

  const heatmap = createHeatmapView({ grid: el.pattern, legend: el.patternLegend, readout: el.patternReadout, name: 'head-pattern',
    onCursor: ([i]) => showPromoted(i) });

  function ensureWorker() {
    if (!worker) {
      worker = hostChannel('circuits'); // a task of the model host (host.js), which also holds an opened model
      worker.onmessage = (e) => receive(e.data);
      worker.onerror = (e) => fail(e.message || 'the worker failed to start');
    }
    return worker;
  }

  function fail(message) {
    cancel.hidden = true;
    el.panel.dataset.state = 'error';
    el.status.textContent = `Could not run: ${message}`;
  }

  // The form's shipped models: those that read fortunes (real text) when it has any, else the
  // character model trained on the project's own prose (data/chars.txt), named as such in the status.
  const optionsOf = (list) => {
    const mine = list.filter((e) => e.attention === form?.id);
    const real = mine.filter((e) => e.source === 'fortunes');
    return real.length ? real : mine.filter((e) => e.source === 'corpus');
  };
  let about = ''; // one sentence on the model the grids are of: which model, and what it read
  const aboutEntry = (e) => (e.source === 'fortunes'
    ? `${e.file.replace(/\.safetensors$/, '')}, a model of ${form.label} that read fortunes (real English text)`
    : `${e.file.replace(/\.safetensors$/, '')}, a character model of ${form.label} trained on this project's 28 KB of English `
      + 'prose (data/chars.txt, the chars task): no model of this form here has read fortunes');
  // The form's model: the one picked, else the one with induction heads, else the first.
  function pick(list) {
    const options = optionsOf(list);
    return options.find((e) => e.file === chosen.get(form?.id))
      ?? options.find((e) => e.entry.induction?.score >= 0.3) ?? options[0];
  }

  el.model.addEventListener('change', () => {
    chosen.set(form.id, el.model.value);
    start();
  });
  // a model opened (or another one, or none): the picker offers it; when it was the one picked,
  // the panel runs on the new one (or goes back to the shipped ones)
  onOpened((o) => {
    if (!form) return;
    const charsOnly = lastOptions.length && lastOptions.every((e) => e.source !== 'fortunes') && !chosen.has(form.id);
    if (chosen.get(form.id) === OPENED || shown || !el.model.options.length || charsOnly) start();
    else fillPicker(lastOptions);
  });
  let lastOptions = [];
  // the shipped models of this form, then the opened model; shown when there is a choice
  function fillPicker(options) {
    lastOptions = options;
    const o = openedModel();
    const items = options.map((e) => new Option(e.file.replace(/\.safetensors$/, ''), e.file));
    if (o) items.push(new Option(`Opened: ${o.name}`, OPENED));
    const value = el.model.value;
    el.model.replaceChildren(...items);
    if (items.some((i) => i.value === value)) el.model.value = value;
    el.modelField.hidden = items.length < 2;
  }
  el.mode.addEventListener('change', () => draw());
  el.compKind.addEventListener('change', () => drawComposition());
  let steerId = 0, steerTimer = 0;
  const steerSoon = () => { clearTimeout(steerTimer); steerTimer = setTimeout(requestSteer, 250); };
  for (const c of [el.steerLayer, el.steerPlus, el.steerMinus, el.steerStrength]) c.addEventListener('input', steerSoon);
  el.steerLayer.addEventListener('change', steerSoon);

  // a new run: what was drawn is another model's or text's, so it goes at once
  function clearResults() {
    result = null;
    patch = null;
    cells = new Map();
    ++steerId; // a continuation still coming is the old model's tokens
    clearTimeout(steerTimer);
    for (const e of [el.texts, el.grid, el.table, el.claim, el.resid, el.z, el.lens, el.promoted, el.comp, el.compClaim, el.steer]) e.replaceChildren();
    el.headTitle.textContent = 'The head';
    heatmap.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
    for (const k of ['result', 'estimate', 'exact', 'agreement', 'composition', 'steer', 'estimateAt', 'agreementAt', 'startedAt', 'promoted']) delete el.panel.dataset[k];
    el.panel.dataset.state = 'running';
    el.status.textContent = 'Starting…';
    el.progress.value = 0;
  }

  async function start() {
    clearResults();
    ++id; // a run under way is not this one's: its answers are dropped
    cancel.hidden = true;
    const list = await modelCatalog();
    const entry = pick(list);
    const options = optionsOf(list);
    fillPicker(options);
    const o = openedModel();
    // the opened model when picked, or when this form has no shipped model that read real text (and
    // its character model was not picked)
    if (o && (chosen.get(form.id) === OPENED || !entry || (entry.source !== 'fortunes' && !chosen.has(form.id)))) {
      el.model.value = OPENED;
      startOpened(o);
      return;
    }
    if (!entry) {
      ++id; // a run still under way is not this form's: its answer is dropped
      result = null;
      el.panel.dataset.state = 'none'; // style.css hides the grids below the status: they would be another form's
      el.status.textContent = `No model of ${form.label} is shipped with this page (none has read any text), so there `
        + 'are no heads to test: pick another form in Settings, or open a model in Open a model file.';
      return;
    }
    el.model.value = entry.file;
    shown = null;
    about = aboutEntry(entry);
    const request = ++id;
    let c;
    try {
      c = await entryCodec(lib, entry.entry, MODELS, fetchOnce);
    } catch (e) {
      fail(e.message);
      return;
    }
    if (request !== id) return;
    codec = c;
    // the text: the learned panel's, as a phrase read twice (the copies' losses need the repeat), and
    // its corrupted twin of the same length in tokens: a character model's first copy with its letters
    // shifted, a sub-word model's with each merged piece swapped for another
    let twice, ids, bad, period, corrupt;
    if (codec.kind === 'bpe') {
      ({ twice, ids, period, bad, corrupt } = await pieces(codec, entry.length));
      if (request !== id) return;
    } else {
      const chars = [...text.toLowerCase()].slice(0, SHOWN);
      twice = phrasePeriod(chars) ? chars.join('') : phraseTwice(text.toLowerCase(), Math.min(SHOWN, entry.length));
      period = phrasePeriod([...twice]);
      corrupt = corruptFirstCopy(twice, period);
      ids = lib.charsTokenizer.encode(twice);
      bad = lib.charsTokenizer.encode(corrupt);
    }
    el.texts.replaceChildren(
      cell('span', 'Clean: '), cell('code', twice), document.createElement('br'),
      cell('span', codec.kind === 'bpe' ? 'Corrupted (the first copy\'s pieces swapped for others): '
        : 'Corrupted (the first copy\'s letters shifted): '), cell('code', corrupt));
    el.panel.dataset.state = 'running';
    el.panel.dataset.file = entry.file;
    el.status.textContent = `Testing the heads of ${about}…`;
    el.progress.value = 0;
    cancel.hidden = false;
    ensureWorker().postMessage({ type: 'run', id: request, file: entry.file, ids: Array.from(ids), bad: Array.from(bad), period,
      probe: Array.from(codec.probe()), limit: codec.vocab });
  }

  // the text as a phrase read twice in a sub-word codec's tokens (at most `length`), and its
  // corrupted twin: each merged piece of the first copy swapped for another
  // (an opened model's codec answers from the host: every call is awaited)
  async function pieces(c, length) {
    const enc = (await c.encode(text)).ids;
    const twice = c.period(enc) && enc.length <= length ? text : await c.twice(text, Math.min(SHOWN, length));
    const ids = (await c.encode(twice)).ids;
    const period = c.period(ids);
    const bad = corruptFirstCopyIds(ids, period, { from: c.vocab > 259 + 7 ? 259 : 3, vocab: c.vocab });
    return { twice, ids, period, bad, corrupt: await c.tokenizer.decode(bad) };
  }

  // The model open in "Open a model file": the host holds it (its task finds it by its key), and the
  // text is read with its own tokenizer there.
  async function startOpened(o) {
    const request = ++id;
    const w = ensureWorker();
    let c, t;
    try {
      c = openedCodec(o);
      t = await pieces(c, Math.min(SHOWN, o.config.maxLen));
      if (!t.period) throw new Error(`its tokenizer does not read "${text.slice(0, 40)}" as a phrase read twice`);
    } catch (e) {
      if (request === id) fail(e.message);
      return;
    }
    if (request !== id) return;
    codec = c;
    shown = o.key;
    about = `${o.name}, the model open in Open a model file`;
    el.texts.replaceChildren(
      cell('span', 'Clean: '), cell('code', t.twice), document.createElement('br'),
      cell('span', 'Corrupted (the first copy\'s tokens swapped for others): '), cell('code', t.corrupt));
    el.panel.dataset.state = 'running';
    el.panel.dataset.file = o.key;
    el.panel.dataset.startedAt = String(performance.now()); // when the run on the opened model began (the page-models bench reads it)
    el.status.textContent = `Testing the heads of ${o.name} (${o.config.layers} layers x ${o.config.heads} heads)…`;
    el.progress.value = 0;
    cancel.hidden = false;
    w.postMessage({ type: 'run', id: request, file: o.key, ids: Array.from(t.ids), bad: Array.from(t.bad), period: t.period,
      probe: Array.from(c.probe()), limit: c.vocab });
  }

  function receive(msg) {
    if (msg.type === 'steered' || msg.type === 'steer-error') {
      if (msg.id === steerId) drawSteer(msg);
      return;
    }
    if (msg.id !== id) return; // an older request's
    if (msg.type === 'progress' && msg.stage === 'promoted') { // after the result: in the promoted box, the status stays
      if (result && !result.promoted) el.promoted.replaceChildren(cell('p', `${progressText(msg)}, about ${seconds(msg.msLeft ?? 0)} left…`));
      return;
    }
    if (msg.type === 'progress') {
      el.progress.value = { exact: 0.1 + 0.5 * (msg.done / msg.total), ablation: 0.6 + 0.2 * (msg.done / Math.max(1, msg.total)), reading: 0.8 }[msg.stage] ?? el.progress.value;
      const left = msg.msLeft === null ? '' : `, about ${seconds(msg.msLeft)} left`;
      el.status.textContent = `${progressText(msg)}${left}…`;
    } else if (msg.type === 'estimate') {
      patch = { ...msg, agreement: null, exact: { z: Array.from({ length: msg.layers }, () => new Array(msg.heads).fill(null)),
        resid: Array.from({ length: msg.layers }, () => new Array(msg.patchAt + 1).fill(null)) } };
      el.panel.dataset.estimate = msg.estimate ? 'ready' : 'none';
      el.panel.dataset.estimateAt = String(performance.now()); // when (the page-models bench reads it)
      el.panel.dataset.exact = '0';
      el.progress.value = 0.1;
      el.status.textContent = msg.estimate
        ? `Patching estimated for every head and position in ${seconds(msg.ms)} (one backward pass, under Patching below); `
          + `now patching the ${msg.top} likeliest heads and positions exactly…`
        : `No estimate for this model (${msg.why}): patching every head and position for real…`;
      drawPatching();
    } else if (msg.type === 'exact') {
      if (!patch) return;
      patch.exact[msg.grid][msg.layer][msg.index] = msg.value;
      el.panel.dataset.exact = String(msg.done);
      paint(msg.grid, msg.layer, msg.index);
    } else if (msg.type === 'agreement') {
      if (!patch) return;
      Object.assign(patch, { agreement: msg.agreement, ms: msg.ms, runs: msg.runs });
      if (msg.agreement) el.panel.dataset.agreement = JSON.stringify(msg.agreement);
      el.panel.dataset.agreementAt = String(performance.now());
      drawAgreement();
    } else if (msg.type === 'error') {
      cancel.hidden = true;
      fail(msg.message);
    } else if (msg.type === 'promoted') {
      if (!result) return;
      result.promoted = msg.promoted;
      result.searched = msg.searched;
      el.panel.dataset.promoted = 'ready';
      showPromoted(shownRow ?? result.ids.length - 2);
    } else if (msg.type === 'composition') {
      if (!result) return;
      result.composition = msg;
      drawComposition();
    } else if (msg.type === 'result') {
      result = msg;
      cancel.hidden = true;
      el.progress.value = 1;
      // the heads named on this text by their pattern (lab/heads.js)
      const n = msg.ids.length;
      result.names = msg.patterns.map((p) => Array.from({ length: msg.heads }, (_, h) =>
        nameHead(scoreHead(p.subarray(h * n * n, (h + 1) * n * n), msg.ids)).name));
      // a head picked on another model means nothing on this one: the strongest again
      if (!picked || picked.file !== msg.file || picked.layer >= msg.layers || picked.head >= msg.heads) picked = { ...strongest(), file: msg.file };
      el.panel.dataset.state = 'ready';
      el.panel.dataset.result = JSON.stringify({ file: msg.file, clean: msg.ablation.clean, rows: msg.ablation.rows,
        resid: msg.patch.resid, z: msg.patch.z });
      const every = msg.layers * (msg.patchAt + 1 + msg.heads);
      el.status.textContent = `The heads of ${about}. ${msg.layers} layers x ${msg.heads} heads, ${2 * msg.layers * msg.heads} ablations in `
        + `${(msg.ms.ablation / 1000).toFixed(2)} s and ${msg.patch.estimate ? `patching estimated for all ${every} cells in ${seconds(msg.ms.estimate)}, and `
          + `${msg.runs} of them patched exactly in ${seconds(msg.ms.exact)} (all ${every} would take about ${seconds((msg.ms.exact / msg.runs) * every)})`
          : `${every} patched runs in ${(msg.ms.exact / 1000).toFixed(2)} s`}, `
        + `in a worker on this device. Without any change the model reads the `
        + `first copy at ${msg.ablation.clean.first.toFixed(2)} bits per ${codec.unit} and the second at `
        + `${msg.ablation.clean.second.toFixed(2)}.`;
      patch = { ...patch, ...msg.patch, layers: msg.layers, heads: msg.heads, ids: msg.ids, patchAt: msg.patchAt, ms: msg.ms, runs: msg.runs };
      drawPatching();
      drawClaim();
      draw();
      el.panel.dataset.composition = 'pending';
      el.compClaim.textContent = 'Computing the composition scores from the weights…';
      el.comp.replaceChildren();
      fillSteer();
      requestSteer();
    }
  }

  // Olsson et al. 2022's ablation argument, on this text: the probe's induction heads off together
  function drawClaim() {
    const { claim, ablation: { clean } } = result;
    if (!claim.heads.length) {
      el.claim.textContent = `No head of this model is an induction head on the standard probe (random ${codec.kind === 'bpe' ? 'pieces' : 'letters'} read twice), `
        + 'so there is no copying circuit to switch off: compare the cost of each head on the two copies below.';
      return;
    }
    const names = claim.heads.map((h) => headName(h.layer, h.head)).join(', ');
    const d = (k, c) => claim[k][c] - clean[c];
    const f = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;
    el.claim.textContent = `The probe names ${claim.heads.length === 1 ? 'one induction head' : `${claim.heads.length} induction heads`} `
      + `(${names}). Switched off together, the second copy costs ${f(d('zero', 'second'))} bits per ${codec.unit} (zero) and `
      + `${f(d('mean', 'second'))} (mean), the first copy ${f(d('zero', 'first'))} and ${f(d('mean', 'first'))}: `
      + `${d('mean', 'second') > 4 * Math.abs(d('mean', 'first')) ? 'the model needs them to copy, and barely to read.' : 'on this text the difference is not clear-cut.'}`;
  }

  // The head whose zero-ablation costs the second copy most.
  function strongest() {
    const rows = result.ablation.rows.filter((r) => r.mode === 'zero');
    const top = rows.reduce((a, b) => (b.second > a.second ? b : a));
    return { layer: top.layer, head: top.head };
  }

  function draw() {
    if (!result) return;
    drawGrid();
    drawTable();
    drawHead();
    drawLens();
  }

  // layers x heads, coloured by the cost on the second copy of the mode chosen
  function drawGrid() {
    const mode = el.mode.value;
    const rows = result.ablation.rows.filter((r) => r.mode === mode);
    const max = Math.max(1e-9, ...rows.map((r) => Math.abs(r.second)), ...rows.map((r) => Math.abs(r.first)));
    const table = document.createElement('table');
    // many heads (an opened model's 12): narrower cells, the first copy's number without its "1st"
    const many = result.heads > 6;
    table.className = many ? 'grid-table many' : 'grid-table';
    const head = document.createElement('tr');
    head.append(cell('th', ''), ...Array.from({ length: result.heads }, (_, h) => cell('th', `head ${h + 1}`)));
    table.append(head);
    for (let l = 0; l < result.layers; l++) {
      const tr = document.createElement('tr');
      tr.append(cell('th', `layer ${l + 1}`));
      for (let h = 0; h < result.heads; h++) {
        const r = rows.find((x) => x.layer === l && x.head === h);
        const td = document.createElement('td');
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'grid-cell';
        b.style.background = diverging(r.second / max);
        b.append(cell('strong', `${r.second >= 0 ? '+' : ''}${r.second.toFixed(2)}`), cell('small', `${many ? '' : '1st '}${r.first >= 0 ? '+' : ''}${r.first.toFixed(2)}`));
        b.title = `${headName(l, h)} (${result.names[l][h]}), ${mode}-ablated: ${r.second.toFixed(3)} bits per ${codec.unit} on the second copy, `
          + `${r.first.toFixed(3)} on the first. Click to see its pattern and what it promotes.`;
        b.setAttribute('aria-pressed', String(picked.layer === l && picked.head === h));
        b.addEventListener('click', () => {
          picked = { layer: l, head: h, file: result.file };
          draw();
          el.headTitle.closest('details')?.setAttribute('open', ''); // a click on a head opens its fold
        });
        td.append(b);
        tr.append(td);
      }
      table.append(tr);
    }
    el.grid.replaceChildren(table);
  }

  // every head, sortable by any column
  function drawTable() {
    const by = (mode) => new Map(result.ablation.rows.filter((r) => r.mode === mode).map((r) => [`${r.layer},${r.head}`, r]));
    const zero = by('zero'), mean = by('mean');
    const rows = [];
    for (let l = 0; l < result.layers; l++) {
      for (let h = 0; h < result.heads; h++) {
        const k = `${l},${h}`;
        rows.push({ l, h, name: result.names[l][h], zero2: zero.get(k).second, zero1: zero.get(k).first, mean2: mean.get(k).second, mean1: mean.get(k).first });
      }
    }
    const cols = [['head', 'Head'], ['name', 'Pattern'], ['zero2', 'zero: 2nd copy'], ['zero1', 'zero: 1st'], ['mean2', 'mean: 2nd copy'], ['mean1', 'mean: 1st']];
    const key = sortBy.key;
    rows.sort((a, b) => (key === 'head' ? (a.l - b.l || a.h - b.h) : key === 'name' ? a.name.localeCompare(b.name) : a[key] - b[key]) * sortBy.dir);
    const table = document.createElement('table');
    const tr = document.createElement('tr');
    for (const [k, label] of cols) {
      const th = document.createElement('th');
      const b = cell('button', label + (k === key ? (sortBy.dir < 0 ? ' ▾' : ' ▴') : ''));
      b.type = 'button';
      b.className = 'link';
      b.addEventListener('click', () => { sortBy = { key: k, dir: k === key ? -sortBy.dir : -1 }; drawTable(); });
      th.setAttribute('aria-sort', k === key ? (sortBy.dir < 0 ? 'descending' : 'ascending') : 'none');
      th.append(b);
      tr.append(th);
    }
    table.append(tr);
    const fmt = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
    for (const r of rows) {
      const row = document.createElement('tr');
      row.append(cell('td', headName(r.l, r.h)), cell('td', r.name), cell('td', fmt(r.zero2)), cell('td', fmt(r.zero1)),
        cell('td', fmt(r.mean2)), cell('td', fmt(r.mean1)));
      row.dataset.head = `${r.l},${r.h}`;
      table.append(row);
    }
    el.table.replaceChildren(table);
  }

  // the picked head: its pattern, and the characters its output promotes at a row
  function drawHead() {
    const { layer, head } = picked;
    const n = result.ids.length;
    const labels = result.ids.map(codec.label);
    el.headTitle.textContent = `Layer ${layer + 1}, head ${head + 1} (${result.names[layer][head]}): its pattern on the clean text; `
      + 'hover over or tap a row to see what its output adds to the guess there.';
    heatmap.render({ maps: [{ title: headName(layer, head), weights: result.patterns[layer].subarray(head * n * n, (head + 1) * n * n) }],
      n, m: n, rowLabels: labels, colLabels: labels, scale: 'row', form: result.file.startsWith('opened-') ? null : form });
    showPromoted(n - 2);
  }

  let shownRow = null; // the row whose promoted tokens are shown
  function showPromoted(i) {
    if (!result || i === undefined || i < 0 || i >= result.ids.length) return;
    shownRow = i;
    const { layer, head } = picked;
    if (!result.promoted) { // a large model's: searched after the rest (the worker's 'promoted' message)
      el.promoted.replaceChildren(cell('p', `At row ${i} (“${codec.label(result.ids[i])}”): what this head's output raises is being searched…`));
      return;
    }
    const top = result.promoted[layer][head][i];
    const list = document.createElement('ol');
    for (const { token, logit } of top) list.append(cell('li', `“${codec.label(token)}” ${logit >= 0 ? '+' : ''}${logit.toFixed(2)}`));
    const next = result.ids[i + 1];
    el.promoted.replaceChildren(cell('p', `At row ${i} (“${codec.label(result.ids[i])}”), this head's output `
      + 'raises the logits of (direct logit attribution):'), list,
    cell('p', next === undefined ? '' : `The next ${codec.unit} is “${codec.label(next)}”.`),
    cell('p', result.searched ? `(searched over the ${result.searched} tokens that matter here: the text's own and each position's top guesses)` : ''));
  }

  // A layers x columns table of restored fractions: each cell the exact value where there is one
  // (framed), else the estimate; cells are kept by key so an exact value can come in place.
  function heatTable(g, rowLabel, colLabels, title) {
    const table = document.createElement('table');
    table.className = 'heat-table';
    const head = document.createElement('tr');
    head.append(cell('th', ''), ...colLabels.map((c) => cell('th', c)));
    table.append(head);
    patch.exact[g].forEach((row, r) => {
      const tr = document.createElement('tr');
      tr.append(cell('th', rowLabel(r)));
      row.forEach((_, c) => {
        const td = cell('td', '');
        td.dataset.cell = `${r},${c}`;
        cells.set(`${g},${r},${c}`, { td, title: (x, how) => title(r, c, x, how) });
        paint(g, r, c);
        tr.append(td);
      });
      table.append(tr);
    });
    return table;
  }

  // a cell's colour and title: exact (framed) or estimated
  function paint(g, r, c) {
    const { td, title } = cells.get(`${g},${r},${c}`) ?? {};
    if (!td) return;
    const x = patch.exact[g][r][c], e = patch.estimate?.[g][r][c];
    td.dataset.exact = x === null ? '0' : '1';
    td.style.background = x === null && e === undefined ? '' : diverging(x ?? e);
    td.style.boxShadow = x === null ? '' : 'inset 0 0 0 2px #111';
    td.title = x === null
      ? (e === undefined ? title(null, 'not measured yet') : title(e, 'estimated'))
      : title(x, e === undefined ? 'patched exactly' : `patched exactly; estimated ${e.toFixed(3)}`);
  }

  function drawPatching() {
    if (!patch) return;
    cells = new Map();
    const at = patch.patchAt;
    const chars = patch.ids.slice(0, at + 1).map(codec.label);
    const next = codec.label(patch.ids[at + 1]);
    const back = codec.kind === 'bpe' ? 5 : 11;
    const { clean, corrupted } = patch;
    const how = (x, state) => (x === null ? state : `${x.toFixed(3)} (${state})`);
    el.resid.replaceChildren(
      cell('p', `Scored where the corruption hurts most: the guess of “${next}” after “…${chars.slice(Math.max(0, at - back)).join('')}” `
        + `(position ${at}; log-probability ${clean.toFixed(2)} on the clean text, ${corrupted.toFixed(2)} on the corrupted one). `
        + 'Each cell: how much of that gap comes back when one layer\'s input at one position is taken from the clean run '
        + '(1, red: all of it; 0: none). '
        + (patch.estimate ? `Every cell is first estimated from one backward pass (a straight-line guess from the gradient); the ${patch.top} `
          + 'largest estimates are then patched for real: those cells have a dark frame.' : 'Every cell is patched for real.'), undefined, 'note'),
      cell('p', '', undefined, 'note hd-agree-resid'),
      heatTable('resid', (l) => `layer ${l + 1}`, chars, (l, p, x, state) => `layer ${l + 1}, position ${p} (“${chars[p]}”): ${how(x, state)}`));
    el.z.replaceChildren(cell('p', '', undefined, 'claim hd-agree'),
      heatTable('z', (l) => `layer ${l + 1}`, Array.from({ length: patch.heads }, (_, h) => `head ${h + 1}`),
        (l, h, x, state) => `${headName(l, h)}: its output patched from the clean run restores ${how(x, state)}`));
    drawAgreement();
  }

  // In plain words: how well the estimate ranks the cells that real patching finds, per grid.
  function drawAgreement() {
    const say = (a, things) => {
      if (!a) return '';
      const r = a.pearson === null ? null : a.pearson;
      const words = r === null ? 'too few cells, or all alike, to compare their ups and downs'
        : `${r >= 0.9 ? 'they agree closely' : r >= 0.7 ? 'they roughly agree' : r >= 0.4 ? 'they agree only loosely' : 'they disagree'} `
          + `(correlation ${r.toFixed(2)}; 1 would be a perfect match)`;
      const top = a.shared === a.k
        ? `the ${a.k} ${things} the estimate ranks highest are also the ${a.k} that matter most when patched for real`
        : `${a.shared ? `only ${a.shared}` : 'none'} of the estimate's ${a.k} highest ${things} ${a.shared === 1 ? 'is' : 'are'} among the ${a.k} that matter most when patched for real`;
      return `Estimate against real patching, on the ${a.cells} ${things} patched for real${a.cells < a.of ? ` (of ${a.of}; the rest show the estimate only)` : ''}: `
        + `${words}, and ${top}.`;
    };
    const z = el.z.querySelector('.hd-agree'), resid = el.resid.querySelector('.hd-agree-resid');
    if (!z || !resid) return;
    if (!patch.estimate) {
      z.textContent = `No estimate here: ${patch.why}, so every head was patched for real.`;
      resid.textContent = '';
      return;
    }
    z.textContent = patch.agreement ? say(patch.agreement.z, 'heads')
      : `Estimated in ${seconds(patch.ms?.estimate ?? patch.ms)}; the heads with the largest estimates are being patched for real (framed as they finish)…`;
    resid.textContent = patch.agreement ? say(patch.agreement.resid, 'cells') : '';
  }

  function progressText({ stage, done, total }) {
    if (stage === 'exact') return patch?.estimate ? `Patching for real the cells with the largest estimates: ${done} of ${total}` : `Patching: ${done} of ${total} runs`;
    if (stage === 'promoted') return `The grids are drawn; searching what each head promotes: ${done} of ${total} tokens`;
    if (stage === 'ablation' && total > 1) return `Switching each head off in turn, to zero and to its mean: ${done} of ${total} runs`;
    if (stage === 'ablation') return `Switching each of the ${(patch?.layers ?? 0) * (patch?.heads ?? 0)} heads off in turn, to zero and to its mean`;
    return 'Reading each layer\'s guess and what each head promotes';
  }

  function drawLens() {
    const n = result.ids.length;
    const chars = result.ids.map(codec.label);
    const table = document.createElement('table');
    table.className = 'heat-table lens-table';
    const head = document.createElement('tr');
    head.append(cell('th', 'after'), ...chars.map((c) => cell('th', c)));
    table.append(head);
    result.lens.forEach((row, l) => {
      const tr = document.createElement('tr');
      tr.append(cell('th', l + 1 === result.layers ? `layer ${l + 1} (the output)` : `layer ${l + 1}`));
      row.forEach((x, i) => {
        const guess = codec.label(x.top);
        const td = cell('td', guess, `layer ${l + 1}, after “${chars[i]}” (position ${i}): top guess “${guess}” `
          + `${(100 * x.pTop).toFixed(1)}%; the actual next ${codec.unit}${i + 1 < n ? ` “${chars[i + 1]}”: ${(100 * x.pNext).toFixed(1)}%` : ': none'}`);
        if (Number.isFinite(x.pNext)) td.style.background = viridisCss(x.pNext);
        if (Number.isFinite(x.pNext) && x.pNext > 0.55) td.style.color = '#000';
        else td.style.color = '#fff';
        tr.append(td);
      });
      table.append(tr);
    });
    el.lens.replaceChildren(table);
  }

  // Head composition (Elhage et al. 2021), from the weights: for each later head a small grid of its
  // earlier heads, coloured by the kind picked (K, Q or V); the induction heads' strongest partners
  // in one sentence.
  // (a model of many heads has tens of thousands of squares: the rows are built a few at a time,
  // with the page free in between, and a newer drawing stops an older one)
  let compDrawing = 0;
  async function drawComposition() {
    const mine = ++compDrawing;
    const comp = result?.composition;
    if (!comp) return;
    const { layers: L, heads: H } = result;
    if (comp.error) {
      el.panel.dataset.composition = 'none';
      el.compClaim.textContent = `This model has no composition scores: ${comp.error}`;
      el.comp.replaceChildren();
      return;
    }
    const kind = el.compKind.value;
    const data = comp[kind];
    const at = (l2, h2, l1, h1) => data[((l2 * H + h2) * L + l1) * H + h1];
    const reads = { k: 'its keys', q: 'its queries', v: 'its values' }[kind];
    const label = `${kind.toUpperCase()}-composition`;
    // the colour runs over the pairs that exist (earlier layer into later), from their least to their most
    let lo = Infinity, hi = -Infinity, sum = 0, count = 0;
    const best = (l2, h2) => {
      let top = null;
      for (let l1 = 0; l1 < l2; l1++) for (let h1 = 0; h1 < H; h1++) {
        const x = at(l2, h2, l1, h1);
        if (!top || x > top.x) top = { l: l1, h: h1, x };
      }
      return top;
    };
    for (let l2 = 1; l2 < L; l2++) for (let h2 = 0; h2 < H; h2++) for (let l1 = 0; l1 < l2; l1++) for (let h1 = 0; h1 < H; h1++) {
      const x = at(l2, h2, l1, h1);
      lo = Math.min(lo, x); hi = Math.max(hi, x); sum += x; count++;
    }
    if (!count) {
      el.panel.dataset.composition = 'none';
      el.compClaim.textContent = 'This model has one layer: no head reads another.';
      el.comp.replaceChildren();
      return;
    }
    const t = (x) => (hi > lo ? (x - lo) / (hi - lo) : 0.5);
    const f = (x) => x.toFixed(3);
    // the sentence: each induction head the probe names (the claim's), else the strongest pair of all
    const induction = result.claim.heads;
    const parts = induction.map(({ layer, head }) => {
      if (layer === 0) return `${headName(layer, head)} is in the first layer: it reads no earlier head`;
      const b = best(layer, head);
      return `${headName(layer, head)} reads ${reads} most from ${headName(b.l, b.h)} (${label} ${f(b.x)})`;
    });
    let sentence;
    if (parts.length) {
      sentence = `Of the induction heads, ${parts.join('; ')}.`;
    } else {
      let top = null;
      for (let l2 = 1; l2 < L; l2++) for (let h2 = 0; h2 < H; h2++) {
        const b = best(l2, h2);
        if (!top || b.x > top.b.x) top = { l: l2, h: h2, b };
      }
      sentence = `No head here is an induction head; the strongest pair is ${headName(top.l, top.h)} reading ${reads} from `
        + `${headName(top.b.l, top.b.h)} (${label} ${f(top.b.x)}).`;
    }
    el.compClaim.textContent = `${sentence} The mean over all ${count} pairs is ${f(sum / count)}; the colour runs from `
      + `${f(lo)} (dark) to ${f(hi)} (bright). Computed in ${comp.ms < 10 ? comp.ms.toFixed(1) : Math.round(comp.ms)} ms.`;
    const named = new Set(induction.map((x) => `${x.layer},${x.head}`));
    const table = document.createElement('table');
    table.className = H > 6 ? 'comp-table many' : 'comp-table'; // an opened model's 12 heads: smaller squares
    const head = document.createElement('tr');
    head.append(cell('th', 'later head'), ...Array.from({ length: H }, (_, h) => cell('th', `head ${h + 1}`)));
    table.append(head);
    el.comp.replaceChildren(table);
    let since = performance.now();
    for (let l2 = 1; l2 < L; l2++) {
      if (performance.now() - since > 25) {
        await new Promise((r) => setTimeout(r));
        if (mine !== compDrawing) return;
        since = performance.now();
      }
      const tr = document.createElement('tr');
      tr.append(cell('th', `layer ${l2 + 1}`));
      for (let h2 = 0; h2 < H; h2++) {
        const b = best(l2, h2);
        const td = document.createElement('td');
        td.className = named.has(`${l2},${h2}`) ? 'comp-cell induction' : 'comp-cell';
        td.dataset.head = `${l2},${h2}`;
        const name = cell('span', headName(l2, h2), named.has(`${l2},${h2}`) ? 'an induction head (the probe\'s)' : undefined, 'comp-name');
        const mini = document.createElement('div');
        mini.className = 'comp-mini';
        mini.style.gridTemplateColumns = `repeat(${H}, var(--comp-sq))`;
        mini.setAttribute('role', 'img');
        mini.setAttribute('aria-label', `${headName(l2, h2)}: strongest ${label} from ${headName(b.l, b.h)}, ${f(b.x)}`);
        for (let l1 = 0; l1 < l2; l1++) for (let h1 = 0; h1 < H; h1++) {
          const x = at(l2, h2, l1, h1);
          const sq = cell('span', '', `${headName(l2, h2)} reads ${reads} from ${headName(l1, h1)}: ${label} ${f(x)}`,
            l1 === b.l && h1 === b.h ? 'comp-sq best' : 'comp-sq');
          sq.style.background = viridisCss(t(x));
          mini.append(sq);
        }
        td.append(name, mini);
        tr.append(td);
      }
      table.append(tr);
    }
    el.panel.dataset.composition = kind;
  }

  // Steering: the layer picker follows the model; a request goes to the worker on each change.
  function fillSteer() {
    const prev = el.steerLayer.value;
    el.steerLayer.replaceChildren(...Array.from({ length: result.layers }, (_, l) =>
      new Option(`layer ${l + 1}`, String(l))));
    el.steerLayer.value = String(prev !== '' && Number(prev) < result.layers ? Number(prev) : Math.floor(result.layers / 2));
  }
  // the token of a typed word: for a BPE, the word with its leading space when that is one piece (as
  // inside a sentence), else its first piece; for a character model, its first character
  // (an opened model's codec answers from the host: awaited)
  async function firstToken(s) {
    const pieces = async (x) => Array.from((await codec.encode(x)).ids).filter((t) => codec.text(t) !== '');
    if (codec.kind === 'bpe' && s.trim()) {
      const spaced = await pieces(` ${s.trim()}`);
      if (spaced.length === 1) return spaced[0];
    }
    return (await pieces(s))[0];
  }
  async function requestSteer() {
    if (!result || !worker) return;
    el.steerStrengthOut.textContent = el.steerStrength.value;
    const request = ++steerId;
    let plus, minus;
    try {
      [plus, minus] = [await firstToken(el.steerPlus.value), await firstToken(el.steerMinus.value)];
    } catch (e) {
      if (request === steerId) drawSteer({ id: request, type: 'steer-error', message: e.message });
      return;
    }
    if (request !== steerId) return;
    if (plus === undefined || minus === undefined) {
      drawSteer({ id: request, type: 'steer-error', message: `type a ${codec.unit} in both boxes` });
      return;
    }
    el.panel.dataset.steer = 'running';
    const layer = Number(el.steerLayer.value), strength = Number(el.steerStrength.value);
    steerAsked = { plus, minus, layer, strength, prompt: result.ids.slice(0, result.period) };
    worker.postMessage({ type: 'steer', id: request, file: result.file, ...steerAsked, tokens: 8 });
  }
  let steerAsked = null;

  function drawSteer(msg) {
    if (msg.type === 'steer-error') {
      el.panel.dataset.steer = 'error';
      el.steer.replaceChildren(cell('p', `Could not steer: ${msg.message}`));
      return;
    }
    const { plus, minus, layer, strength, prompt } = steerAsked;
    const text = (ids) => ids.map(codec.text).join('');
    const tail = text(prompt.slice(-12));
    const line = (label, ids, cls) => {
      const p = cell('p', `${label}: `, undefined, cls);
      const code = cell('code', `…${tail}`);
      code.append(cell('ins', text(ids)));
      p.append(code);
      return p;
    };
    el.steer.replaceChildren(
      cell('p', `Towards “${codec.label(plus)}” and away from “${codec.label(minus)}”, at layer ${layer + 1}'s input (blocks.${layer}.hook_resid_pre), `
        + `${strength} × ${msg.size.toFixed(2)} (the residual stream's mean size there):`, undefined, 'note'),
      line('Without', msg.plain, 'steer-plain'), line('Steered', msg.steered, 'steer-steered'));
    el.panel.dataset.steer = 'ready';
  }

  return {
    update(state, f) {
      const changed = f?.id !== form?.id || state.ltext !== text;
      form = f;
      text = state.ltext;
      if (!changed) return;
      clearTimeout(pending); // typing: one run after the last key
      pending = setTimeout(start, 300);
    },
  };
}
