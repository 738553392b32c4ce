# The calling part of a repro.py (a reproduction without permcheck) of a layer called from Python: the inputs as
# tensors of their kinds, the layer (and the reference) called as the audit called it, through the same call mapping
# (_calls.py's _Call, copied above this text: CALLS' arguments, output, cache and cumulative inputs, chunks decoded in
# order), a batch asked as serve answered it; ask(which, side) and ask_batch(which, k) for the comparison
# (repro_compare.py). After the lines that define torch, CASE, CALLS, the layer and _calls.py's text; permcheck
# copies this text into each such repro.py; it is not imported.
DTYPE = getattr(torch, {"tf32": "float32"}.get(CASE["dtype"], CASE["dtype"]), torch.float64)  # a tf32 audit: float32
SIGNATURE_INPUTS = [spec["text"] for spec in CASE["inputs"].values()]  # as --input wrote them


def tensors(values, lengths):
    """The named inputs as tensors of their kinds and shapes, and the lengths of the axes no input has."""
    out = {}
    for name, spec in CASE["inputs"].items():
        shape = [lengths[d] if not d.isdigit() else int(d) for d in spec["dims"]]
        dtype = _element_type(torch, DTYPE, spec["kind"])
        out[name] = torch.tensor(values[name], dtype=torch.float64).to(dtype).reshape(shape).to(DEVICE)
    out.update({_LENGTH + axis: n for axis, n in lengths.items()})
    return out


def answered(which, inputs, items=1, chunked=False):
    """The layer's (or the reference's) outputs by name, called as the audit did (a chunked request's chunks in
    order), `items` cases stacked in the inputs on their batch dims; what the layer raised, raised as itself."""
    layer, call = globals()[which], CALLERS[which]
    try:
        if chunked:
            return call.chunked(layer, torch, inputs, CASE["chunks"], CASE["outputs"])
        if items > 1:
            return call.stacked(layer, torch, inputs, items, CASE["batch_dims"], CASE["outputs"])
        return _named_results(call(layer, torch, inputs, items, one_tensor=CASE["one_tensor"]), CASE["outputs"])
    except (_Raised, _ChunkRaised) as raised:
        raise raised.__cause__ from None


def as_lists(answer):
    return {name: (list(t.shape), t.detach().cpu().double().reshape(-1).tolist()) for name, t in answer.items()}


def ask(which, side):
    """The answer to x, to the transformed inputs or to the earlier request, each output as (shape, flat list of
    numbers)."""
    values, lengths = {"x": (CASE["x"], CASE["lengths"]),
                       "transformed": (CASE["transformed"], CASE["transformed_lengths"]),
                       "before": CASE["before"] and (CASE["before"]["inputs"], CASE["before"]["lengths"])}[side]
    inputs = tensors(values, lengths)
    return as_lists(answered(which, inputs, chunked=side == "transformed" and bool(CASE["chunks"])))


def ask_batch(which, k):
    """The case's item's answer in the finding's batched request k, asked as the audit's batch was answered: a
    module's items in one forward pass, stacked on their batch dims; else one call per item, in order."""
    batch = CASE["batches"][k]
    items = [tensors(values, batch["lengths"]) for values in batch["items"]]
    dims = CASE["batch_dims"]
    if dims and isinstance(globals()[which], torch.nn.Module):
        stacked = {name: torch.cat([item[name] for item in items], dims[name]) if name in dims else items[0][name]
                   for name in items[0]}
        answer = answered(which, stacked, len(items))
        return as_lists({name: t.narrow(dims[name], batch["at"], 1) for name, t in answer.items()})
    return as_lists(answered(which, items[batch["at"]]))


# Where the audit ran it (a GPU's kernels may be what is at fault); the CPU when that device is not here.
DEVICE = CASE["device"] if CASE["device"] == "cpu" or torch.cuda.is_available() else "cpu"
if DEVICE != CASE["device"]:
    print("the audit ran on %s, which this machine lacks: running on the CPU" % CASE["device"])
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = CASE["dtype"] == "tf32"
CALLERS = {}
for which, how in CALLS.items():
    if hasattr(globals()[which], "to"):
        globals()[which] = globals()[which].to(DEVICE)
    CALLERS[which] = _Call(how["arguments"], how["output"], SIGNATURE_INPUTS, how["cache"], how["cumulative"])
    CALLERS[which].device = DEVICE
