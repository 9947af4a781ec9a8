// presets.js: the model panel's presets, 2025's open models at tiny scale, and the KV cache a model
// keeps per token. No DOM: the page (web/views/model.js), scripts and tests import it alike.
// A row: { id, label, takes (one line: what it takes from the real model, and what it leaves out),
// link: { title, url } (the paper or the model card), config(task, { charsVocab, size }) } where
// config gives lib.createModel's options for one of the panel's tasks (lab/tasks.js's TASKS).
// Every preset is a decoder with the llama block (RMSNorm, SwiGLU, no biases) and 4 heads, so its
// attention is what differs: the real models' layer patterns and switches, at the panel's sizes.
// Facts checked against the papers and model cards linked (2026-11-27); windows are scaled down to
// the task's sequence length, since the real ones (1024, 128) are longer than every task here.
import { MAX_LEN, MODEL_SEED, SIZES, TASKS } from './tasks.js';

/** The decoder's sequence length for a task (src/model/tasks.c: source, separator, target). */
export function taskTokens({ task, length }) {
  if (task === 'recall') return 2 * length + 2; // pairs, the key, its value
  if (task === 'translate') return 7 * length + 1; // digits, separator, up to 6 characters a digit
  if (task === 'chars') return length + 1;
  return 2 * length + 1; // copy, reverse, sort
}

const HEADS = 4;

// The shape every preset shares, checked task and all: an Error names what is wrong.
function base(task, { charsVocab, size = 'tiny' } = {}) {
  const t = TASKS[task?.task];
  if (!t) {
    throw new Error(`preset: task must be one of ${Object.keys(TASKS).map((k) => `"${k}"`).join(', ')}, got ${JSON.stringify(task?.task)}`);
  }
  if (!Number.isInteger(task.length) || task.length < 1 || task.length > t.maxLength) {
    throw new Error(`preset: task length must be an integer in [1, ${t.maxLength}] for "${task.task}", got ${JSON.stringify(task.length)}`);
  }
  if (!t.symbols && !Number.isInteger(charsVocab)) {
    throw new Error(`preset: task "${task.task}" reads characters: give charsVocab (lib.charsTokenizer.vocab)`);
  }
  const z = SIZES[size];
  if (!z) throw new Error(`preset: size must be one of ${Object.keys(SIZES).map((k) => `"${k}"`).join(', ')}, got ${JSON.stringify(size)}`);
  return { vocab: t.symbols ? t.symbols + 1 : charsVocab, dModel: z.dModel, heads: HEADS, dFF: z.dFF, maxLen: MAX_LEN,
    seed: MODEL_SEED, block: 'llama' };
}

// A sliding window a fraction of the task's sequence (at least 2 keys): the real windows are a
// small part of the context, and a window as long as the sequence would make a local layer global.
const windowFor = (task, fraction) => Math.max(2, Math.floor(taskTokens(task) * fraction));

const repeat = (n, pattern) => Array.from({ length: n }, (_, l) => pattern(l));

