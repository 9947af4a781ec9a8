// threads.js: the threaded build's loader (wasm/attention-threads.wasm, built by build.sh). It makes
// a shared memory, instantiates the module on it for the main thread, and starts n - 1 workers
// (Node worker_threads or module Web Workers), each a second instance of the same module on the
// same memory with its own stack and thread-local block (wasm/thread-worker.js). The C side
// (src/kernels/parallel.c) splits work into items fixed by the sizes, so any thread count gives
// the same bits. Threads need SharedArrayBuffer, which a browser gives only to a cross-origin-
// isolated page (COOP same-origin + COEP require-corp; npm start sends both); whyNoThreads says
// why they cannot run here, in one line, or returns null.

export const THREAD_BUILD = new URL('./attention-threads.wasm', import.meta.url);
// the same with relaxed SIMD (fused multiply-add), where the engine validates it
export const THREAD_BUILD_RELAXED = new URL('./attention-threads-relaxed.wasm', import.meta.url);
const WORKER = new URL('./thread-worker.js', import.meta.url);
const STACK = 256 * 1024; // per worker; the kernels use a few KiB (the matrix-vector product's partial sums up to 32 KiB: matmul.c GEMV_PIECES x GEMV_WIDE floats)
const PAGES = { initial: 64, maximum: 32768 }; // as build.sh links it: 4 MiB, growing to 2 GiB

// Node's modules, imported by names bundlers do not follow (as in index.js): a browser bundle
// carries no Node import.
const NODE_OS = 'node:os', NODE_WORKERS = 'node:worker_threads';

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined' &&
  typeof self === 'undefined';

/** null when threads can run here; else why not, in one line. */
export function whyNoThreads(simd) {
  if (typeof SharedArrayBuffer === 'undefined' || (!isNode && globalThis.crossOriginIsolated === false))
    return 'SharedArrayBuffer is missing: the page is not cross-origin isolated (serve it with the headers ' +
      'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp; npm start sends both)';
  if (!simd) return 'the threaded build needs WebAssembly SIMD128, which this engine does not validate';
  if (!isNode && typeof Worker === 'undefined') return 'this context has no Web Workers';
  try {
    new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  } catch {
    return 'this engine cannot make a shared WebAssembly.Memory';
  }
  return null;
}

/** The thread count 'auto' means: the machine's cores, at most 8 (and 1 when there is one). */
export async function autoThreads() {
  if (isNode) {
    const os = await import(/* @vite-ignore */ /* webpackIgnore: true */ NODE_OS);
    return Math.max(1, Math.min(8, os.availableParallelism?.() ?? os.cpus().length));
  }
  return Math.max(1, Math.min(8, globalThis.navigator?.hardwareConcurrency ?? 1));
}

/** The shared memory and the imports of the threaded module's main instance. */
export function threadImports() {
  const memory = new WebAssembly.Memory({ ...PAGES, shared: true });
  return { memory, env: { memory, emscripten_notify_memory_growth: () => {} } };
}

// A worker: Node's worker_threads (unref'd, so an idle pool never keeps a process alive) or a
// module Web Worker.
async function spawn() {
  if (isNode) {
    const { Worker } = await import(/* @vite-ignore */ /* webpackIgnore: true */ NODE_WORKERS);
    const w = new Worker(WORKER);
    // unref'd once started (a 'message' listener refs it again): an idle pool never keeps a process alive
    return { post: (m) => w.postMessage(m), on: (f) => w.on('message', f), onError: (f) => w.on('error', f),
      started: () => { w.removeAllListeners('message'); w.unref(); }, stop: () => w.terminate() };
  }
  // written out in full, the pattern bundlers (Vite, webpack) recognise and emit the worker for
  const w = new Worker(new URL('./thread-worker.js', import.meta.url), { type: 'module' });
  return { post: (m) => w.postMessage(m), on: (f) => w.addEventListener('message', (e) => f(e.data)),
    onError: (f) => w.addEventListener('error', (e) => f(e)), started: () => {}, stop: () => w.terminate() };
}

/**
 * Starts n - 1 workers for the main instance `instance` (of `module`, on `memory`) and tells C to
 * use n threads. Returns { count, stop() }.
 */
export async function startThreads(module, instance, memory, n) {
  const ex = instance.exports;
  // the main thread's own thread-local block (the linker leaves it at address 0 otherwise)
  const tlsBlock = () => {
    const size = ex.__tls_size.value, align = Math.max(ex.__tls_align.value, 16);
    const p = ex.malloc(size + align);
    if (!p) throw new Error('attention-wasm: out of memory for a thread-local block');
    return Math.ceil(p / align) * align;
  };
  ex.__wasm_init_tls(tlsBlock());
  const workers = [];
  try {
    await Promise.all(Array.from({ length: n - 1 }, async (_, index) => {
      const stack = ex.malloc(STACK);
      if (!stack) throw new Error('attention-wasm: out of memory for a thread stack');
      const w = await spawn();
      workers.push(w);
      await new Promise((resolve, reject) => {
        w.on((m) => (m.type === 'ready' ? resolve() : reject(new Error(`attention-wasm: thread ${index + 1}: ${m.message}`))));
        w.onError((e) => reject(new Error(`attention-wasm: thread ${index + 1} could not start: ${e?.message ?? e}`)));
        w.post({ module, memory, index, stackTop: Math.floor((stack + STACK) / 16) * 16, tls: tlsBlock() }); // 16-aligned
      });
      w.started();
    }));
  } catch (e) {
    for (const w of workers) w.stop();
    throw e;
  }
  // the workers enter aw_thread_loop right after 'ready'; C counts them as they do
  const deadline = Date.now() + 5000;
  while (ex.aw_set_threads(n) < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  return { count: ex.aw_set_threads(n), stop: () => { ex.aw_set_threads(1); for (const w of workers) w.stop(); } };
}
