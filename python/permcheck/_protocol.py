"""The protocol's Python side: serve a Python layer to `permcheck audit --exec` in one line.

    from permcheck_adapter import serve    # or: from permcheck import serve
    serve(my_layer)                        # a function of named inputs returning named outputs (or one output)
    serve(module, dtype=torch.float32)     # any torch.nn.Module, in eval mode, under no_grad
    serve(module, arguments={"src": "x"}, output=0)   # forward's own parameter names; one element of a tuple

Standard library only; PyTorch only for a torch module or when a dtype is given. The same server answers the
audits served in process (permcheck/_serving.py). The protocol is docs/protocol.md; what serve does with a layer,
docs/audit.md ("A Python layer: the ready adapter").
"""

import array
import base64
import contextlib
import itertools
import json
import os
import re
import sys
import traceback

if "_Call" not in globals():  # permcheck_adapter.py beside an adapter's repro.py holds _calls.py's text above this
    from permcheck._calls import _LENGTH, _Call, _ChunkRaised, _Raised, _element_type, _named_results

__all__ = ["serve"]

def serve(layer, dtype=None, *, kinds=None, taps=True, stdin=None, stdout=None, batch=256, stacked=True,
          arguments=None, output=None, inputs=None, cache=None, cumulative=None, device=None):
    """Answer permcheck's requests with `layer` (a function of named inputs, or a torch.nn.Module, put in eval mode
    and called under torch.no_grad()) until end of input; docs/audit.md, "A Python layer: the ready adapter", says
    what each argument does. What the layer prints goes to stderr: stdout is claimed for the answers."""
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


class _Server:
    """One served layer. A request line is parsed once and told apart by the keys of its object ("stacked", "batch",
    "taps", "inputs", "x"), never by its text, so an input or output may be named batch, stacked or id."""

    def __init__(self, layer, dtype, kinds, *, taps, batch, stacked, call=None, convert=True, device=None):
        self.call = call if call is not None else _Call(None, None, None)
        self.kinds = dict(kinds or {})
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
        self.exceptions = _Exceptions()  # what the layer raised: the first traceback shown, the rest counted
        # What the first ordinary answer announces ({} when nothing: one case per request).
        self.announcement = {"batch": int(batch)} if batch is not None and batch > 1 else {}
        if self.announcement and self.is_module and stacked:
            self.announcement["stacked"] = True

    def answer_all(self, requests, answers):
        """Answers every request line of the text stream `requests` on `answers`, one line each, in order."""
        try:
            for line in filter(str.strip, requests):
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
                inputs = self.named_inputs(request)
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
            answers = [{k: v for k, v in self.answer(item).items() if k != "id"} for item in items]
            return {"id": request_id, "batch": answers}
        except Exception as error:
            return _error_answer(request_id, error)

    def stacked_items(self, items, dims):
        """The items' answers from one forward pass over their inputs stacked on their batch dims."""
        torch, first, count = self.torch, items[0], len(items)
        names, inputs = first["outputs"], {}
        for name, values in first["inputs"].items():
            # (count, *shape) with shape[dims[name]] == 1: drop that dim and put the items there.
            element = self.element_type(first, name, values)
            stacked = torch.tensor([item["inputs"][name] for item in items], dtype=element,
                                   device=self.device).reshape([count] + first["shapes"][name])
            inputs[name] = stacked.squeeze(dims[name] + 1).movedim(0, dims[name])
        inputs.update(_lengths_of(first))  # the items of a batch have the same lengths
        outputs = self.call.stacked(self.layer, torch, inputs, count, dims, names)
        parts = {}
        for name in names:
            value = outputs[name].detach().cpu()
            if value.is_floating_point():
                value = value.double()  # exact, as _json_value widens each
            # One tolist() for all items (batch dim first), each item's size-1 batch dim put back.
            parts[name] = value.movedim(dims[name], 0).unsqueeze(dims[name] + 1).tolist()
        return [{"outputs": {name: parts[name][k] for name in names}} for k in range(count)]

    def answer_stacked(self, request):
        """The answer object to a stacked request: one forward pass, else one call per item."""
        request_id = request.get("id")
        try:
            if not self.is_module:
                raise ValueError("a stacked request is answered by a served torch module only (none was announced)")
            count, dims, names = int(request["stacked"]), request["batch_dims"], request["outputs"]
            inputs = {name: _from_base64(self.torch, text, request["shapes"][name]).to(
                self.device, self.element_type(request, name, [])) for name, text in request["inputs"].items()}
            lengths = _lengths_of(request)
            inputs.update(lengths)
            try:
                outputs = self.call.stacked(self.layer, self.torch, inputs, count, dims, names)
                encoded, shapes = {}, {}
                for name, value in outputs.items():
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
            return {k: v for k, v in _error_answer(None, error, self.exceptions).items() if k != "id"}

    def named_inputs(self, request):
        """The request's inputs by name: nested lists, or tensors of their kind's dtype and of the given shapes (and
        the lengths of its free axes under _LENGTH + axis)."""
        inputs, shapes = request["inputs"], request.get("shapes") or {}
        if not isinstance(inputs, dict):
            raise ValueError('"inputs" must be an object of named nested arrays')
        out = dict(inputs) if self.torch is None else {
            name: (t := self.torch.tensor(values, dtype=self.element_type(request, name, values), device=self.device))
            .reshape(shapes[name] if shapes.get(name) is not None else t.shape) for name, values in inputs.items()}
        out.update(_lengths_of(request))
        return out

    def element_type(self, request, name, values):
        """The torch dtype of a request's input: of the kind serve's `kinds` or the request declares, else of its
        values' JSON types."""
        declared = self.kinds.get(name, (request.get("kinds") or {}).get(name))
        return _element_type(self.torch, self.dtype, declared, values)


