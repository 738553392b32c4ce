"""The protocol's Python side: serve a Python layer to `permcheck audit --exec` in one line.

    from permcheck_adapter import serve    # or: from permcheck import serve
    serve(my_layer)                        # a function of named inputs returning named outputs (or one output)
    serve(module, dtype=torch.float32)     # any torch.nn.Module, in eval mode, under no_grad
    serve(module, arguments={"src": "x"}, output=0)   # forward's own parameter names; one element of a tuple

permcheck puts the directory of the package on the PYTHONPATH of the programs it runs, so the import works with
no set-up. Plain Python 3, standard library only; PyTorch is used only for a torch module or when a dtype is
given, and is then the one the user's program already imported. The same server answers the in-process audits
of permcheck.audit (one connection of a Unix socket for each adapter process, permcheck/_audit.py).

The protocol (docs/protocol.md): permcheck starts the program once and writes one JSON request
per line on its stdin; serve() answers each with one line on stdout, in order, and returns at end of input.

One-tensor form (`permcheck audit --dim D`):
    -> {"id": 7, "x": [[0.5, -1.0], [2.0, 0.25]]}        n rows (positions) of D numbers (features)
    <- {"id": 7, "y": [[...], [...]]}                      a sequence layer: n rows
    <- {"id": 7, "y": [...]}                               a pooled layer (--output pooled): one vector
    The layer is called with x as its one positional argument: a module gets an (n, D) tensor, a function a
    list of n lists (a tensor when serve() was given a dtype).

Named form (`permcheck audit --axis ... --input ... --output ...`):
    -> {"id": 7, "inputs": {"q": [[...]], "pad": [true, false]}, "shapes": {"q": [2, 8], "pad": [2]},
        "outputs": ["y"]}
    <- {"id": 7, "outputs": {"y": [[...]]}}
    The layer is called with the inputs as keyword arguments of those names (module(**inputs) calls forward).
    Nested arrays in the order of the input's dims; `shapes` rebuilds a tensor with a dim of length 0. Kinds:
    JSON booleans are a mask (torch.bool), JSON integers an index (torch.int64), numbers with a fraction or an
    exponent real values (the float dtype). A `kinds` object in the request ({"edge_index": "index"}), or the
    `kinds` argument of serve(), names the kind where the values cannot, e.g. an empty index input. Token ids
    ("token"), position ids ("position"), sequence indices ("segment") and a mask of 1 = keep ("mask=keep") are
    int64 tensors for a module and
    lists of ints for a function; a mask ("mask", True = padding) stays torch.bool.

Taps (where symmetry first breaks), both forms, for a torch module unless serve(..., taps=False):
    every answer carries "taps_offered": true; permcheck then, after a violation, sends the counterexample's
    requests with "taps": true, answered with the outputs of the module's submodules (forward hooks, the root
    left out), in the order they finished:
    <- {"id": 7, "outputs": {...}, "taps_offered": true,
        "taps": [{"name": "blocks.0", "shape": [2, 8], "values": [[...], [...]]}, ...]}
    An adapter of your own may add "dims": ["n", null] to a tap (the axis each dim follows, null for none);
    without it permcheck finds the axes itself by probing (docs/reports.md, "Where symmetry first breaks"). A tap whose
    values cannot be sent is {"name": "blocks.0", "not_comparable": "a nested tensor"}: listed, with its reason.

Batches (serve's `batch`, default 256): the first answer announces "batch": K, and for a torch module
"stacked": true; permcheck then sends several cases per request, either as a list of ordinary requests
({"id": 7, "batch_dims": {...}, "batch": [REQUEST, ...]}, answered {"id": 7, "batch": [ANSWER, ...]}) or, for
a module, stacked: each input one tensor with the cases on its batch dim, as base64 of little-endian float64
({"id": 7, "stacked": K, "batch_dims": {...}, "inputs": {"x": "BASE64"}, "shapes": {...}, ...}, answered
{"id": 7, "outputs": {"y": "BASE64"}, "shapes": {...}}). docs/protocol.md, "Batched requests" and "Stacked batches".

Each request line is parsed once and told apart by the keys of the request object itself ("stacked", "batch",
"taps", "inputs", "x"), never by its text: input names live inside "inputs", "shapes" and "kinds" and output names
in "outputs", so an input or output may be named batch, stacked, taps, shapes or id like any other.

Arguments and outputs (serve's `arguments` and `output`), for a layer whose forward names its parameters
otherwise or returns several values:
    arguments={"src": "x", "lengths": "length:n"}   forward(src=<input x>, lengths=<int64 tensor>): each key a
                                                    parameter of forward, each value an input of the signature or
                                                    length:AXIS (an int64 tensor holding the axis's length once
                                                    per item of the request: [n], or [n] * K for K stacked cases),
                                                    offset:AXIS (a 0-d int64 tensor, the first position of what
                                                    the call receives: 0) or arange:AXIS (an int64 vector of its
                                                    positions, 0 .. n-1: HF's cache_position);
                                                    inputs no value names are passed under their own names;
                                                    a value that is not a string is a constant, passed as it is
                                                    ({"use_cache": False})
    arguments=["x", "length:n"]                     the same, passed positionally in that order
    output=0, output="last_hidden_state"            the element of a tuple (or list) answer, the key of a dict
                                                    answer, or the attribute of another object (a dataclass),
                                                    that answers the request (before the rules below)
    length:AXIS needs the dims of the inputs: serve(..., inputs=["x:n,8"]) in the --input grammar (permcheck.audit
    passes its own).

Answers, both forms:
    a single value (a tensor, a nested list, a number)   answers the one output the request names (y)
    a tuple                                             answers the outputs in the request's order
    a dict                                              answers them by name (other keys are ignored)
    an exception                                        {"id": 7, "error": "ValueError: ..."}: the last line of
                                                        its traceback (the whole traceback goes to stderr)

stdout carries only answers: while serve() runs, sys.stdout (and file descriptor 1, so C extensions too) is
redirected to stderr, so whatever the user's code prints goes to stderr. Non-finite numbers are written as
Python's json writes them (NaN, Infinity, -Infinity), which permcheck accepts and judges. serve() exits quietly,
without a traceback, when permcheck closes the pipe or on Ctrl-C.
"""

