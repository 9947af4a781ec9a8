// attention-wasm: the ES-module loader. Works unchanged in Node 20+ and in browsers with no
// bundler: it finds the .wasm beside itself with import.meta.url, reads it with fs in Node
// (a dynamic import, so browsers never load fs) or fetch in a browser, and instantiates it.
import { Core, checkInt, checkKeys, checkOneOf, describe, fail, isIntIn, readForms, readPositionals } from './core.js';
import { THREAD_BUILD, THREAD_BUILD_RELAXED, autoThreads, startThreads, threadImports, whyNoThreads } from './threads.js';
import { kernelMethods } from './kernels.js';
import { softmaxMethods } from './softmax.js';
import { linearMethods } from './linear.js';
import { synthesizerMethods } from './synthesizer.js';
import { modelMethods } from './model.js';
import { localMethods } from './local.js';
import { retentionMethods } from './retention.js';
import { attentionMethods } from './attention.js';
import { gatedMethods } from './gated.js';
import { llama2cMethods } from './llama2c.js';
import { bpeMethods } from './bpe.js';
import { huggingFaceMethods } from './huggingface.js';
import { saeMethods } from './sae.js';
export { charTokenizer } from './tokenizer.js';
export { retnetGammas } from './retention.js';

// Each family contributes methods built on the shared Core.
const FAMILIES = [kernelMethods, softmaxMethods, localMethods, linearMethods, synthesizerMethods, retentionMethods,
  gatedMethods, modelMethods, attentionMethods, llama2cMethods, bpeMethods, huggingFaceMethods, saeMethods];

// (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt)): validates only with SIMD128.
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0,
  65, 0, 253, 15, 253, 98, 11]);

/** True when this engine validates WebAssembly SIMD128. */
export function simdSupported() {
  try {
    return WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

// (module (func (result v128) i32.const 0 i8x16.splat (x3) f32x4.relaxed_madd)): validates only
// with relaxed SIMD (Chromium 114+, Firefox 145+, Node 22+; Node 20 behind --experimental-wasm-relaxed-simd).
const RELAXED_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17,
  0, 65, 0, 253, 15, 65, 0, 253, 15, 65, 0, 253, 15, 253, 133, 2, 11]);

