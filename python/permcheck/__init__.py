"""permcheck from Python: audit a layer in the process where it lives, from a script or a pytest test.

    import permcheck

    def test_attention_is_equivariant():
        permcheck.assert_equivariant(my_module, axes=["n=1..8"], inputs=["x:n,1,8"], outputs=["y:n,1,8"])

    result = permcheck.audit(my_module, dim=8)        # a Result; bool(result) is True when it holds
    permcheck.replay(result.report, fixed_module)     # the saved counterexample, run again

The layer (a torch.nn.Module, TorchScript included, or a function) is served from this process over a Unix
socket that the `permcheck` binary connects to: no adapter script, no second `import torch`. The binary is found
through $PERMCHECK_BIN, beside the installed package, in the environment's scripts directory (where `pip install`
puts it), or on PATH. `serve` is the adapter side of `permcheck audit
--exec` (the module permcheck_adapter is the same function).
"""

from permcheck._audit import (AuditError, Comparison, Counterexample, PermcheckNotFound, ReplayResult, Result,
                              audit, find_binary, profile, replay)
from permcheck._protocol import serve

__all__ = ["audit", "profile", "replay", "assert_equivariant", "assert_shift_invariant", "assert_padding_invariant",
           "assert_causal", "assert_packing_invariant", "assert_incremental", "assert_agree", "serve",
           "Result", "Counterexample", "Comparison", "ReplayResult", "AuditError", "PermcheckNotFound",
           "find_binary"]


def _version():
    """The project's version, set in one place, CMakeLists.txt's project(permcheck VERSION ...): an installed
    package (pip, cmake --install) has it in the generated permcheck/_version.py; run from the source tree
    (PYTHONPATH=python) it reads CMakeLists.txt beside python/; elsewhere "0+unknown"."""
    try:
        from permcheck._version import version
        return version
    except ImportError:
        pass
    import os
    import re
    cmakelists = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    try:
        with open(cmakelists, encoding="utf-8") as f:
            found = re.search(r"project\(permcheck\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", f.read())
    except OSError:
        found = None
    # A copy of the package outside both (vendored by hand) still imports; it does not know its version.
    return found.group(1) if found else "0+unknown"


__version__ = _version()


def _asserted(result):
    """The result of a holding audit; AssertionError for a failure, AuditError when no verdict was reached."""
    __tracebackhide__ = True  # pytest shows the user's assert_* line, not these frames
    if result.holds:
        return result
    if result.verdict == "interrupted":
        raise KeyboardInterrupt("the permcheck audit was interrupted")
    if result.verdict in ("error", "undecided"):
        raise AuditError(result.explanation(), result)
    raise AssertionError(result.explanation())


def assert_equivariant(layer, **audit_options):
    """Audit `layer` for permutation equivariance (each output along its axes; an output without an axis must be
    invariant to it, so a pooled output is an invariance check). Raises AssertionError for violated,
    nondeterministic, non-finite, batch-dependent and history-dependent, with the shrunk counterexample and the
    report path;
    AuditError when the audit erred. Takes audit()'s arguments; returns the Result."""
    __tracebackhide__ = True
    return _asserted(audit(layer, property="equivariance", **audit_options))


def assert_shift_invariant(layer, **audit_options):
    """Audit that shifting every position id by a constant leaves the outputs unchanged (a relative position
    encoding); as assert_equivariant otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, property="shift", **audit_options))


def assert_padding_invariant(layer, **audit_options):
    """Audit that padding tokens the mask marks change none of the real tokens' outputs; as assert_equivariant
    otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, property="padding", **audit_options))


def assert_causal(layer, **audit_options):
    """Audit that no output sees a later token: the sequence cut after k positions leaves the first k outputs
    unchanged (`causal_axis=` names the sequence axis when the signature has several); as assert_equivariant
    otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, property="causal", **audit_options))


def assert_packing_invariant(layer, **audit_options):
    """Audit that sequences packed into one row stay apart: each packed sequence's outputs equal its own run's
    (position ids restart at 0 in each sequence; a `segment` input numbers the sequences); as assert_equivariant
    otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, property="packing", **audit_options))


def assert_agree(layer, reference, **audit_options):
    """Audit that `layer` and `reference` (a reference implementation of the same signature: an eager original,
    the code a kernel was ported from) answer every input alike, within the tolerance of the coarser precision of
    the two (`judge_as=` names it); what one raises where the other answers fails too. `reference_arguments=`,
    `reference_output=` and `reference_dtype=` where the reference is called or runs differently. As
    assert_equivariant otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, reference=reference, property="agreement", **audit_options))


def assert_incremental(layer, **audit_options):
    """Audit that decoding in chunks, a cache carried between them, gives the one-pass outputs: `cache=` names
    the argument and answer element that carry the cache ("past_key_values", or ("kv", 1)), `cumulative=` the
    inputs handed from position 0 (["attention_mask"]); without `cache` the layer keeps its own. As
    assert_equivariant otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, property="incremental", **audit_options))
