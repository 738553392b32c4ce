"""Tests of the Python package permcheck (python/permcheck/): audits served from this process over a Unix socket.

    PERMCHECK_BIN=build/permcheck PYTHONPATH=python python3 -m pytest tests/python/test_permcheck_package.py

Every layer is defined here, in the test process: a symmetric module holds, one with a learned position table is
violated and its shrunk counterexample is in the assertion message; the user's module is left as it was; the
other verdicts, the options, and the errors (a slow layer, a missing binary, unknown options) say what they are.
"""
import json
import math
import os
import re
import stat
import time

import pytest
import torch

import permcheck


class Symmetric(torch.nn.Module):
    """Each token mixed with the mean of all: permutation-equivariant."""

    def __init__(self, d=8):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x) + x.mean(0, keepdim=True)


class LearnedPosition(torch.nn.Module):
    """A learned absolute position embedding: row i gets table[i], so order shows."""

    def __init__(self, d=8):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(16, d))

    def forward(self, x):
        return x + self.pos[: x.shape[0]]


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


# ---------------------------------------------------------------------------------------------------------
# The two verdicts that matter most

def test_a_symmetric_module_holds():
    result = permcheck.assert_equivariant(Symmetric(), dim=8)
    assert result.verdict == "holds" and bool(result)
    assert result.report is None  # a holding audit keeps no temporary report
    assert "holds" in result.summary and "Symmetric" in result.summary


def test_a_learned_position_embedding_fails_with_the_shrunk_counterexample():
    with pytest.raises(AssertionError) as caught:
        permcheck.assert_equivariant(LearnedPosition(), dim=8)
    message = str(caught.value)
    assert "violated" in message
    # The assertion shows what the binary printed: the shrunk case, both sides in lined-up columns, the replay.
    assert "lengths: n = 2\n  permutations n (0 1)" in message, message
    assert "  input x (2, 8) =\n" + ("    [" + " ".join(["        0"] * 8) + "]\n") * 2 in message, message
    assert "  output y (DIFFERS):" in message, message
    rows = []
    for side in ("L(P x)", "P L(x)"):
        rows += message.split("    %s (2, 8) =\n" % side)[1].splitlines()[:2]
    assert all(r.startswith("      [") and r.endswith("]") and len(r.strip(" []").split()) == 8 for r in rows), message
    assert len({len(r) for r in rows}) == 1, message
    report = message.split("  report: ")[1].split("\n")[0]
    assert os.path.isfile(os.path.join(report, "report.json"))
    assert 'permcheck.replay("%s", layer)' % report in message


def test_a_wide_counterexample_is_elided_keeping_the_largest_difference_in_view():
    # 50 features: each row shows its first and last three values and the count, and the column of the largest
    # difference with its index when the cut would hide it; no number is cut in the middle.
    with pytest.raises(AssertionError) as caught:
        permcheck.assert_equivariant(LearnedPosition(d=50), dim=50)
    message = str(caught.value)
    row, col = (int(v) for v in re.search(r"largest \|difference\| = \S+ at \((\d+), (\d+)\)", message).groups())
    n = int(re.search(r"lengths: n = (\d+)", message).group(1))
    lines = message.split("    L(P x) (%d, 50) =\n" % n)[1].splitlines()[:n]
    for line in lines:
        assert line.endswith("] (50 values)"), message
        cells = line.strip().split("]")[0].strip("[").split()
        values = [c for c in cells if c != "..." and not c.endswith(":")]
        assert len(values) in (6, 7) and all(math.isfinite(float(v)) for v in values), message
    if 3 <= col < 47:
        assert "... %d: " % col in lines[row], message


class TwoLeakyFeatures(torch.nn.Module):
    """Adds each position's index to feature 10 and twice it to feature 20: two columns in the cut middle differ."""

    def forward(self, x):
        n = torch.arange(x.shape[0], dtype=x.dtype)
        y = x.clone()
        y[:, 10] += n
        y[:, 20] += 2 * n
        return y


