"""A model repository's CI asks its decoder permcheck's questions through the Hugging Face preset, one line each. The
model is built from a tiny config, as a repository's own tests build theirs; a real one is loaded as usual.

    PERMCHECK_BIN=build/permcheck PYTHONPATH=python python3 -m pytest examples/pytest/test_hf_decoder.py
"""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import permcheck.hf


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return LlamaForCausalLM(config).eval()


def test_no_token_sees_a_later_one(model):
    permcheck.hf.assert_causal(model)


def test_cached_decoding_gives_the_one_pass_logits(model):
    permcheck.hf.assert_incremental(model)


def test_left_padding_changes_no_real_token(model):
    permcheck.hf.assert_padding_invariant(model, padding="left")


def test_packed_documents_stay_apart(model):
    permcheck.hf.assert_packing_invariant(model)


def test_rope_is_relative(model):
    permcheck.hf.assert_shift_invariant(model)


def test_sdpa_agrees_with_eager(model):
    permcheck.hf.assert_agree(model, "eager")
