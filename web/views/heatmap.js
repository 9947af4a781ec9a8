// heatmap.js: the attention matrices as a grid of heatmaps, one per (layer,) head. Rows are query
// positions i, columns key positions j, both labelled with the tokens; colour is viridis on one
// shared scale 0..max, or per row 0..row max (the legend says which); hover, a tap (touch or pen)
// or the arrow keys read (i, j, value) in a tooltip beside the cell and in a line under the grid.
// When cells are too small for every label, every k-th is drawn and a line under the figure says
// so. With `columns`, the maps are thumbnails in a layer x head grid, one shown large on a click.
import { VIRIDIS, viridisCss } from './colormap.js';
import { download, gridToPng, heatmapsToSvg } from './export.js';
import { weightsMeaning } from '../../lab/forms.js';

const FONT = '11px system-ui, sans-serif';
const MAX_LABEL = 8; // characters of a token label before it is cut with an ellipsis

// Labels are drawn for every k-th token: all of them when cells are tall enough for text (single
// characters, drawn a point smaller, fit in 9 px cells).
function labelEvery(cell, chars = false) {
  return Math.max(1, Math.ceil((chars ? 9 : 11) / cell));
}
const isChars = (labels) => labels.every((s) => [...s].length <= 1);
const labelFont = (chars) => (chars ? '10px system-ui, sans-serif' : FONT);

function ordinal(k) {
  const suffix = k % 100 >= 11 && k % 100 <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' }[k % 10] ?? 'th');
  return `${k}${suffix}`;
}

function shortLabel(s) {
  return s.length > MAX_LABEL ? `${s.slice(0, MAX_LABEL - 1)}…` : s;
}

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/**
 * A figure: one canvas drawing one n x m matrix with labels; keeps its own cursor for keyboard reading.
 */
class HeatmapFigure {
  constructor(parent, onRead, onPick) {
    this.figure = document.createElement('figure');
    this.figure.className = 'heatmap';
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.caption = document.createElement('figcaption');
    // A thumbnail's title is a button that shows the map large (onPick); the caption's text stays the title.
    if (onPick) {
      this.pick = document.createElement('button');
      this.pick.type = 'button';
      this.pick.className = 'link';
      this.pick.addEventListener('click', onPick);
      this.caption.append(this.pick);
    }
    this.figure.append(this.caption, this.canvas);
    parent.append(this.figure);
    this.onRead = onRead;
    this.cursor = null;
    // Pointer events: a mouse reads as it moves; a finger or pen reads where it taps (pointerdown),
    // and the reading stays after the finger lifts (a touch's pointerleave must not clear it).
    this.canvas.addEventListener('pointermove', (e) => {
      if (e.pointerType === 'mouse') this.hover(e);
    });
    this.canvas.addEventListener('pointerdown', (e) => this.hover(e));
    this.canvas.addEventListener('pointerleave', (e) => {
      if (e.pointerType === 'mouse') this.setCursor(null);
    });
    this.canvas.addEventListener('focus', () => this.setCursor(this.cursor ?? [0, 0]));
    this.canvas.addEventListener('blur', () => this.setCursor(null));
    this.canvas.addEventListener('keydown', (e) => this.key(e));
  }

  set(map, data) {
    this.map = map;
    this.data = data;
    (this.pick ?? this.caption).textContent = map.title;
    if (this.pick) this.pick.title = 'Show this head large, every character labelled';
    this.canvas.setAttribute('aria-label',
      `${map.title}: attention weights, ${data.n} query rows by ${data.m} key columns. Arrow keys read values.`);
    this.layout();
    this.draw();
  }

