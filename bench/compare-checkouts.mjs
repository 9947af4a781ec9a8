// bench/compare-checkouts.mjs: this checkout against another one (an earlier commit), side by
// side in one process, so a change to the core can show it costs nothing.
//   git worktree add /tmp/base <commit> && (cd /tmp/base && bash build.sh wasm)
//   node bench/compare-checkouts.mjs /tmp/base
//   node bench/compare-checkouts.mjs /tmp/base forward   (only the workloads whose name holds "forward";
//   SAMPLES=41 for more interleaved rounds: the median of the per-round ratios is printed too)
// Both libraries run the same public-API calls, interleaved round-robin (bench/timing.js), and
// the table prints base / this per workload: above 1 means this checkout is faster. Three builds:
// SIMD and scalar on one thread, and the threaded build on two (skipped where threads cannot run;
// each library's worker spins about a millisecond after its call, into the other's: alike for both).
import { pathToFileURL } from 'node:url';
import { cpuName, interleave } from './timing.js';
import { loadAttention } from '../wasm/index.js';

const baseDir = process.argv[2], only = process.argv[3] ?? '';
const SAMPLES = Number(process.env.SAMPLES ?? 9);
if (!baseDir) throw new Error('usage: node bench/compare-checkouts.mjs <other checkout with a built wasm/>');
const { loadAttention: loadBase } = await import(pathToFileURL(`${baseDir}/wasm/index.js`).href);
console.log(`# this checkout vs ${baseDir}: node ${process.version}, ${cpuName()}`);

const rand = (n, seed) => {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; });
};

// the SIMD and scalar builds on one thread, and the threaded build on 2 (its pool's scheduling)
for (const [label, opts] of [['SIMD', { simd: true }], ['scalar', { simd: false }], ['threaded, 2 threads,', { threads: 2 }]]) {
  const libs = { base: await loadBase(opts), this: await loadAttention(opts) };
  if (opts.threads && (libs.base.threads !== 2 || libs.this.threads !== 2)) {
    console.log(`\n## threaded build: not run (threads ${libs.base.threads} / ${libs.this.threads}: ${libs.this.threadsReason ?? ''})`);
    continue;
  }
  const q1024 = rand(1024 * 64, 1), k1024 = rand(1024 * 64, 2), v1024 = rand(1024 * 64, 3);
  const q256 = rand(256 * 64, 4);
  const models = Object.fromEntries(Object.entries(libs).map(([k, lib]) => [k, {
    ...Object.fromEntries(['softmax', 'linear:elu+1', 'synth:dense'].map((attention) =>
      [attention, lib.createModel({ vocab: 16, dModel: 64, heads: 4, layers: 2, maxLen: 40, attention })])),
    // the positional encodings' paths: rotary (the llama block) and ALiBi's score bias
    llama: lib.createModel({ vocab: 16, dModel: 64, heads: 4, kvHeads: 2, layers: 2, maxLen: 40, block: 'llama' }),
    alibi: lib.createModel({ vocab: 16, dModel: 64, heads: 4, layers: 2, maxLen: 40, positional: 'alibi' }),
  }]));
  const layers = Object.fromEntries(Object.entries(libs).map(([k, lib]) => [k, lib.createSynthesizer({ variant: 'dense', d: 64, maxLen: 256, heads: 4 })]));
  const work = {
    'softmax streaming n=1024 d=64': (lib) => lib.softmaxAttention({ q: q1024, k: k1024, v: v1024, n: 1024, d: 64 }),
    'softmax weights n=256 d=64 causal': (lib) => lib.softmaxAttention({ q: q256, k: q256, v: q256, n: 256, d: 64, causal: true, returnWeights: true }),
    'linear elu+1 causal n=1024 d=64': (lib) => lib.linearAttention({ q: q1024, k: k1024, v: v1024, n: 1024, d: 64, causal: true }),
    'linear taylor n=1024 d=64': (lib) => lib.linearAttention({ q: q1024, k: k1024, v: v1024, n: 1024, d: 64, feature: 'taylor' }),
    'synthesizer dense n=256 forward': (lib, k) => layers[k].forward({ n: 256, x: q256, v: q256, causal: true }),
  };
  for (const attention of ['softmax', 'linear:elu+1', 'synth:dense'])
    work[`trainStep ${attention} reverse 16, batch 32`] = (lib, k) => models[k][attention].trainStep({ task: 'reverse' });
  work['trainStep llama (rope) reverse 16, batch 32'] = (lib, k) => models[k].llama.trainStep({ task: 'reverse' });
  work['trainStep softmax + alibi reverse 16, batch 32'] = (lib, k) => models[k].alibi.trainStep({ task: 'reverse' });
  // forward alone (the hook points' cost when unused: src/model/hooks.h), 40 and 8 tokens
  work['forward softmax 40 tokens'] = (lib, k) => models[k].softmax.forward(Array.from({ length: 40 }, (_, i) => 1 + (i % 15)));
  work['forward llama (rope) 8 tokens'] = (lib, k) => models[k].llama.forward([1, 2, 3, 4, 5, 6, 7, 8]);
  work['generate softmax 24 tokens'] = (lib, k) => models[k].softmax.generate([1, 2, 3], { maxTokens: 24 });
  work['generate llama (rope) 24 tokens'] = (lib, k) => models[k].llama.generate([1, 2, 3], { maxTokens: 24 });
  work['generate synth:dense 24 tokens'] = (lib, k) => models[k]['synth:dense'].generate([1, 2, 3], { maxTokens: 24 });
  console.log(`\n## ${label} build: ms per call, median of ${SAMPLES} interleaved rounds\n`);
  console.log('| workload | base | this | base / this | median of the rounds\' base / this |\n|---|---|---|---|---|');
  for (const [name, fn] of Object.entries(work)) {
    if (!name.includes(only)) continue;
    const t = interleave({ base: () => fn(libs.base, 'base'), this: () => fn(libs.this, 'this') }, { samples: SAMPLES, minMs: 40 });
    const ratios = t.base.samples.map((b, i) => b / t.this.samples[i]).sort((a, b) => a - b);
    console.log(`| ${name} | ${t.base.median.toFixed(3)} | ${t.this.median.toFixed(3)} | ${(t.base.median / t.this.median).toFixed(3)}x | ` +
      `${ratios[ratios.length >> 1].toFixed(3)}x |`);
  }
  for (const k of Object.keys(libs)) {
    for (const m of Object.values(models[k])) m.dispose();
    layers[k].dispose();
  }
}
