#!/usr/bin/env python3
"""Records every request line it reads (to FILE, one line each, as read) and answers it: the golden tests of the
one-tensor shorthand's request stream (tests/golden/).

    record.py FILE MODE

identity    y = x (a sequence layer that holds)
sum         y = the sum of x's rows (a pooled layer that holds)
index-leak  y[i] = x[i] * (1 + 1e-3 i): not equivariant
weighted    y = the sum of x[i] * (1 + 1e-3 i): a pooled layer that is not invariant
"""
import json
import sys

path, mode = sys.argv[1], sys.argv[2]
with open(path, "w") as log:
    for line in sys.stdin:
        log.write(line if line.endswith("\n") else line + "\n")
        log.flush()
        request = json.loads(line)
        x = request["x"]
        if mode == "identity":
            y = x
        elif mode == "sum":
            y = [sum(column) for column in zip(*x)] if x else []
        elif mode == "index-leak":
            y = [[v * (1 + 1e-3 * i) for v in row] for i, row in enumerate(x)]
        elif mode == "weighted":
            y = [sum(v * (1 + 1e-3 * i) for i, v in enumerate(column)) for column in zip(*x)] if x else []
        else:
            raise SystemExit("record.py: unknown mode " + mode)
        print(json.dumps({"id": request["id"], "y": y}), flush=True)
