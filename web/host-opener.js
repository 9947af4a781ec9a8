// host-opener.js: the model host's side of "Open a model file" (views/opener.js is the panel). The
// files' bytes arrive here (transferred, never copied), are loaded by their row of formats.js, and the
// model stays here (hosted.js); the page gets what it draws: the config, the status line, every
// token's label, attention maps, generated tokens as they are made, the probe's scores and the
// weights table's measures. Every request is { id, type, ... } and is answered { id, type: 'done',
// result } or { id, type: 'error', message }; a long one posts events with its id before that, and
// { type: 'cancel', id } stops it at its next pause.
// Requests:
//   open { format, given: role -> [{ name, bytes: ArrayBuffer } | { name, file: File }], waited (ms before the host got them) }
//        a File is read here, in slices (events { type: 'reading', done, total } in bytes), so the
//        page's thread never copies a large file -> { key, name, status, kind, config, weightBytes, stop, bos, vocabSize, labels, texts }
//        (labels and texts: every token's, packed: { text, offsets })
//   close {}                         the model disposed
//   encode { text } -> { ids, lowered }   decode { ids } -> text
//   generate { prompt, maxTokens, stop }  events { type: 'tokens', tokens (new), text (all so far) };
//        -> { tokens, ms, firstMs, stopped }
//   forward { ids, lens } -> { attention: [layer][head] Float32Array (n x n), logits (n x vocab), lens | null }
//   probe { tokens } -> { heads: [{ layer, head, scores, name, score }], attention }
//   memory {} -> { heap (the wasm memory's bytes), inUse (what the library's allocator holds) }
//   weights { format, prompt, count, scored: { ids, chars } }  events { type: 'status', text };
//        -> { rows: [...], format }   the choice made (a quantized copy or fp32) and its row measured
import { FORMATS, WEIGHTS } from './formats.js';
import { encodeText, hostedModel, hostedByKey, libPromise, setHosted } from './hosted.js';
import { nameHead, scoreHead } from '../lab/heads.js';

const TIMED = 200; // ms of generation a tokens/s figure is measured over
const BITS_WINDOW = 256; // tokens per forward when scoring a text
const LENS_MAX = 16e6; // floats the logit lens may return (layers x tokens x vocab)
const LABELS_MAX = 300000; // token labels sent to the page at most (a vocabulary larger is labelled #id past it)

let serial = 0;
const cancelled = new Set(); // ids of requests the page cancelled

const pause = () => new Promise((r) => setTimeout(r, 0)); // lets a Cancel (and other tasks' requests) in
class Cancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'AbortError';
  }
}

// -log softmax(logits)[target], in nats
function nats(logits, target) {
  let max = -Infinity;
  for (let j = 0; j < logits.length; j++) if (logits[j] > max) max = logits[j];
  let sum = 0;
  for (let j = 0; j < logits.length; j++) sum += Math.exp(logits[j] - max);
  return Math.log(sum) + max - logits[target];
}

const open = () => {
  const o = hostedModel();
  if (!o) throw new Error('no model is open: open one first');
  return o;
};
const infer = (o) => o.quant?.model ?? o.model;


const SLICE = 16 * 2 ** 20; // bytes of a File read at a time (progress and Cancel between two)

// A File's bytes, read in slices into one buffer; onBytes(n) after each; throws Cancelled when asked.
async function readFile(file, onBytes, alive) {
  const out = new Uint8Array(file.size);
  for (let at = 0; at < file.size; at += SLICE) {
    out.set(new Uint8Array(await file.slice(at, Math.min(file.size, at + SLICE)).arrayBuffer()), at);
    onBytes(Math.min(SLICE, file.size - at));
    alive();
  }
  return out;
}

// A list of strings as one string and its offsets (the i-th is text.slice(offsets[i], offsets[i + 1])):
// the page reads one string and one buffer, not a hundred thousand small strings (opened.js unpackStrings).
function packStrings(list) {
  const offsets = new Uint32Array(list.length + 1);
  for (let i = 0; i < list.length; i++) offsets[i + 1] = offsets[i] + list[i].length;
  return { text: list.join(''), offsets };
}

