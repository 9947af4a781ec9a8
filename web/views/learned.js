// learned.js: the first panel. A character-level model built with the attention form chosen in
// Settings reads the user's text: one that has read Debian's fortunes when there is one for the form
// (web/models/fortunes.json, trained natively: scripts/fortunes-catalog.mjs), else the small model
// of the project's corpus (web/models/index.json, scripts/pretrain.mjs). The panel shows the
// attention of every layer and head on the text, names each head by what it does there (heads.js:
// previous token, induction, ...), shows the heads on the standard probe (random letters, then the
// same letters again) on request, and at a hovered or tapped row i the model's top-5 guesses for the
// character after position i. Runs on the page's thread: a forward pass of at most 64 characters
// takes milliseconds.
import { createHeatmapView } from './heatmap.js';
import { createSparseReadView } from './sparse-read.js';
import { download, llama2cSaveButton } from './export.js';
import { makeSampleLlama2c } from '../../lab/llama2c-sample.js';
import { llama2cRefusal } from '../../wasm/llama2c.js';
import { displayWeights } from '../../lab/forms.js';
import { LETTER_PROBE, NAMED_AT, describeInduction, jumpBack, nameHead, scoreHead } from '../../lab/heads.js';
import { entryCodec } from '../../lab/codec.js';
import { fetchJsonOnce, fetchOnce } from '../fetch-once.js';

const TOP = 5;
const MODELS = new URL('../models/', import.meta.url); // the catalogues, checkpoints and tokenizer files
const SHOWN = 64; // characters drawn at most (the heatmaps stay readable)

/**
 * The k largest entries of a softmax over row (a Float32Array of logits): [{ index, p }], among the
 * indices below `limit` (a model's vocabulary can be wider than its tokenizer's; p stays the
 * probability over the whole row).
 */
export function topK(row, k, limit = row.length) {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i] - max);
  // one pass keeping the k largest (a vocabulary of 50,000 is not sorted); ties keep the lower index first
  const best = [];
  const n = Math.min(limit, row.length);
  for (let i = 0; i < n; i++) {
    const x = row[i];
    if (best.length === k && x <= row[best[k - 1]]) continue;
    let at = best.length;
    while (at > 0 && row[best[at - 1]] < x) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return best.map((index) => ({ index, p: Math.exp(row[index] - max) / sum }));
}

/**
 * The panel's model for each form: fortunes.json's entries marked `panel` first (they have read
 * real text), then index.json's chars entries. Each: { file, attention, length, source, entry }.
 */
export function panelModels(fortunes, index) {
  const out = [];
  for (const e of fortunes?.models ?? []) {
    if (!e.panel) continue;
    out.push({ file: e.file, attention: e.config.attention, length: Math.min(e.config.maxLen, SHOWN), source: 'fortunes', entry: e });
  }
  for (const e of index?.models ?? []) {
    if (e.task !== 'chars' || out.some((o) => o.attention === e.attention)) continue;
    out.push({ file: e.file, attention: e.attention, length: Math.min(e.length, SHOWN), source: 'corpus', entry: e });
  }
  return out;
}

let catalog = null; // Promise<[panelModels]>, fetched once for every panel that reads it
/** The page's trained character models (panelModels of web/models/fortunes.json and index.json). */
export function modelCatalog() {
  const get = (name) => fetchJsonOnce(new URL(`../models/${name}`, import.meta.url)).catch(() => null);
  catalog ??= Promise.all([get('fortunes.json'), get('index.json')]).then(([f, i]) => panelModels(f, i));
  return catalog;
}

const loaded = new Map(); // file -> Promise<Model>, shared by the panels that draw the same checkpoint
/** A shipped checkpoint of web/models/ loaded for reading (never trained here), once for every panel. */
export function panelModel(lib, file) {
  if (!loaded.has(file)) {
    loaded.set(file, fetchOnce(new URL(file, MODELS)) // the page's one copy (fetch-once.js)
      .then((bytes) => lib.loadModel(new Uint8Array(bytes), { training: false })));
    loaded.get(file).catch(() => loaded.delete(file));
  }
  return loaded.get(file);
}

