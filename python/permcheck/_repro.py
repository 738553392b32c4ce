"""A reproduction without permcheck: repro.py beside a report that found something, for a layer served from this
process. It holds the case's inputs written out (x and the transformed inputs, every index already renumbered),
loads the layer saved beside it (module.pt: the module as audited, when it pickles; else its state_dict and a marked
line to fill in), calls it as the audit did, compares as the property does with the report's tolerance, prints the
difference and ends in an assert: it exits non-zero while the bug is there and 0 once it is fixed. It imports torch
(for a torch layer) and the Python standard library, never permcheck."""

import inspect
import io
import json
import os
import sys

# The largest module.pt written: a module above it is saved as its state_dict (its weights) instead, and the repro
# asks for the one line that builds it.
MODULE_CAP_BYTES = 256 * 1024 * 1024

_FINDINGS = ("violated", "non-finite", "nondeterministic", "batch-dependent", "history-dependent")
_ASKS = 5  # a nondeterministic finding: how many times the repro asks x
_COMPARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "repro_compare.py")


def supported(record):
    """Whether a repro can be written for this report's finding (and why not, when not)."""
    verdict = record.get("verdict")
    if verdict not in _FINDINGS:
        return False, "the verdict %s is not a finding a repro reproduces" % verdict
    c = record.get("counterexample")
    if not c or not record.get("signature"):
        return False, "the report holds no counterexample of a signature"
    if verdict == "history-dependent" and not c.get("asked_before"):
        return False, "the report does not hold the request after which x's answer changed"
    if verdict == "batch-dependent" and not c.get("batches"):
        return False, ("the report does not hold the batched requests the case was answered in (a batch of more "
                       "than a million numbers is not recorded)")
    if verdict in ("nondeterministic", "history-dependent", "batch-dependent") or c.get("raised"):
        return True, ""
    if not all("repro" in o for o in c.get("outputs", {}).values()):
        return False, "the report does not say how its outputs are compared"
    if "transformed" not in c and not (c.get("cuts") or {}).get("chunked"):
        return False, "the report did not record the transformed inputs"
    return True, ""


def write(directory, record, layer, dtype, call, reference=None, reference_call=None):
    """Writes repro.py (and module.pt or state_dict.pt, reference.pt) into `directory` for the report's finding;
    returns its path, or None (with the reason in the record's view) when none can be written."""
    ok, _ = supported(record)
    if not ok:
        return None
    torch = sys.modules.get("torch")
    is_module = torch is not None and isinstance(layer, torch.nn.Module)
    if not is_module and not callable(layer):
        return None
    if record.get("property") == "agreement" and reference is None and record["verdict"] != "nondeterministic":
        return None
    parts = [_header(record, layer, torch)]
    parts.append(_loaded("layer", layer, dtype, directory, torch))
    if record.get("property") == "agreement" and reference is not None:
        parts.append(_loaded("reference", reference, dtype, directory, torch))
    agreement = record.get("property") == "agreement"
    parts.append(_data(record, call, reference_call if agreement else None))
    parts.append(_BODY)
    parts.append(compare_text())
    path = os.path.join(directory, "repro.py")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return path


def name_in_reports(directory):
    """report.json names the repro ("repro": "repro.py"), and report.md and report.html name it first, under their
    title, as permcheck writes them for an adapter program's finding."""
    record_path = os.path.join(directory, "report.json")
    if os.path.exists(record_path):
        with open(record_path) as f:
            record = json.load(f)
        record["repro"] = "repro.py"
        with open(record_path, "w") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
    md = os.path.join(directory, "report.md")
    if os.path.exists(md):
        with open(md) as f:
            lines = f.read().split("\n")
        lines[1:1] = ["", "**Reproduce without permcheck:** `python3 repro.py` (beside this report; it exits 1 while "
                          "the bug is there)."]
        with open(md, "w") as f:
            f.write("\n".join(lines))
    html = os.path.join(directory, "report.html")
    if os.path.exists(html):
        with open(html) as f:
            text = f.read()
        at = text.find("</h1>")
        if at >= 0:
            at += len("</h1>")
            text = (text[:at] + '\n<p class="note"><b>Reproduce without permcheck:</b> <code>python3 repro.py</code> '
                    "(beside this report; it exits 1 while the bug is there).</p>" + text[at:])
            with open(html, "w") as f:
                f.write(text)


