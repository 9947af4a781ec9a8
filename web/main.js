// main.js: the playground's wiring. One state object (state.js) lives in the URL; every edit goes
// through setState(), which writes the URL and redraws the views. The views know nothing of each
// other; the library knows nothing of the page.
//
// A panel is a web/views/<panel>.js module with a create function like the ones below, a section in
// index.html and its settings in state.js; one that needs a part of the library is created behind a
// feature test, as the model panel is (`typeof lib.createModel === 'function'`).
import { loadAttention } from '../wasm/index.js';
import { GLOSSARY } from './about.js';
import { probeForms } from '../lab/forms.js';
import { makeInputs } from './inputs.js';
import { LIMITS, normalise, parseState, stateToSearch } from './state.js';
import { createControls } from './views/controls.js';
import { createFormulaView } from './views/formula.js';
import { createHeatmapView } from './views/heatmap.js';
import { createCompareView } from './views/compare.js';
import { createExperimentView } from './views/experiment.js';
import { createOverwriteView } from './views/overwrite.js';
import { createLlama2cView } from './views/llama2c.js';
import { createSinksView } from './views/sinks.js';
import { createInductionView } from './views/induction.js';
import { createLearnedView } from './views/learned.js';
import { createModelView } from './views/model.js';
import { createOwnTextView } from './views/owntext.js';
import { createTimingsView } from './views/timings.js';

const $ = (id) => document.getElementById(id);
const HEATMAP_MAX_LEN = LIMITS.n.max; // forms with a fixed length (lib.forms' fixedLength) are made with L = 128 and show the top-left n x n block

let state = parseState(location.search);
let lib = null;
let forms = [];
let renders = 0;
let modelView = null; // the model panel, when the library has lib.createModel
let experimentView = null; // the experiment panel, likewise
let compareView = null; // the compare panel (lib.createModel)
let learnedView = null; // the learned-attention panel, likewise (lib.loadModel)

function showError(message) {
  const el = $('error');
  el.hidden = !message;
  el.textContent = message ?? '';
}

function currentForm() {
  return forms.find((f) => f.id === state.form) ?? forms[0];
}

const controls = createControls({
  form: $('form'), input: document.querySelectorAll('input[name="input"]'), text: $('text'), n: $('n'),
  d: $('d'), heads: $('heads'), seed: $('seed'), causal: $('causal'), scale: $('scale'), causalNote: $('causal-note'),
  textField: $('text-field'), nField: $('n-field'),
}, (patch) => setState(patch));
const formula = createFormulaView({ formula: $('formula'), title: $('formula-title'), note: $('form-note'), about: $('form-about') });
const heatmaps = createHeatmapView({
  grid: $('heatmaps'), legend: $('legend'), readout: $('readout'), exports: $('exports'), name: 'attention-sandbox',
});
const timings = createTimingsView({
  panel: $('timings'), form: $('timing-settings'), build: $('build'), tmin: $('tmin'), tmax: $('tmax'), td: $('td'), trounds: $('trounds'), csv: $('tcsv'),
  tforms: $('tforms'), run: $('trun'), stop: $('tstop'), progress: $('tprogress'), status: $('tstatus'), hint: $('thint'),
  chart: $('tchart'), legend: $('tlegend'), table: $('ttable'),
}, { onChange: (patch) => setState(patch), onError: showError });

