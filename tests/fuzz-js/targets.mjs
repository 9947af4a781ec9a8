// targets.mjs: the JS fuzzer's targets. Each has its inputs' parts (the file extensions a
// reproducer is saved with), seeds (files the library writes itself, made here; corpus/<target>/
// holds them written out), a mutator, and run(lib, parts): read the input with the library's
// reader, and when the reader accepts it, check what it built (the invariants below). run
// throws a Finding for each violation; a refusal (a plain Error from `fail`, message prefixed
// "attention-wasm: ") is the expected outcome for most inputs.
import { mutateBytes, mutateJsonBytes, mutateSafetensors } from './mutate.mjs';

const enc = new TextEncoder(), dec = new TextDecoder();

/** A property violation: kind (short, stable: the reproducer's name) and what was seen. */
export class Finding extends Error {
  constructor(kind, detail) {
    super(`${kind}: ${detail}`);
    this.kind = kind;
  }
}

// The texts every accepted tokenizer encodes: ASCII, multi-byte, lone surrogates, specials' names,
// a long word (the merger's heap path) and a run a backtracking pattern chokes on.
const PROBES = ['hello world', '', ' ', 'The quick brown fox, 12345678 times!\n\tEnd.', 'héllo 世界 💥 naïve',
  '<s> </s> <unk> <|endoftext|> <|begin_of_text|>', '\ud800x\udfff', '  many   spaces  ', 'ab'.repeat(300),
  `${'a'.repeat(40)}!`, `${' '.repeat(40)}x`, '\u0000\u00ff\u0100'];

/** lib's refusal is a plain Error from fail(); anything else thrown while reading is a finding. */
export function checkRefusal(e, stage) {
  if (!(e instanceof Error)) throw new Finding(`non-Error throw in ${stage}`, String(e));
  if (e instanceof Finding) throw e;
  const at = wasmFrame(e);
  if (e.constructor !== Error) throw new Finding(`${e.name} in ${stage}${at ? ` at ${at}` : ''}`, e.message);
  if (!e.message.startsWith('attention-wasm: ')) throw new Finding(`unprefixed Error in ${stage}${at ? ` at ${at}` : ''}`, e.message);
}

/** The first stack frame inside wasm/*.js, as "file.js:line": where a leak comes from. */
export function wasmFrame(e) {
  const m = /wasm\/([\w.-]+\.js):(\d+)/.exec(e?.stack ?? '');
  return m ? `${m[1]}:${m[2]}` : null;
}

// runs fn; a refusal returns null, any other throw is a Finding
function attempt(stage, fn) {
  try {
    return fn();
  } catch (e) {
    checkRefusal(e, stage);
    return null;
  }
}

// a check on what the reader built; a throw here (even a plain Error) is a finding
function must(stage, fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof Finding) throw e;
    throw new Finding(`accepted, then ${stage} throws`, `${e?.name}: ${e?.message}${wasmFrame(e) ? ` (${wasmFrame(e)})` : ''}`);
  }
}

function finiteAll(what, a) {
  for (let i = 0; i < a.length; i++)
    if (!Number.isFinite(a[i])) throw new Finding(`accepted, then non-finite ${what}`, `${what}[${i}] = ${a[i]} of ${a.length}`);
}

function checkIds(what, ids, size) {
  for (let i = 0; i < ids.length; i++)
    if (!Number.isInteger(ids[i]) || ids[i] < 0 || ids[i] >= size)
      throw new Finding(`accepted, then ${what} gives an id outside [0, vocabSize)`, `${what}: ids[${i}] = ${ids[i]}, vocabSize ${size}`);
}

/** sniffModelFile on any bytes: never a throw, always one of its formats or null with a label. */
function checkSniff(lib, u8, ctx) {
  ctx.stage = 'sniffModelFile';
  let s;
  try {
    s = lib.sniffModelFile(u8);
  } catch (e) {
    throw new Finding(`sniffModelFile throws`, `${e?.name}: ${e?.message}${wasmFrame(e) ? ` (${wasmFrame(e)})` : ''}`);
  }
  const ok = s && typeof s.label === 'string' &&
    (s.format === null ? Array.isArray(s.tried) : ['llama2c-export', 'safetensors', 'hf-index', 'hf-config', 'hf-tokenizer', 'llama2c', 'llama2c-tokenizer'].includes(s.format));
  if (!ok) throw new Finding('sniffModelFile returns a malformed result', JSON.stringify(s));
}

