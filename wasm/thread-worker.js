// thread-worker.js: one thread of the threaded build (wasm/threads.js starts it). It instantiates the
// same module on the same shared memory, takes the stack and thread-local block the main thread set
// aside for it, says it is ready, and enters aw_thread_loop, which waits for work with
// memory.atomic.wait32 and never returns. Runs as a Node worker_threads worker or a module Web Worker.
const isNode = typeof process !== 'undefined' && process.versions?.node && typeof self === 'undefined';
const NODE_WORKERS = 'node:worker_threads'; // a name bundlers do not follow (see index.js)
let port = null; // Node's parentPort, or the worker's global scope

function start({ module, memory, index, stackTop, tls }) {
  const env = { memory, emscripten_notify_memory_growth: () => {} };
  const imports = { env };
  for (const imp of WebAssembly.Module.imports(module))
    if (imp.module !== 'env') (imports[imp.module] ??= {})[imp.name] = () => 52; // never called off the main thread
  const instance = new WebAssembly.Instance(module, imports);
  const ex = instance.exports;
  ex.__wasm_init_tls(tls);
  ex.stackRestore(stackTop);
  port.postMessage({ type: 'ready', index });
  ex.aw_thread_loop(index); // never returns
}

const onMessage = (data) => {
  try {
    start(data);
  } catch (e) {
    port.postMessage({ type: 'error', message: e?.message ?? String(e) });
  }
};
// no top-level await: bundlers emit workers as classic scripts
if (isNode) {
  import(/* @vite-ignore */ /* webpackIgnore: true */ NODE_WORKERS).then((m) => {
    port = m.parentPort;
    port.once('message', onMessage);
  });
} else {
  port = self;
  self.addEventListener('message', (e) => onMessage(e.data), { once: true });
}
