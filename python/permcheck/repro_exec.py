# How a repro.py of an adapter program's finding asks, with the Python standard library alone: the adapter command
# started as the audit started it (/bin/sh -c, in the directory the audit ran in, or beside repro.py when that is
# gone; permcheck_adapter.py beside repro.py importable), the requests of requests.jsonl sent as JSON lines, each
# answer read back as {output: (shape, flat list of numbers)}. After the lines that define COMMANDS and DIRECTORY;
# permcheck copies this text into each repro.py it writes; it is not imported.
import atexit
import itertools
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "requests.jsonl")) as requests:
    REQUESTS = dict(zip(("x", "transformed"), (json.loads(line) for line in requests if line.strip())))
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


def ask(which, side):
    """The adapter's answer to x or to the transformed inputs (requests.jsonl's first and second line)."""
    process = started(which)
    request = dict(REQUESTS[side], id=next(ids))
    process.stdin.write(json.dumps(request) + "\n")
    process.stdin.flush()
    while True:
        line = process.stdout.readline()
        if not line:
            cannot_ask("the adapter %s exited without answering (exit status %s)" % (COMMANDS[which], process.poll()))
        answer = json.loads(line)
        if answer.get("id") == request["id"]:
            break
    if "error" in answer:  # not the finding: the adapter could not answer
        cannot_ask("the adapter answered an error: %s" % answer["error"])
    outputs = answer["outputs"] if "outputs" in answer else {"y": answer["y"]}
    return {name: flat(outputs[name]) for name in CASE["outputs"]}
