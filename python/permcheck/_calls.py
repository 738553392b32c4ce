"""How a layer is called: a request's inputs as forward's arguments (serve's `arguments`: input names, constants,
length:AXIS, offset:AXIS, arange:AXIS), the one value of the answer that answers (`output`), a cache carried from
one chunk of a chunked request to the next (`cache`, `cumulative`), and what the layer raised told apart from a
call that does not fit it. One module, used by the server (permcheck/_protocol.py), and copied verbatim by
permcheck into each repro.py it writes (and above permcheck_adapter.py's text beside an adapter's repro.py), which
run without permcheck installed: the Python standard library alone, torch only as the caller hands it in."""

import contextlib
import dataclasses
import os
import threading
import traceback

def _named_results(result, names):
    """The layer's result by output name, before any conversion: a dict by name, a tuple in the request's order, a
    single value the one output."""
    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise ValueError("the layer returned a dict without the output(s) %s (it has %s)"
                             % (", ".join(missing), ", ".join(map(str, result)) or "no keys"))
        return {n: result[n] for n in names}
    if isinstance(result, tuple):
        if len(result) != len(names):
            raise ValueError("the layer returned a tuple of %d values; the request asks for %d output(s): %s"
                             % (len(result), len(names), ", ".join(names)))
        return dict(zip(names, result))
    if len(names) != 1:
        raise ValueError("the layer returned one value; the request asks for %d outputs (%s): return a tuple "
                         "in that order or a dict by name" % (len(names), ", ".join(names)))
    return {names[0]: result}


