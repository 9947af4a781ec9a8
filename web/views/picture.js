// picture.js: the first panel, the whole model in one picture (after transformer-explainer's layout).
// The open model reads the user's text: the shipped model of the form chosen in Settings (the
// sub-word model for softmax), or the model opened in "Open a model file" (llama2.c or Hugging Face).
// Top to bottom: the tokens; the embedding; each layer as a row of its heads' small attention
// patterns and its MLP, on the residual stream, which the logit lens reads after each layer; the
// next-token probabilities as top-k bars with a temperature. Hovering over (or tapping) a token
// lights its path: in every head, the column of that token (which later tokens read it, and how
// much) and the heads that read it most; a click on a head enlarges it into the labelled heatmap.
// Heads are named by what they do on the text (lab/heads.js), induction heads marked.
// One forward pass and one logit lens per text; hover redraws only the thumbnails (no model calls).
import { createHeatmapView } from './heatmap.js';
import { VIRIDIS } from './colormap.js';
import { displayWeights } from '../../lab/forms.js';
import { NAMED_AT, jumpBack, nameHead, scoreHead } from '../../lab/heads.js';
import { entryCodec } from '../../lab/codec.js';
import { modelCatalog, panelModel, topK } from './learned.js';
import { openedCodec, openedModel, onOpened } from '../opened.js';
import { fetchOnce } from '../fetch-once.js';

const MODELS = new URL('../models/', import.meta.url);
const SHOWN = 64; // tokens read at most
const TOP = 8; // next-token bars
export const LIT_AT = 0.3; // a head "reads" the lit token when a later query puts this much weight on it
const LENS_MAX = 16e6; // floats the logit lens may return (layers x tokens x vocab); bigger models skip it
const THUMB_MIN = 36; // px: a head's thumbnail is never smaller unless a line holds only one
const THUMB_GAP = 7; // px between heads on a line: style.css's .pic-heads gap (0.4rem), rounded up

const make = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

/** softmax(row / t) over the first `limit` entries' top k (lab: learned.js's topK on scaled logits). */
function guesses(row, t, k, limit) {
  const scaled = new Float32Array(row.length);
  for (let i = 0; i < row.length; i++) scaled[i] = row[i] / t;
  return topK(scaled, k, limit);
}

/**
 * el: { panel, text, own (the "open your own model" link), model, about, status, tokens, path, layers, bars, temp, tempOut, pos, big, bigBox, bigTitle,
 * bigLegend, bigReadout, bigExports }. The panel gets data-state ('loading' | 'ready' | 'error'),
 * data-source (the model's file or name), data-drawn (a count of drawings), data-layers, data-heads (per layer), data-lit (the lit
 * token's position) and each head figure data-read (the most a later token reads the lit one).
 */
