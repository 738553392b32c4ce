#!/usr/bin/env python3
"""A permcheck adapter in plain Python for a signature audit: cross-attention, queries q read a memory mem.

Equivariant in the queries (permuting q permutes y), invariant to the order of the memory (permuting mem leaves y
alone). --memory-positions adds a position signal to the memory, as a decoder that numbers what it reads would:
then the order of the memory matters, and permcheck finds it with two memory items.

permcheck writes one request per line on stdin, every input as nested arrays in the order of its dims:
    {"id": 7, "inputs": {"q": [[...], ...], "mem": [[...], ...]}, "shapes": {"q": [3, 8], "mem": [2, 8]},
     "outputs": ["y"]}
and reads one answer per line on stdout, in order:
    {"id": 7, "outputs": {"y": [[...], ...]}}          or  {"id": 7, "error": "what went wrong"}

    permcheck audit --exec "python3 examples/adapters/cross_attention.py" \\
        --axis n=1..8 --axis m=1..8 --input q:n,8 --input mem:m,8 --output y:n,8                  # holds
    permcheck audit --exec "python3 examples/adapters/cross_attention.py --memory-positions" \\
        --axis n=1..8 --axis m=1..8 --input q:n,8 --input mem:m,8 --output y:n,8                  # violated, m = 2
"""
import argparse
import json
import math
import random
import sys


def weights(rows, cols, seed):
    rng = random.Random(seed)
    return [[rng.gauss(0.0, 1.0 / math.sqrt(rows)) for _ in range(cols)] for _ in range(rows)]


def matmul(x, w):
    return [[sum(row[k] * w[k][j] for k in range(len(w))) for j in range(len(w[0]))] for row in x]


def cross_attention(q, mem, wq, wk, wv):
    """y[i] = sum_j softmax_j(q[i] Wq . mem[j] Wk / sqrt(d)) mem[j] Wv: a sum over the memory, in any order."""
    qs, ks, vs = matmul(q, wq), matmul(mem, wk), matmul(mem, wv)
    scale = 1.0 / math.sqrt(len(wq[0]))
    out = []
    for qi in qs:
        scores = [scale * sum(a * b for a, b in zip(qi, k)) for k in ks]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        total = sum(e)
        out.append([sum(e[j] * vs[j][c] for j in range(len(vs))) / total for c in range(len(vs[0]))])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory-positions", action="store_true",
                        help="add a position signal to the memory: no longer invariant to its order")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights")
    args = parser.parse_args()

    cache = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            q, mem = request["inputs"]["q"], request["inputs"]["mem"]
            d = request["shapes"]["q"][1]
            if d not in cache:
                cache[d] = [weights(d, d, args.seed * 3 + k) for k in range(3)]
            if args.memory_positions:
                mem = [[v + 0.5 * math.sin(j + 1) for v in row] for j, row in enumerate(mem)]
            y = cross_attention(q, mem, *cache[d])
            answer = {"id": request["id"], "outputs": {"y": y}}
        except Exception as e:  # an answer, not a crash: permcheck reports it with the request
            answer = {"id": request["id"], "error": repr(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
