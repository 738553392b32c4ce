#!/usr/bin/env python3
"""A pooled layer speaking permcheck's line protocol: `mean` (invariant) or `first` (not)."""
import json
import sys

kind = sys.argv[1]
for line in sys.stdin:
    request = json.loads(line)
    x = request["x"]
    if kind == "mean":
        y = [sum(row[j] for row in x) / len(x) for j in range(len(x[0]))]
    else:
        y = list(x[0])
    print(json.dumps({"id": request["id"], "y": y}), flush=True)
