// owntext.js: "Train on your own text". Paste any text; the page builds a character tokenizer from
// it (charTokenizer), makes a small character model with the form chosen in Settings, and trains it
// on random windows of the text with model.train(): the page stays responsive because train() hands
// the thread back every few steps, reports progress, and stops on an AbortSignal (the Stop button).
// Every progress report redraws the loss and a fresh sample generated from the text's opening.
import { charTokenizer } from '../../wasm/index.js';

const WINDOW = 32; // characters per training row (the model's maxLen)
const BATCH = 16;
const SAMPLE = 48; // characters generated per sample

export function createOwnTextView(el, { lib, formOf }) {
  let model = null;
  let controller = null;

  function status(text) {
    el.status.textContent = text;
  }

  function stop() {
    controller?.abort();
  }

  async function trainOnText() {
    const text = el.text.value;
    if (Array.from(text).length < WINDOW + 2) {
      status(`Paste at least ${WINDOW + 2} characters (the model reads windows of ${WINDOW}).`);
      return;
    }
    const form = formOf();
    if (!form.causal) {
      status(`"${form.label}" has no causal form, so it cannot drive a character model; pick another form in Settings.`);
      return;
    }
    const tok = charTokenizer({ text });
    const ids = tok.encode(text);
    model?.dispose();
    model = lib.createModel({ vocab: tok.vocab, dModel: 64, heads: 4, layers: 2, maxLen: WINDOW, attention: form.id, seed: 1 });
    const steps = Number(el.steps.value);
    let seed = 7;
    const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 2 ** 32; };
    const batch = () => {
      const inputs = [], targets = [];
      for (let r = 0; r < BATCH; r++) {
        const at = Math.floor(rand() * (ids.length - WINDOW - 1));
        inputs.push(ids.subarray(at, at + WINDOW));
        targets.push(ids.subarray(at + 1, at + WINDOW + 1));
      }
      return { inputs, targets };
    };
    const prompt = ids.subarray(0, Math.min(8, ids.length));
    const sample = () => tok.decode([...prompt, ...model.generate(prompt, { maxTokens: SAMPLE, temperature: 0.7, topK: 8, seed: 3 })]);
    controller = new AbortController();
    el.train.disabled = true;
    el.stop.disabled = false;
    el.progress.value = 0;
    status(`Training a ${form.label} character model (vocabulary of ${tok.vocab} characters from your text)…`);
    const t0 = performance.now();
    try {
      const r = await model.train({
        steps, batch, signal: controller.signal, yieldEvery: 10,
        lr: (s) => 3e-3 * Math.min(1, (s + 1) / 50), // warm-up over 50 steps
        onProgress: ({ step, loss }) => {
          el.progress.value = step / steps;
          el.loss.textContent = `step ${step} of ${steps}: training loss ${(loss / Math.LN2).toFixed(2)} bits per character`;
          if (step % 50 === 0 || step === steps) el.sample.textContent = sample();
        },
      });
      status(`Done: ${r.steps} steps in ${((performance.now() - t0) / 1000).toFixed(1)} s. The sample below continues your text's opening.`);
      el.sample.textContent = sample();
    } catch (e) {
      if (e.name === 'AbortError') status(`Stopped at step ${model.steps}. Train again to start over.`);
      else status(`Training failed: ${e.message}`);
    } finally {
      el.train.disabled = false;
      el.stop.disabled = true;
      controller = null;
    }
  }

  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    trainOnText();
  });
  el.stop.addEventListener('click', stop);
  return { stop };
}