def test_an_elided_row_counts_the_differences_it_hides():
    with pytest.raises(AssertionError) as caught:
        permcheck.assert_equivariant(TwoLeakyFeatures(), dim=50)
    message = str(caught.value)
    assert re.search(r"largest \|difference\| = \S+ at \(\d+, 20\)", message), message
    hidden = re.search(r"(\d+) more entr(?:y|ies) beyond the tolerance in the columns the rows cut: (.*)", message)
    assert hidden, message
    n = int(re.search(r"lengths: n = (\d+)", message).group(1))
    named = re.findall(r"\((\d+), (\d+)\)", hidden.group(2))
    assert 1 <= int(hidden.group(1)) <= n and named and all(col == "10" for _, col in named), message


# ---------------------------------------------------------------------------------------------------------
# The user's module is never modified

def test_the_module_keeps_its_mode_dtype_and_weights():
    module = torch.nn.Sequential(Symmetric(), torch.nn.Dropout(0.5), Symmetric())
    module.train()
    module[2].eval()  # modes per submodule, restored one by one
    before = {k: v.clone() for k, v in module.state_dict().items()}
    assert permcheck.audit(module, dim=8, cases=30)  # audited in eval: dropout off
    assert permcheck.audit(module, dim=8, cases=30, dtype=torch.float64).dtype == "float64"
    assert [m.training for m in module.modules()] == [True, True, True, True, False, False]
    assert all(p.dtype == torch.float32 for p in module.parameters())
    after = module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


# ---------------------------------------------------------------------------------------------------------
# What a layer may be

@pytest.fixture
def weights():
    return torch.randn(4, 4, dtype=torch.float64)


def test_a_closure_over_a_fixture_gets_float64_tensors(weights):
    seen = []

    def layer(x):
        seen.append(x.dtype)
        return torch.tanh(x @ weights)
    assert permcheck.audit(layer, dim=4, cases=30).verdict == "holds"
    assert set(seen) == {torch.float64}
    broken = permcheck.audit(lambda x: torch.cumsum(x @ weights, 0), dim=4, cases=30)
    assert broken.verdict == "violated"


def test_a_function_computing_in_float32_is_judged_in_float32():
    w = torch.randn(4, 4)
    assert permcheck.audit(lambda x: x @ w, dim=4, dtype="float32", cases=30)


def test_torchscript_modules_are_audited():
    scripted = torch.jit.script(torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0))
    permcheck.assert_equivariant(scripted, axes=["n=1..8"], inputs=["src:n,1,8"], outputs=["y:n,1,8"], cases=40)
    with pytest.raises(AssertionError, match="violated"):
        permcheck.assert_equivariant(torch.jit.script(LearnedPosition()), dim=8)


def test_a_library_module_with_arguments_and_output():
    mha = torch.nn.MultiheadAttention(8, 2)
    sig = dict(axes=["n=1..6", "m=1..6"], inputs=["q:n,1,8", "kv:m,1,8", "pad:1,m:mask"], outputs=["y:n,1,8"])
    by_name = {"query": "q", "key": "kv", "value": "kv", "key_padding_mask": "pad"}
    permcheck.assert_equivariant(mha, arguments=by_name, output=0, cases=40, **sig)
    permcheck.assert_equivariant(mha, arguments=["q", "kv", "kv"], output=0, cases=40, jobs=2, **sig)
    permcheck.assert_padding_invariant(mha, arguments=by_name, output=0, cases=40, **sig)
    # The mask not passed: padded keys are attended to, and the padding audit sees it.
    unmasked = lambda q, kv, pad: mha(q, kv, kv)  # noqa: E731
    with pytest.raises(AssertionError, match="violated"):
        permcheck.assert_padding_invariant(unmasked, output=0, dtype="float32", cases=40, **sig)