class _Call:
    """How the layer is called: the request's inputs as forward's arguments (serve's `arguments`), and the one
    value of its result that answers (serve's `output`)."""

    def __init__(self, arguments, output, inputs, cache=None, cumulative=None):
        if cache is not None and not isinstance(cache, str) and not (
                isinstance(cache, (tuple, list)) and len(cache) == 2 and isinstance(cache[0], str)
                and isinstance(cache[1], (int, str)) and not isinstance(cache[1], bool)):
            raise ValueError('cache is "NAME" (an argument, and the key or attribute of the answer that returns the '
                             'cache) or ("NAME", INDEX) (an argument and the index of the answer\'s tuple), got %r'
                             % (cache,))
        self.cache = None if cache is None else (cache, cache) if isinstance(cache, str) else tuple(cache)
        self.exclusive = _Exclusive()  # a chunked request has the layer alone (it may keep its own cache)
        self.device = None  # where derived inputs (length:AXIS, ...) are made: the server's device
        self.serial = False  # every call has the layer alone: a layer that keeps its own cache (no `cache`)
        self.cumulative = set(_as_names(cumulative, "cumulative"))
        if arguments is not None and not isinstance(arguments, (dict, list, tuple)):
            raise ValueError("arguments must be a dict {forward parameter: input or length:AXIS} or a list of "
                             "them, got %s" % type(arguments).__name__)
        sources = list(arguments.values()) if isinstance(arguments, dict) else list(arguments or [])
        sources = [source for source in sources if isinstance(source, str)]  # others are constants, passed as they are
        if "" in sources:
            raise ValueError("each source in arguments is an input name, length:AXIS or a constant (not a "
                             "string), got an empty string")
        if output is not None and (isinstance(output, bool) or not isinstance(output, (int, str))):
            raise ValueError("output must be an index or a key, got %r" % (output,))
        self.arguments, self.output = arguments, output
        # {input: [axis name or None per dim]}, and the axes only an index input names (their lengths come with a
        # request)
        self.dims, self.free = _input_dims(inputs)
        for source in sources:
            if _derived(source) and source.split(":", 1)[1] not in self.free:
                self.axis_place(source.split(":", 1)[1], source)  # refused now, not at the first request

    def axis_place(self, axis, source):
        """(input, dim) where the axis first occurs among the inputs' dims."""
        if self.dims is None:
            raise ValueError("%s needs the inputs' dims: pass inputs=[...] in the --input grammar" % source)
        for name, dims in self.dims.items():
            if axis in dims:
                return name, dims.index(axis)
        raise ValueError("%s: no input has an axis %s (inputs: %s)" % (source, axis, ", ".join(self.dims)))

    def value(self, source, inputs, torch, items, chunk=None):
        if not isinstance(source, str):  # a constant, such as use_cache=False
            return source
        if _derived(source):
            kind, axis = source.split(":", 1)
            if axis in self.free:  # a batch vector's graphs: the request says how many
                if _LENGTH + axis not in inputs:
                    raise ValueError("%s: the request gives no length of the axis %s" % (source, axis))
                first, end = 0, int(inputs[_LENGTH + axis])
            else:
                name, dim = self.axis_place(axis, source)
                first, end = chunk if chunk is not None else (0, _length_of(inputs[name], dim))
            length = end - first
            if kind == "offset":  # the first position of what the call receives: 0 outside a chunked call
                return first if torch is None else torch.tensor(first, dtype=torch.int64, device=self.device)
            if kind == "arange":  # its absolute positions (HF's cache_position)
                return list(range(first, end)) if torch is None else torch.arange(first, end, dtype=torch.int64,
                                                                                  device=self.device)
            return [length] * items if torch is None else torch.full((items,), length, dtype=torch.int64,
                                                                     device=self.device)
        if source not in inputs:
            raise ValueError("arguments names the input %r, which the request does not hold (it holds %s)"
                             % (source, ", ".join(inputs)))
        return inputs[source]

    def __call__(self, layer, torch, inputs, items, one_tensor=False):
        """The layer's answer to one request's inputs ({name: value}), `items` cases in it."""
        with self.exclusive.alone() if self.serial else self.exclusive.shared():
            return self.selected(self.raw(layer, torch, inputs, items, one_tensor))

    def stacked(self, layer, torch, inputs, count, dims, names):
        """The outputs by name of one call on `count` items stacked on their batch dims (`dims`: every input's and
        output's), each output checked to hold the items on its batch dim."""
        outputs = _named_results(self(layer, torch, inputs, count), names)
        for name, value in outputs.items():
            if not hasattr(value, "detach") or value.dim() <= dims[name] or value.shape[dims[name]] != count:
                raise ValueError("output %s has no batch dim %d of %d items" % (name, dims[name], count))
        return outputs

    def chunked(self, layer, torch, inputs, chunks, names):
        """The answer to a chunked request: the layer called on each chunk in order (every input along the axis
        cut to the chunk, a cumulative one from 0), the cache of each answer handed to the next call, the
        outputs joined along the axis (an output without it: the last chunk's)."""
        if not isinstance(chunks, dict) or not isinstance(chunks.get("ends"), list) or not chunks["ends"]:
            raise ValueError('"chunks" must be an object {"axis", "ends", "inputs", "outputs"}')
        with self.exclusive.alone():  # no other call between two chunks of a layer that keeps its own cache
            return self._chunks(layer, torch, inputs, chunks, names)

    def _chunks(self, layer, torch, inputs, chunks, names):
        in_dims, out_dims = chunks.get("inputs") or {}, chunks.get("outputs") or {}
        state, parts, first = None, {name: [] for name in names}, 0
        for k, end in enumerate(chunks["ends"]):
            piece = {name: value if in_dims.get(name) is None
                     else _cut(value, in_dims[name], 0 if name in self.cumulative else first, end, torch)
                     for name, value in inputs.items()}
            try:
                raw = self.raw(layer, torch, piece, 1, chunk=(first, end), state=state, chunked=True)
            except _Raised as error:
                where = "chunk %d of %d, positions %d%s" % (k + 1, len(chunks["ends"]), first,
                                                            " to %d" % (end - 1) if end - first > 1 else "")
                raise _ChunkRaised(where) from error.__cause__
            if self.cache is not None:
                state = self.cache_of(raw)
            for name, value in _named_results(self.selected(raw), names).items():
                parts[name].append(value)
            first = end
        return {name: _joined(parts[name], out_dims.get(name), torch) for name in names}

    def cache_of(self, raw):
        """The cache an answer returns (cache's key, attribute or tuple index)."""
        return _element(raw, self.cache[1], "cache=%r" % (self.cache,), " holding the cache")

    def raw(self, layer, torch, inputs, items, one_tensor=False, chunk=None, state=None, chunked=False):
        """The layer's whole result (before `output` picks from it); in a chunked call `chunk` is (first, end) and
        `state` the cache the previous chunk returned (None: the first chunk, which gets none)."""
        args, kwargs = [], {}
        tensors = {name: value for name, value in inputs.items() if not name.startswith(_LENGTH)}
        if self.arguments is None:
            args, kwargs = ([inputs["x"]], {}) if one_tensor else ([], tensors)
        elif isinstance(self.arguments, dict):
            named = set(s for s in self.arguments.values() if isinstance(s, str) and not _derived(s))
            kwargs = {name: value for name, value in tensors.items() if name not in named}
            for parameter, source in self.arguments.items():
                kwargs[parameter] = self.value(source, inputs, torch, items, chunk)
        else:
            args = [self.value(source, inputs, torch, items, chunk) for source in self.arguments]
        if chunked and self.cache is not None and state is not None:
            kwargs[self.cache[0]] = state
        try:
            with torch.no_grad() if torch is not None else contextlib.nullcontext():
                return layer(*args, **kwargs)
        except Exception as error:
            if _miswired(error):  # the call's arguments, not the layer: an error of the audit's set-up
                raise
            raise _Raised() from error

    def selected(self, result):
        return result if self.output is None else _element(result, self.output, "output=%r" % (self.output,), "")