async function load(msg, post) {
  const lib = await libPromise;
  const row = FORMATS.find((r) => r.format === msg.format);
  if (!row) throw new Error(`no format ${msg.format}`);
  setHosted(null); // the model before gives its memory back first
  const alive = () => { if (cancelled.has(msg.id)) throw new Cancelled(); };
  const entries = Object.values(msg.given).flat();
  const total = entries.reduce((a, f) => a + (f.file ? f.file.size : f.bytes.byteLength), 0);
  let done = 0;
  const given = {};
  for (const [role, files] of Object.entries(msg.given)) {
    given[role] = [];
    for (const f of files) {
      const bytes = f.file ? await readFile(f.file, (n) => post({ type: 'reading', id: msg.id, done: (done += n), total }), alive)
        : new Uint8Array(f.bytes);
      given[role].push({ name: f.name, bytes });
    }
  }
  post({ type: 'loading', id: msg.id });
  await pause();
  alive();
  const t0 = performance.now();
  const model = row.load(lib, given);
  const loadMs = performance.now() - t0;
  if (cancelled.has(msg.id)) { // Cancel came while it loaded: nothing is kept
    model.dispose();
    throw new Cancelled();
  }
  const shown = row.shows(model, { ms: loadMs + (msg.waited ?? 0), given, ...(msg.hub ?? {}) });
  const tokens = row.tokens(model);
  const key = `opened-${++serial}`;
  setHosted({ key, name: shown.name, kind: row.format, model, tokens, quant: null });
  const c = model.config, tok = model.tokenizer;
  const vocabSize = Math.min(c.vocab, tok.vocabSize ?? tok.vocab ?? tok.pieces?.length ?? c.vocab);
  // every token's label and text, so the page labels ids without the tokenizer
  const labels = [], texts = [];
  const marks = row.format === 'llama2c' && /<s>/.test(tok.pieces?.[1] ?? '');
  for (let id = 0; id < Math.min(vocabSize, LABELS_MAX); id++) {
    let label = '', text = '';
    try {
      label = tokens.label(id);
      text = row.format === 'llama2c' ? (marks && (id === 1 || id === 2) ? '' : tok.piece(id)) : tok.decode([id]);
    } catch { /* an id the tokenizer cannot spell alone: no label */ }
    labels.push(label);
    texts.push(text);
    if (id % 8192 === 8191) await pause();
  }
  return { key, name: shown.name, status: shown.status, kind: row.format, config: { ...c }, weightBytes: { ...model.weightBytes },
    stop: tokens.stop, bos: tokens.bos, vocabSize, labels: packStrings(labels), texts: packStrings(texts), loadMs,
    notes: model.huggingFace?.notes ?? [] };
}

// Greedy generation, posted as it is made: a session's next() one token at a time when the library
// has sessions (model.startGeneration), else one call for all of them.
async function generate(msg, post) {
  const o = open(), m = infer(o);
  const prompt = Int32Array.from(msg.prompt);
  const opts = msg.stop !== null && msg.stop !== undefined ? { maxTokens: msg.maxTokens, stop: msg.stop } : { maxTokens: msg.maxTokens };
  const t0 = performance.now();
  let out = [], firstMs = null, stopped = false;
  const send = (fresh) => {
    out.push(...fresh);
    if (firstMs === null && out.length) firstMs = performance.now() - t0;
    post({ type: 'tokens', id: msg.id, tokens: Array.from(fresh), count: out.length, ms: performance.now() - t0,
      text: o.tokens.decode(Int32Array.from([...prompt, ...out])) });
  };
  if (typeof m.startGeneration === 'function') {
    const s = m.startGeneration(prompt, opts);
    try {
      while (!s.done) {
        const fresh = s.next(1);
        if (fresh.length) send(fresh);
        await pause();
        if (cancelled.has(msg.id) || hostedModel() !== o) {
          stopped = true;
          break;
        }
      }
    } finally {
      s.dispose();
    }
  } else {
    send(m.generate(prompt, opts));
  }
  return { tokens: out, ms: performance.now() - t0, firstMs, stopped, weights: o.quant?.format ?? o.model.weightBytes.format,
    text: o.tokens.decode(Int32Array.from([...prompt, ...out])) };
}

function forward(msg) {
  const o = open(), m = infer(o), ids = Int32Array.from(msg.ids);
  const out = m.forward(ids);
  let lens = null;
  const { layers: L, vocab: V } = m.config;
  if (msg.lens && L * ids.length * V <= LENS_MAX && typeof m.logitLens === 'function') {
    try {
      lens = m.logitLens(ids);
    } catch { lens = null; } // a model without a final norm to read through: no lens
  }
  return { attention: out.attention, logits: msg.logits === false ? null : out.logits, lens };
}

async function probe(msg) {
  const o = open(), m = infer(o), tokens = Array.from(msg.tokens);
  const { attention } = m.forward(Int32Array.from(tokens));
  const heads = [];
  for (let l = 0; l < attention.length; l++) {
    attention[l].forEach((w, head) => {
      const scores = scoreHead(w, tokens);
      heads.push({ layer: l, head, scores, ...nameHead(scores) });
    });
  }
  return { heads, attention };
}

// Bits per character of ids under m: forwards over windows of up to BITS_WINDOW tokens that
// overlap by one, so every token after the first is scored once.
async function textBits(m, { ids, chars }, alive) {
  const L = Math.min(m.config.maxLen, BITS_WINDOW), V = m.config.vocab;
  let total = 0;
  for (let s = 0; s + 1 < ids.length; s += L - 1) {
    const w = ids.subarray(s, Math.min(ids.length, s + L));
    const { logits } = m.forward(w);
    for (let i = 1; i < w.length; i++) total += nats(logits.subarray((i - 1) * V, i * V), w[i]);
    await pause();
    alive();
  }
  return total / chars / Math.LN2;
}