import array
import base64
import json
import os
import sys
import traceback

if "_Call" not in globals():  # permcheck_adapter.py beside an adapter's repro.py holds _calls.py's text above this
    from permcheck._calls import (_LENGTH, _Call, _ChunkRaised, _Raised, _free_axes, _input_dims, _miswired,
                                  _named_results)

__all__ = ["serve"]

_KINDS = ("float", "mask", "index", "token", "position", "mask=keep", "segment")
# The kinds that reach a torch module as int64: index, token ids, position ids, and a mask=keep (1 = a real
# position, 0 = padding: the attention_mask of common model code). A mask is torch.bool, a float the float dtype.
_INTEGER_KINDS = ("index", "token", "position", "mask=keep", "segment")


def serve(layer, dtype=None, *, kinds=None, taps=True, stdin=None, stdout=None, batch=256, stacked=True,
          arguments=None, output=None, inputs=None, cache=None, cumulative=None, device=None):
    """Answer permcheck's requests with `layer` until end of input.

    layer   a callable (a function of named inputs, see the module docstring) or a torch.nn.Module, which is
            put in eval mode and called under torch.no_grad().
    dtype   the float dtype of the tensors the layer receives: a torch dtype or its name ("float32",
            "float64", "bfloat16", "float16"). A module is converted to it (module.to(dtype)); without it a
            module computes in the dtype of its first floating parameter (float32 if it has none) and a function
            receives nested lists.
    kinds   {input name: "float" | "mask" | "index"}, for an input whose kind its values cannot show.
    batch   the most cases one request may hold (announced to permcheck in the first answer): a torch
            module then runs one forward pass per batch, its cases stacked on the batch dims permcheck names,
            and a function is called once per case; 1 or None: one case per request.
    stacked a torch module also announces "stacked": permcheck then sends a batch as one tensor per input, its
            cases stacked on the batch dim and its numbers in binary (base64), and reads the outputs back the same
            way: the fast form. False: batches item by item, in JSON numbers.
    taps    a torch module offers its submodules' outputs ("taps", see the module docstring) unless False:
            after a violation permcheck then names the first submodule that breaks the symmetry.
    arguments
            {forward's parameter: input name or "length:AXIS"}, or a list of them passed positionally: see the
            module docstring.
    output  an index (a tuple or list answer), a key (a dict answer) or an attribute (a dataclass or another
            object): the one value that answers.
    inputs  the signature's inputs in permcheck's --input grammar ("x:n,8"), needed by "length:AXIS" only.
    cache   how a chunked request (the incremental property) carries the layer's cache from one chunk to the next:
            "past_key_values" (the keyword argument that takes it, and the key or attribute of the answer that
            returns it) or ("kv", 1) (an argument name and the index of the answer's tuple). The first chunk gets
            no cache. Without it the layer keeps its own (a start_pos style cache): the chunks are called in
            order and nothing is passed.
    cumulative
            the inputs a chunk receives from position 0 to its end (HF's attention_mask in cached decoding);
            the others hold the chunk's positions only.
    device  where the inputs are made ("cuda:0", a torch.device): by default a module's own (its first parameter's
            or buffer's), the CPU for a function. Answers are brought back to the CPU.
    stdin, stdout
            text streams to read requests from and write answers to; by default the process's own, with
            stdout claimed for answers as the module docstring says.
    """
    server = _Server(layer, dtype, kinds, taps=taps, batch=batch, stacked=stacked,
                     call=_Call(arguments, output, inputs, cache, cumulative), device=device)
    requests = stdin if stdin is not None else sys.stdin
    answers, restore = (stdout, None) if stdout is not None else _claim_stdout()
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr  # what the user's code prints goes to stderr
    try:
        server.answer_all(requests, answers)
    except BrokenPipeError:
        _quiet_exit(0, answers)  # permcheck closed the pipe: it needs no more answers
    except KeyboardInterrupt:
        _quiet_exit(130, answers)
    finally:
        sys.stdout = saved_stdout
        if restore is not None:
            restore()


