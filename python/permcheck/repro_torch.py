# The calling part of a repro.py (a reproduction without permcheck) of a layer called from Python: the inputs as
# tensors of their kinds, the layer (and the reference) called as the audit called it (CALLS: arguments, output,
# cache and cumulative inputs), chunks decoded in order, a batch asked as serve answered it; ask(which, side) and
# ask_batch(which, k) for the comparison (repro_compare.py). After the lines that define torch, CASE, CALLS and the
# layer; permcheck copies this text into each such repro.py; it is not imported.
INTEGER_KINDS = ("index", "token", "position", "segment", "mask=keep")
DTYPE = {"float64": torch.float64, "float32": torch.float32, "tf32": torch.float32, "float16": torch.float16,
         "bfloat16": torch.bfloat16}.get(CASE["dtype"], torch.float64)


def tensors(values, lengths):
    """The named inputs as tensors of their kinds and shapes."""
    out = {}
    for name, spec in CASE["inputs"].items():
        shape = [lengths[d] if not d.isdigit() else int(d) for d in spec["dims"]]
        kind = spec["kind"]
        dtype = torch.int64 if kind in INTEGER_KINDS else torch.bool if kind == "mask" else DTYPE
        out[name] = torch.tensor(values[name], dtype=torch.float64).to(dtype).reshape(shape).to(DEVICE)
    return out


def length_of(inputs, lengths, axis):
    for name, spec in CASE["inputs"].items():
        if axis in spec["dims"]:
            return inputs[name].shape[spec["dims"].index(axis)]
    return lengths[axis]


def called(which, inputs, lengths, chunk=None, state=None):
    """The layer's (or the reference's) whole result, called as the audit did; in a chunk, (first, end) of its
    positions, and the cache the previous chunk returned."""
    how = CALLS[which]
    arguments, layer = how["arguments"], globals()[which]

    def value(source):
        if not isinstance(source, str):
            return source
        kind, _, axis = source.partition(":")
        if kind in ("length", "offset", "arange") and axis:
            first, end = chunk if chunk is not None else (0, length_of(inputs, lengths, axis))
            return {"length": lambda: torch.full((1,), end - first, dtype=torch.int64),
                    "offset": lambda: torch.tensor(first),
                    "arange": lambda: torch.arange(first, end)}[kind]().to(DEVICE)
        return inputs[source]

    if arguments is None and CASE["one_tensor"]:
        args, kwargs = [inputs["x"]], {}
    elif arguments is None:
        args, kwargs = [], dict(inputs)
    elif isinstance(arguments, dict):
        named = set(s for s in arguments.values() if isinstance(s, str))
        kwargs = {k: v for k, v in inputs.items() if k not in named}
        kwargs.update({parameter: value(source) for parameter, source in arguments.items()})
        args = []
    else:
        args, kwargs = [value(source) for source in arguments], {}
    if how["cache"] and state is not None:
        kwargs[how["cache"][0]] = state
    with torch.no_grad():
        return layer(*args, **kwargs)


def element(result, key):
    try:
        return result[key]
    except (IndexError, KeyError, TypeError):
        return getattr(result, key)


def named(which, result):
    """The outputs of a result by name, as tensors."""
    if CALLS[which]["output"] is not None:
        result = element(result, CALLS[which]["output"])
    names = CASE["outputs"]
    if isinstance(result, dict):
        return {n: result[n] for n in names}
    if isinstance(result, tuple):
        return dict(zip(names, result))
    return {names[0]: result}


def decoded(which, inputs, lengths):
    """The answer of decoding in chunks, as the audit's chunked request asked: the layer called on each chunk in
    order (every input cut to the chunk, a cumulative one from position 0), each answer's cache handed to the next
    call, the outputs joined along the axis (an output without it: the last chunk's)."""
    chunks, how = CASE["chunks"], CALLS[which]
    state, parts, first = None, {name: [] for name in CASE["outputs"]}, 0
    for end in chunks["ends"]:
        piece = {}
        for name, value in inputs.items():
            dim = chunks["inputs"].get(name)
            start = 0 if name in how["cumulative"] else first
            piece[name] = value if dim is None else value.narrow(dim, start, end - start)
        result = called(which, piece, lengths, chunk=(first, end), state=state)
        if how["cache"]:
            state = element(result, how["cache"][1])
        for name, value in named(which, result).items():
            parts[name].append(value)
        first = end
    return {name: torch.cat(values, chunks["outputs"][name]) if name in chunks["outputs"] else values[-1]
            for name, values in parts.items()}


def as_lists(answer):
    return {name: (list(t.shape), t.detach().cpu().double().reshape(-1).tolist()) for name, t in answer.items()}


def ask(which, side):
    """The answer to x, to the transformed inputs or to the earlier request, each output as (shape, flat list of
    numbers)."""
    values, lengths = {"x": (CASE["x"], CASE["lengths"]),
                       "transformed": (CASE["transformed"], CASE["transformed_lengths"]),
                       "before": CASE["before"] and (CASE["before"]["inputs"], CASE["before"]["lengths"])}[side]
    inputs = tensors(values, lengths)
    if side == "transformed" and CASE["chunks"]:
        return as_lists(decoded(which, inputs, lengths))
    return as_lists(named(which, called(which, inputs, lengths)))


def ask_batch(which, k):
    """The case's item's answer in the finding's batched request k, asked as the audit's batch was answered: a
    module's items in one forward pass, stacked on their batch dims; else one call per item, in order."""
    batch = CASE["batches"][k]
    items = [tensors(values, batch["lengths"]) for values in batch["items"]]
    dims = CASE["batch_dims"]
    if dims and isinstance(globals()[which], torch.nn.Module):
        stacked = {name: torch.cat([item[name] for item in items], dims[name]) for name in items[0]}
        answer = named(which, called(which, stacked, batch["lengths"]))
        return as_lists({name: t.narrow(dims[name], batch["at"], 1) for name, t in answer.items()})
    answers = [named(which, called(which, item, batch["lengths"])) for item in items]
    return as_lists(answers[batch["at"]])


# Where the audit ran it (a GPU's kernels may be what is at fault); the CPU when that device is not here.
DEVICE = CASE["device"] if CASE["device"] == "cpu" or torch.cuda.is_available() else "cpu"
if DEVICE != CASE["device"]:
    print("the audit ran on %s, which this machine lacks: running on the CPU" % CASE["device"])
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = CASE["dtype"] == "tf32"
for which in CALLS:
    if hasattr(globals()[which], "to"):
        globals()[which] = globals()[which].to(DEVICE)
