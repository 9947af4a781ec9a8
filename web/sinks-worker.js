// sinks-worker.js: the "Attention sinks" panel's readings, in a Web Worker so the page never waits on
// them (views/sinks.js is the view: it fetches the model files once, sends their bytes, and draws).
// Recomputing reads every position afresh, which costs the window's length times a rolling cache, so
// it is read in slices (exact: a position's recomputed loss depends only on the last `window` tokens)
// with a progress message after each. One request at a time: a newer one stops an older one between slices.
// Messages in:  { type: 'run', id, way, text, window, sinks, files, bytes }
//                 way: 'readings' (one model, three readings) | 'rest' (three models) | 'backcopy' (the
//                 same on letters); files: { key: name } the models of this way (web/models/<name>);
//                 bytes: { name: ArrayBuffer } the files this worker has not been sent yet (transferred)
// Messages out (each with its request's id):
//               { type: 'progress', id, done, total, label }   total: positions to read in all
//               { type: 'result', id, way, tokens, window, maxLen, results: [{ label, model, losses, ms }], first? }
//                 losses: Float32Array (nats per next token, transferred); first: each model's weight on
//                 the first token (see views/sinks.js)
//               { type: 'error', id, message }
import { workerLib } from './worker-page.js';
import { firstTokenWeight, restingWeights } from '../lab/heads.js';
import { triggerRows } from '../lab/backcopy.js';

const libPromise = workerLib();
libPromise.catch(() => {}); // reported by the request that awaits it
const models = new Map(); // file name -> Model
let latest = 0;
const SLICE = 256; // recomputed positions between progress messages

class Superseded extends Error {}

function model(lib, name, bytes) {
  if (!models.has(name)) {
    if (!bytes[name]) throw new Error(`the worker was not sent ${name}`);
    models.set(name, lib.loadModel(new Uint8Array(bytes[name]), { training: false }));
  }
  return models.get(name);
}

// model.streamLosses(tokens, { window, recompute: true }) in slices of SLICE positions, the same numbers
async function recomputeLosses(m, tokens, window, tick) {
  const out = new Float32Array(tokens.length - 1);
  for (let a = 0; a < out.length; a += SLICE) {
    const b = Math.min(out.length, a + SLICE), from = Math.max(0, a - window + 1);
    const part = m.streamLosses(tokens.subarray(from, b + 1), { window, recompute: true });
    out.set(part.subarray(a - from), a);
    await tick(b - a);
  }
  return out;
}

async function run({ id, way, text, window, sinks, files, bytes = {} }) {
  const lib = await libPromise;
  const ms = Object.fromEntries(Object.entries(files).map(([k, name]) => [k, model(lib, name, bytes)]));
  const first = Object.values(ms)[0];
  if (way === 'backcopy') window = Math.min(window, first.config.maxLen / 2); // letter models read 32 at a time
  if (sinks >= window) throw new Error(`keep fewer first tokens (${sinks}) than the window (${window})`);
  const tokens = Int32Array.from([0, ...lib.charsTokenizer.encode(text)]); // the start token, then the text
  if (tokens.length < 2 * window + 2) throw new Error(`give at least ${2 * window + 2} characters (twice the window)`);
  const ways = way === 'readings'
    ? [['window only', 'one', { window }], [`window + ${sinks} sinks`, 'one', { window, sinks }], ['recompute', 'one', { window, recompute: true }]]
    : [['nowhere to rest (plain, window only)', 'plain', { window }], [`StreamingLLM (plain, first ${sinks} kept)`, 'plain', { window, sinks }],
      ['learned sink (gpt-oss), window only', 'learned', { window }], ['output gate (Qiu et al.), window only', 'gate', { window }]];
  const n = tokens.length - 1, total = n * ways.length;
  let done = 0, label = '';
  const tick = async (k) => {
    done += k;
    postMessage({ type: 'progress', id, done, total, label });
    await new Promise((r) => setTimeout(r)); // let a newer request in
    if (latest !== id) throw new Superseded();
  };
  const results = [];
  for (const [name, key, opts] of ways) {
    label = name;
    const t0 = performance.now();
    const losses = opts.recompute ? await recomputeLosses(ms[key], tokens, window, tick) : ms[key].streamLosses(tokens, opts);
    const ms_ = performance.now() - t0;
    if (!opts.recompute) await tick(n);
    results.push({ label: name, model: key, losses, ms: ms_ });
  }
  const maxLen = first.config.maxLen;
  let weights;
  if (way === 'rest') {
    weights = Object.fromEntries(Object.entries(ms).map(([k, m]) => [k, firstTokenWeight(m, [...tokens.subarray(0, maxLen)])]));
  } else if (way === 'backcopy') {
    const working = triggerRows(lib.charsTokenizer.encode), starts = [];
    for (let a = 1; a + maxLen - 1 <= tokens.length && starts.length < 32; a += maxLen - 1) starts.push([0, ...tokens.subarray(a, a + maxLen - 1)]);
    weights = Object.fromEntries(Object.entries(ms).map(([k, m]) => [k, restingWeights(m, starts, working)]));
  }
  postMessage({ type: 'result', id, way, tokens: tokens.length, window, maxLen, results, first: weights },
    results.map((r) => r.losses.buffer));
}

addEventListener('message', (e) => {
  const msg = e.data;
  if (msg?.type !== 'run') return;
  latest = msg.id;
  run(msg).catch((err) => {
    if (!(err instanceof Superseded)) postMessage({ type: 'error', id: msg.id, message: err?.message ?? String(err) });
  });
});
