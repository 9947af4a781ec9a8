#!/usr/bin/env python3
"""torch_model.py: attention-wasm's tiny Transformer in PyTorch, for users who outgrow a browser.

It reads the safetensors checkpoints that `model.save()` and the native trainer write (version 2,
docs/model.md lists every tensor; version 3 for layerForms, each layer's form and options under
"layer.<l>.*", built layer by layer), builds the same model with every attention form of the
library (softmax; local and strided; linear attention with elu+1, relu or taylor features; the five
Synthesizers; retention; Linformer; decay-gated linear attention; GLA; DeltaNet, Gated DeltaNet and KDA;
the llama-style block's RMSNorm, SwiGLU, rotary positions, grouped-query heads, no biases and a
classifier tied to the embedding),
reproduces the library's logits, trains, and writes checkpoints that `lib.loadModel` loads and
continues from. The RNN baselines (arch "gru", "gru-attention", src/model/rnn.h) load into
torch.nn.GRU / torch.nn.GRUCell directly: the checkpoint's enc.gru.weight_ih etc. are nn.GRU's
weight_ih_l0 etc. (gates r, z, n; (3C, in)). Debian's python3-torch (1.13) is enough: safetensors is read and written by hand
(an 8-byte little-endian header length, a JSON header, raw little-endian float32).

  /usr/bin/python3 scripts/torch_model.py logits  model.safetensors tokens.json  [source.json]
  /usr/bin/python3 scripts/torch_model.py train   model.safetensors batch.json out.safetensors --steps 3 --lr 1e-3
  /usr/bin/python3 scripts/torch_model.py check   cases.json   (the round trip tests/node/torch.test.js runs)
  /usr/bin/python3 scripts/torch_model.py hooks   cases.json   (cache, ablation, patching, logit lens: tests/node/hooks.test.js)
  /usr/bin/python3 scripts/torch_model.py llama2c-make model.bin tokenizer.bin [--dim 32 --hidden 64 --layers 2
                   --heads 4 --kv-heads 4 --seq-len 32 --seed 1 --untied]   (a random llama in llama2.c's format)
  /usr/bin/python3 scripts/torch_model.py llama2c-run  model.bin tokenizer.bin prompt.txt [--steps 8]
                   (prints {tokens, logits, greedy}; tokenizer "-": prompt.txt holds token ids as JSON)

The JSON files (token ids are integers in [0, vocab)):
  tokens.json   one sequence, what model.forward(ids) takes:  [3, 1, 4, 1, 5]
  source.json   an encoder-decoder's (or GRU's) source sequence, same form:  [2, 7, 1]
                logits prints the (T, vocab) logits as a JSON list of T rows.
  batch.json    what model.trainStep({ inputs, targets, mask, source }) takes, rows of equal length:
                {"inputs": [[1, 2, 3], [4, 5, 6]], "targets": [[2, 3, 4], [5, 6, 7]],
                 "mask": [[1, 1, 1], [1, 1, 0]], "source": [[9, 8], [7, 6]]}
                ("mask" optional: 0 leaves a position out of the loss; "source" only for an
                encoder-decoder or GRU model). train prints the loss of each step and writes
                out.safetensors, which lib.loadModel continues from.
  cases.json    a list of {checkpoint, tokens, source?, logits, batch, out} (see check() below).

The formulas are those of docs/attention-forms.md; each function names the C code it mirrors.
"""
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float32)


# ---- safetensors ------------------------------------------------------------------------------

def read_safetensors(path):
    """Returns (metadata dict, {name: tensor}) of a float32 safetensors file."""
    with open(path, 'rb') as f:
        raw = f.read()
    hlen = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + hlen])
    meta = header.pop('__metadata__', {})
    data = raw[8 + hlen:]
    tensors = {}
    for name, e in header.items():
        if e['dtype'] != 'F32':
            raise ValueError(f'{name}: dtype {e["dtype"]}, expected F32')
        begin, end = e['data_offsets']
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32)
        tensors[name] = t.reshape(e['shape']).clone()
    return meta, tensors


def write_safetensors(path, meta, tensors):
    """Writes {name: tensor} (in insertion order) with string metadata, header padded to 8 bytes."""
    header = {'__metadata__': {k: str(v) for k, v in meta.items()}}
    blobs, off = [], 0
    for name, t in tensors.items():
        b = t.detach().to(torch.float32).contiguous().numpy().astype('<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))


# ---- attention forms (src/model/form_*.c) ------------------------------------------------------

def split_heads(x, h):
    """(n, C) -> (h, n, C / h): heads split the columns."""
    n, c = x.shape
    return x.reshape(n, h, c // h).transpose(0, 1)


def merge_heads(x):
    h, n, dh = x.shape
    return x.transpose(0, 1).reshape(n, h * dh)


def softmax_attention(q, k, v, h, causal, alibi=False, window=0, softcap=0.0, sinks=None):
    """O = softmax(Q K^T / sqrt(C / h) + B + M) V per head; a row with no allowed key is zero. alibi:
    B = -m_h |i - j| with m_h = 2^(-8 (h + 1) / H) for heads h = 0..H-1 (Press, Smith, Lewis 2022).
    2025's switches (docs/attention-forms.md section 1b): softcap c: logits c tanh(s / c) before the
    bias and the mask (Gemma 2); window W: keys j > i - W only (Gemma 2/3, gpt-oss); sinks (h): a
    logit per head as one more softmax column, dropped after it (gpt-oss)."""
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)
    s = qh @ kh.transpose(1, 2) / math.sqrt(q.shape[1] // h)
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if window > 0:
        n, m = s.shape[1], s.shape[2]
        far = torch.arange(m)[None, :] <= torch.arange(n)[:, None] - window
        s = s.masked_fill(far, float('-inf'))
    if alibi:
        n, m = s.shape[1], s.shape[2]
        dist = (torch.arange(n)[:, None] - torch.arange(m)[None, :]).abs().float()
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)])
        s = s - slopes[:, None, None] * dist
    if causal:
        n, m = s.shape[1], s.shape[2]
        mask = torch.ones(n, m, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, float('-inf'))
    if sinks is not None:  # the sink's column, last, then dropped: weight with no value
        s = torch.cat([s, sinks.reshape(h, 1, 1).expand(h, s.shape[1], 1)], -1)
        return merge_heads(torch.softmax(s, dim=-1)[..., :-1] @ vh)
    p = torch.softmax(s, dim=-1)
    return merge_heads(torch.nan_to_num(p, nan=0.0) @ vh)


def retention(q, k, v, h, gammas, causal):
    """RetNet's retention (src/attention/retention.c): O = ((Q K^T / sqrt(C / h)) * D) V per head,
    D[i, j] = gamma_h^|i - j|, zero above the diagonal when causal; no softmax."""
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)
    n = q.shape[0]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    d = gammas[:, None, None] ** (i - j).abs().to(q.dtype)
    if causal:
        d = d.masked_fill(j > i, 0.0)
    s = qh @ kh.transpose(1, 2) / math.sqrt(q.shape[1] // h)
    return merge_heads((s * d) @ vh)


def gated(x, q, k, v, h, w, b):
    """Decay-gated linear attention (src/attention/gated_linear.c), from its recurrence: per head
    a_t = sigmoid(-(x_t w_h + b_h)) = exp(-softplus(.)), S_t = a_t S_{t-1} + k_t^T v_t,
    o_t = q_t S_t / sqrt(C / h). Causal only."""
    n, c = q.shape
    dh = c // h
    a = torch.sigmoid(-F.linear(x, w, b))  # (n, h)
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)  # (h, n, dh)
    s, out = torch.zeros(h, dh, dh, dtype=q.dtype), []
    for t in range(n):
        s = a[t][:, None, None] * s + kh[:, t, :, None] * vh[:, t, None, :]
        out.append((qh[:, t, None, :] @ s)[:, 0, :])
    return merge_heads(torch.stack(out, 1)) / math.sqrt(dh)


