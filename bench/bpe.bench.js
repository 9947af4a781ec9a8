// bpe.bench.js: the byte-level BPE (src/model/bpe.c, issue 34): training at vocab 1024 on the
// fortunes' training documents (2.3 MB; data/chars.txt repeated to that size when Debian's fortunes
// is not installed), then encoding 4K..400K characters of that text. Linear encoding shows as a
// 400K / 200K ratio near 2. `node bench/run.js bpe`.
import { existsSync, readFileSync } from 'node:fs';
import { FORTUNES, fortunesDocuments } from '../scripts/fortunes.mjs';

export default async function run({ simd, median, table, cpuName }) {
  let text, source;
  if (existsSync(`${FORTUNES}/fortunes`)) {
    text = fortunesDocuments().train.join('\n\n'), source = 'the fortunes\' training documents';
  } else {
    const chars = readFileSync(new URL('../data/chars.txt', import.meta.url), 'utf8');
    text = '';
    while (text.length < 2.3e6) text += chars;
    source = 'data/chars.txt repeated (Debian\'s fortunes is not installed)';
  }
  const bytes = new TextEncoder().encode(text).length;
  const trainRows = [];
  let tok, tok1024;
  for (const vocabSize of [512, 1024, 4096]) {
    const wall = [], cpu = [];
    for (let r = 0; r < 3; r++) {
      const c0 = process.cpuUsage(), t0 = performance.now();
      tok = simd.trainTokenizer(text, { vocabSize });
      wall.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    trainRows.push([String(vocabSize), String(tok.vocabSize), (median(wall) / 1000).toFixed(2), (median(cpu) / 1000).toFixed(2)]);
    if (vocabSize === 1024) tok1024 = tok;
  }
  console.log(`# ${cpuName()}; training on ${source}, ${(bytes / 1e6).toFixed(2)} MB; median of 3 runs`);
  table(['vocabSize', 'pieces', 'train s (wall)', 's (process CPU)'], trainRows);
  tok1024.encode(text.slice(0, 50000)); // warm up
  const rows = [], ms = {}, cpuMs = {};
  for (const n of [4000, 16000, 32000, 200000, 400000]) {
    const s = text.slice(0, n), wall = [], cpu = [];
    let tokens = 0;
    for (let r = 0; r < 5; r++) {
      const c0 = process.cpuUsage(), t0 = performance.now();
      tokens = tok1024.encode(s).length;
      wall.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    ms[n] = median(wall), cpuMs[n] = median(cpu);
    rows.push([`${n / 1000}K`, String(tokens), ms[n].toFixed(1), cpuMs[n].toFixed(1)]);
  }
  console.log(`# encode with the vocab-1024 tokenizer; median of 5 runs`);
  table(['characters', 'tokens', 'encode ms (wall)', 'ms (process CPU)'], rows);
  console.log(`ratio 400K / 200K: ${(ms[400000] / ms[200000]).toFixed(2)} wall, ${(cpuMs[400000] / cpuMs[200000]).toFixed(2)} ` +
    'process CPU (linear: 2; on a shared machine the CPU time is the steadier)');
}
