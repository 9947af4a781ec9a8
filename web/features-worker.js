// features-worker.js: the feature browser's sparse autoencoder (views/features.js is the view,
// lab/features.js the measures), a task of the model host (model-host.js, a Worker) so the page
// never waits on training. It shares the host's library (hosted.js) and reads either the shipped
// sub-word model and its tokenizer, or the model open in "Open a model file" (the host's, by its
// key) with its own tokenizer; the text is the project's corpus (data/chars.txt, ours), the SAE
// training on its first nine tenths and studied on the last tenth (web/models/stream-text.txt),
// which it never read, or the learner's own text cut the same way.
// Messages in:  { type: 'train', id, model: 'shipped' | key, hook, times, k, steps, text }   train
//                 times x d features on the hook (a point of one row per position) of the model, on
//                 text (null: the corpus)
//               { type: 'stop' }                                stop training between two steps (the SAE so far is studied)
//               { type: 'steer', id, feature, mode: 'add' | 'ablate', strength, prompt }   a greedy
//                 continuation of prompt (text) without and with the feature: 'add' adds strength x
//                 its unit decoder direction x the stream's mean row norm to every row; 'ablate'
//                 subtracts the feature's own contribution (its activation x its direction) at every row
//               { type: 'save', id }                              the SAE as safetensors
// Messages out: { type: 'progress', id, step, steps, fvu, l0, dead } | { type: 'trained', id, ... see below }
//               { type: 'steered', id, mode, prompt, plain, steered, size } | { type: 'saved', id, bytes } | { type: 'error', id, message }
import { pageFetch } from './worker-page.js';
import { encodeText, hostedByKey, libPromise, onHosted } from './hosted.js';
import { readSafetensors } from '../wasm/safetensors.js';
import { continueGreedy, featureDirections, studyFeatures } from '../lab/features.js';
import { pieceString } from '../lab/codec.js';

const MODEL = 'fortunes-bpe.safetensors', TOKENIZER = 'fortunes-bpe.tokenizer.json';
const CORPUS = new URL('../data/chars.txt', import.meta.url), HELD = new URL('./models/stream-text.txt', import.meta.url);
let ready = null; // Promise<{ lib, model, tok, unembed, train, held }>: the shipped model's
let corpus = null; // Promise<{ text, held }>: the corpus and its held-out tenth
let sae = null, hook = null, dirs = null, stopping = false;
let using = null; // { model, tok, limit } the SAE was trained on (steering reads the same)
// the opened model closed: an SAE trained on it goes with it
onHosted((record, old) => {
  if (old && using?.model === old.model) {
    sae?.free();
    sae = null;
    using = null;
  }
});
const WINDOW = 128; // tokens per forward while reading the text: a large model's activations for a window are held at once (memory), and a short one only splits the context

// the bytes at url, fetched once by the page (worker-page.js)
const bytesOf = async (url) => new Uint8Array(await pageFetch(url));

function setup() {
  ready ??= (async () => {
    const lib = await libPromise; // the host's (hosted.js)
    const [mb, tb, all, held] = await Promise.all([bytesOf(new URL(`./models/${MODEL}`, import.meta.url)),
      bytesOf(new URL(`./models/${TOKENIZER}`, import.meta.url)), bytesOf(CORPUS), bytesOf(HELD)]);
    const model = lib.loadModel(mb, { training: false });
    const tok = lib.loadTokenizer(JSON.parse(new TextDecoder().decode(tb)));
    const st = readSafetensors(mb);
    const unembed = { weight: st.tensors.get('out.w').data, gain: st.tensors.get('lnf.w').data, limit: tok.vocabSize };
    const { text, held: heldText } = await corpusText();
    return { lib, model, tok, unembed, train: tok.encode(text), held: tok.encode(heldText) };
  })();
  ready.catch(() => { ready = null; });
  return ready;
}

// the corpus cut in two: { text (its first nine tenths), held (the last tenth, web/models/stream-text.txt) }
function corpusText() {
  corpus ??= Promise.all([bytesOf(CORPUS), bytesOf(HELD)]).then(([all, held]) => {
    const text = new TextDecoder().decode(all), heldText = new TextDecoder().decode(held);
    const cut = text.indexOf(heldText.slice(0, 200)); // the held-out tenth is the corpus's end
    return { text: cut > 0 ? text.slice(0, cut) : text, held: heldText };
  });
  corpus.catch(() => { corpus = null; });
  return corpus;
}

