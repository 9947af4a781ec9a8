// huggingface.d.ts: Hugging Face checkpoints (wasm/huggingface.js, docs/huggingface.md).
import type { Model, WeightFormat } from './model.js';

export interface HuggingFaceModel extends Model {
  /** tokenizer.json read by lib.loadTokenizer, or null when none was given */
  readonly tokenizer: { encode(text: string, opts?: object): Int32Array; decode(ids: ArrayLike<number>, opts?: object): string } | null;
  /** the architecture read and config.json as given */
  /** notes: what the load adapted, one line each (a tokenizer with fewer ids than the padded vocabulary: model.sampleVocab) */
  readonly huggingFace: { readonly architecture: string; readonly config: Record<string, unknown>; readonly notes: readonly string[] };
}

export interface HuggingFaceApi {
  /**
   * A Hugging Face checkpoint as a model of this library: LlamaForCausalLM (Llama 2/3/3.2, rope
   * scaling "llama3", TinyLlama, SmolLM/SmolLM2), MistralForCausalLM (sliding_window),
   * Qwen2ForCausalLM, Qwen3ForCausalLM and GPT2LMHeadModel, in F32, F16 or BF16, one file or
   * shards (any order). config: config.json's text or object; weights: model.safetensors' bytes
   * or every shard's; tokenizer: tokenizer.json's text (becomes model.tokenizer). maxLen: the
   * positions kept (default the model's, at most 2048; GPT-2's 1024). training (default false).
   * Everything is checked before anything is allocated; the weights are copied into wasm memory
   * once, tensor by tensor. quantize: the decoder's matrices come out in 'q8_0' or 'q4_0' (as
   * model.quantize makes them, bit for bit), each quantized as it is read, so the float32 model is
   * never held whole; groupSize as model.quantize takes it (q8_0: a multiple of 16 dividing dModel,
   * dFF and heads x headDim, default 64 halved until it does; q4_0: 32). Not with training: true.
   * The one object holds every option: a second argument is an Error, as is an unknown key. A file
   * that lies is an Error naming the tensor or field: safetensors offsets that do not tile the data,
   * a key twice, config booleans that are not booleans, tie_word_embeddings against the tensors,
   * two architectures or one against model_type, a quantization_config, an index or config file
   * given as weights, a size past its bound, a NaN or Infinity among the weights. A Node Buffer
   * (pooled, at any offset) reads as the same bytes in a Uint8Array do.
   */
  loadHuggingFace(args: {
    config: string | object | Uint8Array;
    weights: Uint8Array | ArrayBuffer | (Uint8Array | ArrayBuffer)[];
    tokenizer?: string | Uint8Array;
    /** run a tokenizer.json Regex this library has no linear-time scanner for, with a step bound (lib.loadTokenizer's option) */
    trustPatterns?: boolean;
    maxLen?: number;
    training?: boolean;
    quantize?: WeightFormat;
    groupSize?: number;
    /** 'fp32' (the default) or 'bf16': the decoder's matrices (q, k, v, o, the FFN's, the classifier; a
     *  tied classifier as a BF16 copy of the float32 embedding) kept in 16 bits, widened in registers by
     *  the kernels, with logits bit-identical to the 'fp32' load of a BF16 file (an F32 or F16 file is
     *  rounded to nearest even). Not with training or quantize; the model refuses what needs float32
     *  matrices (training, attribution, composition); saveHuggingFace writes them back. */
    dtype?: 'fp32' | 'bf16';
  }): HuggingFaceModel;
}
