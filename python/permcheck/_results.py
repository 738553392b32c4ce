"""What an audit gives back: a Result (its verdict, its counterexample with each output's Comparison), a
ReplayResult, and the errors that stop an audit (AuditError, PermcheckNotFound). docs/python.md, "The functions"."""

import sys

from permcheck._calls import _element_type


class AuditError(Exception):
    """The audit could not reach a verdict (verdict `error`, or `undecided`): the message names the cause.
    `result` is the Result, when permcheck wrote one."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class PermcheckNotFound(RuntimeError):
    """The permcheck binary is missing, or could not run."""


class Comparison:
    """One output of a counterexample: the two sides the property compares, as tensors (nested lists when
    torch is not imported), and how far apart they are."""

    def __init__(self, name, j, to_tensor):
        self.name = name
        self.layer_of_permuted = to_tensor(j.get("layer_of_permuted"))  # L(P x) (L(x_c), L(pad x))
        self.permuted_layer = to_tensor(j.get("permuted_layer"))        # P L(x) (L(x))
        self.max_abs_diff, self.tolerance = j.get("max_abs_diff"), j.get("tolerance")
        self.where = list(j.get("where") or [])
        self.holds, self.shape_mismatch = bool(j.get("holds", False)), bool(j.get("shape_mismatch", False))

    def __repr__(self):
        return "Comparison(%s: max |diff| %s at %s, tolerance %s)" % (self.name, self.max_abs_diff, self.where,
                                                                      self.tolerance)


class Counterexample:
    """The shrunk counterexample: lengths per axis, the permutation of each axis (one-line form: position k of
    the permuted input holds row permutations[axis][k]), the inputs as tensors, each output's comparison, the
    property's part (`part`: the shift, the pads, the cuts, the window) and what the layer raised where that is the finding (`raised`), as
    report.json's counterexample holds them (docs/python.md, "The functions")."""

    def __init__(self, j, to_tensor, kinds=None):
        self.lengths = dict(j.get("lengths") or {})
        self.permutations = {a: list(p) for a, p in (j.get("permutations") or {}).items()}
        cycles = j.get("cycles")  # per axis; the one-tensor form's fields also hold its axis n's alone
        self.cycles = dict(cycles) if isinstance(cycles, dict) else {"n": cycles} if isinstance(cycles, str) else {}
        self.axis_at_fault = j.get("axis_at_fault", "")
        kinds = kinds or {}
        self.inputs = {name: to_tensor(v, kinds.get(name)) for name, v in (j.get("inputs") or {}).items()}
        self.outputs = {name: Comparison(name, v, to_tensor) for name, v in (j.get("outputs") or {}).items()}
        self.part, self.raised = dict(j.get("part") or {}), j.get("raised")

    def failing(self):
        """The outputs that do not hold, largest difference first."""
        bad = [c for c in self.outputs.values() if not c.holds]
        return sorted(bad, key=lambda c: -(c.max_abs_diff or 0) if isinstance(c.max_abs_diff, float) else 0)

    def __repr__(self):
        return "Counterexample(lengths=%s, permutations=%s)" % (self.lengths, self.permutations)


class Result:
    """An audit's outcome (docs/python.md, "The functions"): verdict and property (the binary's words),
    counterexample (a Counterexample, or None), first_breaking_tap, report (the directory, None for a holding audit
    without `report`), summary (the verdict line), output (all permcheck printed), record (report.json as a dict),
    repro (repro.py beside the report, or None). bool(result) is True when the property holds."""

    def __init__(self, record, output, stderr, report, exit_code, layer_name, vocabulary):
        self.record, self.output, self.stderr, self.report, self.exit_code = record, output, stderr, report, exit_code
        self.layer, self.verdict = layer_name, record.get("verdict", "error")
        # What the verdict is, as the binary says: holding (exit code 0), a finding, or an audit stopped by the user
        # (128 + SIGINT); anything else reached no verdict.
        code = vocabulary.exit_codes.get(self.verdict)
        self.holds, self.failed, self.interrupted = code == 0, self.verdict in vocabulary.failures, code == 130
        self.property = record.get("property", vocabulary.default)
        self.dtype, self.error, self.cases = record.get("dtype"), record.get("error") or "", record.get("cases")
        c = record.get("counterexample")
        kinds = _input_kinds(record.get("signature"))
        self.counterexample = Counterexample(c, _tensor_maker(), kinds) if isinstance(c, dict) else None
        tap = record.get("first_breaking_tap")  # the submodule where symmetry first breaks, when taps located it
        self.first_breaking_tap = tap if isinstance(tap, str) and tap else None
        self.summary = _summary_line(output) or "%s: %s %s" % (layer_name, self.property, self.verdict)
        self.hint = None  # a sentence on what to do (a nondeterministic torch module: deterministic algorithms)
        self.repro = None
        self.compiled = None  # what torch.compile did, for a compiled module (permcheck/_compiled.py)

    def __bool__(self):
        return self.holds

    def __repr__(self):
        return "Result(%s %s%s)" % (self.property, self.verdict, ", report=%r" % self.report if self.report else "")

    def explanation(self):
        """The lines an assertion shows: what permcheck printed of the audit (its verdict line, the shrunk
        counterexample with both sides and the replay line, where symmetry first breaks), the error of an audit
        that failed, and the report directory. The text is the binary's own: it is written in one place."""
        lines = [line for line in self.output.splitlines() if line.strip() and not line.startswith("report written to ")]
        lines = lines or [self.summary]
        if self.error and self.error not in self.output:  # under the verdict line, before the case it erred on
            lines.insert(1, "  %s" % self.error)
        if self.hint:
            lines.append("  hint: %s" % self.hint)
        if self.repro:
            lines.append("  reproduce without permcheck: python3 %s" % self.repro)
        if self.report:
            lines.append("  report: %s" % self.report)
        return "\n".join(lines)


class ReplayResult:
    """A saved counterexample run again: bool() is True when the property now holds on it."""

    def __init__(self, exit_code, output, stderr):
        self.exit_code, self.output, self.stderr = exit_code, output, stderr

    @property
    def holds(self):
        return self.exit_code == 0

    def __bool__(self):
        return self.holds

    def __repr__(self):
        return "ReplayResult(%s)" % ("now holds" if self.holds else "still fails" if self.exit_code == 1 else
                                     "error %d" % self.exit_code)


def _tensor_maker():
    """JSON values to tensors (when the program imported torch) of their kinds' element types (a mask torch.bool,
    the integer kinds int64, the rest float64); nested lists without torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return lambda v, kind=None: v

    def to_tensor(v, kind=None):
        if v is None:
            return None
        try:
            return torch.tensor(v, dtype=torch.float64).to(_element_type(torch, torch.float64, kind, v))
        except (TypeError, ValueError, RuntimeError):
            return v
    return to_tensor


def _input_kinds(signature):
    """{input: kind} from the record's signature ("pad:n:mask", "ids:n:token=50"); the one-tensor form and real
    inputs have none."""
    inputs = signature.get("inputs") if isinstance(signature, dict) else None
    texts = (str(text).split(":") for text in (inputs if isinstance(inputs, list) else []))
    return {parts[0]: parts[2] for parts in texts if len(parts) >= 3}


def _summary_line(output):
    return next((line.strip() for line in output.splitlines() if line.startswith("audit of ")), "")