def gla(x, q, k, v, h, w, b):
    """GLA (src/attention/gla.c), from its recurrence: a gate per key channel,
    alpha_t = sigmoid(-(x_t W^T + b)) (C values), each row r of a head's state fading by its own
    channel's gate, S_t = diag(alpha_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t / sqrt(C / h). Causal only."""
    n, c = q.shape
    dh = c // h
    a = split_heads(torch.sigmoid(-F.linear(x, w, b)), h)  # (h, n, dh)
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)  # (h, n, dh)
    s, out = torch.zeros(h, dh, dh, dtype=q.dtype), []
    for t in range(n):
        s = a[:, t, :, None] * s + kh[:, t, :, None] * vh[:, t, None, :]
        out.append((qh[:, t, None, :] @ s)[:, 0, :])
    return merge_heads(torch.stack(out, 1)) / math.sqrt(dh)


def delta_rule(x, q, k, v, h, p, gated_):
    """DeltaNet / Gated DeltaNet (src/attention/delta_rule.c), from the recurrence: per head
    beta_t = sigmoid(x_t wb_h + bb_h), a_t = sigmoid(-(x_t wa_h + ba_h)) (1 for DeltaNet),
    k^ = k / sqrt(|k|^2 + 1e-6), S_t = a_t (S - beta k^^T (k^ S)) + beta k^^T v_t,
    o_t = q_t S_t / sqrt(C / h). Causal only."""
    n, c = q.shape
    dh = c // h
    beta = torch.sigmoid(F.linear(x, p['beta_weight'], p['beta_bias']))  # (n, h)
    a = torch.sigmoid(-F.linear(x, p['gate_weight'], p['gate_bias'])) if gated_ else torch.ones_like(beta)
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)  # (h, n, dh)
    kh = kh / torch.sqrt((kh * kh).sum(-1, keepdim=True) + 1e-6)
    s, out = torch.zeros(h, dh, dh, dtype=q.dtype), []
    for t in range(n):
        kt, vt, bt, at = kh[:, t, :], vh[:, t, :], beta[t][:, None], a[t][:, None]
        u = (kt[:, None, :] @ s)[:, 0, :]  # (h, dh): what the state holds at k^_t
        s = at[:, :, None] * (s - bt[:, :, None] * kt[:, :, None] * u[:, None, :]) + bt[:, :, None] * kt[:, :, None] * vt[:, None, :]
        out.append((qh[:, t, None, :] @ s)[:, 0, :])
    return merge_heads(torch.stack(out, 1)) / math.sqrt(dh)


def kda(x, q, k, v, h, p):
    """Kimi Delta Attention (src/attention/delta_rule.c, channel gates), from the recurrence: the
    gated delta rule with a decay per key channel, alpha_t = exp(-exp(A_log_h) softplus(x_t Wg^T + bg))
    (C values; Kimi Linear's gate, Wg full-rank or Wup Wdown at gateRank), beta_t = sigmoid(x_t wb_h + bb_h),
    S_t = (I - beta k^^T k^) diag(alpha_t) S_{t-1} + beta k^^T v_t, o_t = q_t S_t / sqrt(C / h)."""
    n, c = q.shape
    dh = c // h
    beta = torch.sigmoid(F.linear(x, p['beta_weight'], p['beta_bias']))  # (n, h)
    rate = torch.exp(p['gate_a_log']).repeat_interleave(dh)  # (c): each channel its head's A
    # the gate's projection: full rank, or attentionOptions.gateRank's down (r, C) and up (C, r)
    z = F.linear(F.linear(x, p['gate_down']), p['gate_up'], p['gate_bias']) if 'gate_down' in p else F.linear(x, p['gate_weight'], p['gate_bias'])
    alpha = split_heads(torch.exp(-rate * F.softplus(z)), h)  # (h, n, dh)
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)  # (h, n, dh)
    kh = kh / torch.sqrt((kh * kh).sum(-1, keepdim=True) + 1e-6)
    s, out = torch.zeros(h, dh, dh, dtype=q.dtype), []
    for t in range(n):
        kt, vt, bt = kh[:, t, :], vh[:, t, :], beta[t][:, None, None]
        s = alpha[:, t, :, None] * s  # diag(alpha_t) S_{t-1}: row r fades by its channel's decay
        u = (kt[:, None, :] @ s)[:, 0, :]  # (h, dh): what the decayed state holds at k^_t
        s = s + bt * kt[:, :, None] * (vt - u)[:, None, :]
        out.append((qh[:, t, None, :] @ s)[:, 0, :])
    return merge_heads(torch.stack(out, 1)) / math.sqrt(dh)


def linformer(q, k, v, h, e, f):
    """Linformer (src/attention/linformer.c): softmax attention over E[:, :n] K and F[:, :n] V."""
    n = q.shape[0]
    return softmax_attention(q, e[:, :n] @ k, f[:, :n] @ v, h, False)