# ---------------------------------------------------------------------------------------------------------
# The server: one request line parsed once, dispatched on the request object's own keys


class _Server:
    """One served layer. Each request line is parsed once and dispatched on the top-level keys of the request
    object ("stacked", "batch", "taps"), never on its text: input names live inside "inputs", "shapes" and
    "kinds", output names in "outputs", so an input or output may be called batch, stacked, taps, shapes or id."""

    def __init__(self, layer, dtype, kinds, *, taps, batch, stacked, call=None, convert=True, device=None):
        self.call = call if call is not None else _Call(None, None, None)
        self.kinds = dict(kinds or {})
        for name, kind in self.kinds.items():
            if kind not in _KINDS:
                raise ValueError("kind of input %r is %r; expected one of %s" % (name, kind, ", ".join(_KINDS)))
        # torch is None for a function served without a dtype: it receives nested lists, not tensors.
        self.torch = torch = _torch_if_needed(layer, dtype)
        self.is_module = torch is not None and isinstance(layer, torch.nn.Module)
        if torch is not None:
            given = dtype is not None
            dtype = _resolve_dtype(torch, layer if self.is_module else None, dtype)
            if self.is_module and given and convert:
                layer.to(dtype)  # floating parameters and buffers only; a module converts in place
        if self.is_module and convert:
            layer.eval()
        self.layer, self.dtype = layer, dtype
        # Where the inputs are made: the given device, else a module's own; answers come back to the CPU.
        self.device = _resolve_device(torch, layer if self.is_module else None, device) if torch is not None else None
        self.call.device = self.device
        self.offers_taps = bool(taps) and self.is_module
        # What the first ordinary answer announces ({} when nothing: one case per request).
        self.announcement = {}
        self.exceptions = _Exceptions()  # what the layer raised: the first traceback shown, the rest counted
        if batch is not None and batch > 1:
            self.announcement["batch"] = int(batch)
            if self.is_module and stacked:
                self.announcement["stacked"] = True

    def answer_all(self, requests, answers):
        """Answers every request line of the text stream `requests` on `answers`, one line each, in order."""
        try:
            for line in requests:
                if not line.strip():
                    continue
                answers.write(json.dumps(self.answer_line(line)) + "\n")
                answers.flush()
        finally:
            self.exceptions.summarise()

    def answer_line(self, line):
        """The answer object to one request line."""
        try:
            request = json.loads(line)
        except ValueError as error:
            return _error_answer(None, error, self.exceptions)
        if isinstance(request, dict) and "stacked" in request:
            return self.answer_stacked(request)
        if isinstance(request, dict) and "batch" in request:
            # A batch's taps are never asked for: permcheck asks them one request each.
            return self.answer_batch(request)
        answer = self.answer_with_taps(request) if self.offers_taps else self.answer(request)
        if self.announcement:
            answer.update(self.announcement)
            self.announcement = {}  # announced once
        return answer

    # One request

    def answer(self, request):
        """The answer object to one ordinary request (an object, or a batch's item): outputs, or an error naming
        what went wrong."""
        request_id = request.get("id") if isinstance(request, dict) else None
        try:
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object, got %s" % type(request).__name__)
            if "inputs" in request:
                names = request.get("outputs")
                if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                    raise ValueError('"outputs" must be a non-empty list of output names')
                inputs = _named_inputs(request, self.torch, self.dtype, self.kinds, self.device)
                if "chunks" in request:  # the incremental property: the chunks in order, a cache carried between
                    result = self.call.chunked(self.layer, self.torch, inputs, request["chunks"], names)
                    return {"id": request_id, "outputs": _outputs(result, names), "chunked": True}
                result = self.call(self.layer, self.torch, inputs, 1)
                return {"id": request_id, "outputs": _outputs(result, names)}
            if "x" in request:
                x = request["x"]
                if self.torch is not None:
                    x = self.torch.tensor(x, dtype=self.dtype, device=self.device)
                result = self.call(self.layer, self.torch, {"x": x}, 1, one_tensor=True)
                return {"id": request_id, "y": _outputs(result, ["y"])["y"]}
            raise ValueError('a request holds "x" (one tensor) or "inputs" (named inputs); this one holds neither')
        except (_ChunkRaised, _Raised) as raised:  # the layer's own exception: a finding in chunks or against a reference
            answer = _error_answer(request_id, raised, self.exceptions)
            if isinstance(raised, _ChunkRaised):
                answer["error"] += " (%s)" % raised.where
            answer["raised"] = True
            return answer
        except Exception as error:  # an answer, not a crash: permcheck reports it with the request
            return _error_answer(request_id, error, self.exceptions)

    def answer_with_taps(self, request):
        """answer(), offering taps, and with them when the request asks ("taps": true)."""
        if isinstance(request, dict) and request.get("taps") is True:
            with _TapRecorder(self.layer, self.torch) as recorder:
                answer = self.answer(request)
            if "error" not in answer:
                answer["taps"] = recorder.taps
                if not recorder.taps:  # why there are none, in the module's terms
                    children = len(list(self.layer.children())) if hasattr(self.layer, "children") else 0
                    answer["taps_none"] = ("the module has no submodules" if not children else
                                           "none of the module's %d submodules ran" % children)
        else:
            answer = self.answer(request)
        if "error" not in answer:  # an error answer is only the error
            answer["taps_offered"] = True
        return answer

    # Batched requests: {"id": 7, "batch_dims": {"x": 0, "y": 0}, "batch": [REQUEST, ...]} answered by
    # {"id": 7, "batch": [ANSWER, ...]}, one ordinary answer (without id) per item, in order.

    def answer_batch(self, request):
        """The answer object to a batched request: one stacked forward pass when the layer is a torch module and
        every input and output has a batch dim, else (or when that forward raises) one call per item."""
        request_id = request.get("id")
        try:
            items = request["batch"]
            if not isinstance(items, list):
                raise ValueError('"batch" must be a list of request objects')
            dims = request.get("batch_dims")
            if self.is_module and dims and len(items) > 1:
                try:
                    return {"id": request_id, "batch": self.stacked_items(items, dims)}
                except Exception as error:  # each item on its own, so that each gets its own answer or error
                    self.exceptions.show(error, "the stacked forward pass failed; answering item by item")
            answers = []
            for item in items:
                answer = self.answer(item)
                answer.pop("id", None)
                answers.append(answer)
            return {"id": request_id, "batch": answers}
        except Exception as error:
            return _error_answer(request_id, error)

    def stacked_items(self, items, dims):
        """The items' answers from one forward pass over their inputs stacked on their batch dims."""
        torch, first, count = self.torch, items[0], len(items)
        names = first["outputs"]
        declared = dict(first.get("kinds") or {})
        declared.update(self.kinds)
        inputs = {}
        for name, values in first["inputs"].items():
            dim = dims[name]
            shape = list(first["shapes"][name])
            element = self.element_type(_kind(declared.get(name), values))
            # (count, *shape) with shape[dim] == 1: drop that dim and put the items there.
            stacked = torch.tensor([item["inputs"][name] for item in items], dtype=element,
                                   device=self.device).reshape([count] + shape)
            inputs[name] = stacked.squeeze(dim + 1).movedim(0, dim)
        inputs.update(_lengths_of(first))  # the items of a batch have the same lengths
        outputs = _named_results(self.call(self.layer, torch, inputs, count), names)
        parts = {}
        for name in names:
            value = _batch_dim_checked(outputs[name], name, dims[name], count).detach().cpu()
            if value.is_floating_point():
                value = value.double()  # exact, as _json_value widens each
            # One tolist() for all items (batch dim first), each item's size-1 batch dim put back.
            parts[name] = [_wrapped(v, dims[name]) for v in value.movedim(dims[name], 0).tolist()]
        return [{"outputs": {name: parts[name][k] for name in names}} for k in range(count)]

    # Stacked requests: {"id": 7, "stacked": 3, "batch_dims": {"x": 0, "y": 0}, "inputs": {"x": BASE64},
    # "shapes": {"x": [3, 4, 8]}, "kinds": {"x": "float"}, "outputs": ["y"]}, each input's cases stacked on its
    # batch dim, its values base64 of little-endian float64, row-major; answered by {"id": 7, "outputs":
    # {"y": BASE64}, "shapes": {"y": [3, 4, 8]}} the same way, or item by item ({"id": 7, "batch": [ANSWER, ...]})
    # when the stacked forward pass raises.

    def answer_stacked(self, request):
        """The answer object to a stacked request: one forward pass, else one call per item."""
        request_id = request.get("id")
        try:
            if not self.is_module:
                raise ValueError("a stacked request is answered by a served torch module only (none was announced)")
            count, dims, names = int(request["stacked"]), request["batch_dims"], request["outputs"]
            declared = dict(request.get("kinds") or {})
            declared.update(self.kinds)
            inputs = {}
            for name, text in request["inputs"].items():
                element = self.element_type(_kind(declared.get(name), []))
                inputs[name] = _from_base64(self.torch, text, request["shapes"][name]).to(self.device, element)
            lengths = _lengths_of(request)
            inputs.update(lengths)
            try:
                outputs = _named_results(self.call(self.layer, self.torch, inputs, count), names)
                encoded, shapes = {}, {}
                for name in names:
                    value = _batch_dim_checked(outputs[name], name, dims[name], count)
                    encoded[name], shapes[name] = _to_base64(self.torch, value), list(value.shape)
                return {"id": request_id, "outputs": encoded, "shapes": shapes}
            except Exception as error:  # each item on its own, so that each gets its own answer or error
                self.exceptions.show(error, "the stacked forward pass failed; answering item by item")
            items = [dict({n: t.narrow(dims[n], k, 1) for n, t in inputs.items() if n not in lengths}, **lengths)
                     for k in range(count)]
            return {"id": request_id, "batch": [self.item_answer(names, item) for item in items]}
        except Exception as error:
            return _error_answer(request_id, error, self.exceptions)

    def item_answer(self, names, inputs):
        """One item's answer object (without id): its outputs, or its error."""
        try:
            return {"outputs": _outputs(self.call(self.layer, self.torch, inputs, 1), names)}
        except Exception as error:
            self.exceptions.show(error)
            answer = {"error": _last_line(error)}
            if isinstance(error, _Raised):
                answer["raised"] = True
            return answer

    def element_type(self, kind):
        """The torch dtype of an input of that kind: the float dtype, bool for a mask, int64 for the integer kinds."""
        return _element_type(self.torch, self.dtype, kind)


