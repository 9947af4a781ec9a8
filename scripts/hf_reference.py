#!/usr/bin/env python3
"""hf_reference.py: an independent float64 reference for Hugging Face causal LMs (issue 43).

transformers cannot be installed here, so this file re-derives, from transformers' modeling code,
the forward of the five architectures lib.loadHuggingFace reads, using only torch (Debian's 1.13)
in float64. It also writes small checkpoints with seeded random weights in the real Hugging Face
tensor names and layouts, so the library's loader and this reference read the same bytes.
safetensors is read and written by hand (no safetensors package): an 8-byte little-endian u64
header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
{...}} padded with spaces to a multiple of 8, then the raw little-endian tensor bytes (offsets are
relative to the end of the header).

  /usr/bin/python3 scripts/hf_reference.py make --arch {llama,mistral,qwen2,qwen3,gpt2}
        --dtype {F32,BF16,F16} --seed N --out DIR [--head-dim D] [--tie 0|1]
        [--rope-scaling llama3] [--new-style-config] [--sharded] [--layers L] [--bare-names]
      writes DIR/config.json and DIR/model.safetensors (with --sharded:
      model-00001-of-00002.safetensors, model-00002-of-00002.safetensors and
      model.safetensors.index.json with its weight_map).
      --layers L overrides the default 2 layers; --bare-names (gpt2 only) writes the tensor
      names without the "transformer." prefix, as the Hub's openai-community/gpt2 file has them.
  /usr/bin/python3 scripts/hf_reference.py logits --dir DIR (--ids 1,2,3 | --ids-file FILE)
      prints {"logits": [[vocab floats] per position]} (float64, repr precision) on stdout.
      FILE holds a JSON list of ids, or ids separated by commas and/or whitespace.
  /usr/bin/python3 scripts/hf_reference.py selftest
      prints PASS/FAIL lines; exits 1 if any check fails.

Files followed (huggingface/transformers, main branch, 2025):
  src/transformers/models/llama/modeling_llama.py     LlamaRMSNorm, LlamaRotaryEmbedding, rotate_half,
                                                      apply_rotary_pos_emb, repeat_kv, LlamaAttention,
                                                      LlamaMLP, LlamaDecoderLayer, LlamaForCausalLM
  src/transformers/models/mistral/modeling_mistral.py same as Llama + sliding_window
  src/transformers/models/qwen2/modeling_qwen2.py     same as Llama + q/k/v biases (o_proj has none)
  src/transformers/models/qwen3/modeling_qwen3.py     same as Llama + q_norm/k_norm before RoPE
  src/transformers/models/gpt2/modeling_gpt2.py       GPT2Attention, GPT2MLP, GPT2Block, GPT2Model
  src/transformers/pytorch_utils.py                   Conv1D (y = x @ W + b, W is (in, out))
  src/transformers/activations.py                     NewGELUActivation (gelu_new)
  src/transformers/modeling_rope_utils.py             _compute_default_rope_parameters,
                                                      _compute_llama3_parameters
  src/transformers/masking_utils.py                   causal_mask_function, sliding_window_overlay
transformers computes RoPE's inv_freq/cos/sin in float32 and runs in the checkpoint's dtype;
this reference does every step in float64 (the exact math), which is what the 1e-4 tolerance of
issue 43 is measured against.
"""
import argparse
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
import torch

F64 = torch.float64

# ---- safetensors, by hand ----------------------------------------------------------------------

# dtype name -> (numpy storage dtype, bytes per element)
ST_DTYPES = {'F32': ('<f4', 4), 'F16': ('<f2', 2), 'BF16': ('<u2', 2), 'F64': ('<f8', 8)}
TORCH_DTYPE_NAME = {'F32': 'float32', 'BF16': 'bfloat16', 'F16': 'float16'}


def f32_to_bf16_bits(a):
    """float32 array -> uint16 array of bfloat16 bits, round to nearest, ties to even (what
    torch's .to(torch.bfloat16) does for finite values): add 0x7FFF + the lowest kept bit, keep
    the top 16 bits. (NaN is not produced by the generator, so it is not special-cased.)"""
    u = np.ascontiguousarray(a, dtype='<f4').view('<u4').astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype('<u2')


def bf16_bits_to_f32(b):
    """uint16 bfloat16 bits -> float32 (exact: the bits become the top half of a float32)."""
    return (np.asarray(b, dtype='<u2').astype('<u4') << 16).view('<f4')


def encode_tensor(t64, dtype):
    """float64 torch tensor -> (raw little-endian bytes in `dtype`, the stored values as float64).
    The second value is what a reader of the file sees, so tests compare like with like."""
    a = t64.detach().cpu().numpy().astype(np.float64)
    if dtype == 'F32':
        s = a.astype('<f4')
        back = s.astype(np.float64)
    elif dtype == 'F16':
        s = a.astype('<f2')  # IEEE round to nearest even
        back = s.astype(np.float64)
    elif dtype == 'BF16':
        s = f32_to_bf16_bits(a.astype('<f4'))  # float64 -> float32 -> bf16, as torch would from fp32
        back = bf16_bits_to_f32(s).astype(np.float64)
    else:
        raise ValueError('unsupported dtype ' + dtype)
    return s.tobytes(), torch.from_numpy(back.reshape(a.shape))


