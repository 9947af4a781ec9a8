// bench/run.js: `npm run bench`. Runs every bench/*.bench.js module in one process, in
// name order (or only those named on the command line: `npm run bench -- softmax linear`).
// Each module exports `default async function run(ctx)`; ctx holds the builds, loaded once,
// and the shared timing helpers (bench/timing.js). Everything printed is measured in this run.
// Node 20 validates relaxed SIMD only behind a flag: without it, this script runs itself again
// with --experimental-wasm-relaxed-simd, so the relaxed build is measured beside the others.
import { spawnSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { loadAttention, relaxedSupported } from '../wasm/index.js';
import * as timing from './timing.js';

const FLAG = '--experimental-wasm-relaxed-simd';
if (!relaxedSupported() && !process.execArgv.includes(FLAG) && !process.env.BENCH_NO_RELAXED) {
  const r = spawnSync(process.execPath, [...process.execArgv, FLAG, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const only = process.argv.slice(2);
const dir = new URL('./', import.meta.url);
const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.js')).sort()
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)));

const simd = await loadAttention({ simd: true, relaxed: false });
const scalar = await loadAttention({ simd: false });
const relaxed = relaxedSupported() ? await loadAttention({ relaxed: true }) : null;
console.log(`# attention-wasm bench: node ${process.version}${process.execArgv.includes(FLAG) ? ` ${FLAG}` : ''}, ` +
  `${timing.cpuName()}, ${new Date().toISOString()}`);
console.log(`# builds: SIMD128, scalar${relaxed ? ', relaxed SIMD (fused multiply-add)' : ' (relaxed SIMD: not validated by this engine)'}`);
for (const f of files) {
  console.log(`\n## ${f.replace('.bench.js', '')}`);
  const mod = await import(new URL(f, dir));
  await mod.default({ simd, scalar, relaxed, ...timing });
}
