#!/usr/bin/env python3
"""A permcheck adapter in plain Python for a signature audit: self-attention with a key padding mask.

The mask is an input like x (pad[j] true: position j is padding, as PyTorch's key_padding_mask), so permcheck
moves it with the tokens and the layer is equivariant: L(P x, P pad) = P L(x, pad). --fixed-padding ignores
which positions the mask names and pads the last k instead (k = how many it names), the mistake of a harness
that pads "the end": then the mask does not move with the tokens, and permcheck finds it. --no-scale drops the
1/sqrt(d) of the scores, as a kernel port may: still equivariant, but it no longer agrees with the original (the
agreement property, against this adapter without the flag as the reference implementation). --window K makes it a
causal sliding-window attention, query i attending to the keys i - K + 1 .. i (the window property).

    {"id": 7, "inputs": {"x": [[...], ...], "pad": [false, true, false]}, "shapes": {"x": [3, 8], "pad": [3]},
     "outputs": ["y"]}                                  ->  {"id": 7, "outputs": {"y": [[...], ...]}}

    permcheck audit --exec "python3 examples/adapters/masked_attention.py" \\
        --axis n=1..8 --input x:n,8 --input pad:n:mask --output y:n,8                              # holds
    permcheck audit --exec "python3 examples/adapters/masked_attention.py --fixed-padding" \\
        --axis n=1..8 --input x:n,8 --input pad:n:mask --output y:n,8                              # violated
    permcheck audit --exec "python3 examples/adapters/masked_attention.py --no-scale" \
        --reference-exec "python3 examples/adapters/masked_attention.py" --property agreement \
        --axis n=1..8 --input x:n,8 --input pad:n:mask --output y:n,8                              # violated
    permcheck audit --exec "python3 examples/adapters/masked_attention.py --window 4" --property window \
        --window 3 --axis n=1..8 --input x:n,8 --input pad:n:mask --output y:n,8                   # violated
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


def masked_attention(x, pad, wq, wk, wv, scaled=True, window=None):
    """Every query attends to the keys that are not padding (permcheck never pads every position), within its
    window when one is given; a query with no such key answers zeros."""
    q, k, v = matmul(x, wq), matmul(x, wk), matmul(x, wv)
    scale = 1.0 / math.sqrt(len(x[0])) if scaled else 1.0
    out = []
    for i, qi in enumerate(q):
        first = 0 if window is None else max(0, i - window + 1)
        last = len(x) - 1 if window is None else i
        keys = [j for j in range(first, last + 1) if not pad[j]]
        if not keys:
            out.append([0.0] * len(v[0]))
            continue
        scores = [scale * sum(a * b for a, b in zip(qi, k[j])) for j in keys]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        total = sum(e)
        out.append([sum(e[t] * v[j][c] for t, j in enumerate(keys)) / total for c in range(len(v[0]))])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixed-padding", action="store_true",
                        help="pad the last k positions, whatever the mask names: the mask no longer moves")
    parser.add_argument("--no-scale", action="store_true", help="leave out the scores' 1/sqrt(d), as a port may")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights")
    parser.add_argument("--window", type=int, default=None, help="a causal sliding window of K keys per query")
    args = parser.parse_args()

    cache = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            x, pad = request["inputs"]["x"], request["inputs"]["pad"]
            n, d = request["shapes"]["x"]
            if d not in cache:
                cache[d] = [weights(d, args.seed * 3 + k) for k in range(3)]
            if args.fixed_padding:
                padded = sum(1 for p in pad if p)
                pad = [j >= n - padded for j in range(n)]
            y = masked_attention(x, pad, *cache[d], scaled=not args.no_scale, window=args.window)
            answer = {"id": request["id"], "outputs": {"y": y}}
        except Exception as e:  # an answer, not a crash: permcheck reports it with the request
            answer = {"id": request["id"], "error": repr(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
