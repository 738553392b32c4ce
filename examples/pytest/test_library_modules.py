"""Library modules audited as they are, with no wrapper class.

    PYTHONPATH=PREFIX/share/permcheck/python python3 -m pytest examples/pytest -p permcheck.pytest_plugin

`arguments` maps forward's own parameter names to the signature's inputs (or to `length:AXIS`, an int64 tensor of
the axis's length), `output` picks the one element of a tuple answer. The inputs carry a batch dim of 1 (the
modules are built batch_first).
"""
import pytest
import torch
from torch import nn

import permcheck
from conformer import Conformer  # examples/pytest/conformer.py

TOKENS = dict(axes=["n=1..8"], inputs=["x:1,n,8", "pad:1,n:mask"], outputs=["y:1,n,8"])


def encoder_layer():
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)


def test_transformer_encoder_with_a_padding_mask_is_equivariant():
    encoder = nn.TransformerEncoder(encoder_layer(), num_layers=2, enable_nested_tensor=False)
    permcheck.assert_equivariant(encoder, **TOKENS, arguments={"src": "x", "src_key_padding_mask": "pad"})


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_transformer_encoder_fast_path_moves_the_rows_after_a_leading_pad():
    # In eval, with a padding mask, the nested-tensor fast path packs each sequence's unpadded rows to the front and
    # answers zeros after them: a pad before a real token moves that token's row, which breaks equivariance.
    encoder = nn.TransformerEncoder(encoder_layer(), num_layers=2)  # enable_nested_tensor=True, the default
    result = permcheck.audit(encoder, **TOKENS, arguments={"src": "x", "src_key_padding_mask": "pad"})
    assert result.verdict == "violated"
    example = result.counterexample
    assert example.lengths == {"n": 2} and example.permutations == {"n": [1, 0]}
    assert example.inputs["pad"].tolist() == [[False, True]]  # one real token, then a pad: P x puts the pad first
    (y,) = example.outputs.values()
    # L(P x) answers the real token's row at the pad's place 0; P L(x) has the zeros of the pad there
    assert y.layer_of_permuted[0, 0].abs().max() > 0 and y.permuted_layer[0, 0].abs().max() == 0


def test_multihead_self_attention_is_equivariant():
    torch.manual_seed(0)
    attention = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
    permcheck.assert_equivariant(attention, **TOKENS, output=0,  # forward returns (output, weights)
                                 arguments={"query": "x", "key": "x", "value": "x", "key_padding_mask": "pad"})


def test_conformer_convolution_sees_token_order():
    torch.manual_seed(0)
    conformer = Conformer(input_dim=8, num_heads=2, ffn_dim=16, num_layers=1,
                          depthwise_conv_kernel_size=3)
    result = permcheck.audit(conformer, axes=["n=1..8"], inputs=["x:1,n,8"], outputs=["y:1,n,8"],
                             arguments={"input": "x", "lengths": "length:n"}, output=0)
    assert result.verdict == "violated"  # its depthwise convolution mixes neighbouring frames
    assert result.first_breaking_tap.startswith("conformer_layers.0.conv_module")