  layout() {
    const { n, m, rowLabels, colLabels, cellSize, bare } = this.data;
    const ctx = this.canvas.getContext('2d');
    ctx.font = labelFont(this.data.chars);
    const widest = (labels) => Math.max(...labels.map((s) => ctx.measureText(shortLabel(s)).width));
    // a thumbnail (bare) has no axis labels: hover or tap reads its tokens
    this.left = bare ? 1 : Math.ceil(widest(rowLabels)) + 8;
    this.top = bare ? 1 : Math.ceil(widest(colLabels)) + 8;
    this.cell = cellSize;
    this.width = this.left + m * this.cell + 2;
    this.height = this.top + n * this.cell + 2;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${this.height}px`;
    this.caption.style.width = bare ? `${Math.max(this.width, THUMB_MIN)}px` : ''; // a thumbnail's title wraps to its map
    this.dpr = dpr;
    // Where the matrix sits (CSS px), for readers of the pixels such as the browser tests.
    Object.assign(this.canvas.dataset, { left: this.left, top: this.top, cell: this.cell, n, m });
  }

  draw() {
    const { n, m, rowLabels, colLabels, vmax, scale } = this.data;
    const w = this.map.weights;
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);

    // The matrix: one pixel per entry in an offscreen image, scaled up without smoothing.
    const img = new ImageData(m, n);
    let top = vmax;
    for (let idx = 0; idx < n * m; idx++) {
      if (scale === 'row' && idx % m === 0) {
        top = 0;
        for (let j = idx; j < idx + m; j++) if (w[j] > top) top = w[j];
        if (!(top > 0)) top = 1; // an all-zero row stays dark
      }
      const t = Math.max(0, Math.min(1, w[idx] / top));
      const c = 4 * Math.round(t * 255);
      img.data[4 * idx] = VIRIDIS[c];
      img.data[4 * idx + 1] = VIRIDIS[c + 1];
      img.data[4 * idx + 2] = VIRIDIS[c + 2];
      img.data[4 * idx + 3] = 255;
    }
    const off = document.createElement('canvas');
    off.width = m;
    off.height = n;
    off.getContext('2d').putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, this.left, this.top, m * this.cell, n * this.cell);

    // Labels: every one when cells are tall enough for text, else every k-th; none on a thumbnail.
    ctx.font = labelFont(this.data.chars);
    ctx.fillStyle = cssVar('--fg', '#222');
    const every = this.data.bare ? Infinity : labelEvery(this.cell, this.data.chars);
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (let i = 0; i < n && every < Infinity; i += every) {
      ctx.fillText(shortLabel(rowLabels[i]), this.left - 4, this.top + (i + 0.5) * this.cell);
    }
    ctx.save();
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    for (let j = 0; j < m && every < Infinity; j += every) {
      ctx.fillText(shortLabel(colLabels[j]), -(this.top - 4), this.left + (j + 0.5) * this.cell);
    }
    ctx.restore();

    if (this.cursor) {
      const [i, j] = this.cursor;
      ctx.strokeStyle = '#ff3d7f';
      ctx.lineWidth = 2;
      ctx.strokeRect(this.left + j * this.cell, this.top + i * this.cell, this.cell, this.cell);
    }
  }

  hover(e) {
    const r = this.canvas.getBoundingClientRect();
    const j = Math.floor((e.clientX - r.left - this.left) / this.cell);
    const i = Math.floor((e.clientY - r.top - this.top) / this.cell);
    this.setCursor(i >= 0 && i < this.data.n && j >= 0 && j < this.data.m ? [i, j] : null);
  }

  key(e) {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const mv = moves[e.key];
    if (!mv) return;
    e.preventDefault();
    const [i, j] = this.cursor ?? [0, 0];
    this.setCursor([
      Math.max(0, Math.min(this.data.n - 1, i + mv[0])),
      Math.max(0, Math.min(this.data.m - 1, j + mv[1])),
    ]);
  }

  setCursor(cell) {
    const same = cell && this.cursor && cell[0] === this.cursor[0] && cell[1] === this.cursor[1];
    if (same || (!cell && !this.cursor)) return;
    this.cursor = cell;
    this.draw();
    if (cell) {
      const [i, j] = cell;
      const { rowLabels, colLabels, m } = this.data, a = this.map.weights[i * m + j];
      this.onRead(`${this.map.title}: row i = ${i} “${rowLabels[i]}” → column j = ${j} “${colLabels[j]}”: `
        + `A = ${a.toFixed(4)}`, cell, { tip: `A[${i}, ${j}] = ${a.toFixed(3)}\n“${rowLabels[i]}” reads “${colLabels[j]}”`, at: () => this.cellRect(i, j) });
    } else {
      this.onRead(null, null);
    }
  }

  // The cell's box on the screen (client px), for the tooltip beside it.
  cellRect(i, j) {
    const r = this.canvas.getBoundingClientRect();
    const x = r.left + this.left + j * this.cell, y = r.top + this.top + i * this.cell;
    return { left: x, top: y, right: x + this.cell, bottom: y + this.cell };
  }
}

function drawLegend(canvas, vmax, scale) {
  const width = 220, height = 34, barH = 12;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const x0 = 6, x1 = width - 6;
  for (let x = x0; x < x1; x++) {
    ctx.fillStyle = viridisCss((x - x0) / (x1 - x0 - 1));
    ctx.fillRect(x, 2, 1, barH);
  }
  ctx.font = FONT;
  ctx.fillStyle = cssVar('--fg', '#222');
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  ctx.fillText('0', x0, barH + 6);
  ctx.textAlign = 'center';
  ctx.fillText(scale === 'row' ? '½ row max' : (vmax / 2).toPrecision(2), (x0 + x1) / 2, barH + 6);
  ctx.textAlign = 'right';
  ctx.fillText(scale === 'row' ? 'row max' : vmax.toPrecision(3), x1, barH + 6);
  canvas.setAttribute('aria-label', scale === 'row'
    ? 'Colour scale: viridis from 0 (dark purple) to the largest weight of each row (yellow)'
    : `Colour scale: viridis from 0 (dark purple) to ${vmax.toPrecision(3)} (yellow)`);
}

const GAP = 13; // px between figures (the grid's CSS gap, 0.8rem)
const LABEL_ROOM = 75; // px the enlarged map keeps for its row labels

// The px a figure spends on its row labels and border (HeatmapFigure.layout's left + 2), measured.
let measure = null;
function labelRoom(labels, chars) {
  measure ??= document.createElement('canvas').getContext('2d');
  measure.font = labelFont(chars);
  let widest = 0;
  for (const s of labels) widest = Math.max(widest, measure.measureText(shortLabel(s)).width);
  return Math.ceil(widest) + 10;
}

// Cell size in px: as many figures side by side as keep cells readable (at least 6 px, or 3 px for
// long sequences), each at most a ~300 px square.
function chooseCellSize(width, count, len, labels) {
  const minCell = len <= 32 ? 6 : 3;
  for (let cols = count; cols >= 1; cols--) {
    const room = Math.min(300, (width - (cols - 1) * GAP) / cols - labels);
    const cell = Math.min(28, Math.floor(room / len));
    if (cell >= minCell || cols === 1) return Math.max(2, cell);
  }
  return 2;
}

const THUMB_MIN = 90; // px: a thumbnail's title needs this much, however small its map

// Thumbnails: `cols` maps to a row (a layer's heads), else the largest divisor of it that fits (cells
// of 2 px or more, titles of THUMB_MIN), so that a row never holds two layers' heads and the layers
// stay lined up on a phone (4 heads: 2 to a row, not 3); cells at most 9 px. Returns { cols, cell }.
function thumbLayout(width, heads, len) {
  for (let cols = heads; cols >= 1; cols--) {
    if (heads % cols) continue;
    const each = (width - (cols - 1) * GAP) / cols;
    const cell = Math.min(9, Math.floor((each - 4) / len));
    if ((cell >= 2 && each >= THUMB_MIN) || cols === 1) return { cols, cell: Math.max(2, cell) };
  }
  return { cols: 1, cell: 2 };
}

/**
 * The heatmap grid view. elements: { grid, legend (canvas), readout, exports? (a container that gets
 * "Download PNG" and "Download SVG" buttons for the whole grid), name? (file name stem),
 * onCursor? ([i, j] of a cell read by hover, tap or keys) }.
 * render({ maps: [{ title, weights (n*m) }], n, m, rowLabels, colLabels, scale?, columns?, form? }).
 * form: the attention form drawn (probeForms' or a registry entry); one whose weights are not a
 * distribution gets a line beside the colour scale saying what they are.
 * columns: draw the maps as thumbnails without axis labels, `columns` to a row (a layer x head grid,
 * as bertviz's model view); a thumbnail's title shows it large, at the grid's width, above the grid.
 */
export function createHeatmapView({ grid, legend, readout, exports, name = 'attention', onCursor }) {
  const figures = [];
  let last = null; // what render drew, for the SVG
  let big = null, picked = null; // the enlarged thumbnail: { box, figure, title }, the index shown
  let lastArgs = null;
  // One line under the grid says when the figures' axis labels are thinned.
  const labelNote = document.createElement('p');
  labelNote.className = 'note label-note';
  labelNote.hidden = true;
  grid.after(labelNote);
  // One line beside the colour scale: what the colours are when they are not probabilities.
  const legendNote = document.createElement('span');
  legendNote.className = 'legend-note';
  legendNote.hidden = true;
  legend.after(legendNote);
  // The value read at a cell, in a tooltip beside that cell (right of it, or left when the screen
  // ends; kept inside the viewport): what a person sees, next to the cursor or the finger. The
  // readout line under the grid says the same at length, for screen readers.
  const tip = document.createElement('div');
  tip.className = 'heatmap-tip';
  tip.setAttribute('aria-hidden', 'true');
  tip.hidden = true;
  labelNote.after(tip); // the note stays next to the grid (#heatmaps + .label-note)
  let tipAt = null; // () => the read cell's box on the screen
  // a fixed tip follows its cell when the page scrolls
  window.addEventListener('scroll', () => { if (!tip.hidden && tipAt) placeTip(tip.textContent, tipAt); }, { passive: true });
  function placeTip(text, where) {
    tipAt = where;
    const at = where();
    tip.textContent = text;
    tip.hidden = false;
    const w = tip.offsetWidth, h = tip.offsetHeight, vw = document.documentElement.clientWidth, vh = window.innerHeight, gap = 6;
    let x = at.right + gap;
    if (x + w > vw - 4) x = at.left - gap - w;
    x = Math.max(4, Math.min(vw - w - 4, x));
    let y = at.top + (at.bottom - at.top) / 2 - h / 2;
    y = Math.max(4, Math.min(vh - h - 4, y));
    tip.style.left = `${Math.round(x)}px`;
    tip.style.top = `${Math.round(y)}px`;
    Object.assign(tip.dataset, { x: Math.round(x), y: Math.round(y) });
  }

  // The enlarged map (thumbnails only): above the grid, as wide as the grid, every label when the
  // cells have room; its title or "Back to all heads" puts it away.
  function enlarge(k) {
    picked = k;
    if (!big && k === null) return; // made on the first click, never empty (an unlabelled button and canvas)
    if (!big) {
      const box = document.createElement('div');
      box.className = 'heatmap-big';
      const close = document.createElement('button');
      close.type = 'button';
      close.className = 'secondary small';
      close.textContent = 'Back to all heads';
      close.addEventListener('click', () => enlarge(null));
      box.append(close);
      grid.before(box);
      big = { box, figure: new HeatmapFigure(box, read, () => enlarge(null)) };
      box.insertBefore(big.figure.figure, close);
    }
    big.box.hidden = picked === null || !lastArgs || picked >= lastArgs.maps.length;
    grid.dataset.enlarged = big.box.hidden ? '' : String(picked);
    for (const [h, f] of figures.entries()) f.figure.classList.toggle('picked', h === picked);
    if (big.box.hidden) return;
    const { maps, data } = lastArgs;
    const len = Math.max(data.n, data.m), chars = data.chars;
    const room = grid.clientWidth - (chars ? 24 : LABEL_ROOM);
    big.figure.set(maps[picked], { ...data, bare: false, cellSize: Math.max(2, Math.min(28, Math.floor(room / len))) });
  }
  const read = (text, cell, detail) => {
    if (text === null) {
      tip.hidden = true;
      return;
    }
    readout.textContent = text;
    if (detail) placeTip(detail.tip, detail.at);
    else tip.hidden = true;
    if (cell) onCursor?.(cell);
  };
  // the downloads this view owns (the row may hold a panel's own buttons, e.g. "Save as llama2.c")
  const downloads = [];
  if (exports) {
    const button = (label, onClick) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'secondary small';
      b.textContent = label;
      b.addEventListener('click', onClick);
      exports.append(b);
      downloads.push(b);
      return b;
    };
    button('Download PNG', async () => {
      if (last?.maps.length) download(`${name}.png`, await gridToPng(grid));
    });
    button('Download SVG', () => {
      if (last?.maps.length) download(`${name}.svg`, new Blob([heatmapsToSvg(last)], { type: 'image/svg+xml' }));
    });
  }
  let lastCall = null, drawnWidth = 0; // render's arguments and the grid's width it fitted the cells to
  const api = {
    render(args) {
      const { maps, n, m, rowLabels, colLabels, scale = 'max', columns = 0, form = null } = args;
      lastCall = args;
      drawnWidth = grid.clientWidth;
      let vmax = 0;
      for (const map of maps) for (const x of map.weights) if (x > vmax) vmax = x;
      if (!(vmax > 0)) vmax = 1;
      const len = Math.max(n, m), thumbs = columns > 0 && maps.length > 0;
      const thumb = thumbs ? thumbLayout(grid.clientWidth, columns, len) : null;
      const cellSize = thumb ? thumb.cell
        : chooseCellSize(grid.clientWidth, maps.length, len, labelRoom(rowLabels, isChars(rowLabels) && isChars(colLabels)));
      grid.classList.toggle('thumbs', thumbs);
      grid.style.gridTemplateColumns = thumb ? `repeat(${thumb.cols}, max-content)` : '';
      if (grid.dataset.mode !== String(thumbs)) { // thumbnails' titles are buttons: new figures
        while (figures.length) figures.pop().figure.remove();
        grid.dataset.mode = String(thumbs);
      }
      while (figures.length < maps.length) {
        const k = figures.length;
        figures.push(new HeatmapFigure(grid, read, columns ? () => enlarge(picked === k ? null : k) : null));
      }
      while (figures.length > maps.length) figures.pop().figure.remove();
      const chars = isChars(rowLabels) && isChars(colLabels);
      const data = { n, m, rowLabels, colLabels, vmax, cellSize, scale, bare: thumbs, chars };
      // the same maps drawn again (a resize): a cell read stays read
      const same = last && last.n === n && last.m === m && last.maps.length === maps.length &&
        String(last.rowLabels) === String(rowLabels) && String(last.colLabels) === String(colLabels) &&
        maps.every((mp, h) => mp.weights.length === last.maps[h].weights.length && mp.weights.every((x, i) => x === last.maps[h].weights[i]));
      last = { maps: maps.map((mp) => ({ title: mp.title, weights: Float32Array.from(mp.weights) })), ...data };
      for (const b of downloads) b.disabled = maps.length === 0;
      maps.forEach((map, h) => figures[h].set(map, data));
      lastArgs = { maps, data };
      if (thumbs || big) enlarge(thumbs ? picked : null);
      const every = labelEvery(cellSize, chars);
      labelNote.hidden = thumbs ? false : every === 1 || maps.length === 0;
      labelNote.textContent = thumbs ? `${thumb.cols === columns ? 'Layers in rows, heads in columns' : `${columns} heads a layer, `
        + `${thumb.cols} to a row (the screen is narrow)`}. Click a head's title to see it large${chars
        ? ', every character labelled' : ''}; hover over or tap a cell to read its tokens.`
        : labelNote.hidden ? '' : `Axis labels: every ${ordinal(every)} token (the cells are too small `
        + 'for all); hover over or tap a cell to read its tokens.';
      drawLegend(legend, vmax, scale);
      // a form whose weights are not a distribution (lab/forms.js weightsMeaning) says so beside the scale
      const meaning = maps.length ? weightsMeaning(form) : null;
      legendNote.hidden = !meaning;
      legendNote.textContent = meaning ?? '';
      legend.setAttribute('aria-label', `${legend.getAttribute('aria-label')}${meaning ? `. ${meaning}` : ''}`);
      if (!same) read('Hover over or tap a heatmap, or focus it and use the arrow keys, to read A[i, j].');
    },
  };
  // The cells fit the grid's width when drawn; a panel drawn before the page's layout settled (or
  // moved into another column) is fitted again once its width changes.
  if (typeof ResizeObserver === 'function') {
    new ResizeObserver(() => {
      const w = grid.clientWidth;
      if (lastCall && w > 0 && w !== drawnWidth) api.render(lastCall);
    }).observe(grid);
  }
  return api;
}
