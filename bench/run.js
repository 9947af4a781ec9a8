// bench/run.js: `npm run bench`. Runs every bench/*.bench.js module in one process, in
// name order (or only those named on the command line: `npm run bench -- softmax linear`).
// Each module exports `default async function run(ctx)`; ctx holds both builds, loaded once,
// and the shared timing helpers (bench/timing.js). Everything printed is measured in this run.
import { readdir } from 'node:fs/promises';
import { loadAttention } from '../wasm/index.js';
import * as timing from './timing.js';

const only = process.argv.slice(2);
const dir = new URL('./', import.meta.url);
const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.js')).sort()
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)));

const simd = await loadAttention({ simd: true });
const scalar = await loadAttention({ simd: false });
console.log(`# attention-wasm bench: node ${process.version}, ${timing.cpuName()}, ${new Date().toISOString()}`);
for (const f of files) {
  console.log(`\n## ${f.replace('.bench.js', '')}`);
  const mod = await import(new URL(f, dir));
  await mod.default({ simd, scalar, ...timing });
}