def _error_answer(request_id, error, exceptions=None):
    """The error answer to a request, the exception shown on stderr as `exceptions` shows it (by default its whole
    traceback): the layer's own exception's, where the layer raised."""
    (exceptions or _Exceptions()).show(error)
    return {"id": request_id, "error": _last_line(error)}


class _Exceptions:
    """What a server's layer raised, on stderr: the first exception's traceback in full, each later exception of
    another kind in one line, a repeat not at all; at the end (summarise) the count. An audit that raises on every
    case prints one traceback, not hundreds, and a different crash among them is still named."""

    def __init__(self):
        self.seen, self.count = set(), 0

    def show(self, error, then=None):
        self.count += 1
        cause = error.__cause__ if isinstance(error, (_Raised, _ChunkRaised)) and error.__cause__ is not None else error
        said = _last_line(cause)
        if said not in self.seen:
            if not self.seen:
                traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
            else:
                print("permcheck_adapter: another exception (traceback not shown): %s" % said, file=sys.stderr)
            self.seen.add(said)
            if then:
                print("permcheck_adapter: %s" % then, file=sys.stderr)

    def summarise(self):
        if self.count > 1:
            print("permcheck_adapter: %d exceptions in all, %d different; the first one's traceback is above"
                  % (self.count, len(self.seen)), file=sys.stderr)