def test_a_pooled_output_is_an_invariance_check():
    inner = Symmetric().double()
    pooled = lambda x: inner(x).sum(0)  # noqa: E731
    permcheck.assert_equivariant(pooled, dim=8, outputs="pooled", cases=30)
    first = lambda x: x[0]  # noqa: E731  (the first token: not invariant)
    with pytest.raises(AssertionError, match="violated"):
        permcheck.assert_equivariant(first, dim=8, outputs="pooled", cases=30)


class Positions(torch.nn.Module):
    """Token ids and position ids: ALiBi's distance bias (relative) or a learned absolute table."""

    def __init__(self, relative):
        super().__init__()
        self.relative = relative
        self.embed = torch.nn.Embedding(50, 8)
        self.table = torch.nn.Embedding(4096, 8)

    def forward(self, ids, pos):
        h = self.embed(ids)
        if not self.relative:
            h = h + self.table(pos)
        scores = h @ h.T / math.sqrt(8) - 0.5 * (pos[:, None] - pos[None, :]).abs().to(h.dtype)
        return scores.softmax(-1) @ h


def test_shift_invariance_of_position_ids():
    sig = dict(axes=["n=1..8"], inputs=["ids:n:token=50", "pos:n:position"], outputs=["y:n,8"], cases=40)
    permcheck.assert_shift_invariant(Positions(relative=True), **sig)
    with pytest.raises(AssertionError, match=r"every position id \+ 1") as caught:
        permcheck.assert_shift_invariant(Positions(relative=False), **sig)
    assert "L(x_c)" in str(caught.value)
    c = permcheck.audit(Positions(relative=False), property="shift", **sig).counterexample
    assert c.part == {"shift": 1} and c.inputs["ids"].dtype == torch.int64 and c.inputs["pos"].dtype == torch.int64
    # The ids and position ids move with the tokens: both are equivariant.
    permcheck.assert_equivariant(Positions(relative=False), **sig)


# ---------------------------------------------------------------------------------------------------------
# Batching never changes a verdict

class BatchStatistics(torch.nn.Module):
    """BatchNorm in training mode, written out: statistics over every position of every item of the batch."""

    def forward(self, src):
        flat = src.reshape(-1, src.shape[-1])
        return torch.nn.functional.batch_norm(flat, None, None, training=True).reshape(src.shape)


def test_an_item_that_sees_its_batch_is_batch_dependent():
    sig = dict(axes=["n=2..8"], inputs=["src:n,1,8"], outputs=["y:n,1,8"])
    for seed in (1, 2, 3):
        result = permcheck.audit(BatchStatistics(), seed=seed, **sig)
        assert result.verdict == "batch-dependent", result.explanation()
        assert result.exit_code == 1 and result.record["details"]["audit"]["confirmed_alone"] >= 1
    # One case per request, the layer's statistics are its own: it holds.
    assert permcheck.audit(BatchStatistics(), batch=None, **sig).verdict == "holds"
    with pytest.raises(AssertionError, match="differs between its batched request and its request alone") as caught:
        permcheck.assert_equivariant(BatchStatistics(), **sig)
    assert re.search(r"answer in a batch \(.*\) =\n *\[", str(caught.value)), str(caught.value)
    assert re.search(r"answer alone *\(.*\) =\n *\[", str(caught.value)), str(caught.value)


