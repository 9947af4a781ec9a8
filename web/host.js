// host.js: the page's side of the model host (model-host.js). One Worker owns the wasm instance that
// holds the model opened in "Open a model file" (and the shipped models the heavy panels run on), so
// nothing that grows with a model runs on the page's thread, and the page holds one copy of its
// weights. Each panel talks to its task in the host through a channel that behaves like a Worker
// (postMessage, onmessage, onerror): hostChannel('circuits') replaces new Worker('circuits-worker.js').
// hostCall(channel, msg, { transfer, onEvent, signal }) is the request/answer form the opener uses:
// the answer is the message of type 'done' with its id (or an Error from type 'error'); every other
// message with its id goes to onEvent. A signal's abort sends { type: 'cancel', id }.
import { startWorker } from './worker-page.js';

let worker = null;
const ports = new Map(); // channel -> port
let ids = 0;

function hostWorker() {
  if (worker) return worker;
  worker = startWorker(new URL('./model-host.js', import.meta.url));
  worker.addEventListener('message', (e) => {
    const { channel, msg } = e.data ?? {};
    const port = ports.get(channel);
    if (port) port.dispatch(msg);
  });
  // an error the host could not answer (its script failed to load, or it died): every request
  // waiting is refused with it, the panels are told, and the next request starts a new host
  worker.addEventListener('error', (e) => {
    e.preventDefault?.();
    const dead = worker;
    worker = null;
    dead.terminate();
    const message = `the model host stopped: ${e.message || 'it could not load or ran out of memory'}; open the model again`;
    for (const port of ports.values()) {
      port.fail(message);
      port.onerror?.(e);
    }
  });
  return worker;
}

/** A Worker-like port to the host's task `name`. */
export function hostChannel(name) {
  if (ports.has(name)) return ports.get(name);
  const waiting = new Map(); // id -> { resolve, reject, onEvent }
  const port = {
    onmessage: null,
    onerror: null,
    postMessage(msg, transfer = []) {
      hostWorker().postMessage({ channel: name, msg }, transfer);
    },
    dispatch(msg) {
      const w = msg && waiting.get(msg.id);
      if (w) {
        if (msg.type === 'done' || msg.type === 'error') {
          waiting.delete(msg.id);
          if (msg.type === 'done') w.resolve(msg.result);
          else w.reject(Object.assign(new Error(msg.message), msg.abort ? { name: 'AbortError' } : {}));
        } else w.onEvent?.(msg);
        return;
      }
      port.onmessage?.({ data: msg });
    },
    fail(message) {
      for (const [id, w] of waiting) {
        waiting.delete(id);
        w.reject(new Error(message));
      }
    },
    call(msg, { transfer = [], onEvent = null, signal = null } = {}) {
      const id = `${name}-${++ids}`;
      return new Promise((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason ?? new DOMException('cancelled', 'AbortError'));
          return;
        }
        waiting.set(id, { resolve, reject, onEvent });
        signal?.addEventListener('abort', () => port.postMessage({ type: 'cancel', id }), { once: true });
        port.postMessage({ ...msg, id }, transfer);
      });
    },
  };
  ports.set(name, port);
  return port;
}

/** A request to the host's task `channel`; resolves with its answer (see the header). */
export const hostCall = (channel, msg, opts) => hostChannel(channel).call(msg, opts);