def write_safetensors(path, tensors, dtype, metadata=None):
    """tensors: list of (name, float64 tensor) in file order; all stored as `dtype`."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors:
        raw, _ = encode_tensor(t, dtype)
        header[name] = {'dtype': dtype, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header['__metadata__'] = metadata or {'format': 'pt'}
    text = json.dumps(header, separators=(',', ':')).encode('utf-8')
    text += b' ' * ((8 - len(text) % 8) % 8)  # pad with spaces to a multiple of 8
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    return offset


def read_safetensors(path):
    """Returns {name: float64 tensor} with the stored values (F32, F16, BF16, F64)."""
    with open(path, 'rb') as f:
        raw = f.read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n].decode('utf-8'))
    header.pop('__metadata__', None)
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        dt = info['dtype']
        if dt not in ST_DTYPES:
            raise ValueError('%s: unsupported dtype %s' % (name, dt))
        b, e = info['data_offsets']
        npdt, size = ST_DTYPES[dt]
        count = int(np.prod(info['shape'])) if info['shape'] else 1
        if e - b != count * size or e > len(data):
            raise ValueError('%s: data_offsets %r disagree with shape %r' % (name, info['data_offsets'], info['shape']))
        a = np.frombuffer(data[b:e], dtype=npdt)
        a = bf16_bits_to_f32(a) if dt == 'BF16' else a
        out[name] = torch.from_numpy(a.astype(np.float64).reshape(info['shape']))
    return out


def read_checkpoint(d):
    """config dict and {name: float64 tensor} of a directory (single file or sharded via index)."""
    with open(os.path.join(d, 'config.json')) as f:
        config = json.load(f)
    index = os.path.join(d, 'model.safetensors.index.json')
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)['weight_map']
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            part = read_safetensors(os.path.join(d, shard))
            for name in part:
                if weight_map.get(name) != shard:
                    raise ValueError('%s found in %s but weight_map says %s' % (name, shard, weight_map.get(name)))
            tensors.update(part)
        missing = [n for n in weight_map if n not in tensors]
        if missing:
            raise ValueError('tensors listed in weight_map but missing: %r' % missing[:5])
    else:
        tensors = read_safetensors(os.path.join(d, 'model.safetensors'))
    return config, tensors


# ---- making small checkpoints -------------------------------------------------------------------

DEFAULTS = dict(vocab=96, hidden=64, heads=4, kv_heads=2, layers=2, intermediate=96, max_pos=128)
ARCH_NAMES = {'llama': ('LlamaForCausalLM', 'llama'), 'mistral': ('MistralForCausalLM', 'mistral'),
              'qwen2': ('Qwen2ForCausalLM', 'qwen2'), 'qwen3': ('Qwen3ForCausalLM', 'qwen3')}
# Llama 3.1's rope_scaling with a small original_max_position_embeddings. With head_dim 16 and
# theta 5e5 the wavelengths 2*pi/inv_freq are 6.3, 32.5, 168, ...; with original_max 64 the bands
# are wavelen < 64/4 = 16 (kept), 16..64 (smoothed) and > 64 (divided by factor), so all three
# branches of _compute_llama3_parameters are exercised (selftest checks this).
LLAMA3_SCALING = {'rope_type': 'llama3', 'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0,
                  'original_max_position_embeddings': 64}


def make_config(arch, dtype, head_dim=None, tie=None, rope_scaling=None, new_style=False, layers=None):
    """config.json as transformers writes it for each architecture (small sizes)."""
    S = dict(DEFAULTS)
    if layers:
        S['layers'] = layers
    if arch == 'gpt2':
        c = {'architectures': ['GPT2LMHeadModel'], 'model_type': 'gpt2', 'activation_function': 'gelu_new',
             'vocab_size': S['vocab'], 'n_embd': S['hidden'], 'n_layer': S['layers'], 'n_head': S['heads'],
             'n_positions': S['max_pos'], 'n_ctx': S['max_pos'], 'n_inner': None, 'layer_norm_epsilon': 1e-5,
             'attn_pdrop': 0.1, 'embd_pdrop': 0.1, 'resid_pdrop': 0.1, 'initializer_range': 0.02,
             'bos_token_id': S['vocab'] - 1, 'eos_token_id': S['vocab'] - 1,
             'scale_attn_weights': True, 'tie_word_embeddings': True}
        c['dtype' if new_style else 'torch_dtype'] = TORCH_DTYPE_NAME[dtype]
        return c
    archname, mtype = ARCH_NAMES[arch]
    theta = 500000.0 if arch == 'llama' else 1000000.0
    c = {'architectures': [archname], 'model_type': mtype, 'hidden_act': 'silu',
         'vocab_size': S['vocab'], 'hidden_size': S['hidden'], 'intermediate_size': S['intermediate'],
         'num_hidden_layers': S['layers'], 'num_attention_heads': S['heads'],
         'num_key_value_heads': S['kv_heads'], 'rms_norm_eps': 1e-6,
         'max_position_embeddings': S['max_pos'], 'initializer_range': 0.02,
         'attention_dropout': 0.0, 'bos_token_id': 1, 'eos_token_id': 2,
         'tie_word_embeddings': bool(tie) if tie is not None else False, 'use_cache': True}
    if arch in ('llama', 'qwen3'):
        c['attention_bias'] = False
    if arch == 'llama':
        c['mlp_bias'] = False
    if arch == 'mistral':
        c['sliding_window'] = 8
    if arch == 'qwen2':  # Qwen2.5's configs carry a window that use_sliding_window false switches off
        c.update(use_sliding_window=False, sliding_window=32768, max_window_layers=S['layers'])
    if arch == 'qwen3':
        c.update(use_sliding_window=False, sliding_window=None, max_window_layers=S['layers'])
    if arch == 'qwen3' or head_dim:
        c['head_dim'] = head_dim or S['hidden'] // S['heads']
    scaling = dict(LLAMA3_SCALING) if rope_scaling == 'llama3' else None
    if new_style:  # transformers >= 4.57/5: rope_parameters holds theta and the scaling; "dtype"
        rp = {'rope_theta': theta, 'rope_type': 'default'}
        if scaling:
            rp.update(scaling)
        c['rope_parameters'] = rp
        c['dtype'] = TORCH_DTYPE_NAME[dtype]
    else:
        c['rope_theta'] = theta
        c['rope_scaling'] = scaling
        c['torch_dtype'] = TORCH_DTYPE_NAME[dtype]
    c['transformers_version'] = '4.57.0' if new_style else '4.46.0'
    return c


def make_weights(arch, config, seed, bare_names=False):
    """List of (name, float64 tensor) in the real Hugging Face names and layouts.
    Matrices ~ N(0, (0.5/sqrt(fan_in))^2), q/k projections N(0, 1/fan_in) (so attention is not
    flat and RoPE/window mistakes show), embeddings and lm_head N(0, 1/hidden) (logits O(1)),
    norm weights 1 + 0.1 N(0,1), biases 0.1 N(0,1)."""
    g = torch.Generator().manual_seed(seed)

    def normal(*shape, std=1.0):
        return torch.randn(*shape, generator=g, dtype=F64) * std

    def mat(out_f, in_f, scale=0.5):  # nn.Linear layout (out, in)
        return normal(out_f, in_f, std=scale / math.sqrt(in_f))

    def norm_w(n):
        return 1.0 + 0.1 * normal(n)

    def bias(n):
        return 0.1 * normal(n)

    W = []
    if arch == 'gpt2':
        E, L, V, P = config['n_embd'], config['n_layer'], config['vocab_size'], config['n_positions']
        I = config['n_inner'] or 4 * E
        pre = '' if bare_names else 'transformer.'
        W.append((pre + 'wte.weight', normal(V, E, std=1.0 / math.sqrt(E))))
        W.append((pre + 'wpe.weight', normal(P, E, std=1.0 / math.sqrt(E))))
        for i in range(L):
            h = '%sh.%d.' % (pre, i)
            W.append((h + 'ln_1.weight', norm_w(E)))
            W.append((h + 'ln_1.bias', bias(E)))
            # the buffers old GPT-2 checkpoints carry: a (1,1,P,P) lower-triangular mask, -1e4
            W.append((h + 'attn.bias', torch.tril(torch.ones(P, P, dtype=F64)).view(1, 1, P, P)))
            W.append((h + 'attn.masked_bias', torch.tensor(-1e4, dtype=F64)))
            # Conv1D weight is (in, out): c_attn's columns are [q | k | v]
            wq, wk, wv = mat(E, E, 1.0).T, mat(E, E, 1.0).T, mat(E, E).T
            W.append((h + 'attn.c_attn.weight', torch.cat([wq, wk, wv], dim=1).contiguous()))
            W.append((h + 'attn.c_attn.bias', bias(3 * E)))
            W.append((h + 'attn.c_proj.weight', mat(E, E).T.contiguous()))
            W.append((h + 'attn.c_proj.bias', bias(E)))
            W.append((h + 'ln_2.weight', norm_w(E)))
            W.append((h + 'ln_2.bias', bias(E)))
            W.append((h + 'mlp.c_fc.weight', mat(I, E).T.contiguous()))
            W.append((h + 'mlp.c_fc.bias', bias(I)))
            W.append((h + 'mlp.c_proj.weight', mat(E, I).T.contiguous()))
            W.append((h + 'mlp.c_proj.bias', bias(E)))
        W.append((pre + 'ln_f.weight', norm_w(E)))
        W.append((pre + 'ln_f.bias', bias(E)))
        return W
    H, V, L = config['hidden_size'], config['vocab_size'], config['num_hidden_layers']
    nh, nkv, I = config['num_attention_heads'], config['num_key_value_heads'], config['intermediate_size']
    hd = config.get('head_dim') or H // nh
    W.append(('model.embed_tokens.weight', normal(V, H, std=1.0 / math.sqrt(H))))
    for i in range(L):
        p = 'model.layers.%d.' % i
        W.append((p + 'input_layernorm.weight', norm_w(H)))
        W.append((p + 'self_attn.q_proj.weight', mat(nh * hd, H, 1.0)))
        W.append((p + 'self_attn.k_proj.weight', mat(nkv * hd, H, 1.0)))
        W.append((p + 'self_attn.v_proj.weight', mat(nkv * hd, H)))
        if arch == 'qwen2':
            W.append((p + 'self_attn.q_proj.bias', bias(nh * hd)))
            W.append((p + 'self_attn.k_proj.bias', bias(nkv * hd)))
            W.append((p + 'self_attn.v_proj.bias', bias(nkv * hd)))
        W.append((p + 'self_attn.o_proj.weight', mat(H, nh * hd)))
        if arch == 'qwen3':
            W.append((p + 'self_attn.q_norm.weight', norm_w(hd)))
            W.append((p + 'self_attn.k_norm.weight', norm_w(hd)))
        W.append((p + 'post_attention_layernorm.weight', norm_w(H)))
        W.append((p + 'mlp.gate_proj.weight', mat(I, H)))
        W.append((p + 'mlp.up_proj.weight', mat(I, H)))
        W.append((p + 'mlp.down_proj.weight', mat(H, I)))
    W.append(('model.norm.weight', norm_w(H)))
    if not config['tie_word_embeddings']:
        W.append(('lm_head.weight', normal(V, H, std=1.0 / math.sqrt(H))))
    return W


def cmd_make(a):
    if a.arch == 'gpt2' and (a.head_dim or a.rope_scaling or a.tie == 0):
        raise SystemExit('gpt2 takes no --head-dim, --rope-scaling or --tie 0 (its head is tied)')
    if a.bare_names and a.arch != 'gpt2':
        raise SystemExit('--bare-names is for --arch gpt2')
    if a.rope_scaling and a.arch != 'llama':
        raise SystemExit('--rope-scaling llama3 is for --arch llama')
    config = make_config(a.arch, a.dtype, a.head_dim, a.tie, a.rope_scaling, a.new_style_config, a.layers)
    weights = make_weights(a.arch, config, a.seed, a.bare_names)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)
        f.write('\n')
    if not a.sharded:
        write_safetensors(os.path.join(a.out, 'model.safetensors'), weights, a.dtype)
        return
    half = len(weights) // 2
    names = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']
    total, weight_map = 0, {}
    for fname, part in zip(names, (weights[:half], weights[half:])):
        total += write_safetensors(os.path.join(a.out, fname), part, a.dtype)
        for n, _ in part:
            weight_map[n] = fname
    with open(os.path.join(a.out, 'model.safetensors.index.json'), 'w') as f:
        json.dump({'metadata': {'total_size': total}, 'weight_map': weight_map}, f, indent=2)
        f.write('\n')


# ---- the forward: pieces -----------------------------------------------------------------------

def rms_norm(x, w, eps):
    """LlamaRMSNorm (modeling_llama.py): x * rsqrt(mean(x^2, -1) + eps) * w.  x (..., d), w (d)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def layer_norm(x, w, b, eps):
    """nn.LayerNorm (GPT2Block.ln_1/ln_2, GPT2Model.ln_f): biased variance.  x (..., d)."""
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def rope_params(config):
    """(theta, scaling dict or None) from either config form: old rope_theta/rope_scaling or new
    rope_parameters {rope_theta, rope_type, ...} (configuration_utils / modeling_rope_utils
    standardize_rope_params). The BC key "type" is read as "rope_type"."""
    if config.get('rope_parameters'):
        rp = dict(config['rope_parameters'])
        theta = float(rp.get('rope_theta', config.get('rope_theta', 10000.0)))
    else:
        rp = dict(config.get('rope_scaling') or {})
        theta = float(config.get('rope_theta', 10000.0))
    rtype = rp.get('rope_type', rp.get('type', 'default'))
    if rtype == 'default':
        return theta, None
    if rtype != 'llama3':
        raise ValueError('rope type %r is not supported by this reference' % rtype)
    rp.setdefault('original_max_position_embeddings', config['max_position_embeddings'])
    return theta, rp