def _element(result, key, what, holding):
    """result[key], else its attribute `key` (a dataclass or another object); ValueError naming `what` otherwise."""
    with contextlib.suppress(IndexError, KeyError, TypeError):
        return result[key]
    if isinstance(key, str) and hasattr(result, key):
        return getattr(result, key)
    raise ValueError("%s: the layer returned %s, which has no element or attribute %r%s"
                     % (what, _describe(result), key, holding))


class _Exclusive:
    """Calls of the layer share it (several connections answer on threads of their own); a chunked request has it
    alone, so that a layer keeping its own cache decodes one sequence's chunks with no other call between them."""

    def __init__(self):
        self._changed = threading.Condition()
        self._sharing, self._alone = 0, False

    @contextlib.contextmanager
    def shared(self):
        with self._changed:
            self._changed.wait_for(lambda: not self._alone)
            self._sharing += 1
        try:
            yield
        finally:
            with self._changed:
                self._sharing -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def alone(self):
        with self._changed:
            self._changed.wait_for(lambda: not self._alone and self._sharing == 0)
            self._alone = True
        try:
            yield
        finally:
            with self._changed:
                self._alone = False
                self._changed.notify_all()


def _as_names(names, what):
    """A list of input names (one name alone is a list of one)."""
    if names is None:
        return []
    names = [names] if isinstance(names, str) else list(names)
    if not all(isinstance(n, str) for n in names):
        raise ValueError("%s is a list of input names, got %r" % (what, names))
    return names


def _cut(value, dim, first, end, torch):
    """value's entries [first, end) along dim (a tensor, or nested lists)."""
    if torch is not None and hasattr(value, "narrow"):
        return value.narrow(dim, first, end - first)
    if dim == 0:
        return value[first:end]
    return [_cut(v, dim - 1, first, end, torch) for v in value]


def _joined(parts, dim, torch):
    """The chunks' answers joined along dim (None: the last chunk's)."""
    if dim is None:
        return parts[-1]
    if torch is not None and all(hasattr(p, "narrow") for p in parts):
        return torch.cat(parts, dim)
    if dim == 0:
        return [v for p in parts for v in p]
    return [_joined([p[i] for p in parts], dim - 1, torch) for i in range(len(parts[0]))]


def _derived(source):
    """Whether an arguments source is made from the request rather than named: length:AXIS, offset:AXIS or
    arange:AXIS (not a constant, which is not a string)."""
    return isinstance(source, str) and source.split(":", 1)[0] in ("length", "offset", "arange") and ":" in source