/**
 * el: { panel, text, label, about, status, grid, legend, readout, exports, guesses, probe, twice, heads, model?,
 * modelField? } (model: a select of the form's models when it has more than one).
 * lib: the loaded package. The panel gets data-state: 'loading' | 'ready' | 'none' (no checkpoint
 * for this form) | 'error', data-file (the checkpoint shown), data-view ('text' | 'probe') and
 * data-heads (JSON: [{ layer, head, name, score, induction }] of the heads as drawn).
 */
export function createLearnedView(el, { lib, onChange }) {
  let state = null;
  let form = null;
  let shown = ''; // file + text of the last drawing
  let current = null; // { chars, logits, vocab } of the drawing, for the guesses
  let request = 0;
  let view = 'text'; // 'text': the user's text; 'probe': the standard probe
  let focus = null; // 'layer,head' of a head picked in the list (drawn with a ring)

  const heatmaps = createHeatmapView({
    grid: el.grid, legend: el.legend, readout: el.readout, exports: el.exports, name: 'learned-attention',
    onCursor: ([i]) => showGuesses(i),
  });
  const panel = el.grid.closest('section');
  const sparse = createSparseReadView({
    box: panel.querySelector('#lsparse'), layer: panel.querySelector('#lsparse-layer'),
    query: panel.querySelector('#lsparse-query'), strips: panel.querySelector('#lsparse-strips'),
    summary: panel.querySelector('#lsparse-summary'),
  }, lib.forms);
  // "Save as llama2.c": the model shown, as llama2.c's model.bin and tokenizer.bin (renumbered so
  // that ids 1 and 2 are <s> and </s>: llama2c-sample.js), for "Open a model file" or run.c.
  const save = llama2cSaveButton(el.exports, 'lsave-llama2c');
  let saving = null; // { file, model, codec } of the drawing
  function allowSave(file, m, codec) {
    saving = m ? { file, model: m, codec } : null;
    const why = !m ? 'no model shown' : llama2cRefusal(m.config)
      ?? (codec.kind === 'chars' && m.config.vocab < lib.charsTokenizer.vocab + 2 ? 'it has no two spare token rows for llama2.c\'s <s> and </s>' : null);
    save.disabled = Boolean(why);
    save.title = why ? `llama2.c cannot hold this model: ${why}` : `Download ${file.replace(/\.safetensors$/, '')} as llama2.c's `
      + `model.bin and tokenizer.bin (${codec.kind === 'bpe' ? 'its sub-word pieces' : 'lower-case characters'}), which "Open a model file" and llama2.c's run.c read`;
  }
  save.addEventListener('click', () => {
    if (!saving) return;
    const pair = saving.codec.kind === 'bpe' ? { bin: saving.model.saveLlama2c(), tokenizer: saving.codec.tokenizer.toLlama2c() }
      : makeSampleLlama2c(lib, saving.model.save(), saving.file);
    download('model.bin', new Blob([pair.bin], { type: 'application/octet-stream' }));
    download('tokenizer.bin', new Blob([pair.tokenizer], { type: 'application/octet-stream' }));
  });
  el.text.addEventListener('input', () => {
    view = 'text';
    onChange({ ltext: el.text.value });
  });
  el.probe.addEventListener('click', () => {
    view = view === 'probe' ? 'text' : 'probe';
    focus = null;
    shown = '';
    draw();
  });
  // The guided step: the user's phrase typed twice; the status then names the head that jumps back.
  el.twice.addEventListener('click', async () => {
    const entry = pick(await entries());
    view = 'text';
    focus = null;
    const text = entry ? (await entryCodec(lib, entry.entry, MODELS, fetchOnce)).twice(el.text.value, entry.length) : el.text.value;
    el.text.value = text;
    shown = ''; // the same text again still says which head jumps back
    onChange({ ltext: text });
  });

  // The model shown for the form: the one picked in the model list, else the catalogue's first.
  const picked = new Map(); // form id -> file
  const optionsOf = (list) => list.filter((e) => e.attention === form?.id);
  function pick(list) {
    const options = optionsOf(list);
    return options.find((e) => e.file === picked.get(form?.id)) ?? options[0];
  }
  el.model?.addEventListener('change', () => {
    picked.set(form.id, el.model.value);
    shown = '';
    draw();
  });
  function listModels(list, entry) {
    if (!el.model) return;
    const options = optionsOf(list);
    el.modelField.hidden = options.length < 2;
    el.model.replaceChildren(...options.map((e) => {
      const o = document.createElement('option');
      o.value = e.file;
      const f = e.entry;
      const stem = e.file.replace(/\.safetensors$/, ''); // short enough for a phone; #labout says the rest
      o.textContent = e.source !== 'fortunes' ? `${stem} (the project's corpus)`
        : f.tokenizer && f.induction.score >= NAMED_AT ? `${stem} (sub-word, induction heads)` // short enough for a phone's select
          : f.induction.score >= NAMED_AT ? `${stem} (induction heads)` : `${stem} (${f.heldOutBits.toFixed(2)} bits/char)`;
      return o;
    }));
    el.model.value = entry.file;
  }

  const entries = modelCatalog;

  const model = (file) => panelModel(lib, file);

  // The guesses after position i: the softmax of the logits of row i, top 5, as bars.
  function showGuesses(i) {
    if (!current || i >= current.chars.length) return;
    const row = current.logits.subarray(i * current.vocab, (i + 1) * current.vocab);
    const { codec } = current;
    const top = topK(row, TOP, codec.vocab);
    const back = codec.kind === 'bpe' ? 5 : 11; // pieces are longer than characters
    const prefix = current.chars.slice(Math.max(0, i - back), i + 1).join('');
    const head = document.createElement('p');
    head.className = 'guess-head';
    head.textContent = `After “${i > back ? '…' : ''}${prefix}” (position ${i}) the model guesses the next ${codec.unit}:`;
    const list = document.createElement('ol');
    list.className = 'guess-list';
    for (const { index, p } of top) {
      const ch = codec.text(index);
      const li = document.createElement('li');
      const label = document.createElement('span');
      label.className = 'guess-char';
      label.textContent = codec.label(index);
      const bar = document.createElement('span');
      bar.className = 'guess-bar';
      bar.style.width = `${Math.max(1, Math.round(p * 160))}px`;
      li.append(label, bar, `${(100 * p).toFixed(1)}%`);
      li.dataset.char = ch;
      li.dataset.p = String(p);
      list.append(li);
    }
    const next = current.chars[i + 1];
    const real = document.createElement('p');
    real.className = 'note';
    real.textContent = next === undefined ? `This is the last ${codec.unit}: what comes next is up to you.`
      : `What you typed next: “${current.labels[i + 1]}”.`;
    el.guesses.replaceChildren(head, list, real);
    el.guesses.dataset.position = String(i);
  }

  // The list under the grid: every head named by what it does on what is drawn; a click shows the
  // heads on the probe with that head ringed.
  function listHeads(named) {
    el.heads.replaceChildren(...named.map((h) => {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'link';
      b.textContent = `layer ${h.layer + 1}, head ${h.head + 1}: ${h.name}, score ${h.score.toFixed(2)}`;
      b.title = `induction ${h.scores.induction.toFixed(2)}, previous token ${h.scores['previous token'].toFixed(2)}, `
        + `duplicate token ${h.scores['duplicate token'].toFixed(2)}, first token ${h.scores['first token'].toFixed(2)}, `
        + `local ${h.scores.local.toFixed(2)}`;
      b.addEventListener('click', () => {
        view = 'probe';
        focus = `${h.layer},${h.head}`;
        shown = '';
        draw();
      });
      li.append(b);
      return li;
    }));
  }

  async function draw() {
    const id = ++request;
    const list = await entries();
    if (id !== request) return;
    const entry = pick(list);
    if (!entry) {
      if (el.modelField) el.modelField.hidden = true;
      shown = '';
      current = null;
      el.panel.dataset.state = 'none';
      el.status.textContent = `No character model was trained with ${form.label}`
        + (form.causal ? '.' : ': it has no causal form, and a language model reads each character only after the ones '
          + 'before it.') + ' Choose another form in Settings; the sandbox below still shows this one.';
      heatmaps.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
      el.guesses.replaceChildren();
      el.heads.replaceChildren();
      el.probe.disabled = el.twice.disabled = true;
      allowSave(null, null);
      sparse.hide();
      return;
    }
    el.probe.disabled = el.twice.disabled = false;
    listModels(list, entry);
    el.probe.textContent = view === 'probe' ? 'Back to your text' : 'Show the heads on a probe';
    const max = entry.length;
    let codec;
    try {
      codec = await entryCodec(lib, entry.entry, MODELS, fetchOnce);
    } catch (e) {
      if (id !== request) return;
      el.panel.dataset.state = 'error';
      el.status.textContent = `The model's tokenizer did not load: ${e.message}`;
      return;
    }
    if (id !== request) return;
    el.label.textContent = codec.kind === 'bpe'
      ? `Text the trained model reads (any text: it reads sub-word pieces; the first ${max} pieces)`
      : `Text the trained model reads (lower case letters, digits and punctuation; the first ${max} characters)`;
    let chars, dropped = [], kept, tokens;
    if (view === 'probe') { // random tokens, then the same again (heads.js)
      tokens = codec.probe();
      chars = Array.from(tokens, codec.text);
      kept = chars;
    } else { // the chars alphabet is lower case; other characters are dropped (and the page says so)
      const enc = codec.encode(state.ltext);
      kept = enc.texts;
      dropped = enc.dropped;
      tokens = enc.ids.slice(0, max);
      chars = kept.slice(0, max);
    }
    const key = `${entry.file}\n${view}\n${focus}\n${Array.from(tokens).join(',')}`;
    if (key === shown) return;
    if (chars.length === 0) {
      el.status.textContent = codec.kind === 'bpe' ? 'Type some text.' : 'Type some text (letters, digits, punctuation).';
      heatmaps.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
      el.guesses.replaceChildren();
      el.heads.replaceChildren();
      shown = key;
      current = null;
      return;
    }
    el.panel.dataset.state = 'loading';
    let m;
    try {
      m = await model(entry.file);
    } catch (e) {
      if (id !== request) return;
      el.panel.dataset.state = 'error';
      el.status.textContent = `The character model did not load: ${e.message}`;
      return;
    }
    if (id !== request) return;
    allowSave(entry.file, m, codec);
    const { logits, attention } = m.forward(tokens);
    const maps = [], named = [];
    const period = view === 'text' ? codec.period(tokens) : 0; // your phrase twice: which head jumps back
    let back = null;
    attention.forEach((heads, l) => heads.forEach((weights, h) => {
      const scores = scoreHead(weights, [...tokens]);
      const jump = period ? jumpBack(weights, chars.length, period) : 0;
      if (period && (!back || jump > back.score)) back = { layer: l, head: h, score: jump };
      // on a phrase twice a head that jumps back is named so (the induction score's latest earlier
      // occurrence of a letter is often inside the phrase, not in its first copy)
      const name = period && jump >= NAMED_AT ? { name: 'induction', score: jump } : nameHead(scores);
      named.push({ layer: l, head: h, scores, ...name });
      const ring = focus === `${l},${h}` ? '▶ ' : '';
      maps.push({ title: `${ring}Layer ${l + 1}, head ${h + 1}: ${name.name} ${name.score.toFixed(2)}`,
        weights: displayWeights(form, weights) });
    }));
    const labels = Array.from(tokens, codec.label);
    current = { chars, labels, codec, logits, vocab: m.config.vocab };
    heatmaps.render({ maps, n: chars.length, m: chars.length, rowLabels: labels, colLabels: labels, scale: state.scale,
      columns: m.config.heads, form }); // a layer x head grid of thumbnails
    listHeads(named);
    sparse.show(m, tokens, labels); // for a model whose attention selects what it reads (NSA, DSA)
    shown = key;
    el.panel.dataset.state = 'ready';
    el.panel.dataset.file = entry.file;
    el.panel.dataset.view = view;
    el.panel.dataset.heads = JSON.stringify(named.map((h) => ({ layer: h.layer, head: h.head, name: h.name,
      score: h.score, induction: h.scores.induction })));
    const c = m.config, e = entry.entry;
    const unit = codec.unit, units = `${unit}s`;
    el.about.textContent = e.tokenizer
      ? `models/${entry.file}: ${m.parameterCount.toLocaleString('en')} parameters (d = ${c.dModel}, ${c.heads} heads, `
        + `${c.layers} layers, llama-style block) reading sub-word pieces: a byte-level BPE of ${codec.vocab} pieces `
        + `(models/${e.tokenizer}, trained on the same text; a piece is ${e.charsPerToken.toFixed(2)} characters on average, `
        + 'a leading space shown as ␣), the way today\'s language models read. Trained natively for '
        + `${e.steps} steps (${e.minutes} minutes on ${e.threads} core${e.threads > 1 ? 's' : ''}) on 2.3 MB of Debian's fortunes`
        + `${e.twice ? `, ${e.twice === 1 ? 'every training window' : `one training window in ${e.twice}`} opening with a passage read twice` : ''}; held-out `
        + `${e.heldOutBits.toFixed(2)} bits per character, capitals included (${(100 * e.heldOutAccuracy).toFixed(1)}% of next `
        + 'pieces guessed right). How it was made: web/models/fortunes.json.'
      : entry.source === 'fortunes'
      ? `models/${entry.file}: ${m.parameterCount.toLocaleString('en')} parameters (d = ${c.dModel}, ${c.heads} heads, `
        + `${c.layers} layers, llama-style block), trained natively for ${e.steps} steps (${e.minutes} minutes on ${e.threads} `
        + `core${e.threads > 1 ? 's' : ''}) on 2.3 MB of Debian's fortunes${e.twice
          ? `, ${e.twice === 1 ? 'every' : `one in ${e.twice}`} training window opening with a passage of the text read twice` : ''}; held-out ${e.heldOutBits.toFixed(2)} bits per `
        + `character (${(100 * e.heldOutAccuracy).toFixed(1)}% of next characters guessed right). How it was made: `
        + 'web/models/fortunes.json.'
      : `models/${entry.file}: ${m.parameterCount.toLocaleString('en')} parameters (d = ${c.dModel}, `
        + `${c.heads} heads, ${c.layers} layers), trained ${e.steps} steps on the project's 28 KB corpus of English prose `
        + `(no model of this form has read the larger text yet); held-out ${e.bitsPerChar.toFixed(2)} bits per character `
        + `(${(100 * e.accuracy).toFixed(1)}% of next characters guessed right). How it was made: web/models/index.json.`;
    const notes = [], said = [];
    if (view === 'probe') {
      const induction = describeInduction(named);
      el.panel.dataset.induction = induction.found ? 'found' : 'none';
      const what = codec.kind === 'bpe' ? ['pieces', 'piece'] : ['letters', 'letter'];
      said.push(`The probe: ${LETTER_PROBE.letters} random ${what[0]}, then the same ${LETTER_PROBE.letters} again. An induction head looks from each ${what[1]} `
        + `of the second copy to the ${what[1]} after it in the first copy: a diagonal stripe in the lower left. `
        + (induction.found ? `Strongest here: layer ${induction.head.layer + 1}, head ${induction.head.head + 1} `
          + `(induction ${induction.head.scores.induction.toFixed(2)})` : `Here ${induction.text}`));
    } else {
      if (kept.length > max) notes.push(`only the first ${max} ${units} are shown (the model reads ${max} at a time here)`);
      if (dropped.length) notes.push(`characters outside its alphabet are left out: ${dropped.map((ch) => `“${ch}”`).join(' ')}`);
      if (back) // the text is a phrase, ". ", and the phrase again (the guided step's, or typed so)
        said.push(back.score >= NAMED_AT
          ? `Your phrase, twice. Layer ${back.layer + 1}, head ${back.head + 1} jumps back: from each ${unit} of the `
            + `second copy to the ${unit} after it in the first (${back.score.toFixed(2)} of its weight there, on average): `
            + 'an induction head. Hover over a row of the second copy in its map to see it'
          : `Your phrase, twice. No head jumps back here: at most ${back.score.toFixed(2)} of a head's weight goes from the `
            + `second copy to the ${unit} after the same place in the first (layer ${back.layer + 1}, head ${back.head + 1}), `
            + `below the ${NAMED_AT} that names a head; this model has not learned an induction head`);
    }
    el.status.textContent = [notes.length ? `Note: ${notes.join('; ')}.` : '', ...said.map((x) => `${x}.`)].filter(Boolean).join(' ');
    showGuesses(chars.length - 1);
  }

  return {
    update(newState, newForm) {
      state = newState;
      form = newForm;
      if (el.text.value !== state.ltext) el.text.value = state.ltext;
      if (el.panel.dataset.scale !== state.scale) {
        el.panel.dataset.scale = state.scale;
        shown = '';
      }
      draw();
    },
  };
}