class LimitedBatch(torch.nn.Module):
    """Refuses a batch of more than 8 items, as a model with a max_batch_size does."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.shape[0] > 8:
            raise ValueError("batch of %d exceeds max_batch_size 8" % x.shape[0])
        return self.lin(x)


def test_a_layer_that_refuses_the_batch_is_said_so_in_the_verdict_line_with_one_traceback(capfd):
    result = permcheck.audit(LimitedBatch(), axes=["n=1..8"], inputs=["x:1,n,4"], outputs=["y:1,n,4"])
    assert result.holds
    assert re.search(r"\[\d+ batched requests answered item by item: the layer refused", result.summary), result.summary
    err = capfd.readouterr().err
    assert err.count("Traceback (most recent call last)") == 1, err
    # A batch it takes is said nothing of.
    assert "item by item" not in permcheck.audit(LimitedBatch(), axes=["n=1..8"], inputs=["x:1,n,4"],
                                                 outputs=["y:1,n,4"], batch=8).summary


class ShortTable(torch.nn.Module):
    """A learned position table of 16 rows."""

    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Embedding(16, 4)

    def forward(self, x, pos):
        return x + self.pos(pos)


def test_ids_beyond_a_table_of_the_layer_are_an_error_that_names_position_p():
    sig = dict(axes=["n=1..8"], inputs=["x:1,n,4", "pos:1,n:position"], outputs=["y:1,n,4"], property="shift")
    result = permcheck.audit(ShortTable(), **sig)
    assert result.verdict == "error" and "IndexError" in result.error
    assert "ids sent stay below their limits (pos < 4096)" in result.error and "(position=P)" in result.error
    fixed = dict(sig, inputs=["x:1,n,4", "pos:1,n:position=16"])
    assert permcheck.audit(ShortTable(), **fixed).verdict == "violated"  # a learned table: absolute positions


def test_an_encoder_fast_path_is_found_for_every_seed():
    # In eval, with a padding mask, TransformerEncoder takes a nested-tensor fast path for the whole batch or for
    # none of it, and on it packs each item's real rows to the front with zeros after them. So an item answers
    # otherwise in a batch than alone (batch-dependent), or, alone, a pad before a real token moves that token's
    # row (violated, at two tokens). Either is the finding; the audit never holds and never errs.
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, 2).eval()
    sig = dict(axes=["n=1..8"], inputs=["src:1,n,8", "pad:1,n:mask"], outputs=["y:1,n,8"],
               arguments={"src": "src", "src_key_padding_mask": "pad"})
    for seed in range(1, 6):
        result = permcheck.audit(encoder, seed=seed, **sig)
        assert result.verdict in ("batch-dependent", "violated"), result.explanation()
        example = result.counterexample
        assert True in example.inputs["pad"].flatten().tolist(), example.inputs  # a pad is what takes the path
        if result.verdict == "batch-dependent":
            assert "differs between its batched request and its request alone" in result.explanation()
            continue
        assert example.lengths == {"n": 2} and example.permutations == {"n": [1, 0]}, example


# ---------------------------------------------------------------------------------------------------------
# The other verdicts and the errors

def test_a_nondeterministic_layer_fails_showing_both_answers():
    with pytest.raises(AssertionError) as caught:
        permcheck.assert_equivariant(lambda x: x + torch.rand_like(x), dim=4, cases=20)
    message = str(caught.value)
    assert "nondeterministic" in message and "was answered twice with different results" in message
    assert re.search(r"first answer *\(.*\) =\n *\[", message) and re.search(r"second answer \(.*\) =\n *\[", message), message


def test_a_non_finite_answer_fails():
    with pytest.raises(AssertionError, match="non-finite") as caught:
        permcheck.assert_equivariant(lambda x: x / 0.0, dim=4, cases=20)
    assert "has a non-finite entry (nan)" in str(caught.value) and "(NON-FINITE)" in str(caught.value)


def test_an_exception_in_the_layer_is_an_audit_error_naming_it():
    def layer(x):
        raise ValueError("layer exploded")
    with pytest.raises(permcheck.AuditError, match="ValueError: layer exploded") as caught:
        permcheck.assert_equivariant(layer, dim=4)
    assert caught.value.result.verdict == "error"
    assert "permcheck.replay(" in str(caught.value)  # the case it erred on, to send again
    assert caught.value.result.record["counterexample"]["erred"] is True


def test_a_slow_layer_ends_the_audit_with_error_at_its_timeout():
    # The layer answers after 8 s; the audit ends at its 1 s timeout, long before (what the bound allows beyond the
    # timeout is permcheck's start-up, slower under the sanitizers and on a busy machine).
    def slow(x):
        time.sleep(8)
        return x
    start = time.monotonic()
    result = permcheck.audit(slow, dim=2, timeout=1, startup_timeout=1)
    assert result.verdict == "error" and "did not answer within 1 s" in result.error
    assert "cannot be stopped from here" in result.error
    assert time.monotonic() - start < 5  # the audit ended at the timeout, not when the layer returned
    with pytest.raises(permcheck.AuditError, match="did not answer within 1 s"):
        permcheck.assert_equivariant(slow, dim=2, timeout=1, startup_timeout=1)


def test_a_missing_binary_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PERMCHECK_BIN", str(tmp_path / "nowhere"))
    with pytest.raises(permcheck.PermcheckNotFound, match="PERMCHECK_BIN"):
        permcheck.audit(Symmetric(), dim=8)
    monkeypatch.delenv("PERMCHECK_BIN")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(permcheck._audit, "__file__", str(tmp_path / "permcheck" / "_audit.py"))
    with pytest.raises(permcheck.PermcheckNotFound, match="cmake --build build --target permcheck"):
        permcheck.audit(Symmetric(), dim=8)


def test_the_binary_pip_installed_is_found_in_the_scripts_directory(monkeypatch, tmp_path):
    scripts = tmp_path / "venv" / "bin"
    scripts.mkdir(parents=True)
    fake = scripts / "permcheck"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv("PERMCHECK_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(permcheck._audit, "__file__", str(tmp_path / "permcheck" / "_audit.py"))
    monkeypatch.setattr(permcheck._audit.sysconfig, "get_path",
                        lambda name, *a, **k: str(scripts) if name == "scripts" else None)
    assert permcheck.find_binary() == str(fake)
    fake.chmod(0o644)  # not executable: not taken
    with pytest.raises(permcheck.PermcheckNotFound, match="pip install"):
        permcheck.find_binary()


def test_a_crashing_binary_is_reported(monkeypatch, tmp_path):
    fake = tmp_path / "permcheck"
    fake.write_text("#!/bin/sh\necho 'segmentation fault' >&2\nexit 139\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PERMCHECK_BIN", str(fake))
    with pytest.raises(permcheck.PermcheckNotFound, match="(?s)status 139.*segmentation fault.*rebuild it"):
        permcheck.audit(Symmetric(), dim=8)


def test_options_are_checked():
    with pytest.raises(TypeError, match="no_such_option"):
        permcheck.audit(Symmetric(), dim=8, no_such_option=1)
    result = permcheck.audit(Symmetric(), dim=8, max_len=3, cases=20)
    assert result.verdict == "holds" and result.record["cases"] == 20
    assert "n in [1, 3]" in result.summary


def _described():
    import subprocess
    done = subprocess.run([permcheck.find_binary(), "describe", "--json"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_describe_lists_every_property_with_its_options():
    described = _described()
    names = [p["name"] for p in described["properties"]]
    assert names[:2] == ["equivariance", "invariance"] and {"padding", "causal", "agreement", "incremental"} <= set(names)
    by_name = {p["name"]: p for p in described["properties"]}
    padding = {o["keyword"]: o for o in by_name["padding"]["options"]}
    assert padding["padding"]["flag"] == "--padding" and padding["padding"]["choices"] == ["any", "left", "right"]
    assert padding["padding_axis"]["value"] == "string" and padding["padding_axis"]["help"]
    assert [o["flag"] for o in by_name["causal"]["options"]] == ["--causal-axis"]
    assert {o["keyword"] for o in by_name["equivariance"]["options"]} == {"keep_positions", "along"}
    assert by_name["agreement"]["needs_reference"] and not by_name["shift"]["needs_reference"]
    assert not by_name["reversal"]["audits_black_boxes"] and by_name["incremental"]["chunks_calls"]
    general = {o["keyword"]: o["flag"] for o in described["options"]}
    assert general["max_len"] == "--max-len" and general["skip_padded"] == "--skip-padded"
    assert described["precisions"] == ["float64", "float32", "tf32", "float16", "bfloat16"]
    assert [v["word"] for v in described["verdicts"] if v["failure"]] == [
        "violated", "nondeterministic", "non-finite", "batch-dependent", "history-dependent"]
    assert described["version"] == permcheck.__version__


def test_an_option_unknown_to_the_binary_names_the_known_ones():
    with pytest.raises(TypeError, match="(?s)unknown option 'windows'.*property='padding' are .*padding_axis"):
        permcheck.audit(Symmetric(), dim=8, property="padding", windows=3)


class SlidingWindowAttention(torch.nn.Module):
    """Single-head attention where position i attends to the `width` positions up to and including i."""

    def __init__(self, width, d=8):
        super().__init__()
        self.width = width
        self.qkv = torch.nn.Linear(d, 3 * d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        i = torch.arange(x.shape[0])
        allowed = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - self.width)
        scores = (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


def test_a_declared_option_of_the_binary_is_a_keyword_of_audit():
    """--window W is the window property's own (declared in C++): audit(window=3) passes it with no Python edit."""
    window = next(p for p in _described()["properties"] if p["name"] == "window")
    declared = {o["keyword"]: o for o in window["options"]}
    assert declared["window"]["flag"] == "--window" and declared["window"]["value_name"] == "W"
    assert declared["window_right"]["flag"] == "--window-right" and declared["window"]["help"]
    sig = dict(axes=["n=1..8"], inputs=["x:n,8"], outputs=["y:n,8"], property="window", cases=60)
    wide = permcheck.audit(SlidingWindowAttention(4), window=3, **sig)  # one position wider than it says
    assert wide.verdict == "violated", wide.explanation()
    assert wide.counterexample.lengths == {"n": 4}, wide.counterexample
    assert permcheck.audit(SlidingWindowAttention(3), window=3, **sig).verdict == "holds"
    assert permcheck.audit(SlidingWindowAttention(4), window=4, **sig).verdict == "holds"


