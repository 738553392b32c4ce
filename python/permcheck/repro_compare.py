# The comparison of a repro.py (a reproduction without permcheck), with the Python standard library alone: the part
# every repro.py shares, after the lines that define CASE (the finding: its verdict, its outputs and how each is
# compared) and ask(which, side) (the layer's, or the reference's, answer to x or to the transformed inputs, as
# {output: (shape, flat list of numbers)}). permcheck copies this text into each repro.py it writes; it is not imported.
import math


def same_entries(a, b):
    """Entry for entry equal, NaN equal to NaN."""
    return len(a) == len(b) and all(p == q or (p != p and q != q) for p, q in zip(a, b))


def unravel(flat, shape):
    where = []
    for size in reversed(shape):
        where.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(where))


def picked(answer, positions, name, side):
    """The entries of an answer a comparison takes (positions: flat indices into it)."""
    shape, flat = answer
    if positions and max(positions) >= len(flat):
        raise LookupError("output %s: %s has shape %s, smaller than the one compared (%d entries)"
                          % (name, side, tuple(shape), max(positions) + 1))
    return [flat[i] for i in positions]


def compared(name, plan, lhs, rhs, lhs_name, rhs_name, nan_equal):
    """One output's failure (a sentence) or None; prints the largest difference."""
    try:
        got = picked(lhs[name], plan["compared_from"], name, lhs_name)
        expected = picked(rhs[name], plan["expected_from"], name, rhs_name)
    except LookupError as error:
        return str(error)
    if len(got) != len(expected):
        return "output %s: %s has %d entries, %s %d" % (name, lhs_name, len(got), rhs_name, len(expected))
    left_out = set(plan.get("ignored", []))
    worst, where = 0.0, None
    for k, (a, b) in enumerate(zip(got, expected)):
        if k in left_out:
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            if nan_equal and (a == b or (a != a and b != b)):
                continue
            return "output %s: a non-finite entry at %s (%s: %r, %s: %r)" % (
                name, unravel(k, plan["shape"]), lhs_name, a, rhs_name, b)
        if abs(a - b) > worst or where is None:
            worst, where = abs(a - b), k
    tolerance = plan["tolerance"]
    at = unravel(where, plan["shape"]) if where is not None else ()
    print("output %s: %s and %s differ by %g at %s (tolerance %g)" % (name, lhs_name, rhs_name, worst, at, tolerance))
    if worst > tolerance:
        return "output %s: %s and %s differ by %g > %g at %s" % (name, lhs_name, rhs_name, worst, tolerance, at)
    return None


def judged():
    """The failures the finding shows when asked again: empty once it is fixed."""
    failures = []
    if CASE["verdict"] == "nondeterministic":  # x asked several times: every answer must be the first
        first = ask("layer", "x")
        for k in range(2, CASE["asks"] + 1):
            again = ask("layer", "x")
            for name in CASE["outputs"]:
                if not same_entries(first[name][1], again[name][1]) or first[name][0] != again[name][0]:
                    diffs = [abs(a - b) for a, b in zip(first[name][1], again[name][1]) if a == a and b == b]
                    failures.append("output %s: ask %d of x differs from ask 1 (by up to %g)"
                                    % (name, k, max(diffs) if diffs else float("nan")))
        return failures
    agreement = CASE["property"] == "agreement"
    lhs = ask("layer", "x" if agreement else "transformed")
    rhs = ask("reference" if agreement else "layer", "x")
    for name, plan in CASE["compare"].items():
        failure = compared(name, plan, lhs, rhs, plan["sides"][0], plan["sides"][1], nan_equal=agreement)
        if failure:
            failures.append(failure)
    return failures


failures = judged()
for failure in failures:
    print(failure)
print("the bug is there" if failures else "reproduces no longer: fixed")
assert not failures, "; ".join(failures)
