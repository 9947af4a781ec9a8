// induction.js (view): "Induction heads, forming live". A 2-layer model (lab/induction.js) learns
// the repeat task in the page, on 1 thread or every core; every 25 steps each head's induction score
// is measured on probes, and two charts follow the loss and the scores, so the phase change shows:
// a previous-token head forms in layer 1, then an induction head in layer 2, and the loss on the
// repeated half falls with it. At the end every head is named by what it does on the same probes
// the curve reads (so the best score said above is the list's). Losses in bits (the library's nats / ln 2).
import { drawChart, legendSwatch, seriesStyle } from './chart.js';
import { KINDS } from '../../lab/heads.js';
import { MODEL, SETUP, formInduction, formedAt, headScores } from '../../lab/induction.js';

const BOUND = 0.5;

export function createInductionView(el, { loadLib }) {
  let controller = null;

  function draw(points, heads) {
    const headLabel = (i) => `layer ${Math.floor(i / MODEL.heads) + 1}, head ${(i % MODEL.heads) + 1}`;
    drawChart(el.scores, {
      series: Array.from({ length: heads }, (_, i) => ({ label: headLabel(i), ...seriesStyle(i), points: points.map((p) => [p.step, p.scores[i]]) })),
      xLabel: 'training step', yLabel: 'induction score', logX: false, logY: false,
    });
    drawChart(el.loss, {
      series: [{ label: 'loss', ...seriesStyle(4), points: points.filter((p) => Number.isFinite(p.loss)).map((p) => [p.step, p.loss / Math.LN2]) }],
      xLabel: 'training step', yLabel: 'loss (bits per token)', logX: false, logY: false,
    });
    el.legend.replaceChildren(...Array.from({ length: heads }, (_, i) => {
      const li = document.createElement('li');
      li.append(legendSwatch(seriesStyle(i)), headLabel(i));
      return li;
    }));
  }

  async function run() {
    controller?.abort();
    controller = new AbortController();
    const { signal } = controller;
    el.run.disabled = true;
    el.stop.disabled = false;
    el.names.replaceChildren();
    el.scores.closest('.results').hidden = false; // the charts take room from the first run on
    try {
      const threads = el.threads.value === 'all' ? (navigator.hardwareConcurrency || 2) : 1;
      const lib = await loadLib(threads);
      const attention = el.form.value;
      const form = lib.forms.find((f) => f.name === attention);
      const extra = form.usesQK ? {} : { positional: 'none' }; // rotary positions rotate queries and keys
      const model = lib.createModel({ vocab: SETUP.symbols + 1, maxLen: 2 * SETUP.length, ...MODEL, ...extra, attention, seed: Number(el.seed.value) });
      const steps = Number(el.steps.value), t0 = performance.now();
      let formedMs = null;
      const points = [];
      el.status.textContent = `Training ${attention} on ${lib.threads} thread${lib.threads > 1 ? 's' : ''}…`;
      await formInduction(model, {
        steps, every: 25, signal,
        onPoint: (p) => {
          points.push(p);
          if (formedMs === null && Math.max(...p.scores) >= BOUND) formedMs = performance.now() - t0;
          draw(points, p.scores.length);
          el.status.textContent = `step ${p.step} of ${steps}: loss ${Number.isFinite(p.loss) ? `${(p.loss / Math.LN2).toFixed(3)} bits per token` : '–'}, ` +
            `best induction score ${Math.max(...p.scores).toFixed(2)} (${((performance.now() - t0) / 1000).toFixed(1)} s)`;
        },
      });
      const ms = performance.now() - t0, at = formedAt(points, BOUND);
      // every head named by what it does, on the probes the curve read (the last point's scores)
      const named = headScores(model);
      const best = Math.max(...named.map((h) => h.scores.induction));
      el.names.replaceChildren(...named.map((h) => {
        const li = document.createElement('li');
        li.textContent = `layer ${h.layer + 1}, head ${h.head + 1}: ${h.name}, score ${h.score.toFixed(2)} ` +
          `(${KINDS.map((k) => `${k} ${h.scores[k].toFixed(2)}`).join(', ')})`;
        return li;
      }));
      el.summary.textContent = at === null
        ? `Measured just now: after ${steps} steps (${(ms / 1000).toFixed(1)} s on ${lib.threads} thread${lib.threads > 1 ? 's' : ''}), no head `
          + `of this ${attention} model reached an induction score of ${BOUND}; the best is ${best.toFixed(2)}.`
        : `Measured just now: an induction head formed at step ${at} (a head put ${BOUND} of its weight on the token after `
          + `the earlier occurrence), ${(formedMs / 1000).toFixed(1)} s into training on ${lib.threads} thread${lib.threads > 1 ? 's' : ''}; `
          + `${steps} steps took ${(ms / 1000).toFixed(1)} s; the best induction score at the end is ${best.toFixed(2)} (the list below).`;
      el.panel.dataset.result = JSON.stringify({ attention, threads: lib.threads, formedAt: at, formedMs, ms, points: points.map((p) => ({ step: p.step, loss: p.loss, scores: p.scores })), named: named.map((h) => ({ layer: h.layer, head: h.head, name: h.name, score: h.score })) });
      el.panel.dataset.done = String(Number(el.panel.dataset.done ?? 0) + 1);
      model.dispose();
    } catch (e) {
      el.status.textContent = e.name === 'AbortError' ? 'Stopped.' : e.message;
    } finally {
      el.run.disabled = false;
      el.stop.disabled = true;
    }
  }

  el.formEl.addEventListener('submit', (e) => { e.preventDefault(); run(); });
  el.stop.addEventListener('click', () => controller?.abort());
  return { run };
}
