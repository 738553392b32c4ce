"""The model behind `permcheck audit-torch`, served by the Python torch of the user's environment.

    python3 -m permcheck._torch_serve --file FILE [--input x:1,n,8 ...] [--argument NAME=SOURCE ...]
                                      [--output-index I|KEY] [--dtype D] [--train] [--seed S] [--describe]
    python3 -m permcheck._torch_serve --builtin mha|encoder-layer|decoder-layer [--mask M] [--dim D]
                                      [--heads H] [--dropout P] [--dtype D] [--train] [--seed S] [--describe]

permcheck runs it with --describe, which prints one JSON line (what the model is, its dtype, forward's schema,
the range each input dim of an exported program allows, the torch version; or {"error": ...}), then without, as
the audit's adapter (serve()). A file is told apart by its content (docs/torch.md).
"""

import argparse
import json
import os
import sys
import zipfile

from permcheck._protocol import _resolve_dtype, serve

_DTYPES = ("float32", "float64", "bfloat16", "float16")
_BUILTINS = ("mha", "encoder-layer", "decoder-layer")
_MASKS = ("none", "causal", "key-padding", "key-padding-fixed")


class Refused(Exception):
    """The model cannot be served: a sentence for the user."""


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m permcheck._torch_serve")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--file")
    what.add_argument("--builtin", choices=_BUILTINS)
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--argument", action="append", default=[])
    p.add_argument("--output-index")
    p.add_argument("--dtype", choices=_DTYPES)
    p.add_argument("--train", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mask", choices=_MASKS, default="none")
    p.add_argument("--dim", type=int, default=8)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--describe", action="store_true")
    return p


# Which file it is, by content
def file_kind(path):
    """"torchscript" or "export"; raises Refused for anything else, saying what it is and what to save."""
    save = ("save the model with torch.jit.save(torch.jit.script(model), FILE) or "
            "torch.export.save(torch.export.export(model, args), FILE)")
    if not os.path.exists(path):
        raise Refused("%s does not exist (the model to audit: %s)" % (path, save))
    if os.path.isdir(path):
        raise Refused("%s is a directory, not a saved model (%s)" % (path, save))
    if not zipfile.is_zipfile(path):
        raise Refused("%s is not a saved torch model (not a zip archive, as torch.jit.save and torch.export.save "
                      "write): %s" % (path, save))
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError) as error:
        raise Refused("%s cannot be read as a zip archive (%s): %s" % (path, error, save))
    # Every entry lies under the archive's own top folder ("head/code/...", "head/models/model.json").
    inner = [n.split("/", 1)[1] for n in names if "/" in n]
    if any(n.startswith("data/aotinductor/") or n.endswith(".so") for n in inner):
        raise Refused("%s is an AOTInductor package (compiled code, torch._inductor.aoti_compile_and_package): "
                      "permcheck cannot convert its dtype nor run it as a program; audit the exported program it "
                      "was compiled from (torch.export.save(exported, FILE))" % path)
    if any(n.startswith("code/") for n in inner) and any(n in ("data.pkl", "constants.pkl") for n in inner):
        return "torchscript"
    if any(n.startswith("models/") for n in inner):
        return "export"
    if any(n == "data.pkl" for n in inner):
        raise Refused("%s was written by torch.save (a pickled module or a state dict): it holds weights, not the "
                      "program that uses them; %s" % (path, save))
    raise Refused("%s is a zip archive but not a saved torch model: %s" % (path, save))


# Loading
def _settle_dtype(torch, module, asked, path):
    """The dtype the model computes in: the one asked for (the module converted to it), else its parameters'."""
    if asked is not None:
        module.to(getattr(torch, asked))
        return asked
    found = _resolve_dtype(torch, module, None)
    name = str(found).replace("torch.", "")
    if name not in _DTYPES:
        raise Refused("%s: the module's parameters are %s; audit-torch computes in float32, float64, bfloat16 or "
                      "float16 (--dtype converts the module)" % (path, found))
    return name


def _keywords(arguments):
    return {name: source for name, _, source in (text.partition("=") for text in arguments)}


def _input_names(inputs):
    return [text.split(":", 1)[0] for text in inputs]


