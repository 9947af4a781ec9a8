// chart.js: a small canvas line chart with logarithmic or linear axes, for the timings (time
// against n on log-log axes, where O(n^2) and O(n) show as slopes 2 and 1) and the training curves.
// Plain canvas: no library, so the page works offline with nothing to vendor.

/**
 * Series colours: Okabe-Ito's colour-blind-safe set without its pale yellow (unreadable on white),
 * then fifteen of Paul Tol's hues: twenty-two colours for the first twenty-two series (every form of the
 * registry today). Each series also gets a marker shape, and beyond twenty-two a dash pattern, so none look alike.
 */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#882255', '#44AA99', '#AA4499',
  '#999933', '#332288', '#661100', '#6699CC', '#117733', '#CC6677', '#88CCEE', '#AA7744', '#EE3377', '#777777',
  '#DDCC77', '#BB5566'];
export const DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3]];
export const MARKERS = ['circle', 'square', 'triangle', 'diamond', 'cross'];

export function seriesStyle(index) {
  return {
    color: PALETTE[index % PALETTE.length],
    dash: DASHES[Math.floor(index / PALETTE.length) % DASHES.length],
    marker: MARKERS[index % MARKERS.length],
  };
}

/** Draws a marker of shape `marker` centred at (x, y), radius r, in the current fill/stroke colour. */
export function drawMarker(ctx, marker, x, y, r = 3) {
  ctx.beginPath();
  if (marker === 'square') ctx.rect(x - r, y - r, 2 * r, 2 * r);
  else if (marker === 'triangle') {
    ctx.moveTo(x, y - 1.2 * r);
    ctx.lineTo(x + 1.1 * r, y + 0.8 * r);
    ctx.lineTo(x - 1.1 * r, y + 0.8 * r);
    ctx.closePath();
  } else if (marker === 'diamond') {
    ctx.moveTo(x, y - 1.3 * r);
    ctx.lineTo(x + 1.3 * r, y);
    ctx.lineTo(x, y + 1.3 * r);
    ctx.lineTo(x - 1.3 * r, y);
    ctx.closePath();
  } else if (marker === 'cross') {
    ctx.save();
    ctx.lineWidth = 2;
    ctx.setLineDash([]);
    ctx.moveTo(x - r, y - r);
    ctx.lineTo(x + r, y + r);
    ctx.moveTo(x + r, y - r);
    ctx.lineTo(x - r, y + r);
    ctx.stroke();
    ctx.restore();
    return;
  } else ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.fill();
}

/** A legend swatch: a short canvas with the series' line, dash and marker. */
export function legendSwatch(style) {
  const c = document.createElement('canvas');
  const dpr = window.devicePixelRatio || 1;
  c.width = 30 * dpr;
  c.height = 12 * dpr;
  c.style.width = '30px';
  c.style.height = '12px';
  c.className = 'swatch-line';
  c.setAttribute('aria-hidden', 'true');
  Object.assign(c.dataset, { color: style.color, marker: style.marker ?? 'circle', dash: (style.dash ?? []).join(' ') });
  const ctx = c.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.strokeStyle = style.color;
  ctx.fillStyle = style.color;
  ctx.lineWidth = 2;
  ctx.setLineDash(style.dash ?? []);
  ctx.beginPath();
  ctx.moveTo(1, 6);
  ctx.lineTo(29, 6);
  ctx.stroke();
  ctx.setLineDash([]);
  drawMarker(ctx, style.marker ?? 'circle', 15, 6, 3.5);
  return c;
}

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function fmtTick(v) {
  if (Number.isInteger(v) && Math.abs(v) < 1e5) return String(v);
  if (Math.abs(v) >= 1e4 || Math.abs(v) < 1e-2) return v.toExponential(0).replace('e+', 'e');
  return String(Number(v.toPrecision(3)));
}

/**
 * Least-squares slope of log y against log x (the exponent of a power law), over the `last` largest
 * x (fixed per-call costs flatten the small sizes), or NaN with < 2 points.
 */
export function logLogSlope(points, last = Infinity) {
  const pts = points.filter(([x, y]) => x > 0 && y > 0).sort((a, b) => a[0] - b[0]).slice(-last);
  if (pts.length < 2) return NaN;
  const lx = pts.map(([x]) => Math.log(x)), ly = pts.map(([, y]) => Math.log(y));
  const mx = lx.reduce((a, b) => a + b, 0) / pts.length, my = ly.reduce((a, b) => a + b, 0) / pts.length;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < pts.length; i++) {
    sxy += (lx[i] - mx) * (ly[i] - my);
    sxx += (lx[i] - mx) ** 2;
  }
  return sxx > 0 ? sxy / sxx : NaN;
}

