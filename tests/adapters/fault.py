#!/usr/bin/env python3
"""Adapters that misbehave on purpose, one MODE each, for tests/test_exec_adapter.cpp and
tests/test_audit_cli.cpp (and the ctest scripts that audit through it).

    fault.py MODE [K]

identity   answers y = x (equivariant)           crash K    answers K requests, then exits with status 3
hang K     answers K requests, then hangs (a     garbage K  answers K requests, then prints a non-JSON line
           child process hangs with it)          few-rows   answers one row fewer (or more) than asked
nan        y = x, NaN where x > 4                exit       exits at once, reading nothing
noisy      y = x + random noise (dropout-like)   error      answers {"error": ...}
wrong-id   answers with id + 1                   long K     answers with a line of K bytes
index-leak y[i] = x[i] * (1 + 1e-3 i): not equivariant
float32    y = x - mean(x) in float32, summed in index order: equivariant up to float32 rounding
batch      answers [y] (a batch dimension kept)   string   answers "y": "oops"
slow-start K  sleeps K seconds before its first answer, then answers y = x
slow K     y = x after K ms per request; writes its pid to $FAULT_PID_FILE when set (tests of Ctrl-C)
batched K  announces "batch": K in its first answer and answers batched requests item by item: y = x, but
           {"error": "boom at 99"} for an item whose first value is 99 and y = x plus a leak at position 4 and on
           for an item of n >= 6 (a violation only the batched answers show)
batched-short K  the same, answering every batched request with one item fewer
stacked K  the named form, x in and y out: announces "batch": K and "stacked": true in its first answer (y = x);
           a stacked request is answered stacked with y = x + 1000 k for the item at position k of the batch dim,
           item by item ({"error": "boom in item k"} each) when some value is 99, and with one value too few when
           some value is 77
stacked-hang K  the same announcement; stacked requests answered with y = x, but the K-th hangs (with a child)
taps-hang  y[i] = x[i] * (1 + 1e-3 i) (index-leak), offering taps in every answer; a tap request hangs (with a child)
taps-dup   index-leak, offering two taps both named "block": the first y = x (equivariant), the second the leak
taps-many K  index-leak, offering K taps "layer.0" ... (y = x each) but the leak at layer.(K // 2)
taps-fixed K  index-leak with a tap "block" (the leak), refusing ({"error": ...}) any request whose n is not K
identity, nan, noisy, index-leak and error also answer the named form (--input x:n,D --output y:n,D): y of x as above.
tiny       the named form over token ids: y (n, 3) all 1e-3, whatever the ids and positions
$FAULT_PID_FILE, when set, gets a line with the pid of each process started (every mode).
"""
import base64
import struct
import json
import os
import random
import subprocess
import sys
import time

mode = sys.argv[1]
k = int(sys.argv[2]) if len(sys.argv) > 2 else 0

if mode == "exit":
    sys.exit(0)
if os.environ.get("FAULT_PID_FILE"):
    with open(os.environ["FAULT_PID_FILE"], "a") as pid_file:
        pid_file.write("%d\n" % os.getpid())


def hang():
    subprocess.Popen(["sleep", "1000"])  # a grandchild: the whole process group must be killed
    time.sleep(1000)


def leak(x):
    return [[v * (1 + 1e-3 * i) for v in row] for i, row in enumerate(x)]


def tap(name, value):
    return {"name": name, "shape": [len(value), len(value[0]) if value else 0], "values": value}


