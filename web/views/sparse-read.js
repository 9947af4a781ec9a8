// sparse-read.js: "Which keys each query read", a fold of the trained-model panel shown when its model
// selects what each query reads (NSA, DSA: model.sparseReading). For one query (a slider over the
// positions, the last by default) and each head of the chosen layer, three strips across the query's
// full row of keys: the dense attention the selection replaces (the causal softmax of the same queries
// and keys), the keys the selection read (filled) and the weights the layer actually used; beside
// them the share of the dense attention's mass that the selection kept. Under them, that share over
// every query of the text and every head.
import { viridisCss } from './colormap.js';
import { readingSummary } from '../../lab/sparse.js';

const STRIPS = [['dense', 'dense attention (what a full softmax would read)'], ['selected', 'keys read'],
  ['weights', 'weights used']];
const STRIP_H = 14; // px per strip

/**
 * el: { box (the details), layer (select), query (range input), strips (div), summary (p) }; forms:
 * lib.forms (which forms select). Returns { show(model, tokens, labels) | hide() }.
 */
export function createSparseReadView(el, forms) {
  let shown = null; // { model, tokens, labels, reading }

  function drawStrips() {
    if (!shown?.reading) return;
    const r = shown.reading, n = r.n, t = Number(el.query.value);
    const width = Math.max(120, el.strips.clientWidth - 4);
    const cell = Math.max(2, Math.min(16, Math.floor(width / n)));
    const rows = [];
    for (let h = 0; h < r.heads; h++) {
      const row = r.dense[h].subarray(t * n, (t + 1) * n), sel = r.selected[h].subarray(t * n, (t + 1) * n);
      const used = r.weights[h].subarray(t * n, (t + 1) * n);
      const top = (a) => Math.max(1e-12, ...Array.from(a).slice(0, t + 1).map(Math.abs));
      const canvas = document.createElement('canvas');
      const labelled = cell >= 8; // room for each key's token under the strips
      const dpr = window.devicePixelRatio || 1, w = n * cell + 1, hgt = STRIPS.length * (STRIP_H + 3) + (labelled ? 14 : 0);
      Object.assign(canvas, { width: Math.round(w * dpr), height: Math.round(hgt * dpr) });
      Object.assign(canvas.style, { width: `${w}px`, height: `${hgt}px` });
      const ctx = canvas.getContext('2d');
      ctx.scale(dpr, dpr);
      const dmax = top(row), umax = top(used);
      let read = 0;
      for (let s = 0; s < n; s++) {
        const x = s * cell;
        if (s > t) { // the future: never read
          ctx.fillStyle = 'rgba(127, 127, 127, 0.15)';
          ctx.fillRect(x, 0, cell - 1, STRIPS.length * (STRIP_H + 3) - 3);
          continue;
        }
        ctx.fillStyle = viridisCss(row[s] / dmax);
        ctx.fillRect(x, 0, cell - 1, STRIP_H);
        if (sel[s]) read++;
        ctx.fillStyle = sel[s] ? getComputedStyle(el.strips).getPropertyValue('--accent') || '#1f6feb' : 'rgba(127, 127, 127, 0.25)';
        ctx.fillRect(x, STRIP_H + 3, cell - 1, STRIP_H);
        ctx.fillStyle = viridisCss(Math.abs(used[s]) / umax);
        ctx.fillRect(x, 2 * (STRIP_H + 3), cell - 1, STRIP_H);
      }
      if (labelled) { // the keys' tokens (a space as ␣), the query's own in bold
        ctx.fillStyle = getComputedStyle(el.strips).color;
        ctx.textAlign = 'center';
        ctx.textBaseline = 'top';
        for (let s = 0; s < n; s++) {
          ctx.font = `${s === t ? 'bold ' : ''}${Math.min(11, cell)}px ui-monospace, monospace`;
          const label = String(shown.labels[s] ?? '').replace(/ /g, '␣');
          ctx.fillText(label.length > 1 && cell < 14 ? label[0] : label.slice(0, 2), s * cell + cell / 2, STRIPS.length * (STRIP_H + 3));
        }
      }
      const fig = document.createElement('figure');
      fig.className = 'sparse-head';
      const cap = document.createElement('figcaption');
      cap.textContent = `Head ${h + 1}: read ${read} of ${t + 1} keys, keeping ${(100 * r.kept[h][t]).toFixed(1)}% of the dense attention's mass`;
      canvas.setAttribute('role', 'img');
      canvas.setAttribute('aria-label', `${cap.textContent}. Strips: ${STRIPS.map(([, label]) => label).join('; ')}.`);
      fig.append(cap, canvas);
      Object.assign(fig.dataset, { head: h, read, kept: r.kept[h][t].toFixed(6) });
      rows.push(fig);
    }
    const key = document.createElement('p');
    key.className = 'note';
    key.textContent = `Query ${t + 1} (“${shown.labels[t]}”). Strips, top to bottom: ${STRIPS.map(([, label]) => label).join('; ')}.`;
    el.strips.replaceChildren(key, ...rows);
    el.box.dataset.query = String(t);
  }

  function read() {
    const { model, tokens } = shown;
    const layer = Number(el.layer.value || 0);
    try {
      shown.reading = model.sparseReading(tokens, { layer });
    } catch (e) { // this layer reads every key (a hybrid's dense layer): say so
      shown.reading = null;
      el.strips.replaceChildren();
      el.summary.textContent = e.message.replace(/^attention-wasm: sparseReading: /, '');
      return;
    }
    const sum = readingSummary(shown.reading);
    el.summary.textContent = `Over every query of your text and every head of layer ${layer + 1}: the selection read `
      + `${(100 * sum.read).toFixed(0)}% of the keys a query may read and kept ${(100 * sum.kept).toFixed(1)}% of the dense `
      + 'attention\'s mass.';
    Object.assign(el.box.dataset, { kept: sum.kept.toFixed(6), read: sum.read.toFixed(6) });
    drawStrips();
  }

  el.layer.addEventListener('change', read);
  el.query.addEventListener('input', drawStrips);
  el.box.addEventListener('toggle', () => { if (el.box.open) drawStrips(); });

  return {
    show(model, tokens, labels) {
      // the decoder layers whose form selects what each query reads (its row in lib.forms says so)
      const c = model.config, sparse = [];
      for (let l = 0; l < c.layers; l++)
        if (c.arch === 'decoder' && forms.find((f) => f.name === (c.layerForms?.[l]?.attention ?? c.attention))?.selects)
          sparse.push(l);
      el.box.hidden = sparse.length === 0;
      if (!sparse.length) {
        shown = null;
        return;
      }
      const keep = Number(el.layer.value);
      el.layer.replaceChildren(...sparse.map((l) => new Option(`layer ${l + 1}`, String(l))));
      if (sparse.includes(keep)) el.layer.value = String(keep);
      el.query.max = String(tokens.length - 1);
      el.query.value = String(tokens.length - 1);
      shown = { model, tokens, labels, reading: null };
      read();
    },
    hide() {
      el.box.hidden = true;
      shown = null;
    },
  };
}
