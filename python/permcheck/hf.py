"""permcheck.hf: Hugging Face transformers models audited as they are, each question one line, no signature written
by hand (docs/huggingface.md).

    import permcheck.hf

    permcheck.hf.assert_causal(model)                         # no output sees a later token
    permcheck.hf.assert_incremental(model)                    # cached decoding gives the one-pass outputs
    result = permcheck.hf.audit(model, property="padding", padding="left")
    rows = permcheck.hf.profile(model)
    kwargs = permcheck.hf.signature(model, property="shift")  # what the preset passes to permcheck.audit

The preset reads the model's conventions: `input_ids` (token ids below `config.vocab_size`), `attention_mask`
(1 = real), `position_ids` (below `max_position_embeddings`), the cache argument and the answer's field that
returns it (`cache` or `past_key_values`, a Cache object the model builds afresh for each ask and updates in
place, or in transformers 4.x the legacy tuple a model returns and takes), the `ModelOutput` field that answers
(`logits`, else `last_hidden_state`) and the sliding window. Releases: transformers 4.46 to the 5.x of
requirements.txt.
"""

import copy
import inspect
import json
import os
import tempfile

import permcheck
from permcheck import _asserted
from permcheck._audit import _row

__all__ = ["audit", "profile", "signature", "assert_causal", "assert_incremental", "assert_padding_invariant",
           "assert_packing_invariant", "assert_shift_invariant", "assert_equivariant", "assert_agree",
           "assert_window"]

# The shortest sequence axis the preset asks (a window's receptive field may ask more).
LENGTH = 8


def _config(model):
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "vocab_size"):
        raise TypeError("permcheck.hf audits a transformers model (a PreTrainedModel with a config that has "
                        "vocab_size), got %s; audit other modules with permcheck.audit" % type(model).__name__)
    return config


def _parameters(model):
    """The keyword arguments forward takes: a subclass's forward(**kwargs) takes those of the forward it calls."""
    names = {}
    for cls in type(model).__mro__:
        forward = cls.__dict__.get("forward")
        if forward is None:
            continue
        parameters = inspect.signature(forward).parameters
        names.update((name, p) for name, p in parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
        if not any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
            break
    return names


def _answer(model, torch):
    """(field, width): the ModelOutput field that answers (logits, else last_hidden_state) and its last dim, read
    off one call on two tokens."""
    with torch.no_grad():
        out = model(input_ids=torch.zeros(1, 2, dtype=torch.int64, device=_device(model, torch)))
    for field in ("logits", "last_hidden_state"):
        value = out.get(field) if hasattr(out, "get") else None
        if value is not None:
            return field, int(value.shape[-1])
    raise TypeError("%s answers %s with neither logits nor last_hidden_state; audit it with permcheck.audit and "
                    "output=" % (type(model).__name__, type(out).__name__))


def _device(model, torch):
    return next(model.parameters(), torch.zeros(())).device


def _positions(config):
    """How many position ids the model has a table or a rotary range for (None: relative, no limit)."""
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _layer_kinds(config):
    """Each layer's attention: "sliding_attention" or "full_attention", as transformers configs name them."""
    kinds = getattr(config, "layer_types", None)
    if kinds:
        return list(kinds)
    layers = getattr(config, "num_hidden_layers", None) or 1
    sliding = getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True)
    if sliding and _hybrid(config):  # 4.x Gemma2, no layer_types: every second layer global
        return ["full_attention" if k % 2 else "sliding_attention" for k in range(layers)]
    return ["sliding_attention" if sliding else "full_attention"] * layers


def _hybrid(config):
    """Whether the model builds a HybridCache of its first chunk's length (transformers 4.x Gemma2)."""
    return getattr(config, "cache_implementation", None) == "hybrid"


def receptive_field(config):
    """How far back an output of the model may see: L (W - 1) + 1 for L layers of a sliding window of W keys (a
    query's own among them, as transformers counts `sliding_window`); None when a layer attends to the whole
    prefix."""
    window = getattr(config, "sliding_window", None)
    kinds = _layer_kinds(config)
    if not window or any(kind != "sliding_attention" for kind in kinds):
        return None
    return len(kinds) * (int(window) - 1) + 1


