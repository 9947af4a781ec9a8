// overwrite.js: "Why the delta rule": a state of fixed width stores N key-value pairs and reads
// them back, once with the additive rule of linear attention (lib.gatedLinearAttention with every
// gate 1: S += k^T v) and once with the delta rule (lib.deltaRule with beta 1: the state reads what
// it holds at the key and replaces it). No training: the two mechanisms themselves, on the real
// library, in a few milliseconds. Every number the panel prints is computed by the run.
import { drawChart, legendSwatch, seriesStyle } from './chart.js';

// seeded uniform [-1, 1) (xorshift32)
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return (s / 2 ** 32) * 2 - 1;
  };
}

/**
 * A stream of updates: K keys (random unit vectors, K = d / 2) are each written `rounds` times, every
 * round in a new random order with fresh values (positions 0 .. K * rounds - 1); then every key is
 * read back (the query is the key times sqrt(d), which undoes the 1/sqrt(d) scale; key and value are
 * 0 there, so nothing more is written). The right answer is each key's latest value. Returns the mean
 * relative error |read - latest| / |latest| of the additive state and of the delta rule.
 */
export function updateError(lib, d, rounds, seed = 1) {
  const next = rng(seed * 7919 + rounds * 104729 + d);
  const K = Math.max(1, d >> 1), W = K * rounds, n = W + K;
  const keys = Array.from({ length: K }, () => {
    const x = Array.from({ length: d }, next), norm = Math.hypot(...x);
    return x.map((c) => c / norm);
  });
  const q = new Float32Array(n * d), k = new Float32Array(n * d), v = new Float32Array(n * d);
  const latest = keys.map(() => new Float32Array(d));
  let t = 0;
  for (let r = 0; r < rounds; r++) {
    const order = keys.map((_, i) => i);
    for (let i = K - 1; i > 0; i--) {
      const j = Math.floor(((next() + 1) / 2) * (i + 1)) % (i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    for (const i of order) {
      k.set(keys[i], t * d);
      for (let c = 0; c < d; c++) v[t * d + c] = latest[i][c] = next();
      t++;
    }
  }
  for (let i = 0; i < K; i++) for (let c = 0; c < d; c++) q[(W + i) * d + c] = keys[i][c] * Math.sqrt(d);
  const additive = lib.gatedLinearAttention({ q, k, v, n, d, gates: new Array(n).fill(1) }).output;
  const delta = lib.deltaRule({ q, k, v, n, d, beta: new Array(n).fill(1) }).output;
  const err = (out) => {
    let total = 0;
    for (let i = 0; i < K; i++) {
      let e = 0, s = 0;
      for (let c = 0; c < d; c++) {
        e += (out[(W + i) * d + c] - latest[i][c]) ** 2;
        s += latest[i][c] ** 2;
      }
      total += Math.sqrt(e / s);
    }
    return total / K;
  };
  return { additive: err(additive), delta: err(delta) };
}

/** Key A gets value 1, then key A gets value 5; reading A: what each rule returns. */
export function overwrite(lib) {
  const n = 3, d = 2, k = Float32Array.of(1, 0, 1, 0, 0, 0), v = Float32Array.of(1, 0, 5, 0, 0, 0);
  const q = Float32Array.of(0, 0, 0, 0, Math.SQRT2, 0);
  return {
    additive: lib.gatedLinearAttention({ q, k, v, n, d, gates: [1, 1, 1] }).output[4],
    delta: lib.deltaRule({ q, k, v, n, d, beta: [1, 1, 1] }).output[4],
  };
}

export function createOverwriteView(el, lib) {
  const fmt = (x) => x.toFixed(3);
  function run() {
    const d = Number(el.width.value), K = Math.max(1, d >> 1);
    const rows = [1, 2, 3, 4, 5, 6, 7, 8].map((rounds) => ({ rounds, ...updateError(lib, d, rounds) }));
    const top = Math.max(1e-6, ...rows.flatMap((r) => [r.additive, r.delta]));
    drawChart(el.chart, {
      series: [
        { label: 'additive (linear attention)', ...seriesStyle(1), points: rows.map((r) => [r.rounds, r.additive]) },
        { label: 'delta rule', ...seriesStyle(0), points: rows.map((r) => [r.rounds, r.delta]) },
      ],
      xLabel: `times each of ${K} keys was written (state width d = ${d})`, yLabel: 'error |read − latest| / |latest|',
      logX: false, logY: false,
      // room under 0: the delta rule's error stays near 0, and on the frame's edge its line would hide
      yRange: [-0.04 * top, 1.06 * top],
    });
    el.legend.replaceChildren(...[['delta rule', 0], ['additive (linear attention)', 1]].map(([label, i]) => {
      const li = document.createElement('li');
      li.append(legendSwatch(seriesStyle(i)), label);
      return li;
    }));
    const first = rows[0], last = rows[rows.length - 1];
    const o = overwrite(lib);
    el.summary.textContent = `Measured just now, d = ${d}, ${K} random keys: written once, the additive state reads back `
      + `with error ${fmt(first.additive)} and the delta rule ${fmt(first.delta)} (keys that are not orthogonal `
      + `interfere in both); written ${last.rounds} times, the additive error has grown to ${fmt(last.additive)} `
      + `(every old value is still in the sum) and the delta rule's is ${fmt(last.delta)}.`;
    el.overwrite.textContent = `Key A gets value 1, then key A gets value 5. Reading A: the additive state returns `
      + `${fmt(o.additive)} (old + new), the delta rule returns ${fmt(o.delta)} (the new value).`;
    el.panel.dataset.rows = JSON.stringify(rows);
    el.panel.dataset.done = '1';
    el.panel.dataset.rows = JSON.stringify(rows);
  }
  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    run();
  });
  el.width.addEventListener('change', run);
  run();
  return { run };
}
