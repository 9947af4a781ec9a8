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
// The readings run in web/sinks-worker.js (the page only fetches, once, and draws), with a progress
// line; the text is capped at MAX_CHARS characters.
import { drawChart, legendSwatch, seriesStyle } from './chart.js';
import { evenFirstWeight } from '../../lab/heads.js';
import { backcopyStream, TRIGGERS } from '../../lab/backcopy.js';
import { fetchOnce, fetchTextOnce } from '../fetch-once.js';
import { startWorker } from '../worker-page.js';

const MODEL = '../models/fortunes-bos.safetensors'; // trained from document starts, after a token 0
const REST = { plain: '../models/sinks-plain.safetensors', learned: '../models/sinks-learned.safetensors', gate: '../models/sinks-gate.safetensors' };
const BACKCOPY = { plain: '../models/sinks-backcopy-plain.safetensors', learned: '../models/sinks-backcopy-learned.safetensors',
  gate: '../models/sinks-backcopy-gate.safetensors' };
const LETTERS = 1024; // fresh backcopy letters a run reads
const TEXT = '../models/stream-text.txt';
const SMOOTH = 100; // characters in the chart's moving average
/** The longest text the panel reads, in characters (recomputing reads every position afresh: about
 * half a minute at the cap on a busy 2-core machine, in the worker, with progress). */
export const MAX_CHARS = 10000;

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

export function createSinksView(el) {
  let defaultText = null;
  // The default text is in the box when the panel comes into view, as its label says (fetched then,
  // not at page load: a page that never scrolls here never asks for it).
  let textReady = null;
  const fetchText = () => {
    textReady ??= fetchTextOnce(new URL(TEXT, import.meta.url)).then((t) => t, () => null).then((t) => {
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

  // One worker for the page's life: it keeps the models it was sent. sent: the files it has.
  let worker = null, runId = 0, pending = null;
  const sent = new Set();
  function ensureWorker() {
    if (!worker) {
      worker = startWorker(new URL('../sinks-worker.js', import.meta.url));
      sent.clear();
      worker.onmessage = (e) => receive(e.data);
      worker.onerror = (e) => { // the worker could not load: a later Run starts a new one
        e.preventDefault?.();
        worker.terminate();
        worker = null;
        pending?.reject(new Error(e.message || 'the sinks worker could not load'));
      };
    }
    return worker;
  }
  function receive(msg) {
    if (!pending || msg.id !== runId) return; // a stopped run's late message
    if (msg.type === 'progress') {
      el.status.textContent = `Reading… ${Math.round((100 * msg.done) / msg.total)}% of ${msg.total.toLocaleString('en')} positions (the three ways together; now: ${msg.label})`;
    } else if (msg.type === 'result') pending.resolve(msg);
    else if (msg.type === 'error') pending.reject(new Error(msg.message));
  }
  // The worker's readings of this way: the files' bytes fetched once by the page, sent once to the worker.
  async function request(way, text, window, sinks) {
    const files = way === 'readings' ? { one: MODEL } : way === 'rest' ? REST : BACKCOPY;
    const names = Object.fromEntries(Object.entries(files).map(([k, f]) => [k, f.split('/').pop()]));
    const w = ensureWorker();
    const bytes = {};
    await Promise.all(Object.values(files).map(async (f) => {
      const name = f.split('/').pop();
      if (!sent.has(name)) bytes[name] = (await fetchOnce(new URL(f, import.meta.url))).slice(0); // a copy: the transfer detaches it
    }));
    for (const name of Object.keys(bytes)) sent.add(name);
    const id = ++runId;
    pending?.reject(new Error('superseded'));
    return new Promise((resolve, reject) => {
      pending = { resolve, reject };
      w.postMessage({ type: 'run', id, way, text, window, sinks, files: names, bytes }, Object.values(bytes));
    }).finally(() => { if (runId === id) pending = null; });
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
  function showRest({ results, first, tokens, window, maxLen }, sinks, onLetters) {
    const unit = onLetters ? 'letter' : 'character';
    const every = Math.max(1, Math.floor(results[0].losses.length / 300));
    draw(results.map((r, i) => ({ label: r.label, ...seriesStyle(i), points: movingAverage(Array.from(r.losses, (x) => x / Math.LN2), SMOOTH, every) })),
      window, maxLen, `bits per ${unit}`,
      `Bits per ${unit}, moving average over ${SMOOTH} ${unit}s; the dashed line: position ${window}, where the window fills and the rolling caches start evicting`, false, unit);
    const past = results.map((r) => bits(r.losses, window, r.losses.length));
    el.panel.dataset.result = JSON.stringify(results.map((r, i) => ({ label: r.label, model: r.model, before: bits(r.losses, 0, window), past: past[i], ms: r.ms })));
    el.panel.dataset.first = JSON.stringify(first);
    const measured = `Measured just now on ${tokens} ${unit}s, bits per ${unit} past the window (${window}): `
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

  function showReadings({ results, tokens, window, maxLen }, sinks) {
    // each way minus recomputing, in bits, averaged over the last SMOOTH characters: about 300 points a line
    const ref = results[2].losses, every = Math.max(1, Math.floor(ref.length / 300));
    const series = results.map((r, i) => ({
      label: r.label, ...seriesStyle(i),
      points: movingAverage(Array.from(r.losses, (x, k) => (x - ref[k]) / Math.LN2), SMOOTH, every),
    }));
    draw(series, window, maxLen, 'bits/char minus recomputing', `Bits per character more than recomputing (below 0: fewer), moving average over ${SMOOTH} characters; `
      + `the dashed line: position ${window}, where the window fills and the rolling caches start evicting`);
    el.chart.dataset.raw = String(ref.length);
    const past = results.map((r) => bits(r.losses, window, r.losses.length));
    const before = results.map((r) => bits(r.losses, 0, window));
    el.panel.dataset.result = JSON.stringify(results.map((r, i) => ({ label: r.label, before: before[i], past: past[i], ms: r.ms })));
    el.summary.textContent = `Measured just now on ${tokens} characters: while the window has not filled, the three `
      + `read alike (${before.map((x) => x.toFixed(2)).join(', ')} bits per character). Past it, window only reads at `
      + `${past[0].toFixed(3)}, window + ${sinks} sinks at ${past[1].toFixed(3)}, recomputing at ${past[2].toFixed(3)} `
      + `bits per character; recomputing took ${(results[2].ms / 1000).toFixed(2)} s, the rolling caches `
      + `${(results[0].ms / 1000).toFixed(2)} s and ${(results[1].ms / 1000).toFixed(2)} s (in a worker).`;
  }

  async function run() {
    el.run.disabled = true;
    el.chart.closest('.results').hidden = false; // the chart takes room from the first run on
    el.status.textContent = 'Reading…';
    try {
      const window = Number(el.window.value), sinks = Number(el.sinks.value), way = el.way?.value ?? 'readings';
      if (way !== 'backcopy') await fetchText();
      if (!el.text.value && defaultText) el.text.value = defaultText;
      const chars = Array.from(el.text.value).length;
      if (chars > MAX_CHARS) throw new Error(`the text has ${chars.toLocaleString('en')} characters; the panel reads at most ${MAX_CHARS.toLocaleString('en')}`);
      const out = await request(way, el.text.value, window, sinks);
      if (way === 'readings') showReadings(out, sinks);
      else showRest(out, sinks, way === 'backcopy');
      el.status.textContent = '';
      el.panel.dataset.done = String(Number(el.panel.dataset.done ?? 0) + 1);
    } catch (e) {
      if (e.message !== 'superseded') el.status.textContent = e.message;
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
