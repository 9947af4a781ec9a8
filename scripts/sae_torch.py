#!/usr/bin/env python3
# sae_torch.py: the PyTorch twin of the TopK sparse autoencoder (src/sae/sae.c; Gao et al. 2024),
# for tests/node/sae-torch.test.js. Reads an SAE saved by sae.save() (safetensors, read by hand:
# Debian has no safetensors package), a batch of rows (raw little-endian float32) and the dead
# latents (a JSON list of 0/1), runs the forward and the loss in float64 with autograd, removes each
# decoder row's own component from its gradient, and prints { loss, fvu, aux, l0, grads } as JSON.
#   usage: sae_torch.py SAE.safetensors ROWS.f32 DEAD.json
import json
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, 'rb') as f:
        raw = f.read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop('__metadata__', {})
    tensors = {}
    for name, t in header.items():
        assert t['dtype'] == 'F32', name
        a, b = t['data_offsets']
        data = torch.frombuffer(bytearray(raw[8 + n + a:8 + n + b]), dtype=torch.float32)
        tensors[name] = data.reshape(t['shape']).to(torch.float64)
    return meta, tensors


def main(sae_path, rows_path, dead_path):
    meta, t = read_safetensors(sae_path)
    d, k, aux_k, coef = int(meta['d_in']), int(meta['k']), int(meta['aux_k']), float(meta['aux_coef'])
    with open(rows_path, 'rb') as f:
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).to(torch.float64).reshape(-1, d)
    with open(dead_path) as f:
        dead = torch.tensor(json.load(f), dtype=torch.bool)
    w_enc, b_enc, w_dec, b_pre = (t[n].clone().requires_grad_(True) for n in ('enc.w', 'enc.b', 'dec.w', 'b_pre'))

    # z = TopK(ReLU(W_enc (x - b_pre) + b_enc)); x^ = W_dec^T z + b_pre (dec.w holds W_dec^T's rows)
    pre = (x - b_pre) @ w_enc.T + b_enc
    relu = torch.relu(pre)
    vals, idx = torch.topk(relu, k, dim=-1)
    z = torch.zeros_like(relu).scatter(-1, idx, vals)
    xhat = z @ w_dec + b_pre
    denom = ((x - x.mean(0)) ** 2).sum()  # the batch's variance: a constant
    fvu = ((xhat - x) ** 2).sum() / denom
    aux = torch.zeros((), dtype=torch.float64)
    n_dead = int(dead.sum())
    if aux_k > 0 and n_dead > 0:
        # the top aux_k of the dead latents reconstruct the residual, held constant
        masked = torch.where(dead, relu, torch.full_like(relu, -1.0))
        a_vals, a_idx = torch.topk(masked, min(aux_k, n_dead), dim=-1)
        za = torch.zeros_like(relu).scatter(-1, a_idx, torch.clamp(a_vals, min=0))
        residual = (x - xhat).detach()
        aux = ((za @ w_dec - residual) ** 2).sum() / denom
    loss = fvu + coef * aux
    loss.backward()
    g_dec = w_dec.grad - (w_dec.grad * w_dec.detach()).sum(1, keepdim=True) * w_dec.detach()
    grads = {'enc.w': w_enc.grad, 'enc.b': b_enc.grad, 'dec.w': g_dec, 'b_pre': b_pre.grad}
    out = {'loss': loss.item(), 'fvu': fvu.item(), 'aux': aux.item(), 'l0': (z > 0).sum(1).double().mean().item(),
           'torch': torch.__version__, 'grads': {n: g.flatten().tolist() for n, g in grads.items()}}
    print(json.dumps(out))


if __name__ == '__main__':
    main(*sys.argv[1:4])
