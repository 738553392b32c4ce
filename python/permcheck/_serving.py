"""Serving from this process: the layer (and a reference) answered on a Unix socket in a fresh private directory
(mode 0700) while the `permcheck` binary runs with `--connect SOCKET`, each connection on a thread of its own with
serve()'s own server (permcheck/_protocol.py), so the layer object itself is what is called (docs/python.md, "How
the layer is served"); the user's module left as it was."""

import contextlib
import copy
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

from permcheck import _protocol
from permcheck._results import PermcheckNotFound


# Serving the layer over a Unix socket
class _SocketServer:
    """Listens on a Unix socket in a private directory; each accepted connection is answered on a thread by a
    protocol server of its own (its announcement is its own) over the same layer."""

    def __init__(self, make_server):
        self.make_server = make_server
        self.directory = tempfile.mkdtemp(prefix="permcheck-")  # mode 0700: only this user connects
        self.path = os.path.join(self.directory, "socket")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        self.threads = []
        self.acceptor = threading.Thread(target=self._accept, name="permcheck-accept", daemon=True)
        self.acceptor.start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the audit is over
                return
            thread = threading.Thread(target=self._serve, args=(connection,), name="permcheck-serve", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, connection):
        server = self.make_server()
        with connection:
            requests = connection.makefile("r", encoding="utf-8", newline="\n")
            answers = connection.makefile("w", encoding="utf-8", newline="\n")
            # permcheck closes the connection after a timeout or at the audit's end: no answer is wanted then
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError, ValueError):
                server.answer_all(requests, answers)

    def close(self):
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.acceptor.join(timeout=5)
        for thread in self.threads:
            thread.join(timeout=1)  # a call that overran its timeout goes on; its answer is dropped
        shutil.rmtree(self.directory, ignore_errors=True)


