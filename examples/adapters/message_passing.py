#!/usr/bin/env python3
"""A permcheck adapter in plain Python for a signature audit: message passing over a graph, with a readout.

Inputs: node features x (nodes x d), edge_index (2 x edges: row 0 the source, row 1 the target of each edge, as
PyTorch Geometric writes it) and edge features edge_attr (edges x e). Each edge sends
m = relu(x[source] Wm + edge_attr We) to its target; a node sums (--aggr mean: averages, the mean over no
neighbours being 0; --aggr max: the elementwise maximum, 0 over none) what it receives, and
y[i] = tanh(x[i] Ws + aggregate[i] Wa). The readout g sums y over the nodes.

y is equivariant in the nodes (renumbering nodes renumbers y's rows) and invariant to the order of the edges; g
is invariant to both. Two broken variants, each caught by permcheck:
  --node-index   adds the node's index to its features: y depends on how the nodes are numbered (2 nodes show it);
  --edge-order   aggregates recurrently, reading the incoming messages in edge-list order (as an RNN or LSTM
                 aggregator does): the order of the edges matters (2 edges into one node show it).

    {"id": 7, "inputs": {"x": [[...], ...], "edge_index": [[0, 2], [1, 1]], "edge_attr": [[...], [...]]},
     "shapes": {"x": [3, 4], "edge_index": [2, 2], "edge_attr": [2, 3]}, "outputs": ["y", "g"]}
        ->  {"id": 7, "outputs": {"y": [[...], ...], "g": [...]}}

    permcheck audit --exec "python3 examples/adapters/message_passing.py" \\
        --axis nodes=1..8 --axis edges=0..16 --input x:nodes,4 \\
        --input edge_index:2,edges:index=nodes --input edge_attr:edges,3 --output y:nodes,4 --output g:4   # holds
    ... message_passing.py --node-index" ...     # violated: nodes, shrunk to 2 nodes
    ... message_passing.py --edge-order" ...     # violated: edges, shrunk to 2 edges
"""
import argparse
import json
import math
import random
import sys


def weights(rows, cols, seed):
    rng = random.Random(seed)
    return [[rng.gauss(0.0, 1.0 / math.sqrt(rows)) for _ in range(cols)] for _ in range(rows)]


def vecmat(v, w):
    return [sum(v[k] * w[k][j] for k in range(len(w))) for j in range(len(w[0]))]


def message_passing(x, edge_index, edge_attr, w, aggr, edge_order):
    nodes, width = len(x), len(w["s"][0])
    sources, targets = (edge_index[0], edge_index[1]) if edge_index else ([], [])
    incoming = [[] for _ in range(nodes)]  # messages to each node, in edge-list order
    for e, (src, dst) in enumerate(zip(sources, targets)):
        m = [a + b for a, b in zip(vecmat(x[src], w["m"]), vecmat(edge_attr[e], w["e"]))]
        incoming[dst].append([max(0.0, v) for v in m])
    y = []
    for i in range(nodes):
        msgs = incoming[i]
        if edge_order:  # a recurrent aggregator: h = tanh(h Wr + m), message after message
            agg = [0.0] * width
            for m in msgs:
                agg = [math.tanh(a + b) for a, b in zip(vecmat(agg, w["r"]), m)]
        elif not msgs:
            agg = [0.0] * width
        elif aggr == "max":
            agg = [max(m[c] for m in msgs) for c in range(width)]
        else:
            agg = [sum(m[c] for m in msgs) for c in range(width)]
            if aggr == "mean":
                agg = [a / len(msgs) for a in agg]
        y.append([math.tanh(a + b) for a, b in zip(vecmat(x[i], w["s"]), vecmat(agg, w["a"]))])
    g = [sum(row[c] for row in y) for c in range(width)]
    return y, g


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aggr", choices=["sum", "mean", "max"], default="sum", help="how a node aggregates")
    parser.add_argument("--node-index", action="store_true", help="add each node's index to its features")
    parser.add_argument("--edge-order", action="store_true", help="aggregate recurrently, in edge-list order")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights")
    args = parser.parse_args()

    cache = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            inputs, shapes = request["inputs"], request["shapes"]
            d, e = shapes["x"][1], shapes["edge_attr"][1]
            if (d, e) not in cache:
                cache[(d, e)] = {"m": weights(d, d, 5 * args.seed), "e": weights(e, d, 5 * args.seed + 1),
                                 "s": weights(d, d, 5 * args.seed + 2), "a": weights(d, d, 5 * args.seed + 3),
                                 "r": weights(d, d, 5 * args.seed + 4)}
            x = inputs["x"]
            if args.node_index:
                x = [[v + 0.25 * i for v in row] for i, row in enumerate(x)]
            y, g = message_passing(x, inputs["edge_index"], inputs["edge_attr"], cache[(d, e)], args.aggr,
                                   args.edge_order)
            answer = {"id": request["id"], "outputs": {"y": y, "g": g}}
        except Exception as e:  # an answer, not a crash: permcheck reports it with the request
            answer = {"id": request["id"], "error": repr(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
