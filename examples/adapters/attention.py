#!/usr/bin/env python3
"""A complete permcheck adapter in plain Python: single-head self-attention, optionally causal or mean-pooled.

permcheck starts this program once and writes one JSON request per line on its stdin:
    {"id": 7, "x": [[0.5, -1.0], [2.0, 0.25]]}        n rows (positions) of d numbers (features)
and reads one answer per line on its stdout, in order:
    {"id": 7, "y": [[...], [...]]}                      sequence layer: n rows, any width
    {"id": 7, "y": [...]}                               pooled layer: one vector
    {"id": 7, "error": "what went wrong"}
Logs go to stderr; stdout carries only answers. The program exits at end of input.

    permcheck audit --exec "python3 examples/adapters/attention.py" --dim 4                      # holds
    permcheck audit --exec "python3 examples/adapters/attention.py --causal" --dim 4             # violated
    permcheck audit --exec "python3 examples/adapters/attention.py --pool mean" --dim 4 --output pooled
"""
import argparse
import json
import math
import random
import sys


def weights(d, seed):
    rng = random.Random(seed)
    return [[rng.gauss(0.0, 1.0 / math.sqrt(d)) for _ in range(d)] for _ in range(d)]


def matmul(x, w):
    return [[sum(row[k] * w[k][j] for k in range(len(w))) for j in range(len(w[0]))] for row in x]


def attention(x, wq, wk, wv, causal):
    q, k, v = matmul(x, wq), matmul(x, wk), matmul(x, wv)
    n, scale = len(x), 1.0 / math.sqrt(len(x[0]))
    out = []
    for i in range(n):
        keys = range(i + 1) if causal else range(n)
        scores = [scale * sum(a * b for a, b in zip(q[i], k[j])) for j in keys]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        total = sum(e)
        out.append([sum(e[t] * v[j][c] for t, j in enumerate(keys)) / total for c in range(len(v[0]))])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--causal", action="store_true", help="mask the future: no longer equivariant")
    parser.add_argument("--pool", choices=["none", "mean"], default="none", help="mean over positions at the end")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights")
    args = parser.parse_args()

    cache = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            x = request["x"]
            d = len(x[0])
            if d not in cache:
                cache[d] = [weights(d, args.seed * 3 + k) for k in range(3)]
            y = attention(x, *cache[d], args.causal)
            if args.pool == "mean":
                y = [sum(row[c] for row in y) / len(y) for c in range(len(y[0]))]
            answer = {"id": request["id"], "y": y}
        except Exception as e:  # an answer, not a crash: permcheck reports it with the request
            answer = {"id": request["id"], "error": repr(e)}
        # json writes floats with repr: the shortest string that reads back to the same double.
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
