// panels.js: the playground's panels, one row each, in the order a learner takes them (the page's
// sections and its table of contents follow this order). A row:
//   id        the <section id> in index.html (and the URL hash that scrolls to it)
//   lead      one of the panels the page leads with (full width); the others share two columns on a wide screen
//   title     its line in the table of contents
//   file      the view module that draws it
//   props     its settings, one per URL key (state.js says the types); parseState and stateToSearch
//             loop over every panel's props, and a <select name=...> in the section that is empty
//             gets its options from the prop's values and labels
//   needs     (lib) -> true | 'reason': the parts of the library it needs (without them it is not
//             made, and says why)
//   applies   (lib, state, form) -> true | 'reason': whether it applies to the chosen form; when it
//             does not, the panel stays in place with the reason in one line and a button that
//             switches to the first form it applies to
//   create    (section, ctx) -> { update?(state, forms, form), resize?() }: made once at start-up;
//             finds its elements inside its own section; ctx = { lib, forms, loadLib, setState,
//             showError, currentForm, onSettings(fn) } (fn(state, forms, form) on every change)
// A new panel is its view file, its <section> in index.html and one row here.
import { loadAttention } from '../wasm/index.js';
import { ID, IDS, LIMITS } from './state.js';
import { makeInputs } from './inputs.js';
import { createControls } from './views/controls.js';
import { createFormulaView } from './views/formula.js';
import { createHeatmapView } from './views/heatmap.js';
import { createCompareView } from './views/compare.js';
import { createExperimentView } from './views/experiment.js';
import { createOverwriteView } from './views/overwrite.js';
import { createOpenerView } from './views/opener.js';
import { createSinksView } from './views/sinks.js';
import { createInductionView } from './views/induction.js';
import { createLearnedView, modelCatalog } from './views/learned.js';
import { createPictureView } from './views/picture.js';
import { createFeaturesView } from './views/features.js';
import { createCircuitsView } from './views/circuits.js';
import { createModelView } from './views/model.js';
import { createOwnTextView } from './views/owntext.js';
import { createTimingsView } from './views/timings.js';
import { createTokenizerView } from './views/tokenizer.js';
import { PRESETS } from '../lab/presets.js';
import { HUB } from './views/hub.js';

// The first panel's text: a phrase read twice, so that its induction heads show at once.
export const PICTURE_TEXT = 'The lighthouse keeper lit the lamp at dusk. The lighthouse keeper lit the lamp at dusk.';

const HEATMAP_MAX_LEN = LIMITS.n.max; // forms with a fixed length (lib.forms' fixedLength) are made with L = 128 and show the top-left n x n block

/** The elements of a section by id: finder(section)('x') is section's #x. */
const finder = (section) => (id) => section.querySelector(`#${CSS.escape(id)}`);

const has = (...names) => (lib) => {
  const missing = names.find((n) => (n === 'charsTokenizer' ? !lib.charsTokenizer : typeof lib[n] !== 'function'));
  return missing ? `this build of the library has no ${missing}, which this panel needs.` : true;
};
const causalOnly = (what) => (lib, state, form) => (form.causal ? true
  : `${form.label} has no causal form, and ${what} reads each character only after the ones before it.`);