def _header(record, layer, torch):
    c = record["counterexample"]
    versions = ["python %d.%d" % sys.version_info[:2]]
    if torch is not None:
        versions.append("torch %s" % torch.__version__)
    package = type(layer).__module__.split(".")[0] if not inspect.isfunction(layer) else layer.__module__.split(".")[0]
    if package not in ("torch", "__main__", "builtins") and package in sys.modules:
        version = getattr(sys.modules[package], "__version__", None)
        if version:
            versions.append("%s %s" % (package, version))
    return '''#!/usr/bin/env python3
"""Reproduces a finding of permcheck without permcheck: %(layer)s, %(property)s %(verdict)s.

Run: python3 repro.py   (exits 1 while the bug is there, 0 once it is fixed)
Made with %(versions)s; the audit's seed %(seed)s, case %(case)s, lengths %(lengths)s.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
''' % dict(layer=record.get("layer"), property=record.get("property"), verdict=record.get("verdict"),
           versions=", ".join(versions), seed=record.get("seed"), case=c.get("case_index"),
           lengths=", ".join("%s=%s" % kv for kv in sorted(c.get("lengths", {}).items())))


def _standalone(cls):
    """Whether a class or function loads by reference in a process without permcheck: defined at a module's top
    level, outside __main__, in a module that does not itself import permcheck."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    if module is None or module.__name__ == "__main__" or "<locals>" in getattr(cls, "__qualname__", "<locals>"):
        return False
    for value in vars(module).values():
        name = getattr(value, "__module__", None) if not inspect.ismodule(value) else value.__name__
        if isinstance(name, str) and (name == "permcheck" or name.startswith("permcheck.")):
            return False
    return True


def _source_dir(cls):
    """The directory to put on sys.path for the class's module, when it is not an installed package's."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if not path or "-packages" in path:
        return None
    directory = os.path.dirname(os.path.abspath(path))
    for _ in getattr(module, "__name__", "").split(".")[1:]:
        directory = os.path.dirname(directory)
    return directory


def _loaded(name, layer, dtype, directory, torch):
    """The lines that make `name` (the layer, or the reference) as the audit ran it."""
    is_module = torch is not None and isinstance(layer, torch.nn.Module)
    classes = [type(m) for m in layer.modules()] if is_module else [layer]
    paths = sorted(set(p for p in (_source_dir(c) for c in classes) if p))
    lines = ["# The %s, %s" % (name, _one_line(layer))]
    search = ["sys.path.insert(0, %r)  # where its code is defined" % p for p in paths]  # loaded by reference
    if not is_module:
        if _standalone(layer):
            lines += search
            lines.append("from %s import %s as %s" % (layer.__module__, layer.__qualname__, name))
        else:
            lines.append("# its source, copied:")
            lines.append(inspect.getsource(layer).rstrip())
            lines.append("%s = %s" % (name, layer.__name__))
        return "\n".join(lines) + "\n"
    served = _as_audited(layer, dtype, torch)
    buffer = io.BytesIO()
    pickled = all(_standalone(c) for c in classes)
    if pickled:
        try:
            torch.save(served, buffer)
        except Exception:  # a module that does not pickle: its weights and the line that builds it
            pickled = False
    if pickled and buffer.tell() <= MODULE_CAP_BYTES:
        lines += search
        with open(os.path.join(directory, "%s.pt" % _file(name)), "wb") as f:
            f.write(buffer.getvalue())
        lines.append('%s = torch.load(os.path.join(HERE, "%s.pt"), weights_only=False, map_location="cpu")'
                     % (name, _file(name)))
        lines.append("%s.eval()" % name)
        return "\n".join(lines) + "\n"
    torch.save(served.state_dict(), os.path.join(directory, "%s_state_dict.pt" % name))
    cls = type(layer)
    if _standalone(cls):
        lines += search
        lines.append("from %s import %s" % (cls.__module__, cls.__qualname__))
    else:
        try:
            lines.append("# its class, copied:\n" + inspect.getsource(cls).rstrip())
        except (OSError, TypeError):
            lines.append("# its class %s.%s (its source was not found)" % (cls.__module__, cls.__qualname__))
    lines.append("# as audited:\n" + "\n".join("#   " + line for line in repr(layer).splitlines()))
    lines.append("%s = None  # FILL IN: build the %s as the audit did (its repr above), e.g. %s(...)"
                 % (name, cls.__name__, cls.__name__))
    lines.append('if %s is None:\n    sys.exit("repro.py: fill in the line marked FILL IN, which builds the %s")'
                 % (name, name))
    lines.append('%s.load_state_dict(torch.load(os.path.join(HERE, "%s_state_dict.pt"), map_location="cpu"))'
                 % (name, name))
    lines.append("%s = %s.to(%s).eval()" % (name, name, _dtype_text(served, torch)))
    return "\n".join(lines) + "\n"