def default_inv_freq(theta, dim):
    """_compute_default_rope_parameters: inv_freq[i] = 1 / theta^(2i/dim), i < dim/2.  (dim/2,)"""
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=F64) / dim))


def llama3_inv_freq(inv_freq, s):
    """_compute_llama3_parameters (modeling_rope_utils.py), Llama 3.1's scaling:
         low_wl = old_ctx / low_freq_factor,  high_wl = old_ctx / high_freq_factor,  wl = 2 pi / f
         wl < high_wl            -> f                 (high frequencies kept)
         wl > low_wl             -> f / factor        (low frequencies divided)
         high_wl <= wl <= low_wl -> (1 - sm) f / factor + sm f,
                                    sm = (old_ctx / wl - low_freq_factor) / (high_freq_factor - low_freq_factor)"""
    factor, lo, hi = float(s['factor']), float(s['low_freq_factor']), float(s['high_freq_factor'])
    old = float(s['original_max_position_embeddings'])
    low_wl, high_wl = old / lo, old / hi
    wl = 2 * math.pi / inv_freq
    f = torch.where(wl > low_wl, inv_freq / factor, inv_freq)
    sm = (old / wl - lo) / (hi - lo)
    smoothed = (1 - sm) * f / factor + sm * f
    medium = ~(wl < high_wl) & ~(wl > low_wl)
    return torch.where(medium, smoothed, f)


