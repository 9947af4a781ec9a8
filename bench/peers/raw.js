// raw.js: a second instance of wasm/attention.wasm with its exports in hand, for the
// copy-free kernel timings (src/api/api_bench.c). The library's loader keeps its exports
// private, as it should; the benchmark instantiates the same file with the same imports.
import { readFile } from 'node:fs/promises';

export async function loadRaw() {
  const bytes = await readFile(new URL('../../wasm/attention.wasm', import.meta.url));
  const module = await WebAssembly.compile(bytes);
  const known = {
    env: { emscripten_notify_memory_growth: () => {} },
    wasi_snapshot_preview1: { fd_write: () => 52, proc_exit: () => { throw new Error('exit'); }, clock_time_get: () => 52 },
  };
  const imports = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    const fn = known[imp.module]?.[imp.name];
    if (!fn) {
      console.log(`(bench/peers/raw.js: wasm/attention.wasm now imports ${imp.module}.${imp.name}; add it here)`);
      return null;
    }
    (imports[imp.module] ??= {})[imp.name] = fn;
  }
  const { exports } = await WebAssembly.instantiate(module, imports);
  exports._initialize?.();
  if (!exports.aw_bench_matmul) return null; // a build from before api_bench.c
  return {
    exports,
    /** Copies `data` into a fresh heap buffer; returns its pointer. */
    put(data) {
      const p = exports.malloc(data.length * 4);
      if (!p) throw new Error('raw: malloc failed');
      new Float32Array(exports.memory.buffer, p, data.length).set(data);
      return p;
    },
    alloc(floats) {
      const p = exports.malloc(floats * 4);
      if (!p) throw new Error('raw: malloc failed');
      return p;
    },
    read(p, len) {
      return new Float32Array(exports.memory.buffer, p, len).slice();
    },
    free(p) {
      exports.free(p);
    },
  };
}