def _file(name):
    return "module" if name == "layer" else name


def _as_audited(layer, dtype, torch):
    """A copy of the module as the audit served it: in eval mode, on the CPU, in the audited dtype."""
    import copy
    served = copy.deepcopy(layer)
    target = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    if isinstance(target, torch.dtype) and any(p.is_floating_point() for p in served.parameters()):
        served = served.to(target)
    return served.cpu().eval()


def _dtype_text(module, torch):
    for p in list(module.parameters()) + list(module.buffers()):
        if p.is_floating_point():
            return "torch.%s" % str(p.dtype).split(".")[-1]
    return "torch.float64"


def _one_line(layer):
    if hasattr(layer, "modules"):
        return "%s.%s, as audited (eval mode, on the CPU):" % (type(layer).__module__, type(layer).__qualname__)
    return "%s.%s:" % (getattr(layer, "__module__", "?"), getattr(layer, "__qualname__", repr(layer)))


def _data(record, call, reference_call):
    """The case as literals: the signature, x, the transformed inputs, how each output is compared (the flat index
    of every compared entry in each side's answer, report.json's plan), the tolerances and how forward is called."""
    c = record["counterexample"]
    signature = _signature(record["signature"])
    inputs = {}
    for text in signature["inputs"]:
        parts = text.split(":")
        kind = parts[2] if len(parts) > 2 else "float"
        inputs[parts[0]] = {"dims": parts[1].split(","), "kind": kind.split("=")[0] if kind != "mask=keep" else kind}
    compare = {}
    for name, o in c.get("outputs", {}).items():
        if "repro" in o:
            compare[name] = dict(o["repro"], tolerance=o.get("tolerance", 0.0))
    transformed = c.get("transformed", {})
    against = record.get("property") == "agreement"
    raised = None
    if c.get("raised"):  # which side raised: the reference answering x, or the layer answering its side
        by_reference = bool(c.get("raised_by_reference"))
        raised = {"which": "reference" if by_reference else "layer",
                  "side": "x" if by_reference or against else "transformed", "message": c["raised"]}
    before = c.get("asked_before")
    data = {
        "property": record.get("property"), "verdict": record.get("verdict"), "asks": _ASKS,
        "inputs": inputs, "outputs": [text.split(":")[0] for text in signature["outputs"]],
        "lengths": c.get("lengths", {}), "x": c.get("inputs", {}),
        "transformed_lengths": transformed.get("lengths", c.get("lengths", {})),
        "transformed": transformed.get("inputs", c.get("inputs", {})),
        "chunks": _chunks(signature, c),
        "compare": compare,
        "tolerances": {name: o.get("tolerance", 0.0) for name, o in c.get("outputs", {}).items()},
        "x_box": "reference" if against else "layer",
        "raised": raised,
        "before": {"inputs": before["inputs"], "lengths": before["lengths"]} if before else None,
        "batches": [{"which": "reference" if b.get("by_reference") else "layer", "side": b["side"], "at": b["at"],
                     "count": len(b["items"]), "lengths": b["lengths"], "items": b["items"]}
                    for b in c.get("batches", [])],
        "batch_dims": _batch_dims(signature),
        "dtype": record.get("dtype", "float64"),
        "device": ((record.get("details") or {}).get("audit") or {}).get("device") or "cpu",
        "one_tensor": "one_tensor" in record["signature"],
    }
    calls = {"layer": _how(call)}
    if reference_call is not None:
        calls["reference"] = _how(reference_call)
    return ("# The case (report.json's counterexample): the signature, x, the inputs the transformed side was asked\n"
            "# (every index input already renumbered; a chunked request's chunks), how each output is compared\n"
            "# (compared_from / expected_from: the flat index of each compared entry in the transformed side's answer\n"
            "# and in L(x)'s; ignored: entries left out), and how forward is called (arguments: {parameter: input};\n"
            "# output: the element of the answer that answers; cache and cumulative: how chunks are decoded).\n"
            "CASE = %s\nCALLS = %s\n" % (_literal(data), _literal(calls)))