def _cache_name(parameters):
    for name in ("cache", "past_key_values"):  # transformers 5.x renamed past_key_values to cache
        if name in parameters:
            return name
    return None


def signature(model, property="causal", *, cache="dynamic", window=None, **options):
    """The keyword arguments permcheck.hf passes to permcheck.audit for `property` (`options` among them): the
    axis n, the inputs the model's forward takes, the answer's field, and per property its route (the cache for
    incremental, the receptive field for window). Adjust them and call permcheck.audit(model, **kwargs)."""
    import torch
    config = _config(model)
    parameters = _parameters(model)
    field, width = _answer(model, torch)
    positions = _positions(config)
    takes = [name for name in ("attention_mask", "position_ids") if name in parameters]
    if property == "packing":  # as DataCollatorWithFlattening packs: no mask, the position ids restart at 0
        takes = [name for name in takes if name == "position_ids"]
    if property == "incremental":  # the model numbers the new tokens after its cache
        takes = [name for name in takes if name != "position_ids"]
    if property == "shift" and "position_ids" not in takes:
        raise ValueError("shift moves the position ids; %s.forward takes none" % type(model).__name__)
    if property == "packing" and "position_ids" not in parameters:
        raise ValueError("packing tells packed sequences apart by position ids restarting at 0; %s.forward takes "
                         "none" % type(model).__name__)
    length = LENGTH
    kwargs = {"property": property}
    if property == "window":
        if window is None:
            window = receptive_field(config)
        if window is None:
            raise ValueError("%s has no sliding window in every layer (layer types %s), so no output is bound to a "
                             "window; pass window=W to ask for one anyway" % (type(model).__name__,
                                                                          ", ".join(_layer_kinds(config))))
        kwargs["window"] = int(window)
        length = max(length, int(window) + 1)  # a window one too wide shows at n = W + 1
    if positions is not None:
        length = min(length, positions)
    kinds = {"input_ids": "token=%d" % config.vocab_size, "attention_mask": "mask=keep",
             "position_ids": "position" if positions is None else "position=%d" % positions}
    kwargs.update(axes=["n=1..%d" % length],
                  inputs=["input_ids:1,n:%s" % kinds["input_ids"]] + ["%s:1,n:%s" % (n, kinds[n]) for n in takes],
                  outputs=["%s:1,n,%d" % (field, width)], output=field,
                  arguments=dict({name: name for name in ["input_ids"] + takes}, use_cache=property == "incremental"))
    if "use_cache" not in parameters:
        del kwargs["arguments"]["use_cache"]
    if property == "incremental":
        kwargs.update(_cached(model, parameters, cache, takes))
    if property == "padding":  # as a tokenizer pads a batch; "any" also inserts pads between tokens
        kwargs["padding"] = "left"
    if property in ("padding", "profile"):  # the pads' token id
        pad = getattr(config, "pad_token_id", None)
        kwargs["pad_id"] = pad if isinstance(pad, int) and 0 <= pad < config.vocab_size else 0
    kwargs.update(options)
    return kwargs


def _cached(model, parameters, cache, takes):
    """The route of cached decoding: the cache argument, handed from each chunk's answer to the next."""
    name = _cache_name(parameters)
    if name is None:
        raise ValueError("incremental decodes with a cache; %s.forward takes none (cache or past_key_values)"
                         % type(model).__name__)
    if _hybrid(model.config):
        raise ValueError("incremental decodes with the cache the model builds; %s builds a HybridCache as long as "
                         "its first chunk (transformers 4.x: generate() makes one long enough), so no later chunk fits"
                         % type(model).__name__)
    if cache != "dynamic":
        raise ValueError('cache is "dynamic" (the DynamicCache the model builds at the first chunk and updates in '
                         'place), got %r' % (cache,))
    return {"cache": name, "cumulative": [n for n in takes if n == "attention_mask"]}


