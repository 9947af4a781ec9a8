// state.js: the playground's one state object and its URL form. Every setting is a prop of the panel
// that owns it (web/panels.js) and lives in the query string, so a link reproduces the view. Views
// read the state; only main.js writes it.

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

// A prop is one URL key: { name, type, default, ... }, listed by the panel that owns it (web/panels.js,
// TensorFlow Playground's State.PROPS). parseState and stateToSearch loop over the props; nothing
// here knows a key by name. The types:
//   'choice' { values, labels? }   one of values (numbers compare as numbers); a select's options
//                                   are made from values and labels (main.js)
//   'int'    { min, max }          an integer in [min, max]
//   'bool'                         1/0 or true/false
//   'text'   { maxLength }         any text, cut to maxLength
//   'id'     { pattern }           text matching pattern (a form id, a list of them)
export const ID = /^[a-z0-9:+_-]{1,40}$/i; // a form id
export const IDS = /^[a-z0-9:+_,-]{1,400}$/i; // 'all' or a comma-separated list of form ids

const BOOL = { 1: true, 0: false, true: true, false: false };

const PARSE = {
  choice: (v, p) => {
    const x = typeof p.values[0] === 'number' ? Number(v) : v;
    return p.values.includes(x) ? x : undefined;
  },
  int: (v, p) => {
    if (!/^-?\d+$/.test(v)) return undefined;
    const x = Number(v);
    return x >= p.min && x <= p.max ? x : undefined;
  },
  bool: (v) => BOOL[v],
  text: (v, p) => v.slice(0, p.maxLength),
  id: (v, p) => (p.pattern.test(v) ? v : undefined),
};

/** The default state of a list of props. */
export function defaultsOf(props) {
  return Object.fromEntries(props.map((p) => [p.name, p.default]));
}

/** Parses a query string into a full state; anything missing or invalid takes its prop's default. */
export function parseState(search, props) {
  const q = new URLSearchParams(search);
  const s = defaultsOf(props);
  for (const p of props) {
    if (!q.has(p.name)) continue;
    const v = PARSE[p.type](q.get(p.name), p);
    if (v !== undefined) s[p.name] = v;
  }
  return normalise(s);
}

/** Restores the invariants between fields: heads divide d, tmin <= tmax. */
export function normalise(s) {
  const out = { ...s };
  if (out.d % out.heads) out.heads = LIMITS.heads.filter((h) => out.d % h === 0).pop();
  if (out.tmin > out.tmax) [out.tmin, out.tmax] = [out.tmax, out.tmin];
  return out;
}

/** The query string for a state (every prop written, so a link survives changed defaults). */
export function stateToSearch(s, props) {
  const q = new URLSearchParams();
  for (const { name } of props) {
    const v = s[name];
    q.set(name, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  }
  return `?${q.toString()}`;
}