function setState(patch) {
  state = normalise({ ...state, ...patch });
  if (typeof lib.loadLlama2c === 'function') {
    $('llama2c').hidden = false;
    createLlama2cView({
      panel: $('llama2c'), input: $('l2files'), drop: $('l2drop'), files: $('l2names'), status: $('l2status'),
      form: $('l2form'), text: $('l2text'), count: $('l2count'), layer: $('l2layer'), generate: $('l2generate'),
      output: $('l2output'), grid: $('l2heatmaps'), legend: $('l2legend'), readout: $('l2readout'), exports: $('l2exports'),
      probe: $('l2probe'), names: $('l2names'),
    }, { lib });
  }
  if (typeof lib.createModel === 'function') {
    $('induction').hidden = false;
    const libs = new Map([[1, Promise.resolve(lib)]]);
    const loadLib = (threads) => {
      if (!libs.has(threads)) libs.set(threads, loadAttention({ threads }));
      return libs.get(threads);
    };
    $('iform').replaceChildren(...lib.forms.filter((f) => f.causal).map((f) => new Option(f.label, f.name)));
    createInductionView({
      panel: $('induction'), formEl: $('induction-settings'), form: $('iform'), steps: $('isteps'), threads: $('ithreads'),
      seed: $('iseed'), run: $('irun'), stop: $('istop'), status: $('istatus'), scores: $('ischart'), loss: $('ilchart'),
      legend: $('ilegend'), summary: $('isummary'), names: $('inames'),
    }, { loadLib });
    $('sinks').hidden = false;
    createSinksView({
      panel: $('sinks'), form: $('sinks-settings'), text: $('stext'), window: $('swindow'), sinks: $('ssinks'),
      run: $('srun'), reset: $('sreset'), status: $('sstatus'), chart: $('schart'), legend: $('slegend'), summary: $('ssummary'),
    }, { lib });
  }
  history.replaceState(null, '', stateToSearch(state));
  render();
}

// Runs the chosen form on the current input and splits its weights into one map per head.
function computeMaps(form) {
  const inputs = makeInputs(state, LIMITS.tokens);
  const { n, d } = inputs;
  const causal = form.nonCausal === false || (state.causal && form.causal); // a causal-only form runs causal
  const result = form.run({ ...inputs, heads: state.heads, causal, weights: true, seed: state.seed, maxLen: HEATMAP_MAX_LEN });
  const maps = [];
  for (let h = 0; h < state.heads; h++) {
    maps.push({ title: `Head ${h + 1} of ${state.heads}`, weights: result.weights.subarray(h * n * n, (h + 1) * n * n) });
  }
  return { maps, n, m: n, rowLabels: inputs.labels, colLabels: inputs.labels, scale: state.scale, alphas: result.alphas, components: result.components,
    maxLen: HEATMAP_MAX_LEN };
}

function render() {
  const form = currentForm();
  controls.update(state, forms, form);
  timings.update(state, forms);
  modelView?.update(state, form);
  learnedView?.update(state, form);
  compareView?.update(state, forms);
  experimentView?.update(state, forms);
  $('permalink').href = stateToSearch(state);
  try {
    const view = computeMaps(form);
    heatmaps.render(view);
    formula.render(form, state, view);
    showError(null);
  } catch (e) {
    formula.render(form, state, {});
    showError(`${form.label}: ${e.message}`);
  }
  document.body.dataset.renders = String(++renders);
}

// The glossary in the header: a definition list from about.js.
$('glossary').querySelector('dl').replaceChildren(...GLOSSARY.flatMap(([term, text]) => {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  dd.textContent = text;
  return [dt, dd];
}));

