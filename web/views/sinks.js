// sinks.js: "Attention sinks": StreamingLLM's claim (Xiao et al. 2023, arXiv:2309.17453) measured
// in the page on a model that has read real text (web/models/fortunes-bos.safetensors: a character
// model with the llama-style block and rotary positions, trained on Debian's fortunes from each
// document's start after a token 0, as language models read documents after a start mark).
// The model reads a text many times longer than the window three ways (model.streamLosses): a
// rolling cache of the last `window` characters, the same keeping the first `sinks` characters for
// ever, and a fresh forward over the last `window` characters at every position (the reference).
// The chart is each way's bits per character minus recomputing's, as a moving average over SMOOTH
// characters (one character's loss swings by bits; the ways differ by tenths), with the window
// marked; every number is measured by the run.
import { drawChart, legendSwatch, seriesStyle } from './chart.js';

const MODEL = '../models/fortunes-bos.safetensors'; // trained from document starts, after a token 0
const TEXT = '../models/stream-text.txt';
const SMOOTH = 100; // characters in the chart's moving average

/** The trailing moving average of xs over `span` values (fewer at the start), every `every`-th: [[index, mean]]. */
export function movingAverage(xs, span, every = 1) {
  const out = [];
  let sum = 0;
  for (let i = 0; i < xs.length; i++) {
    sum += xs[i];
    if (i >= span) sum -= xs[i - span];
    if (i % every === 0 || i === xs.length - 1) out.push([i, sum / Math.min(span, i + 1)]);
  }
  return out;
}

export function createSinksView(el, { lib }) {
  let model = null, defaultText = null;
  // The default text is in the box when the panel comes into view, as its label says (fetched then,
  // not at page load: a page that never scrolls here never asks for it).
  let textReady = null;
  const fetchText = () => {
    textReady ??= fetch(new URL(TEXT, import.meta.url)).then((r) => (r.ok ? r.text() : null), () => null).then((t) => {
      defaultText ??= t;
      if (t && !el.text.value) el.text.value = t;
    });
    return textReady;
  };
  const seen = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) {
      seen.disconnect();
      fetchText();
    }
  }, { rootMargin: '200px' });
  seen.observe(el.panel);
  el.text.addEventListener('focus', fetchText, { once: true });

  async function load() {
    if (!model) {
      const [m, t] = await Promise.all([fetch(new URL(MODEL, import.meta.url)), fetch(new URL(TEXT, import.meta.url))]);
      if (!m.ok || !t.ok) throw new Error(`could not fetch the model or the text (HTTP ${m.status}, ${t.status})`);
      model = lib.loadModel(new Uint8Array(await m.arrayBuffer()), { training: false });
      defaultText = await t.text();
      if (!el.text.value) el.text.value = defaultText;
    }
    return model;
  }

  async function run() {
    el.run.disabled = true;
    el.status.textContent = 'Reading…';
    try {
      const m = await load();
      const window = Number(el.window.value), sinks = Number(el.sinks.value);
      const tokens = Int32Array.from([0, ...lib.charsTokenizer.encode(el.text.value)]); // the start token, then the text
      if (tokens.length < 2 * window + 2) throw new Error(`give at least ${2 * window + 2} characters (twice the window)`);
      await new Promise((r) => setTimeout(r, 0)); // let the status paint
      const modes = [
        ['window only', { window }], [`window + ${sinks} sinks`, { window, sinks }], ['recompute', { window, recompute: true }],
      ];
      const results = modes.map(([label, opts]) => {
        const t0 = performance.now();
        const losses = m.streamLosses(tokens, opts);
        return { label, losses, ms: performance.now() - t0 };
      });
      const bits = (xs, a, b) => { let s = 0; for (let i = a; i < b; i++) s += xs[i]; return s / Math.max(1, b - a) / Math.LN2; };
      // each way minus recomputing, in bits, averaged over the last SMOOTH characters: about 300 points a line
      const ref = results[2].losses, every = Math.max(1, Math.floor(ref.length / 300));
      const series = results.map((r, i) => ({
        label: r.label, ...seriesStyle(i),
        points: movingAverage(Array.from(r.losses, (x, k) => (x - ref[k]) / Math.LN2), SMOOTH, every),
      }));
      const lo = Math.min(0, ...series.flatMap((x) => x.points.map((p) => p[1])));
      const hi = Math.max(...series.flatMap((x) => x.points.map((p) => p[1])));
      drawChart(el.chart, { series, xLabel: `position in the text (the model was trained on ${m.config.maxLen} characters)`,
        yLabel: 'bits/char more than recomputing', logX: false, logY: false,
        yRange: [lo - 0.05 * (hi - lo || 1), hi + 0.1 * (hi - lo || 1)],
        marks: [{ x: window, label: `the window (${window}) fills: eviction starts` }] });
      Object.assign(el.chart.dataset, { smooth: String(SMOOTH), points: String(series[0].points.length), raw: String(ref.length) });
      el.chart.closest('figure').querySelector('figcaption').textContent = `Bits per character more than recomputing, moving average over ${SMOOTH} characters; `
        + `the dashed line: position ${window}, where the window fills and the rolling caches start evicting`;
      el.legend.replaceChildren(...results.map((r, i) => {
        const li = document.createElement('li');
        li.append(legendSwatch(seriesStyle(i)), r.label);
        return li;
      }));
      const past = results.map((r) => bits(r.losses, window, r.losses.length));
      const before = results.map((r) => bits(r.losses, 0, window));
      el.panel.dataset.result = JSON.stringify(results.map((r, i) => ({ label: r.label, before: before[i], past: past[i], ms: r.ms })));
      el.summary.textContent = `Measured just now on ${tokens.length} characters: while the window has not filled, the three `
        + `read alike (${before.map((x) => x.toFixed(2)).join(', ')} bits per character). Past it, window only reads at `
        + `${past[0].toFixed(3)}, window + ${sinks} sinks at ${past[1].toFixed(3)}, recomputing at ${past[2].toFixed(3)} `
        + `bits per character; recomputing took ${(results[2].ms / 1000).toFixed(2)} s, the rolling caches `
        + `${(results[0].ms / 1000).toFixed(2)} s and ${(results[1].ms / 1000).toFixed(2)} s.`;
      el.status.textContent = '';
      el.panel.dataset.done = String(Number(el.panel.dataset.done ?? 0) + 1);
    } catch (e) {
      el.status.textContent = e.message;
    } finally {
      el.run.disabled = false;
    }
  }

  el.form.addEventListener('submit', (e) => { e.preventDefault(); run(); });
  el.reset.addEventListener('click', async () => {
    await fetchText();
    if (defaultText) el.text.value = defaultText;
  });
  return { run };
}