def rope_inv_freq(config, head_dim):
    theta, scaling = rope_params(config)
    f = default_inv_freq(theta, head_dim)
    return llama3_inv_freq(f, scaling) if scaling else f


def rope_cos_sin(inv_freq, n):
    """LlamaRotaryEmbedding.forward: freqs = pos x inv_freq, emb = cat(freqs, freqs): the same
    angle on column i and i + hd/2.  Returns cos, sin (n, hd)."""
    pos = torch.arange(n, dtype=inv_freq.dtype)
    freqs = pos[:, None] * inv_freq[None, :]          # (n, hd/2)
    emb = torch.cat([freqs, freqs], dim=-1)            # (n, hd)
    return emb.cos(), emb.sin()


def rotate_half(x):
    """modeling_llama.rotate_half: (x1, x2) -> (-x2, x1) over the two halves of the last dim."""
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin):
    """apply_rotary_pos_emb: x * cos + rotate_half(x) * sin.  x (heads, n, hd), cos/sin (n, hd).
    So column i pairs with column i + hd/2 (NOT llama2.c's 2i, 2i+1)."""
    return x * cos[None] + rotate_half(x) * sin[None]


def apply_rope_interleaved(x, inv_freq, n):
    """The (2i, 2i+1) pairing of llama2.c / Meta's original code, for the selftest only."""
    pos = torch.arange(n, dtype=inv_freq.dtype)
    ang = pos[:, None] * inv_freq[None, :]             # (n, hd/2)
    c, s = ang.cos()[None], ang.sin()[None]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def repeat_kv(x, n_rep):
    """modeling_llama.repeat_kv: (kvh, n, d) -> (kvh * n_rep, n, d); query head h uses kv head
    h // n_rep."""
    return x.repeat_interleave(n_rep, dim=0)