def _check_schema(schema, args, path):
    """forward's parameters against the inputs (positional) or the --argument names, before any request: an error
    naming the parameter and printing the schema beats a failed first case."""
    params = schema.arguments[1:]  # self aside
    text = str(schema)
    if args.argument:
        keywords = _keywords(args.argument)
        named = set(s for s in keywords.values() if not s.startswith("length:"))
        given = set(keywords) | set(n for n in _input_names(args.input) if n not in named)
        known = set(p.name for p in params)
        for name in sorted(given - known):
            raise Refused("forward of %s has no parameter %s. Its schema: %s" % (path, name, text))
        for p in params:
            if not p.has_default_value() and p.name not in given:
                raise Refused("forward of %s needs %s (it has no default): give --argument %s=INPUT. Its schema: %s"
                              % (path, p.name, p.name, text))
        return
    required = sum(1 for p in params if not p.has_default_value())
    count = len(args.input)
    if required <= count <= len(params):
        return
    raise Refused("forward of %s takes %d argument%s%s, but %d input%s given (%s): inputs go to forward in the "
                  "order of --input. Its schema: %s"
                  % (path, len(params), "" if len(params) == 1 else "s",
                     "" if required == len(params) else " (%d without a default)" % required,
                     count, " is" if count == 1 else "s are", ", ".join(_input_names(args.input)), text))


def load_file(torch, args):
    """(callable, description) of a saved model."""
    kind = file_kind(args.file)
    if kind == "torchscript":
        try:
            module = torch.jit.load(args.file, map_location="cpu")
        except Exception as error:
            raise Refused("%s is not a TorchScript file torch %s can load (torch.jit.load: %s)"
                          % (args.file, torch.__version__, _one_line(error)))
        if not hasattr(module, "forward"):
            raise Refused("%s has no forward method" % args.file)
        schema = module.forward.schema
        _check_schema(schema, args, args.file)
        dtype = _settle_dtype(torch, module, args.dtype, args.file)
        module.train(args.train)
        # The unoptimized graph: the same arithmetic on every call, whatever shapes came before.
        # (torch._C's private switch, named so since torch 2.0; a torch without it runs the default.)
        optimize = getattr(torch._C, "_set_graph_executor_optimize", None)
        if optimize is not None:
            optimize(False)
        return module, {"kind": "torchscript", "dtype": dtype, "forward": str(schema), "axes": []}
    if args.train:
        raise Refused("--train does not apply to an exported program (%s): its mode was fixed when it was "
                      "exported; export it from a module in train mode to audit that" % args.file)
    try:
        program = torch.export.load(args.file)
        module = program.module()
    except Exception as error:
        raise Refused("%s is not an exported program torch %s can load (torch.export.load: %s)"
                      % (args.file, torch.__version__, _one_line(error)))
    dtype = _settle_dtype(torch, module, args.dtype, args.file)
    user_inputs = list(program.graph_signature.user_inputs)
    forward = "forward(%s)" % ", ".join(user_inputs)
    return _by_position(program, module, user_inputs), {
        "kind": "export", "dtype": dtype, "forward": forward, "axes": _export_axes(torch, program, user_inputs, args)}


def _by_position(program, module, user_inputs):
    """The exported module, called as it was exported: an exported program checks that its keyword arguments are
    the ones it was traced with, so a keyword (--argument NAME=SOURCE) that names an input traced positionally
    goes to its place among the positional arguments instead."""
    try:
        spec = program.call_spec.in_spec  # (args, kwargs); child() since torch 2.x's TreeSpec has it
        kwargs_spec = spec.child(1) if hasattr(spec, "child") else spec.children_specs[1]
        traced_keywords = set(kwargs_spec.context or [])
    except (AttributeError, IndexError, TypeError):  # another pytree layout: call as asked
        return module

    def call(*args, **kwargs):
        if args or not kwargs or set(kwargs) <= traced_keywords:
            return module(*args, **kwargs)
        positional = [name for name in user_inputs if name not in traced_keywords]
        missing = [name for name in positional if name not in kwargs]
        if missing:  # forward's own error names what is wrong
            return module(**kwargs)
        return module(*[kwargs.pop(name) for name in positional], **kwargs)
    return call


