// tokenizer.bench.js: llama2.c's BPE encode (wasm/llama2c.js, issue 32) over 4K..400K characters
// of data/chars.txt repeated, with a vocabulary of its 1500 most frequent 2..6-character
// fragments scored by rank, as sentencepiece's are. O(n log n) shows as a 400K/200K ratio near 2
// (the rescanning encode it replaced: 0.46 s at 4K, 17.7 s at 32K). `node bench/run.js tokenizer`.
import { readFileSync } from 'node:fs';

export default async function run({ simd, median, table, cpuName }) {
  const text = readFileSync(new URL('../data/chars.txt', import.meta.url), 'utf8');
  const counts = new Map();
  for (let n = 2; n <= 6; n++)
    for (let i = 0; i + n <= text.length; i++) { const s = text.slice(i, i + n); counts.set(s, (counts.get(s) ?? 0) + 1); }
  const frags = [...counts].filter(([s]) => !s.includes('\n')).sort((a, b) => b[1] - a[1]).slice(0, 1500).map(([s]) => s);
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const pieces = ['<unk>', '\n<s>\n', '\n</s>\n', ...bytes, ...[...new Set(text)].sort(), ...frags];
  const scores = pieces.map((p, i) => (i < 259 ? 0 : -i));
  const model = simd.createModel({ vocab: pieces.length, dModel: 8, heads: 2, layers: 1, maxLen: 8, block: 'llama' });
  const m = simd.loadLlama2c(model.saveLlama2c(), { tokenizer: simd.writeLlama2cTokenizer(pieces, scores) });
  model.dispose();
  let long = '';
  while (long.length < 400000) long += text;
  m.tokenizer.encode(long.slice(0, 50000)); // warm up
  const rows = [], ms = {}, cpuMs = {};
  for (const n of [4000, 16000, 32000, 200000, 400000]) {
    const s = long.slice(0, n), wall = [], cpu = [];
    let tokens = 0;
    for (let r = 0; r < 5; r++) {
      const c0 = process.cpuUsage(), t0 = performance.now();
      tokens = m.tokenizer.encode(s).length;
      wall.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    ms[n] = median(wall), cpuMs[n] = median(cpu);
    rows.push([`${n / 1000}K`, String(tokens), ms[n].toFixed(1), cpuMs[n].toFixed(1)]);
  }
  m.dispose();
  console.log(`# ${cpuName()}; vocab ${pieces.length}; median of 5 runs`);
  table(['characters', 'tokens', 'encode ms (wall)', 'ms (process CPU)'], rows);
  console.log(`ratio 400K / 200K: ${(ms[400000] / ms[200000]).toFixed(2)} wall, ${(cpuMs[400000] / cpuMs[200000]).toFixed(2)} ` +
    'process CPU (O(n log n): about 2.1; quadratic: 4; on a shared machine the CPU time is the steadier)');
}