def attention_mask(n, sliding_window=None):
    """Allowed (n, n) boolean: masking_utils.causal_mask_function is kv_idx <= q_idx;
    sliding_window_overlay is kv_idx > q_idx - sliding_window. So query i sees key j iff
    0 <= i - j < sliding_window: itself and the sliding_window - 1 keys before it (W keys in
    all). This is the current masking_utils convention. transformers' history is not uniform:
    one 4.x form of AttentionMaskConverter._make_causal_mask (1 - triu(diagonal = past - W + 1))
    agrees (i - j <= W - 1), while a later 4.x form (tril(diagonal = past - W - 1) masked) let
    i - j = W through too (W + 1 keys). A loader should follow i - j < W."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    ok = j <= i
    if sliding_window:
        ok = ok & (j > i - sliding_window)
    return ok


def sdpa(q, k, v, scale, allowed):
    """eager_attention_forward: softmax(q k^T * scale + mask) v.  q (h, n, d), k/v (h, n, d)."""
    s = torch.matmul(q, k.transpose(-1, -2)) * scale   # (h, n, n)
    s = s.masked_fill(~allowed[None], float('-inf'))
    return torch.matmul(torch.softmax(s, dim=-1), v)  # (h, n, d)


def silu(x):
    return x * torch.sigmoid(x)


def gelu_new(x):
    """activations.NewGELUActivation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


# ---- the forward: whole models ------------------------------------------------------------------

def strip_prefix(tensors):
    """GPT-2 names come with or without "transformer." (GPT2LMHeadModel vs GPT2Model files)."""
    return {(k[len('transformer.'):] if k.startswith('transformer.') else k): v for k, v in tensors.items()}