def _implementation(model, name):
    """A copy of `model` (its weights shared by value) that computes attention with implementation `name`."""
    if not hasattr(model, "set_attn_implementation"):  # transformers 4.x: attention classes chosen at init
        config = copy.deepcopy(model.config)
        config._attn_implementation_autoset = False  # so that transformers checks that the model has `name`
        other = type(model)._from_config(config, attn_implementation=name, torch_dtype=model.dtype)
        other.load_state_dict(model.state_dict())
        return other.to(model.device).train(model.training)
    other = copy.deepcopy(model)
    other.set_attn_implementation(name)
    return other


def audit(model, property="causal", *, reference=None, cache="dynamic", window=None, **options):
    """permcheck.audit of `model` for `property` with the preset's signature (signature() says it); a Result.
    `reference` (agreement): another model, any callable of the same signature, or the name of an attention
    implementation ("eager", "sdpa", "flex_attention") to compare the model against a copy of itself that uses it."""
    if reference is not None and property == "causal":
        property = "agreement"
    if isinstance(reference, str):
        reference = _implementation(model, reference)
    kwargs = signature(model, property, cache=cache, window=window, **options)
    if reference is not None:  # called as the model is, unless options say otherwise
        kwargs = dict(dict(reference_arguments=kwargs["arguments"], reference_output=kwargs["output"],
                           skip_padded=True), **kwargs, reference=reference)  # a pad's answer is unspecified
    return permcheck.audit(model, **kwargs)


def profile(model, *, report=None, **options):
    """permcheck.profile of `model` with the preset's signature (the position ids and the mask among the inputs):
    every question a row, the packing row asked as a collator packs (no mask) and, for a model with a cache
    argument, the incremental row (its cache, the model numbering the new tokens)."""
    kwargs = signature(model, "profile", **options)
    del kwargs["property"]
    directory = os.fspath(report) if report is not None else tempfile.mkdtemp(prefix="permcheck-profile-")
    rows = permcheck.profile(model, report=directory, **kwargs)
    parameters = _parameters(model)
    asked = []
    if "position_ids" in parameters and any(row["row"] == "packing" for row in rows):
        asked.append(("packing", "packed sequences stay apart (no mask, position ids restarting)"))
    if _cache_name(parameters) and "use_cache" in parameters and not _hybrid(model.config):
        asked.append(("incremental", "cached decoding equals one pass (the model's cache)"))
    for prop, title in asked:
        own = signature(model, prop, **options)
        del own["property"]
        row = _row(prop, title, model, directory, own)
        at = [k for k, old in enumerate(rows) if old["row"] == prop]
        if at:
            rows[at[0]] = row
        else:
            rows.append(row)
    listed = os.path.join(directory, "profile.json")
    with open(listed) as f:
        written = json.load(f)
    with open(listed, "w") as f:
        json.dump(dict(written, rows=[dict(row, report=os.path.relpath(row["report"], directory)) if row["report"]
                                      else row for row in rows]), f, indent=2)
    return rows


def _assertion(property, doc):
    def check(model, **options):
        __tracebackhide__ = True
        return _asserted(audit(model, property, **options))
    check.__doc__ = doc + "; the Result when it holds, AssertionError with the counterexample otherwise."
    check.__name__ = "assert_" + property
    return check


assert_causal = _assertion("causal", "No output of the model sees a later token")
assert_incremental = _assertion("incremental", "Decoding in chunks with the model's cache gives the one-pass outputs")
assert_padding_invariant = _assertion("padding", "Pads the attention mask marks change none of the real tokens' "
                                                 "outputs (padding=\"left\", \"right\" or \"any\")")
assert_packing_invariant = _assertion("packing", "Sequences packed into one row, their position ids restarting at 0, "
                                                 "stay apart")
assert_shift_invariant = _assertion("shift", "Shifting every position id by a constant changes no output")
assert_equivariant = _assertion("equivariance", "Permuting the tokens with their position ids permutes the outputs "
                                                "(an encoder)")
assert_window = _assertion("window", "Output i sees only the receptive field of the model's sliding window")


def assert_agree(model, reference, **options):
    """The model and `reference` (a model, a callable or an attention implementation's name) answer alike."""
    __tracebackhide__ = True
    return _asserted(audit(model, "agreement", reference=reference, **options))
