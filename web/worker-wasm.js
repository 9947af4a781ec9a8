// worker-wasm.js: the page's compiled wasm for its Workers, so a first load downloads each .wasm once
// (issue 45, 3g). The page starts every Worker with startWorker(url): its first message is the page's
// compiled modules (wasm/index.js compiledModules(); a WebAssembly.Module can be posted). A worker
// loads the library with workerLib(options), which waits for that message and calls
// loadAttention({ ...options, modules }): the build is chosen as before, and a build the page has is
// neither fetched nor compiled again. A worker started otherwise would wait for ever: start them all here.
import { compiledModules, loadAttention } from '../wasm/index.js';

/** Page side: a module Worker at url, first sent the page's compiled wasm modules. */
export function startWorker(url) {
  const w = new Worker(url, { type: 'module' });
  w.postMessage({ type: 'wasm-modules', modules: compiledModules() });
  return w;
}

// Worker side: the page's modules, taken from the first 'wasm-modules' message (which the worker's
// own handlers never see: this listener is registered when the worker imports this file, before them).
let modules = null;
function pageModules() {
  modules ??= new Promise((resolve) => {
    const take = (e) => {
      if (e.data?.type !== 'wasm-modules') return;
      e.stopImmediatePropagation();
      removeEventListener('message', take);
      resolve(e.data.modules ?? {});
    };
    addEventListener('message', take);
  });
  return modules;
}
if (typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope) pageModules();

/** Worker side: loadAttention(options) with the page's compiled modules (see startWorker). */
export async function workerLib(options = {}) {
  return loadAttention({ ...options, modules: await pageModules() });
}
