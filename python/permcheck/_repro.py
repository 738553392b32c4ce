"""A reproduction without permcheck: repro.py beside a report that found something, for a layer served from this
process. It holds the case's inputs written out (x and the transformed inputs, every index already renumbered),
loads the layer saved beside it (module.pt: the module as audited, when it pickles; else its state_dict and a marked
line to fill in), calls it as the audit did, compares as the property does with the report's tolerance, prints the
difference and ends in an assert: it exits non-zero while the bug is there and 0 once it is fixed. It imports torch
(for a torch layer) and the Python standard library, never permcheck."""

import copy
import inspect
import io
import os
import sys

from permcheck import _protocol, repro_case

# The largest module.pt written: a module above it is saved as its state_dict (its weights) instead, and the repro
# asks for the one line that builds it.
MODULE_CAP_BYTES = 256 * 1024 * 1024

_HERE = os.path.dirname(os.path.abspath(__file__))


def refused(record):
    """Why no repro can be written for this report's finding ("" when one can), as the binary recorded it
    (details.audit.repro_refused); a report that is no finding's says so."""
    said = record.get("details", {}).get("audit", {}).get("repro_refused")
    return "the verdict %s is not a finding a repro reproduces" % record.get("verdict") if said is None else said


def write(directory, record, layer, dtype, call, against, reference=None, reference_call=None):
    """Writes repro.py (and module.pt or state_dict.pt, reference.pt) into `directory` for the report's finding;
    returns its path, or None when none can be written (refused()).
    `against`: whether the property compares the layer with a reference (the binary says both)."""
    if refused(record) or not callable(layer):
        return None
    torch = sys.modules.get("torch")
    parts = [_header(record, layer, torch)]
    parts.append(_loaded("layer", layer, dtype, directory, torch))
    if against and reference is not None:
        parts.append(_loaded("reference", reference, dtype, directory, torch))
    parts.append(_data(record, call, reference_call if against else None, against))
    parts += [_text(name) for name in ("_calls.py", "repro_torch.py", "repro_compare.py")]
    path = os.path.join(directory, "repro.py")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return path


def _header(record, layer, torch):
    c = record["counterexample"]
    versions = ["python %d.%d" % sys.version_info[:2]]
    if torch is not None:
        versions.append("torch %s" % torch.__version__)
    package = (layer if inspect.isfunction(layer) else type(layer)).__module__.split(".")[0]
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


def _guarded(statement, name, paths):
    """`statement`, but an ImportError or a class its module lacks (the layer's code is not where the audit found it)
    ends the repro with exit 2, "could not be run", never 1, which says the bug is there."""
    where = "; its code was in %s when audited (put that on PYTHONPATH)" % ", ".join(paths) if paths else ""
    said = "repro.py: the %s cannot be loaded: %%s%s\n" % (name, where.replace("%", "%%"))
    return ("try:\n    %s\nexcept (ImportError, AttributeError) as error:\n"
            "    sys.stderr.write(%r %% error)\n    sys.exit(2)" % (statement, said))


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
            lines.append(_guarded("from %s import %s as %s" % (layer.__module__, layer.__qualname__, name), name, paths))
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
        lines.append(_guarded('%s = torch.load(os.path.join(HERE, "%s.pt"), weights_only=False, map_location="cpu")'
                              % (name, _file(name)), name, paths))
        lines.append("%s.eval()" % name)
        return "\n".join(lines) + "\n"
    torch.save(served.state_dict(), os.path.join(directory, "%s_state_dict.pt" % name))
    cls = type(layer)
    if _standalone(cls):
        lines += search
        lines.append(_guarded("from %s import %s" % (cls.__module__, cls.__qualname__), name, paths))
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
    lines.append("%s = %s.to(%s).eval()" % (name, name, _protocol._resolve_dtype(torch, served, None)))
    return "\n".join(lines) + "\n"


def _file(name):
    return "module" if name == "layer" else name


def _as_audited(layer, dtype, torch):
    """A copy of the module as the audit served it: in eval mode, on the CPU, in the audited dtype."""
    served = copy.deepcopy(layer)
    if dtype is not None and any(p.is_floating_point() for p in served.parameters()):
        served = served.to(_protocol._resolve_dtype(torch, None, dtype))
    return served.cpu().eval()


def _one_line(layer):
    if hasattr(layer, "modules"):
        return "%s.%s, as audited (eval mode, on the CPU):" % (type(layer).__module__, type(layer).__qualname__)
    return "%s.%s:" % (getattr(layer, "__module__", "?"), getattr(layer, "__qualname__", repr(layer)))


def _data(record, call, reference_call, against):
    """The case as literals (repro_case.py: x, the transformed inputs, how each output is compared, the tolerances)
    and how forward is called."""
    calls = {"layer": how(call)}
    if reference_call is not None:
        calls["reference"] = how(reference_call)
    return ("# The case (report.json's counterexample): the signature, x, the inputs the transformed side was asked\n"
            "# (every index input already renumbered; a chunked request's chunks), how each output is compared\n"
            "# (compared_from / expected_from: the flat index of each compared entry in the transformed side's answer\n"
            "# and in L(x)'s; ignored: entries left out), and how forward is called (arguments: {parameter: input};\n"
            "# output: the element of the answer that answers; cache and cumulative: how chunks are decoded).\n"
            "CASE = %s\nCALLS = %s\n" % (repro_case.literal(repro_case.case_of(record, against)), repro_case.literal(calls)))


def how(call):
    """How forward is called (a _Call): its arguments, output, cache and cumulative inputs, as JSON holds them."""
    return {"arguments": call.arguments, "output": call.output, "cache": list(call.cache) if call.cache else None,
            "cumulative": sorted(call.cumulative)}


def _text(name):
    """A part every such repro.py shares, as this package ships it (beside this file)."""
    with open(os.path.join(_HERE, name)) as f:
        return f.read()