def _batch_dim_checked(value, name, dim, count):
    """An output of a stacked forward pass, checked to hold the `count` items on its batch dim."""
    if not hasattr(value, "detach") or value.dim() <= dim or value.shape[dim] != count:
        raise ValueError("output %s has no batch dim %d of %d items" % (name, dim, count))
    return value


def _from_base64(torch, text, shape):
    """A float64 tensor of the given shape from base64 of little-endian float64 values."""
    data = base64.b64decode(text, validate=True)
    if not data:
        return torch.zeros(shape, dtype=torch.float64)
    if sys.byteorder == "little":
        return torch.frombuffer(bytearray(data), dtype=torch.float64).reshape(shape)
    values = array.array("d")
    values.frombytes(data)
    values.byteswap()
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


def _to_base64(torch, value):
    """A tensor's values as base64 of little-endian float64, row-major (floats widened exactly)."""
    value = value.detach().to("cpu", torch.float64).contiguous()
    try:
        data = value.numpy().astype("<f8", copy=False).tobytes()
    except (ImportError, RuntimeError):  # a torch without NumPy
        values = array.array("d", value.flatten().tolist())
        if sys.byteorder != "little":
            values.byteswap()
        data = values.tobytes()
    return base64.b64encode(data).decode("ascii")


def _wrapped(values, depth):
    """values with a dim of size 1 inserted at `depth`."""
    if depth == 0:
        return [values]
    return [_wrapped(v, depth - 1) for v in values]