def _export_axes(torch, program, user_inputs, args):
    """What the export allows each signature axis: one entry per input dim of an axis that an exported input
    holds, {"axis", "input", "dim", "min", "max" (null: unbounded), "static"}."""
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    # Which exported input each --input reaches: positionally without --argument, else by parameter name.
    names = _input_names(args.input)
    sources = {source: parameter for parameter, source in _keywords(args.argument).items()}
    reaches = {name: sources.get(name, name) for name in names} if args.argument else dict(zip(names, user_inputs))
    out = []
    for text in args.input:
        name, _, rest = text.partition(":")
        dims = rest.split(":", 1)[0].split(",") if rest else []
        node = placeholders.get(reaches.get(name))
        value = node.meta.get("val") if node is not None else None
        if value is None or not hasattr(value, "shape") or len(value.shape) != len(dims):
            continue
        for k, axis in enumerate(dims):
            if axis.isdigit() or not axis:
                continue
            size, entry = value.shape[k], {"axis": axis, "input": name, "dim": k}
            if isinstance(size, int):
                out.append(dict(entry, min=size, max=size, static=True))
                continue
            ranges = program.range_constraints.get(size.node.expr)
            lower = int(ranges.lower) if ranges is not None and ranges.lower.is_finite else 0
            upper = int(ranges.upper) if ranges is not None and ranges.upper.is_finite else None
            out.append(dict(entry, min=lower, max=upper, static=False))
    return out


# The built-in torch.nn modules
def _builtin_checked(args):
    """Refused unless the built-in module's options fit together."""
    if args.dim < 1 or args.dim > 4096:
        raise Refused("--dim must be between 1 and 4096, got %d" % args.dim)
    if args.heads < 1 or args.dim % args.heads != 0:
        raise Refused("--heads must be at least 1 and divide --dim (%d), got %d" % (args.dim, args.heads))
    if not 0.0 <= args.dropout < 1.0:
        raise Refused("--dropout must be in [0, 1), got %g" % args.dropout)
    if args.builtin == "decoder-layer" and args.mask not in ("none", "causal"):
        raise Refused("the decoder layer takes --mask none or causal (on its targets), got %s" % args.mask)


def load_builtin(torch, args):
    _builtin_checked(args)
    dtype_name = args.dtype or "float64"
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(args.seed)
    nn = torch.nn
    # batch_first=False: torch's fast paths (native MultiheadAttention, the encoder layer's fused kernel) are taken
    # only with batch_first=True; with them off every call runs the same Python arithmetic. dim_feedforward 4 * dim
    # rather than 2048: the property does not depend on it, the time does.
    if args.builtin == "mha":
        module = nn.MultiheadAttention(args.dim, args.heads, dropout=args.dropout)
    elif args.builtin == "encoder-layer":
        module = nn.TransformerEncoderLayer(args.dim, args.heads, dim_feedforward=4 * args.dim, dropout=args.dropout)
    else:
        module = nn.TransformerDecoderLayer(args.dim, args.heads, dim_feedforward=4 * args.dim, dropout=args.dropout)
    module.to(dtype)
    module.train(args.train)
    mask = args.mask

    def sequence_first(t, name):
        if t.dim() != 2 or t.shape[1] != args.dim:
            raise ValueError("the %s has dim %d but its input %s has shape %s, not (length, %d)"
                             % (args.builtin, args.dim, name, list(t.shape), args.dim))
        return t.unsqueeze(1)  # (n, 1, dim): sequence first, a batch of one

    def causal(n):  # position i may not attend to j > i (True: not allowed)
        return torch.ones(n, n, dtype=torch.bool).triu(1)

    def padding(x):
        # (1, n), True = padding. key-padding: a position whose first feature is negative (the mask moves with x;
        # none when that would pad every position); key-padding-fixed: the last position (it does not move).
        n = x.shape[0]
        if mask == "key-padding-fixed":
            m = torch.zeros(1, n, dtype=torch.bool)
            if n > 1:
                m[0, n - 1] = True
            return m
        m = (x[:, 0] < 0).reshape(1, n)
        return torch.zeros_like(m) if bool(m.all()) else m

    if args.builtin == "decoder-layer":
        def layer(tgt, memory):
            t, mem = sequence_first(tgt, "tgt"), sequence_first(memory, "memory")
            tgt_mask = causal(t.shape[0]) if mask == "causal" else None
            return module(t, mem, tgt_mask=tgt_mask)[:, 0, :]
    else:
        def layer(x):
            s = sequence_first(x, "x")
            attn = causal(s.shape[0]) if mask == "causal" else None
            pad = padding(x) if mask in ("key-padding", "key-padding-fixed") else None
            if args.builtin == "mha":
                return module(s, s, s, key_padding_mask=pad, need_weights=False, attn_mask=attn)[0][:, 0, :]
            return module(s, src_mask=attn, src_key_padding_mask=pad)[:, 0, :]
    return layer, {"kind": "builtin", "dtype": dtype_name, "forward": type(module).__name__, "axes": []}


