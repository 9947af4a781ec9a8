// sinks.js: "Attention sinks": StreamingLLM's claim (Xiao et al. 2023, arXiv:2309.17453) measured
// in the page on a model that has read real text (web/models/fortunes-bos.safetensors: a character
// model with the llama-style block and rotary positions, trained on Debian's fortunes from each
// document's start after a token 0, as language models read documents after a start mark).
// The model reads a text many times longer than the window three ways (model.streamLosses): a
// rolling cache of the last `window` characters, the same keeping the first `sinks` characters for
// ever, and a fresh forward over the last `window` characters at every position (the reference).
// The chart is bits per character against position; every number is measured by the run.
import { drawChart, legendSwatch, seriesStyle } from './chart.js';

const MODEL = '../models/fortunes-bos.safetensors'; // trained from document starts, after a token 0
const TEXT = '../models/stream-text.txt';

export function createSinksView(el, { lib }) {
  let model = null, defaultText = null;

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
      const span = Math.max(8, Math.floor(window / 2)); // points: the mean over each run of `span` positions
      const series = results.map((r, i) => {
        const points = [];
        for (let a = 0; a + span <= r.losses.length; a += span) points.push([a + span / 2, bits(r.losses, a, a + span)]);
        return { label: r.label, ...seriesStyle(i), points };
      });
      drawChart(el.chart, { series, xLabel: `position in the text (the model was trained on ${m.config.maxLen}; window ${window})`,
        yLabel: 'bits per character', logX: false, logY: false });
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
  el.reset.addEventListener('click', () => { if (defaultText) el.text.value = defaultText; });
  return { run };
}