def _resolve_device(torch, module, device):
    """The device inputs are made on: `device` when given, else a module's first parameter's or buffer's, else
    the CPU."""
    if device is not None:
        return torch.device(device)
    if module is not None:
        for tensor in list(module.parameters())[:1] + list(module.buffers())[:1]:
            return tensor.device
    return torch.device("cpu")


def _lengths_of(request):
    """{_LENGTH + axis: length} of the request's free axes ("lengths": {"graphs": 3})."""
    lengths = request.get("lengths") if isinstance(request, dict) else None
    if lengths is None:
        return {}
    if not isinstance(lengths, dict) or not all(isinstance(v, int) and v >= 0 for v in lengths.values()):
        raise ValueError('"lengths" must be an object of axis lengths (integers >= 0)')
    return {_LENGTH + axis: n for axis, n in lengths.items()}


def _named_inputs(request, torch, dtype, kinds, device=None):
    """The request's inputs by name: nested lists, or tensors of their kind's dtype and of the given shapes (and the
    lengths of its free axes under _LENGTH + axis)."""
    inputs, shapes = request["inputs"], request.get("shapes") or {}
    declared = dict(request.get("kinds") or {})
    declared.update(kinds)
    if not isinstance(inputs, dict):
        raise ValueError('"inputs" must be an object of named nested arrays')
    out = {}
    for name, values in inputs.items():
        if torch is None:
            out[name] = values
            continue
        shape = shapes.get(name)
        if shape is None:
            shape = _shape_of(values)
        element = _element_type(torch, dtype, _kind(declared.get(name), values))
        out[name] = torch.tensor(values, dtype=element, device=device).reshape(shape)
    out.update(_lengths_of(request))
    return out