async function init() {
  try {
    lib = await loadAttention({ simd: 'auto' });
  } catch (e) {
    $('status').textContent = 'The WebAssembly module did not load.';
    showError(e.message);
    document.body.dataset.state = 'failed';
    return;
  }
  const probe = probeForms(lib);
  forms = probe.forms;
  const families = [...new Set(forms.map((f) => f.family))].length;
  $('status').textContent = `Running the ${lib.relaxed ? 'relaxed-SIMD (fused multiply-add)' : lib.simd ? 'SIMD' : 'scalar'} build on this page; `
    + `${forms.length} attention form${forms.length === 1 ? '' : 's'} from ${families} famil${families === 1 ? 'y' : 'ies'} available.`;
  $('skipped').hidden = probe.skipped.length === 0;
  $('skipped').querySelector('ul').replaceChildren(...probe.skipped.map((s) => {
    const li = document.createElement('li');
    li.textContent = `${s.id}: ${s.reason}`;
    return li;
  }));
  if (!forms.some((f) => f.id === state.form)) state = { ...state, form: forms[0].id };
  if (typeof lib.loadModel === 'function' && lib.charsTokenizer) {
    $('learned').hidden = false;
    learnedView = createLearnedView({
      panel: $('learned'), text: $('ltext'), label: $('ltext-label'), model: $('lmodel'), modelField: $('lmodel-field'), probe: $('lprobe'), twice: $('ltwice'), heads: $('lheads'), about: $('labout'), status: $('lstatus'), grid: $('lheatmaps'),
      legend: $('llegend'), readout: $('lreadout'), exports: $('lexports'), guesses: $('lguesses'),
    }, { lib, onChange: (patch) => setState(patch) });
  }
  if (typeof lib.createModel === 'function' && lib.charsTokenizer) {
    $('model').hidden = false;
    modelView = createModelView({
      panel: $('model'), form: $('model-settings'), task: $('task'), mlen: $('mlen'), mlenNote: $('mlen-note'), msize: $('msize'), march: $('march'),
      mstart: $('mstart'), mpos: $('mpos'), msteps: $('msteps'), mlr: $('mlr'), msched: $('msched'), mseed: $('mseed'), mtext: $('mtext'),
      mtextLabel: $('mtext-label'), about: $('task-about'), modelAbout: $('model-about'), title: $('model-title'), train: $('mtrain'), stop: $('mstop'), step: $('mstep'), reset: $('mreset'), progress: $('mprogress'), status: $('mstatus'),
      output: $('moutput'), loss: $('mloss'), acc: $('macc'), curvesLegend: $('mcurves-legend'), grid: $('mheatmaps'), legend: $('mlegend'),
      readout: $('mreadout'), exports: $('mexports'),
    }, { onChange: (patch) => setState(patch), charsVocab: lib.charsTokenizer.vocab });
    $('owntext').hidden = false;
    createOwnTextView({
      form: $('owntext-settings'), text: $('otext'), steps: $('osteps'), train: $('otrain'), stop: $('ostop'),
      progress: $('oprogress'), status: $('ostatus'), loss: $('oloss'), sample: $('osample'),
    }, { lib, formOf: () => currentForm() });
    $('compare').hidden = false;
    const side = (x) => ({
      title: $(`c${x}-title`), grid: $(`c${x}heatmaps`), legend: $(`c${x}legend`), readout: $(`c${x}readout`),
      exports: $(`c${x}exports`),
    });
    compareView = createCompareView({
      panel: $('compare'), form: $('compare-settings'), a: $('ca'), b: $('cb'), task: $('ctask'), steps: $('csteps'),
      run: $('crun'), stop: $('cstop'), progress: $('cprogress'), status: $('cstatus'), loss: $('closs'), acc: $('cacc'),
      legend: $('clegend'), table: $('ctable'), sides: { a: side('a'), b: side('b') },
    }, { onChange: (patch) => setState(patch), charsVocab: lib.charsTokenizer.vocab });
    $('experiment').hidden = false;
    experimentView = createExperimentView({
      panel: $('experiment'), form: $('experiment-settings'), budget: $('ebudget'), budgetNote: $('ebudget-note'),
      verdict: $('everdict'), run: $('erun'), stop: $('estop'),
      progress: $('eprogress'), status: $('estatus'), table: $('etable'), readout: $('ereadout'), compare: $('ecompare'), csv: $('ecsv'),
    }, { onChange: (patch) => setState(patch), charsVocab: lib.charsTokenizer.vocab });
  }
  if (typeof lib.deltaRule === 'function' && typeof lib.gatedLinearAttention === 'function') {
    $('overwrite').hidden = false;
    createOverwriteView({
      panel: $('overwrite'), form: $('overwrite-settings'), width: $('owidth'), chart: $('ochart'), legend: $('olegend'),
      summary: $('osummary'), overwrite: $('ooverwrite'),
    }, lib);
  }
  history.replaceState(null, '', stateToSearch(state));
  render();
  let width = window.innerWidth;
  window.addEventListener('resize', () => {
    if (window.innerWidth === width) return;
    width = window.innerWidth;
    render();
    timings.resize();
  });
  document.body.dataset.state = 'ready';
}

init();
