"""permcheck_adapter: serve a Python layer to `permcheck audit --exec` in one line.

    from permcheck_adapter import serve
    serve(my_layer)                        # a function of named inputs returning named outputs (or one output)
    serve(module, dtype=torch.float32)     # any torch.nn.Module, in eval mode, under no_grad

Kept for the adapter files written against it; the same function is `permcheck.serve`, and the protocol it
speaks is documented in permcheck/_protocol.py (and docs/protocol.md).
"""

from permcheck._protocol import serve

__all__ = ["serve"]