// One format's row: its weight bytes, tokens/s of a greedy generation of `count` tokens after the
// prompt (no stop token), bits per character, and the largest |A - A_fp32| of the attention on the prompt.
async function measureRow(o, format, m, { prompt, count, scored }, alive) {
  let ms = 0, runs = 0, out;
  while (ms < TIMED && runs < 50) {
    const t0 = performance.now();
    out = m.generate(prompt, { maxTokens: count });
    ms += performance.now() - t0;
    runs++;
    await pause();
    alive();
  }
  const { attention } = m.forward(prompt);
  let change = 0;
  if (format !== 'fp32') {
    o.rows.get('fp32').attention.forEach((layer, l) => layer.forEach((a, h) => {
      const b = attention[l][h];
      for (let i = 0; i < a.length; i++) change = Math.max(change, Math.abs(b[i] - a[i]));
    }));
  }
  await pause();
  alive();
  const bits = await textBits(m, scored, alive);
  const { bytes, fp32 } = m.weightBytes;
  return { format, bytes, fp32, tokens: out.length, runs, ms, tokensPerSecond: (runs * out.length / ms) * 1000, bits, attentionChange: change,
    attention: format === 'fp32' ? attention : null };
}

// A weights choice: its quantized copy made (or fp32 taken back), then the fp32 row and its row
// measured for this prompt and count (kept while they stay the same).
async function weights(msg, post) {
  const o = open();
  const alive = () => {
    if (cancelled.has(msg.id) || hostedModel() !== o) throw new Cancelled();
  };
  const status = (text) => post({ type: 'status', id: msg.id, text });
  const { format, count } = msg;
  if (o.quant?.format !== format) {
    o.quant?.model.dispose();
    o.quant = null;
    if (format !== 'fp32') {
      status(`Making ${WEIGHTS[format]} weights: quantizing a copy of the fp32 model…`);
      const abort = new AbortController();
      const watch = setInterval(() => { if (cancelled.has(msg.id) || hostedModel() !== o) abort.abort(); }, 50);
      let copy;
      try {
        copy = await o.model.quantizedCopy(format, { signal: abort.signal });
      } catch (e) {
        if (e?.name === 'AbortError') throw new Cancelled();
        throw new Error(`${WEIGHTS[format]} weights cannot be made for this model: ${e.message.replace(/^attention-wasm: quantizedCopy: /, '')}`);
      } finally {
        clearInterval(watch);
      }
      if (hostedModel() !== o) {
        copy.dispose();
        throw new Cancelled();
      }
      o.quant = { format, model: copy };
    }
  }
  const prompt = Int32Array.from(msg.prompt), scored = { ids: Int32Array.from(msg.scored.ids), chars: msg.scored.chars };
  const key = `${Array.from(prompt).join(',')}\u0000${count}\u0000${msg.scored.ids.length}`;
  if (o.rowsKey !== key) {
    o.rows = new Map();
    o.rowsKey = key;
  }
  for (const f of ['fp32', format]) {
    if (o.rows.has(f)) continue;
    status(`Measuring ${WEIGHTS[f]} weights: ${count} tokens, then bits per character…`);
    await pause();
    o.rows.set(f, await measureRow(o, f, f === 'fp32' ? o.model : o.quant.model, { prompt, count, scored }, alive));
  }
  return { format, rows: [...o.rows.values()].map(({ attention, ...r }) => r) };
}

/** The task: handle(msg) for each request of the opener's channel; post(msg, transfer) answers. */
export function openerTask(post) {
  return async (msg) => {
    if (msg.type === 'cancel') {
      cancelled.add(msg.id);
      return;
    }
    try {
      let result, transfer = [];
      switch (msg.type) {
        case 'open':
          result = await load(msg, post);
          transfer = [result.labels.offsets.buffer, result.texts.offsets.buffer];
          break;
        case 'close': setHosted(null); result = null; break;
        case 'encode': {
          const e = encodeText(open().model.tokenizer, msg.text);
          result = { ids: Array.from(e.ids), lowered: e.lowered };
          break;
        }
        case 'decode': result = open().tokens.decode(Int32Array.from(msg.ids)); break;
        case 'generate': result = await generate(msg, post); break;
        case 'forward': {
          if (msg.key) hostedByKey(msg.key);
          result = forward(msg);
          transfer = [...result.attention.flat().map((a) => a.buffer), ...(result.logits ? [result.logits.buffer] : [])];
          break;
        }
        case 'probe': result = await probe(msg); break;
        case 'memory': { // the wasm heap: its size now, the most the library has held, and what it holds now
          const lib = await libPromise; // a wasm memory never shrinks: its size is the peak
          result = { heap: lib.memory.buffer.byteLength, inUse: lib.heapInUse() };
          break;
        }
        case 'weights': result = await weights(msg, post); break;
        default: throw new Error(`the opener's host has no request ${msg.type}`);
      }
      post({ type: 'done', id: msg.id, result }, [...new Set(transfer)]);
    } catch (e) {
      post({ type: 'error', id: msg.id, message: e.message, abort: e?.name === 'AbortError' });
    } finally {
      cancelled.delete(msg.id);
    }
  };
}