// The user's text in two: the first nine tenths to train on and the last tenth held out (cut at a space when one is near).
function ownText(text) {
  if (typeof text !== 'string' || text.trim().length < 200) throw new Error('your text is too short: give at least 200 characters (a few paragraphs train better)');
  let cut = Math.floor(text.length * 0.9);
  const space = text.lastIndexOf(' ', cut);
  if (space > cut - 80) cut = space;
  return { text: text.slice(0, cut), held: text.slice(cut) };
}

// What a request trains on: { model, tok, unembed (null: no promoted tokens), train, held, limit, label(id), note }.
async function sourceOf(msg) {
  if (msg.model === 'shipped') {
    const s = await setup();
    if (msg.text === null || msg.text === undefined) return { ...s, limit: s.tok.vocabSize, label: (id) => pieceText(s.tok, id), note: '' };
    const t = ownText(msg.text);
    return { ...s, train: s.tok.encode(t.text), held: s.tok.encode(t.held), limit: s.tok.vocabSize, label: (id) => pieceText(s.tok, id), note: '' };
  }
  const o = hostedByKey(msg.model), model = o.model, tok = model.tokenizer;
  const t = msg.text === null || msg.text === undefined ? await corpusText() : ownText(msg.text);
  const encode = (x) => Int32Array.from(encodeText(tok, x).ids);
  const label = (id) => {
    const s = o.tokens.decode(Int32Array.of(id));
    return s.includes('\uFFFD') || /[\u0000-\u0008\u000b-\u001f]/.test(s) ? null : s;
  };
  return { model, tok, unembed: null, train: encode(t.text), held: encode(t.held), limit: Math.min(model.config.vocab, tok.vocabSize ?? model.config.vocab),
    label, encode, note: `The tokens a feature promotes are not listed for ${o.name}: that needs its classifier's weights, which the host does not copy out.` };
}

// a piece as the page shows it: printable text (lab/codec.js's reading of a piece), or null for a
// lone byte of a longer character or a control character
function pieceText(tok, id) {
  const s = pieceString(tok, id);
  return s.includes('\uFFFD') || /[\u0000-\u0008\u000b-\u001f]/.test(s) ? null : s;
}

async function train(msg) {
  const lib = await libPromise;
  const src = await sourceOf(msg);
  const { model, unembed, train: ids, held } = src;
  sae?.free();
  sae = null;
  using = null;
  stopping = false;
  hook = msg.hook;
  if (typeof hook !== 'string' || !/^blocks\.\d+\.hook_(resid_post|mlp_out|attn_out|resid_pre|resid_mid)$/.test(hook))
    throw new Error(`the point to read must be a block's residual stream or sublayer output, got ${hook}`);
  let stoppedAt = null;
  const t0 = performance.now();
  // the width of the point: one row of it, on the first two tokens
  const dIn = model.runWithCache(ids.slice(0, 2), { names: [hook] }).cache[hook].shape[1];
  const fast = lib.trainSAEOptions?.includes('reuse'); // a library that reads each window once
  const trained = await lib.trainSAE({
    model, hook, ids, dSae: msg.times * dIn, k: msg.k, steps: msg.steps, batch: 256, lr: 3e-3, seed: 1,
    ...(fast ? { window: Math.min(WINDOW, model.config.maxLen), reuse: true,
      onRead: ({ done, total }) => post({ type: 'reading', id: msg.id, done, total }) } : {}),
    onProgress: (p) => {
      post({ type: 'progress', id: msg.id, step: p.step, steps: p.steps, fvu: p.fvu, l0: p.l0, dead: p.dead });
      if (stopping && stoppedAt === null) stoppedAt = p.step;
      if (stopping) throw new Error('stopped');
    },
  }).catch((e) => {
    if (e.message.endsWith('stopped')) return null;
    throw e;
  });
  if (!trained) {
    post({ type: 'stopped', id: msg.id, step: stoppedAt });
    return;
  }
  sae = trained;
  using = { model, tok: src.tok, limit: src.limit, decode: msg.model === 'shipped' ? (x) => src.tok.decode(x) : (x) => hostedByKey(msg.model).tokens.decode(Int32Array.from(x)),
    encode: msg.model === 'shipped' ? (x) => Array.from(src.tok.encode(x)) : (x) => Array.from(src.encode(x)) };
  const ms = performance.now() - t0;
  dirs = featureDirections(sae);
  const study = studyFeatures({ model, sae, hook, ids: held, unembed, directions: dirs });
  const labels = Array.from(held, (id) => src.label(id) ?? '·');
  const features = study.features.map((f) => ({
    id: f.id, density: f.density, max: f.max, mean: f.mean, hist: f.hist, fires: f.fires,
    top: f.top.map(({ pos, value }) => ({ pos, value })),
    promoted: (f.promoted ?? []).map((p) => ({ text: src.label(p.token), logit: p.logit })).filter((p) => p.text !== null).slice(0, 6),
  }));
  const dead = sae.sinceFired().filter((s) => s >= sae.config.deadTokens).length;
  post({ type: 'trained', id: msg.id, hook, ms, fvu: study.fvu, heldTokens: held.length, trainTokens: ids.length,
    dead, config: sae.config, labels, features, promotes: unembed !== null, note: src.note });
}

