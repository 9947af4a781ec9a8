// chart.js: a small canvas line chart with logarithmic axes (both, or y only), for the timings
// (time against n, where O(n^2) and O(n) show as slopes 2 and 1) and later the training curves.
// Plain canvas: no library, so the page works offline with nothing to vendor.

/** Colour-blind-safe series colours (Okabe-Ito), with dash patterns to tell more series apart. */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];
export const DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3]];

export function seriesStyle(index) {
  return { color: PALETTE[index % PALETTE.length], dash: DASHES[Math.floor(index / PALETTE.length) % DASHES.length] };
}

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function fmtTick(v) {
  if (Number.isInteger(v) && v < 1e5) return String(v);
  if (v >= 1e4 || v < 1e-2) return v.toExponential(0).replace('e+', 'e');
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

/**
 * draw(canvas, { series: [{ label, color, dash, points: [[x, y]] }], xLabel, yLabel, logX = true,
 *   guides: [{ label, slope }] (dashed power-law lines through the lowest first point) }).
 */
export function drawChart(canvas, { series, xLabel, yLabel, logX = true, guides = [] }) {
  const width = Math.max(260, Math.min(640, canvas.parentElement.clientWidth || 480));
  const empty = !series.some((s) => s.points.length);
  const height = empty ? 60 : Math.round(Math.min(360, width * 0.62));
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

  const pad = { left: 58, right: 12, top: 10, bottom: 40 };
  const pw = width - pad.left - pad.right, ph = height - pad.top - pad.bottom;
  const all = series.flatMap((s) => s.points).filter(([x, y]) => x > 0 && y > 0);
  if (all.length === 0) {
    ctx.fillStyle = fg;
    ctx.textAlign = 'center';
    ctx.fillText('no measurements yet', width / 2, height / 2);
    return;
  }
  const tx = logX ? Math.log10 : (v) => v;
  let [xmin, xmax] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [ymin, ymax] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (logX) {
    xmin /= 1.15; xmax *= 1.15;
  } else if (xmin === xmax) {
    xmin -= 1; xmax += 1;
  }
  ymin = 10 ** (Math.floor(Math.log10(ymin) * 2) / 2); // whole or half decades keep the ticks readable
  ymax = 10 ** (Math.ceil(Math.log10(ymax) * 2) / 2);
  if (ymax <= ymin) ymax = ymin * 10;
  const X = (x) => pad.left + ((tx(x) - tx(xmin)) / (tx(xmax) - tx(xmin))) * pw;
  const Y = (y) => pad.top + (1 - (Math.log10(y) - Math.log10(ymin)) / (Math.log10(ymax) - Math.log10(ymin))) * ph;

  // Grid and ticks: y at 1, 2, 5 x 10^k; x at the measured sizes (powers of 2) or round numbers.
  ctx.strokeStyle = grid;
  ctx.fillStyle = fg;
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const yTicks = [];
  for (let e = Math.floor(Math.log10(ymin)); e <= Math.ceil(Math.log10(ymax)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= ymin * 0.999 && v <= ymax * 1.001) yTicks.push({ v, major: m === 1 });
    }
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
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const step = Math.max(1, Math.ceil(xs.length / Math.floor(pw / 40)));
  xs.forEach((v, i) => {
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
  for (const s of series) {
    const pts = s.points.filter(([x, y]) => x > 0 && y > 0).sort((a, b) => a[0] - b[0]);
    ctx.strokeStyle = s.color;
    ctx.fillStyle = s.color;
    ctx.lineWidth = 2;
    ctx.setLineDash(s.dash ?? []);
    ctx.beginPath();
    pts.forEach(([x, y], i) => (i ? ctx.lineTo(X(x), Y(y)) : ctx.moveTo(X(x), Y(y))));
    ctx.stroke();
    ctx.setLineDash([]);
    for (const [x, y] of pts) {
      ctx.beginPath();
      ctx.arc(X(x), Y(y), 3, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
  ctx.restore();
}