def local_attention(q, k, v, h, window, causal, stride=0):
    """Softmax attention over a band of keys: the last `window` positions (causal) or window // 2
    on each side (src/attention/local_attention.c)."""
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)
    s = qh @ kh.transpose(1, 2) / math.sqrt(q.shape[1] // h)
    i = torch.arange(s.shape[1])[:, None]
    j = torch.arange(s.shape[2])[None, :]
    band = (j <= i) & (j > i - window) if causal else (i - j).abs() <= window // 2
    if stride:  # strided sparse attention: every stride-th key as well
        band = band | (((i - j).abs() % stride == 0) & ((j <= i) if causal else True))
    p = torch.softmax(s.masked_fill(~band, float('-inf')), dim=-1)
    return merge_heads(torch.nan_to_num(p, nan=0.0) @ vh)


def features(x, feature):
    """phi of src/attention/linear_attention.c: elu+1, relu, or taylor's [1, x / |x|]."""
    if feature == 'elu+1':
        return F.elu(x) + 1.0
    if feature == 'relu':
        return F.relu(x)
    if feature == 'taylor':
        norm = x.norm(dim=-1, keepdim=True)
        xhat = torch.where(norm > 0, x / norm.clamp_min(1e-30), torch.zeros_like(x))
        return torch.cat([torch.ones_like(x[..., :1]), xhat], dim=-1)
    raise ValueError(f'feature map {feature} has no causal form for a decoder')


def linear_attention(q, k, v, h, feature, causal):
    """O_i = sum_j sim(q_i, k_j) v_j / sum_j sim(q_i, k_j), sim = phi(q) . phi(k); zero rows when
    the denominator is zero (taylor: within rounding of zero, as the C code decides)."""
    fq, fk, vh = features(split_heads(q, h), feature), features(split_heads(k, h), feature), split_heads(v, h)
    a = fq @ fk.transpose(1, 2)  # (h, n, m) similarities
    if feature == 'taylor':
        a = a.clamp_min(0.0)
    if causal:
        a = a * torch.ones(a.shape[1], a.shape[2]).tril()
    den = a.sum(-1, keepdim=True)
    keys = torch.arange(1, a.shape[1] + 1).clamp(max=a.shape[2]).reshape(1, -1, 1) if causal else a.shape[2]
    floor = 4.0 * (fq.shape[-1] + 1) * 1.1920929e-7 * keys if feature == 'taylor' else 0.0
    live = den > floor
    out = torch.where(live, (a @ vh) / torch.where(live, den, torch.ones_like(den)), torch.zeros(()))
    return merge_heads(out)


KINDS = ['dense', 'random', 'factorized-dense', 'factorized-random', 'mixture', 'dot']


def synth_component(kind, p, x, q, k, h, n):
    """The logits (h, n, n) of one Synthesizer component (src/attention/synthesizer.c)."""
    if kind == 'dense':  # relu(X W1 + b1) W2[:, :n] + b2[:n]
        hid = F.relu(torch.einsum('nd,hde->hne', x, p['W1']) + p['b1'][:, None, :])
        return hid @ p['W2'][:, :, :n] + p['b2'][:, None, :n]
    if kind == 'random':
        return p['R'][:, :n, :n]
    if kind == 'factorized-dense':  # B[i, j] = Ba[i, j / b] * Bb[i, j % b]
        ha = F.relu(torch.einsum('nd,hde->hne', x, p['W1a']) + p['b1a'][:, None, :])
        hb = F.relu(torch.einsum('nd,hde->hne', x, p['W1b']) + p['b1b'][:, None, :])
        ba, bb = ha @ p['W2a'], hb @ p['W2b']
        b = bb.shape[-1]
        j = torch.arange(n)
        return ba[:, :, j // b] * bb[:, :, j % b]
    if kind == 'factorized-random':
        return p['R1'][:, :n] @ p['R2'][:, :n].transpose(1, 2)
    if kind == 'dot':
        qh, kh = split_heads(q, h), split_heads(k, h)
        return qh @ kh.transpose(1, 2) / math.sqrt(q.shape[1] // h)
    raise ValueError(kind)


def synthesizer(variant, components, p, x, q, k, v, h, causal):
    n = x.shape[0]
    if variant == 'mixture':
        alpha = torch.softmax(p['alphaLogits'], dim=-1)  # (h, C)
        logits = sum(alpha[:, c, None, None] * synth_component(kind, {key[len(kind) + 1:]: t for key, t in p.items() if key.startswith(kind + '.')}, x, q, k, h, n)
                     for c, kind in enumerate(components))
    else:
        logits = synth_component(variant, p, x, q, k, h, n)
    if causal:
        logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float('-inf'))
    return merge_heads(torch.softmax(logits, dim=-1) @ split_heads(v, h))


# ---- the model (src/model/transformer.c) -------------------------------------------------------

def mla_rope(x, groups, width):
    """MLA's decoupled RoPE (src/attention/mla.c): each width-wide group of row t has its pairs
    (2r, 2r+1) turned by the angle t 10000^(-2r / width)."""
    n = x.shape[0]
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = torch.pow(torch.tensor(10000.0, dtype=torch.float64), -torch.arange(0, width, 2, dtype=torch.float64) / width)
    cos, sin = torch.cos(pos * freq).float()[:, None, :], torch.sin(pos * freq).float()[:, None, :]
    xr = x.reshape(n, groups, width // 2, 2)
    a, b = xr[..., 0], xr[..., 1]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).reshape(n, groups * width)


def mla(x, h, p, rope_dim, causal, absorbed=False):
    """Multi-head latent attention (DeepSeek-V2 section 2.1; src/attention/mla.c). c = x W_DKV^T,
    k^C = c W_UK^T, v = c W_UV^T, k^R = RoPE(x W_KR^T) shared by the heads, q^C = xq W_Q^T,
    q^R = RoPE(xq W_QR^T) per head, xq = x or c_Q = x W_DQ^T; scores (q^C.k^C + q^R.k^R) /
    sqrt(C / h + rope_dim). absorbed: W_UK folded into the queries and W_UV applied to the averaged
    latents (inference's path): the same logits."""
    n, C = x.shape
    hd, P = C // h, rope_dim
    c = F.linear(x, p['w_dkv'])
    xq = F.linear(x, p['w_dq']) if 'w_dq' in p else x
    qc = F.linear(xq, p['w_uq'] if 'w_uq' in p else p['w_q'])
    rope_scores = 0.0  # ropeDim 0: no rotary part (and no W_KR, W_QR in the checkpoint)
    if P:
        kr = mla_rope(F.linear(x, p['w_kr']), 1, P)
        qr = mla_rope(F.linear(xq, p['w_qr']), h, P).reshape(n, h, P).transpose(0, 1)  # (h, n, P)
        rope_scores = qr @ kr.T  # (h, n, n)
    if absorbed:
        w_uk = p['w_uk'].reshape(h, hd, -1)  # (h, hd, R)
        qa = split_heads(qc, h) @ w_uk       # (h, n, R)
        s = qa @ c.T + rope_scores
    else:
        s = split_heads(qc, h) @ split_heads(F.linear(c, p['w_uk']), h).transpose(1, 2) + rope_scores
    s = s / math.sqrt(hd + P)
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float('-inf'))
    a = torch.softmax(s, dim=-1)
    if absorbed:
        lat = a @ c  # (h, n, R)
        return merge_heads(lat @ p['w_uv'].reshape(h, hd, -1).transpose(1, 2))
    return merge_heads(a @ split_heads(F.linear(c, p['w_uv']), h))


def nsa(x, q, k, v, h, w, b, block, top, window, group, mlp=None):
    """Native Sparse Attention (Yuan et al. 2025; src/attention/nsa.c), causal. Per head and query t:
    the compressed branch attends over the mean keys and values of the complete blocks of `block`
    keys ((j + 1) block - 1 <= t); the selection reads block 0, the current and the previous block
    and the `top` other complete blocks of highest importance (the compressed weights summed over
    the `group` heads of a K/V group, ties to the lower block; no gradient through the choice); the
    window reads the last `window` keys; gates g = sigmoid(x W^T + b), row 3h + (cmp, slc, win).
    mlp (compress 'mlp'): a block's key per head is wk2 silu(wk1 concat_i(k_i + pe_i)), its value
    likewise with wv1, wv2, instead of the means."""
    n, c = q.shape
    dh = c // h
    scale = 1.0 / math.sqrt(dh)
    g = torch.sigmoid(F.linear(x, w, b)).reshape(n, h, 3)
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)  # (h, n, dh)
    nb = n // block
    if mlp is None:
        kb = kh[:, :nb * block].reshape(h, nb, block, dh).mean(2)
        vb = vh[:, :nb * block].reshape(h, nb, block, dh).mean(2)
    else:
        def squeeze(a, w1, w2):  # (h, n, dh) -> (h, nb, dh)
            blocks = (a[:, :nb * block].reshape(h, nb, block, dh) + mlp['pe']).reshape(h, nb, block * dh)
            return F.linear(F.silu(F.linear(blocks, w1)), w2)
        kb, vb = squeeze(kh, mlp['wk1'], mlp['wk2']), squeeze(vh, mlp['wv1'], mlp['wv2'])
    out = []
    for t in range(n):
        vis, cur = (t + 1) // block, t // block
        o_cmp = torch.zeros(h, dh, dtype=q.dtype)
        if vis:
            p = torch.softmax((kb[:, :vis] @ qh[:, t, :, None])[..., 0] * scale, -1)  # (h, vis)
            o_cmp = (p[:, :, None] * vb[:, :vis]).sum(1)
            imp = p.detach().reshape(h // group, group, vis).sum(1)
        mask = torch.zeros(h, t + 1, dtype=torch.bool)
        for gi in range(h // group):
            chosen = {0, cur} | ({cur - 1} if cur else set())
            if vis:
                ranked = sorted((j for j in range(vis) if j not in chosen), key=lambda j: (-float(imp[gi, j]), j))
                chosen |= set(ranked[:top])
            for j in chosen:
                mask[gi * group:(gi + 1) * group, j * block:min((j + 1) * block, t + 1)] = True
        s = (kh[:, :t + 1] @ qh[:, t, :, None])[..., 0] * scale  # (h, t + 1)
        far = torch.arange(t + 1) <= t - window
        o_slc = (torch.softmax(s.masked_fill(~mask, float('-inf')), -1)[:, :, None] * vh[:, :t + 1]).sum(1)
        o_win = (torch.softmax(s.masked_fill(far, float('-inf')), -1)[:, :, None] * vh[:, :t + 1]).sum(1)
        out.append(g[t, :, 0:1] * o_cmp + g[t, :, 1:2] * o_slc + g[t, :, 2:3] * o_win)
    return merge_heads(torch.stack(out, 1))
def dsa(x, q, k, v, h, p, top_k, sparse):
    """DeepSeek Sparse Attention (DeepSeek-V3.2-Exp; src/attention/dsa.c), the forward: the lightning
    indexer I_ts = sum_j w_tj ReLU(q^I_tj . k^I_s) with q^I = x W_qI^T (J heads of D), k^I = x W_kI^T,
    w = x W_w^T; each query's heads read its top_k keys s <= t by I (ties to the lower index: a stable
    sort), or every s <= t in the warm-up (sparse False). Causal only. Training here is the
    language-modelling loss alone: the indexer's own KL loss and the warm-up's freeze are the library's."""
    n, c = q.shape
    J, D = p['w_w'].shape[0], p['w_ki'].shape[0]
    qi, ki, w = F.linear(x, p['w_qi']).reshape(n, J, D), F.linear(x, p['w_ki']), F.linear(x, p['w_w'])
    index = (w[:, :, None] * torch.relu(torch.einsum('tjd,sd->tjs', qi, ki))).sum(1)  # (t, s)
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    if sparse:
        keep = torch.zeros(n, n, dtype=torch.bool)
        for t in range(n):
            keep[t, torch.sort(index[t, :t + 1].detach(), descending=True, stable=True).indices[:top_k]] = True
    dh = c // h
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)
    s = (qh @ kh.transpose(1, 2) / math.sqrt(dh)).masked_fill(~keep, float('-inf'))
    return merge_heads(torch.softmax(s, -1) @ vh)


class TinyTransformer(torch.nn.Module):
    def __init__(self, meta, tensors):
        super().__init__()
        self.meta = dict(meta)
        self.hook = None  # hp(): a forward hook at the named points, for the hooks command
        c = self.meta
        self.V, self.C, self.H, self.layers = int(c['vocab']), int(c['d_model']), int(c['heads']), int(c['layers'])
        self.F, self.L = int(c['d_ff']), int(c['max_len'])
        self.attention, self.norm, self.arch = c['attention'], c['norm'], c['arch']
        if c.get('version') not in ('2', '3'):
            raise ValueError('this script reads version-2 and -3 checkpoints (PyTorch layout); load a version-1 file in the library and save() it again')
        self.layer_meta = [self.meta] * self.layers
        if c.get('version') == '3':  # layerForms: layer l's form and options under "layer.<l>.*"
            # the model's own "attention" and options are layer 0's: each layer reads only its own
            own0 = {k[len('layer.0.'):] for k in c if k.startswith('layer.0.')}
            base = {k: v for k, v in c.items() if not k.startswith('layer.') and k not in own0}
            self.layer_meta = [{**base, **{k[len(f'layer.{l}.'):]: v for k, v in c.items() if k.startswith(f'layer.{l}.')}}
                               for l in range(self.layers)]
        self.names = [n for n in tensors if not n.startswith('optim.')]
        self.params = torch.nn.ParameterDict({n.replace('.', '__'): torch.nn.Parameter(tensors[n]) for n in self.names})
        C, L = self.C, self.L
        pos = torch.arange(L, dtype=torch.float64)[:, None]
        i = torch.arange(0, C, 2, dtype=torch.float64)
        angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i / C)
        pe = torch.zeros(L, C, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)[:, :C // 2]
        self.register_buffer('sinusoid', pe.to(torch.float32))
        if self.arch in ('gru', 'gru-attention'):
            self.rnn_modules()

    # ---- the RNN baselines (src/model/rnn.c) ----

    def rnn_modules(self):
        """nn.GRU for the encoder, and for the decoder nn.GRU (gru: its inputs are known up front)
        or nn.GRUCell (gru-attention: each input depends on the previous state), sharing the
        checkpoint's parameters."""
        C = self.C
        self.enc_gru = torch.nn.GRU(C, C)
        self.dec_gru = torch.nn.GRU(2 * C, C) if self.arch == 'gru' else torch.nn.GRUCell(2 * C, C)
        for mod, prefix, suffix in ((self.enc_gru, 'enc.gru', '_l0'), (self.dec_gru, 'dec.gru', '_l0' if self.arch == 'gru' else '')):
            for name in ('weight_ih', 'weight_hh', 'bias_ih', 'bias_hh'):
                setattr(mod, name + suffix, self.p(f'{prefix}.{name}'))

    def rnn_forward(self, tokens, source):
        """Encoder h_1..h_S from h_0 = 0; decoder from s_0 = h_S with inputs [emb(y_{i-1}); c_i]:
        c_i = h_S (gru) or sum_j softmax_j(v . tanh(W_a s_{i-1} + U_a h_j + b_a)) h_j."""
        wte = self.p('wte')
        hs, h_last = self.enc_gru(wte[source][:, None, :])
        H, c = hs[:, 0, :], h_last[0, 0]
        emb = wte[tokens]
        if self.arch == 'gru':
            x = torch.cat([emb, c.expand(len(tokens), self.C)], 1)
            states = self.dec_gru(x[:, None, :], h_last)[0][:, 0, :]
        else:
            uh = F.linear(H, self.p('dec.attn.U_a'), self.p('dec.attn.b_a'))
            s, out = c[None], []
            for i in range(len(tokens)):
                e = torch.tanh(F.linear(s, self.p('dec.attn.W_a')) + uh) @ self.p('dec.attn.v')
                ctx = torch.softmax(e, 0) @ H
                s = self.dec_gru(torch.cat([emb[i], ctx])[None], s)
                out.append(s[0])
            states = torch.stack(out)
        return F.linear(states, self.p('out.w'), self.p('out.b'))

    def p(self, name):
        return self.params[name.replace('.', '__')]

    def has(self, name):
        return name.replace('.', '__') in self.params

    def ln(self, x, prefix):
        """LayerNorm, or RMSNorm (norm_type "rmsnorm": no shift tensor), eps 1e-5."""
        if self.meta.get('norm_type') == 'rmsnorm':
            return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * self.p(prefix + '.w')
        return F.layer_norm(x, (self.C,), self.p(prefix + '.w'), self.p(prefix + '.b'), eps=1e-5)

    def lin(self, x, prefix, w, b):  # nn.Linear: x W^T + b, W stored (out, in); no bias when absent
        return F.linear(x, self.p(f'{prefix}.{w}'), self.p(f'{prefix}.{b}') if self.has(f'{prefix}.{b}') else None)

    def rope(self, x):
        """Rotary positions (llama_layers.c), llama2.c's pairing: in each head the adjacent columns
        (2i, 2i+1) turn by the angle p theta^(-2i/hd) at position p."""
        n, C = x.shape
        hd = C // self.H
        theta = float(self.meta.get('rope_theta', '10000'))
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        freq = torch.pow(torch.tensor(theta, dtype=torch.float64), -torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        cos, sin = torch.cos(pos * freq).float(), torch.sin(pos * freq).float()  # (n, hd / 2)
        xr = x.reshape(n, self.H, hd // 2, 2)
        a, b = xr[..., 0], xr[..., 1]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.stack([a * c - b * s, a * s + b * c], -1).reshape(n, C)

    def head_rms(self, x, w):
        """QK-norm: each head's row x / sqrt(mean(x^2) + 1e-5) * w, w (head width) shared by the heads."""
        n, C = x.shape
        xh = x.reshape(n, self.H, C // self.H)
        return (xh * torch.rsqrt((xh * xh).mean(-1, keepdim=True) + 1e-5) * w).reshape(n, C)

    def share_kv(self, x):
        """Grouped-query attention: (n, KH hd) -> (n, H hd), query head h reading K/V head h // (H / KH)."""
        n, kc = x.shape
        hd = self.C // self.H
        kh = kc // hd
        return x.reshape(n, kh, 1, hd).expand(n, kh, self.H // kh, hd).reshape(n, self.C)

    def gammas(self, prefix, meta):
        """Retention's decays: RetNet's 1 - 2^(-5 - h), one value, or sigmoid of the learned logits."""
        decay = meta.get('decay', 'retnet')
        if decay == 'learned':
            return torch.sigmoid(self.p(prefix + '.retention.decay_logit'))
        if decay == 'retnet':
            return torch.tensor([1.0 - 2.0 ** (-5 - h) for h in range(self.H)], dtype=torch.float32)
        return torch.full((self.H,), float(decay), dtype=torch.float32)

    def hp(self, name, x, shape=None):
        """A forward hook at the named point (TransformerLens's names, src/model/hooks.h): self.hook
        (name, x viewed as `shape`) -> the activation to go on with; None: x unchanged."""
        if self.hook is None or name is None:
            return x
        return self.hook(name, x if shape is None else x.reshape(shape)).reshape(x.shape)

    def attend(self, prefix, xq, xkv, causal, cross, layer=None):
        # the library's registry: cross-attention of these forms is softmax, and so is a Linformer
        # model's decoder self-attention (Linformer has no causal form)
        m = self.layer_meta[layer] if layer is not None else self.meta  # the form and options of this layer
        attention = m['attention']
        own = attention.startswith('synth:') or attention in ('local', 'strided', 'retention', 'linformer', 'gated', 'gla', 'delta', 'gated-delta', 'kda', 'mla', 'nsa', 'dsa')
        form = 'softmax' if (cross and own) or (causal and attention == 'linformer') else attention
        at = (lambda point: f'blocks.{layer}.attn.{point}') if layer is not None else (lambda point: None)
        n, hd = xq.shape[0], self.C // self.H
        q = self.hp(at('hook_q'), self.lin(xq, prefix, 'wq', 'bq'), (n, self.H, hd)) if self.has(prefix + '.wq') else None
        k = self.share_kv(self.hp(at('hook_k'), self.lin(xkv, prefix, 'wk', 'bk'), (n, -1, hd))) if self.has(prefix + '.wk') else None
        v = self.share_kv(self.hp(at('hook_v'), self.lin(xkv, prefix, 'wv', 'bv'), (n, -1, hd))) if self.has(prefix + '.wv') else None  # mla: none
        sw = m if form == 'softmax' and not cross else {}  # softmax's switches (this layer's self-attention)
        if sw.get('qk_norm') in ('1', 'true'):  # RMSNorm of each head's q and k, before the rotation
            q, k = self.head_rms(q, self.p(prefix + '.attn.q_norm')), self.head_rms(k, self.p(prefix + '.attn.k_norm'))
        if self.meta.get('positional') == 'rope' and not cross and q is not None:
            q, k = self.rope(q), self.rope(k)
        if form == 'softmax':
            cap = sw.get('softcap', 'off')
            o = softmax_attention(q, k, v, self.H, causal, self.meta.get('positional') == 'alibi' and not cross,
                                  int(sw.get('window', 0)), 0.0 if cap == 'off' else float(cap),
                                  self.p(prefix + '.attn.sinks') if sw.get('learned_sinks') in ('1', 'true') else None)
            if sw.get('output_gate') in ('1', 'true'):  # Y = SDPA(Q, K, V) * sigmoid(x W_g^T), before W_O
                o = o * torch.sigmoid(F.linear(xq, self.p(prefix + '.attn.gate')))
        elif form in ('local', 'strided'):
            o = local_attention(q, k, v, self.H, int(m['window']), causal, int(m.get('stride', 0)))
        elif form.startswith('linear:'):
            o = linear_attention(q, k, v, self.H, form[7:], causal)
        elif form == 'retention':
            o = retention(q, k, v, self.H, self.gammas(prefix, m), causal)
        elif form == 'linformer':
            o = linformer(q, k, v, self.H, self.p(prefix + '.linformer.E'), self.p(prefix + '.linformer.F'))
        elif form == 'gated':
            o = gated(xq, q, k, v, self.H, self.p(prefix + '.gate.weight'), self.p(prefix + '.gate.bias'))
        elif form == 'gla':
            o = gla(xq, q, k, v, self.H, self.p(prefix + '.gla.weight'), self.p(prefix + '.gla.bias'))
        elif form == 'mla':
            p = {n[len(prefix) + 5:]: self.p(n) for n in self.names if n.startswith(prefix + '.mla.')}
            o = mla(xq, self.H, p, int(self.meta.get('mla_rope_dim', '4')), causal, self.meta.get('mla_path') == 'absorbed')
        elif form == 'nsa':
            o = nsa(xq, q, k, v, self.H, self.p(prefix + '.nsa.weight'), self.p(prefix + '.nsa.bias'), int(m.get('nsa_block', '4')),
                    int(m.get('nsa_top', '2')), int(m.get('nsa_window', '8')), self.H // int(self.meta.get('kv_heads', self.H)),
                    {t: self.p(f'{prefix}.nsa.{t}') for t in ('pe', 'wk1', 'wk2', 'wv1', 'wv2')} if m.get('nsa_compress') == 'mlp' else None)
        elif form == 'dsa':
            p = {n[len(prefix) + 5:]: self.p(n) for n in self.names if n.startswith(prefix + '.dsa.')}
            o = dsa(xq, q, k, v, self.H, p, int(m.get('dsa_top_k', '16')), m.get('dsa_stage', 'sparse') != 'warmup')
        elif form in ('delta', 'gated-delta'):
            p = {n[len(prefix) + 7:]: self.p(n) for n in self.names if n.startswith(prefix + '.delta.')}
            o = delta_rule(xq, q, k, v, self.H, p, form == 'gated-delta')
        elif form == 'kda':
            p = {n[len(prefix) + 7:]: self.p(n) for n in self.names if n.startswith(prefix + '.delta.')}
            o = kda(xq, q, k, v, self.H, p)
        else:
            p = {n[len(prefix) + 7:]: self.p(n) for n in self.names if n.startswith(prefix + '.synth.')}
            o = synthesizer(form[6:], [s for s in m.get('synth_components', '').split(',') if s], p, xq, q, k, v, self.H, causal)
        o = self.hp(at('hook_z'), o, (n, self.H, hd))
        return self.lin(o, prefix, 'wo', 'bo')

    def sublayer(self, x, prefix, fn):
        """pre: x + f(LN(x)); post: LN(x + f(x))."""
        if self.norm == 'pre':
            return x + fn(self.ln(x, prefix + '.ln'))
        return self.ln(x + fn(x), prefix + '.ln')

    def ffn(self, x, prefix):
        """relu(x W1 + b1) W2 + b2, or SwiGLU: (silu(x W1) * x W3) W2."""
        if self.has(prefix + '.w3'):
            return self.lin(F.silu(self.lin(x, prefix, 'w1', 'b1')) * self.lin(x, prefix, 'w3', 'b3'), prefix, 'w2', 'b2')
        return self.lin(F.relu(self.lin(x, prefix, 'w1', 'b1')), prefix, 'w2', 'b2')

    def embed(self, tokens):
        if self.meta.get('positional') in ('none', 'rope', 'alibi'):
            return self.p('wte')[tokens]
        pos = self.p('wpe') if self.has('wpe') else self.sinusoid
        return self.p('wte')[tokens] + pos[:len(tokens)]

    def forward(self, tokens, source=None):
        """Logits (T, vocab) of one sequence (and its source for an encoder-decoder)."""
        if self.arch in ('gru', 'gru-attention'):
            return self.rnn_forward(tokens, source)
        enc = None
        if self.arch == 'encoder-decoder':
            e = self.embed(source)
            for l in range(self.layers):
                e = self.sublayer(e, f'enc.{l}.self', lambda y, l=l: self.attend(f'enc.{l}.self', y, y, False, False))
                e = self.sublayer(e, f'enc.{l}.ffn', lambda y, l=l: self.ffn(y, f'enc.{l}.ffn'))
            enc = self.ln(e, 'enc.lnf') if self.norm == 'pre' else e
        x = self.hp('hook_embed', self.embed(tokens))
        for l in range(self.layers):
            b = f'blocks.{l}.'
            x = self.hp(b + 'hook_resid_pre', x)
            x = self.sublayer(x, f'dec.{l}.self', lambda y, l=l, b=b: self.hp(b + 'hook_attn_out', self.attend(f'dec.{l}.self', y, y, True, False, l)))
            if enc is not None:
                x = self.sublayer(x, f'dec.{l}.cross', lambda y, l=l: self.attend(f'dec.{l}.cross', y, enc, False, True))
            x = self.hp(b + 'hook_resid_mid', x)
            x = self.sublayer(x, f'dec.{l}.ffn', lambda y, l=l, b=b: self.hp(b + 'hook_mlp_out', self.ffn(y, f'dec.{l}.ffn')))
            x = self.hp(b + 'hook_resid_post', x)
        if self.norm == 'pre':
            x = self.hp('ln_final.hook_normalized', self.ln(x, 'lnf'))
        return self.classify(x)

    def classify(self, x):
        # tied: the classifier is the embedding (tie_embeddings "1"); out.b only with biases
        return F.linear(x, self.p('wte') if self.meta.get('tie_embeddings') == '1' else self.p('out.w'),
                        self.p('out.b') if self.has('out.b') else None)

    def loss(self, batch):
        """Mean cross-entropy over the target tokens (-1 or mask 0: no loss)."""
        total, count = 0.0, 0
        for r, tokens in enumerate(batch['inputs']):
            src = torch.tensor(batch['source'][r]) if 'source' in batch else None
            logits = self.forward(torch.tensor(tokens), src)
            t = torch.tensor(batch['targets'][r])
            if 'mask' in batch:
                t = torch.where(torch.tensor(batch['mask'][r]) > 0, t, torch.full_like(t, -1))
            total = total + F.cross_entropy(logits, t, ignore_index=-1, reduction='sum')
            count += int((t >= 0).sum())
        return total / max(count, 1)

    def train_steps(self, batch, steps, lr, weight_decay=0.01, clip=1.0):
        """AdamW (betas 0.9, 0.98, eps 1e-8; decay on matrices but the embeddings and on trainable
        Synthesizer tensors, as the library does) with global-norm clipping."""
        decay, plain = [], []
        for n in self.names:
            fixed = '.synth.' in n and n.split('.')[-1].startswith('R') and self.layer_meta[int(n.split('.')[1])].get('synth_trainable') == '0'
            if fixed:
                self.p(n).requires_grad_(False)
                continue
            is_matrix = self.p(n).dim() >= 2 and n not in ('wte', 'wpe')
            (decay if is_matrix or '.synth.' in n else plain).append(self.p(n))
        opt = torch.optim.AdamW([{'params': decay, 'weight_decay': weight_decay}, {'params': plain, 'weight_decay': 0.0}],
                                lr=lr, betas=(0.9, 0.98), eps=1e-8)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = self.loss(batch)
            loss.backward()
            if clip > 0:
                torch.nn.utils.clip_grad_norm_([p for p in self.parameters() if p.requires_grad], clip)
            opt.step()
            losses.append(float(loss))
        self.meta['step'] = str(int(self.meta.get('step', '0')) + steps)
        return losses

    def save(self, path):
        write_safetensors(path, {k: v for k, v in self.meta.items() if k not in ('optimizer', 'data_rng')},
                          {n: self.p(n) for n in self.names})


# ---- llama2.c's format ----------------------------------------------------------------------------
# A llama in the manner of llama2.c's model.py and run.c, written apart from TinyTransformer so that
# it checks the library's reading and writing of the format (wasm/llama2c.js) rather than sharing it.

LLAMA_FIELDS = ('dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len')


def llama2c_read(path):
    """The header (a dict; 'shared' from the sign of vocab_size) and the weights of a legacy llama2.c file."""
    raw = open(path, 'rb').read()
    h = dict(zip(LLAMA_FIELDS, struct.unpack('<7i', raw[:28])))
    h['shared'] = h['vocab_size'] > 0
    h['vocab_size'] = abs(h['vocab_size'])
    x = torch.frombuffer(bytearray(raw[28:]), dtype=torch.float32)
    d, f, L, V, T = h['dim'], h['hidden_dim'], h['n_layers'], h['vocab_size'], h['seq_len']
    hd = d // h['n_heads']
    kv = hd * h['n_kv_heads']
    w, at = {}, 0
    for name, shape in (('emb', (V, d)), ('rms_att', (L, d)), ('wq', (L, d, d)), ('wk', (L, kv, d)), ('wv', (L, kv, d)),
                        ('wo', (L, d, d)), ('rms_ffn', (L, d)), ('w1', (L, f, d)), ('w2', (L, d, f)), ('w3', (L, f, d)),
                        ('rms_final', (d,)), ('freq_real', (T, hd // 2)), ('freq_imag', (T, hd // 2))) + \
            ((('wcls', (V, d)),) if not h['shared'] else ()):
        n = math.prod(shape)
        w[name] = x[at:at + n].reshape(shape)
        at += n
    if at != len(x):
        raise ValueError(f'{path}: {len(x)} floats after the header, the header needs {at}')
    if h['shared']:
        w['wcls'] = w['emb']
    return h, w


def llama2c_write(path, h, w):
    """Writes the legacy format: the header, then the tensors in run.c's order (freq_cis as export.py computes it)."""
    d, T, hd = h['dim'], h['seq_len'], h['dim'] // h['n_heads']
    freqs = 1.0 / (10000.0 ** (torch.arange(0, hd, 2)[: hd // 2].float() / hd))
    angles = torch.outer(torch.arange(T).float(), freqs)
    vocab = h['vocab_size'] if h['shared'] else -h['vocab_size']
    with open(path, 'wb') as out:
        out.write(struct.pack('<7i', d, h['hidden_dim'], h['n_layers'], h['n_heads'], h['n_kv_heads'], vocab, T))
        parts = [w[k] for k in ('emb', 'rms_att', 'wq', 'wk', 'wv', 'wo', 'rms_ffn', 'w1', 'w2', 'w3', 'rms_final')]
        parts += [torch.cos(angles), torch.sin(angles)] + ([] if h['shared'] else [w['wcls']])
        for t in parts:
            out.write(t.detach().contiguous().float().numpy().tobytes())


def llama2c_forward(h, w, tokens):
    """Logits (T, vocab) of one sequence: RMSNorm (eps 1e-5), rotary positions on adjacent pairs
    (2i, 2i+1) with base 10000, causal softmax attention with n_kv_heads shared by n_heads, SwiGLU."""
    d, H, KH = h['dim'], h['n_heads'], h['n_kv_heads']
    hd, n = d // H, len(tokens)
    rms = lambda x, g: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g
    freqs = 1.0 / (10000.0 ** (torch.arange(0, hd, 2)[: hd // 2].float() / hd))
    ang = torch.outer(torch.arange(n).float(), freqs)
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]

    def rotate(x):  # (n, heads, hd)
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)

    x = w['emb'][torch.tensor(tokens)]
    mask = torch.full((n, n), float('-inf')).triu(1)
    for l in range(h['n_layers']):
        xn = rms(x, w['rms_att'][l])
        q = rotate((xn @ w['wq'][l].T).view(n, H, hd))
        k = rotate((xn @ w['wk'][l].T).view(n, KH, hd)).repeat_interleave(H // KH, dim=1)
        v = (xn @ w['wv'][l].T).view(n, KH, hd).repeat_interleave(H // KH, dim=1)
        att = torch.softmax((q.transpose(0, 1) @ k.permute(1, 2, 0)) / math.sqrt(hd) + mask, -1)
        x = x + (att @ v.transpose(0, 1)).transpose(0, 1).reshape(n, d) @ w['wo'][l].T
        xn = rms(x, w['rms_ffn'][l])
        x = x + (F.silu(xn @ w['w1'][l].T) * (xn @ w['w3'][l].T)) @ w['w2'][l].T
    return rms(x, w['rms_final']) @ w['wcls'].T


def llama2c_tokenizer_read(path, vocab):
    raw = open(path, 'rb').read()
    at, pieces, scores = 4, [], []
    for _ in range(vocab):
        score, n = struct.unpack('<fi', raw[at:at + 8])
        pieces.append(raw[at + 8:at + 8 + n])
        scores.append(score)
        at += 8 + n
    return pieces, scores


def llama2c_encode(pieces, scores, text):
    """run.c's encode with BOS: the dummy prefix, UTF-8 characters or byte tokens, then best-score merges."""
    ids = {}
    for i in range(len(pieces) - 1, -1, -1):
        ids[pieces[i]] = i
    tokens = [1] + ([ids[b' ']] if text else [])
    b, i = text.encode('utf-8'), 0
    while i < len(b):
        j = i + 1
        while j < len(b) and (b[j] & 0xC0) == 0x80 and j - i < 4:
            j += 1
        if b[i:j] in ids:
            tokens.append(ids[b[i:j]])
        else:
            tokens += [c + 3 for c in b[i:j]]
        i = j
    while True:
        best, best_id, best_at = -1e10, -1, -1
        for i in range(len(tokens) - 1):
            t = ids.get(pieces[tokens[i]] + pieces[tokens[i + 1]])
            if t is not None and scores[t] > best:
                best, best_id, best_at = scores[t], t, i
        if best_at < 0:
            return tokens
        tokens[best_at:best_at + 2] = [best_id]


# A small tokenizer in llama2.c's layout: <unk>, <s>, </s>, the 256 byte pieces, then characters and
# English fragments whose scores rank their merges (longer fragments first).
FRAGMENTS = [' ', 'e', 't', 'a', 'o', 'n', 'i', 'h', 's', 'r', 'd', 'l', 'u', 'y', 'w', 'm', 'g', 'c', 'f', 'b', 'p', 'k',
             'v', '.', ',', '!', 'O', 'T', 'S', 'L', 'h', 'th', 'he', ' t', ' a', 'in', 'er', 'an', 'nd', ' s', 'ed', 'ou',
             ' the', 'the', ' w', ' h', 'as', 'ing', ' and', ' was', 'ay', 'ar', 'om', 'im', ' she', ' he', 'ily', ' Lily',
             'ce', ' Once', ' upon', 'up', 'on', ' time', 'ime', ' little', 'it', 'le', 'tt', 'ittle', ' day', ' play']


def llama2c_make(model_path, tok_path, dim, hidden, layers, heads, kv_heads, seq_len, seed, shared):
    torch.manual_seed(seed)
    pieces = ['<unk>', '\n<s>\n', '\n</s>\n'] + [f'<0x{b:02X}>' for b in range(256)]
    for p in FRAGMENTS:
        if p not in pieces:
            pieces.append(p)
    scores = [0.0] * 259 + [-float(i) if len(p) == 1 else float(len(p)) - i * 1e-3 for i, p in enumerate(pieces[259:])]
    with open(tok_path, 'wb') as out:
        enc = [p.encode('utf-8') for p in pieces]
        out.write(struct.pack('<i', max(len(e) for e in enc)))
        for e, sc in zip(enc, scores):
            out.write(struct.pack('<fi', sc, len(e)) + e)
    V, kv = len(pieces), dim // heads * kv_heads
    r = lambda *shape: torch.randn(*shape) * (1.0 / math.sqrt(dim))
    w = {'emb': r(V, dim), 'rms_att': 1 + 0.1 * torch.randn(layers, dim), 'wq': r(layers, dim, dim),
         'wk': r(layers, kv, dim), 'wv': r(layers, kv, dim), 'wo': r(layers, dim, dim),
         'rms_ffn': 1 + 0.1 * torch.randn(layers, dim), 'w1': r(layers, hidden, dim), 'w2': r(layers, dim, hidden),
         'w3': r(layers, hidden, dim), 'rms_final': 1 + 0.1 * torch.randn(dim), 'wcls': r(V, dim)}
    h = {'dim': dim, 'hidden_dim': hidden, 'n_layers': layers, 'n_heads': heads, 'n_kv_heads': kv_heads,
         'vocab_size': V, 'seq_len': seq_len, 'shared': shared}
    llama2c_write(model_path, h, w)


def llama2c_run(model_path, tok_path, text, steps):
    """The tokens of text (with BOS), the logits at every prompt position, and `steps` greedy tokens
    (stopping after BOS, as run.c does, or at seq_len)."""
    h, w = llama2c_read(model_path)
    tokens = llama2c_encode(*llama2c_tokenizer_read(tok_path, h['vocab_size']), text) if tok_path else json.loads(text)
    with torch.no_grad():
        logits = llama2c_forward(h, w, tokens)
        seq, greedy = list(tokens), []
        for _ in range(steps):
            if len(seq) > h['seq_len']:  # run.c's last token comes from position seq_len - 1
                break
            nxt = int(llama2c_forward(h, w, seq)[-1].argmax())
            greedy.append(nxt)
            if nxt == 1:
                break
            seq.append(nxt)
    return {'tokens': tokens, 'logits': logits.flatten().tolist(), 'greedy': greedy}


# ---- commands ----------------------------------------------------------------------------------

def load(path):
    meta, tensors = read_safetensors(path)
    return TinyTransformer(meta, tensors)


def check(cases_path):
    """For every case {checkpoint, tokens, source?, logits, batch, out}: the logits agree to 1e-4
    (max |a - b| / (1 + |b|)); then 3 training steps on the batch, the trained model's logits on
    the same tokens and its checkpoint written for the library to load and compare."""
    cases = json.load(open(cases_path))
    report = []
    for case in cases:
        model = load(case['checkpoint'])
        src = torch.tensor(case['source']) if case.get('source') else None
        with torch.no_grad():
            ours = model.forward(torch.tensor(case['tokens']), src)
        ref = torch.tensor(case['logits']).reshape(ours.shape)
        err = float(((ours - ref).abs() / (1 + ref.abs())).max())
        losses = model.train_steps(case['batch'], 3, 1e-3)
        with torch.no_grad():
            trained = model.forward(torch.tensor(case['tokens']), src)
        model.save(case['out'])
        report.append({'name': case['name'], 'logits_error': err, 'losses': losses, 'trained_logits': trained.flatten().tolist()})
    json.dump(report, sys.stdout)


def run_hooked(model, tokens, edits):
    """logits of tokens with edits: [(name, fn(x) -> x)] applied at their points (x of the point's
    shape), and the cache {name: activation} after the edits."""
    cache = {}

    def hook(name, x):
        for n, fn in edits:
            if n == name:
                x = fn(x)
        cache[name] = x.detach().clone()
        return x
    model.hook = hook
    try:
        with torch.no_grad():
            logits = model.forward(torch.tensor(tokens))
    finally:
        model.hook = None
    return logits, cache


def hooks(cases_path):
    """For every case {checkpoint, tokens, corrupted, ablate: [{layer, head, mode, positions?}],
    patch: [{name, positions?, heads?}] (from the corrupted input's cache)}: the clean cache, the
    ablated and the patched logits and the logit lens (layers, n, vocab), as the library computes
    them (src/model/hooks.c)."""
    out = []
    for case in json.load(open(cases_path)):
        model = load(case['checkpoint'])
        n = len(case['tokens'])
        logits, cache = run_hooked(model, case['tokens'], [])

        def ablate(a):
            def fn(z):  # (n, H, hd)
                z = z.clone()
                pos = a.get('positions', list(range(n)))
                fill = torch.zeros_like(z[0, a['head']]) if a['mode'] == 'zero' else z[:, a['head']].mean(0)
                z[pos, a['head']] = fill
                return z
            return (f"blocks.{a['layer']}.attn.hook_z", fn)
        ablated, _ = run_hooked(model, case['tokens'], [ablate(a) for a in case['ablate']])
        _, corrupt = run_hooked(model, case['corrupted'], [])

        def patch(p):
            def fn(x):
                x = x.clone()
                pos = p.get('positions', list(range(n)))
                if 'heads' in p:
                    for h in p['heads']:
                        x[pos, h] = corrupt[p['name']][pos, h]
                else:
                    x[pos] = corrupt[p['name']][pos]
                return x
            return (p['name'], fn)
        patched, _ = run_hooked(model, case['tokens'], [patch(p) for p in case['patch']])
        with torch.no_grad():
            lens = torch.stack([model.classify(model.ln(cache[f'blocks.{l}.hook_resid_post'], 'lnf')
                                               if model.norm == 'pre' else cache[f'blocks.{l}.hook_resid_post'])
                                for l in range(model.layers)])
        out.append({'name': case['name'], 'logits': logits.flatten().tolist(),
                    'cache': {k: v.flatten().tolist() for k, v in cache.items()},
                    'ablated': ablated.flatten().tolist(), 'patched': patched.flatten().tolist(),
                    'lens': lens.flatten().tolist()})
    json.dump(out, sys.stdout)


def main(argv):
    if len(argv) < 2 or argv[1] in ('-h', '--help'):
        print(__doc__)
        return 0
    cmd = argv[1]
    if cmd == 'check':
        check(argv[2])
    elif cmd == 'hooks':
        hooks(argv[2])
    elif cmd == 'logits':
        model = load(argv[2])
        tokens = torch.tensor(json.load(open(argv[3])))
        source = torch.tensor(json.load(open(argv[4]))) if len(argv) > 4 else None
        with torch.no_grad():
            print(json.dumps(model.forward(tokens, source).tolist()))
    elif cmd == 'train':
        model = load(argv[2])
        batch = json.load(open(argv[3]))
        steps = int(argv[argv.index('--steps') + 1]) if '--steps' in argv else 100
        lr = float(argv[argv.index('--lr') + 1]) if '--lr' in argv else 1e-3
        for s, loss in enumerate(model.train_steps(batch, steps, lr)):
            print(f'step {s + 1} loss {loss:.4f}')
        model.save(argv[4])
    elif cmd == 'llama2c-make':
        opt = lambda k, d: int(argv[argv.index(k) + 1]) if k in argv else d
        llama2c_make(argv[2], argv[3], opt('--dim', 32), opt('--hidden', 64), opt('--layers', 2), opt('--heads', 4),
                     opt('--kv-heads', 4), opt('--seq-len', 32), opt('--seed', 1), '--untied' not in argv)
    elif cmd == 'llama2c-run':
        tok = argv[3] if argv[3] != '-' else None
        steps = int(argv[argv.index('--steps') + 1]) if '--steps' in argv else 8
        print(json.dumps(llama2c_run(argv[2], tok, open(argv[4]).read(), steps)))
    else:
        print(f'unknown command {cmd}; see --help', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
