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
// "Three ways to rest" (issue 35's claim 2): three smaller models trained alike by
// scripts/sink-claims.mjs (plain, a learned sink logit per head as in gpt-oss, and the output gate of
// Qiu et al. 2025) read the same text past the window: the plain one with a window only and with its
// first characters kept (StreamingLLM), the other two with a window only. That chart is each reading's
// bits per character itself (the models differ), with the same moving average.
// "Where a sink forms" (claim 1 where it can be tested at this scale): the same three switches on one
// head in one layer, trained on the bigram-backcopy letters (lab/backcopy.js), read the same four ways
// on fresh letters, with each model's weight on the first token split into rows with nothing to fetch
// (resting) and rows after a trigger letter (working).
import { drawChart, legendSwatch, seriesStyle } from './chart.js';
import { evenFirstWeight, firstTokenWeight, restingWeights } from '../../lab/heads.js';
import { backcopyStream, TRIGGERS, triggerRows } from '../../lab/backcopy.js';

const MODEL = '../models/fortunes-bos.safetensors'; // trained from document starts, after a token 0
const REST = { plain: '../models/sinks-plain.safetensors', learned: '../models/sinks-learned.safetensors', gate: '../models/sinks-gate.safetensors' };
const BACKCOPY = { plain: '../models/sinks-backcopy-plain.safetensors', learned: '../models/sinks-backcopy-learned.safetensors',
  gate: '../models/sinks-backcopy-gate.safetensors' };