def _how(call):
    return {"arguments": call.arguments, "output": call.output, "cache": list(call.cache) if call.cache else None,
            "cumulative": sorted(call.cumulative)}


def _chunks(signature, c):
    """The chunking of an incremental case, as its chunked request says it: the axis, the ends of the chunks, and
    the dim of every input and output along the axis; None for another property."""
    cuts = c.get("cuts") or {}
    if not cuts.get("chunked"):
        return None
    axis = cuts["axis"]

    def dims(texts):
        out = {}
        for text in texts:
            name, shape = text.split(":")[0], text.split(":")[1].split(",")
            if axis in shape:
                out[name] = shape.index(axis)
        return out
    return {"axis": axis, "ends": list(cuts["at"]) + [c["lengths"][axis]], "inputs": dims(signature["inputs"]),
            "outputs": dims(signature["outputs"])}


def _batch_dims(signature):
    """Each input's and output's batch dim (its first fixed dim of size 1, which a batch stacks its cases on), when
    every one has one (as serve runs a batch in one forward pass); else {} (serve runs it item by item)."""
    dims = {}
    for text in list(signature["inputs"]) + list(signature["outputs"]):
        name, shape = text.split(":")[0], text.split(":")[1].split(",")
        if "1" not in shape:
            return {}
        dims[name] = shape.index("1")
    return dims


def _signature(recorded):
    """The signature's texts ({"axes", "inputs", "outputs"}); the one-tensor shorthand's as its signature."""
    one = recorded.get("one_tensor")
    if one is None:
        return recorded
    width = one.get("width") or one["d"]
    output = "y:n,%d" % width if one.get("output", "sequence") == "sequence" else "y:%d" % width
    return {"axes": ["n=%d..%d" % (one.get("min_len", 1), one.get("max_len", 8))], "inputs": ["x:n,%d" % one["d"]],
            "outputs": [output]}


