// tokenizer-worker.js: "Train on your text" of the tokenizer panel (views/tokenizer.js), in a Web
// Worker so the page's thread never waits on training. It loads the package itself and trains a
// byte-level BPE (lib.trainTokenizer, C) on the posted text.
// Messages in:  { type: 'train', id, text, vocabSize }
// Messages out (each with the run's id):
//               { type: 'progress', id, message }   a line saying what it is doing
//               { type: 'done', id, json, ms, asked, chars }   json: the tokenizer.json (an object);
//                 ms: training time in the worker; asked: the vocabSize asked for; chars: the text's characters
//               { type: 'error', id, message }   the library's Error (empty text, a vocabSize out of range, ...)
import { workerLib } from './worker-page.js';

const libPromise = workerLib(); // the page's compiled wasm (worker-page.js)
libPromise.catch(() => {}); // a failure is reported by the run that awaits it

onmessage = async (e) => {
  const msg = e.data;
  if (msg?.type !== 'train') return;
  const { id, text, vocabSize } = msg;
  try {
    postMessage({ type: 'progress', id, message: 'Loading the library in the worker…' });
    const lib = await libPromise;
    const bytes = typeof text === 'string' ? new TextEncoder().encode(text).length : 0;
    postMessage({ type: 'progress', id,
      message: `Training: counting the pairs in ${bytes} bytes and merging the most frequent, up to ${vocabSize} pieces…` });
    const t0 = performance.now();
    const tok = lib.trainTokenizer(text, { vocabSize });
    const ms = performance.now() - t0;
    postMessage({ type: 'done', id, json: tok.toJSON(), ms, asked: vocabSize, chars: Array.from(text).length });
  } catch (err) {
    postMessage({ type: 'error', id, message: err?.message ?? String(err) });
  }
};