export function createPictureView(el, { lib, onChange }) {
  let state = null, form = null;
  let request = 0, shown = '', drawings = 0;
  let run = null; // { ids, labels, attention (display), logits, lens, vocab, limit, layers, heads, names, codec }
  let lit = null; // the lit token's position
  let pos = 0; // the position whose next token the bars and the lens show
  let picked = null; // 'layer,head' enlarged
  let frame = 0;
  let source = 'shipped'; // 'shipped' | 'opened'
  const thumbs = []; // [{ canvas, figure, base (offscreen n x n), layer, head, weights }]

  const big = createHeatmapView({ grid: el.big, legend: el.bigLegend, readout: el.bigReadout, exports: el.bigExports, name: 'picture-head' });

  el.text.addEventListener('input', () => onChange({ ptext: el.text.value }));
  // "Open your own model": to the opener, focused (its files, its Hub id) so the keyboard is there too
  el.own?.addEventListener('click', (e) => {
    const opener = document.getElementById('llama2c');
    if (!opener || opener.hidden) return; // the link's own jump
    e.preventDefault();
    opener.scrollIntoView({ block: 'start' });
    opener.tabIndex = -1;
    opener.focus({ preventScroll: true });
  });
  el.temp.addEventListener('input', () => {
    el.tempOut.textContent = Number(el.temp.value).toFixed(1);
    bars();
  });
  el.model.addEventListener('change', () => {
    source = el.model.value;
    shown = '';
    draw();
  });
  onOpened((opened) => {
    listSources();
    source = opened ? 'opened' : 'shipped';
    el.model.value = source;
    shown = '';
    if (state) draw();
  });

  function listSources() {
    const opened = openedModel();
    const options = [new Option('the shipped model of the form in Settings', 'shipped')];
    if (opened) options.push(new Option(`opened: ${opened.name}`, 'opened'));
    el.model.replaceChildren(...options);
    el.model.value = opened ? source : 'shipped';
    el.model.closest('.field').hidden = !opened;
  }
  listSources();

  // The model to draw: { key, model-like { forward, logitLens, config }, codec, about }.
  async function open() {
    const opened = openedModel();
    if (source === 'opened' && opened) {
      // the model stays in the host (host.js): its forward and lens are requests there
      const m = { forward: (ids) => opened.forward(ids, { lens: true }), logitLens: null };
      return { key: opened.key, run: m, config: opened.config, codec: openedCodec(opened), name: opened.name,
        about: `${opened.name}, opened in "Open a model file": ${opened.config.layers} layers of ${opened.config.heads} heads, d = ${opened.config.dModel}.` };
    }
    const list = await modelCatalog();
    const mine = list.filter((e) => e.attention === form?.id);
    const entry = mine[0] ?? list.find((e) => e.entry?.tokenizer) ?? list[0];
    if (!entry) throw new Error('no trained model was found in web/models');
    const [codec, m] = await Promise.all([entryCodec(lib, entry.entry, MODELS, fetchOnce), panelModel(lib, entry.file)]);
    const c = m.config;
    const other = mine.length === 0 ? ` No model was trained with ${form.label}${form.causal ? '' : ' (it has no causal form)'}, so this is the shipped ${entry.attention} model.` : '';
    const what = codec.kind === 'bpe' ? `sub-word pieces (BPE of ${codec.vocab})` : 'characters';
    return { key: entry.file, run: m, config: c, codec, name: entry.file,
      about: `models/${entry.file}: ${m.parameterCount.toLocaleString('en')} parameters, ${c.layers} layers × ${c.heads} heads, d = ${c.dModel}, `
        + `${c.attention}, reading ${what}; trained on ${entry.source === 'fortunes' ? "Debian's fortunes" : "the project's 28 KB corpus"}.${other}` };
  }

  async function draw() {
    const id = ++request;
    el.panel.dataset.state = 'loading';
    let src;
    try {
      src = await open();
    } catch (e) {
      if (id !== request) return;
      el.panel.dataset.state = 'error';
      el.status.textContent = `The model did not load: ${e.message}`;
      return;
    }
    if (id !== request) return;
    const { codec, config } = src;
    const max = Math.min(SHOWN, config.maxLen);
    // a phrase read twice that does not fit the model's window is cut so that both copies fit (a
    // character model reads 64 characters)
    let text = state.ptext;
    const half = (text.length - 1) / 2, phrase = text.slice(0, Math.floor(half));
    const twice = Number.isInteger(half) && text === `${phrase} ${phrase}`;
    // (an opened model's codec answers from the host: awaited; a newer drawing may start meanwhile)
    try {
      if (twice && (await codec.encode(text)).ids.length > max) text = await codec.twice(phrase.replace(/[.\s]+$/, ''), max);
    } catch (e) {
      if (id !== request) return;
      el.panel.dataset.state = 'error';
      el.status.textContent = `The model could not read this text: ${e.message}`;
      return;
    }
    let enc;
    try {
      enc = await codec.encode(text);
    } catch (e) {
      if (id !== request) return;
      el.panel.dataset.state = 'error';
      el.status.textContent = `The model could not read this text: ${e.message}`;
      return;
    }
    if (id !== request) return;
    const ids = enc.ids.slice(0, max);
    const key = `${src.key}\n${form?.id}\n${Array.from(ids).join(',')}`;
    if (key === shown) {
      el.panel.dataset.state = 'ready';
      return;
    }
    if (ids.length < 2) {
      el.panel.dataset.state = 'ready';
      el.status.textContent = 'Type a few words: the picture needs at least two tokens.';
      el.layers.replaceChildren();
      el.tokens.replaceChildren();
      el.bars.replaceChildren();
      run = null;
      shown = key;
      return;
    }
    let out, lens = null;
    try {
      out = await src.run.forward(ids);
      if (id !== request) return;
      const { layers: L, vocab: V } = config;
      if (out.lens !== undefined) lens = out.lens; // the host's: read there when it fits
      else if (L * ids.length * V <= LENS_MAX && typeof src.run.logitLens === 'function') {
        try {
          lens = src.run.logitLens(ids);
        } catch { lens = null; } // a model without a final norm to read through (post-norm): no lens
      }
    } catch (e) {
      if (id !== request) return;
      el.panel.dataset.state = 'error';
      el.status.textContent = `The model could not read this text: ${e.message}`;
      return;
    }
    const n = ids.length;
    const labels = Array.from(ids, (t) => codec.label(t));
    const period = codec.period(ids);
    const names = [];
    const attention = out.attention.map((heads, l) => heads.map((w, h) => {
      const scores = scoreHead(w, [...ids]);
      const jump = period ? jumpBack(w, n, period) : 0;
      const name = period && jump >= NAMED_AT ? { name: 'induction', score: jump } : nameHead(scores);
      names.push({ layer: l, head: h, ...name, induction: Math.max(scores.induction, jump) });
      return displayWeights(form, w);
    }));
    run = { ids, labels, attention, logits: out.logits, lens, vocab: config.vocab, limit: codec.vocab, n,
      layers: attention.length, heads: attention[0]?.length ?? 0, names, codec, config };
    shown = key;
    pos = n - 1;
    lit = null;
    picked = null;
    const notes = [];
    if (text !== state.ptext) notes.push(`your phrase is cut so that it fits twice in the model's ${max} ${codec.unit}s`);
    if (enc.ids.length > max) notes.push(`only the first ${max} tokens are read`);
    if (enc.dropped.length) notes.push(`left out (not in its alphabet): ${enc.dropped.map((c) => `“${c}”`).join(' ')}`);
    const ind = names.filter((h) => h.name === 'induction');
    el.status.textContent = [
      notes.length ? `Note: ${notes.join('; ')}.` : '',
      period ? (ind.length ? `Your text is a phrase read twice: ${ind.map((h) => `layer ${h.layer + 1} head ${h.head + 1}`).join(', ')} `
        + `jump${ind.length === 1 ? 's' : ''} back to what followed the same token the first time (induction, marked ★).`
        : 'Your text is a phrase read twice, but no head here jumps back to what followed it the first time: no induction head.') : '',
    ].filter(Boolean).join(' ');
    el.about.textContent = src.about;
    el.panel.dataset.source = src.name;
    el.panel.dataset.layers = String(run.layers);
    el.panel.dataset.heads = String(run.heads);
    el.panel.dataset.induction = JSON.stringify(ind.map((h) => [h.layer, h.head]));
    drawTokens();
    drawLayers();
    bars();
    el.big.replaceChildren();
    el.bigBox.hidden = true;
    el.bigTitle.textContent = 'Click a head above to see it large, every token labelled.';
    el.panel.dataset.state = 'ready';
    el.panel.dataset.drawn = String(++drawings);
    el.panel.dataset.drawnAt = String(performance.now()); // when (the page-models bench reads it)
  }

  function drawTokens() {
    el.tokens.replaceChildren(...run.labels.map((label, i) => {
      const b = make('button', 'pic-token', label);
      b.type = 'button';
      b.dataset.pos = String(i);
      b.title = `token ${i}: “${label}” — hover or tap to light its path; click to see what the model guesses after it`;
      return b;
    }));
    markTokens();
  }

  function markTokens() {
    for (const b of el.tokens.children) {
      const i = Number(b.dataset.pos);
      b.classList.toggle('lit', i === lit);
      b.classList.toggle('pos', i === pos);
      b.classList.toggle('reads', lit !== null && i > lit && readers.has(i));
    }
  }

  // Thumbnail side in CSS px for heads on a line `width` px wide: as large as fits (at most 104),
  // the heads on as few even lines as keep each at least 36 px (12 heads on a phone: two lines of
  // 6), so that a layer's every head is in view, never cut off or hidden past a scroll.
  function thumbSize(width, heads) {
    const fits = (k) => Math.floor((width + THUMB_GAP) / k - THUMB_GAP - 4); // k on a line; 4: the button's border
    let perLine = Math.max(1, heads);
    while (perLine > 1 && fits(perLine) < THUMB_MIN) perLine--;
    perLine = Math.ceil(heads / Math.ceil(heads / perLine)); // the lines even
    return Math.max(8, Math.min(104, fits(perLine)));
  }

  function drawLayers() {
    thumbs.length = 0;
    const rows = [], lines = [];
    const embed = make('div', 'pic-row pic-embed');
    embed.append(make('div', 'pic-label', 'Embedding'), make('div', 'pic-note',
      `each token becomes a vector of ${run.config.dModel} numbers: the residual stream, which every layer reads and adds to`));
    rows.push(embed);
    for (let l = 0; l < run.layers; l++) {
      const row = make('div', 'pic-row');
      row.dataset.layer = String(l);
      const label = make('div', 'pic-label');
      label.append(make('strong', '', `Layer ${l + 1}`), make('span', 'pic-lens'));
      const heads = make('div', 'pic-heads');
      const mlp = make('div', 'pic-mlp', 'MLP');
      mlp.title = `the feed-forward sublayer of layer ${l + 1}: each token's vector on its own, through ${run.config.dFF} hidden units, added back to the stream`;
      row.append(label, heads, mlp);
      rows.push(row);
      lines.push(heads);
    }
    // laid out empty first: the heads' column is what the row leaves beside its label and MLP
    el.layers.replaceChildren(...rows);
    const size = thumbSize(lines[0]?.clientWidth || 400, run.heads);
    lines.forEach((heads, l) => {
      for (let h = 0; h < run.heads; h++) {
        const fig = make('figure', 'pic-head');
        const name = run.names[l * run.heads + h];
        fig.dataset.layer = String(l);
        fig.dataset.head = String(h);
        fig.dataset.name = name.name;
        fig.style.width = `${size + 4}px`;
        if (name.name === 'induction') fig.classList.add('induction');
        const canvas = make('canvas');
        const dpr = window.devicePixelRatio || 1;
        canvas.width = Math.round(size * dpr);
        canvas.height = Math.round(size * dpr);
        canvas.style.width = canvas.style.height = `${size}px`;
        const cap = make('figcaption', '', `${name.name === 'induction' ? '★ ' : ''}H${h + 1} ${short(name.name)}`);
        cap.title = `layer ${l + 1}, head ${h + 1}: ${name.name} (${name.score.toFixed(2)} of its weight in that pattern); click to see it large`;
        const button = make('button', 'pic-pick');
        button.type = 'button';
        button.setAttribute('aria-label', `Layer ${l + 1}, head ${h + 1}: ${name.name}. Show it large.`);
        button.append(canvas);
        button.addEventListener('click', () => enlarge(l, h));
        fig.append(button, cap);
        heads.append(fig);
        const w = run.attention[l][h];
        thumbs.push({ canvas, figure: fig, base: baseImage(w, run.n), layer: l, head: h, weights: w, size, dpr });
      }
    });
    for (const t of thumbs) paint(t);
    lensLabels();
  }

  const short = (name) => ({ 'previous token': 'prev', 'duplicate token': 'dup', 'first token': 'first', induction: 'induction', local: 'local' }[name] ?? name);

  function baseImage(w, n) {
    let top = 0;
    for (let k = 0; k < n * n; k++) if (w[k] > top) top = w[k];
    if (!(top > 0)) top = 1;
    const img = new ImageData(n, n);
    for (let k = 0; k < n * n; k++) {
      const c = 4 * Math.round(Math.max(0, Math.min(1, w[k] / top)) * 255);
      img.data[4 * k] = VIRIDIS[c];
      img.data[4 * k + 1] = VIRIDIS[c + 1];
      img.data[4 * k + 2] = VIRIDIS[c + 2];
      img.data[4 * k + 3] = 255;
    }
    const off = document.createElement('canvas');
    off.width = off.height = n;
    off.getContext('2d').putImageData(img, 0, 0);
    return off;
  }

  // One thumbnail: the pattern; with a lit token, everything dimmed but that token's column.
  function paint(t) {
    const ctx = t.canvas.getContext('2d');
    const px = t.canvas.width, n = run.n;
    ctx.imageSmoothingEnabled = false;
    ctx.globalAlpha = 1;
    ctx.clearRect(0, 0, px, px);
    if (lit === null) {
      ctx.drawImage(t.base, 0, 0, px, px);
      delete t.figure.dataset.read;
      t.figure.classList.remove('reads');
      return;
    }
    ctx.globalAlpha = 0.22;
    ctx.drawImage(t.base, 0, 0, px, px);
    ctx.globalAlpha = 1;
    const cell = px / n;
    // the lit token's column from its own row down: the later tokens that read it (none above: causal)
    ctx.drawImage(t.base, lit, lit, 1, n - lit, lit * cell, lit * cell, Math.max(1, cell), px - lit * cell);
    ctx.strokeStyle = '#f0a000';
    ctx.lineWidth = Math.max(1, t.dpr);
    ctx.strokeRect(lit * cell - ctx.lineWidth / 2, lit * cell, Math.max(1, cell) + ctx.lineWidth, px - lit * cell);
    const { read } = (t.lit ??= strongest(t)); // light() read the column; a thumbnail drawn since (a resize) reads it here
    t.figure.dataset.read = read.toFixed(3);
    t.figure.classList.toggle('reads', read >= LIT_AT);
  }

  let readers = new Set(); // positions that read the lit token in some head
  function light(i) {
    if (!run || i === lit) return;
    lit = i;
    readers = new Set();
    if (lit !== null) { // each head's column of the lit token, read once: its readers and its strongest
      const n = run.n;
      for (const t of thumbs) {
        for (let q = lit + 1; q < n; q++) if (t.weights[q * n + lit] >= LIT_AT) readers.add(q);
        t.lit = strongest(t);
      }
    }
    el.panel.dataset.lit = lit === null ? '' : String(lit);
    markTokens();
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => {
      for (const t of thumbs) paint(t);
      el.panel.dataset.painted = String(lit);
    });
    const label = lit === null ? '' : run.labels[lit];
    const reading = lit === null ? [] : thumbs.map((t) => ({ t, ...t.lit })).filter((r) => r.read >= LIT_AT)
      .sort((a, b) => b.read - a.read);
    el.path.textContent = lit === null ? 'Hover over or tap a token to light its path through the layers.'
      : reading.length === 0 ? `No head puts ${LIT_AT} or more of a later token's attention on “${label}”.`
        : `“${label}” (token ${lit}) is read by ${reading.length} head${reading.length === 1 ? '' : 's'}; most by `
          + reading.slice(0, 4).map((r) => `L${r.t.layer + 1}H${r.t.head + 1} from “${run.labels[r.from]}” (${r.read.toFixed(2)})`).join(', ')
          + (reading.length > 4 ? ', …' : '') + '. Lit squares show its column: who reads it, and how much.';
  }
  // the later token that reads the lit one most in head t, and how much
  function strongest(t) {
    let read = 0, from = lit;
    for (let q = lit + 1; q < run.n; q++) if (t.weights[q * run.n + lit] > read) { read = t.weights[q * run.n + lit]; from = q; }
    return { read, from };
  }

  el.tokens.addEventListener('pointerover', (e) => {
    const b = e.target.closest('.pic-token');
    if (b) light(Number(b.dataset.pos));
  });
  el.tokens.addEventListener('focusin', (e) => {
    const b = e.target.closest('.pic-token');
    if (b) light(Number(b.dataset.pos));
  });
  el.tokens.addEventListener('pointerleave', (e) => {
    if (e.pointerType === 'mouse') light(null);
  });
  el.tokens.addEventListener('click', (e) => {
    const b = e.target.closest('.pic-token');
    if (!b) return;
    pos = Number(b.dataset.pos);
    light(pos);
    markTokens();
    bars();
    lensLabels();
  });

  // The residual stream after each layer, read by the logit lens at the chosen position.
  function lensLabels() {
    if (!run) return;
    const { lens, vocab, limit } = run;
    for (const row of el.layers.querySelectorAll('.pic-row[data-layer]')) {
      const l = Number(row.dataset.layer);
      const span = row.querySelector('.pic-lens');
      if (!lens) {
        span.textContent = '';
        continue;
      }
      const off = (l * run.n + pos) * vocab;
      const [best] = topK(lens.data.subarray(off, off + vocab), 1, limit);
      span.textContent = `stream → “${run.codec.label(best.index)}” ${(100 * best.p).toFixed(0)}%`;
      span.title = `the logit lens: the final norm and the classifier read the residual stream after layer ${l + 1} at token ${pos}; its top guess for the next token`;
    }
  }

  function bars() {
    if (!run) return;
    const t = Number(el.temp.value);
    const row = run.logits.subarray(pos * run.vocab, (pos + 1) * run.vocab);
    const top = guesses(row, t, TOP, run.limit);
    el.pos.textContent = `After “${run.labels.slice(Math.max(0, pos - 4), pos + 1).join('')}” (token ${pos}), the next token:`;
    el.bars.replaceChildren(...top.map(({ index, p }) => {
      const li = make('li');
      const label = make('span', 'guess-char', run.codec.label(index));
      const bar = make('span', 'pic-bar');
      bar.style.width = `${Math.max(0.5, 100 * p).toFixed(1)}%`;
      const track = make('span', 'pic-track');
      track.append(bar);
      li.append(label, track, make('span', 'pic-p', `${(100 * p).toFixed(1)}%`));
      li.dataset.p = p.toFixed(4);
      return li;
    }));
  }

  function enlarge(l, h) {
    picked = `${l},${h}`;
    el.bigBox.hidden = false;
    const name = run.names[l * run.heads + h];
    el.bigTitle.textContent = `Layer ${l + 1}, head ${h + 1}: ${name.name} (${name.score.toFixed(2)}). Row i reads column j.`;
    big.render({ maps: [{ title: `Layer ${l + 1}, head ${h + 1}`, weights: run.attention[l][h] }], n: run.n, m: run.n,
      rowLabels: run.labels, colLabels: run.labels, scale: state.scale });
    el.panel.dataset.picked = picked;
    for (const t of thumbs) t.figure.classList.toggle('picked', `${t.layer},${t.head}` === picked);
  }

  return {
    update(newState, newForm) {
      state = newState;
      form = newForm;
      if (el.text.value !== state.ptext) el.text.value = state.ptext;
      draw();
    },
    resize() {
      if (run) {
        drawLayers();
        if (picked) enlarge(...picked.split(',').map(Number));
      }
    },
  };
}
