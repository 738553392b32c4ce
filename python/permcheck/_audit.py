"""Audits from the calling process: permcheck.audit, permcheck.profile, permcheck.replay; the binary found, and
what it says it is (its vocabulary: properties, their options, verdicts, precisions) asked of it with
`permcheck describe --json`, once per binary. The layer is served from this process (permcheck/_serving.py).
"""

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from permcheck import _compiled, _protocol, _repro
from permcheck._results import (AuditError, Comparison, Counterexample, PermcheckNotFound, ReplayResult,
                                Result)
from permcheck._serving import _against, _layer_name, _Prepared, _run, _served

__all__ = ["audit", "profile", "replay", "Result", "Counterexample", "Comparison", "ReplayResult", "AuditError",
           "PermcheckNotFound", "find_binary"]


# Finding the binary
def find_binary():
    """The permcheck binary: $PERMCHECK_BIN, else PREFIX/bin/permcheck beside this package installed in
    PREFIX/share/permcheck/python, else the scripts directory of this Python's environment (where `pip install`
    puts it; also beside sys.executable), else `permcheck` on PATH. Raises PermcheckNotFound saying what to
    install."""
    given = os.environ.get("PERMCHECK_BIN")
    if given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return given
        raise PermcheckNotFound("PERMCHECK_BIN is %r, which is not an executable file; point it at the permcheck "
                                "binary (build/permcheck in a build tree, PREFIX/bin/permcheck installed)" % given)
    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin")), sysconfig.get_path("scripts"),
              os.path.dirname(os.path.abspath(sys.executable)), os.environ.get("PATH", os.defpath)]
    found = shutil.which("permcheck", path=os.pathsep.join(p for p in places if p))
    if found:
        return found
    raise PermcheckNotFound(
        "the permcheck binary was not found: `pip install .` in a permcheck checkout installs it with this "
        "package; otherwise set PERMCHECK_BIN to it, or put it on PATH. It is built by "
        "`cmake -S . -B build && cmake --build build --target permcheck` in a permcheck checkout (the binary is "
        "build/permcheck) and installed by `cmake --install build --prefix PREFIX` (PREFIX/bin/permcheck, found "
        "beside this package when it is PREFIX/share/permcheck/python's)")


# What the binary says: its vocabulary (permcheck describe --json), asked once per binary
class _Vocabulary:
    """The properties and their options, the verdicts and the precisions of one permcheck binary, as `permcheck
    describe --json` prints them (docs/reference.md, "describe --json"). The package holds no copy."""

    def __init__(self, described):
        self.properties = {p["name"]: p for p in described["properties"]}
        self.default = described["properties"][0]["name"]  # the binary's without --property
        self.audited = [p["name"] for p in described["properties"] if p["audits_black_boxes"]]
        self.with_reference = next(p for p in described["properties"] if p["needs_reference"])["name"]
        self.chunking = next(p for p in described["properties"] if p["chunks_calls"])["name"]
        self.general = {o["keyword"]: o for o in described["options"]}
        self.precisions = tuple(described["precisions"])  # finest first
        self.failures = tuple(v["word"] for v in described["verdicts"] if v["failure"])
        self.exit_codes = {v["word"]: v["exit_code"] for v in described["verdicts"]}
        self.torch_hints = {v["word"]: v["torch_hint"] for v in described["verdicts"] if "torch_hint" in v}

    def options(self, prop=None):
        """{keyword: option} of an audit of `prop` (every property's with None), the general ones first."""
        out = dict(self.general)
        for p in [self.properties[prop]] if prop is not None else self.properties.values():
            out.update((o["keyword"], o) for o in p["options"])
        return out


