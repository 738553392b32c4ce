# How a repro.py of an adapter program's finding asks, with the Python standard library alone: the adapter command
# started as the audit started it (/bin/sh -c, in the directory the audit ran in, or beside repro.py when that is
# gone; permcheck_adapter.py beside repro.py importable), the requests of requests.jsonl sent as JSON lines, each
# answer read back as {output: (shape, flat list of numbers)} (a batched request's: the case's item, split from a
# stacked answer on CASE["batch_dims"]); an error answer raises LayerRaised. After the lines that define COMMANDS,
# DIRECTORY and CASE; permcheck copies this text into each repro.py it writes; it is not imported.
import atexit
import base64
import itertools
import struct
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "requests.jsonl")) as requests:
    REQUESTS = dict(zip(CASE["requests"], (json.loads(line) for line in requests if line.strip())))
if len(sys.argv) > 1:  # python3 repro.py "COMMAND": the same requests to another command (a fixed twin)
    COMMANDS["layer"] = sys.argv[1]
ids = itertools.count(1)
adapters = {}


def cannot_ask(message):
    """Exit 2: the adapter could not be asked (not the finding, which exits 1)."""
    sys.stderr.write("repro.py: %s\n" % message)
    sys.exit(2)


def started(which):
    """The adapter process of the layer (or the reference), started on first use."""
    if which not in adapters:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, environment.get("PYTHONPATH")) if p)
        directory = DIRECTORY if os.path.isdir(DIRECTORY) else HERE
        print("asking: %s (in %s)" % (COMMANDS[which], directory))
        adapters[which] = subprocess.Popen(["/bin/sh", "-c", COMMANDS[which]], cwd=directory, env=environment,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return adapters[which]


@atexit.register
def stopped():
    for process in adapters.values():
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def flat(value):
    """A nested list as (shape, flat list of numbers)."""
    if not isinstance(value, list):
        return [], [float(value)]
    if not value:
        return [0], []
    parts = [flat(v) for v in value]
    return [len(value)] + parts[0][0], [number for part in parts for number in part[1]]


def exchanged(which, name):
    """The adapter's answer object to request `name` of requests.jsonl."""
    process = started(which)
    request = dict(REQUESTS[name], id=next(ids))
    process.stdin.write(json.dumps(request) + "\n")
    process.stdin.flush()
    while True:
        line = process.stdout.readline()
        if not line:
            cannot_ask("the adapter %s exited without answering (exit status %s)" % (COMMANDS[which], process.poll()))
        answer = json.loads(line)
        if answer.get("id") == request["id"]:
            return answer


def outputs_of(answer):
    if "error" in answer:  # the layer raised: the finding when it is an exception, else it could not be asked
        raise LayerRaised(answer["error"])
    outputs = answer["outputs"] if "outputs" in answer else {"y": answer["y"]}
    return {name: flat(outputs[name]) for name in CASE["outputs"]}


def ask(which, side):
    """The adapter's answer to x, to the transformed inputs or to the earlier request (requests.jsonl's lines)."""
    return outputs_of(exchanged(which, side))


def item_of(encoded, shape, dim, at):
    """Item `at` of a stacked output (base64 of little-endian float64, row-major), split on its batch dim."""
    raw = base64.b64decode(encoded)
    values = struct.unpack("<%dd" % (len(raw) // 8), raw)
    outer = 1
    for size in shape[:dim]:
        outer *= size
    inner = 1
    for size in shape[dim + 1:]:
        inner *= size
    taken = []
    for o in range(outer):
        start = (o * shape[dim] + at) * inner
        taken.extend(values[start:start + inner])
    return list(shape[:dim]) + [1] + list(shape[dim + 1:]), taken


def ask_batch(which, k):
    """The answer to the case's item in the finding's batched request k, sent as the audit sent it."""
    batch = CASE["batches"][k]
    answer = exchanged(which, batch["request"])
    if "batch" in answer:  # item by item
        items = answer["batch"]
        if len(items) != batch["count"]:
            cannot_ask("the adapter answered %d items to a batch of %d" % (len(items), batch["count"]))
        return outputs_of(items[batch["at"]])
    if "error" in answer:
        raise LayerRaised(answer["error"])
    if not batch["stacked"]:
        cannot_ask("the adapter answered a batched request without its items")
    out = {}
    for name in CASE["outputs"]:
        dim = CASE["batch_dims"][name]
        shape = (answer.get("shapes") or {}).get(name)
        if shape is None:  # the shapes are optional: the item's, as the signature says, K items on the batch dim
            shape = list(batch["item_shapes"][name])
            shape[dim] = batch["count"]
        out[name] = item_of(answer["outputs"][name], shape, dim, batch["at"])
    return out
