"""permcheck from Python: audit a layer in the process where it lives, from a script or a pytest test.

    import permcheck

    def test_attention_is_equivariant():
        permcheck.assert_equivariant(my_module, axes=["n=1..8"], inputs=["x:n,1,8"], outputs=["y:n,1,8"])

    result = permcheck.audit(my_module, dim=8)        # a Result; bool(result) is True when it holds
    permcheck.replay(result.report, fixed_module)     # the saved counterexample, run again

The layer (a torch.nn.Module, TorchScript included, or a function) is served from this process to the `permcheck`
binary (find_binary says where it is looked for); `serve` is the adapter side of `permcheck audit --exec`.
docs/python.md documents it all.
"""

from permcheck._audit import (AuditError, Comparison, Counterexample, PermcheckNotFound, ReplayResult, Result,
                              audit, find_binary, profile, replay)
from permcheck._protocol import serve

__all__ = ["audit", "profile", "replay", "assert_equivariant", "assert_shift_invariant", "assert_padding_invariant",
           "assert_causal", "assert_packing_invariant", "assert_incremental", "assert_agree", "serve",
           "Result", "Counterexample", "Comparison", "ReplayResult", "AuditError", "PermcheckNotFound",
           "find_binary"]


def _version():
    """The project's version: an installed package's generated permcheck/_version.py, else CMakeLists.txt's
    project(permcheck VERSION ...) beside python/ in a source tree, else "0+unknown"."""
    try:
        from permcheck._version import version
        return version
    except ImportError:  # a source tree
        import os
        import re
    cmakelists = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    try:
        with open(cmakelists, encoding="utf-8") as f:
            found = re.search(r"project\(permcheck\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", f.read())
    except OSError:
        found = None
    return found.group(1) if found else "0+unknown"


__version__ = _version()


def _asserted(result):
    """The result of a holding audit; AssertionError for a failure, AuditError when no verdict was reached."""
    __tracebackhide__ = True  # pytest shows the user's assert_* line, not these frames
    if result.holds:
        return result
    if result.interrupted:
        raise KeyboardInterrupt("the permcheck audit was interrupted")
    if not result.failed:  # error, undecided: no verdict reached
        raise AuditError(result.explanation(), result)
    raise AssertionError(result.explanation())


def _asserting(name, prop, doc):
    """assert_NAME(layer, **audit_options): audit() of `prop`, the Result when it holds (_asserted)."""
    def asserting(layer, **audit_options):
        __tracebackhide__ = True  # pytest shows the user's assert_* line, not these frames
        return _asserted(audit(layer, property=prop, **audit_options))
    asserting.__name__ = asserting.__qualname__ = name
    asserting.__doc__ = doc
    return asserting


assert_equivariant = _asserting("assert_equivariant", "equivariance", """Audit `layer` for permutation equivariance
    (a pooled output: invariance) with audit()'s arguments; returns the Result when it holds. Raises AssertionError
    for a finding, with the shrunk counterexample and the report path; AuditError when the audit reached no
    verdict.""")
assert_shift_invariant = _asserting("assert_shift_invariant", "shift", """Shifting every position id by a constant
    leaves the outputs unchanged; as assert_equivariant otherwise.""")
assert_padding_invariant = _asserting("assert_padding_invariant", "padding", """Pads the mask marks change none of
    the real tokens' outputs; as assert_equivariant otherwise.""")
assert_causal = _asserting("assert_causal", "causal", """No output sees a later token (`causal_axis=` names the
    sequence axis); as assert_equivariant otherwise.""")
assert_packing_invariant = _asserting("assert_packing_invariant", "packing", """Sequences packed into one row stay
    apart; as assert_equivariant otherwise.""")
assert_incremental = _asserting("assert_incremental", "incremental", """Decoding in chunks, a cache carried between
    them (`cache=`, `cumulative=`), gives the one-pass outputs; as assert_equivariant otherwise.""")


def assert_agree(layer, reference, **audit_options):
    """`layer` and `reference` (a reference implementation of the same signature) answer every input alike within
    the tolerance of the coarser precision of the two; as assert_equivariant otherwise."""
    __tracebackhide__ = True
    return _asserted(audit(layer, reference=reference, property="agreement", **audit_options))