@functools.lru_cache(maxsize=None)
def _described(binary, modified):
    try:
        done = subprocess.run([binary, "describe", "--json"], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        raise PermcheckNotFound("cannot run %s describe --json: %s" % (binary, error)) from None
    try:
        return _Vocabulary(json.loads(done.stdout))
    except (ValueError, KeyError, TypeError, StopIteration):
        raise PermcheckNotFound(_no_report(binary, done.returncode, done.stderr.strip(), "describe --json")) from None


def _vocabulary(binary):
    """What `binary describe --json` says, asked once per binary path and modification time."""
    return _described(binary, os.stat(binary).st_mtime_ns)


# audit(), profile() and replay()
def _as_list(value, what):
    if value is None or isinstance(value, str):
        return [] if value is None else [value]
    try:
        return [str(v) for v in value]
    except TypeError:
        raise TypeError("%s must be a string or a list of strings, got %s" % (what, type(value).__name__)) from None


def _capped(axis, min_len, max_len):
    """An axis NAME=MIN..MAX with its range narrowed to [min_len, max_len] (a signature's axes carry their own
    ranges; max_len and min_len bound every axis)."""
    match = re.fullmatch(r"\s*([^=\s]+)\s*=\s*(\d+)\s*\.\.\s*(\d+)\s*", axis)
    if not match:
        return axis
    name, low, high = match.group(1), int(match.group(2)), int(match.group(3))
    high = high if max_len is None else min(high, int(max_len))
    low = low if min_len is None else max(low, int(min_len))
    if low > high:
        raise ValueError("axis %s: min_len/max_len leave no length in its range %s" % (name, axis))
    return "%s=%d..%d" % (name, low, high)


def _flags(vocabulary, axes, inputs, outputs, dim, prop, cases, seed, options):
    if dim is not None:
        if axes or inputs:
            raise TypeError("dim=D is the one-tensor form (input x:n,D); it cannot be mixed with axes/inputs")
        flags = ["--dim", str(int(dim))]
        if outputs is not None:
            shorthand = _as_list(outputs, "outputs")
            if len(shorthand) != 1 or shorthand[0] not in ("sequence", "pooled"):
                raise ValueError('with dim=D, outputs is "sequence" (one row per position) or "pooled" (one '
                                 'vector), got %r' % (outputs,))
            flags += ["--output", shorthand[0]]
    else:
        if not axes or not inputs or not outputs:
            raise TypeError("describe the layer with axes=, inputs= and outputs= (e.g. axes=['n=1..8'], "
                            "inputs=['x:n,8'], outputs=['y:n,8']) or use dim=D for one input x:n,D")
        flags = []
        axes = [_capped(a, options.pop("min_len", None), options.pop("max_len", None))
                for a in _as_list(axes, "axes")] if ("max_len" in options or "min_len" in options) else axes
        for flag, values in (("--axis", axes), ("--input", inputs), ("--output", outputs)):
            for text in _as_list(values, flag[2:] + "s"):
                flags += [flag, text]
    return flags + _property_flags(vocabulary, prop, options) + ["--cases", str(int(cases)), "--seed", str(int(seed))]


def _property_flags(vocabulary, prop, options):
    """--property and the options the binary declares for it (or for every property), keyword by keyword: True
    gives a flag alone, None and False nothing. A keyword the binary does not know is a TypeError naming those it
    does; another property's option goes to the binary, whose message says which property it goes with."""
    if prop not in vocabulary.audited:
        raise ValueError("property is one of %s, got %r" % (", ".join(vocabulary.audited), prop))
    flags = ["--property", prop] if prop != vocabulary.default else []
    known, every = vocabulary.options(prop), vocabulary.options()
    for key, value in options.items():
        if key not in every:
            raise TypeError("audit() got an unknown option %r; the options of property=%r are %s (and of the other "
                            "properties %s), as this permcheck binary declares them (permcheck describe --json)"
                            % (key, prop, ", ".join(known), ", ".join(k for k in every if k not in known) or "none"))
        if value is None or value is False:
            continue
        flags += [every[key]["flag"]] if value is True else [every[key]["flag"], str(value)]
    return flags


def audit(layer, *, axes=None, inputs=None, outputs=None, dim=None, property=None, dtype=None,
          cases=100, seed=1, report=None, arguments=None, output=None, kinds=None, batch=256, taps=True,
          cache=None, cumulative=None, reference=None, reference_arguments=None, reference_output=None,
          reference_dtype=None, judge_as=None, device=None, **options):
    """Audit `layer` (a torch.nn.Module, TorchScript included, or a function) for `property`, served from this
    process; a Result, whatever the verdict. docs/python.md, "The functions", says what each argument does;
    `options` are those the binary declares (`permcheck describe --json`), by their keywords (timeout, max_len,
    padding_axis, window, ...): True gives a flag alone, None and False nothing, an unknown one a TypeError."""
    binary = find_binary()
    vocabulary = _vocabulary(binary)
    property = _property(vocabulary, property, reference)
    flags = _flags(vocabulary, axes, inputs, outputs, dim, property, cases, seed, options)
    name = _layer_name(layer)
    own_report = report is None  # the pytest plugin's --permcheck-reports DIR names one; else a temporary directory
    directory = (_report_directory(name) or tempfile.mkdtemp(prefix="permcheck-report-")) if own_report else \
        os.fspath(report)
    signature_inputs = inputs if dim is None else ["x:n,%d" % int(dim)]
    call = _protocol._Call(arguments, output, signature_inputs, cache, cumulative)
    # A layer that decodes in chunks keeping its own cache (no `cache`) is called one call at a time.
    call.serial = vocabulary.properties[property]["chunks_calls"] and cache is None
    against = _against(vocabulary, reference, reference_arguments, reference_output, reference_dtype, judge_as,
                       arguments, output, dtype, signature_inputs)
    called = {"layer": _repro.how(call)}  # kept in the report (details.audit.call) for replay()
    if against is not None:
        called["reference"] = _repro.how(against.call)
    with _compiled.watch(layer, reference) as compiled:
        code, out, err = _served(binary, layer, name, flags + ["--report", directory, "--call", json.dumps(called)],
                                 dtype, call, kinds, taps, batch, against, device)
    record = _read_record(directory)
    if record is None:
        if own_report:
            shutil.rmtree(directory, ignore_errors=True)
        raise PermcheckNotFound(_no_report(binary, code, err.strip() or out.strip()))
    result = Result(record, out, err, directory, code, name, vocabulary)
    if not result.holds:
        result.repro = _written_repro(binary, directory, record, layer, dtype, call, reference, against,
                                      vocabulary.properties[property]["needs_reference"])
    return _settled(_compiled.judged(result, compiled), layer, own_report, vocabulary)


def _settled(result, layer, own_report, vocabulary):
    """The result with its hint (the binary's, for a torch module), its temporary report removed when it holds,
    told to the listeners."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(layer, torch.nn.Module):
        result.hint = vocabulary.torch_hints.get(result.verdict)
    if own_report and result.holds:
        shutil.rmtree(result.report, ignore_errors=True)
        result.report = None
    _notify(result)
    return result


def _property(vocabulary, prop, reference):
    """The property audited: as given, else the one that needs a reference when there is one, else the binary's
    default; TypeError when a reference is missing or has no place."""
    if prop is None:
        prop = vocabulary.with_reference if reference is not None else vocabulary.default
    needs = vocabulary.properties.get(prop, {}).get("needs_reference", False)
    if needs and reference is None:
        raise TypeError('property="%s" compares the layer with a reference implementation: pass reference=' % prop)
    if reference is not None and not needs:
        raise TypeError('reference= goes with property="%s", got property=%r' % (vocabulary.with_reference, prop))
    return prop


def _written_repro(binary, directory, record, layer, dtype, call, reference, against, with_reference):
    """repro.py beside a report that found something (a reproduction without permcheck), named in report.md and
    report.html; None where none is written (the finding or the property has none yet, or writing it failed)."""
    try:
        path = _repro.write(directory, record, layer, dtype, call, with_reference, reference,
                            against.call if against is not None else None)
    except Exception as error:  # the verdict stands without it: say why on stderr
        sys.stderr.write("permcheck: no repro.py written: %s\n" % error)
        return None
    if path is not None:  # named in the report as the binary names an adapter program's
        subprocess.run([binary, "name-repro", directory], stdin=subprocess.DEVNULL, check=False)
    return path


def profile(layer, *, axes=None, inputs=None, outputs=None, dim=None, dtype=None, cases=100, seed=1, report=None,
            arguments=None, output=None, kinds=None, batch=256, taps=True, cache=None, cumulative=None,
            reference=None, reference_arguments=None, reference_output=None, reference_dtype=None, judge_as=None,
            device=None, **options):
    """Every question that applies to `layer`, a row (a dict) each, as `permcheck audit --profile` asks them, and with
    `cache` a row of the property that decodes in chunks. Takes audit()'s arguments but `property`; AuditError
    when the profile could not run (docs/python.md)."""
    binary = find_binary()
    vocabulary = _vocabulary(binary)
    flags = _flags(vocabulary, axes, inputs, outputs, dim, vocabulary.default, cases, seed, options)
    name = _layer_name(layer)
    directory = os.fspath(report) if report is not None else tempfile.mkdtemp(prefix="permcheck-profile-")
    signature_inputs = inputs if dim is None else ["x:n,%d" % int(dim)]
    call = _protocol._Call(arguments, output, signature_inputs, cache, cumulative)
    against = _against(vocabulary, reference, reference_arguments, reference_output, reference_dtype, judge_as,
                       arguments, output, dtype, signature_inputs)
    code, out, err = _served(binary, layer, name, flags + ["--profile", "--report", directory], dtype, call, kinds,
                             taps, batch, against, device)
    try:
        with open(os.path.join(directory, "profile.json")) as f:
            rows = json.load(f)["rows"]
    except (OSError, ValueError, KeyError):
        raise AuditError("the profile of %s did not run (exit %s): %s" % (name, code, (err or out).strip())) from None
    for row in rows:
        if row.get("report"):
            row["report"] = os.path.join(directory, row["report"])
    if cache is not None:  # a cache route: cached decoding against one pass, a row of its own
        rows.append(_row(vocabulary.chunking, "cached decoding equals one pass", layer, directory, dict(
            axes=axes, inputs=inputs, outputs=outputs, dim=dim, dtype=dtype, cases=cases, seed=seed,
            arguments=arguments, output=output, kinds=kinds, batch=batch, taps=taps, cache=cache,
            cumulative=cumulative, device=device, **options)))
    return rows


def _row(prop, title, layer, directory, arguments):
    """A profile's row of `prop` audited with its own `arguments` (audit()'s): the cache route's, a preset's."""
    result = audit(layer, property=prop, report=os.path.join(directory, prop), **arguments)
    said = _vocabulary(find_binary()).properties[prop]["verdicts"]
    return {"row": prop, "title": title, "verdict": result.verdict, "cases": result.cases,
            "meaning": said["holds"] if result.holds else said["fails"] if result.failed else "",
            "report": os.path.join(directory, prop, "report.json"), "replay": result.record.get("replay", "")}


def replay(report, layer, *, dtype=None, arguments=None, output=None, kinds=None, timeout=30, cache=None,
           cumulative=None, reference=None, reference_arguments=None, reference_output=None, reference_dtype=None,
           device=None):
    """Run the counterexample saved in `report` (a report directory or its report.json) against `layer` in this
    process (with its `cache` or `reference`, as audited): a ReplayResult, true when the property now holds."""
    binary = find_binary()
    path = os.fspath(report)
    file = os.path.join(path, "report.json") if os.path.isdir(path) else path
    try:
        with open(file, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError) as error:
        raise AuditError("cannot read the report %s: %s" % (file, error)) from None
    signature = record.get("signature") or {}
    inputs = signature.get("inputs") if isinstance(signature, dict) else None
    call_inputs = inputs if isinstance(inputs, list) and inputs else None
    # How the audit called the layer and the reference, where none of it is given again.
    called = ((record.get("details") or {}).get("audit") or {}).get("call") or {}
    if arguments is None and output is None and cache is None and cumulative is None and called.get("layer"):
        arguments, output, cache, cumulative = (called["layer"].get(k) for k in ("arguments", "output", "cache",
                                                                                "cumulative"))
    if reference_arguments is None and reference_output is None and called.get("reference"):
        reference_arguments, reference_output = (called["reference"].get(k) for k in ("arguments", "output"))
    call = _protocol._Call(arguments, output, call_inputs, cache, cumulative)
    vocabulary, saved = _vocabulary(binary), record.get("dtype")
    # The precision audited, when it is one (not "infer"): a tf32 audit's module computes in float32.
    served = {"tf32": "float32"}.get(saved, saved) if saved in vocabulary.precisions else None
    served = dtype if dtype is not None else served
    against = _against(vocabulary, reference, reference_arguments, reference_output, reference_dtype, None,
                       arguments, output, dtype, call_inputs)
    with _Prepared(layer, served) as prepared, _Prepared(reference, against and against.dtype) as theirs:
        make_reference, more = None, []
        if reference is not None:
            make_reference, more = theirs.server(kinds, against.call, device), ["--reference-connect", "{reference}"]
        code, out, err = _run(binary, ["replay", file, "--connect", "{socket}", "--timeout", str(timeout)] + more,
                              prepared.server(kinds, call, device), make_reference)
    if code not in (0, 1):
        raise AuditError("the replay of %s did not run: %s" % (file, (err.strip() or out.strip())))
    return ReplayResult(code, out, err)


def _no_report(binary, code, said, what=None):
    ended = "was killed by signal %d" % -code if code < 0 else "ended with status %d" % code
    wrote = "printed no vocabulary (%s)" % what if what else "wrote no report"
    return ("%s %s and %s: %s\nThe binary is broken or older than this package: rebuild it (cmake "
            "--build build --target permcheck) or reinstall it (cmake --install build --prefix PREFIX), or point "
            "PERMCHECK_BIN at a working one" % (binary, ended, wrote, said or "(it printed nothing)"))


def _read_record(directory):
    try:
        with open(os.path.join(directory, "report.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


# Listeners (the pytest plugin's summary)
_listeners = []
_report_directories = []  # callables of the layer's name: a directory for its report, or None


def _report_directory(name):
    return next((directory for directory in (choose(name) for choose in _report_directories) if directory), None)


def _notify(result):
    for listener in list(_listeners):
        listener(result)