export const PRESETS = [
  {
    id: 'llama2', label: 'Llama 2',
    takes: 'the llama block (RMSNorm, SwiGLU, rotary positions) with grouped-query attention as in the 70B '
      + '(64 query heads share 8 K/V heads; the 7B and 13B keep one per head); here 4 heads share 2.',
    link: { title: 'Touvron et al. 2023, Llama 2 (arXiv:2307.09288)', url: 'https://arxiv.org/abs/2307.09288' },
    config: (task, o) => ({ ...base(task, o), layers: 2, kvHeads: 2, positional: 'rope', attention: 'softmax' }),
  },
  {
    id: 'gemma3', label: 'Gemma 3',
    takes: 'five sliding-window layers to one global (window 1024 there; here a quarter of the task\'s sequence), '
      + 'QK-norm in every layer, grouped-query heads (4 : 2 here). Gemma 2 soft-capped its logits; Gemma 3 '
      + 'replaced that with QK-norm, so softcap is off. Its GeGLU, post-norms and 1M RoPE base on global layers are not built.',
    link: { title: 'Gemma Team 2025, Gemma 3 Technical Report (arXiv:2503.19786)', url: 'https://arxiv.org/abs/2503.19786' },
    config: (task, o) => {
      const window = windowFor(task, 1 / 4);
      return { ...base(task, o), layers: 6, kvHeads: 2, positional: 'rope',
        layerForms: repeat(6, (l) => ({ attention: 'softmax', attentionOptions: l % 6 === 5 ? { qkNorm: true } : { window, qkNorm: true } })) };
    },
  },
  {
    id: 'gpt-oss', label: 'gpt-oss',
    takes: 'layers alternating between a banded window (128 tokens there; here an eighth of the task\'s sequence) '
      + 'and full attention, a learned sink logit per head in every layer, grouped-query heads (64 : 8 there, '
      + '4 : 1 here). Its mixture of experts and YaRN are not built.',
    link: { title: 'OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card (arXiv:2508.10925)', url: 'https://arxiv.org/abs/2508.10925' },
    config: (task, o) => {
      const window = windowFor(task, 1 / 8);
      return { ...base(task, o), layers: 4, kvHeads: 1, positional: 'rope',
        layerForms: repeat(4, (l) => ({ attention: 'softmax', attentionOptions: l % 2 === 0 ? { window, learnedSinks: true } : { learnedSinks: true } })) };
    },
  },
  {
    id: 'qwen3-next', label: 'Qwen3-Next',
    takes: 'three Gated DeltaNet layers to one gated softmax layer (an output gate sigmoid(x W_g) on each head, '
      + 'QK-norm, grouped-query heads: 16 : 2 there, 4 : 1 here). Its partial RoPE, short convolutions, '
      + 'zero-centred norms and mixture of experts are not built.',
    link: { title: 'Qwen Team 2025, Qwen3-Next-80B-A3B model card', url: 'https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct' },
    config: (task, o) => ({ ...base(task, o), layers: 4, kvHeads: 1, positional: 'rope',
      layerForms: repeat(4, (l) => (l % 4 === 3 ? { attention: 'softmax', attentionOptions: { outputGate: true, qkNorm: true } }
        : { attention: 'gated-delta' })) }),
  },
  {
    id: 'kimi-linear', label: 'Kimi Linear',
    takes: 'three Kimi Delta Attention layers (a decay per key channel, its gate low-rank through the head width) '
      + 'to one MLA layer with no rotary part: the model is NoPE, the KDA layers carry positions. Its short '
      + 'convolutions, output gate and mixture of experts are not built.',
    link: { title: 'Kimi Team 2025, Kimi Linear (arXiv:2510.26692)', url: 'https://arxiv.org/abs/2510.26692' },
    config: (task, o) => {
      const c = base(task, o);
      return { ...c, layers: 4, positional: 'none',
        layerForms: repeat(4, (l) => (l % 4 === 3 ? { attention: 'mla', attentionOptions: { kvRank: c.dModel / 4, ropeDim: 0 } }
          : { attention: 'kda', attentionOptions: { gateRank: c.dModel / HEADS } })) };
    },
  },
  {
    id: 'deepseek-v3', label: 'DeepSeek-V3',
    takes: 'multi-head latent attention in every layer: keys and values from a shared latent (rank 512 of 7168 '
      + 'there, 8 of 32 here) plus a decoupled rotary key (64 wide there, 4 here), queries from a latent too '
      + '(1536 there, half the width here). Its mixture of experts and multi-token prediction are not built.',
    link: { title: 'DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437)', url: 'https://arxiv.org/abs/2412.19437' },
    config: (task, o) => {
      const c = base(task, o);
      return { ...c, layers: 2, positional: 'none',
        attention: 'mla', attentionOptions: { kvRank: c.dModel / 4, ropeDim: c.dModel / HEADS / 2, qRank: c.dModel / 2 } };
    },
  },
];

/** The preset of an id, or null for 'none' (the panel's own model). An unknown id is an Error. */
export function presetById(id) {
  if (id === 'none') return null;
  const p = PRESETS.find((x) => x.id === id);
  if (!p) throw new Error(`preset must be "none" or one of ${PRESETS.map((x) => `"${x.id}"`).join(', ')}, got ${JSON.stringify(id)}`);
  return p;
}

// ---------------------------------------------------------------------------------------------
// The KV cache per token. What a decoder keeps per sequence to generate its next token, layer by
// layer, as the design needs it (float32, 4 bytes a value):
//   softmax   2 x kvHeads x dHead per token (K and V of the K/V heads: MHA, GQA, MQA); a window
//             layer needs only its last `window` tokens, so it stops growing there
//   mla       kvRank + ropeDim per token (the latent and the one rotary key; the heads share both)
//   a linear  a state of fixed size per sequence, not per token: heads x dk x dv (the delta rule,
//   state     gates, retention; linear attention adds its normaliser, heads x dk)
// This library's own generation (src/model/generate.c) allocates maxLen rows of the K/V heads for a
// softmax layer, a ring of 2 window rows for a window layer (docs/attention-forms.md 1b: each position
// twice, so the window's rows stay consecutive), and a recurrent state with its step's scratch; the
// counts here are what the design needs, not those buffers (which model.generationBytes() counts, in
// C, for the panel's line beside these).

