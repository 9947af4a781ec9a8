// learned.js: the first panel. A small character-level model, trained on the project's corpus with
// the attention form chosen in Settings (web/models/chars-<form>.safetensors, made by
// scripts/pretrain.mjs), reads the user's text; the panel shows the attention of every layer and
// head on it, and at a hovered or tapped row i the model's top-5 guesses for the character after
// position i. Runs on the page's thread: one forward pass of at most 32 characters is instant.
import { createHeatmapView } from './heatmap.js';
import { displayWeights } from '../forms.js';

const TOP = 5;

const charLabel = (ch) => (ch === ' ' ? '␣' : ch === '\n' ? '↵' : ch);

/** The k largest entries of a softmax over row (a Float32Array of logits): [{ index, p }]. */
export function topK(row, k) {
  let max = -Infinity;
  for (const x of row) if (x > max) max = x;
  let sum = 0;
  const p = Array.from(row, (x) => {
    const e = Math.exp(x - max);
    sum += e;
    return e;
  });
  return p.map((e, index) => ({ index, p: e / sum })).sort((a, b) => b.p - a.p).slice(0, k);
}

/**
 * el: { panel, text, about, status, grid, legend, readout, exports, guesses }. lib: the loaded package.
 * The panel gets data-state: 'loading' | 'ready' | 'none' (no checkpoint for this form) | 'error',
 * and data-file (the checkpoint shown).
 */
export function createLearnedView(el, { lib, onChange }) {
  let state = null;
  let form = null;
  let catalog = null; // Promise<[entries of web/models/index.json]>
  const models = new Map(); // file -> Promise<Model>
  let shown = ''; // file + text of the last drawing
  let current = null; // { chars, logits, vocab } of the drawing, for the guesses
  let request = 0;

  const heatmaps = createHeatmapView({
    grid: el.grid, legend: el.legend, readout: el.readout, exports: el.exports, name: 'learned-attention',
    onCursor: ([i]) => showGuesses(i),
  });
  el.text.addEventListener('input', () => onChange({ ltext: el.text.value }));

  function entries() {
    catalog ??= fetch(new URL('../models/index.json', import.meta.url))
      .then((r) => (r.ok ? r.json() : { models: [] }))
      .then((j) => (j.models ?? []).filter((e) => e.task === 'chars'), () => []);
    return catalog;
  }

  function model(file) {
    if (!models.has(file)) {
      models.set(file, fetch(new URL(`../models/${file}`, import.meta.url)).then(async (r) => {
        if (!r.ok) throw new Error(`could not fetch models/${file}: HTTP ${r.status}`);
        return lib.loadModel(new Uint8Array(await r.arrayBuffer()));
      }));
      models.get(file).catch(() => models.delete(file));
    }
    return models.get(file);
  }

  // The guesses after position i: the softmax of the logits of row i, top 5, as bars.
  function showGuesses(i) {
    if (!current || i >= current.chars.length) return;
    const row = current.logits.subarray(i * current.vocab, (i + 1) * current.vocab);
    const top = topK(row, TOP);
    const prefix = current.chars.slice(Math.max(0, i - 11), i + 1).join('');
    const head = document.createElement('p');
    head.className = 'guess-head';
    head.textContent = `After “${i > 11 ? '…' : ''}${prefix}” (position ${i}) the model guesses the next character:`;
    const list = document.createElement('ol');
    list.className = 'guess-list';
    for (const { index, p } of top) {
      const ch = lib.charsTokenizer.decode([index]);
      const li = document.createElement('li');
      const label = document.createElement('span');
      label.className = 'guess-char';
      label.textContent = index === 0 ? '⟂' : charLabel(ch);
      const bar = document.createElement('span');
      bar.className = 'guess-bar';
      bar.style.width = `${Math.max(1, Math.round(p * 160))}px`;
      li.append(label, bar, `${(100 * p).toFixed(1)}%`);
      li.dataset.char = index === 0 ? '' : ch;
      li.dataset.p = String(p);
      list.append(li);
    }
    const next = current.chars[i + 1];
    const real = document.createElement('p');
    real.className = 'note';
    real.textContent = next === undefined ? 'This is the last character: what comes next is up to you.'
      : `What you typed next: “${charLabel(next)}”.`;
    el.guesses.replaceChildren(head, list, real);
    el.guesses.dataset.position = String(i);
  }

  async function draw() {
    const id = ++request;
    const list = await entries();
    if (id !== request) return;
    const entry = list.find((e) => e.attention === form.id);
    if (!entry) {
      shown = '';
      current = null;
      el.panel.dataset.state = 'none';
      el.status.textContent = `No character model was trained with ${form.label}`
        + (form.causal ? '.' : ': it has no causal form, and a language model reads each character only after the ones '
          + 'before it.') + ' Choose another form in Settings; the sandbox below still shows this one.';
      heatmaps.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
      el.guesses.replaceChildren();
      return;
    }
    // The model's alphabet is lower case; other characters are dropped (and the page says so).
    const max = entry.length;
    const lower = state.ltext.toLowerCase();
    const ids = [...lib.charsTokenizer.encode(lower)];
    const kept = [...lower].filter((_, k) => ids[k] !== 0);
    const dropped = [...new Set([...lower].filter((_, k) => ids[k] === 0))];
    const chars = kept.slice(0, max);
    const key = `${entry.file}\n${chars.join('')}`;
    if (key === shown) return;
    if (chars.length === 0) {
      el.status.textContent = 'Type some text (letters, digits, punctuation).';
      heatmaps.render({ maps: [], n: 1, m: 1, rowLabels: [], colLabels: [] });
      el.guesses.replaceChildren();
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
    const tokens = Int32Array.from(chars.map((ch) => lib.charsTokenizer.encode(ch)[0]));
    const { logits, attention } = m.forward(tokens);
    const maps = [];
    attention.forEach((heads, l) => heads.forEach((weights, h) =>
      maps.push({ title: `Layer ${l + 1}, head ${h + 1}`, weights: displayWeights(form, weights) })));
    const labels = chars.map(charLabel);
    current = { chars, logits, vocab: m.config.vocab };
    heatmaps.render({ maps, n: chars.length, m: chars.length, rowLabels: labels, colLabels: labels, scale: state.scale });
    shown = key;
    el.panel.dataset.state = 'ready';
    el.panel.dataset.file = entry.file;
    el.about.textContent = `models/${entry.file}: ${m.parameterCount.toLocaleString('en')} parameters (d = ${m.config.dModel}, `
      + `${m.config.heads} heads, ${m.config.layers} layers), trained ${entry.steps} steps on the project's corpus of `
      + `English prose; held-out ${entry.bitsPerChar.toFixed(2)} bits per character (${(100 * entry.accuracy).toFixed(1)}% `
      + 'of next characters guessed right). How it was made: web/models/index.json.';
    const notes = [];
    if (kept.length > max) notes.push(`only the first ${max} characters are shown (the model trained on ${max})`);
    if (dropped.length) notes.push(`characters outside its alphabet are left out: ${dropped.map((c) => `“${c}”`).join(' ')}`);
    el.status.textContent = notes.length ? `Note: ${notes.join('; ')}.` : '';
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
