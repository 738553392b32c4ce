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

# Findings a repro is written for, by property: the transformed side against L(x) moved as the property says.
_PERMUTING = ("equivariance", "invariance")
_COMPARED = _PERMUTING + ("shift", "agreement")
_FINDINGS = ("violated", "non-finite", "nondeterministic")
_ASKS = 5  # a nondeterministic finding: how many times the repro asks x


def supported(record):
    """Whether a repro can be written for this report's finding (and why not, when not)."""
    verdict, prop = record.get("verdict"), record.get("property")
    if verdict not in _FINDINGS:
        return False, "the verdict %s is not a finding a repro reproduces" % verdict
    c = record.get("counterexample")
    if not c or not record.get("signature"):
        return False, "the report holds no counterexample of a signature"
    if verdict == "nondeterministic":
        return True, ""
    if c.get("raised"):
        return False, "the finding is an exception, not a comparison"
    if prop not in _COMPARED:
        return False, "repro.py is not written for the %s property yet" % prop
    if "transformed" not in c:
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
    path = os.path.join(directory, "repro.py")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return path


def name_in_reports(directory):
    """report.md and report.html name the repro first, under their title."""
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
    """The case as literals: the signature, x, the transformed inputs, the permutations, the tolerances and how
    forward is called."""
    c = record["counterexample"]
    signature = _signature(record["signature"])
    outputs = {}
    for text in signature["outputs"]:
        name, dims = text.split(":")[0], text.split(":")[1].split(",")
        outputs[name] = [d if not d.isdigit() else None for d in dims]
    inputs = {}
    for text in signature["inputs"]:
        parts = text.split(":")
        kind = parts[2] if len(parts) > 2 else "float"
        inputs[parts[0]] = {"dims": parts[1].split(","), "kind": kind.split("=")[0] if kind != "mask=keep" else kind}
    tolerances = {name: o.get("tolerance", 0.0) for name, o in c.get("outputs", {}).items()}
    transformed = c.get("transformed", {})
    data = {
        "property": record.get("property"), "verdict": record.get("verdict"),
        "inputs": inputs, "outputs": outputs,
        "lengths": c.get("lengths", {}), "x": c.get("inputs", {}),
        "transformed_lengths": transformed.get("lengths", c.get("lengths", {})),
        "transformed": transformed.get("inputs", {}),
        "permutations": c.get("permutations", {}),
        "tolerance": tolerances,
        "dtype": record.get("dtype", "float64"),
        "device": ((record.get("details") or {}).get("audit") or {}).get("device") or "cpu",
        "one_tensor": "one_tensor" in record["signature"],
    }
    calls = {"layer": {"arguments": call.arguments, "output": call.output}}
    if reference_call is not None:
        calls["reference"] = {"arguments": reference_call.arguments, "output": reference_call.output}
    return ("# The case (report.json's counterexample): the signature, x, the inputs the transformed side was asked\n"
            "# (every index input already renumbered), the permutations ((P t)[i] = t[p[i]] along each axis), each\n"
            "# output's tolerance, and how forward is called (arguments: {parameter: input}; output: the element\n"
            "# of the answer that answers).\n"
            "CASE = %s\nCALLS = %s\n" % (_literal(data), _literal(calls)))


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


def call(which, inputs, lengths):
    """Calls the layer (or the reference) as the audit did: every output by name."""
    how = CALLS[which]
    arguments, layer = how["arguments"], globals()[which]

    def value(source):
        if not isinstance(source, str):
            return source
        kind, _, axis = source.partition(":")
        if kind in ("length", "offset", "arange") and axis:
            n = length_of(inputs, lengths, axis)
            return {"length": torch.full((1,), n, dtype=torch.int64), "offset": torch.tensor(0),
                    "arange": torch.arange(n)}[kind].to(DEVICE)
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
    with torch.no_grad():
        result = layer(*args, **kwargs)
    if how["output"] is not None:
        try:
            result = result[how["output"]]
        except (IndexError, KeyError, TypeError):
            result = getattr(result, how["output"])
    names = list(CASE["outputs"])
    if isinstance(result, dict):
        return {n: result[n].detach().cpu().double() for n in names}
    if isinstance(result, tuple):
        return {n: v.detach().cpu().double() for n, v in zip(names, result)}
    return {names[0]: result.detach().cpu().double()}