def _precision_checked(torch, call, dtype_name, output, path):
    """`call`, refusing an answering output less precise than the module computes in: a float32 module's bfloat16
    output would be judged with float32's tolerance, and its rounding called a violation."""
    own = getattr(torch, dtype_name)
    bits = {torch.bfloat16: 8, torch.float16: 11, torch.float32: 24, torch.float64: 53}

    def check(value):
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() and value.dtype != own and bits.get(value.dtype, 0) <= bits[own]:
                raise ValueError("an output of %s is %s but the module computes in %s: it would be judged with %s's "
                                 "tolerance (return %s or a wider float, or audit with the --dtype it computes in)"
                                 % (path, str(value.dtype).replace("torch.", ""), dtype_name, dtype_name, dtype_name))
        elif isinstance(value, (tuple, list, dict)):
            for v in value.values() if isinstance(value, dict) else value:
                check(v)

    def checked(*args, **kwargs):
        result = call(*args, **kwargs)
        answering = result
        if output is not None:
            try:
                answering = result[output]
            except (IndexError, KeyError, TypeError):
                return result  # serve's own error names what --output-index found
        check(answering)
        return result
    return checked


def _one_line(error):
    text = str(error).strip().splitlines()
    return "%s: %s" % (type(error).__name__, text[-1] if text else "")


def _import_torch():
    """torch, or Refused naming this interpreter and how to give it one (a JSON field marks it)."""
    try:
        import torch
    except Exception as error:  # ImportError, or a broken install raising anything at import
        raise Refused("cannot import torch (%s)" % _one_line(error))
    major = torch.__version__.split(".", 1)[0]
    if not major.isdigit() or int(major) < 2:
        raise Refused("has torch %s, and audit-torch needs torch 2.x" % torch.__version__)
    return torch


def _refused(args, said, **more):
    """What cannot be served, as --describe prints it (exit 0) or on stderr (exit 2)."""
    if args.describe:
        print(json.dumps(dict({"error": said}, **more)))
        return 0
    print("permcheck._torch_serve: %s" % said, file=sys.stderr)
    return 2


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        torch = _import_torch()
    except Refused as refused:
        return _refused(args, "%s %s" % (sys.executable, refused), reason=str(refused), no_torch=True,
                        python=sys.executable)
    # One thread: answers that do not depend on the machine's core count, and no oversubscription beside the
    # audit's other adapter processes.
    torch.set_num_threads(1)
    try:
        layer, description = load_file(torch, args) if args.file else load_builtin(torch, args)
    except Refused as refused:
        return _refused(args, str(refused))
    if args.describe:
        print(json.dumps(dict(description, torch=torch.__version__, python=sys.executable)))
        return 0
    torch.manual_seed(args.seed)  # dropout's draws in train mode
    arguments, output = None, None
    if args.file:
        keywords = _keywords(args.argument)
        # Without --argument every input goes to forward positionally, in the order of --input.
        arguments = keywords if keywords else _input_names(args.input)
        if args.output_index is not None:
            output = int(args.output_index) if args.output_index.lstrip("-").isdigit() else args.output_index
    # A function, not the module: each case of a batched request is then one call of its own, so that no forward
    # pass decided for a whole batch (a fast path, a kernel chosen by the batch size) makes a case's answer depend
    # on the cases beside it.
    call = layer if not isinstance(layer, torch.nn.Module) else (lambda *a, **k: layer(*a, **k))
    if args.file:
        call = _precision_checked(torch, call, description["dtype"], output, args.file)
    serve(call, dtype=getattr(torch, description["dtype"]), taps=False, arguments=arguments, output=output,
          inputs=args.input or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
