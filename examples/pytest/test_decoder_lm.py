"""A small decoder LM written as Hugging Face models are (input_ids, attention_mask 1 = real, position_ids from
attention_mask.cumsum when not given, RoPE at the position ids, a causal mask combined with the padding mask, a
dataclass answer), asked a decoder's questions, one call each.

    PERMCHECK_BIN=build/permcheck PYTHONPATH=python python3 -m pytest examples/pytest/test_decoder_lm.py
"""
import dataclasses
import math

import torch
from torch import nn

import permcheck

VOCAB, D = 50, 8


@dataclasses.dataclass
class DecoderOutput:
    last_hidden_state: torch.Tensor
    past_key_values: tuple = None


def rotate(x, position_ids):
    """Rotary embedding of x (batch, n, D) at the position ids (batch, n)."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    angles = position_ids.to(torch.float32)[..., None] * inv_freq
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class TinyDecoder(nn.Module):
    """causal: the causal mask by row index; packed: attention only within a packed sequence, which starts where its
    position id is 0, or as segment_ids say when they are given. past_key_values: the keys and values of the
    tokens before (a tuple of two tensors), and the attention_mask then covers them too, as in HF's cached decoding;
    restart: a bug, the new tokens' positions start at 0 instead of after the cache; one_token_steps: a cached path
    that takes one new token at a time and raises for more (as a decode-only kernel does)."""

    def __init__(self, causal=True, packed=False, restart=False, one_token_steps=False):
        super().__init__()
        torch.manual_seed(0)
        self.causal, self.packed, self.restart, self.one_token_steps = causal, packed, restart, one_token_steps
        self.embed = nn.Embedding(VOCAB, D)
        self.q, self.k, self.v = (nn.Linear(D, D, bias=False) for _ in range(3))

    def forward(self, input_ids, attention_mask=None, position_ids=None, segment_ids=None, cache_position=None,
                use_cache=False, past_key_values=None):
        n = input_ids.shape[-1]
        past = 0 if past_key_values is None else past_key_values[0].shape[1]
        if self.one_token_steps and past and n > 1:
            raise RuntimeError("the decode path takes one new token at a time, got %d" % n)
        if attention_mask is None:
            attention_mask = torch.ones(input_ids.shape[0], past + n, dtype=torch.int64)
        if position_ids is None and cache_position is not None:  # as HF models number the tokens they are given
            position_ids = cache_position.unsqueeze(0)
        if position_ids is None:
            position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)[:, -n:]
            if self.restart:
                position_ids = position_ids - position_ids[:, :1]
        h = self.embed(input_ids)
        q, k, v = rotate(self.q(h), position_ids), rotate(self.k(h), position_ids), self.v(h)
        if past_key_values is not None:
            k, v = torch.cat([past_key_values[0], k], dim=1), torch.cat([past_key_values[1], v], dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)
        allowed = attention_mask[:, None, :].bool()
        if self.causal:
            allowed = allowed & torch.ones(n, past + n, dtype=torch.bool).tril(diagonal=past)
        if self.packed:
            if segment_ids is None:
                segment_ids = (position_ids == 0).cumsum(-1)
            allowed = allowed & (segment_ids[:, :, None] == segment_ids[:, None, :])
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        return DecoderOutput(scores.softmax(dim=-1) @ v, (k, v))


LM = dict(axes=["n=1..8"], outputs=["h:1,n,8"], output="last_hidden_state",
          inputs=["input_ids:1,n:token=50", "attention_mask:1,n:mask=keep", "position_ids:1,n:position"],
          arguments={"input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids"})
# Without position_ids: the model numbers the tokens itself from attention_mask.cumsum.
LM_OWN_POSITIONS = dict(axes=["n=1..8"], outputs=["h:1,n,8"], output="last_hidden_state",
                        inputs=["input_ids:1,n:token=50", "attention_mask:1,n:mask=keep"])


def test_no_output_sees_a_later_token():
    permcheck.assert_causal(TinyDecoder(), **LM)


def test_a_decoder_without_its_causal_mask_is_caught_at_two_tokens():
    result = permcheck.audit(TinyDecoder(causal=False), property="causal", **LM)
    assert result.verdict == "violated"
    assert result.counterexample.lengths == {"n": 2}
    assert result.counterexample.part == {"axis": "n", "at": [1]}


def test_the_encoding_is_relative():
    permcheck.assert_shift_invariant(TinyDecoder(), **LM)


def test_left_padding_changes_no_real_token():
    permcheck.assert_padding_invariant(TinyDecoder(), padding="left", **LM_OWN_POSITIONS)


def test_packed_sequences_stay_apart():
    permcheck.assert_packing_invariant(TinyDecoder(packed=True), **LM)  # apart where the position ids restart
    by_segment = dict(LM, inputs=LM["inputs"] + ["segment_ids:1,n:segment"],
                      arguments=dict(LM["arguments"], segment_ids="segment_ids"))
    permcheck.assert_packing_invariant(TinyDecoder(packed=True), **by_segment)


def test_packed_sequences_without_a_block_mask_are_caught_at_two_one_token_sequences():
    result = permcheck.audit(TinyDecoder(), property="packing", **LM)
    assert result.verdict == "violated"
    assert result.counterexample.lengths == {"n": 2}
    assert result.counterexample.part == {"axis": "n", "at": [1], "piece": 1}


def test_the_profile_of_a_decoder_names_its_causal_mask():
    rows = {row["row"]: row for row in permcheck.profile(TinyDecoder(), cases=30, **LM)}
    assert {name: row["verdict"] for name, row in rows.items()} == {
        "causal": "holds", "order-through-positions": "violated", "order-aware": "violated", "relative": "holds",
        "padding-left": "holds", "padding-right": "holds", "padding-any": "holds", "packing": "violated",
        "position-ids": "violated"}
    # Its order by row index comes through the causal mask alone: pads anywhere, the ids kept, change nothing.
    assert rows["order-through-positions"]["meaning"] == (
        "order by row index through the causal mask alone (the causal and padding rows held)")


def test_cache_position_and_constants_come_from_the_arguments():
    numbered = dict(LM_OWN_POSITIONS, arguments={"input_ids": "input_ids", "attention_mask": "attention_mask",
                                                 "cache_position": "arange:n", "use_cache": False})
    permcheck.assert_causal(TinyDecoder(), **numbered)


CACHED = dict(LM_OWN_POSITIONS, cache="past_key_values", cumulative=["attention_mask"])


def test_cached_decoding_gives_the_one_pass_outputs():
    permcheck.assert_incremental(TinyDecoder(), **CACHED)


def test_new_tokens_numbered_from_0_after_a_cache_are_caught_at_two_chunks():
    result = permcheck.audit(TinyDecoder(restart=True), property="incremental", **CACHED)
    assert result.verdict == "violated"
    assert len(result.counterexample.part["at"]) == 1 and result.counterexample.part["chunked"]


def test_a_cached_path_that_raises_where_one_pass_answers_is_a_finding(capfd):
    result = permcheck.audit(TinyDecoder(one_token_steps=True), property="incremental", **CACHED)
    assert result.verdict == "violated"  # the exception is the finding, not an error of the audit
    assert result.counterexample.lengths == {"n": 3} and result.counterexample.part["at"] == [1]
    assert "one new token at a time, got 2 (chunk 2 of 2, positions 1 to 2)" in result.counterexample.raised
    # Its traceback on stderr is introduced as the finding's evidence, not as a failure of the run.
    assert "permcheck judges it (the evidence of a finding" in capfd.readouterr().err
    miswired = dict(CACHED, cache="kv_cache")  # a route the layer does not take: the set-up's error
    assert permcheck.audit(TinyDecoder(), property="incremental", **miswired).verdict == "error"


class StartPos(nn.Module):
    """The reference Llama code's style: the module keeps its own key-value cache, written at start_pos."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(VOCAB, D)
        self.q, self.k, self.v = (nn.Linear(D, D, bias=False) for _ in range(3))
        self.register_buffer("keys", torch.zeros(1, 64, D))
        self.register_buffer("values", torch.zeros(1, 64, D))

    def forward(self, tokens, start_pos):
        n, start = tokens.shape[-1], int(start_pos)
        positions = torch.arange(start, start + n)[None, :]
        h = self.embed(tokens)
        self.keys[:, start:start + n] = rotate(self.k(h), positions)
        self.values[:, start:start + n] = self.v(h)
        keys, values = self.keys[:, :start + n], self.values[:, :start + n]
        scores = rotate(self.q(h), positions) @ keys.transpose(-1, -2) / math.sqrt(D)
        scores = scores.masked_fill(~torch.ones(n, start + n, dtype=torch.bool).tril(diagonal=start), float("-inf"))
        return scores.softmax(dim=-1) @ values


def test_a_module_that_keeps_its_own_cache_decodes_in_chunks():
    permcheck.assert_incremental(StartPos(), axes=["n=1..8"], inputs=["tokens:1,n:token=50"], outputs=["h:1,n,8"],
                                 arguments={"tokens": "tokens", "start_pos": "offset:n"})


def test_a_cached_decoding_finding_replays_on_the_fix():
    found = permcheck.audit(TinyDecoder(restart=True), property="incremental", **CACHED)
    # The layer is called as the audit called it: the report keeps its cache, cumulative inputs and output.
    assert not permcheck.replay(found.report, TinyDecoder(restart=True))
    route = dict(cache="past_key_values", cumulative=["attention_mask"], output="last_hidden_state")
    assert permcheck.replay(found.report, TinyDecoder(), **route)  # or as given again


def test_a_module_that_keeps_its_own_cache_is_never_interleaved_across_jobs():
    permcheck.assert_incremental(StartPos(), axes=["n=1..8"], inputs=["tokens:1,n:token=50"], outputs=["h:1,n,8"],
                                 arguments={"tokens": "tokens", "start_pos": "offset:n"}, jobs=2)
