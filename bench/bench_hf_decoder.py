"""Benchmark: a tiny Llama's decoder questions through permcheck.hf against the same checks written by hand, as
Hugging Face's model tests write them.

    PERMCHECK_BIN=build/permcheck PYTHONPATH=python .venv/bin/python3 -m pytest -s -q bench/bench_hf_decoder.py

(bench/run runs it and adds its row to the table.) The model: LlamaForCausalLM from a tiny config (2 layers, 16
features, a vocabulary of 50), in eval. For CASES cases each, on n = 1..8:
- hand checks: left padding (a padded batch of two against each sequence alone, position ids kept, logits at the
  real tokens compared with allclose), cached decoding (the prefix with use_cache, then the rest against the one
  pass) and batched against alone (a batch of two against each row alone);
- permcheck.hf: padding (left) and incremental, each audit also asking each case alone beside its batch.
The two run interleaved, REPEATS times each; medians are compared. Never asserts a time.
"""
import json
import os
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import permcheck.hf

REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
CASES = 100


def _model():
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1,
                                        max_position_embeddings=64)).eval()


def _logits(model, ids, mask=None, positions=None, **kwargs):
    return model(input_ids=ids, attention_mask=mask, position_ids=positions, **kwargs).logits


def hand_checks(model, cases=CASES, seed=1):
    g = torch.Generator().manual_seed(seed)
    holds = True
    with torch.no_grad():
        for _ in range(cases):
            n, m = (int(torch.randint(1, 9, (1,), generator=g)) for _ in range(2))
            a, b = torch.randint(0, 50, (1, n), generator=g), torch.randint(0, 50, (1, m), generator=g)
            width = max(n, m)  # left padding: each row alone against the padded batch
            ids = torch.zeros(2, width, dtype=torch.int64)
            mask = torch.zeros(2, width, dtype=torch.int64)
            ids[0, width - n:], ids[1, width - m:] = a[0], b[0]
            mask[0, width - n:], mask[1, width - m:] = 1, 1
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            batch = _logits(model, ids, mask, positions, use_cache=False)
            holds &= torch.allclose(batch[0, width - n:], _logits(model, a, use_cache=False)[0], atol=1e-5)
            holds &= torch.allclose(batch[1, width - m:], _logits(model, b, use_cache=False)[0], atol=1e-5)
            if n >= 2:  # cached decoding: the prefix, then the rest, against one pass
                k = int(torch.randint(1, n, (1,), generator=g))
                first = model(input_ids=a[:, :k], use_cache=True)
                rest = model(input_ids=a[:, k:], cache=first.cache, use_cache=True).logits
                holds &= torch.allclose(torch.cat([first.logits, rest], 1), _logits(model, a, use_cache=False),
                                        atol=1e-5)
            same = torch.cat([a, torch.randint(0, 50, (1, n), generator=g)])  # batched against alone
            holds &= torch.allclose(_logits(model, same, use_cache=False)[:1], _logits(model, a, use_cache=False),
                                    atol=1e-5)
    return holds


def preset(model):
    return (permcheck.hf.audit(model, "padding", cases=CASES).holds and
            permcheck.hf.audit(model, "incremental", cases=CASES).holds)


def test_the_preset_against_the_hand_checks():
    model = _model()
    assert hand_checks(model) and preset(model)  # warm
    hand, audit = [], []
    for _ in range(REPEATS):
        start = time.perf_counter()
        assert hand_checks(model)
        hand.append(time.perf_counter() - start)
        start = time.perf_counter()
        assert preset(model)
        audit.append(time.perf_counter() - start)
    h, a = statistics.median(hand), statistics.median(audit)
    print()
    print("hand checks (100 cases: left padding, cache against one pass, batched against alone): %.2f s" % h)
    print("permcheck.hf padding + incremental (100 cases each):                               %.2f s   ratio %.3f"
          % (a, a / h))
    print("medians of %d interleaved runs each" % REPEATS)
    out = os.environ.get("BENCH_JSON")
    if out:
        with open(out, "w") as handle:
            json.dump({"benchmarks": [{"name": "PythonHF_TinyLlama_padding+incremental/100 (floor: hand checks)",
                                       "time_s": a, "floor_s": h, "ratio": a / h, "real_time": a,
                                       "time_unit": "s"}]}, handle)
