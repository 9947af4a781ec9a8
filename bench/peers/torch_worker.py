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
  {"op": "llama", "dim": 288, "hidden": 768, "layers": 6, "heads": 6, "kvHeads": 6, "vocab": 32000,
   "seqLen": 256, "prompt": 32, "tokens": 100}
        a llama of llama2.c's shape (RMSNorm, rotary positions, GQA, SwiGLU, tied classifier; random
        weights) generating greedily with a KV cache: answers ttftMs (the prompt in one batched
        forward, then the first token) and tokPerSec over the tokens after the first
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


class Llama:
    """A llama2.c-shaped decoder with a KV cache (eager PyTorch, as a user would write it)."""

    def __init__(self, c):
        torch.manual_seed(1)
        d, f, L, V = c['dim'], c['hidden'], c['layers'], c['vocab']
        self.H, self.KH, self.hd, self.T = c['heads'], c['kvHeads'], d // c['heads'], c['seqLen']
        kv = self.hd * self.KH
        r = lambda *shape: torch.randn(*shape) / math.sqrt(shape[-1])
        self.emb = r(V, d)
        self.layers = [dict(att=torch.ones(d), wq=r(d, d), wk=r(kv, d), wv=r(kv, d), wo=r(d, d), ffn=torch.ones(d),
                            w1=r(f, d), w2=r(d, f), w3=r(f, d)) for _ in range(L)]
        self.final = torch.ones(d)
        freqs = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        ang = torch.outer(torch.arange(self.T).float(), freqs)
        self.cos, self.sin = torch.cos(ang), torch.sin(ang)

    def rms(self, x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w

    def rope(self, x, p0):  # x (n, heads, hd)
        n = x.shape[0]
        c, s = self.cos[p0:p0 + n, None, :], self.sin[p0:p0 + n, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2)

    def forward(self, tokens, p0, cache):
        """Logits of the last position; appends this chunk's K, V to the cache."""
        n, H, KH, hd = len(tokens), self.H, self.KH, self.hd
        x = self.emb[tokens]
        for i, w in enumerate(self.layers):
            h = self.rms(x, w['att'])
            q = self.rope(F.linear(h, w['wq']).view(n, H, hd), p0)
            k = self.rope(F.linear(h, w['wk']).view(n, KH, hd), p0)
            v = F.linear(h, w['wv']).view(n, KH, hd)
            kc, vc = cache[i]
            kc[p0:p0 + n], vc[p0:p0 + n] = k, v
            K = kc[:p0 + n].repeat_interleave(H // KH, dim=1).transpose(0, 1)
            Vv = vc[:p0 + n].repeat_interleave(H // KH, dim=1).transpose(0, 1)
            s = q.transpose(0, 1) @ K.transpose(1, 2) / math.sqrt(hd)
            if n > 1:
                s = s + torch.full((n, p0 + n), float('-inf')).triu(p0 + 1)
            o = (torch.softmax(s, -1) @ Vv).transpose(0, 1).reshape(n, H * hd)
            x = x + F.linear(o, w['wo'])
            h = self.rms(x, w['ffn'])
            x = x + F.linear(F.silu(F.linear(h, w['w1'])) * F.linear(h, w['w3']), w['w2'])
        return F.linear(self.rms(x[-1:], self.final), self.emb)  # nn.Linear's x W^T, no transposed copy

    def generate(self, prompt, count):
        cache = [(torch.zeros(self.T, self.KH, self.hd), torch.zeros(self.T, self.KH, self.hd)) for _ in self.layers]
        t0 = time.perf_counter()
        tok = int(self.forward(torch.tensor(prompt), 0, cache).argmax())
        t1 = time.perf_counter()
        for i in range(count - 1):
            tok = int(self.forward(torch.tensor([tok]), len(prompt) + i, cache).argmax())
        t2 = time.perf_counter()
        return (t1 - t0) * 1000.0, (count - 1) / (t2 - t1)


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
    if op == 'train-forward':  # the step's forward alone: a batch, the model, the loss (no graph kept)
        m, cfg, rng = state['model'], state['cfg'], state['rng']

        def forward():
            x, y = reverse_batch(cfg['batch'], cfg['T'], cfg['vocab'], rng)
            with torch.no_grad():
                F.cross_entropy(m(x).reshape(-1, cfg['vocab']), y.reshape(-1), ignore_index=-1)
        return {'ms': timed(forward, cmd.get('reps', 3))}
    if op == 'llama':
        if 'llama' not in state or state.get('llama_cfg') != {k: v for k, v in cmd.items() if k != 'op'}:
            state.update(llama=Llama(cmd), llama_cfg={k: v for k, v in cmd.items() if k != 'op'})
        prompt = [1 + (i * 7919) % (cmd['vocab'] - 1) for i in range(cmd['prompt'])]
        with torch.no_grad():
            state['llama'].generate(prompt, 4)  # warm
            ttft, tps = state['llama'].generate(prompt, cmd['tokens'])
        return {'ttftMs': ttft, 'tokPerSec': tps}
    raise ValueError(f'unknown op {op}')


for line in sys.stdin:
    try:
        answer = handle(json.loads(line))
    except Exception as e:  # answered, not raised: the bench prints it
        answer = {'error': str(e)}
    sys.stdout.write(json.dumps(answer) + '\n')
    sys.stdout.flush()
