"""Checking a layer against a reference implementation of yours from pytest: the agreement property.

    PYTHONPATH=PREFIX/share/permcheck/python python3 -m pytest examples/pytest -p permcheck.pytest_plugin

Order properties cannot see a wrong function that is still consistent: a kernel port that drops a scale, a fast
path that answers padded positions differently, a relative-position bucket without its clamp. What catches them is
the eager original as the oracle: permcheck.assert_agree(layer, reference, ...) draws inputs from the signature
(masks, ids, long sequences within the first cases), asks both, and shrinks a disagreement to the smallest input
that shows it. A side that raises where the other answers fails the test too.
"""
import math

import pytest
import torch

import permcheck

SIGNATURE = dict(axes=["n=1..12"], inputs=["x:n,8", "pad:n:mask"], outputs=["y:n,8"])


class EagerAttention(torch.nn.Module):
    """The reference: two-head self-attention, key padding as the library writes it (a finfo.min bias), each
    padded query answered too (it attends to the real keys like any other)."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.heads = heads

    def split(self, t):  # (n, d) -> (heads, n, d / heads): head h holds features h*dh .. (h+1)*dh - 1
        n, d = t.shape
        return t.reshape(n, self.heads, d // self.heads).transpose(0, 1)

    def forward(self, x, pad):
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, -1))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        bias = torch.zeros(pad.shape, dtype=x.dtype).masked_fill(pad, torch.finfo(x.dtype).min)
        scores = scores + bias[None, None, :]
        mixed = (scores.softmax(-1) @ v).transpose(0, 1).reshape(x.shape)
        return self.out(mixed)


class PortedKernel(EagerAttention):
    """The same computation written again ("the kernel"): with one of the bugs ports have, or none."""

    def __init__(self, bug=None):
        super().__init__()
        self.bug = bug

    def split(self, t):
        if self.bug == "head layout":  # heads taken as strided features (feature f in head f % heads)
            n, d = t.shape
            return t.reshape(n, d // self.heads, self.heads).permute(2, 0, 1)
        return super().split(t)

    def forward(self, x, pad):
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, -1))
        scale = 1.0 if self.bug == "no scale" else 1.0 / math.sqrt(q.shape[-1])
        scores = (q @ k.transpose(-1, -2) * scale).masked_fill(pad[None, None, :], float("-inf"))
        mixed = (scores.softmax(-1) @ v).transpose(0, 1).reshape(x.shape)
        y = self.out(mixed)
        if self.bug == "fast path":  # a nested-tensor fast path: padded positions answered with zeros
            y = y.masked_fill(pad[:, None], 0.0)
        return y


def twins(bug=None):
    """The kernel and the reference with the same weights."""
    torch.manual_seed(0)
    reference = EagerAttention()
    kernel = PortedKernel(bug)
    kernel.load_state_dict(reference.state_dict())
    return kernel, reference


def test_a_faithful_port_agrees_with_the_eager_reference():
    kernel, reference = twins()
    permcheck.assert_agree(kernel, reference, **SIGNATURE)


@pytest.mark.parametrize("bug", ["no scale", "head layout"])
def test_a_port_that_drops_the_scale_or_mixes_up_the_heads_is_caught(bug):
    kernel, reference = twins(bug)
    result = permcheck.audit(kernel, reference=reference, **SIGNATURE)
    assert result.verdict == "violated", result.explanation()
    assert result.property == "agreement"
    assert "R(x)" in result.explanation()


def test_a_fast_path_that_zeroes_padded_positions_disagrees_there_unless_they_are_skipped():
    kernel, reference = twins("fast path")
    result = permcheck.audit(kernel, reference=reference, **SIGNATURE)
    assert result.verdict == "violated", result.explanation()
    pad = result.counterexample.inputs["pad"]
    assert bool(pad.any()), "the disagreement is at a padded position"
    # As the libraries' own eager-against-fused tests compare: only where the mask says real.
    permcheck.assert_agree(kernel, reference, skip_padded=True, **SIGNATURE)


def t5_bucket(relative, buckets=8, max_distance=16, clamp=True):
    """T5's bidirectional relative-position bucket: exact below buckets // 4, logarithmic up to max_distance."""
    half = buckets // 2
    sign = (relative > 0).long() * half
    distance = relative.abs()
    exact = half // 2
    far = exact + (torch.log(distance.float().clamp(min=1) / exact) / math.log(max_distance / exact)
                   * (half - exact)).long()
    if clamp:
        far = far.clamp(max=half - 1)
    return sign + torch.where(distance < exact, distance, far)


class RelativeBias(torch.nn.Module):
    """Attention with a learned bias per relative-position bucket; clamp=False is the bug: a distance past
    max_distance indexes past the bias table."""

    def __init__(self, clamp=True):
        super().__init__()
        torch.manual_seed(0)
        self.bias = torch.nn.Embedding(8, 1)
        self.value = torch.nn.Linear(8, 8)
        self.clamp = clamp

    def forward(self, x):
        n = x.shape[0]
        relative = torch.arange(n)[None, :] - torch.arange(n)[:, None]
        scores = self.bias(t5_bucket(relative, clamp=self.clamp))[..., 0]
        return scores.softmax(-1) @ self.value(x)


def test_a_bucket_without_its_clamp_is_caught_at_the_shortest_sequence_that_reaches_past_it():
    result = permcheck.audit(RelativeBias(clamp=False), reference=RelativeBias(), axes=["n=1..48"],
                             inputs=["x:n,8"], outputs=["y:n,8"], cases=40)
    assert result.verdict == "violated", result.explanation()
    found = result.counterexample
    assert found.raised and "IndexError" in found.raised  # the table ran out: the unclamped side raised
    # Bucket 7 is the last; a distance of 16 (17 positions) is the first the unclamped function puts past it.
    assert found.lengths["n"] == 17, result.explanation()


def test_a_float32_model_agrees_with_its_float64_original_when_judged_at_float32():
    kernel, reference = twins()
    single = permcheck.assert_agree(kernel, reference, dtype="float32", reference_dtype="float64", **SIGNATURE)
    assert single.dtype == "float32"  # the coarser of the two precisions
    strict = permcheck.audit(kernel, reference=reference, dtype="float32", reference_dtype="float64",
                             judge_as="float64", **SIGNATURE)
    assert strict.verdict == "violated" and strict.dtype == "float64"


class HuggingFaceStyle(torch.nn.Module):
    """The reference as a library exposes it: forward(hidden_states, attention_mask) with 1 = real, a dict back."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, hidden_states, attention_mask):
        return {"last_hidden_state": self.inner(hidden_states, attention_mask == 0)}


def test_a_reference_called_another_way_takes_its_own_arguments_and_output():
    kernel, reference = twins()
    keep = dict(axes=["n=1..12"], inputs=["x:n,8", "mask:n:mask=keep"], outputs=["y:n,8"])
    permcheck.assert_agree(lambda x, mask: kernel(x, mask == 0), HuggingFaceStyle(reference), dtype="float32", **keep,
                           reference_arguments={"hidden_states": "x", "attention_mask": "mask"},
                           reference_output="last_hidden_state")
