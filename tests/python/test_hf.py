"""permcheck.hf on Hugging Face transformers models built from tiny configs (no downloaded weights): every question
of the table in docs/huggingface.md with its verdict, and a planted bug of each kind found at its smallest case."""
import os
import pathlib
import re

import pytest
import torch
import transformers
from transformers import (BertConfig, BertModel, Gemma2Config, Gemma2ForCausalLM, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM, T5Config, T5EncoderModel)

import permcheck
import permcheck.hf

# CI also runs this file on transformers 4.46.3, the oldest release the preset supports (tests/CMakeLists.txt, which
# names it in PERMCHECK_TRANSFORMERS: another release imported fails the run); a test whose verdict rests on what 4.x
# does otherwise skips there, saying what.
if os.environ.get("PERMCHECK_TRANSFORMERS", transformers.__version__) != transformers.__version__:
    raise RuntimeError("transformers %s was imported (from %s), where the run is for %s: scripts/install-deps --test "
                       "makes .venv-hf4/" % (transformers.__version__, os.path.dirname(transformers.__file__),
                                             os.environ["PERMCHECK_TRANSFORMERS"]))
RELEASE = tuple(int(x) for x in transformers.__version__.split(".")[:2])
KERNELS = RELEASE >= (5, 0) or hasattr(transformers, "AttentionInterface")  # 4.46 has no attention kernel by name
if KERNELS:
    from transformers import AttentionInterface
    from transformers.models.llama.modeling_llama import eager_attention_forward
PACKED = "finds packed sequences by their restarting position ids only with flash_attention_2"
OTHERWISE_ON_4X = {  # the table's rows, by (model, question)
    ("llama", "packing"): PACKED, ("mistral", "packing"): PACKED, ("gpt2", "packing"): PACKED,
    ("gemma2", "incremental"): "has no Gemma2 cache that grows past the first chunk (its HybridCache is sized by "
                               "generate()), so the preset refuses it",
    ("gemma2", "agreement"): "has an SDPA attention for Gemma2 (Gemma2SdpaAttention), which 5.x refuses"}

SMALL = dict(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=64)
MODELS = {
    "llama": lambda: LlamaForCausalLM(LlamaConfig(**SMALL)),
    "mistral": lambda: MistralForCausalLM(MistralConfig(sliding_window=3, **SMALL)),
    "gemma2": lambda: Gemma2ForCausalLM(Gemma2Config(head_dim=8, sliding_window=3, attn_logit_softcapping=1.0,
                                                     final_logit_softcapping=30.0, **SMALL)),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**SMALL)),
    "gpt2": lambda: GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=2, n_head=2, n_positions=64)),
    "bert": lambda: BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=32, max_position_embeddings=64)),
    "t5": lambda: T5EncoderModel(T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2)),
}


def _model(name):
    torch.manual_seed(0)
    return MODELS[name]().eval()


def _table():
    """The rows of docs/huggingface.md's table of models and questions: (model, question, options, verdict)."""
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "huggingface.md"
    rows = []
    for line in page.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in MODELS:
            options = dict(re.findall(r"(\w+)=\"?([\w-]+)\"?", cells[2]))
            other = OTHERWISE_ON_4X.get((cells[0], cells[1]))
            marks = [pytest.mark.skipif(RELEASE < (5, 0), reason="transformers %s %s" % (transformers.__version__,
                                                                                        other))] if other else []
            rows.append(pytest.param(cells[0], cells[1], options, cells[3], marks=marks,
                                     id="%s-%s-%s" % (cells[0], cells[1], cells[2] or "")))
    assert len(rows) >= 25, "the table of docs/huggingface.md was not read"
    return rows


@pytest.mark.parametrize("name,question,options,verdict", _table())
def test_every_question_of_the_table_has_its_verdict(name, question, options, verdict):
    model = _model(name)
    if verdict == "refused":
        with pytest.raises(ValueError):
            permcheck.hf.audit(model, question, cases=30, **options)
        return
    result = permcheck.hf.audit(model, question, cases=30, **options)
    assert result.verdict == verdict, result.explanation()


def test_the_signature_is_the_keyword_arguments_of_permcheck_audit():
    model = _model("llama")
    kwargs = permcheck.hf.signature(model, "shift")
    assert kwargs == {"property": "shift", "axes": ["n=1..8"], "output": "logits", "outputs": ["logits:1,n,50"],
                      "inputs": ["input_ids:1,n:token=50", "attention_mask:1,n:mask=keep",
                                 "position_ids:1,n:position=64"],
                      "arguments": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                                    "position_ids": "position_ids", "use_cache": False}}
    assert permcheck.audit(model, **kwargs).holds
    cached = permcheck.hf.signature(_model("gpt2"), "incremental")
    assert cached["cache"] == ("cache" if RELEASE >= (5, 0) else "past_key_values")  # as forward names it
    assert cached["cumulative"] == ["attention_mask"]
    assert cached["arguments"]["use_cache"] is True and not any("position_ids" in i for i in cached["inputs"])
    assert permcheck.hf.signature(_model("mistral"), "window")["window"] == 5  # 2 layers of 3 keys: 2 (3 - 1) + 1


