"""What torch.compile did while an audit asked a compiled module (torch.compile(module), an OptimizedModule):
the seconds it spent compiling, the graph breaks, and the frames it left to eager Python (a recompile limit
reached, code it cannot trace). A module that ran in eager for any of it was not compared as compiled, so its
audit is not counted as holding (docs/python.md, "Compiled modules"). Dynamo's caches are reset first, so the
module compiles afresh and nothing it compiled before the audit hides a graph break."""

import contextlib
import sys


def _compiled(module):
    return module is not None and type(module).__name__ == "OptimizedModule" and hasattr(module, "_orig_mod")


def _snapshot(utils):
    counters = utils.counters
    frames = counters.get("frames", {})
    return {"frames": frames.get("total", 0), "compiled": frames.get("ok", 0),
            "graph_breaks": sum(counters.get("graph_break", {}).values()),
            "seconds": sum(utils.compilation_time_metrics.get("_compile.compile_inner", [])),
            "reasons": dict(counters.get("unimplemented", {}), **counters.get("graph_break", {}))}


@contextlib.contextmanager
def watch(*modules):
    """Yields a dict that, after the block, holds what torch.compile did in it (empty when no module is compiled):
    compile_seconds, graph_breaks, eager_frames (frames not compiled) and reasons (its first words per cause)."""
    facts = {}
    if not any(_compiled(m) for m in modules):
        yield facts
        return
    dynamo = sys.modules["torch"]._dynamo
    dynamo.reset()  # compiled afresh, so that every compile and graph break of what the audit asks is seen here
    utils = dynamo.utils
    before = _snapshot(utils)
    try:
        yield facts
    finally:
        after = _snapshot(utils)
        reasons = [text.split("\n")[0] for text, count in after["reasons"].items()
                   if count > before["reasons"].get(text, 0)]
        facts.update(compile_seconds=round(after["seconds"] - before["seconds"], 2),
                     graph_breaks=after["graph_breaks"] - before["graph_breaks"],
                     eager_frames=(after["frames"] - after["compiled"]) - (before["frames"] - before["compiled"]),
                     reasons=reasons)


def judged(result, facts):
    """The result with what torch.compile did (`result.compiled`); a holding audit of a module that ran partly in
    eager is `undecided`, saying why: what was compared was not all compiled code."""
    result.compiled = facts or None
    if facts and (facts["graph_breaks"] or facts["eager_frames"]) and result.holds:
        result.holds, result.verdict = False, "undecided"
        result.error = ("the compiled module ran partly in eager Python (%d graph break(s), %d frame(s) not "
                        "compiled: %s), so its answers were not all compiled code's; the audit held on what ran"
                        % (facts["graph_breaks"], facts["eager_frames"], "; ".join(facts["reasons"]) or "no reason given"))
    return result