def test_a_new_option_of_the_binary_reaches_python_without_a_python_edit(monkeypatch, tmp_path):
    """A binary whose shift property declares --window W: audit(window=W) passes it on, no edit here."""
    described = _described()
    shift = next(p for p in described["properties"] if p["name"] == "shift")
    shift["options"].append({"flag": "--window", "keyword": "window", "value": "int", "help": "a window"})
    (tmp_path / "described.json").write_text(json.dumps(described))
    fake = tmp_path / "permcheck"
    fake.write_text('#!/bin/sh\nif [ "$1" = describe ]; then cat %s; exit 0; fi\necho "$@" > %s\nexit 2\n'
                    % (tmp_path / "described.json", tmp_path / "arguments"))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PERMCHECK_BIN", str(fake))
    with pytest.raises(permcheck.PermcheckNotFound):  # the fake writes no report
        permcheck.audit(Symmetric(), dim=8, property="shift", window=3)
    assert "--property shift" in (tmp_path / "arguments").read_text()
    assert "--window 3" in (tmp_path / "arguments").read_text()


def test_a_report_directory_given_is_kept(tmp_path):
    result = permcheck.audit(Symmetric(), dim=8, cases=20, report=tmp_path / "kept")
    assert result.holds and result.report == str(tmp_path / "kept")
    assert json.load(open(tmp_path / "kept" / "report.json"))["verdict"] == "holds"


