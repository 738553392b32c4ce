"""Auditing a torch module with a padding mask from pytest.

    PYTHONPATH=PREFIX/share/permcheck/python python3 -m pytest examples/pytest -p permcheck.pytest_plugin

(with permcheck installed by pip, the plugin loads itself and no PYTHONPATH is needed). The mask is an input like
x, so permcheck moves it with the tokens: attention that honours the mask is equivariant, and padding it marks
changes none of the real tokens' outputs. A layer that pads "the last k positions", whatever the mask names, is
caught by both audits.
"""
import math

import pytest
import torch

import permcheck

SIGNATURE = dict(axes=["n=1..8"], inputs=["x:n,8", "pad:n:mask"], outputs=["y:n,8"])


class MaskedAttention(torch.nn.Module):
    """Single-head self-attention; pad[j] true: key j is padding (PyTorch's key_padding_mask)."""

    def __init__(self, d=8, fixed_padding=False):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        self.fixed_padding = fixed_padding

    def forward(self, x, pad):
        if self.fixed_padding:  # the mistake: pad the end, as many positions as the mask names
            pad = torch.arange(len(pad)) >= len(pad) - int(pad.sum())
        scores = self.q(x) @ self.k(x).T / math.sqrt(x.shape[-1])
        return scores.masked_fill(pad[None, :], float("-inf")).softmax(-1) @ self.v(x)


@pytest.fixture
def attention():
    torch.manual_seed(0)
    return MaskedAttention()


def test_masked_attention_is_equivariant(attention):
    permcheck.assert_equivariant(attention, **SIGNATURE)


def test_padding_the_mask_marks_changes_no_real_token(attention):
    permcheck.assert_padding_invariant(attention, **SIGNATURE)


def test_a_mask_that_does_not_move_with_the_tokens_is_caught():
    torch.manual_seed(0)
    broken = MaskedAttention(fixed_padding=True)
    result = permcheck.audit(broken, **SIGNATURE)
    assert result.verdict == "violated"
    pad = result.counterexample.inputs["pad"]  # the shrunk case's mask, as a bool tensor
    assert pad.dtype == torch.bool and pad.any()
    with pytest.raises(AssertionError, match=r"pads? into n at slot"):
        permcheck.assert_padding_invariant(broken, **SIGNATURE)
