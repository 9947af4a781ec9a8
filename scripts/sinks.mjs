// sinks.mjs: StreamingLLM's claim (Xiao et al. 2023, arXiv:2309.17453) measured on a model that has
// read real text: a character model with the llama-style block and rotary positions, trained on
// Debian's fortunes (web/models/fortunes-llama.safetensors, data/README.md), reads a stream of
// held-out fortunes many times longer than its window. Three ways to read past the window:
//   window          a rolling KV cache of the last `window` tokens
//   window + sinks  the same, keeping the first `sinks` tokens for ever (attention sinks)
//   recompute       a fresh forward over the last `window` tokens for every position (the costly
//                   reference: window times the work)
// It prints bits per character by position, and the time each way took.
//   node scripts/sinks.mjs [--model FILE] [--chars 8192] [--window 64] [--sinks 4] [--text FILE]
// --text reads that file instead of the held-out fortunes (web/models/stream-text.txt: the page's
// default text, prose of the project's corpus with no document breaks).
import { readFileSync } from 'node:fs';
import { loadAttention } from '../wasm/index.js';
import { ensureFortunes, heldOutText } from './fortunes.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
// two models of the same shape: trained on windows that start at a document's start after a token 0
// (as language models read whole documents from a beginning-of-sequence mark), and on windows cut
// anywhere in the text
const MODELS = args.model ? [[args.model, args.bos !== undefined]] : [
  [new URL('../web/models/fortunes-bos.safetensors', import.meta.url).pathname, true],
  [new URL('../web/models/fortunes-llama.safetensors', import.meta.url).pathname, false],
];
const N = Number(args.chars ?? 8192), W = Number(args.window ?? 64), S = Number(args.sinks ?? 4);
const why = ensureFortunes();
if (why) {
  console.error(`sinks.mjs: ${why}`);
  process.exit(1);
}
const lib = await loadAttention();
const cpu = (await import('../lab/cpu.js')).cpuName();
for (const [file, bos] of MODELS) {
const model = lib.loadModel(readFileSync(file), { training: false });
const text = (args.text ? readFileSync(args.text, 'utf8') : heldOutText()).slice(0, N);
const tokens = Int32Array.from([...(bos ? [0] : []), ...lib.charsTokenizer.encode(text)]);
console.log(`\n# ${file.split('/').pop()}${bos ? ' (trained from document starts after a token 0; the stream starts with one)' : ' (trained on windows cut anywhere)'}: ${JSON.stringify(model.config)}`);
console.log(`# ${tokens.length} tokens of ${args.text ? args.text : 'held-out fortunes (every 10th document, never trained on)'}; window ${W} ` +
  `(the model was trained on ${model.config.maxLen}), sinks ${S}; ${cpu}`);
const first = (await import('../lab/heads.js')).scoreHeads(model.forward(tokens.subarray(0, model.config.maxLen)).attention,
  [...tokens.subarray(0, model.config.maxLen)]).map((h) => h.scores['first token']);
console.log(`# weight on the first position, per head (the first ${model.config.maxLen} tokens): mean ${(first.reduce((a, b) => a + b, 0) / first.length).toFixed(3)}, largest ${Math.max(...first).toFixed(3)}`);
const modes = [['window', { window: W }], [`window + ${S} sinks`, { window: W, sinks: S }], ['recompute', { window: W, recompute: true }]];
const results = modes.map(([name, opts]) => {
  const t0 = performance.now();
  const losses = model.streamLosses(tokens, opts);
  return { name, losses, ms: performance.now() - t0 };
});
const bits = (xs, a, b) => {
  let s = 0;
  for (let i = a; i < b; i++) s += xs[i];
  return s / (b - a) / Math.LN2;
};
const edges = [0, W];
for (let e = 2 * W; e < tokens.length - 1; e *= 2) edges.push(e);
edges.push(tokens.length - 1);
console.log(`\n| positions | ${results.map((r) => r.name).join(' | ')} |`);
console.log(`|---|${results.map(() => '---').join('|')}|`);
for (let i = 0; i + 1 < edges.length; i++)
  console.log(`| ${edges[i]}-${edges[i + 1] - 1} | ${results.map((r) => bits(r.losses, edges[i], edges[i + 1]).toFixed(3)).join(' | ')} |`);
const past = results.map((r) => bits(r.losses, W, tokens.length - 1));
console.log(`| all past the window (${W}-${tokens.length - 2}) | ${past.map((x) => `**${x.toFixed(3)}**`).join(' | ')} |`);
console.log(`| time | ${results.map((r) => `${(r.ms / 1000).toFixed(1)} s`).join(' | ')} |`);
console.log(`\nbits per character past the window: window ${past[0].toFixed(3)}, window + ${S} sinks ${past[1].toFixed(3)}, ` +
  `recompute ${past[2].toFixed(3)}`);
model.dispose();
}