def moved(name, y):
    """An output of L(x) moved as the property says: along each axis it has, by that axis's permutation."""
    if CASE["property"] not in ("equivariance", "invariance"):
        return y
    for dim, axis in enumerate(CASE["outputs"][name]):
        if axis is not None and axis in CASE["permutations"]:
            y = y.index_select(dim, torch.tensor(CASE["permutations"][axis], dtype=torch.int64))
    return y


# Where the audit ran it (a GPU's kernels may be what is at fault); the CPU when that device is not here.
DEVICE = CASE["device"] if CASE["device"] == "cpu" or torch.cuda.is_available() else "cpu"
if DEVICE != CASE["device"]:
    print("the audit ran on %%s, which this machine lacks: running on the CPU" %% CASE["device"])
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = CASE["dtype"] == "tf32"
for which in CALLS:
    if hasattr(globals()[which], "to"):
        globals()[which] = globals()[which].to(DEVICE)

x = tensors(CASE["x"], CASE["lengths"])
failures = []
if CASE["verdict"] == "nondeterministic":
    first = call("layer", x, CASE["lengths"])
    for ask in range(2, %(asks)d + 1):
        again = call("layer", x, CASE["lengths"])
        for name in first:
            same = torch.equal(first[name].isnan(), again[name].isnan()) and torch.equal(
                first[name].nan_to_num(0.0), again[name].nan_to_num(0.0))
            if not same:
                diff = (first[name] - again[name]).abs().nan_to_num(float("inf")).max().item()
                failures.append("output %%s: ask %%d of x differs from ask 1 by %%g" %% (name, ask, diff))
else:
    agreement = CASE["property"] == "agreement"
    lhs_name = "L(x)" if agreement else {"shift": "L(x_c)"}.get(CASE["property"], "L(P x)")
    lhs = call("layer", tensors(CASE["transformed"], CASE["transformed_lengths"]) if not agreement else x,
               CASE["transformed_lengths"])
    rhs = call("reference", x, CASE["lengths"]) if agreement else call("layer", x, CASE["lengths"])
    for name in CASE["outputs"]:
        expected = rhs[name] if agreement else moved(name, rhs[name])
        moves = any(a is not None and a in CASE["permutations"] for a in CASE["outputs"][name])
        rhs_name = "R(x)" if agreement else "P L(x)" if CASE["property"] in ("equivariance", "invariance") and moves \
            else "L(x)"
        got = lhs[name]
        if got.shape != expected.shape:
            failures.append("output %%s: %%s has shape %%s, %%s has %%s" %% (name, lhs_name, tuple(got.shape),
                                                                         rhs_name, tuple(expected.shape)))
            continue
        if not (got.isfinite().all() and expected.isfinite().all()):
            if not agreement or not torch.equal(got.isnan(), expected.isnan()):
                failures.append("output %%s: a non-finite entry (%%s or %%s)" %% (name, lhs_name, rhs_name))
                continue
        diff = (got - expected).nan_to_num(0.0).abs()
        worst = diff.max().item() if diff.numel() else 0.0
        tolerance = CASE["tolerance"].get(name, 0.0)
        where = tuple(int(i) for i in torch.nonzero(diff == worst)[0]) if diff.numel() else ()
        print("output %%s: %%s and %%s differ by %%g at %%s (tolerance %%g)" %% (name, lhs_name, rhs_name, worst, where,
                                                                           tolerance))
        if worst > tolerance:
            failures.append("output %%s: %%s and %%s differ by %%g > %%g" %% (name, lhs_name, rhs_name, worst, tolerance))

for failure in failures:
    print(failure)
print("the bug is there" if failures else "reproduces no longer: fixed")
assert not failures, "; ".join(failures)
''' % dict(asks=_ASKS)
