// features-worker.js: the feature browser's sparse autoencoder (views/features.js is the view,
// lab/features.js the measures), in a Web Worker so the page never waits on training. It loads the
// package, the shipped sub-word model and its tokenizer, and the project's corpus (data/chars.txt,
// ours): the SAE trains on the corpus's first nine tenths and is studied on the last tenth
// (web/models/stream-text.txt), which it never read.
// Messages in:  { type: 'train', id, layer, dSae, k, steps }   train on blocks.<layer>.hook_resid_post
//               { type: 'stop' }                                stop training between two steps (the SAE so far is studied)
//               { type: 'steer', id, feature, mode: 'add' | 'ablate', strength, prompt }   a greedy
//                 continuation of prompt (text) without and with the feature: 'add' adds strength x
//                 its unit decoder direction x the stream's mean row norm to every row; 'ablate'
//                 subtracts the feature's own contribution (its activation x its direction) at every row
//               { type: 'save', id }                              the SAE as safetensors
// Messages out: { type: 'progress', id, step, steps, fvu, l0, dead } | { type: 'trained', id, ... see below }
//               { type: 'steered', id, mode, prompt, plain, steered, size } | { type: 'saved', id, bytes } | { type: 'error', id, message }
import { pageFetch, workerLib } from './worker-page.js';
import { readSafetensors } from '../wasm/safetensors.js';
import { continueGreedy, featureDirections, studyFeatures } from '../lab/features.js';
import { pieceString } from '../lab/codec.js';

const MODEL = 'fortunes-bpe.safetensors', TOKENIZER = 'fortunes-bpe.tokenizer.json';
const CORPUS = new URL('../data/chars.txt', import.meta.url), HELD = new URL('./models/stream-text.txt', import.meta.url);
let ready = null; // Promise<{ lib, model, tok, unembed, train, held }>
let sae = null, hook = null, dirs = null, stopping = false;

// the bytes at url, fetched once by the page (worker-page.js)
const bytesOf = async (url) => new Uint8Array(await pageFetch(url));

function setup() {
  ready ??= (async () => {
    const lib = await workerLib(); // the page's compiled wasm (worker-page.js)
    const [mb, tb, all, held] = await Promise.all([bytesOf(new URL(`./models/${MODEL}`, import.meta.url)),
      bytesOf(new URL(`./models/${TOKENIZER}`, import.meta.url)), bytesOf(CORPUS), bytesOf(HELD)]);
    const model = lib.loadModel(mb, { training: false });
    const tok = lib.loadTokenizer(JSON.parse(new TextDecoder().decode(tb)));
    const st = readSafetensors(mb);
    const unembed = { weight: st.tensors.get('out.w').data, gain: st.tensors.get('lnf.w').data, limit: tok.vocabSize };
    const text = new TextDecoder().decode(all), heldText = new TextDecoder().decode(held);
    const cut = text.indexOf(heldText.slice(0, 200)); // the held-out tenth is the corpus's end
    return { lib, model, tok, unembed, train: tok.encode(cut > 0 ? text.slice(0, cut) : text), held: tok.encode(heldText) };
  })();
  ready.catch(() => { ready = null; });
  return ready;
}

// a piece as the page shows it: printable text (lab/codec.js's reading of a piece), or null for a
// lone byte of a longer character or a control character
function pieceText(tok, id) {
  const s = pieceString(tok, id);
  return s.includes('\uFFFD') || /[\u0000-\u0008\u000b-\u001f]/.test(s) ? null : s;
}

async function train(msg) {
  const { lib, model, tok, unembed, train: ids, held } = await setup();
  sae?.free();
  sae = null;
  stopping = false;
  hook = `blocks.${msg.layer}.hook_resid_post`;
  let stoppedAt = null;
  const t0 = performance.now();
  const trained = await lib.trainSAE({
    model, hook, ids, dSae: msg.dSae, k: msg.k, steps: msg.steps, batch: 256, lr: 3e-3, seed: 1,
    onProgress: (p) => {
      postMessage({ type: 'progress', id: msg.id, step: p.step, steps: p.steps, fvu: p.fvu, l0: p.l0, dead: p.dead });
      if (stopping && stoppedAt === null) stoppedAt = p.step;
      if (stopping) throw new Error('stopped');
    },
  }).catch((e) => {
    if (e.message.endsWith('stopped')) return null;
    throw e;
  });
  if (!trained) {
    postMessage({ type: 'stopped', id: msg.id, step: stoppedAt });
    return;
  }
  sae = trained;
  const ms = performance.now() - t0;
  dirs = featureDirections(sae);
  const study = studyFeatures({ model, sae, hook, ids: held, unembed, directions: dirs });
  const labels = Array.from(held, (id) => pieceText(tok, id) ?? '·');
  const features = study.features.map((f) => ({
    id: f.id, density: f.density, max: f.max, mean: f.mean, hist: f.hist, fires: f.fires,
    top: f.top.map(({ pos, value }) => ({ pos, value })),
    promoted: f.promoted.map((p) => ({ text: pieceText(tok, p.token), logit: p.logit })).filter((p) => p.text !== null).slice(0, 6),
  }));
  const dead = sae.sinceFired().filter((s) => s >= sae.config.deadTokens).length;
  postMessage({ type: 'trained', id: msg.id, hook, ms, fvu: study.fvu, heldTokens: held.length, trainTokens: ids.length,
    dead, config: sae.config, labels, features });
}

async function steer(msg) {
  const { model, tok } = await setup();
  if (!sae) throw new Error('train the autoencoder first');
  const { dIn, dSae } = sae.config;
  const f = msg.feature;
  if (!(Number.isInteger(f) && f >= 0 && f < dSae)) throw new Error(`feature must be an integer in [0, ${dSae - 1}], got ${f}`);
  const d = dirs.subarray(f * dIn, (f + 1) * dIn);
  const norm = Math.hypot(...d) || 1;
  const ids = tok.encode(msg.prompt).slice(0, model.config.maxLen - 8);
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
  const limit = tok.vocabSize;
  const plain = continueGreedy({ model, ids, tokens: 12, limit });
  const steered = continueGreedy({ model, ids, tokens: 12, limit, hooks });
  postMessage({ type: 'steered', id: msg.id, mode: msg.mode, prompt: tok.decode(ids), plain: tok.decode(plain), steered: tok.decode(steered), size });
}

onmessage = async ({ data: msg }) => {
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
      postMessage({ type: 'saved', id: msg.id, bytes }, [bytes.buffer]);
    }
  } catch (e) {
    postMessage({ type: 'error', id: msg.id, request: msg.type, message: e.message });
  }
};