const LETTERS = 1024; // fresh backcopy letters a run reads
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

  const loaded = { rest: {}, backcopy: {} };
  async function loadRest(kind) {
    const ms = loaded[kind];
    for (const [k, file] of Object.entries(kind === 'rest' ? REST : BACKCOPY)) {
      if (ms[k]) continue;
      const r = await fetch(new URL(file, import.meta.url));
      if (!r.ok) throw new Error(`could not fetch ${file.split('/').pop()} (HTTP ${r.status})`);
      ms[k] = lib.loadModel(new Uint8Array(await r.arrayBuffer()), { training: false });
    }
    if (kind === 'rest') {
      if (!defaultText) await fetchText();
      if (!el.text.value && defaultText) el.text.value = defaultText;
    }
    return ms;
  }

  // The letters mode reads fresh backcopy letters: switching to it puts a new draw in the box (any
  // text of letters works too); switching back puts the prose back when the box still holds letters.
  let draws = 0, letters = null;
  const freshLetters = () => (letters = el.text.value = backcopyStream(1000 + ++draws, LETTERS));
  el.way?.addEventListener('change', async () => {
    if (el.way.value === 'backcopy') {
      freshLetters();
      el.window.value = '16'; // the letter models read 32 at a time: a window of at most half that
    }
    else if (letters !== null && el.text.value === letters) {
      await fetchText();
      if (defaultText) el.text.value = defaultText;
    }
  });

  const bits = (xs, a, b) => { let s = 0; for (let i = a; i < b; i++) s += xs[i]; return s / Math.max(1, b - a) / Math.LN2; };

  // fromZero: the range takes in 0 (differences); else it spans the points past the window (levels,
  // whose first characters, read with no context, would squash the differences the chart is for)
  function draw(series, window, maxLen, yLabel, caption, fromZero = true, unit = 'character') {
    const ys = series.flatMap((x) => x.points.filter((p) => fromZero || p[0] >= window).map((p) => p[1]));
    const lo = fromZero ? Math.min(0, ...ys) : Math.min(...ys), hi = Math.max(...ys);
    drawChart(el.chart, { series, xLabel: `position in the text (trained on ${maxLen} ${unit}s)`,
      yLabel, logX: false, logY: false, yRange: [lo - 0.05 * (hi - lo || 1), hi + 0.1 * (hi - lo || 1)],
      marks: [{ x: window, label: `the window (${window}) fills: eviction starts` }] });
    Object.assign(el.chart.dataset, { smooth: String(SMOOTH), points: String(series[0].points.length) });
    el.chart.closest('figure').querySelector('figcaption').textContent = caption;
    el.legend.replaceChildren(...series.map((x, i) => {
      const li = document.createElement('li');
      li.append(legendSwatch(seriesStyle(i)), x.label);
      return li;
    }));
  }

  // The three ways to rest: each reading's bits per character, smoothed; each model's weight on the
  // first token (mean over layers, heads and rows of its first maxLen tokens; on letters, split into
  // resting and working rows over windows of maxLen: a token 0, then maxLen - 1 letters)
  function runRest(ms, tokens, window, sinks, onLetters) {
    const ways = [
      ['nowhere to rest (plain, window only)', 'plain', { window }],
      [`StreamingLLM (plain, first ${sinks} kept)`, 'plain', { window, sinks }],
      ['learned sink (gpt-oss), window only', 'learned', { window }],
      ['output gate (Qiu et al.), window only', 'gate', { window }],
    ];
    const results = ways.map(([label, key, opts]) => {
      const t0 = performance.now();
      const losses = ms[key].streamLosses(tokens, opts);
      return { label, model: key, losses, ms: performance.now() - t0 };
    });
    const unit = onLetters ? 'letter' : 'character', maxLen = ms.plain.config.maxLen;
    let first;
    if (onLetters) {
      const working = triggerRows(lib.charsTokenizer.encode), starts = [];
      for (let a = 1; a + maxLen - 1 <= tokens.length && starts.length < 32; a += maxLen - 1) starts.push([0, ...tokens.subarray(a, a + maxLen - 1)]);
      first = Object.fromEntries(Object.entries(ms).map(([k, m]) => [k, restingWeights(m, starts, working)]));
    } else {
      first = Object.fromEntries(Object.entries(ms).map(([k, m]) => [k, firstTokenWeight(m, [...tokens.subarray(0, maxLen)])]));
    }
    const every = Math.max(1, Math.floor(results[0].losses.length / 300));
    draw(results.map((r, i) => ({ label: r.label, ...seriesStyle(i), points: movingAverage(Array.from(r.losses, (x) => x / Math.LN2), SMOOTH, every) })),
      window, maxLen, `bits per ${unit}`,
      `Bits per ${unit}, moving average over ${SMOOTH} ${unit}s; the dashed line: position ${window}, where the window fills and the rolling caches start evicting`, false, unit);
    const past = results.map((r) => bits(r.losses, window, r.losses.length));
    el.panel.dataset.result = JSON.stringify(results.map((r, i) => ({ label: r.label, model: r.model, before: bits(r.losses, 0, window), past: past[i], ms: r.ms })));
    el.panel.dataset.first = JSON.stringify(first);
    const measured = `Measured just now on ${tokens.length} ${unit}s, bits per ${unit} past the window (${window}): `
      + results.map((r, i) => `${r.label} ${past[i].toFixed(3)}`).join('; ');
    const f = (x) => (x === null ? 'none (no such rows)' : x.toFixed(3));
    el.summary.textContent = onLetters
      ? `${measured}. Weight on the first token where the head has nothing to fetch / after a trigger (${[...TRIGGERS].join(', ')}), `
        + `where it fetches the letter before: plain ${f(first.plain.resting)} / ${f(first.plain.working)}, output gate `
        + `${f(first.gate.resting)} / ${f(first.gate.working)}, learned sink ${f(first.learned.resting)} / ${f(first.learned.working)} `
        + `(its own sink column takes ${f(first.learned.sink)} where it rests); an even spread gives about ${f(evenFirstWeight(maxLen))}.`
      : `${measured}. Weight on the first token (mean over heads and rows): `
        + `plain ${f(first.plain)}, learned sink ${f(first.learned)}, output gate ${f(first.gate)}.`;
  }

  async function run() {
    el.run.disabled = true;
    el.status.textContent = 'Reading…';
    try {
      let window = Number(el.window.value);
      const sinks = Number(el.sinks.value), way = el.way?.value;
      if (way === 'rest' || way === 'backcopy') {
        const ms = await loadRest(way);
        // the letter models read 32 tokens at a time: their window is at most half that
        if (way === 'backcopy') window = Math.min(window, ms.plain.config.maxLen / 2);
        if (sinks >= window) throw new Error(`keep fewer first tokens (${sinks}) than the window (${window})`);
        const tokens = Int32Array.from([0, ...lib.charsTokenizer.encode(el.text.value)]);
        if (tokens.length < 2 * window + 2) throw new Error(`give at least ${2 * window + 2} characters (twice the window)`);
        await new Promise((r) => setTimeout(r, 0)); // let the status paint
        runRest(ms, tokens, window, sinks, way === 'backcopy');
        el.status.textContent = '';
        el.panel.dataset.done = String(Number(el.panel.dataset.done ?? 0) + 1);
        return;
      }
      const m = await load();
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
      // each way minus recomputing, in bits, averaged over the last SMOOTH characters: about 300 points a line
      const ref = results[2].losses, every = Math.max(1, Math.floor(ref.length / 300));
      const series = results.map((r, i) => ({
        label: r.label, ...seriesStyle(i),
        points: movingAverage(Array.from(r.losses, (x, k) => (x - ref[k]) / Math.LN2), SMOOTH, every),
      }));
      draw(series, window, m.config.maxLen, 'bits/char more than recomputing', `Bits per character more than recomputing, moving average over ${SMOOTH} characters; `
        + `the dashed line: position ${window}, where the window fills and the rolling caches start evicting`);
      el.chart.dataset.raw = String(ref.length);
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
    if (el.way?.value === 'backcopy') return void freshLetters(); // the letters mode's default: a new draw
    await fetchText();
    if (defaultText) el.text.value = defaultText;
  });
  return { run };
}