def _error_answer(request_id, error, exceptions=None):
    """The error answer to a request, the exception shown on stderr as `exceptions` shows it (by default its whole
    traceback): the layer's own exception's, where the layer raised ("raised": true, which permcheck reads as a
    finding where the property makes it one: decoding in chunks, against a reference; the chunk named)."""
    (exceptions or _Exceptions()).show(error)
    answer = {"id": request_id, "error": _last_line(error)}
    if isinstance(error, (_Raised, _ChunkRaised)):
        answer["raised"] = True
        if isinstance(error, _ChunkRaised):
            answer["error"] += " (%s)" % error.where
        cause = error.__cause__ or error  # its type and the innermost frame that raised it: what makes two errors one
        frames = traceback.extract_tb(cause.__traceback__)
        answer["type"] = type(cause).__name__
        if frames:
            answer["where"] = "%s:%d in %s" % (os.path.basename(frames[-1].filename), frames[-1].lineno, frames[-1].name)
    return answer


class _Exceptions:
    """What a server's layer raised, on stderr: the first exception's traceback in full, each later exception of
    another kind in one line, a repeat (the same message but for its numbers) not at all, a chunk's introduced as
    the evidence it is; at the end (summarise) the count. An audit that raises on every
    case prints one traceback, not hundreds, and a different crash among them is still named."""

    def __init__(self):
        self.seen, self.count = set(), 0

    def show(self, error, then=None):
        self.count += 1
        cause = error.__cause__ if isinstance(error, (_Raised, _ChunkRaised)) and error.__cause__ is not None else error
        said = _last_line(cause)
        kind = re.sub(r"\d+", "N", said)  # the same error at another size is a repeat ("batch of 64 > 8")
        if kind not in self.seen:
            if isinstance(error, _ChunkRaised):  # raising where one pass answers is the audit's finding to judge
                print("permcheck_adapter: the layer raised on %s of a chunked request; permcheck judges it (the "
                      "evidence of a finding where one pass answers, not a failure of the run):" % error.where,
                      file=sys.stderr)
            if not self.seen:
                traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
            else:
                print("permcheck_adapter: another exception (traceback not shown): %s" % said, file=sys.stderr)
            self.seen.add(kind)
            if then:
                print("permcheck_adapter: %s" % then, file=sys.stderr)

    def summarise(self):
        if self.count > 1:
            print("permcheck_adapter: %d exceptions in all, %d different; the first one's traceback is above"
                  % (self.count, len(self.seen)), file=sys.stderr)


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


def _resolve_device(torch, module, device):
    """The device inputs are made on: `device` when given, else a module's first parameter's or buffer's, else
    the CPU."""
    first = next(itertools.chain(module.parameters(), module.buffers()), None) if module is not None else None
    return torch.device(device) if device is not None else first.device if first is not None else torch.device("cpu")


def _lengths_of(request):
    """{_LENGTH + axis: length} of the request's free axes ("lengths": {"graphs": 3})."""
    lengths = request.get("lengths") if isinstance(request, dict) else None
    if lengths is None:
        return {}
    if not isinstance(lengths, dict) or not all(isinstance(v, int) and v >= 0 for v in lengths.values()):
        raise ValueError('"lengths" must be an object of axis lengths (integers >= 0)')
    return {_LENGTH + axis: n for axis, n in lengths.items()}


def _outputs(result, names):
    """The layer's result as {name: JSON value} for the named outputs."""
    return {n: _json_value(v) for n, v in _named_results(result, names).items()}


def _json_value(value):
    """A tensor, array, number or nested list as JSON-ready nested lists; floats widened to double exactly."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu()
        if value.is_floating_point() and value.dtype != sys.modules["torch"].float64:
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


# Taps: the outputs of a torch module's submodules
class _TapRecorder:
    """Forward hooks on every named submodule but the root that record each tensor output as a tap, in the order the
    submodules finish (docs/protocol.md, "Taps"): name[0] of a tuple, name.key of a dict, name#2 of a second call; a
    tensor with no values to compare is {"name", "not_comparable": REASON}. Nothing a hook meets ends the pass."""

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


# PyTorch, only when the layer or the dtype needs it
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
    """The torch dtype given (or named: "float32"), else a module's first floating one, else float32."""
    if dtype is not None:
        resolved = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
        if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
            raise ValueError("dtype must be a torch floating dtype (float32, float64, bfloat16, float16) or its "
                             "name, got %r" % (dtype,))
        return resolved
    tensors = itertools.chain(module.parameters(), module.buffers()) if module is not None else ()
    return next((tensor.dtype for tensor in tensors if tensor.is_floating_point()), torch.float32)


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
        with contextlib.suppress(BrokenPipeError, OSError):
            answers.flush()
        os.dup2(answers_fd, fd)
        with contextlib.suppress(BrokenPipeError, OSError):
            answers.close()

    return answers, restore


def _quiet_exit(code, answers):
    """Leave without a traceback, and without the flush at interpreter exit failing on a closed pipe."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, answers.fileno())
        os.close(devnull)
    raise SystemExit(code)