def _literal(value):
    """A dict of JSON values as a Python literal, a key a line."""
    def one(v):
        if isinstance(v, dict):
            return "{" + ", ".join("%r: %s" % (k, one(w)) for k, w in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(one(w) for w in v) + "]"
        if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
            return 'float("%s")' % v
        return repr(v)
    return "{\n" + "".join("    %r: %s,\n" % (k, one(v)) for k, v in sorted(value.items())) + "}"


_BODY = r'''
INTEGER_KINDS = ("index", "token", "position", "segment", "mask=keep")
DTYPE = {"float64": torch.float64, "float32": torch.float32, "tf32": torch.float32, "float16": torch.float16,
         "bfloat16": torch.bfloat16}.get(CASE["dtype"], torch.float64)


def tensors(values, lengths):
    """The named inputs as tensors of their kinds and shapes."""
    out = {}
    for name, spec in CASE["inputs"].items():
        shape = [lengths[d] if not d.isdigit() else int(d) for d in spec["dims"]]
        kind = spec["kind"]
        dtype = torch.int64 if kind in INTEGER_KINDS else torch.bool if kind == "mask" else DTYPE
        out[name] = torch.tensor(values[name], dtype=torch.float64).to(dtype).reshape(shape).to(DEVICE)
    return out


def length_of(inputs, lengths, axis):
    for name, spec in CASE["inputs"].items():
        if axis in spec["dims"]:
            return inputs[name].shape[spec["dims"].index(axis)]
    return lengths[axis]


def called(which, inputs, lengths, chunk=None, state=None):
    """The layer's (or the reference's) whole result, called as the audit did; in a chunk, (first, end) of its
    positions, and the cache the previous chunk returned."""
    how = CALLS[which]
    arguments, layer = how["arguments"], globals()[which]

    def value(source):
        if not isinstance(source, str):
            return source
        kind, _, axis = source.partition(":")
        if kind in ("length", "offset", "arange") and axis:
            first, end = chunk if chunk is not None else (0, length_of(inputs, lengths, axis))
            return {"length": lambda: torch.full((1,), end - first, dtype=torch.int64),
                    "offset": lambda: torch.tensor(first),
                    "arange": lambda: torch.arange(first, end)}[kind]().to(DEVICE)
        return inputs[source]

    if arguments is None and CASE["one_tensor"]:
        args, kwargs = [inputs["x"]], {}
    elif arguments is None:
        args, kwargs = [], dict(inputs)
    elif isinstance(arguments, dict):
        named = set(s for s in arguments.values() if isinstance(s, str))
        kwargs = {k: v for k, v in inputs.items() if k not in named}
        kwargs.update({parameter: value(source) for parameter, source in arguments.items()})
        args = []
    else:
        args, kwargs = [value(source) for source in arguments], {}
    if how["cache"] and state is not None:
        kwargs[how["cache"][0]] = state
    with torch.no_grad():
        return layer(*args, **kwargs)


def element(result, key):
    try:
        return result[key]
    except (IndexError, KeyError, TypeError):
        return getattr(result, key)


def named(which, result):
    """The outputs of a result by name, as tensors."""
    if CALLS[which]["output"] is not None:
        result = element(result, CALLS[which]["output"])
    names = CASE["outputs"]
    if isinstance(result, dict):
        return {n: result[n] for n in names}
    if isinstance(result, tuple):
        return dict(zip(names, result))
    return {names[0]: result}


def decoded(which, inputs, lengths):
    """The answer of decoding in chunks, as the audit's chunked request asked: the layer called on each chunk in
    order (every input cut to the chunk, a cumulative one from position 0), each answer's cache handed to the next
    call, the outputs joined along the axis (an output without it: the last chunk's)."""
    chunks, how = CASE["chunks"], CALLS[which]
    state, parts, first = None, {name: [] for name in CASE["outputs"]}, 0
    for end in chunks["ends"]:
        piece = {}
        for name, value in inputs.items():
            dim = chunks["inputs"].get(name)
            start = 0 if name in how["cumulative"] else first
            piece[name] = value if dim is None else value.narrow(dim, start, end - start)
        result = called(which, piece, lengths, chunk=(first, end), state=state)
        if how["cache"]:
            state = element(result, how["cache"][1])
        for name, value in named(which, result).items():
            parts[name].append(value)
        first = end
    return {name: torch.cat(values, chunks["outputs"][name]) if name in chunks["outputs"] else values[-1]
            for name, values in parts.items()}


def as_lists(answer):
    return {name: (list(t.shape), t.detach().cpu().double().reshape(-1).tolist()) for name, t in answer.items()}


def ask(which, side):
    """The answer to x, to the transformed inputs or to the earlier request, each output as (shape, flat list of
    numbers)."""
    values, lengths = {"x": (CASE["x"], CASE["lengths"]),
                       "transformed": (CASE["transformed"], CASE["transformed_lengths"]),
                       "before": CASE["before"] and (CASE["before"]["inputs"], CASE["before"]["lengths"])}[side]
    inputs = tensors(values, lengths)
    if side == "transformed" and CASE["chunks"]:
        return as_lists(decoded(which, inputs, lengths))
    return as_lists(named(which, called(which, inputs, lengths)))


def ask_batch(which, k):
    """The case's item's answer in the finding's batched request k, asked as the audit's batch was answered: a
    module's items in one forward pass, stacked on their batch dims; else one call per item, in order."""
    batch = CASE["batches"][k]
    items = [tensors(values, batch["lengths"]) for values in batch["items"]]
    dims = CASE["batch_dims"]
    if dims and isinstance(globals()[which], torch.nn.Module):
        stacked = {name: torch.cat([item[name] for item in items], dims[name]) for name in items[0]}
        answer = named(which, called(which, stacked, batch["lengths"]))
        return as_lists({name: t.narrow(dims[name], batch["at"], 1) for name, t in answer.items()})
    answers = [named(which, called(which, item, batch["lengths"])) for item in items]
    return as_lists(answers[batch["at"]])


# Where the audit ran it (a GPU's kernels may be what is at fault); the CPU when that device is not here.
DEVICE = CASE["device"] if CASE["device"] == "cpu" or torch.cuda.is_available() else "cpu"
if DEVICE != CASE["device"]:
    print("the audit ran on %s, which this machine lacks: running on the CPU" % CASE["device"])
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = CASE["dtype"] == "tf32"
for which in CALLS:
    if hasattr(globals()[which], "to"):
        globals()[which] = globals()[which].to(DEVICE)
'''


def compare_text():
    """The comparison every repro.py shares (repro_compare.py, beside this file)."""
    with open(_COMPARE) as f:
        return f.read()