def taps_of(x):
    if mode == "taps-hang":
        hang()
    if mode == "taps-dup":
        return [tap("block", x), tap("block", leak(x))]
    if mode == "taps-fixed":
        return [tap("block", leak(x))]
    return [tap("layer.%d" % j, leak(x) if j == k // 2 else x) for j in range(k)]



def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def centered_float32(x):
    sums = [0.0] * len(x[0])
    for row in x:
        sums = [f32(s + f32(v)) for s, v in zip(sums, row)]
    mean = [f32(s / len(x)) for s in sums]
    return [[f32(f32(v) - m) for v, m in zip(row, mean)] for row in x]


def batched_item(item):
    x = item["x"]
    if x and x[0] and x[0][0] == 99:
        return {"error": "boom at 99"}
    return {"y": [[v * (2 if i >= 4 and len(x) >= 6 else 1) for v in row] for i, row in enumerate(x)]}


def stacked_answer(request):
    dim, shape = request["batch_dims"]["x"], request["shapes"]["x"]
    raw = base64.b64decode(request["inputs"]["x"], validate=True)
    x = struct.unpack("<%dd" % (len(raw) // 8), raw)
    count = shape[dim]
    if 99 in x:
        return {"id": request["id"], "batch": [{"error": "boom in item %d" % k} for k in range(count)]}
    outer = inner = 1
    for d, size in enumerate(shape):
        if d < dim:
            outer *= size
        elif d > dim:
            inner *= size
    y = [x[(o * count + k) * inner + i] + 1000 * k for o in range(outer) for k in range(count) for i in range(inner)]
    if 77 in x:
        y = y[:-1]
    data = base64.b64encode(struct.pack("<%dd" % len(y), *y)).decode("ascii")
    return {"id": request["id"], "outputs": {"y": data}, "shapes": {"y": shape}}


answered = 0
stacked_requests = 0
for line in sys.stdin:
    request = json.loads(line)
    if "inputs" in request and mode == "tiny":  # outputs of 1e-3, three a token: no position-id rounding fits
        ids = request["inputs"]["ids"]
        sys.stdout.write(json.dumps({"id": request["id"], "outputs": {"y": [[1e-3] * 3 for _ in ids]}}) + "\n")
        sys.stdout.flush()
        continue
    if "inputs" in request and mode in ("identity", "nan", "noisy", "index-leak", "error"):
        x = request["inputs"]["x"]  # the named form, x in and y out: the mode's y of x
        y = {"identity": lambda: x, "index-leak": lambda: leak(x),
             "nan": lambda: [[float("nan") if v > 4 else v for v in row] for row in x],
             "noisy": lambda: [[v + random.uniform(-1e-3, 1e-3) for v in row] for row in x],
             "error": lambda: None}[mode]()
        answer = {"id": request["id"], "error": "model not loaded"} if y is None else {"id": request["id"], "outputs": {"y": y}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        continue
    if mode.startswith("taps-"):
        answer = {"id": request["id"], "y": leak(request["x"]), "taps_offered": True}
        if mode == "taps-fixed" and len(request["x"]) != k:
            answer = {"id": request["id"], "error": "this layer takes n = %d only" % k}
        elif request.get("taps"):
            answer["taps"] = taps_of(request["x"])
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        continue
    if mode == "stacked-hang":
        if "stacked" in request:
            stacked_requests += 1
            if stacked_requests == k:
                hang()
            answer = {"id": request["id"], "outputs": {"y": request["inputs"]["x"]}, "shapes": {"y": request["shapes"]["x"]}}
        else:
            answer = {"id": request["id"], "outputs": {"y": request["inputs"]["x"]}, "batch": 8, "stacked": True}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        continue
    if mode == "stacked":
        answer = stacked_answer(request) if "stacked" in request else {
            "id": request["id"], "outputs": {"y": request["inputs"]["x"]}, "batch": k, "stacked": True}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        continue
    if mode.startswith("batched") and "batch" in request:
        items = [batched_item(item) for item in request["batch"]]
        sys.stdout.write(json.dumps({"id": request["id"], "batch": items[1:] if mode == "batched-short" else items}) + "\n")
        sys.stdout.flush()
        continue
    if mode.startswith("batched"):
        sys.stdout.write(json.dumps({"id": request["id"], "y": request["x"], "batch": k}) + "\n")
        sys.stdout.flush()
        continue
    rid, x = request["id"], request["x"]
    if mode == "crash" and answered == k:
        print("fault.py: crashing on purpose", file=sys.stderr)
        sys.exit(3)
    if mode == "hang" and answered == k:
        hang()
    if mode == "garbage" and answered == k:
        print("Loading weights... done")
        sys.stdout.flush()
        continue
    if mode == "long":
        sys.stdout.write('{"id": %d, "y": [[%s]]}\n' % (rid, "0" * k))
        sys.stdout.flush()
        answered += 1
        continue
    if mode == "slow":
        time.sleep(k / 1000)
    y = [row[:] for row in x]
    if mode == "few-rows":
        y = y[:-1] if len(y) > 1 else y + y
    elif mode == "nan":
        y = [[float("nan") if v > 4 else v for v in row] for row in y]
    elif mode == "noisy":
        y = [[v + random.uniform(-1e-3, 1e-3) for v in row] for row in y]
    elif mode == "index-leak":
        y = [[v * (1 + 1e-3 * i) for v in row] for i, row in enumerate(y)]
    elif mode == "float32":
        y = centered_float32(x)
    elif mode == "batch":
        y = [y]
    elif mode == "string":
        y = "oops"
    elif mode == "slow-start" and answered == 0:
        time.sleep(k)
    answer = {"id": rid + 1 if mode == "wrong-id" else rid, "y": y}
    if mode == "error":
        answer = {"id": rid, "error": "model not loaded"}
    sys.stdout.write(json.dumps(answer) + "\n")  # NaN is written as the bare token NaN
    sys.stdout.flush()
    answered += 1