# The layer as served: the user's module untouched
class _Prepared:
    """The layer to serve (None: none) and the dtype it computes in, the user's module left as it was: a module is
    put in eval mode while served (a `with` block) and given back its modes after; a dtype other than its own is
    served from a copy."""

    def __init__(self, layer, dtype):
        torch = self.torch = sys.modules.get("torch")
        self.is_module = torch is not None and isinstance(layer, torch.nn.Module)
        self.layer, self.modes = layer, []
        self.dtype, self.dtype_name = None, "infer"  # the torch dtype the protocol server gets; None: nested lists
        if layer is None:
            return
        if dtype is not None:
            self.torch = _protocol._torch_if_needed(layer, dtype)  # a dtype means tensors: torch imported if need be
            self.dtype = _protocol._resolve_dtype(self.torch, None, dtype)
        elif not self.is_module and torch is not None:
            # A function in a program that imported torch gets tensors, as it would from its own callers: float64
            # ones, judged as float64 (dtype="float32" for a function that computes in float32).
            self.dtype = torch.float64
        if self.is_module:
            own = _protocol._resolve_dtype(self.torch, layer, None)
            if self.dtype is not None and self.dtype != own:
                self.layer = copy.deepcopy(layer).to(self.dtype)  # converting in place would change the user's
            self.dtype = own if self.dtype is None else self.dtype
            self.modes = [(m, m.training) for m in self.layer.modules()]
            self.layer.eval()
        if self.dtype is not None:
            self.dtype_name = str(self.dtype).replace("torch.", "")

    def server(self, kinds, call, device, taps=False, batch=None, stacked=False):
        """A maker of protocol servers of the layer, one a connection."""
        return lambda: _protocol._Server(self.layer, self.dtype, kinds, taps=taps, batch=batch, stacked=stacked,
                                         call=call, convert=False, device=device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for module, training in self.modes:
            module.training = training


def _layer_name(layer):
    """A module's class name (a TorchScript module's original one), a function's qualified name."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(layer, torch.nn.Module):
        name = getattr(layer, "original_name", None)
        return name if isinstance(name, str) and name else type(layer).__name__
    return getattr(layer, "__qualname__", None) or type(layer).__name__


def _run(binary, arguments, make_server, make_reference=None):
    """permcheck run with `arguments` (which hold {socket}, and {reference} with make_reference) while socket
    servers answer it: (code, out, err)."""
    server = _SocketServer(make_server)
    reference = _SocketServer(make_reference) if make_reference is not None else None
    try:
        command = [binary] + [a.replace("{socket}", server.path).replace("{reference}", reference.path if reference
                                                                           else "{reference}") for a in arguments]
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
        except OSError as error:
            raise PermcheckNotFound("cannot run %s: %s" % (binary, error)) from None
        try:
            out, err = process.communicate()
        except KeyboardInterrupt:
            process.terminate()  # permcheck stops between cases and writes its report
            process.wait()
            raise
        return process.returncode, out, err
    finally:
        server.close()
        if reference is not None:
            reference.close()


class _Against:
    """A reference implementation served beside the layer (`layer` None: only a precision to judge at), its dtype
    and call (the layer's unless told otherwise), and the precision the comparison is judged at when given."""

    def __init__(self, vocabulary, reference, reference_arguments, reference_output, reference_dtype, judge_as,
                 arguments, output, dtype, inputs):
        self.layer, self.judge_as, self.precisions = reference, judge_as, vocabulary.precisions
        if judge_as is not None and judge_as not in self.precisions:
            raise ValueError("judge_as is one of %s, got %r" % (", ".join(self.precisions), judge_as))
        self.dtype = reference_dtype if reference_dtype is not None else dtype
        self.call = None if reference is None else _protocol._Call(
            arguments if reference_arguments is None else reference_arguments,
            output if reference_output is None else reference_output, inputs)


def _against(vocabulary, reference, *how):
    """The reference served beside the layer; None without a reference and without a precision to judge at."""
    return None if reference is None and how[3] is None else _Against(vocabulary, reference, *how)


def _judged(layer_dtype, reference_dtype, precisions):
    """The precision two sides' comparison is judged at: the coarser of theirs (`precisions`: finest first, the
    binary's); "infer" when either is inferred."""
    if "infer" in (layer_dtype, reference_dtype):
        return "infer"
    return max(layer_dtype, reference_dtype, key=lambda d: precisions.index(d) if d in precisions else -1)


def _placed(prepared, device):
    """Where a prepared layer's inputs are made, and its precision as judged there: a float32 module on a GPU that
    allows TF32 computes its matrix products in tf32. (None, its dtype) without torch."""
    torch = prepared.torch
    if torch is None or prepared.dtype is None:
        return None, prepared.dtype_name
    placed = _protocol._resolve_device(torch, prepared.layer if prepared.is_module else None, device)
    tf32 = placed.type == "cuda" and (torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)
    return placed, "tf32" if tf32 and prepared.dtype_name == "float32" else prepared.dtype_name


def _served(binary, layer, name, flags, dtype, call, kinds, taps, batch, against=None, device=None):
    """`permcheck audit` with `flags`, the layer (and a reference, `against`) served from this process:
    (code, out, err)."""
    theirs = against.layer if against is not None else None
    with _Prepared(layer, dtype) as prepared, _Prepared(theirs, against and against.dtype) as reference:
        placed, judged = _placed(prepared, device)
        make_reference, more = None, []
        if placed is not None and (device is not None or placed.type != "cpu"):
            more += ["--device", str(placed)]
        if theirs is not None:
            make_reference = reference.server(kinds, against.call, device, batch=batch, stacked=True)
            judged = _judged(judged, _placed(reference, device)[1], against.precisions)
            more += ["--reference-connect", "{reference}", "--reference-name", _layer_name(theirs)]
        if against is not None and against.judge_as is not None:
            judged = against.judge_as
        elif dtype is None and judged != "infer":  # the report says what chose it: not the user
            more += ["--dtype-source", "module" if prepared.is_module else "default"]
        return _run(binary, ["audit", "--connect", "{socket}", "--name", name, "--dtype", judged] + more + flags,
                    prepared.server(kinds, call, device, taps=taps, batch=batch, stacked=True), make_reference)