def llama_forward(config, w, ids, dtype=F64, interleaved=False):
    """LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM.
    w: {name: tensor}; ids: list of n ints. Returns logits (n, vocab).
    interleaved=True: q/k rows are in (2i, 2i+1) pairing and RoPE is applied that way (selftest)."""
    mt = config['model_type']
    if config.get('hidden_act', 'silu') != 'silu':
        raise ValueError('hidden_act %r not supported' % config['hidden_act'])
    if config.get('attention_bias') or config.get('mlp_bias'):
        raise ValueError('attention_bias/mlp_bias true is not supported by this reference')
    if mt in ('qwen2', 'qwen3') and config.get('use_sliding_window'):
        raise ValueError('use_sliding_window true is not supported by this reference')
    H, L = config['hidden_size'], config['num_hidden_layers']
    nh = config['num_attention_heads']
    nkv = config.get('num_key_value_heads') or nh
    hd = config.get('head_dim') or H // nh
    eps = float(config['rms_norm_eps'])
    window = config.get('sliding_window') if mt == 'mistral' else None
    n = len(ids)
    W = {k: v.to(dtype) for k, v in w.items()}
    inv_freq = rope_inv_freq(config, hd).to(dtype)
    cos, sin = rope_cos_sin(inv_freq, n)
    allowed = attention_mask(n, window)

    x = W['model.embed_tokens.weight'][torch.tensor(ids)]        # (n, H)
    for l in range(L):
        p = 'model.layers.%d.' % l
        # --- self-attention (LlamaAttention.forward) ---
        h = rms_norm(x, W[p + 'input_layernorm.weight'], eps)
        q = h @ W[p + 'self_attn.q_proj.weight'].T                 # (n, nh*hd)
        k = h @ W[p + 'self_attn.k_proj.weight'].T                 # (n, nkv*hd)
        v = h @ W[p + 'self_attn.v_proj.weight'].T
        if mt == 'qwen2':                                          # Qwen2Attention: q/k/v bias=True
            q = q + W[p + 'self_attn.q_proj.bias']
            k = k + W[p + 'self_attn.k_proj.bias']
            v = v + W[p + 'self_attn.v_proj.bias']
        q = q.view(n, nh, hd)
        k = k.view(n, nkv, hd)
        v = v.view(n, nkv, hd)
        if mt == 'qwen3':                                          # Qwen3Attention: RMSNorm per head, before RoPE
            q = rms_norm(q, W[p + 'self_attn.q_norm.weight'], eps)
            k = rms_norm(k, W[p + 'self_attn.k_norm.weight'], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)   # (heads, n, hd)
        if interleaved:
            q, k = apply_rope_interleaved(q, inv_freq, n), apply_rope_interleaved(k, inv_freq, n)
        else:
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = repeat_kv(k, nh // nkv), repeat_kv(v, nh // nkv)    # (nh, n, hd)
        o = sdpa(q, k, v, hd ** -0.5, allowed)                     # (nh, n, hd)
        o = o.transpose(0, 1).reshape(n, nh * hd)
        x = x + o @ W[p + 'self_attn.o_proj.weight'].T
        # --- MLP (LlamaMLP.forward): down(silu(gate(x)) * up(x)) ---
        h = rms_norm(x, W[p + 'post_attention_layernorm.weight'], eps)
        g = silu(h @ W[p + 'mlp.gate_proj.weight'].T)
        u = h @ W[p + 'mlp.up_proj.weight'].T
        x = x + (g * u) @ W[p + 'mlp.down_proj.weight'].T
    x = rms_norm(x, W['model.norm.weight'], eps)
    head = W.get('lm_head.weight')
    if head is None or config.get('tie_word_embeddings'):
        # tie_word_embeddings: lm_head shares embed_tokens (a stored lm_head is then ignored)
        if head is None and not config.get('tie_word_embeddings', True):
            raise ValueError('lm_head.weight missing and tie_word_embeddings is false')
        head = W['model.embed_tokens.weight']
    return x @ head.T                                              # (n, vocab)


def gpt2_forward(config, w, ids, dtype=F64):
    """GPT2LMHeadModel (modeling_gpt2.py). Returns logits (n, vocab)."""
    if config.get('activation_function', 'gelu_new') != 'gelu_new':
        raise ValueError('activation_function %r not supported' % config['activation_function'])
    if config.get('scale_attn_by_inverse_layer_idx') or config.get('scale_attn_weights') is False:
        raise ValueError('non-default GPT-2 attention scaling not supported')
    W = {k: v.to(dtype) for k, v in strip_prefix(w).items()}
    E, L, nh = config['n_embd'], config['n_layer'], config['n_head']
    hd, eps, n = E // nh, float(config['layer_norm_epsilon']), len(ids)
    allowed = attention_mask(n)
    x = W['wte.weight'][torch.tensor(ids)] + W['wpe.weight'][:n]  # (n, E)
    for l in range(L):
        p = 'h.%d.' % l
        # GPT2Attention: c_attn is a Conv1D, x @ W (E, 3E) + b; split into q, k, v; heads
        h = layer_norm(x, W[p + 'ln_1.weight'], W[p + 'ln_1.bias'], eps)
        qkv = h @ W[p + 'attn.c_attn.weight'] + W[p + 'attn.c_attn.bias']   # (n, 3E)
        q, k, v = qkv.split(E, dim=1)
        q, k, v = (t.view(n, nh, hd).transpose(0, 1) for t in (q, k, v))  # (nh, n, hd)
        o = sdpa(q, k, v, 1.0 / math.sqrt(hd), allowed)                    # scale 1/sqrt(hd)
        o = o.transpose(0, 1).reshape(n, E)
        x = x + o @ W[p + 'attn.c_proj.weight'] + W[p + 'attn.c_proj.bias']
        # GPT2MLP: c_proj(gelu_new(c_fc(x)))
        h = layer_norm(x, W[p + 'ln_2.weight'], W[p + 'ln_2.bias'], eps)
        h = gelu_new(h @ W[p + 'mlp.c_fc.weight'] + W[p + 'mlp.c_fc.bias'])
        x = x + h @ W[p + 'mlp.c_proj.weight'] + W[p + 'mlp.c_proj.bias']
    x = layer_norm(x, W['ln_f.weight'], W['ln_f.bias'], eps)
    return x @ W['wte.weight'].T                                   # tied head: (n, vocab)


def forward(config, w, ids, dtype=F64):
    vocab = config['vocab_size']
    for t in ids:
        if not (0 <= t < vocab):
            raise ValueError('id %d outside [0, %d)' % (t, vocab))
    if config['model_type'] == 'gpt2':
        if len(ids) > config['n_positions']:
            raise ValueError('%d ids > n_positions %d' % (len(ids), config['n_positions']))
        return gpt2_forward(config, w, ids, dtype)
    if config['model_type'] in ('llama', 'mistral', 'qwen2', 'qwen3'):
        return llama_forward(config, w, ids, dtype)
    raise ValueError('model_type %r not supported' % config['model_type'])


def parse_ids(text):
    text = text.strip()
    if text.startswith('['):
        return [int(t) for t in json.loads(text)]
    return [int(t) for t in text.replace(',', ' ').split()]


def cmd_logits(a):
    if (a.ids is None) == (a.ids_file is None):
        raise SystemExit('give exactly one of --ids and --ids-file')
    if a.ids is not None:
        ids = parse_ids(a.ids)
    else:
        with open(a.ids_file) as f:
            ids = parse_ids(f.read())
    config, w = read_checkpoint(a.dir)
    logits = forward(config, w, ids)
    # json.dumps writes Python floats with repr: the shortest string that round-trips a float64
    sys.stdout.write(json.dumps({'logits': logits.tolist()}) + '\n')


# ---- selftest ----------------------------------------------------------------------------------

def to_rotate_half_perm(hd):
    """Row order that turns rotate_half pairing into interleaved pairing inside one head:
    new row 2i = old row i, new row 2i+1 = old row i + hd/2."""
    half = hd // 2
    return [r for i in range(half) for r in (i, i + half)]


def permute_qk_rows(w, config):
    """Applies to_rotate_half_perm to every head of q_proj and k_proj (what a loader that keeps
    llama2.c's pairing does)."""
    H, nh = config['hidden_size'], config['num_attention_heads']
    nkv, hd = config.get('num_key_value_heads') or nh, config.get('head_dim') or H // nh
    perm = torch.tensor(to_rotate_half_perm(hd))
    out = dict(w)
    for name, heads in (('q_proj', nh), ('k_proj', nkv)):
        for l in range(config['num_hidden_layers']):
            key = 'model.layers.%d.self_attn.%s.weight' % (l, name)
            t = w[key].view(heads, hd, -1)[:, perm, :]
            out[key] = t.reshape(heads * hd, -1)
    return out


def selftest():
    results = []

    def check(name, ok, detail=''):
        results.append(ok)
        print('%s %s%s' % ('PASS' if ok else 'FAIL', name, (': ' + detail) if detail else ''))

    def run_make(d, **kw):
        args = argparse.Namespace(arch='llama', dtype='F32', seed=1, out=d, head_dim=None, tie=None,
                                  rope_scaling=None, new_style_config=False, sharded=False, layers=None,
                                  bare_names=False)
        for k, v in kw.items():
            setattr(args, k, v)
        cmd_make(args)
        return read_checkpoint(d)

    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, DEFAULTS['vocab'], (20,), generator=g).tolist()

    # 0. bf16 rounding matches torch's .to(torch.bfloat16), on values and on exact ties
    x = torch.randn(10000, generator=g, dtype=torch.float32) * 3
    ties = torch.tensor([1.00390625, 1.01171875, -1.00390625, 3.0, 0.0], dtype=torch.float32)  # ...x8000 patterns
    x = torch.cat([x, ties])
    mine = torch.from_numpy(bf16_bits_to_f32(f32_to_bf16_bits(x.numpy())).copy())
    check('bf16 round-to-nearest-even equals torch .to(bfloat16)',
          torch.equal(mine, x.to(torch.bfloat16).to(torch.float32)))

    with tempfile.TemporaryDirectory() as tmp:
        # per arch: (a) float32 vs float64, (c) causality
        variants = [('llama', {}), ('llama', {'head_dim': 24, 'tie': 1}), ('llama', {'rope_scaling': 'llama3'}),
                    ('mistral', {}), ('qwen2', {'tie': 1}), ('qwen3', {}), ('qwen3', {'head_dim': 24}),
                    ('gpt2', {})]
        for arch, kw in variants:
            tag = arch + ''.join(' %s=%s' % kv for kv in sorted(kw.items()))
            d = os.path.join(tmp, tag.replace(' ', '_').replace('=', '-'))
            config, w = run_make(d, arch=arch, **kw)
            l64 = forward(config, w, ids)
            l32 = forward(config, w, ids, torch.float32).to(F64)
            err = ((l32 - l64).abs().max() / l64.abs().max()).item()
            check('%s: float32 forward agrees with float64 (max rel %.1e, |logit| max %.2f)'
                  % (tag, err, l64.abs().max().item()), err < 1e-4 and 0.3 < l64.abs().max().item() < 30)
            t = 9
            ids2 = ids[:t + 1] + [(i + 5) % DEFAULTS['vocab'] for i in ids[t + 1:]]
            l2 = forward(config, w, ids2)
            same = torch.equal(l2[:t + 1], l64[:t + 1])
            moved = (l2[t + 1:] - l64[t + 1:]).abs().max().item() > 1e-3
            check('%s: causal (positions <= %d unchanged when later ids change, later ones move)' % (tag, t),
                  same and moved)

        # (b) rotate_half pairing == interleaved pairing after permuting q/k rows per head
        for kw in ({}, {'head_dim': 24}, {'rope_scaling': 'llama3'}):
            config, w = run_make(os.path.join(tmp, 'perm%d' % len(os.listdir(tmp))), arch='llama', **kw)
            base = forward(config, w, ids)
            inter = llama_forward(config, permute_qk_rows(w, config), ids, interleaved=True)
            wrong = llama_forward(config, w, ids, interleaved=True)  # no permutation: must differ
            err = (inter - base).abs().max().item()
            check('llama%s: q/k rows permuted (i, i+hd/2) -> (2i, 2i+1) + interleaved RoPE = rotate_half '
                  '(max abs %.1e; unpermuted differs by %.2f)' % (''.join(' %s=%s' % kv for kv in kw.items()),
                                                                 err, (wrong - base).abs().max().item()),
                  err < 1e-12 and (wrong - base).abs().max().item() > 1e-3)

        # llama3 scaling changes the frequencies, through all three branches
        config, _ = run_make(os.path.join(tmp, 'l3'), arch='llama', rope_scaling='llama3')
        base = default_inv_freq(500000.0, 16)
        scaled = rope_inv_freq(config, 16)
        s = config['rope_scaling']
        wl = 2 * math.pi / base
        hi_wl = s['original_max_position_embeddings'] / s['high_freq_factor']
        lo_wl = s['original_max_position_embeddings'] / s['low_freq_factor']
        kept = (wl < hi_wl) & torch.isclose(scaled, base, rtol=0, atol=0)
        divided = (wl > lo_wl) & torch.isclose(scaled, base / s['factor'], rtol=1e-15, atol=0)
        medium = ~(wl < hi_wl) & ~(wl > lo_wl) & (scaled < base) & (scaled > base / s['factor'])
        check('llama3 rope scaling: %d kept, %d smoothed, %d divided by %g (head_dim 16)'
              % (int(kept.sum()), int(medium.sum()), int(divided.sum()), s['factor']),
              int(kept.sum()) >= 1 and int(medium.sum()) >= 1 and int(divided.sum()) >= 1
              and int(kept.sum() + medium.sum() + divided.sum()) == 8)
        # and the logits differ from the unscaled model with the same weights
        plain = dict(config)
        plain['rope_scaling'] = None
        _, w = read_checkpoint(os.path.join(tmp, 'l3'))
        diff = (forward(config, w, ids) - forward(plain, w, ids)).abs().max().item()
        check('llama3 rope scaling changes the logits (max abs %.2f)' % diff, diff > 1e-3)

        # new-style config (rope_parameters, dtype) gives the same logits as the old style
        c_old, w_old = run_make(os.path.join(tmp, 'old'), arch='llama', rope_scaling='llama3', seed=3)
        c_new, w_new = run_make(os.path.join(tmp, 'new'), arch='llama', rope_scaling='llama3', seed=3,
                                new_style_config=True)
        check('new-style config (rope_parameters, dtype) = old-style logits',
              'rope_theta' not in c_new and 'rope_parameters' in c_new and
              torch.equal(forward(c_old, w_old, ids), forward(c_new, w_new, ids)))

        # sharded = single file; bare GPT-2 names = prefixed names; BF16/F16 read back as stored
        for arch in ('qwen3', 'gpt2'):
            c1, w1 = run_make(os.path.join(tmp, 'one' + arch), arch=arch, dtype='BF16', seed=5)
            c2, w2 = run_make(os.path.join(tmp, 'two' + arch), arch=arch, dtype='BF16', seed=5, sharded=True)
            check('%s BF16: sharded (%d+%d tensors) = single file' % (
                arch, len(read_safetensors(os.path.join(tmp, 'two' + arch, 'model-00001-of-00002.safetensors'))),
                len(read_safetensors(os.path.join(tmp, 'two' + arch, 'model-00002-of-00002.safetensors')))),
                set(w1) == set(w2) and torch.equal(forward(c1, w1, ids), forward(c2, w2, ids)))
        c3, w3 = run_make(os.path.join(tmp, 'bare'), arch='gpt2', dtype='BF16', seed=5, bare_names=True)
        check('gpt2: names without "transformer." give the same logits',
              not any(k.startswith('transformer.') for k in w3) and
              torch.equal(forward(c3, w3, ids), forward(c1, w1, ids)))
        for dt in ('BF16', 'F16'):
            c, w = run_make(os.path.join(tmp, 'rt' + dt), arch='llama', dtype=dt, seed=9)
            ref = dict(make_weights('llama', c, 9))
            ok = True
            for name, t in w.items():
                _, stored = encode_tensor(ref[name], dt)
                ok = ok and torch.equal(stored, t)
            torch_dt = torch.bfloat16 if dt == 'BF16' else torch.float16
            e = ref['model.norm.weight'].to(torch.float32).to(torch_dt).to(F64)
            check('%s: file holds torch-rounded values of the float32 weights' % dt,
                  ok and torch.equal(e, w['model.norm.weight']))

        # Mistral's window, exactly: 1 layer, so logits at t depend only on tokens t-W+1 .. t
        config, w = run_make(os.path.join(tmp, 'win'), arch='mistral', layers=1)
        W_ = config['sliding_window']
        base = forward(config, w, ids)
        t = 15
        far, near = list(ids), list(ids)
        far[t - W_] = (far[t - W_] + 1) % DEFAULTS['vocab']         # i - j = W: outside the window
        near[t - W_ + 1] = (near[t - W_ + 1] + 1) % DEFAULTS['vocab']  # i - j = W - 1: inside
        d_far = (forward(config, w, far)[t] - base[t]).abs().max().item()
        d_near = (forward(config, w, near)[t] - base[t]).abs().max().item()
        check('mistral sliding_window %d: query %d ignores key %d (i-j=W, change %.1e), sees key %d '
              '(i-j=W-1, change %.2f)' % (W_, t, t - W_, d_far, t - W_ + 1, d_near), d_far == 0 and d_near > 1e-3)
        nowin = dict(config)
        nowin['sliding_window'] = None
        dn = forward(nowin, w, ids)
        check('mistral: positions < W equal the unwindowed model, later ones differ',
              torch.equal(dn[:W_], base[:W_]) and (dn[W_:] - base[W_:]).abs().max().item() > 1e-3)

        # the CLI end to end (logits prints JSON that round-trips float64)
        import subprocess
        d = os.path.join(tmp, 'cli')
        subprocess.run([sys.executable, __file__, 'make', '--arch', 'qwen2', '--dtype', 'BF16', '--seed', '4',
                        '--out', d, '--sharded'], check=True)
        out = subprocess.run([sys.executable, __file__, 'logits', '--dir', d, '--ids', ','.join(map(str, ids))],
                             check=True, capture_output=True, text=True).stdout
        got = torch.tensor(json.loads(out)['logits'], dtype=F64)
        config, w = read_checkpoint(d)
        check('CLI make --sharded + logits: JSON (%d x %d) equals the in-process float64 logits bit for bit'
              % tuple(got.shape), torch.equal(got, forward(config, w, ids)))

    n_fail = results.count(False)
    print('%s: %d checks, %d failed' % ('PASS' if n_fail == 0 else 'FAIL', len(results), n_fail))
    return 1 if n_fail else 0