async function steer(msg) {
  if (!sae || !using) throw new Error('train the autoencoder first');
  const { model } = using;
  if (model.handle === 0) throw new Error('the model it was trained on was closed: train it again');
  const { dIn, dSae } = sae.config;
  const f = msg.feature;
  if (!(Number.isInteger(f) && f >= 0 && f < dSae)) throw new Error(`feature must be an integer in [0, ${dSae - 1}], got ${f}`);
  const d = dirs.subarray(f * dIn, (f + 1) * dIn);
  const norm = Math.hypot(...d) || 1;
  const ids = using.encode(msg.prompt).slice(0, Math.min(model.config.maxLen - 8, 64));
  if (ids.length === 0) throw new Error('type a prompt');
  // the stream's mean row norm at the hook on the prompt: the unit of the strength
  const rows = model.runWithCache(Int32Array.from(ids), { names: [hook] }).cache[hook].data;
  let size = 0;
  for (let r = 0; r < ids.length; r++) size += Math.hypot(...rows.subarray(r * dIn, (r + 1) * dIn)) / ids.length;
  const hooks = msg.mode === 'ablate'
    ? (win) => { // subtract the feature's own contribution, row by row
      const acts = model.runWithCache(win, { names: [hook] }).cache[hook].data;
      const { indices, values, k } = sae.encode(acts);
      const add = [];
      for (let r = 0; r < win.length; r++) for (let t = 0; t < k; t++) {
        if (indices[r * k + t] === f && values[r * k + t] > 0) add.push({ name: hook, vector: d, scale: -values[r * k + t], positions: [r] });
      }
      return add.length ? { add } : null;
    }
    : () => ({ add: [{ name: hook, vector: d, scale: (msg.strength * size) / norm }] });
  const limit = using.limit;
  const plain = continueGreedy({ model, ids, tokens: 12, limit });
  const steered = continueGreedy({ model, ids, tokens: 12, limit, hooks });
  post({ type: 'steered', id: msg.id, mode: msg.mode, prompt: using.decode(ids), plain: using.decode(plain), steered: using.decode(steered), size });
}

let post = () => {}; // the host's channel to the panel (featuresTask)

/** The task: handle(msg) for each message of the panel's channel; send(msg, transfer) answers. */
export function featuresTask(send) {
  post = send;
  return handle;
}

async function handle(msg) {
  if (msg.type === 'stop') {
    stopping = true;
    return;
  }
  try {
    if (msg.type === 'train') await train(msg);
    else if (msg.type === 'steer') await steer(msg);
    else if (msg.type === 'save') {
      if (!sae) throw new Error('train the autoencoder first');
      const bytes = sae.save();
      post({ type: 'saved', id: msg.id, bytes }, [bytes.buffer]);
    }
  } catch (e) {
    post({ type: 'error', id: msg.id, request: msg.type, message: e.message });
  }
}