def test_a_module_that_is_not_a_transformers_model_is_told_to_use_permcheck_audit():
    with pytest.raises(TypeError, match="permcheck.audit"):
        permcheck.hf.audit(torch.nn.Linear(4, 4), "causal")


def _off_by_one(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """A kernel whose causal mask lets each query see one later key."""
    n, total = query.shape[-2], key.shape[-2]
    allowed = torch.ones(n, total, dtype=torch.bool).tril(diagonal=total - n + 1)
    mask = torch.zeros(n, total, dtype=query.dtype).masked_fill(~allowed, torch.finfo(query.dtype).min)
    return eager_attention_forward(module, query, key, value, mask, scaling, dropout)


class RestartingPositions(LlamaForCausalLM):
    """Numbers each chunk's tokens from 0, whatever its cache holds."""

    def forward(self, input_ids=None, position_ids=None, **kwargs):
        return super().forward(input_ids=input_ids, position_ids=torch.arange(input_ids.shape[-1])[None], **kwargs)


class PositionsByRow(GPT2LMHeadModel):
    """Drops the position ids it is given and numbers the row, left pads included."""

    def forward(self, input_ids=None, position_ids=None, **kwargs):
        return super().forward(input_ids=input_ids, **kwargs)


class MaskFromPadIds(LlamaForCausalLM):
    """Finds its pads by id (input_ids == config.pad_token_id), ignoring the attention mask it is given."""

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        own = (input_ids != self.config.pad_token_id).long()
        return super().forward(input_ids=input_ids, attention_mask=own, **kwargs)


class AllReal(LlamaForCausalLM):
    """Passes an all-ones attention mask, so packed documents see each other."""

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        return super().forward(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)


class WideWindow(MistralForCausalLM):
    """Attends through a sliding window one key wider than its config says."""

    def forward(self, *args, **kwargs):
        self.config.sliding_window += 1
        try:
            return super().forward(*args, **kwargs)
        finally:
            self.config.sliding_window -= 1


class IgnoresPositionIds(LlamaForCausalLM):
    """Drops the position ids it is given: its rotary phases are those of the row index."""

    def forward(self, input_ids=None, position_ids=None, **kwargs):
        return super().forward(input_ids=input_ids, **kwargs)


def test_the_profile_of_a_decoder_tells_its_position_routes_apart_and_says_what_each_row_checked():
    torch.manual_seed(0)
    models = {"llama": _model("llama"), "ignores ids": IgnoresPositionIds(LlamaConfig(**SMALL)).eval(),
              "gpt2": _model("gpt2"), "table by row": PositionsByRow(GPT2Config(vocab_size=50, n_embd=16, n_layer=2,
                                                                                  n_head=2, n_positions=64)).eval()}
    said = {}
    for name, model in models.items():
        rows = permcheck.hf.profile(model, cases=20)
        said[name] = {row["row"]: (row["verdict"], row["meaning"]) for row in rows}
        for row in rows:  # what it changed, in its title; no row vouches for more than it checked
            assert re.search(r"\(.+\)$", row["title"]) or row["row"] == "incremental", row["title"]
            assert "what a causal model does" not in row["meaning"]
    verdicts = {name: {row: v for row, (v, _) in rows.items()} for name, rows in said.items()}
    for name in models:
        assert verdicts[name]["causal"] == "holds"
        assert verdicts[name]["incremental"] == "holds", name
    # Llama: the row index only through the causal mask (pads anywhere, ids kept, change nothing); its ids reach
    # the output, relatively.
    assert [verdicts["llama"][row] for row in ("padding-left", "padding-any", "position-ids", "relative")] == [
        "holds", "holds", "violated", "holds"]
    assert said["llama"]["order-through-positions"][1] == (
        "order by row index through the causal mask alone (the causal and padding rows held)")
    # Its ids ignored (transformers numbers the real tokens from the mask instead): the gaps between the ids change
    # nothing, so it shifts for free, and the order row does not vouch for the mask alone.
    assert [verdicts["ignores ids"][row] for row in ("position-ids", "relative")] == ["holds", "holds"]
    assert said["ignores ids"]["relative"][1] == "relative only as ids ignored are (the gaps row held)"
    assert "the position ids ignored" in said["ignores ids"]["order-through-positions"][1]
    # A learned table read at the row index (nanoGPT's): a left pad, the ids kept, moves every row.
    assert [verdicts["table by row"][row] for row in ("padding-left", "position-ids")] == ["violated", "holds"]
    assert said["table by row"]["order-through-positions"][1] == (
        "order by row index beyond the causal mask (a pad, every position id kept, changed an output)")
    # GPT-2: absolute positions through its ids.
    assert [verdicts["gpt2"][row] for row in ("padding-left", "position-ids", "relative")] == [
        "holds", "violated", "violated"]
    assert said["gpt2"]["relative"][1] == "not relative (absolute positions)"
    assert "through the causal mask alone" in said["gpt2"]["order-through-positions"][1]
    assert said["table by row"]["relative"][1] == "relative only as ids ignored are (the gaps row held)"
    # Asked as a collator packs, no mask (transformers 4.x finds packed sequences only with flash_attention_2).
    assert verdicts["llama"]["packing"] == ("holds" if RELEASE >= (5, 0) else "violated")
    assert len({tuple(sorted(v.items())) for v in verdicts.values()}) == len(models)


@pytest.mark.skipif(not KERNELS, reason="transformers %s has no AttentionInterface to register an attention kernel "
                                         "by name" % transformers.__version__)
def test_a_causal_mask_off_by_one_is_found_at_two_tokens():
    AttentionInterface.register("off_by_one", _off_by_one)
    model = _model("llama")
    model.set_attn_implementation("off_by_one")
    result = permcheck.hf.audit(model, "causal")
    assert result.verdict == "violated"
    assert result.counterexample.lengths == {"n": 2} and result.counterexample.part == {"axis": "n", "at": [1]}


def test_a_cache_position_that_restarts_is_found_at_two_one_token_chunks():
    torch.manual_seed(0)
    result = permcheck.hf.audit(RestartingPositions(LlamaConfig(**SMALL)).eval(), "incremental")
    assert result.verdict == "violated"
    assert result.counterexample.lengths == {"n": 2} and result.counterexample.part["at"] == [1]


def test_positions_numbered_by_row_under_left_padding_are_found_with_one_token_and_one_pad():
    torch.manual_seed(0)
    model = PositionsByRow(GPT2Config(vocab_size=50, n_embd=16, n_layer=2, n_head=2, n_positions=64)).eval()
    result = permcheck.hf.audit(model, "padding")
    assert result.verdict == "violated"
    assert result.counterexample.lengths == {"n": 1} and result.counterexample.part["slots"] == [0]


def test_pads_carry_the_config_pad_token_id_so_a_model_that_finds_them_by_id_holds():
    torch.manual_seed(0)
    model = MaskFromPadIds(LlamaConfig(pad_token_id=3, **SMALL)).eval()
    kwargs = permcheck.hf.signature(model, "padding")
    assert kwargs["pad_id"] == 3 and permcheck.hf.signature(_model("gpt2"), "padding")["pad_id"] == 0  # none: 0
    if RELEASE < (5, 0):  # a real token with the pad id is a pad to this model, a query with every key masked
        pytest.skip("transformers %s lets a query whose every key is masked attend to every key, so its answer "
                    "changes beside a pad" % transformers.__version__)
    assert permcheck.audit(model, **kwargs).holds
    del kwargs["pad_id"]  # pads of any id: one that is not 3 is a real token to this model
    result = permcheck.audit(model, **kwargs)
    assert result.verdict == "violated" and result.counterexample.lengths == {"n": 1}
    rows = {row["row"]: row["verdict"] for row in permcheck.hf.profile(model, cases=20)}  # every padding row's pads too
    assert [rows[row] for row in ("padding-left", "padding-right", "padding-any")] == ["holds"] * 3


def test_packed_documents_that_see_each_other_are_found_at_two_one_token_documents():
    torch.manual_seed(0)
    result = permcheck.hf.audit(AllReal(LlamaConfig(**SMALL)).eval(), "packing")
    assert result.verdict == "violated"
    assert result.counterexample.lengths == {"n": 2} and result.counterexample.part["at"] == [1]


def test_a_sliding_window_one_too_wide_is_found_at_the_window_plus_one():
    torch.manual_seed(0)
    one_layer = dict(SMALL, num_hidden_layers=1)
    result = permcheck.hf.audit(WideWindow(MistralConfig(sliding_window=3, **one_layer)).eval(), "window")
    assert result.verdict == "violated" and result.counterexample.lengths == {"n": 4}
    torch.manual_seed(0)
    assert permcheck.hf.audit(MistralForCausalLM(MistralConfig(sliding_window=3, **one_layer)).eval(), "window")


@pytest.mark.skipif(RELEASE >= (5, 0), reason="transformers 5.x's Gemma2 cache grows (the table's incremental row)")
def test_a_cache_sized_to_the_first_chunk_is_refused_and_the_profile_asks_no_incremental_row():
    with pytest.raises(ValueError, match="HybridCache as long as its first chunk"):
        permcheck.hf.audit(_model("gemma2"), "incremental")
    assert "incremental" not in {row["row"] for row in permcheck.hf.profile(_model("gemma2"), cases=10)}


def test_assertions_raise_with_the_counterexample():
    permcheck.hf.assert_causal(_model("qwen2"))
    with pytest.raises(AssertionError, match="shift"):
        permcheck.hf.assert_shift_invariant(_model("gpt2"))


def test_the_release_is_one_the_docs_name():
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    assert (major, minor) >= (4, 46), transformers.__version__
