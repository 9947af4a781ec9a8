#!/usr/bin/env python3
"""torch_worker.py: native PyTorch (CPU, eager) as the yardstick of bench/torch.bench.js.

Reads one JSON command per line on stdin and answers one JSON line on stdout, so the bench can
interleave PyTorch's calls with the library's in one run. Every op times `reps` calls itself
(time.perf_counter) and answers the milliseconds per call:
  {"op": "threads", "n": 1}                           torch.set_num_threads(n)
  {"op": "matmul", "n": 256, "reps": 5}               C = A B, (n, n) float32
  {"op": "attention", "n": 512, "d": 64, "heads": 1, "causal": false, "reps": 3}
        softmax(Q K^T / sqrt(d_head)) V, the eager composition (matmul, softmax, matmul)
  {"op": "model", "vocab": 16, "dModel": 64, "heads": 4, "layers": 2, "batch": 16, "T": 32}
        builds the library's tiny Transformer (pre-norm decoder: embeddings + sinusoidal
        positions, causal multi-head attention with Wq, Wk, Wv, Wo, a ReLU FFN of 4 dModel, final
        LayerNorm, output layer), batched; answers its parameter count
  {"op": "train", "reps": 5, "seed": 1}               one step: a fresh reverse batch, forward,
        cross-entropy, backward, global-norm clip 1, AdamW (as the library's trainStep)
Debian's python3-torch is enough.
"""
import json
import math
import random
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)


def timed(fn, reps):
    fn()  # warm
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) * 1000.0 / reps


class Block(torch.nn.Module):
    def __init__(self, c, h, f):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = torch.nn.LayerNorm(c), torch.nn.LayerNorm(c)
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(c, c) for _ in range(4))
        self.ff1, self.ff2 = torch.nn.Linear(c, f), torch.nn.Linear(f, c)

    def forward(self, x):
        b, t, c = x.shape
        h, dh = self.h, c // self.h
        y = self.ln1(x)
        q = self.wq(y).view(b, t, h, dh).transpose(1, 2)
        k = self.wk(y).view(b, t, h, dh).transpose(1, 2)
        v = self.wv(y).view(b, t, h, dh).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float('-inf'))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.wo(o)
        return x + self.ff2(F.relu(self.ff1(self.ln2(x))))


class Tiny(torch.nn.Module):
    def __init__(self, vocab, c, h, layers, max_len):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, c)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, c, 2) * (-math.log(10000.0) / c))
        pe = torch.zeros(max_len, c)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer('pe', pe)
        self.blocks = torch.nn.ModuleList(Block(c, h, 4 * c) for _ in range(layers))
        self.lnf = torch.nn.LayerNorm(c)
        self.out = torch.nn.Linear(c, vocab)

    def forward(self, tokens):
        x = self.wte(tokens) + self.pe[: tokens.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.out(self.lnf(x))


state = {}


def reverse_batch(batch, t, vocab, rng):
    """The library's reverse task in spirit: symbols, a separator 0, the symbols reversed."""
    n = (t - 1) // 2
    inputs, targets = [], []
    for _ in range(batch):
        s = [rng.randrange(1, vocab) for _ in range(n)]
        seq = s + [0] + s[::-1]
        seq = (seq + [0] * (t + 1))[: t + 1]
        inputs.append(seq[:-1])
        targets.append([-1] * n + seq[n + 1:])
    return torch.tensor(inputs), torch.tensor(targets)


def handle(cmd):
    op = cmd['op']
    if op == 'threads':
        torch.set_num_threads(int(cmd['n']))
        return {'threads': torch.get_num_threads()}
    if op == 'matmul':
        n = cmd['n']
        a, b = torch.randn(n, n), torch.randn(n, n)
        return {'ms': timed(lambda: a @ b, cmd.get('reps', 3))}
    if op == 'attention':
        n, d, h = cmd['n'], cmd['d'], cmd.get('heads', 1)
        dh = d // h
        q, k, v = (torch.randn(h, n, dh) for _ in range(3))

        def run():
            s = q @ k.transpose(-1, -2) / math.sqrt(dh)
            if cmd.get('causal'):
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float('-inf'))
            return torch.softmax(s, dim=-1) @ v
        with torch.no_grad():
            return {'ms': timed(run, cmd.get('reps', 3))}
    if op == 'model':
        torch.manual_seed(1)
        m = Tiny(cmd['vocab'], cmd['dModel'], cmd['heads'], cmd['layers'], cmd['T'])
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
        state.update(model=m, opt=opt, cfg=cmd, rng=random.Random(1))
        return {'params': sum(p.numel() for p in m.parameters())}
    if op == 'train':
        m, opt, cfg, rng = state['model'], state['opt'], state['cfg'], state['rng']
        losses = []

        def step():
            x, y = reverse_batch(cfg['batch'], cfg['T'], cfg['vocab'], rng)
            opt.zero_grad()
            loss = F.cross_entropy(m(x).reshape(-1, cfg['vocab']), y.reshape(-1), ignore_index=-1)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            losses.append(float(loss))
        ms = timed(step, cmd.get('reps', 3))
        return {'ms': ms, 'loss': losses[-1]}
    raise ValueError(f'unknown op {op}')


for line in sys.stdin:
    try:
        answer = handle(json.loads(line))
    except Exception as e:  # answered, not raised: the bench prints it
        answer = {'error': str(e)}
    sys.stdout.write(json.dumps(answer) + '\n')
    sys.stdout.flush()