def _describe(result):
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return "a %s of fields %s" % (type(result).__name__, ", ".join(f.name for f in dataclasses.fields(result)))
    if isinstance(result, dict):
        return "a dict of keys %s" % ", ".join(map(repr, result))
    if isinstance(result, (tuple, list)):
        return "a %s of %d values" % (type(result).__name__, len(result))
    return "a %s" % type(result).__name__


def _length_of(value, dim):
    if hasattr(value, "shape"):
        return int(value.shape[dim])
    for _ in range(dim):
        value = value[0]
    return len(value)


def _input_dims(inputs):
    """({input: [axis name, or None for a fixed length, per dim]}, the axes that only an index input names) from
    --input texts ("x:n,8", "pad:n:mask", "batch:nodes:index=graphs" with no input over graphs); (None, set())
    without them."""
    if inputs is None:
        return None, set()
    dims, indexed = {}, set()
    for text in [inputs] if isinstance(inputs, str) else inputs:
        parts = str(text).split(":")
        if len(parts) < 2 or not parts[0]:
            raise ValueError("input %r: expected NAME:DIMS[:KIND], e.g. x:n,8" % (text,))
        labels = [d.strip() for d in parts[1].split(",")] if parts[1] else []
        dims[parts[0]] = [None if d.isdigit() else d for d in labels]
        if len(parts) >= 3 and parts[2].startswith("index="):
            indexed.add(parts[2][len("index="):].split(",")[0])  # index=AXIS or index=AXIS,sorted[=ROW]
    return dims, {axis for axis in indexed if not any(axis in d for d in dims.values())}


def _element_type(torch, dtype, kind, values=()):
    """The torch dtype of an input of a kind as --input or a request's "kinds" names it: a mask's bool, a real
    input's `dtype`, every other kind's int64 (ids, positions, indices and mask=keep travel as integers); an input
    of no declared kind is told by the JSON types of its values (booleans a mask, integers an index)."""
    if kind is None:
        types = _leaf_types(values)
        kind = "mask" if types == {bool} else "index" if types == {int} else "float"
    if kind == "mask":
        return torch.bool
    if str(kind).split("=")[0] in ("float", "real"):
        return dtype
    if not _integral(values):  # a kind mistyped, or reals under an integer kind: never truncated
        raise ValueError("an input of kind %r travels as integers, but holds other values" % (kind,))
    return torch.int64


def _integral(values):
    if isinstance(values, (list, tuple)):
        return all(map(_integral, values))
    return isinstance(values, (int, bool)) or (isinstance(values, float) and values.is_integer())


def _leaf_types(values):
    return set().union(*map(_leaf_types, values)) if isinstance(values, list) else {type(values)}


_LENGTH = "#length:"  # an input name no signature has: the length of a free axis, from the request's "lengths"


class _Raised(Exception):
    """The layer's own call raised (its cause): answered with "raised": true, which permcheck reads as the layer's
    finding where the property makes it one (decoding in chunks, agreement with a reference), else as an error."""


class _ChunkRaised(Exception):
    """The layer raised calling one chunk of a chunked request (its cause): the incremental property's finding,
    answered with "raised": true; `where` names the chunk."""

    def __init__(self, where):
        super().__init__(where)
        self.where = where


def _miswired(error):
    """Whether an exception of a call says its arguments do not fit the layer's signature (a cache= or arguments=
    route the layer does not take), which is the set-up's error, not the layer's finding. Told by where it was
    raised: binding the call permcheck makes (no frame below it but torch's own, which dispatch to forward, a
    compiled module's included), never inside the layer's code, where the same words are a bug of the layer (a
    helper of its own called with one argument too many)."""
    text = str(error)
    below = traceback.extract_tb(error.__traceback__)[1:]  # the frames under the call in _Call.call
    return isinstance(error, TypeError) and all(os.sep + "torch" + os.sep in f.filename for f in below) and any(
        words in text for words in ("unexpected keyword argument", "got multiple values for argument",
                                    "required positional argument", "positional argument"))