# ---- command line ------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    m = sub.add_parser('make', help='write a small seeded checkpoint')
    m.add_argument('--arch', required=True, choices=['llama', 'mistral', 'qwen2', 'qwen3', 'gpt2'])
    m.add_argument('--dtype', required=True, choices=['F32', 'BF16', 'F16'])
    m.add_argument('--seed', required=True, type=int)
    m.add_argument('--out', required=True)
    m.add_argument('--head-dim', type=int, default=None)
    m.add_argument('--tie', type=int, choices=[0, 1], default=None)
    m.add_argument('--rope-scaling', choices=['llama3'], default=None)
    m.add_argument('--new-style-config', action='store_true')
    m.add_argument('--sharded', action='store_true')
    m.add_argument('--layers', type=int, default=None)
    m.add_argument('--bare-names', action='store_true', help='gpt2: names without "transformer."')
    lg = sub.add_parser('logits', help='print the float64 logits of a checkpoint directory')
    lg.add_argument('--dir', required=True)
    lg.add_argument('--ids', default=None, help='comma-separated token ids')
    lg.add_argument('--ids-file', default=None, help='JSON list or comma/space separated ids')
    sub.add_parser('selftest', help='run the self-checks')
    a = ap.parse_args(argv)
    if a.cmd == 'make':
        cmd_make(a)
        return 0
    if a.cmd == 'logits':
        cmd_logits(a)
        return 0
    return selftest()


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
