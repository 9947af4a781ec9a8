// hosted.js: what the model host (model-host.js, a Worker) shares between its tasks: the one wasm
// instance and the model open in "Open a model file". The page's panels never hold a model that
// grows with its size: they ask the host (host.js), whose tasks (host-opener.js, circuits-worker.js,
// features-worker.js) all read the model from here. Imported in the worker only.
import { workerLib } from './worker-page.js';

/** The library, loaded once with the page's compiled wasm (worker-page.js). */
export const libPromise = workerLib();
libPromise.catch(() => {}); // reported by the request that awaits it

let opened = null; // { key, name, kind, model, tokens (formats.js tokens(model)), quant: { format, model } | null }
const listeners = new Set();

/** The opened model's record, or null. */
export const hostedModel = () => opened;

/** The opened model by the key the page knows it by, or an Error saying it is gone. */
export function hostedByKey(key) {
  if (!opened || opened.key !== key) throw new Error('that model was closed in "Open a model file": open it again');
  return opened;
}

/** Sets (or, with null, clears) the opened model; the one before is disposed after the listeners let go of it. */
export function setHosted(record) {
  const old = opened;
  opened = record;
  for (const fn of listeners) fn(record, old);
  if (old && old !== record) {
    old.quant?.model.dispose();
    old.model.dispose();
  }
}

/** fn(record, old) whenever the opened model changes (a task drops what it derived from the old one). */
export const onHosted = (fn) => listeners.add(fn);

/**
 * A text as tokens of a model's tokenizer: { ids, lowered }. A tokenizer without byte pieces (the
 * llama2.c sample's) may still spell a text in lower case only: then the lower-cased text's ids.
 */
export function encodeText(tokenizer, text) {
  try {
    return { ids: tokenizer.encode(text), lowered: false };
  } catch (e) {
    if (text.toLowerCase() === text) throw e;
    try {
      return { ids: tokenizer.encode(text.toLowerCase()), lowered: true };
    } catch {
      throw e;
    }
  }
}
