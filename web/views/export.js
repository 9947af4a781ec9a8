// export.js: downloads. A heatmap grid as one PNG (its canvases side by side, with captions) or as
// an SVG (one rect per cell, labels as text, so it scales and can be edited); a table as CSV.
import { viridisCss } from './colormap.js';

/** "Save as llama2.c": a button at the end of the row of buttons `row` (the downloads), disabled until its panel allows it. */
export function llama2cSaveButton(row, id) {
  const button = document.createElement('button');
  button.type = 'button';
  button.id = id;
  button.className = 'secondary small';
  button.textContent = 'Save as llama2.c (model.bin, tokenizer.bin)';
  button.disabled = true;
  row.append(button);
  return button;
}

/** Saves a Blob under `name` through a temporary link (no server round trip). */
export function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** CSV text of rows (arrays of strings or numbers): RFC 4180 quoting where needed. */
export function toCsv(rows) {
  const cell = (v) => {
    const s = String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${rows.map((r) => r.map(cell).join(',')).join('\n')}\n`;
}

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * One SVG of every map: maps [{ title, weights (n*m) }], labels, the colour top (vmax, or 'row'
 * for each row's own maximum). Each cell is a rect with its value in a <title>.
 */
export function heatmapsToSvg({ maps, n, m, rowLabels, colLabels, vmax, scale }) {
  const cell = Math.max(6, Math.min(24, Math.floor(360 / Math.max(n, m))));
  const left = 70, top = 70, gap = 24;
  const w = left + m * cell, h = top + n * cell + 20;
  const parts = [];
  maps.forEach((map, k) => {
    const x0 = k * (w + gap);
    parts.push(`<g transform="translate(${x0},0)"><text x="${left}" y="14" font-weight="600">${esc(map.title)}</text>`);
    for (let i = 0; i < n; i++) {
      let rowTop = vmax;
      if (scale === 'row') {
        rowTop = 0;
        for (let j = 0; j < m; j++) rowTop = Math.max(rowTop, map.weights[i * m + j]);
        if (!(rowTop > 0)) rowTop = 1;
      }
      for (let j = 0; j < m; j++) {
        const v = map.weights[i * m + j];
        parts.push(`<rect x="${left + j * cell}" y="${top + i * cell}" width="${cell}" height="${cell}" `
          + `fill="${viridisCss(Math.max(0, Math.min(1, v / rowTop)))}"><title>${i},${j}: ${v.toPrecision(4)}</title></rect>`);
      }
      parts.push(`<text x="${left - 4}" y="${top + (i + 0.7) * cell}" text-anchor="end">${esc(rowLabels[i])}</text>`);
    }
    for (let j = 0; j < m; j++) {
      const x = left + (j + 0.7) * cell;
      parts.push(`<text transform="translate(${x},${top - 4}) rotate(-90)">${esc(colLabels[j])}</text>`);
    }
    parts.push('</g>');
  });
  const width = maps.length * (w + gap) - gap;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${h}" `
    + `viewBox="0 0 ${width} ${h}" font-family="sans-serif" font-size="${Math.min(11, cell)}">`
    + `<rect width="100%" height="100%" fill="#fff"/>${parts.join('')}</svg>\n`;
}

/** One PNG of the grid's figures: each canvas with its caption above, side by side, on white. */
export function gridToPng(grid) {
  const figures = [...grid.querySelectorAll('figure')];
  const dpr = window.devicePixelRatio || 1;
  const gap = 16 * dpr, capH = 20 * dpr;
  const canvases = figures.map((f) => f.querySelector('canvas'));
  const width = canvases.reduce((a, c) => a + c.width, 0) + gap * Math.max(0, canvases.length - 1);
  const height = capH + Math.max(1, ...canvases.map((c) => c.height));
  const out = document.createElement('canvas');
  out.width = Math.max(1, width);
  out.height = height;
  const ctx = out.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = '#1d1f24';
  ctx.font = `600 ${12 * dpr}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  let x = 0;
  figures.forEach((f, k) => {
    ctx.fillText(f.querySelector('figcaption').textContent, x + 2 * dpr, 3 * dpr);
    ctx.drawImage(canvases[k], x, capH);
    x += canvases[k].width + gap;
  });
  return new Promise((resolve) => out.toBlob(resolve, 'image/png'));
}
