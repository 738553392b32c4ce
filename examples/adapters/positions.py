#!/usr/bin/env python3
"""Small causal-LM-like torch layers with a position signal, for position-aware audits.

    positions.py MODEL [DTYPE]

Every model takes forward(ids, pos, keep): token ids (int64, n), position ids (int64, n) and an attention mask
(int64, n; 1 = a real token, 0 = padding), and returns y (n, 8): one self-attention layer over token embeddings.

    rope           rotary embeddings on q and k from the position ids (relative: shift holds), keys masked
    learned        a learned absolute position table added to the embeddings (shift violated at c = 1)
    sinusoidal     sinusoidal absolute positions added to the embeddings (shift violated)
    alibi          ALiBi: a bias -slope * |i - j| from the position ids (relative)
    rope-arange    rotary embeddings from arange(n), ignoring the position ids (order by another route)
    rope-nomask    rope without the key mask (padding leaks)
    rope-causal    rope with a causal mask by row index, combined with the key mask as decoders do (a query
                   that sees no real key attends uniformly): causal; packed sequences see each other
    rope-packed    rope-causal within each packed sequence only (a sequence starts where its position id is 0)
    rope-cached    rope-causal that decodes in chunks: forward(ids, pos, keep, past) takes the keys and values of
                   the tokens before (keep then covers them too) and returns them as "past"
    rope-cached-restart
                   rope-cached whose new tokens are rotated at 0, 1, ... instead of at their position ids

Audit with, for example:
    permcheck audit --exec "python3 examples/adapters/positions.py rope float32" --dtype float32 \\
        --axis n=1..8 --input ids:n:token=50 --input pos:n:position --input keep:n:mask=keep --output y:n,8 \\
        --property shift
"""
import math
import sys

import torch

from permcheck_adapter import serve

D, VOCAB, TABLE = 8, 50, 4096


def rotate(x, pos):
    """Rotary embedding of x (n, D) at the given positions, written the common way (angles in x's dtype)."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=x.dtype) / D))
    angles = pos.to(x.dtype)[:, None] * inv_freq[None, :]
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = x1 * cos - x2 * sin
    out[:, 1::2] = x1 * sin + x2 * cos
    return out


class Layer(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.embed = torch.nn.Embedding(VOCAB, D)
        self.q = torch.nn.Linear(D, D, bias=False)
        self.k = torch.nn.Linear(D, D, bias=False)
        self.v = torch.nn.Linear(D, D, bias=False)
        self.table = torch.nn.Embedding(TABLE, D)

    def forward(self, ids, pos, keep, past=None):
        if self.model.startswith("rope-cached"):
            return self.cached(ids, pos, keep, past)
        h = self.embed(ids)
        if self.model == "learned":
            h = h + self.table(pos)
        if self.model == "sinusoidal":
            freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=h.dtype) / D))
            angles = pos.to(h.dtype)[:, None] * freq[None, :]
            h = h + torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(h.shape)
        q, k, v = self.q(h), self.k(h), self.v(h)
        if self.model.startswith("rope"):
            where = torch.arange(len(ids)) if self.model == "rope-arange" else pos
            q, k = rotate(q, where), rotate(k, where)
        scores = q @ k.T / math.sqrt(D)
        if self.model == "alibi":
            scores = scores - 0.5 * (pos[:, None] - pos[None, :]).abs().to(scores.dtype)
        if self.model in ("rope-causal", "rope-packed"):
            n = len(ids)
            allowed = torch.ones(n, n, dtype=torch.bool).tril() & (keep[None, :] != 0)
            if self.model == "rope-packed":  # the same sequence: as many position ids 0 up to i as up to j
                sequence = (pos == 0).cumsum(0)
                allowed = allowed & (sequence[:, None] == sequence[None, :])
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        elif self.model != "rope-nomask":
            scores = scores.masked_fill(keep[None, :] == 0, float("-inf"))
        return {"y": scores.softmax(dim=-1) @ v}

    def cached(self, ids, pos, keep, past):
        """Causal attention over the cached keys and this chunk's; keep covers both."""
        n, before = len(ids), 0 if past is None else past[0].shape[0]
        where = torch.arange(n) if self.model == "rope-cached-restart" else pos
        h = self.embed(ids)
        q, k, v = rotate(self.q(h), where), rotate(self.k(h), where), self.v(h)
        if past is not None:
            k, v = torch.cat([past[0], k]), torch.cat([past[1], v])
        scores = q @ k.T / math.sqrt(D)
        allowed = torch.ones(n, before + n, dtype=torch.bool).tril(diagonal=before) & (keep[None, :] != 0)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        return {"y": scores.softmax(dim=-1) @ v, "past": (k, v)}


if __name__ == "__main__":
    torch.manual_seed(0)
    dtype = getattr(torch, sys.argv[2]) if len(sys.argv) > 2 else torch.float64
    cached = sys.argv[1].startswith("rope-cached")
    serve(Layer(sys.argv[1]).to(dtype).eval(), dtype=dtype, cache="past" if cached else None,
          cumulative=["keep"] if cached else None)