def test_agreement_needs_a_reference_and_a_reference_needs_agreement():
    with pytest.raises(TypeError, match="pass reference="):
        permcheck.audit(Symmetric(), dim=8, property="agreement")
    with pytest.raises(TypeError, match='goes with property="agreement"'):
        permcheck.audit(Symmetric(), dim=8, property="shift", reference=Symmetric())
    with pytest.raises(ValueError, match="judge_as is one of"):
        permcheck.audit(Symmetric(), dim=8, reference=Symmetric(), judge_as="float8")


def test_a_module_agrees_with_a_copy_of_itself_and_not_with_other_weights():
    torch.manual_seed(0)
    first, second = Symmetric(), Symmetric()
    copy = Symmetric()
    copy.load_state_dict(first.state_dict())
    assert permcheck.assert_agree(first, copy, dim=8).property == "agreement"
    result = permcheck.audit(first, reference=second, dim=8)
    assert result.verdict == "violated", result.explanation()
    assert result.counterexample.lengths["n"] == 1  # any input shows other weights: the shortest



class GlobalMeanPool(torch.nn.Module):
    """PyG's global_mean_pool over a batch of graphs, in plain torch: the mean of each graph's nodes after a linear
    map. Without `size` the number of graphs is batch.max() + 1, as PyG reads it."""

    def __init__(self, order_aware=False):
        super().__init__()
        self.lin = torch.nn.Linear(4, 8)
        self.order_aware = order_aware

    def forward(self, x, batch, size=None):
        graphs = int(size[0]) if size is not None else int(batch.max()) + 1
        h = self.lin(x)
        total = torch.zeros(graphs, h.shape[1], dtype=h.dtype).index_add_(0, batch, h)
        count = torch.zeros(graphs, dtype=h.dtype).index_add_(0, batch, torch.ones_like(batch, dtype=h.dtype))
        g = total / count.clamp(min=1)[:, None]
        return g + torch.arange(graphs, dtype=h.dtype)[:, None] if self.order_aware else g