def _element_type(torch, dtype, kind):
    """The torch dtype of an input of that kind."""
    if kind in _INTEGER_KINDS:
        return torch.int64
    return torch.bool if kind == "mask" else dtype


def _kind(declared, values):
    """One of _KINDS: as declared, else from the JSON types of the values (booleans a mask, integers an index)."""
    if declared is not None:
        declared = str(declared)
        # "index=nodes", "token=50000", "position=512" as in permcheck's --input; "mask=keep" is a kind of its own.
        kind = declared if declared == "mask=keep" else declared.split("=")[0]
        if kind == "real":
            kind = "float"
        if kind not in _KINDS:
            raise ValueError("unknown input kind %r; expected one of %s" % (declared, ", ".join(_KINDS)))
        return kind
    leaves = list(_leaves(values))
    if leaves and all(isinstance(v, bool) for v in leaves):
        return "mask"
    if leaves and all(isinstance(v, int) and not isinstance(v, bool) for v in leaves):
        return "index"
    return "float"


def _leaves(values):
    if isinstance(values, list):
        for v in values:
            yield from _leaves(v)
    else:
        yield values


def _shape_of(values):
    shape = []
    while isinstance(values, list):
        shape.append(len(values))
        values = values[0] if values else None
    return shape


def _outputs(result, names):
    """The layer's result as {name: JSON value} for the named outputs."""
    return {n: _json_value(v) for n, v in _named_results(result, names).items()}


def _json_value(value):
    """A tensor, array, number or nested list as JSON-ready nested lists; floats widened to double exactly."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu()
        if value.is_floating_point() and value.dtype != _torch_module().float64:
            value = value.double()  # float32, bfloat16 and float16 values are all doubles: exact
        return value.tolist()
    if hasattr(value, "tolist"):  # a NumPy array or scalar
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (int, float)):  # bool included
        return value
    raise TypeError("cannot send a %s as an output; return a tensor, a nested list or a number"
                    % type(value).__name__)


def _last_line(error):
    if isinstance(error, (_Raised, _ChunkRaised)) and error.__cause__ is not None:
        error = error.__cause__
    lines = traceback.format_exception_only(type(error), error)
    return (lines[-1].strip() if lines else type(error).__name__) or type(error).__name__


# ---------------------------------------------------------------------------------------------------------
# Taps: the outputs of a torch module's submodules


class _TapRecorder:
    """Forward hooks on every named submodule (the root left out: its output is the audited one) that record each
    floating tensor output as a tap, in the order the submodules finish, so a child comes before its parent.
    A tuple or list output gives name[0], name[1], ...; a dict output name.key; integer and boolean tensors are
    taps as their numbers; a tensor that has no values to compare (nested, complex, quantized) or cannot be read
    is a tap {"name": ..., "not_comparable": REASON}; other outputs are skipped. A submodule called again gives
    name#2, name#3, ... Nothing a hook meets ends the forward pass."""

    def __init__(self, module, torch):
        self.module, self.torch, self.taps, self.calls, self.handles = module, torch, [], {}, []

    def __enter__(self):
        for name, sub in self.module.named_modules():
            if name and sub is not self.module:
                self.handles.append(sub.register_forward_hook(self._hook(name)))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        return False

    def _hook(self, name):
        def hook(module, inputs, output):
            count = self.calls[name] = self.calls.get(name, 0) + 1
            self._add(name if count == 1 else "%s#%d" % (name, count), output)
        return hook

    def _add(self, name, output):
        if isinstance(output, (tuple, list)):
            for k, value in enumerate(output):
                self._add("%s[%d]" % (name, k), value)
        elif isinstance(output, dict):
            for key, value in output.items():
                self._add("%s.%s" % (name, key), value)
        elif isinstance(output, self.torch.Tensor):
            why = _unusable_tap(self.torch, output)
            if why:
                self.taps.append({"name": name, "not_comparable": why})
                return
            try:  # a copy now: a later in-place operation must not change what this submodule answered
                value = output.detach()
                if value.layout != self.torch.strided:
                    value = value.to_dense()
                value = value.to("cpu", self.torch.float64, copy=True)  # integer and boolean taps as numbers
                self.taps.append({"name": name, "shape": list(value.shape), "values": value.tolist()})
            except Exception as error:  # never the forward pass's failure: the tap is listed with the reason
                self.taps.append({"name": name, "not_comparable": "its value could not be read: %s" % _last_line(error)})


