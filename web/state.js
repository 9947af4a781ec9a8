// state.js: the playground's one state object and its URL form. Every setting lives here and in the
// query string, so a link reproduces the view. Views read the state; only main.js writes it.

export const LIMITS = {
  n: { min: 2, max: 128 }, // heatmap sequence length (random input)
  tokens: 64, // at most this many tokens of typed input
  seed: { min: 0, max: 2 ** 31 - 1 },
  dims: [8, 16, 32, 64],
  heads: [1, 2, 4, 8],
  timingSizes: [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
  timingDims: [16, 32, 64, 128],
  timingRounds: [1, 3, 5, 9],
  tasks: ['copy', 'reverse', 'sort', 'recall', 'translate', 'chars'],
  taskLength: { min: 1, max: 32 },
  modelSizes: ['tiny', 'small'],
  trainSteps: [100, 200, 500, 1000, 2000, 5000],
  budgets: [250, 500, 1000, 2000],
  lrs: [3e-4, 1e-3, 2e-3, 3e-3, 5e-3, 1e-2], // the model panel's peak learning rates
  schedules: ['decay', 'constant'],
  compareTasks: ['reverse', 'sort', 'recall', 'chars'],
};

export const DEFAULTS = Object.freeze({
  form: 'softmax', // a form id from forms.js: 'softmax', 'linear:elu+1', 'synth:random', ...
  input: 'tokens', // 'tokens' (typed text, a fixed seeded embedding) or 'random' (seeded q, k, v)
  text: 'the cat sat on the mat because the mat was warm',
  ltext: 'the lamplighter walked the road', // the learned-attention panel's text
  n: 16,
  d: 32,
  heads: 2,
  causal: false,
  seed: 1,
  scale: 'max', // heatmap colours: 'max' (0 to the largest weight shown) or 'row' (each row to its own maximum)
  build: 'auto', // timings: 'auto' | 'simd' | 'scalar' | 'both' (SIMD and scalar side by side) | 'threads'
                 // (every core) | 'threadsvs' (1 thread and every core side by side) | 'relaxed'
                 // (fused multiply-add) | 'relaxedvs' (SIMD128 and relaxed SIMD side by side)
  tmin: 64, // timings: smallest n
  tmax: 1024, // timings: largest n
  td: 64, // timings: d
  trounds: 5, // timings: rounds over every (form, n); the chart shows the median, the legend the slope's spread
  tforms: 'softmax,linear:elu+1,synth:dense,synth:random', // timings: 'all' or a comma-separated list of form ids
  task: 'reverse', // model: the task it learns
  mlen: 6, // model: task length (symbols, pairs, digits or characters)
  msize: 'tiny', // model: 'tiny' | 'small'
  mstart: 'pretrained', // model: start from 'pretrained' (a checkpoint of web/models/, when one fits) or 'fresh'
  march: 'transformer', // model: 'transformer' (a decoder with the chosen form) | 'llama' (the same with the llama-style
                        // block: RMSNorm, SwiGLU, rotary positions) | 'gru' | 'gru-attention' (the RNN baselines)
  mpos: 'sinusoidal', // model: positions: 'sinusoidal' (or the block's own: rotary for 'llama') | 'rope' | 'alibi' | 'learned' | 'none'
  mseed: 1, // model: which example of the task to show
  mtext: '', // model: a typed input instead of the example (copy/reverse/sort: numbers; chars: text)
  msteps: 500, // model: steps per press of Train
  mlr: 2e-3, // model: peak learning rate
  msched: 'decay', // model: 'decay' (warm-up, then inverse square root in the model's own steps) or 'constant'
  ebudget: 1000, // experiment: training steps per run
  ca: 'softmax', // compare: form A
  cb: 'synth:random', // compare: form B
  ctask: 'recall', // compare: the task both learn
  csteps: 1000, // compare: steps each
});

const BOOL = { 1: true, 0: false, true: true, false: false };

function intIn(value, lo, hi) {
  if (!/^-?\d+$/.test(value ?? '')) return undefined;
  const x = Number(value);
  return x >= lo && x <= hi ? x : undefined;
}

function oneOf(value, list) {
  const x = Number(value);
  return list.includes(x) ? x : undefined;
}

/** Parses a query string into a full state; anything missing or invalid takes its default. */
export function parseState(search) {
  const p = new URLSearchParams(search);
  const s = { ...DEFAULTS };
  const set = (key, value) => {
    if (value !== undefined) s[key] = value;
  };
  if (p.has('form') && /^[a-z0-9:+_-]{1,40}$/i.test(p.get('form'))) s.form = p.get('form');
  if (['tokens', 'random'].includes(p.get('input'))) s.input = p.get('input');
  if (p.has('text')) s.text = p.get('text').slice(0, 400);
  if (p.has('ltext')) s.ltext = p.get('ltext').slice(0, 200);
  set('n', intIn(p.get('n'), LIMITS.n.min, LIMITS.n.max));
  set('d', oneOf(p.get('d'), LIMITS.dims));
  set('heads', oneOf(p.get('heads'), LIMITS.heads));
  set('causal', BOOL[p.get('causal')]);
  set('seed', intIn(p.get('seed'), LIMITS.seed.min, LIMITS.seed.max));
  if (['max', 'row'].includes(p.get('scale'))) s.scale = p.get('scale');
  if (['auto', 'simd', 'scalar', 'both', 'threads', 'threadsvs', 'relaxed', 'relaxedvs'].includes(p.get('build'))) s.build = p.get('build');
  set('tmin', oneOf(p.get('tmin'), LIMITS.timingSizes));
  set('tmax', oneOf(p.get('tmax'), LIMITS.timingSizes));
  set('td', oneOf(p.get('td'), LIMITS.timingDims));
  set('trounds', oneOf(p.get('trounds'), LIMITS.timingRounds));
  if (p.has('tforms') && /^[a-z0-9:+_,-]{1,400}$/i.test(p.get('tforms'))) s.tforms = p.get('tforms');
  if (LIMITS.tasks.includes(p.get('task'))) s.task = p.get('task');
  set('mlen', intIn(p.get('mlen'), LIMITS.taskLength.min, LIMITS.taskLength.max));
  if (LIMITS.modelSizes.includes(p.get('msize'))) s.msize = p.get('msize');
  if (['pretrained', 'fresh'].includes(p.get('mstart'))) s.mstart = p.get('mstart');
  if (['transformer', 'llama', 'gru', 'gru-attention'].includes(p.get('march'))) s.march = p.get('march');
  if (['sinusoidal', 'rope', 'alibi', 'learned', 'none'].includes(p.get('mpos'))) s.mpos = p.get('mpos');
  set('mseed', intIn(p.get('mseed'), LIMITS.seed.min, LIMITS.seed.max));
  if (p.has('mtext')) s.mtext = p.get('mtext').slice(0, 200);
  set('msteps', oneOf(p.get('msteps'), LIMITS.trainSteps));
  set('mlr', oneOf(p.get('mlr'), LIMITS.lrs));
  if (LIMITS.schedules.includes(p.get('msched'))) s.msched = p.get('msched');
  set('ebudget', oneOf(p.get('ebudget'), LIMITS.budgets));
  for (const key of ['ca', 'cb']) if (p.has(key) && /^[a-z0-9:+_-]{1,40}$/i.test(p.get(key))) s[key] = p.get(key);
  if (LIMITS.compareTasks.includes(p.get('ctask'))) s.ctask = p.get('ctask');
  set('csteps', oneOf(p.get('csteps'), LIMITS.budgets));
  return normalise(s);
}

/** Restores the invariants between fields: heads divide d, tmin <= tmax. */
export function normalise(s) {
  const out = { ...s };
  if (out.d % out.heads) out.heads = LIMITS.heads.filter((h) => out.d % h === 0).pop();
  if (out.tmin > out.tmax) [out.tmin, out.tmax] = [out.tmax, out.tmin];
  return out;
}

/** The query string for a state (every field written, so a link survives changed defaults). */
export function stateToSearch(s) {
  const p = new URLSearchParams();
  for (const key of Object.keys(DEFAULTS)) {
    const v = s[key];
    p.set(key, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  }
  return `?${p.toString()}`;
}