GRAPHS = dict(axes=["nodes=1..8", "graphs=1..4"], inputs=["x:nodes,4", "batch:nodes:index=graphs"],
              outputs=["g:graphs,8"])


def test_a_readout_over_a_batch_of_graphs_moves_the_graphs_the_batch_vector_names():
    permcheck.assert_equivariant(GlobalMeanPool(), **GRAPHS)  # the number of graphs from batch.max() + 1
    permcheck.assert_equivariant(GlobalMeanPool(), **GRAPHS, arguments={"x": "x", "batch": "batch",
                                                                       "size": "length:graphs"})
    result = permcheck.audit(GlobalMeanPool(order_aware=True), **GRAPHS)
    assert result.verdict == "violated", result.explanation()
    assert result.counterexample.axis_at_fault == "graphs"
    assert result.counterexample.lengths["graphs"] == 2


class LSTMAggregation(torch.nn.Module):
    """PyG's LSTMAggregation as its users meet it, in plain torch: each node's incoming messages read in order by an
    LSTM, the edge list required sorted by target ("Can not perform aggregation since the 'index' tensor is not
    sorted")."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 4, batch_first=True)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        if dst.numel() > 1 and not bool((dst[1:] >= dst[:-1]).all()):
            raise ValueError("Can not perform aggregation since the 'index' tensor is not sorted")
        out = torch.zeros_like(x)
        for v in range(x.shape[0]):
            neighbours = x[src[dst == v]]
            if len(neighbours):
                out[v] = self.lstm(neighbours[None])[0][0, -1]
        return out


def test_an_edge_list_kept_sorted_asks_what_the_librarys_users_run():
    layer = LSTMAggregation().double()
    sorted_edges = dict(axes=["nodes=1..5", "edges=0..8"], inputs=["x:nodes,4", "edge_index:2,edges:index=nodes,sorted=1"],
                        outputs=["y:nodes,4"], cases=40)
    # Along the nodes, each neighbourhood keeps its edges in the order the input gives them: equivariant.
    permcheck.assert_equivariant(layer, **sorted_edges, along="nodes")
    # Along the edges, the order within a neighbourhood changes: the LSTM reads it.
    within = permcheck.audit(layer, **sorted_edges, along="edges")
    assert within.verdict == "violated", within.explanation()
    assert within.counterexample.lengths["edges"] == 2
    assert within.record["details"]["audit"]["settings"]["along"] == "edges"
    # Without the qualifier a permutation unsorts the edges and the layer raises.
    unsorted = dict(sorted_edges, inputs=["x:nodes,4", "edge_index:2,edges:index=nodes"])
    raised = permcheck.audit(layer, **unsorted)
    assert raised.verdict == "error" and "not sorted" in raised.error


# ---------------------------------------------------------------------------------------------------------
# Devices, TF32, nondeterministic kernels (on the CPU: the GPU run is the device check's)

class DeviceStrict(torch.nn.Module):
    """Raises, as PyTorch does, unless its input is on its parameters' device."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        if x.device != self.lin.weight.device:
            raise RuntimeError("Expected all tensors to be on the same device, but found %s and %s"
                               % (x.device, self.lin.weight.device))
        return self.lin(x) + x.mean(0, keepdim=True)


