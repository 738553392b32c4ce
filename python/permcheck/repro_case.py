# The case of a repro.py (a reproduction without permcheck) of a layer called from Python, made from a report's
# record with the Python standard library alone: case_of(record) is the CASE every such repro.py judges with (its
# inputs, each side's requests, how each output is compared). The Python package imports it to write CASE as
# literals (_repro.py); permcheck copies this text into the repro.py of a TorchScript file's finding, which reads
# the record written beside it. Not for an adapter program's repro (report/repro.cpp writes its CASE).

ASKS = 5  # a nondeterministic finding: how many times the repro asks x


def case_of(record, against):
    """The case: the signature's inputs (dims, kinds) and outputs, x, the inputs the transformed side was asked
    (every index input already renumbered; a chunked request's chunks), how each output is compared (compared_from /
    expected_from: the flat index of each compared entry in the transformed side's answer and in x's; ignored:
    entries left out), the tolerances, and what a finding that is no comparison needs: the side that raised, the
    earlier request of a history, the batched requests of a batch (each item, the case's place). `against`: whether
    the property compares the layer with a reference (what the binary says of it: permcheck describe --json)."""
    c = record["counterexample"]
    signature = _signature(record["signature"])
    inputs = {}
    for text in signature["inputs"]:
        parts = text.split(":")
        inputs[parts[0]] = {"dims": parts[1].split(","), "kind": parts[2] if len(parts) > 2 else "float", "text": text}
    compare = {name: dict(o["repro"], tolerance=o.get("tolerance", 0.0))
               for name, o in c.get("outputs", {}).items() if "repro" in o}
    transformed = c.get("transformed", {})
    raised = None
    if c.get("raised"):  # which side raised: the reference answering x, or the layer answering its side
        by_reference = bool(c.get("raised_by_reference"))
        raised = {"which": "reference" if by_reference else "layer",
                  "side": "x" if by_reference or against else "transformed", "message": c["raised"]}
    elif c.get("erred_side"):  # an error's case, asked again alone: the side that raised must raise again
        raised = {"which": "reference" if c.get("erred_by_reference") else "layer", "side": c["erred_side"],
                  "message": record.get("error", "")}
    before = c.get("asked_before")
    details = record.get("details") or {}
    return {
        "property": record.get("property"), "verdict": record.get("verdict"), "asks": ASKS,
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
        "device": (details.get("audit") or details.get("audit_torch") or {}).get("device") or "cpu",
        "one_tensor": "one_tensor" in record["signature"],
    }


def _chunks(signature, c):
    """The chunking of an incremental case, as its chunked request says it: the axis, the ends of the chunks, and
    the dim of every input and output along the axis; None for another property."""
    cuts = c.get("part") or {}  # the incremental property's part: the axis, the chunks' ends but the last
    if not cuts.get("chunked"):
        return None
    axis = cuts["axis"]

    def dims(texts):
        shapes = {text.split(":")[0]: text.split(":")[1].split(",") for text in texts}
        return {name: shape.index(axis) for name, shape in shapes.items() if axis in shape}
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


def literal(value):
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