// Round tick values for a linear axis: about `count` steps of 1, 2 or 5 x 10^k.
function linearTicks(lo, hi, count) {
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((st) => st >= raw) ?? 10 * mag;
  const ticks = [];
  // whole multiples of the step (a sum of steps drifts: -3e-17 for 0)
  for (let k = Math.ceil(lo / step); k * step <= hi + step * 1e-9; k++) ticks.push(Number((k * step).toPrecision(12)));
  return ticks;
}

/**
 * draw(canvas, { series: [{ label, color, dash, marker, points: [[x, y, lo?, hi?]] }], xLabel, yLabel,
 *   (lo, hi: an error bar from lo to hi drawn at x)
 *   logX = true, logY = true, yRange: [lo, hi] (fixed y range, for a linear y axis),
 *   guides: [{ label, slope }] (dashed power-law lines through the lowest first point; log-log only),
 *   marks: [{ x, label }] (a dashed vertical line at x, labelled at its top), emptyText }).
 */
export function drawChart(canvas, {
  series, xLabel, yLabel, logX = true, logY = true, yRange, guides = [], marks = [], emptyText = 'no measurements yet',
}) {
  const width = Math.max(260, Math.min(640, canvas.parentElement.clientWidth || 480));
  const usable = ([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!logX || x > 0) && (!logY || y > 0);
  const all = series.flatMap((s) => s.points).filter(usable);
  const height = all.length === 0 ? 60 : Math.round(Math.min(240, width * 0.42));
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const fg = cssVar('--fg', '#222'), grid = cssVar('--grid', '#ddd');
  ctx.font = '11px system-ui, sans-serif';

  const pad = { left: 58, right: 18, top: 10, bottom: 40 };
  const pw = width - pad.left - pad.right, ph = height - pad.top - pad.bottom;
  // the text an empty chart shows, readable by tests and assistive tech
  if (all.length === 0) canvas.dataset.emptyText = emptyText;
  else delete canvas.dataset.emptyText;
  if (all.length === 0) {
    ctx.fillStyle = fg;
    ctx.textAlign = 'center';
    ctx.fillText(emptyText, width / 2, height / 2);
    return;
  }
  const tx = logX ? Math.log10 : (v) => v;
  const ty = logY ? Math.log10 : (v) => v;
  let [xmin, xmax] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [ymin, ymax] = yRange ?? [Math.min(...all.map((p) => Math.min(p[1], p[2] > 0 ? p[2] : p[1]))),
    Math.max(...all.map((p) => Math.max(p[1], p[3] > 0 ? p[3] : p[1])))];
  if (logX) {
    xmin /= 1.15; xmax *= 1.15;
  } else if (xmin === xmax) { // one x (a single point): it sits in the middle of a readable span
    const half = Math.max(1, Math.abs(xmin) * 0.25);
    xmin -= half; xmax += half;
  }
  if (logY && !yRange) {
    const [lo, hi] = [ymin, ymax];
    ymin = 10 ** (Math.floor(Math.log10(ymin) * 2) / 2); // whole or half decades keep the ticks readable
    ymax = 10 ** (Math.ceil(Math.log10(ymax) * 2) / 2);
    // one value (one point, or a flat series) would sit near the frame: half a decade either side
    if (lo === hi) [ymin, ymax] = [lo / Math.sqrt(10), hi * Math.sqrt(10)];
    if (ymax <= ymin) ymax = ymin * 10;
  } else if (ymax <= ymin) { // one y on a linear axis: it sits in the middle
    const half = Math.max(Math.abs(ymin) * 0.25, 1e-9);
    ymin -= half; ymax += half;
  }
  const X = (x) => pad.left + ((tx(x) - tx(xmin)) / (tx(xmax) - tx(xmin))) * pw;
  const Y = (y) => pad.top + (1 - (ty(y) - ty(ymin)) / (ty(ymax) - ty(ymin))) * ph;

  // Grid and ticks. y: 1, 2, 5 x 10^k (log) or round steps (linear). x: the measured values when
  // few (the powers of 2 of the timings), else round steps.
  ctx.strokeStyle = grid;
  ctx.fillStyle = fg;
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const yTicks = [];
  if (logY) {
    for (let e = Math.floor(Math.log10(ymin)); e <= Math.ceil(Math.log10(ymax)); e++) {
      for (const m of [1, 2, 5]) {
        const v = m * 10 ** e;
        if (v >= ymin * 0.999 && v <= ymax * 1.001) yTicks.push({ v, major: m === 1 });
      }
    }
  } else {
    for (const v of linearTicks(ymin, ymax, 5)) yTicks.push({ v, major: true });
  }
  const showMinor = yTicks.length <= 10;
  for (const { v, major } of yTicks) {
    if (!major && !showMinor) continue;
    ctx.beginPath();
    ctx.moveTo(pad.left, Y(v));
    ctx.lineTo(pad.left + pw, Y(v));
    ctx.stroke();
    ctx.fillText(fmtTick(v), pad.left - 5, Y(v));
  }
  const xs = [...new Set(all.map((p) => p[0]))].sort((a, b) => a - b);
  const xTicks = logX || xs.length <= 12 ? xs : linearTicks(xmin, xmax, Math.max(2, Math.floor(pw / 70)));
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const step = Math.max(1, Math.ceil(xTicks.length / Math.floor(pw / 40)));
  xTicks.forEach((v, i) => {
    ctx.beginPath();
    ctx.moveTo(X(v), pad.top);
    ctx.lineTo(X(v), pad.top + ph);
    ctx.stroke();
    if (i % step === 0) ctx.fillText(fmtTick(v), X(v), pad.top + ph + 4);
  });
  ctx.strokeStyle = fg;
  ctx.strokeRect(pad.left, pad.top, pw, ph);
  ctx.fillText(xLabel, pad.left + pw / 2, height - 16);
  ctx.save();
  ctx.translate(12, pad.top + ph / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = 'middle';
  ctx.fillText(yLabel, 0, 0);
  ctx.restore();

  ctx.save();
  ctx.beginPath();
  ctx.rect(pad.left, pad.top, pw, ph);
  ctx.clip();
  // Guides: y = c * x^slope through the lowest point at the smallest x, grey and dashed.
  if (!(logX && logY)) guides = [];
  const x0 = xs[0], x1 = xs[xs.length - 1];
  const y0 = Math.min(...all.filter((p) => p[0] === x0).map((p) => p[1]));
  for (const g of guides) {
    ctx.strokeStyle = grid;
    ctx.setLineDash([3, 4]);
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(X(x0), Y(y0));
    ctx.lineTo(X(x1), Y(y0 * (x1 / x0) ** g.slope));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = fg;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'bottom';
    ctx.fillText(g.label, X(x1) - 6, Math.max(pad.top + 14, Y(y0 * (x1 / x0) ** g.slope) - 2));
  }
  for (const mk of marks) {
    if (!(mk.x >= xmin && mk.x <= xmax)) continue;
    ctx.strokeStyle = fg;
    ctx.setLineDash([4, 3]);
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(X(mk.x), pad.top);
    ctx.lineTo(X(mk.x), pad.top + ph);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = fg;
    ctx.textAlign = X(mk.x) > pad.left + pw / 2 ? 'right' : 'left';
    ctx.textBaseline = 'top';
    ctx.fillText(mk.label, X(mk.x) + (ctx.textAlign === 'left' ? 4 : -4), pad.top + 3);
  }
  for (const s of series) {
    const pts = s.points.filter(usable).sort((a, b) => a[0] - b[0]);
    ctx.strokeStyle = s.color;
    ctx.fillStyle = s.color;
    ctx.lineWidth = 2;
    ctx.setLineDash(s.dash ?? []);
    ctx.beginPath();
    pts.forEach(([x, y], i) => (i ? ctx.lineTo(X(x), Y(y)) : ctx.moveTo(X(x), Y(y))));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.lineWidth = 1.5;
    for (const [x, , lo, hi] of pts) {
      if (!(lo > 0 && hi > 0) && logY) continue;
      if (!Number.isFinite(lo) || !Number.isFinite(hi)) continue;
      ctx.beginPath();
      ctx.moveTo(X(x) - 3, Y(lo));
      ctx.lineTo(X(x) + 3, Y(lo));
      ctx.moveTo(X(x), Y(lo));
      ctx.lineTo(X(x), Y(hi));
      ctx.moveTo(X(x) - 3, Y(hi));
      ctx.lineTo(X(x) + 3, Y(hi));
      ctx.stroke();
    }
    for (const [x, y] of pts.length <= 40 ? pts : []) drawMarker(ctx, s.marker ?? 'circle', X(x), Y(y), 3);
  }
  ctx.restore();
}