def test_inputs_are_made_on_the_modules_device_inferred_or_given():
    permcheck.assert_equivariant(DeviceStrict(), dim=8)  # inferred: its parameters' device
    given = permcheck.assert_equivariant(DeviceStrict(), dim=8, device="cpu")
    assert " on cpu" in given.summary and given.record["details"]["audit"]["device"] == "cpu"
    elsewhere = permcheck.audit(DeviceStrict(), dim=8, device="meta")  # inputs where the weights are not
    assert elsewhere.verdict == "error" and "same device" in elsewhere.error, elsewhere.explanation()


def tf32(t):
    """t's float32 values rounded to TensorFloat-32's 10 bits of mantissa (to nearest, ties away), as a GPU's
    tensor cores round the inputs of a matrix product."""
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


class SmallAttention(torch.nn.Module):
    def __init__(self, emulate_tf32=False):
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        self.round = tf32 if emulate_tf32 else (lambda t: t)

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        scores = self.round(q) @ self.round(k).T / 8 ** 0.5
        return self.round(scores.softmax(-1)) @ self.round(x)


def test_tf32_emulated_on_the_cpu_holds_judged_as_tf32_and_is_flagged_judged_as_float32():
    emulated, plain = SmallAttention(emulate_tf32=True), SmallAttention()
    held = permcheck.assert_agree(emulated, plain, dim=8, judge_as="tf32")
    assert held.dtype == "tf32" and "tf32" in held.summary
    strict = permcheck.audit(emulated, reference=plain, dim=8, judge_as="float32")
    assert strict.verdict == "violated", strict.explanation()


def _two(a, b):
    return a + b


class RunningSum(torch.nn.Module):
    """A causal running sum over n, decoded in chunks: `past` carries the last sum (and is returned as the cache).
    arity_bug: a cached call passes one argument too many to a helper of its own (a bug of the layer, not of the
    audit's set-up)."""

    def __init__(self, arity_bug=False):
        super().__init__()
        self.arity_bug = arity_bug

    def forward(self, x, past=None):
        start = torch.zeros_like(x[:, :1]) if past is None else past
        if past is not None and self.arity_bug:
            start = _two(start, past, 1.0)
        y = torch.cumsum(x, dim=1) + start
        return {"y": y, "past": y[:, -1:]}


RUNNING = dict(axes=["n=1..6"], inputs=["x:1,n,2"], outputs=["y:1,n,2"], output="y", cache="past")


def test_a_type_error_inside_the_layer_is_its_finding_and_a_call_that_does_not_fit_the_set_ups_error():
    assert permcheck.audit(RunningSum(), property="incremental", **RUNNING).verdict == "holds"
    result = permcheck.audit(RunningSum(arity_bug=True), property="incremental", **RUNNING)
    assert result.verdict == "violated", result.explanation()  # raised on a later chunk: the finding
    assert "takes 2 positional arguments but 3 were given" in result.counterexample.raised
    miswired = permcheck.audit(RunningSum(), property="incremental", **dict(RUNNING, cache=("cache", "past")))
    assert miswired.verdict == "error" and "unexpected keyword argument 'cache'" in miswired.error, miswired.error


class Jitter(torch.nn.Module):
    """A kernel whose answers vary on a re-ask (as atomics on a GPU do), by a little."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) + 1e-3 * torch.rand_like(x)


def test_a_kernel_whose_answers_vary_is_nondeterministic_with_the_hint():
    result = permcheck.audit(Jitter(), dim=8)
    assert result.verdict == "nondeterministic", result.explanation()
    assert "torch.use_deterministic_algorithms(True)" in result.explanation()