def _unusable_tap(torch, value):
    """Why a tensor output cannot be a tap (listed as not comparable with this reason), or None."""
    if getattr(value, "is_nested", False):
        return "a nested tensor (its items may differ in length), which has no one shape to compare"
    if value.is_complex():
        return "a complex tensor"
    if value.is_quantized:
        return "a quantized tensor"
    return None


# ---------------------------------------------------------------------------------------------------------
# PyTorch, only when the layer or the dtype needs it


def _torch_module():
    return sys.modules["torch"]


def _torch_if_needed(layer, dtype):
    """The torch module when the layer is a torch module or a dtype is given, else None (torch not imported)."""
    torch = sys.modules.get("torch")  # a torch module or dtype means the program imported torch already
    if torch is not None and isinstance(layer, torch.nn.Module):
        return torch
    if dtype is None:
        return None
    if torch is None:
        import torch  # a dtype given by name ("float32"): the caller asked for tensors
    return torch


def _resolve_dtype(torch, module, dtype):
    if dtype is not None:
        if isinstance(dtype, str):
            resolved = getattr(torch, dtype, None)
            if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
                raise ValueError("dtype %r is not a torch floating dtype (float32, float64, bfloat16, float16)"
                                 % dtype)
            return resolved
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError("dtype must be a torch floating dtype, got %r" % (dtype,))
        return dtype
    if module is not None:
        for tensor in list(module.parameters()) + list(module.buffers()):
            if tensor.is_floating_point():
                return tensor.dtype
    return torch.float32


# ---------------------------------------------------------------------------------------------------------
# The process's stdout


def _claim_stdout():
    """A stream on the real stdout for answers, with file descriptor 1 pointed at stderr meanwhile.

    Returns (answers, restore): restore() points descriptor 1 back at the real stdout.
    """
    out = sys.__stdout__ if sys.__stdout__ is not None else sys.stdout
    try:
        fd = out.fileno()
        err_fd = (sys.__stderr__ or sys.stderr).fileno()
    except (AttributeError, OSError, ValueError):  # not a real file: write to it as it is
        return out, None
    out.flush()
    answers_fd = os.dup(fd)
    os.dup2(err_fd, fd)
    answers = os.fdopen(answers_fd, "w", encoding="utf-8", newline="\n")

    def restore():
        try:
            answers.flush()
        except (BrokenPipeError, OSError):
            pass
        os.dup2(answers_fd, fd)
        try:
            answers.close()
        except (BrokenPipeError, OSError):
            pass

    return answers, restore


def _quiet_exit(code, answers):
    """Leave without a traceback, and without the flush at interpreter exit failing on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, answers.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass
    raise SystemExit(code)