// Runs the chosen form on the current input and splits its weights into one map per head.
function computeMaps(state, form) {
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

export const PANELS = [
  {
    id: 'picture', lead: true, title: 'The model in one picture', file: 'views/picture.js',
    props: [{ name: 'ptext', type: 'text', maxLength: 300, default: PICTURE_TEXT }],
    needs: has('loadModel', 'charsTokenizer'),
    applies: () => true, // a form without a trained model shows the shipped one, and says so
    create(section, { lib, setState }) {
      const q = finder(section);
      const view = createPictureView({
        panel: section, text: q('ptext'), own: q('popen'), model: q('pmodel'), about: q('pabout'), status: q('pstatus'), tokens: q('ptokens'),
        path: q('ppath'), layers: q('players'), bars: q('pbars'), temp: q('ptemp'), tempOut: q('ptemp-out'), pos: q('ppos'),
        big: q('pbig'), bigBox: q('pbig-box'), bigTitle: q('pbig-title'), bigLegend: q('pbig-legend'), bigReadout: q('pbig-readout'), bigExports: q('pbig-exports'),
      }, { lib, onChange: (patch) => setState(patch) });
      return { update: (state, forms, form) => view.update(state, form), resize: () => view.resize() };
    },
  },
  {
    id: 'controls', lead: true, title: 'Settings', file: 'views/controls.js',
    props: [
      { name: 'form', type: 'id', pattern: ID, default: 'softmax' }, // a form id from lab/forms.js: 'softmax', 'linear:elu+1', 'synth:random', ...
      { name: 'input', type: 'choice', values: ['tokens', 'random'], default: 'tokens' }, // typed text (a fixed seeded embedding) or seeded q, k, v
      { name: 'text', type: 'text', maxLength: 400, default: 'the cat sat on the mat because the mat was warm' },
      { name: 'n', type: 'int', ...LIMITS.n, default: 16 },
      { name: 'd', type: 'choice', values: LIMITS.dims, default: 32 },
      { name: 'heads', type: 'choice', values: LIMITS.heads, default: 2 },
      { name: 'causal', type: 'bool', default: false },
      { name: 'seed', type: 'int', ...LIMITS.seed, default: 1 },
      { name: 'scale', type: 'choice', values: ['max', 'row'], default: 'max', // heatmap colours
        labels: { max: '0 to the largest weight shown', row: 'each row to its own maximum' } },
    ],
    applies: () => true,
    create(section, { setState }) {
      const q = finder(section);
      const controls = createControls({
        form: q('form'), input: section.querySelectorAll('input[name="input"]'), text: q('text'), n: q('n'),
        d: q('d'), heads: q('heads'), seed: q('seed'), causal: q('causal'), scale: q('scale'), causalNote: q('causal-note'),
        textField: q('text-field'), nField: q('n-field'),
      }, (patch) => setState(patch));
      return { update: (state, forms, form) => controls.update(state, forms, form) };
    },
  },
  {
    id: 'learned', lead: true, title: 'A trained model on your text', file: 'views/learned.js',
    props: [{ name: 'ltext', type: 'text', maxLength: 200, default: 'the lamplighter walked the road' }],
    needs: has('loadModel', 'charsTokenizer'),
    applies: causalOnly('a trained character model'),
    create(section, { lib, setState }) {
      const q = finder(section);
      const view = createLearnedView({
        panel: section, text: q('ltext'), label: q('ltext-label'), model: q('lmodel'), modelField: q('lmodel-field'), probe: q('lprobe'),
        twice: q('ltwice'), heads: q('lheads'), about: q('labout'), status: q('lstatus'), grid: q('lheatmaps'),
        legend: q('llegend'), readout: q('lreadout'), exports: q('lexports'), guesses: q('lguesses'),
      }, { lib, onChange: (patch) => setState(patch) });
      return { update: (state, forms, form) => view.update(state, form) };
    },
  },
  {
    id: 'circuits', lead: true, title: 'What does this head do?', file: 'views/circuits.js',
    props: [],
    needs: has('loadModel', 'charsTokenizer'),
    applies: causalOnly('a trained character model'),
    create(section, { lib }) {
      const q = finder(section);
      const view = createCircuitsView({
        panel: section, model: q('hdmodel'), modelField: q('hdmodel-field'), texts: q('hdtexts'), status: q('hdstatus'),
        progress: q('hdprogress'), mode: q('hdmode'), grid: q('hdgrid'), table: q('hdtable'), headTitle: q('hdhead-title'),
        pattern: q('hdpattern'), patternLegend: q('hdlegend'), patternReadout: q('hdreadout'), promoted: q('hdpromoted'),
        resid: q('hdresid'), z: q('hdz'), lens: q('hdlens'), claim: q('hdclaim'),
        compKind: q('hdcompkind'), compClaim: q('hdcompclaim'), comp: q('hdcomp'),
        steerLayer: q('hdsteer-layer'), steerPlus: q('hdsteer-plus'), steerMinus: q('hdsteer-minus'),
        steerStrength: q('hdsteer-strength'), steerStrengthOut: q('hdsteer-strength-out'), steer: q('hdsteer'),
      }, { lib });
      return { update: (state, forms, form) => view.update(state, form) };
    },
  },
  {
    id: 'features', title: 'Features a sparse autoencoder finds', file: 'views/features.js',
    props: [],
    needs: has('trainSAE', 'loadModel'),
    applies: () => true, // it reads the shipped sub-word model, whatever the form
    create(section) {
      const q = finder(section);
      const view = createFeaturesView({
        panel: section, model: q('fsmodel'), source: q('fssource'), text: q('fstext'), layer: q('fslayer'), size: q('fssize'), k: q('fsk'), steps: q('fssteps'), train: q('fstrain'), stop: q('fsstop'),
        progress: q('fsprogress'), status: q('fsstatus'), browser: q('fsbrowser'), search: q('fssearch'), sort: q('fssort'),
        count: q('fscount'), list: q('fslist'), title: q('fstitle'), contexts: q('fscontexts'), hist: q('fshist'),
        promoted: q('fspromoted'), prompt: q('fsprompt'), strength: q('fsstrength'), strengthOut: q('fsstrength-out'),
        steer: q('fssteer'), ablate: q('fsablate'), steered: q('fssteered'), saveJson: q('fsjson'), saveSae: q('fssae'),
      });
      // the layers of the shipped sub-word model the worker reads
      modelCatalog().then((list) => {
        const bpe = list.find((e) => e.entry?.tokenizer);
        view.update(null, null, bpe?.entry?.config?.layers ?? 4);
      });
      return {};
    },
  },
  {
    id: 'attention', title: 'What attention computes', file: 'views/heatmap.js',
    props: [],
    applies: () => true,
    create(section, { showError }) {
      const q = finder(section);
      const formula = createFormulaView({ formula: q('formula'), title: q('formula-title'), note: q('form-note'), about: q('form-about') });
      const heatmaps = createHeatmapView({
        grid: q('heatmaps'), legend: q('legend'), readout: q('readout'), exports: q('exports'), name: 'attention-sandbox',
      });
      return {
        update(state, forms, form) {
          try {
            const view = computeMaps(state, form);
            heatmaps.render({ ...view, form });
            formula.render(form, state, view);
            showError(null);
          } catch (e) {
            formula.render(form, state, {});
            showError(`${form.label}: ${e.message}`);
          }
        },
      };
    },
  },
  {
    id: 'tokenizer', title: 'How text becomes tokens', file: 'views/tokenizer.js',
    props: [{ name: 'tktext', type: 'text', maxLength: 600,
      default: 'Tokenizers cut text into pieces: common words become one piece, rarer ones several. Fold the paper in half, then open it again.' }],
    needs: has('trainTokenizer', 'loadTokenizer'),
    applies: () => true,
    create(section, { lib, setState }) {
      const q = finder(section);
      const view = createTokenizerView({
        panel: section, text: q('tktext'), about: q('tkabout'), slider: q('tkmerges'), sliderLabel: q('tkmerges-label'), merge: q('tkmerge'),
        counts: q('tkcounts'), chips: q('tkchips'), form: q('tktrain-form'), trainText: q('tktrain-text'), vocab: q('tkvocab'),
        train: q('tktrain'), reset: q('tkreset'), status: q('tkstatus'),
      }, { lib, onChange: (patch) => setState(patch) });
      return { update: (state) => view.update(state) };
    },
  },
  {
    id: 'owntext', title: 'Train on your own text', file: 'views/owntext.js',
    props: [],
    needs: has('createModel', 'charsTokenizer'),
    applies: causalOnly('a model that predicts the next character'),
    create(section, { lib, currentForm }) {
      const q = finder(section);
      createOwnTextView({
        form: q('owntext-settings'), text: q('otext'), steps: q('osteps'), train: q('otrain'), stop: q('ostop'),
        progress: q('oprogress'), status: q('ostatus'), loss: q('oloss'), sample: q('osample'),
        units: section.querySelectorAll('input[name="ounit"]'), unitTok: q('ounit-tok'), unitNote: q('ounit-note'),
      }, { lib, formOf: currentForm });
      return {};
    },
  },
  {
    id: 'model', title: 'A tiny Transformer learns a task', file: 'views/model.js',
    props: [
      { name: 'task', type: 'choice', values: LIMITS.tasks, default: 'reverse' },
      { name: 'mlen', type: 'int', ...LIMITS.taskLength, default: 6 }, // task length (symbols, pairs, digits or characters)
      { name: 'msize', type: 'choice', values: LIMITS.modelSizes, default: 'tiny' },
      { name: 'mstart', type: 'choice', values: ['pretrained', 'fresh'], default: 'pretrained', // a checkpoint of web/models/, when one fits
        labels: { pretrained: 'pretrained checkpoint, if one fits', fresh: 'fresh seeded weights' } },
      { name: 'march', type: 'choice', values: ['transformer', 'llama', 'gru', 'gru-attention'], default: 'transformer',
        labels: { transformer: 'Transformer with the attention form', llama: 'Transformer, llama-style block',
          gru: 'GRU, one context vector', 'gru-attention': 'GRU + additive attention' } },
      // positions: the library's table (lib.positionals, src/model/positional.c), read when it has loaded;
      // 'sinusoidal' stands for the block's default (rotary for the llama block)
      { name: 'mpos', type: 'choice', default: 'sinusoidal', fromLib: (lib) => ({
        values: lib.positionals.map((p) => p.name),
        labels: Object.fromEntries(lib.positionals.map((p) => [p.name, p.name === 'sinusoidal' ? "block's default" : p.label])),
        titles: Object.fromEntries(lib.positionals.map((p) => [p.name, `${p.words} (${p.paper})`])),
      }) },
      { name: 'mseed', type: 'int', ...LIMITS.seed, default: 1 }, // which example of the task to show
      { name: 'mtext', type: 'text', maxLength: 200, default: '' }, // a typed input instead of the example
      { name: 'msteps', type: 'choice', values: LIMITS.trainSteps, default: 500 },
      { name: 'mlr', type: 'choice', values: LIMITS.lrs, default: 2e-3 },
      { name: 'msched', type: 'choice', values: LIMITS.schedules, default: 'decay' },
      // a 2025 model at tiny scale (lab/presets.js); 'none': the model the settings above describe
      { name: 'mpreset', type: 'choice', values: ['none', ...PRESETS.map((p) => p.id)], default: 'none',
        labels: { none: 'none (Model and Positions above)', ...Object.fromEntries(PRESETS.map((p) => [p.id, p.label])) } },
    ],
    needs: has('createModel', 'charsTokenizer'),
    applies: () => true, // a form with no causal form trains as an encoder-decoder, or the panel says why not
    create(section, { lib, setState }) {
      const q = finder(section);
      const view = createModelView({
        panel: section, form: q('model-settings'), task: q('task'), mlen: q('mlen'), mlenNote: q('mlen-note'), msize: q('msize'), march: q('march'),
        mstart: q('mstart'), mpos: q('mpos'), msteps: q('msteps'), mlr: q('mlr'), msched: q('msched'), mseed: q('mseed'), mtext: q('mtext'),
        mtextLabel: q('mtext-label'), about: q('task-about'), modelAbout: q('model-about'), title: q('model-title'), train: q('mtrain'),
        stop: q('mstop'), step: q('mstep'), reset: q('mreset'), progress: q('mprogress'), status: q('mstatus'),
        output: q('moutput'), loss: q('mloss'), acc: q('macc'), curvesLegend: q('mcurves-legend'), grid: q('mheatmaps'), legend: q('mlegend'),
        readout: q('mreadout'), exports: q('mexports'), preset: q('mpreset'), presetAbout: q('mpreset-about'), cache: q('mcache'),
      }, { onChange: (patch) => setState(patch), charsVocab: lib.charsTokenizer.vocab, positionals: lib.positionals,
        forms: lib.forms });
      return { update: (state, forms, form) => view.update(state, form) };
    },
  },
  {
    id: 'induction', title: 'Induction heads, forming live', file: 'views/induction.js',
    props: [],
    needs: has('createModel'),
    applies: () => true,
    create(section, { lib, loadLib }) {
      const q = finder(section);
      q('iform').replaceChildren(...lib.forms.filter((f) => f.causal).map((f) => new Option(f.label, f.name)));
      createInductionView({
        panel: section, formEl: q('induction-settings'), form: q('iform'), steps: q('isteps'), threads: q('ithreads'),
        seed: q('iseed'), run: q('irun'), stop: q('istop'), status: q('istatus'), scores: q('ischart'), loss: q('ilchart'),
        legend: q('ilegend'), summary: q('isummary'), names: q('inames'),
      }, { loadLib });
      return {};
    },
  },
  {
    id: 'sinks', title: 'Attention sinks', file: 'views/sinks.js',
    props: [],
    needs: has('createModel'),
    applies: () => true,
    create(section, { lib }) {
      const q = finder(section);
      createSinksView({
        panel: section, form: q('sinks-settings'), text: q('stext'), window: q('swindow'), sinks: q('ssinks'), way: q('sway'),
        run: q('srun'), reset: q('sreset'), status: q('sstatus'), chart: q('schart'), legend: q('slegend'), summary: q('ssummary'),
      }, { lib });
      return {};
    },
  },
  {
    id: 'compare', title: 'Two forms side by side', file: 'views/compare.js',
    props: [
      { name: 'ca', type: 'id', pattern: ID, default: 'softmax' },
      { name: 'cb', type: 'id', pattern: ID, default: 'synth:random' },
      { name: 'ctask', type: 'choice', values: LIMITS.compareTasks, default: 'recall' },
      { name: 'csteps', type: 'choice', values: LIMITS.budgets, default: 1000 },
    ],
    needs: has('createModel', 'charsTokenizer'),
    applies: () => true,
    create(section, { lib, setState }) {
      const q = finder(section);
      const side = (x) => ({
        title: q(`c${x}-title`), grid: q(`c${x}heatmaps`), legend: q(`c${x}legend`), readout: q(`c${x}readout`), exports: q(`c${x}exports`),
      });
      const view = createCompareView({
        panel: section, form: q('compare-settings'), a: q('ca'), b: q('cb'), task: q('ctask'), steps: q('csteps'),
        run: q('crun'), stop: q('cstop'), progress: q('cprogress'), status: q('cstatus'), loss: q('closs'), acc: q('cacc'),
        legend: q('clegend'), table: q('ctable'), sides: { a: side('a'), b: side('b') },
      }, { onChange: (patch) => setState(patch), charsVocab: lib.charsTokenizer.vocab, positionals: lib.positionals });
      return { update: (state, forms) => view.update(state, forms) };
    },
  },
  {
    id: 'overwrite', title: 'Why the delta rule', file: 'views/overwrite.js',
    props: [],
    needs: has('deltaRule', 'gatedLinearAttention'),
    applies: () => true,
    create(section, { lib }) {
      const q = finder(section);
      createOverwriteView({
        panel: section, form: q('overwrite-settings'), width: q('owidth'), chart: q('ochart'), legend: q('olegend'),
        summary: q('osummary'), overwrite: q('ooverwrite'),
      }, lib);
      return {};
    },
  },
  {
    id: 'timings', title: 'Speed on this device', file: 'views/timings.js',
    props: [
      { name: 'build', type: 'choice', default: 'auto',
        values: ['auto', 'simd', 'relaxed', 'relaxedvs', 'scalar', 'both', 'threads', 'threadsvs'],
        labels: { auto: 'auto (fastest supported)', simd: 'SIMD128 (attention.wasm)', relaxed: 'relaxed SIMD (attention-relaxed.wasm)',
          relaxedvs: 'SIMD128 and relaxed, side by side', scalar: 'scalar (attention-scalar.wasm)', both: 'SIMD and scalar, side by side',
          threads: 'every core (threaded build)', threadsvs: '1 thread and every core, side by side' } },
      { name: 'tmin', type: 'choice', values: LIMITS.timingSizes, default: 64 },
      { name: 'tmax', type: 'choice', values: LIMITS.timingSizes, default: 1024 },
      { name: 'td', type: 'choice', values: LIMITS.timingDims, default: 64 },
      { name: 'trounds', type: 'choice', values: LIMITS.timingRounds, default: 5 }, // rounds over every (form, n)
      { name: 'tforms', type: 'id', pattern: IDS, default: 'softmax,linear:elu+1,synth:dense,synth:random' }, // 'all' or a list of form ids
    ],
    applies: () => true,
    create(section, { setState, showError }) {
      const q = finder(section);
      const view = createTimingsView({
        panel: section, form: q('timing-settings'), build: q('build'), tmin: q('tmin'), tmax: q('tmax'), td: q('td'), trounds: q('trounds'),
        csv: q('tcsv'), tforms: q('tforms'), run: q('trun'), stop: q('tstop'), progress: q('tprogress'), status: q('tstatus'), hint: q('thint'),
        chart: q('tchart'), legend: q('tlegend'), table: q('ttable'),
      }, { onChange: (patch) => setState(patch), onError: showError });
      return { update: (state, forms) => view.update(state, forms), resize: () => view.resize() };
    },
  },
  {
    id: 'experiment', title: "The sources' claims, live", file: 'views/experiment.js',
    props: [{ name: 'ebudget', type: 'choice', values: LIMITS.budgets, default: 1000 }],
    needs: has('createModel', 'charsTokenizer'),
    applies: () => true,
    create(section, { lib, setState }) {
      const q = finder(section);
      const view = createExperimentView({
        panel: section, form: q('experiment-settings'), budget: q('ebudget'), budgetNote: q('ebudget-note'),
        verdict: q('everdict'), run: q('erun'), stop: q('estop'),
        progress: q('eprogress'), status: q('estatus'), table: q('etable'), readout: q('ereadout'), compare: q('ecompare'), csv: q('ecsv'),
      }, { onChange: (patch) => setState(patch), charsVocab: lib.charsTokenizer.vocab, positionals: lib.positionals });
      return { update: (state, forms) => view.update(state, forms) };
    },
  },
  {
    id: 'llama2c', title: 'Open a model file', file: 'views/opener.js',
    // the Hub (or a mirror) a Hub id is fetched from; any text is kept, and the panel refuses one
    // that is not an http(s) URL when asked to fetch (hub.js's checkEndpoint), saying why
    props: [{ name: 'hub', type: 'text', maxLength: 300, default: HUB }],
    needs: has('loadLlama2c'),
    applies: () => true,
    create(section, { lib, setState }) {
      const q = finder(section);
      const view = createOpenerView({
        panel: section, input: q('l2files'), drop: q('l2drop'), files: q('l2files-names'), status: q('l2status'),
        form: q('l2form'), text: q('l2text'), count: q('l2count'), layer: q('l2layer'), generate: q('l2generate'),
        output: q('l2output'), grid: q('l2heatmaps'), legend: q('l2legend'), readout: q('l2readout'), exports: q('l2exports'),
        probe: q('l2probe'), names: q('l2names'), folder: q('l2folder'), hub: q('l2hub'), hubid: q('l2hubid'), fetch: q('l2fetch'),
        busy: q('l2busy'), progress: q('l2progress'), bytes: q('l2bytes'), cancel: q('l2cancel'), table: q('l2table'),
        endpoint: q('l2endpoint'),
      }, { lib, onChange: (patch) => setState(patch) });
      return { update: (state) => view.update(state), resize: () => view.resize() };
    },
  },
];

/** Every panel's props, in the table's order: the URL's keys. */
export const PROPS = PANELS.flatMap((p) => p.props);

/** A library with the given thread count, loaded once (the induction panel's threads setting). */
export function libLoader(lib) {
  const libs = new Map([[1, Promise.resolve(lib)]]);
  return (threads) => {
    if (!libs.has(threads)) libs.set(threads, loadAttention({ threads }));
    return libs.get(threads);
  };
}