/** True when this engine validates WebAssembly relaxed SIMD (the fused multiply-add build runs). */
export function relaxedSupported() {
  try {
    return WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

const BUILDS = {
  simd: new URL('./attention.wasm', import.meta.url),
  relaxed: new URL('./attention-relaxed.wasm', import.meta.url),
  scalar: new URL('./attention-scalar.wasm', import.meta.url),
};

const moduleCache = new Map(); // url string -> Promise<WebAssembly.Module>
const compiledByUrl = new Map(); // url string -> WebAssembly.Module, once its compile has finished

/**
 * The WebAssembly.Modules this loader has compiled so far in this realm (page or worker), by URL:
 * { [href]: WebAssembly.Module }. A Module can be posted to a Worker, and loadAttention({ modules })
 * there uses it instead of fetching and compiling the .wasm again (a page and its workers download it once).
 */
export function compiledModules() {
  return Object.fromEntries(compiledByUrl);
}

// Node's file reader, imported by a name bundlers do not follow: a browser bundle (esbuild,
// Vite, webpack) then carries no Node import, and only Node, reading a file: URL, ever loads it.
const NODE_FS = 'node:fs/promises';

async function readUrl(url) {
  if (url.protocol === 'file:') {
    const { readFile } = await import(/* @vite-ignore */ /* webpackIgnore: true */ NODE_FS);
    return readFile(url);
  }
  const res = await fetch(url);
  if (!res.ok) fail(`could not fetch ${url.href}: HTTP ${res.status}`);
  return res.arrayBuffer();
}

function compileUrl(url) {
  const key = url.href;
  if (!moduleCache.has(key)) {
    const p = readUrl(url).then((bytes) => WebAssembly.compile(bytes));
    p.then((m) => compiledByUrl.set(key, m), () => moduleCache.delete(key)); // a failed fetch may succeed next time
    moduleCache.set(key, p);
  }
  return moduleCache.get(key);
}

// memory: the threaded build's shared memory (imported); else the module defines its own.
async function instantiate(module, memory) {
  let core = null;
  const known = {
    env: { emscripten_notify_memory_growth: () => {}, memory }, // views are made fresh from memory.buffer on use
    wasi_snapshot_preview1: {
      fd_write: () => 52, // ENOSYS: the C core never prints
      proc_exit: (code) => fail(`the wasm module tried to exit with code ${code}`),
      clock_time_get: () => 52,
    },
  };
  const imports = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    const fn = known[imp.module]?.[imp.name];
    if (!fn) fail(`the wasm module needs an import this loader does not provide: ${imp.module}.${imp.name}`);
    (imports[imp.module] ??= {})[imp.name] = fn;
  }
  const instance = await WebAssembly.instantiate(module, imports);
  instance.exports._initialize?.();
  core = new Core(instance, memory ?? instance.exports.memory);
  core.instance = instance;
  return core;
}

// The threaded build with n threads, or null and why not.
async function loadThreaded(n, relaxed) {
  let core = null;
  try {
    const module = await compileUrl(relaxed ? THREAD_BUILD_RELAXED : THREAD_BUILD);
    const { memory } = threadImports();
    core = await instantiate(module, memory);
    const pool = await startThreads(module, core.instance, memory, n);
    return { core, pool, module };
  } catch (e) {
    return { reason: `the threaded build could not start: ${e.message}` };
  }
}

// The matmul kernel variants (src/kernels/matmul.c): the same bits, different speed per CPU.
const KERNEL_VARIANTS = ['measured', 'unpacked', 'packed'];
// A probe's result belongs to the machine and the build, not to one instance: it is measured at the
// first load of each compiled module in this process, and later instances of it reuse it.
const probes = new WeakMap(); // WebAssembly.Module -> { variant, probeMs }

// Times each variant on a 192^3 product in every layout (NN, NT, TN; buffers already in wasm, one
// thread), best of 3 reps each, about 10 ms in all; keeps the better one for this instance.
function probeKernels(core) {
  const ex = core.exports;
  if (!ex.aw_matmul_variant || !ex.aw_bench_matmul) return { variant: 'measured', probeMs: null };
  const S = 192, bytes = S * S * 4;
  const a = ex.malloc(bytes), b = ex.malloc(bytes), c = ex.malloc(bytes);
  if (!a || !b || !c) {
    ex.free(a), ex.free(b), ex.free(c);
    return { variant: 'measured', probeMs: null };
  }
  const f32 = core.f32;
  for (let i = 0; i < S * S; i++) (f32[a / 4 + i] = ((i * 7) % 13) / 13 - 0.5), (f32[b / 4 + i] = ((i * 5) % 11) / 11 - 0.5);
  const probeMs = {};
  for (let layout = 0; layout < 3; layout++) ex.aw_bench_matmul(c, a, b, S, S, S, layout, 3); // the engine tiers up first
  for (const [v, name] of KERNEL_VARIANTS.entries()) {
    ex.aw_matmul_variant(v);
    let total = 0;
    for (let layout = 0; layout < 3; layout++) {
      ex.aw_bench_matmul(c, a, b, S, S, S, layout, 1); // warm-up
      let best = Infinity;
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now();
        ex.aw_bench_matmul(c, a, b, S, S, S, layout, 1);
        best = Math.min(best, performance.now() - t0);
      }
      total += best;
    }
    probeMs[name] = Number(total.toFixed(3));
  }
  ex.free(a), ex.free(b), ex.free(c);
  // 'packed' replaces 'measured' only when clearly faster (3%: more than the probe's noise).
  // 'unpacked' is timed for the record but never chosen here: at 192^3 it can tie, while beyond the
  // caches (a TN product at 1024^3) it runs at about half speed, which a probe of a few ms cannot see.
  const variant = probeMs.packed < 0.97 * probeMs.measured ? 'packed' : 'measured';
  ex.aw_matmul_variant(KERNEL_VARIANTS.indexOf(variant));
  return { variant, probeMs: Object.freeze(probeMs) };
}

/**
 * Loads the library.
 * @param {{ simd?: 'auto' | boolean, relaxed?: 'auto' | boolean, wasm?: URL | string | ArrayBuffer | ArrayBufferView | WebAssembly.Module }} [options]
 *   simd: 'auto' (default) picks the SIMD build when the engine validates SIMD128, else the scalar one;
 *   true demands SIMD, false forces the scalar build. relaxed: 'auto' (default) picks the relaxed-SIMD
 *   build (fused multiply-add) where the engine validates it; true demands it, false keeps SIMD128.
 *   wasm: use these bytes or this URL instead.
 *   modules: { [href]: WebAssembly.Module }, what compiledModules() returned elsewhere (a page posts it
 *   to its Worker): the build is chosen as without it, and a chosen build found here is not fetched.
 */