// a model built from an accepted file: a short forward pass gives finite logits of the right size
function checkModel(model, stage) {
  const { vocab, maxLen } = model.config;
  const ids = Array.from({ length: Math.min(4, maxLen) }, (_, i) => (i * 7 + 1) % vocab);
  let logits;
  try {
    logits = model.forward(ids).logits;
  } catch (e) {
    // forward refuses non-finite values with a clear Error. Finite weights so large that the
    // activations overflow are no reader's to refuse (it cannot run the model to find out); weights
    // that hold NaN or Infinity are: save refuses them, so a load should (save names them when
    // forward's message does not; a quantized model's save refuses for that alone)
    if (e?.constructor === Error && /^attention-wasm: forward: .*(not finite|NaN or Infinity)/.test(e.message)) {
      let held = /parameters hold NaN or Infinity/.test(e.message) ? e.message : null;
      if (!held) try { model.save(); } catch (e2) { if (/NaN or Infinity/.test(e2?.message)) held = e2.message; }
      if (held) throw new Finding('accepted weights that hold NaN or Infinity (refused only at forward)', `${stage}: ${held}`);
      return null;
    }
    return must(`${stage}: forward`, () => { throw e; });
  }
  if (logits.length !== ids.length * vocab) throw new Finding(`accepted, then forward gives the wrong size`, `${logits.length} for ${ids.length} x ${vocab}`);
  finiteAll(`${stage} logits`, logits);
  return logits;
}

// ---- seeds the library writes -------------------------------------------------------------------

const SMALL = { vocab: 24, dModel: 8, heads: 2, layers: 1, maxLen: 8 };

function llamaModelBytes(lib, vocab, opts) {
  const m = lib.createModel({ ...SMALL, dModel: 16, vocab, block: 'llama', tieEmbeddings: !opts?.untied });
  try { return m.saveLlama2c(opts?.version ? { version: opts.version, groupSize: opts.groupSize } : {}); } finally { m.dispose(); }
}

/** The tokenizer trained for seeds: 300 pieces (259 + 41 merges), deterministic. */
export function seedTokenizer(lib) {
  return lib.trainTokenizer('the cat sat on the mat; the dog ate the hat. ' +
    'attention is all you need, and then some more text for merges: 0123456789', { vocabSize: 300 });
}

// ---- the targets ----------------------------------------------------------------------------------