// kind and words of a softmax layer's heads
function headKind(H, KH) {
  if (KH === H) return 'MHA';
  if (KH === 1) return 'MQA';
  return 'GQA';
}

/**
 * One layer's cache: { form, kind, perToken, cap, fixed, words } with perToken floats per token (up
 * to cap tokens, null: no cap), fixed floats per sequence. c: a model config (model.config fills
 * the defaults: give it rather than createModel's input), form/options: the layer's.
 */
export function layerCache(c, form, options = {}) {
  const C = c.dModel, H = c.heads, KH = c.kvHeads ?? H, hd = C / H;
  if (form === 'softmax' || form === 'local' || form === 'strided') {
    const window = form === 'strided' ? null : options.window ?? null;
    return { form, kind: headKind(H, KH), perToken: 2 * KH * hd, cap: window, fixed: 0,
      words: `2 x ${KH} K/V head${KH === 1 ? '' : 's'} x ${hd}${window ? `, the last ${window} tokens` : ''}` };
  }
  if (form === 'mla') {
    const r = options.kvRank, p = options.ropeDim ?? 0;
    return { form, kind: 'MLA', perToken: r + p, cap: null, fixed: 0, words: `kvRank ${r} + ropeDim ${p}` };
  }
  if (['delta', 'gated-delta', 'kda', 'gated', 'gla', 'retention'].includes(form)) {
    return { form, kind: 'state', perToken: 0, cap: null, fixed: H * hd * hd, words: `state ${H} heads x ${hd} x ${hd}, per sequence` };
  }
  if (form.startsWith('linear:')) {
    const D = form === 'linear:taylor' ? hd + 1 : hd;
    return { form, kind: 'state', perToken: 0, cap: null, fixed: H * (D * hd + D),
      words: `state ${H} heads x (${D} x ${hd} + ${D}), per sequence` };
  }
  throw new Error(`cache: attention "${form}" is not counted here (softmax, local, strided, mla, the delta, gated and linear forms are)`);
}

/**
 * The whole model's cache: { layers: [layerCache + { layer }], perToken (floats a new token adds
 * while every window is still filling), fixed (floats per sequence), floats(tokens) (the total
 * for a sequence of that many tokens), bytes(tokens) }. c: model.config (a decoder).
 */
export function modelCache(c) {
  const forms = c.layerForms ?? Array.from({ length: c.layers }, () => ({ attention: c.attention, attentionOptions: c.attentionOptions }));
  const layers = forms.map((f, layer) => ({ layer, ...layerCache(c, f.attention, f.attentionOptions ?? {}) }));
  const perToken = layers.reduce((s, l) => s + l.perToken, 0);
  const fixed = layers.reduce((s, l) => s + l.fixed, 0);
  const floats = (tokens) => layers.reduce((s, l) => s + l.perToken * Math.min(tokens, l.cap ?? tokens) + l.fixed, 0);
  return { layers, perToken, fixed, floats, bytes: (tokens) => 4 * floats(tokens) };
}

/** The panel's cache line for a model config: per token, layer by layer, and the total at maxLen. */
export function cacheLine(c) {
  const m = modelCache(c);
  const windows = m.layers.filter((l) => l.cap !== null).length;
  const kinds = [...new Set(m.layers.map((l) => (l.kind === 'state' ? 'a linear state' : l.kind)))].join(' + ')
    + (windows ? `, ${windows} of ${m.layers.length} layers windowed` : '');
  const groups = [];
  for (const l of m.layers) { // consecutive layers alike as one group: "layers 1-5: ..."
    const text = `${l.form} ${l.words}`;
    const last = groups[groups.length - 1];
    if (last && last.text === text) last.to = l.layer;
    else groups.push({ from: l.layer, to: l.layer, text });
  }
  const byLayer = groups.map((g) => `${g.from === g.to ? `layer ${g.from + 1}` : `layers ${g.from + 1}-${g.to + 1}`}: ${g.text}`).join('; ');
  const T = c.maxLen;
  return `KV cache (${kinds}): ${m.perToken} floats = ${4 * m.perToken} bytes per token`
    + `${windows ? ' (a window layer\'s share only until it holds its window)' : ''}`
    + `${m.fixed ? ` + a fixed ${m.fixed} floats = ${4 * m.fixed} bytes per sequence` : ''} (${byLayer}). `
    + `At maxLen ${T}: ${m.floats(T)} floats = ${m.bytes(T).toLocaleString('en')} bytes.`;
}