export async function loadAttention(options = {}) {
  checkKeys('loadAttention', options, ['simd', 'relaxed', 'wasm', 'threads', 'kernel', 'modules']);
  if (options.modules !== undefined) {
    const ms = options.modules;
    if (ms === null || typeof ms !== 'object' || Array.isArray(ms))
      fail(`loadAttention: modules must be an object { [url]: WebAssembly.Module } (what compiledModules() returns), got ${describe(ms)}`);
    for (const [href, m] of Object.entries(ms)) {
      if (!(m instanceof WebAssembly.Module))
        fail(`loadAttention: modules[${JSON.stringify(href)}] must be a WebAssembly.Module, got ${describe(m)}`);
      if (!moduleCache.has(href)) moduleCache.set(href, Promise.resolve(m)), compiledByUrl.set(href, m);
    }
  }
  const kernelOpt = options.kernel ?? 'auto';
  checkOneOf('loadAttention: kernel', kernelOpt, ['auto', ...KERNEL_VARIANTS]);
  const simd = options.simd ?? 'auto';
  checkOneOf('loadAttention: simd', simd, ['auto', true, false]);
  const canSimd = simdSupported();
  if (simd === true && !canSimd) fail('loadAttention: simd is true but this engine does not support WebAssembly SIMD128');
  const relaxedOpt = options.relaxed ?? 'auto';
  checkOneOf('loadAttention: relaxed', relaxedOpt, ['auto', true, false]);
  const canRelaxed = canSimd && relaxedSupported();
  if (relaxedOpt === true && !canRelaxed)
    fail('loadAttention: relaxed is true but this engine does not validate WebAssembly relaxed SIMD ' +
      '(Node 20 needs --experimental-wasm-relaxed-simd; Node 22+, Chromium 114+ and Firefox 145+ have it)');
  if (relaxedOpt === true && simd === false) fail('loadAttention: relaxed: true needs SIMD, but simd is false');
  if (relaxedOpt === true && options.wasm !== undefined) fail('loadAttention: relaxed: true and wasm cannot both be given');
  const relaxed = relaxedOpt !== false && simd !== false && canRelaxed && options.wasm === undefined;
  const threads = options.threads ?? 1;
  if (threads !== 'auto' && !isIntIn(threads, 1, 64))
    fail(`loadAttention: threads must be 'auto' or an integer in [1, 64], got ${describe(threads)}`);
  const want = threads === 'auto' ? await autoThreads() : threads;
  let reason = null, threaded = null;
  if (want === 1) reason = threads === 'auto' ? 'this machine reports one core' : 'threads: 1 (the default); loadAttention({ threads: \'auto\' }) uses every core';
  else if (options.wasm !== undefined) reason = 'a wasm module of your own was given (options.wasm): it runs on one thread';
  else if (simd === false) reason = 'simd: false was asked for, and the threaded build is a SIMD build';
  else reason = whyNoThreads(canSimd);
  if (!reason) {
    threaded = await loadThreaded(want, relaxed);
    // 'auto' falls back to the SIMD128 build where the relaxed one is missing (a bundle that copied
    // only some of the .wasm files) or does not start
    if (threaded.reason && relaxed && relaxedOpt === 'auto') threaded = await loadThreaded(want, false);
    reason = threaded.reason ?? null;
  }
  let module;
  const w = options.wasm;
  if (threaded?.core) module = null;
  else if (w === undefined && simd !== false && canSimd && relaxed) {
    try {
      module = await compileUrl(BUILDS.relaxed);
    } catch (e) {
      if (relaxedOpt === true) fail(`loadAttention: relaxed is true but ${BUILDS.relaxed.href} did not load: ${e.message}`);
      module = await compileUrl(BUILDS.simd); // 'auto': the SIMD128 build where the relaxed one is missing
    }
  } else if (w === undefined) module = await compileUrl(simd === false || !canSimd ? BUILDS.scalar : BUILDS.simd);
  else if (w instanceof WebAssembly.Module) module = w;
  else if (w instanceof URL || typeof w === 'string') module = await compileUrl(new URL(w, import.meta.url));
  else if (w instanceof ArrayBuffer || ArrayBuffer.isView(w)) {
    try {
      module = await WebAssembly.compile(w);
    } catch (e) {
      fail(`loadAttention: wasm bytes do not compile: ${e.message}`);
    }
  } else fail(`loadAttention: wasm must be a URL, a string URL, an ArrayBuffer or a typed array, got ${describe(w)}`);

  const core = threaded?.core ?? await instantiate(module);
  const pool = threaded?.pool ?? null;
  // the kernel variant: probed on one thread (the partition does not depend on it), or as asked
  let kernel;
  const compiled = threaded?.module ?? module;
  if (kernelOpt === 'auto' && probes.has(compiled)) {
    kernel = probes.get(compiled);
    core.exports.aw_matmul_variant?.(KERNEL_VARIANTS.indexOf(kernel.variant));
  } else if (kernelOpt === 'auto') {
    if (pool) core.exports.aw_set_threads(1);
    kernel = probeKernels(core);
    if (pool) core.exports.aw_set_threads(pool.count);
    probes.set(compiled, kernel);
  } else {
    core.exports.aw_matmul_variant?.(KERNEL_VARIANTS.indexOf(kernelOpt));
    kernel = { variant: kernelOpt, probeMs: null };
  }
  const lib = {
    /** threads that run each call (1: the single-thread build) */
    get threads() {
      return pool ? core.exports.aw_thread_count() : 1;
    },
    /**
     * the matmul kernel variant this instance uses ('measured' | 'unpacked' | 'packed'; every variant
     * gives the same bits) and, when loadAttention probed for it (kernel: 'auto'), each variant's
     * probe time in ms
     */
    kernel: Object.freeze(kernel),
    /** why only one thread runs, in one line (null when threads run) */
    threadsReason: reason,
    /** items of work the worker threads (not the calling thread) have run so far: shows they take part */
    threadWorkItems() {
      return pool ? core.exports.aw_thread_worker_items() : 0;
    },
    /**
     * Uses n threads from now on, 1 <= n <= the threads asked for at load (results do not depend on
     * it); returns how many run. Where the threaded build could not start (lib.threadsReason says
     * why), 1 runs whatever n: code written for threads keeps working on a page that is not
     * cross-origin isolated. More than were asked for at load is an Error.
     */
    setThreads(n) {
      checkInt('setThreads: n', n, 1, 64, { expected: 'a positive integer' });
      const asked = pool ? pool.count : want; // the threads asked for at load (started, when they run)
      if (n > asked)
        fail(`setThreads: n = ${n} is more than the ${asked} thread${asked === 1 ? '' : 's'} ${pool ? 'started' : 'asked for'} at load; ` +
          `n must be in [1, ${asked}]: load with { threads: ${n} } for more`);
      if (!pool) return 1;
      return core.exports.aw_set_threads(n);
    },
    /** true when the SIMD128 kernels run, false for the scalar build */
    simd: core.exports.aw_simd_enabled() === 1,
    /** true when the relaxed-SIMD build runs (fused multiply-add: results differ from the SIMD128
     * build's in the last bits, and stay bit-identical across thread counts) */
    relaxed: core.exports.aw_relaxed_enabled?.() === 1,
    /** the wasm memory (its buffer.byteLength is the heap size) */
    memory: core.memory,
    /** the size of the wasm memory in bytes (it grows and never shrinks) */
    heapBytes: () => core.memory.buffer.byteLength,
    /** bytes held by live objects right now (the allocator's count): what leak tests watch */
    heapInUse: () => core.exports.aw_heap_in_use(),
    /** the attention forms of the C registry (src/model/forms.h), in order */
    forms: readForms(core),
    /** the positional encodings of the C table (src/model/positional.h), in order */
    positionals: readPositionals(core),
  };
  for (const family of FAMILIES) Object.assign(lib, family(core, lib));
  // the raw exports, for the benchmarks' copy-free kernel timings (bench/peers/threads-child.mjs);
  // not part of the API: no checks stand between them and the heap
  Object.defineProperty(lib, Symbol.for('attention-wasm.exports'), { value: core.exports });
  return lib;
}

export default loadAttention;
