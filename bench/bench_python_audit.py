"""Benchmark: permcheck.audit from a pytest test against the hand-written in-process loop it replaces.

    PERMCHECK_BIN=build/permcheck PYTHONPATH=python .venv/bin/python3 -m pytest -s -q bench/bench_python_audit.py

(bench/run runs it and adds its rows to the table.) The layer: torch.nn.TransformerEncoderLayer(d_model=8,
nhead=2, dim_feedforward=16, dropout=0.0), batch_first False, in eval, 100 cases on n = 1..8 that hold.
- hand loop: what a permutation test in a model repository's pytest suite does, for 100 cases: draw n and x, one
  random permutation, two forward passes (L(P x) and L(x)), torch.allclose; under no_grad, in eval.
- permcheck.audit: everything it does by default counted (the binary's start, the connection, batched and
  stacked requests, the cases confirmed alone, re-asks of each violation candidate, the repeat check, the report
  written and removed).
`import torch` is in neither. The two run interleaved, REPEATS times each; medians are compared. Printed: both
times, the ratio (target <= 1), the same audit served one case per request (batch=None), and where permcheck's time goes (the layer's own forward passes, timed inside
them; permcheck's audit loop without them; the start, the report and the exit).
Never asserts a time: benchmarks measure, tests assert.
"""
import json
import os
import statistics
import time

import torch

import permcheck

REPEATS = int(os.environ.get("BENCH_REPEATS", "15"))
CASES = 100


class Timed(torch.nn.Module):
    """The layer, with the time of its forward passes added up (the wrapper's own cost is in that time)."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def forward(self, src):
        start = time.perf_counter()
        out = self.inner(src)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def hand_loop(layer, cases=CASES, seed=1):
    generator = torch.Generator().manual_seed(seed)
    holds = True
    with torch.no_grad():
        for _ in range(cases):
            n = int(torch.randint(1, 9, (1,), generator=generator))
            x = torch.randn(n, 1, 8, generator=generator)
            p = torch.randperm(n, generator=generator)
            holds &= torch.allclose(layer(x[p]), layer(x)[p], atol=1e-5)
    return holds


def permcheck_audit(layer, batch=256):
    return permcheck.audit(layer, axes=["n=1..8"], inputs=["src:n,1,8"], outputs=["y:n,1,8"], max_len=8,
                           cases=CASES, batch=batch)


def test_audit_against_the_hand_loop():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0).eval()
    timed = Timed(layer).eval()
    hand, audit, forward, loop, calls, single = [], [], [], [], [], []
    assert hand_loop(layer) and permcheck_audit(layer)  # warm: first calls of torch's kernels, the page cache
    for _ in range(REPEATS):
        start = time.perf_counter()
        assert hand_loop(layer)
        hand.append(time.perf_counter() - start)
        timed.seconds, timed.calls = 0.0, 0
        start = time.perf_counter()
        result = permcheck_audit(timed)
        audit.append(time.perf_counter() - start)
        assert result.verdict == "holds" and result.cases == CASES, result.explanation()
        forward.append(timed.seconds)
        calls.append(timed.calls)
        loop.append(result.record["details"]["audit"]["seconds"])
        start = time.perf_counter()
        assert permcheck_audit(layer, batch=None)
        single.append(time.perf_counter() - start)
    h, a = statistics.median(hand), statistics.median(audit)
    f, s = statistics.median(forward), statistics.median(loop)
    print()
    print("hand loop (100 cases, 200 forward passes): %.2f ms" % (h * 1e3))
    print("permcheck.audit (100 cases):               %.2f ms   ratio %.3f (target <= 1)" % (a * 1e3, a / h))
    print("  the layer's forward passes:               %.2f ms (%d calls: batches, and 10 cases confirmed alone)"
          % (f * 1e3, statistics.median(calls)))
    print("  permcheck's audit loop without them:      %.2f ms (requests, answers, checks, re-asks)" % ((s - f) * 1e3))
    print("  start, connection, report and exit:       %.2f ms" % ((a - s) * 1e3))
    one = statistics.median(single)
    print("permcheck.audit one case per request:      %.2f ms   ratio %.3f" % (one * 1e3, one / h))
    print("medians of %d interleaved runs each" % REPEATS)
    out = os.environ.get("BENCH_JSON")
    if out:  # bench/run's table
        with open(out, "w") as handle:
            json.dump({"benchmarks": [{"name": "PythonAudit_TransformerEncoderLayer/100 (floor: hand loop)",
                                       "time_s": a, "floor_s": h, "ratio": a / h, "target": 1.0,
                                       "real_time": a, "time_unit": "s"}]}, handle)
