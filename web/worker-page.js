// worker-page.js: what a Worker gets from its page, so a first load downloads each file once (issue
// 45, 3g): the page's compiled wasm, and the files the page fetches (web/fetch-once.js).
// The page starts every Worker with startWorker(url): its first message is the page's compiled modules
// (wasm/index.js compiledModules(); a WebAssembly.Module can be posted), and it answers the worker's
// file requests from fetchOnce. In the worker, workerLib(options) waits for the modules and calls
// loadAttention({ ...options, modules }) (the build is chosen as before; a build the page has is
// neither fetched nor compiled again), and pageFetch(url) asks the page for a file's bytes.
// These messages ('wasm-modules', 'page-fetch', 'page-fetched') never reach the views' or the
// workers' own handlers: the listeners here are registered first and stop them.
// A worker started without startWorker would wait for ever: start them all here.
import { compiledModules, loadAttention } from '../wasm/index.js';
import { fetchOnce } from './fetch-once.js';

/** Page side: a module Worker at url, sent the page's compiled wasm and answered from fetchOnce. */
export function startWorker(url) {
  const w = new Worker(url, { type: 'module' });
  w.addEventListener('message', (e) => {
    if (e.data?.type !== 'page-fetch') return;
    e.stopImmediatePropagation();
    const { key, url: asked } = e.data;
    fetchOnce(asked).then((bytes) => {
      const copy = bytes.slice(0); // the transfer detaches it; fetchOnce's bytes stay whole for the page
      w.postMessage({ type: 'page-fetched', key, bytes: copy }, [copy]);
    }, (err) => w.postMessage({ type: 'page-fetched', key, error: err.message }));
  });
  w.postMessage({ type: 'wasm-modules', modules: compiledModules() });
  return w;
}

// ---- worker side ----
const inWorker = typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope;
let modules = null; // Promise<{ [href]: WebAssembly.Module }>
const asked = new Map(); // key -> { resolve, reject }
let keys = 0;
if (inWorker) {
  modules = new Promise((resolve) => {
    addEventListener('message', (e) => {
      const msg = e.data;
      if (msg?.type === 'wasm-modules') {
        e.stopImmediatePropagation();
        resolve(msg.modules ?? {});
      } else if (msg?.type === 'page-fetched') {
        e.stopImmediatePropagation();
        const p = asked.get(msg.key);
        asked.delete(msg.key);
        if (msg.error !== undefined) p?.reject(new Error(msg.error));
        else p?.resolve(msg.bytes);
      }
    });
  });
}

/** Worker side: loadAttention(options) with the page's compiled modules (see startWorker). */
export async function workerLib(options = {}) {
  return loadAttention({ ...options, modules: await modules });
}

/**
 * Worker side: the bytes at url (an ArrayBuffer the worker owns), fetched by the page once
 * (fetchOnce) and sent here. Rejects with the page's Error message (file name and HTTP status).
 */
export function pageFetch(url) {
  const key = ++keys;
  return new Promise((resolve, reject) => {
    asked.set(key, { resolve, reject });
    postMessage({ type: 'page-fetch', key, url: String(url) });
  });
}
