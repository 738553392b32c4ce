# The comparison of a repro.py (a reproduction without permcheck), with the Python standard library alone: the part
# every repro.py shares, after the lines that define CASE (the finding: its verdict, its outputs and how each is
# compared) and ask(which, side) (the layer's, or the reference's, answer to x or to the transformed inputs, as
# {output: (shape, flat list of numbers)}; side: "x", "transformed" or "before", a history-dependent finding's
# earlier request) and ask_batch(which, k) (the case's item's answer in the finding's batched request k, as the audit
# sent it). permcheck copies this text into each repro.py it writes; it is not imported.
import math
import sys


class LayerRaised(Exception):
    """What the layer raised answering, as an adapter's error answer says it."""


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
    return largest(name, worst, where, plan["shape"], lhs_name, rhs_name, plan["tolerance"])


def entrywise(name, got, expected, got_name, expected_name, tolerance):
    """Two answers of one output compared entry for entry (NaN equal to NaN): a failure (a sentence) or None;
    prints the largest difference."""
    (got_shape, a), (expected_shape, b) = got, expected
    if list(got_shape) != list(expected_shape):
        return "output %s: %s has shape %s, %s %s" % (name, got_name, tuple(got_shape), expected_name,
                                                      tuple(expected_shape))
    worst, where = 0.0, None
    for k, (p, q) in enumerate(zip(a, b)):
        if p == q or (p != p and q != q):
            gap = 0.0
        elif math.isfinite(p) and math.isfinite(q):
            gap = abs(p - q)
        else:
            gap = math.inf
        if gap > worst or where is None:
            worst, where = gap, k
    return largest(name, worst, where, got_shape, got_name, expected_name, tolerance)


def largest(name, worst, where, shape, got_name, expected_name, tolerance):
    """Prints the largest difference (at the flat index `where`); the failure (a sentence) when it is over the
    tolerance, else None."""
    at = unravel(where, shape) if where is not None else ()
    print("output %s: %s and %s differ by %g at %s (tolerance %g)" % (name, got_name, expected_name, worst, at,
                                                                       tolerance))
    if worst > tolerance:
        return "output %s: %s and %s differ by %g > %g at %s" % (name, got_name, expected_name, worst, tolerance, at)
    return None


def raised_again():
    """A finding that is an exception: the side that answered asked first, then the side that raised; the failure
    when it raises again."""
    r = CASE["raised"]
    which, side = r["which"], r["side"]
    other = ("layer", "x") if which == "reference" else (CASE["x_box"], "x")  # agreement's layer answers x
    if other != (which, side):
        ask(*other)
    print("the audit saw: %s" % r["message"])
    try:
        ask(which, side)
    except Exception as error:  # the layer's own exception, or an adapter's error answer (LayerRaised)
        return ["the %s raised answering %s: %s" % (which, "x" if side == "x" else "the transformed inputs", error)]
    print("the %s answers %s now" % (which, "x" if side == "x" else "the transformed inputs"))
    return []


def judged():
    """The failures the finding shows when asked again: empty once it is fixed."""
    if CASE.get("raised"):
        return raised_again()
    return [failure for failure in asked_again() if failure]


def asked_again():
    """Each output's failure (a sentence) or None, for a finding that is no exception."""
    if CASE["verdict"] == "history-dependent":  # x, the earlier request, x again: the answers to x must agree
        which = CASE["x_box"]
        ask(which, "x")  # twice in a row, as the audit found it answered alike: whatever came before is settled
        first = ask(which, "x")
        ask(which, "before")
        after = ask(which, "x")
        return [entrywise(name, after[name], first[name], "x asked after the earlier request", "x asked first",
                          CASE["tolerances"].get(name, 0.0)) for name in CASE["outputs"]]
    failures = []
    if CASE["verdict"] == "batch-dependent":  # the case's item in its batched request, and asked alone
        for k, batch in enumerate(CASE["batches"]):
            in_batch, alone = ask_batch(batch["which"], k), ask(batch["which"], batch["side"])
            side = "x's answer" if batch["side"] == "x" else "the transformed inputs' answer"
            failures += [entrywise(name, in_batch[name], alone[name], "%s in the batch (item %d of %d)"
                                   % (side, batch["at"], batch["count"]), "%s alone" % side,
                                   CASE["tolerances"].get(name, 0.0))
                         for name in CASE["outputs"]]
        return failures
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
    agreement = CASE["x_box"] == "reference"  # the layer against a reference: both answer x
    lhs = ask("layer", "x" if agreement else "transformed")
    rhs = ask("reference" if agreement else "layer", "x")
    return [compared(name, plan, lhs, rhs, plan["sides"][0], plan["sides"][1], nan_equal=agreement)
            for name, plan in CASE["compare"].items()]


try:
    failures = judged()
except LayerRaised as error:  # an adapter's error answer where the finding is not one: it could not be asked
    sys.stderr.write("repro.py: the adapter answered an error: %s\n" % error)
    sys.exit(2)
for failure in failures:
    print(failure)
print("the bug is there" if failures else "reproduces no longer: fixed")
assert not failures, "; ".join(failures)