export const TARGETS = {
  /** loadTokenizer (tokenizer.json: own layout in bpe.js, Hugging Face's in hf-tokenizer.js; tokenizer.bin) and loadLlama2c's tokenizer.bin reader. */
  tokenizer: {
    parts: ['json|bin'],
    seeds(lib) {
      const t = seedTokenizer(lib);
      const ownJson = enc.encode(JSON.stringify(t.toJSON()));
      // the same tokenizer in Hugging Face's families' shape: added tokens, a Split (GPT-2's pattern) and a template
      const hf = t.toJSON();
      hf.added_tokens = [{ id: 0, content: '<unk>', special: true }, { id: 1, content: '<s>', special: true }, { id: 2, content: '</s>', special: true }];
      hf.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] };
      hf.post_processor = { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }], pair: [], special_tokens: {} };
      hf.normalizer = { type: 'NFC' };
      // and in SentencePiece's shape (Llama 2's): Metaspace, an unk_token, no byte fallback
      const sp = t.toJSON();
      sp.pre_tokenizer = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true };
      sp.decoder = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true };
      sp.model.unk_token = '<unk>';
      return [
        { name: 'own-300', parts: { json: ownJson } },
        { name: 'hf-300-metaspace-unk', parts: { json: enc.encode(JSON.stringify(sp)) } },
        { name: 'own-300-llama2c', parts: { bin: t.toLlama2c() } },
        { name: 'hf-300-split-template', parts: { json: enc.encode(JSON.stringify(hf)) } },
      ];
    },
    mutate(r, parts, other) {
      if (parts.bin) return { bin: mutateBytes(r, parts.bin, [0, 4, 8, 12, 16, 20, 24]) };
      return { json: mutateJsonBytes(r, parts.json, other?.json && (() => { try { return JSON.parse(dec.decode(other.json)); } catch { return undefined; } })()) };
    },
    setup(lib) {
      // loadLlama2c's tokenizer reader needs a model of the tokenizer's vocab_size: the seeds' 300
      return { model300: llamaModelBytes(lib, 300) };
    },
    run(lib, parts, ctx) {
      const u8 = parts.json ?? parts.bin;
      checkSniff(lib, u8, ctx);
      ctx.stage = 'loadTokenizer';
      const t = attempt('loadTokenizer', () => lib.loadTokenizer(u8));
      if (t) {
        ctx.accepted++;
        const size = t.vocabSize;
        if (!Number.isInteger(size) || size < 1) throw new Finding('accepted, then vocabSize is not a positive integer', String(size));
        for (const text of PROBES) {
          ctx.stage = 'loadTokenizer: encode';
          const ids = must(`encode(${JSON.stringify(text.slice(0, 20))})`, () => t.encode(text));
          checkIds('encode', ids, size);
          ctx.stage = 'loadTokenizer: decode';
          const back = must('decode(encode(text))', () => t.decode(ids));
          if (typeof back !== 'string') throw new Finding('accepted, then decode returns no string', typeof back);
          if (t.decodeBytes) { // own layout: decodeBytes is encode's exact inverse on bytes
            const bytes = enc.encode(text), got = must('decodeBytes(encode(bytes))', () => t.decodeBytes(t.encode(bytes)));
            if (got.length !== bytes.length || got.some((b, i) => b !== bytes[i]))
              throw new Finding('accepted, then decodeBytes(encode(bytes)) differs from the bytes', JSON.stringify(text.slice(0, 30)));
          }
        }
      }
      if (parts.bin) { // loadLlama2c's own tokenizer.bin reader (llama2c.js), with a 300-token model
        ctx.stage = 'loadLlama2c { tokenizer }';
        const model = attempt('loadLlama2c { tokenizer }', () => lib.loadLlama2c(ctx.setup.model300, { tokenizer: u8 }));
        if (model) {
          ctx.accepted++;
          try {
            for (const text of PROBES) {
              const ids = must('llama2c tokenizer.encode', () => model.tokenizer.encode(text));
              checkIds('llama2c tokenizer.encode', ids, model.config.vocab);
              must('llama2c tokenizer.decode(encode(text))', () => model.tokenizer.decode(ids));
            }
          } finally { model.dispose(); }
        }
      }
    },
    good(lib, ctx) { // a known-good load and encode, the same every time
      return Array.from(lib.loadTokenizer(ctx.seeds[0].parts.json).encode('the cat sat on the mat'));
    },
  },

  /** loadHuggingFace: the safetensors header reader (safetensors.js) and config.json (huggingface.js). */
  huggingface: {
    parts: ['config.json', 'safetensors'],
    seeds(lib) {
      const cases = [
        ['llama', { ...SMALL, block: 'llama', kvHeads: 1 }, 'F32'],
        ['qwen2', { ...SMALL, block: 'llama', qkvBias: true }, 'BF16'],
        ['qwen3', { ...SMALL, block: 'llama', tieEmbeddings: true, attentionOptions: { qkNorm: true } }, 'F32'],
        ['mistral', { ...SMALL, block: 'llama', attentionOptions: { window: 4 } }, 'F32'],
        ['gpt2', { ...SMALL, ffn: 'gelu', positional: 'learned', tieEmbeddings: true }, 'F32'],
      ];
      return cases.map(([name, cfg, dtype]) => {
        const m = lib.createModel(cfg);
        try {
          const { config, weights } = m.saveHuggingFace({ dtype });
          return { name: `${name}-${dtype.toLowerCase()}`, parts: { 'config.json': enc.encode(JSON.stringify(config)), safetensors: weights } };
        } finally { m.dispose(); }
      });
    },
    mutate(r, parts) {
      if (r.chance(0.35)) return { ...parts, 'config.json': mutateJsonBytes(r, parts['config.json']) };
      return { ...parts, safetensors: mutateSafetensors(r, parts.safetensors) };
    },
    run(lib, parts, ctx) {
      checkSniff(lib, parts.safetensors, ctx);
      checkSniff(lib, parts['config.json'], ctx);
      ctx.stage = 'loadHuggingFace';
      const model = attempt('loadHuggingFace', () => lib.loadHuggingFace({ config: parts['config.json'], weights: parts.safetensors }));
      if (!model) return;
      ctx.accepted++;
      ctx.stage = 'loadHuggingFace: forward';
      try { checkModel(model, 'loadHuggingFace'); } finally { model.dispose(); }
    },
    good(lib, ctx) {
      const s = ctx.seeds[0].parts, m = lib.loadHuggingFace({ config: s['config.json'], weights: s.safetensors });
      try { return Array.from(m.forward([1, 2, 3]).logits); } finally { m.dispose(); }
    },
  },

  /** sniffModelFile and loadLlama2c's model readers, versions 0 (legacy float32), 1 (refused) and 2 (int8). */
  llama2c: {
    parts: ['bin'],
    seeds(lib) {
      const v2 = llamaModelBytes(lib, 24, { version: 2, groupSize: 16 });
      const v1 = v2.slice();
      new DataView(v1.buffer).setInt32(4, 1, true); // version 1's header: refused, said so
      return [
        { name: 'v0-tied', parts: { bin: llamaModelBytes(lib, 24) } },
        { name: 'v0-untied', parts: { bin: llamaModelBytes(lib, 24, { untied: true }) } },
        { name: 'v2-group16', parts: { bin: v2 } },
        { name: 'v1-header', parts: { bin: v1 } },
      ];
    },
    mutate(r, parts) {
      // the legacy header's 7 int32 (0..24); version 2's magic, version, sizes, shared byte (36), group_size (37)
      return { bin: mutateBytes(r, parts.bin, [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 37]) };
    },
    run(lib, parts, ctx) {
      checkSniff(lib, parts.bin, ctx);
      ctx.stage = 'loadLlama2c';
      const model = attempt('loadLlama2c', () => lib.loadLlama2c(parts.bin));
      if (!model) return;
      ctx.accepted++;
      ctx.stage = 'loadLlama2c: forward';
      try { checkModel(model, 'loadLlama2c'); } finally { model.dispose(); }
    },
    good(lib, ctx) {
      const m = lib.loadLlama2c(ctx.seeds[0].parts.bin);
      try { return Array.from(m.forward([1, 2, 3]).logits); } finally { m.dispose(); }
    },
  },

  /** loadSAE (sae.js over safetensors.js's readSafetensors). */
  sae: {
    parts: ['safetensors'],
    seeds(lib) {
      const out = [];
      for (const [name, o] of [['d8-s16-k4', { dIn: 8, dSae: 16, k: 4, seed: 3 }], ['d4-s8-k1-hook', { dIn: 4, dSae: 8, k: 1, seed: 5 }]]) {
        const sae = lib.createSAE(o);
        try {
          if (name.endsWith('hook')) sae.hook = 'blocks.0.out';
          out.push({ name, parts: { safetensors: sae.save() } });
        } finally { sae.free(); }
      }
      return out;
    },
    mutate(r, parts) { return { safetensors: mutateSafetensors(r, parts.safetensors) }; },
    run(lib, parts, ctx) {
      checkSniff(lib, parts.safetensors, ctx);
      ctx.stage = 'loadSAE';
      const sae = attempt('loadSAE', () => lib.loadSAE(parts.safetensors));
      if (!sae) return;
      ctx.accepted++;
      ctx.stage = 'loadSAE: encode';
      try {
        const { dIn, dSae } = sae.config;
        if (dIn * 2 > 1 << 24) return; // a huge (but consistent) file: the checks below would only allocate
        const acts = Float32Array.from({ length: 2 * dIn }, (_, i) => Math.sin(i + 1));
        // as for a model's forward: finite weights so large that the features overflow float32 are
        // no reader's to refuse, and encode and decode refuse them with a clear Error, never Infinity
        const overflow = (e) => e?.constructor === Error && /^attention-wasm: (encode|decode): .*overflows? float32/.test(e.message);
        const code = must('sae.encode', () => { try { return sae.encode(acts); } catch (e) { if (overflow(e)) return null; throw e; } });
        if (code) {
          checkIds('sae.encode indices', code.indices, dSae);
          finiteAll('sae.encode values', code.values);
        }
        const z = new Float32Array(2 * dSae).fill(0.5);
        const out = must('sae.decode', () => { try { return sae.decode(z); } catch (e) { if (overflow(e)) return null; throw e; } });
        if (out) finiteAll('sae.decode', out);
      } finally { sae.free(); }
    },
    good(lib, ctx) {
      const sae = lib.loadSAE(ctx.seeds[0].parts.safetensors);
      try { return Array.from(sae.decode(new Float32Array(sae.config.dSae).fill(1))); } finally { sae.free(); }
    },
  },
};
