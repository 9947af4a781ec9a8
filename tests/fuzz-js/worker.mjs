// worker.mjs: one target's inputs, run in a child process of fuzz.mjs so that a hang can be cut
// (the parent kills it past its time bound) and a crash is the child's, not the fuzzer's (a
// worker_thread terminated mid-compilation crashed Node 20 itself). It loads the library once, answers 'seeds' (the files the library writes for this
// target), 'run' (one input: null or the Finding it shows) and 'good' (a known-good load gives the
// same result as at start, and the wasm heap has not grown: the library still works).
// FUZZ_JS_LIB: another copy of the package's wasm/index.js to fuzz (e.g. a commit's, from git archive)
const { loadAttention } = await import(process.env.FUZZ_JS_LIB ? new URL(process.env.FUZZ_JS_LIB, `file://${process.cwd()}/`).href : '../../wasm/index.js');
import { TARGETS, Finding, wasmFrame } from './targets.mjs';

const target = TARGETS[process.argv[2]];
let stage = '';
const ctx = {
  accepted: 0,
  // what runs now, told to the parent as it changes: a hang is named by it
  set stage(s) { if (s !== stage) process.send({ type: 'stage', stage: stage = s }); },
};

const lib = await loadAttention();
const seeds = target.seeds(lib);
ctx.seeds = seeds;
ctx.setup = target.setup?.(lib) ?? {};
ctx.stage = 'good';
const reference = JSON.stringify(target.good(lib, ctx));
const heap0 = lib.heapInUse();
// a heap this much above its size at start, after every accepted object was disposed, is a leak
const HEAP_SLACK = 1 << 20;

const asFinding = (e) => (e instanceof Finding
  ? { kind: e.kind, message: e.message }
  : { kind: `uncaught ${e?.name ?? typeof e} in the harness${wasmFrame(e) ? ` at ${wasmFrame(e)}` : ''}`, message: `${e?.message ?? e}\n${e?.stack ?? ''}` });

process.on('message', (msg) => {
  if (msg.type === 'seeds') return process.send({ type: 'seeds', seeds });
  if (msg.type === 'run') {
    ctx.accepted = 0;
    ctx.stage = 'read';
    let finding = null;
    try {
      target.run(lib, msg.parts, ctx);
    } catch (e) {
      finding = asFinding(e);
    }
    return process.send({ type: 'done', finding, accepted: ctx.accepted });
  }
  if (msg.type === 'good') {
    ctx.stage = 'good';
    let finding = null;
    try {
      const got = JSON.stringify(target.good(lib, ctx));
      if (got !== reference) finding = { kind: 'known-good input reads differently after fuzzing', message: `${got.slice(0, 200)} vs ${reference.slice(0, 200)}` };
      else if (lib.heapInUse() > heap0 + HEAP_SLACK)
        finding = { kind: 'wasm heap grows over refused and disposed inputs', message: `${heap0} bytes at start, ${lib.heapInUse()} now` };
    } catch (e) {
      finding = { kind: 'known-good input fails after fuzzing', message: `${e?.name}: ${e?.message}` };
    }
    return process.send({ type: 'good', finding });
  }
});
process.send({ type: 'ready' });
