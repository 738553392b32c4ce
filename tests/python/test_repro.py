"""repro.py: a report that finds something reproduces it without permcheck (python3 and torch alone), exits 1 while
the bug is there and 0 once the saved module is swapped for its fixed twin.

Run by ctest (PythonReproRunsWithoutPermcheck) with PERMCHECK_BIN and PYTHONPATH=python; each repro.py runs in a
process with neither (PATH: the project Python's directory and /usr/bin:/bin; no PYTHONPATH; another working directory), where `import permcheck`
fails."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import permcheck

# A process without permcheck: the project's Python (torch 2.x) and the system's tools, nothing of the build.
ALONE_PATH = os.path.dirname(sys.executable) + ":/usr/bin:/bin"

# The layers under test live in a module of their own that does not import permcheck, as a user's model code does:
# the repro loads the pickled module by reference to it.
LAYERS = textwrap.dedent('''
    import dataclasses
    import math

    import torch


    class TableOfFour(torch.nn.Module):
        """Reads a table of four rows at each position: raises from n = 5 on, unless `fixed`."""

        def __init__(self, fixed=False):
            super().__init__()
            self.fixed = fixed

        def forward(self, x):
            if x.shape[1] > 4 and not self.fixed:
                raise IndexError("index %d is out of range for a table of 4" % (x.shape[1] - 1))
            return x


    class Readout(torch.nn.Module):
        """A linear map per node, each node's row plus its index when `order_aware` (a position leak)."""

        def __init__(self, order_aware):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.order_aware = order_aware

        def forward(self, x, edge_index):
            out = torch.zeros_like(x).index_add_(0, edge_index[1], self.lin(x)[edge_index[0]])
            return out + torch.arange(x.shape[0], dtype=x.dtype)[:, None] if self.order_aware else out


    class Jitter(torch.nn.Module):
        """Adds noise on every call when `noisy` (a nondeterministic kernel)."""

        def __init__(self, noisy):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.noisy = noisy

        def forward(self, x):
            y = self.lin(x)
            return y + 1e-3 * torch.rand_like(y) if self.noisy else y


    class Absolute(torch.nn.Module):
        """Adds a function of the position ids when `absolute` (sees where a sequence starts)."""

        def __init__(self, absolute):
            super().__init__()
            self.absolute = absolute

        def forward(self, x, pos):
            return x + 0.5 * pos[:, None].to(x.dtype) if self.absolute else x


    class Scaled(torch.nn.Module):
        """x @ W^T scaled by 1/sqrt(d), or by 1/d when `wrong` (a port that changed the scale)."""

        def __init__(self, wrong):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4, bias=False)
            self.wrong = wrong

        def forward(self, x):
            return self.lin(x) / (4.0 if self.wrong else 2.0)


    class Pooled(torch.nn.Module):
        """A sum over the positions, each weighted by its index when `leak` (a pooled output that sees order)."""

        def __init__(self, leak):
            super().__init__()
            self.leak = leak

        def forward(self, x):
            weights = torch.arange(1, x.shape[0] + 1, dtype=x.dtype) if self.leak else torch.ones(x.shape[0])
            return (x * weights[:, None]).sum(0)


    class Ratio(torch.nn.Module):
        """x divided by how far its first row is from its last when `bad` (0 / 0 for one position)."""

        def __init__(self, bad):
            super().__init__()
            self.bad = bad

        def forward(self, x):
            return x / (x[:1] - x[-1:]).abs().sum() if self.bad else x


    class BatchCentered(torch.nn.Module):
        """A linear map per position, plus the mean over the batch dim when `shared` (each item sees the others of
        its batch, as BatchNorm in training mode does); alone, an item is its own mean."""

        def __init__(self, shared):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.shared = shared

        def forward(self, x):
            y = self.lin(x)
            return y + y.mean(0, keepdim=True) if self.shared else 2 * y


    class StaleTable(torch.nn.Module):
        """Scales its answer by the length of the request before it when `stale` (a rotary table built for the last
        length and not rebuilt): two asks in a row agree, an ask after another length does not."""

        def __init__(self, stale):
            super().__init__()
            self.stale = stale
            self.last = 0

        def forward(self, x):
            y = x * (1 + 0.125 * self.last) if self.stale else x
            self.last = x.shape[0]
            return y


    @dataclasses.dataclass
    class DecoderOutput:
        last_hidden_state: torch.Tensor
        past_key_values: tuple = None


    def rotate(x, position_ids):
        inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
        angles = position_ids.to(torch.float64)[..., None] * inv_freq
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * angles.cos() - x2 * angles.sin(), x1 * angles.sin() + x2 * angles.cos()],
                           dim=-1).flatten(-2)


    class Decoder(torch.nn.Module):
        """A decoder as Hugging Face writes one (input_ids, attention_mask 1 = real, position_ids from the mask
        when not given, RoPE, past_key_values), fixed unless told of a bug: `bug` is "no causal mask", "no block
        mask" (packed sequences see each other), "restart" (positions from 0 after a cache), "mask ignored",
        "cache breaks" (raises when given a cache)."""

        def __init__(self, bug=None):
            super().__init__()
            torch.manual_seed(0)
            self.bug = bug
            self.embed = torch.nn.Embedding(50, 8)
            self.q, self.k, self.v = (torch.nn.Linear(8, 8, bias=False) for _ in range(3))

        def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None):
            n = input_ids.shape[-1]
            past = 0 if past_key_values is None else past_key_values[0].shape[1]
            if past and self.bug == "cache breaks":
                raise RuntimeError("the cache holds %d positions, the mask wants %d" % (past, past + n + 1))
            if attention_mask is None or self.bug == "mask ignored":
                attention_mask = torch.ones(input_ids.shape[0], past + n, dtype=torch.int64)
            if position_ids is None:
                position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)[:, -n:]
                if self.bug == "restart":
                    position_ids = position_ids - position_ids[:, :1]
            h = self.embed(input_ids).double()
            q, k, v = rotate(self.q.double()(h), position_ids), rotate(self.k.double()(h), position_ids), self.v.double()(h)
            if past_key_values is not None:
                k, v = torch.cat([past_key_values[0], k], dim=1), torch.cat([past_key_values[1], v], dim=1)
            scores = q @ k.transpose(-1, -2) / math.sqrt(8)
            allowed = attention_mask[:, None, :].bool()
            if self.bug != "no causal mask":
                allowed = allowed & torch.ones(n, past + n, dtype=torch.bool).tril(diagonal=past)
            if self.bug != "no block mask":
                segments = (position_ids == 0).cumsum(-1)
                allowed = allowed & (segments[:, :, None] == segments[:, None, :])
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
            return DecoderOutput(scores.softmax(dim=-1) @ v, (k, v))
''')

# The decoder's signature: with its position ids, and without them (it numbers its tokens from the mask).
LM = dict(axes=["n=1..8"], outputs=["h:1,n,8"], output="last_hidden_state",
          inputs=["input_ids:1,n:token=50", "attention_mask:1,n:mask=keep", "position_ids:1,n:position"],
          arguments={"input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids"})
LM_OWN_POSITIONS = dict(axes=["n=1..8"], outputs=["h:1,n,8"], output="last_hidden_state",
                        inputs=["input_ids:1,n:token=50", "attention_mask:1,n:mask=keep"])


@pytest.fixture
def layers(tmp_path, monkeypatch):
    package = tmp_path / "code"
    package.mkdir()
    (package / "repro_layers.py").write_text(LAYERS)
    monkeypatch.syspath_prepend(str(package))
    import importlib
    import repro_layers
    importlib.reload(repro_layers)
    torch.manual_seed(0)
    yield repro_layers
    sys.modules.pop("repro_layers", None)


def run_alone(repro, cwd):
    """repro.py in a process without permcheck: (exit code, output)."""
    env = {"PATH": ALONE_PATH, "HOME": os.environ.get("HOME", "/tmp"), "PYTHONDONTWRITEBYTECODE": "1"}
    absent = subprocess.run(["python3", "-c", "import permcheck"], env=env, cwd=cwd, capture_output=True)
    assert absent.returncode != 0, "permcheck must not be importable where the repro runs"
    done = subprocess.run(["python3", repro], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def swapped(result, twin, name="module.pt"):
    """The saved module replaced by its twin (as audited: eval mode)."""
    torch.save(twin.eval(), os.path.join(result.report, name))


def test_an_equivariance_finding_reproduces_with_every_index_renumbered(layers, tmp_path):
    result = permcheck.audit(layers.Readout(True), axes=["nodes=1..5", "edges=0..6"],
                             inputs=["x:nodes,4", "edge_index:2,edges:index=nodes"], outputs=["y:nodes,4"],
                             report=tmp_path / "readout")
    assert result.verdict == "violated"
    assert result.repro == os.path.join(result.report, "repro.py")
    assert "reproduce without permcheck: python3 %s" % result.repro in result.explanation()
    with open(os.path.join(result.report, "report.md")) as f:
        md = f.read()
    assert "**Reproduce without permcheck:** `python3 repro.py`" in md.split("\n")[2]
    # The transformed side's inputs: recorded in report.json, shown in report.md where they differ from x's.
    case = result.record["counterexample"]
    assert case["transformed"]["lengths"] == case["lengths"]
    for name, values in case["transformed"]["inputs"].items():
        assert ("\nP x: %s = " % name in md) == (values != case["inputs"][name]), md
    assert result.record["details"]["audit"]["dtype_evidence"] == "the module's dtype"  # no dtype was given
    with open(os.path.join(result.report, "report.html")) as f:
        assert "Reproduce without permcheck:</b> <code>python3 repro.py</code>" in f.read()
    code, said = run_alone(result.repro, tmp_path)
    assert code == 1, said
    assert "L(P x) and P L(x) differ by" in said and "the bug is there" in said
    fixed = layers.Readout(False)
    swapped(result, fixed)
    code, said = run_alone(result.repro, tmp_path)
    assert code == 0, said
    assert "fixed" in said
    # Where the layer's code is gone, the repro cannot run: exit 2 and where the code was, never 1 ("the bug").
    os.rename(tmp_path / "code", tmp_path / "moved")
    code, said = run_alone(result.repro, tmp_path)
    assert code == 2, said
    assert "repro.py: the layer cannot be loaded: No module named 'repro_layers'" in said, said
    assert str(tmp_path / "code") in said, said


@pytest.mark.parametrize("make, audited, verdict, said", [
    ("Jitter", dict(dim=4), "nondeterministic", "ask 2 of x differs from ask 1"),
    ("Absolute", dict(axes=["n=1..6"], inputs=["x:n,4", "pos:n:position"], outputs=["y:n,4"], property="shift",
                      dtype="float64"), "violated", "L(x_c) and L(x) differ by"),
    ("Pooled", dict(dim=4, outputs="pooled"), "violated", "L(P x) and L(x) differ by"),
    ("Ratio", dict(dim=4), "non-finite", "a non-finite entry"),
])
def test_a_nondeterministic_shift_invariance_or_non_finite_finding_reproduces(layers, tmp_path, make, audited, verdict,
                                                                              said):
    """A nondeterministic finding asks x several times; a shift finding asks x_c; a pooled output is compared
    with L(x) itself; a non-finite answer fails the repro as it failed the audit."""
    cls = getattr(layers, make)
    result = permcheck.audit(cls(True), report=tmp_path / make, **audited)
    assert result.verdict == verdict
    if make == "Pooled":  # the assertion names an invariant output's right side L(x), never P L(x)
        assert "L(P x) and L(x) differ by" in result.explanation() and "P L(x)" not in result.explanation()
    code, out = run_alone(result.repro, tmp_path)
    assert code == 1 and said in out, out
    swapped(result, cls(False))
    assert run_alone(result.repro, tmp_path)[0] == 0


def test_an_agreement_finding_saves_the_reference_too(layers, tmp_path):
    kernel, reference = layers.Scaled(True), layers.Scaled(False)
    reference.load_state_dict(kernel.state_dict())
    result = permcheck.audit(kernel, dim=4, reference=reference, report=tmp_path / "agreement")
    assert result.verdict == "violated"
    assert os.path.exists(os.path.join(result.report, "reference.pt"))
    code, said = run_alone(result.repro, tmp_path)
    assert code == 1 and "L(x) and R(x) differ by" in said, said
    swapped(result, reference)
    assert run_alone(result.repro, tmp_path)[0] == 0


class LeakInTheTestFile(torch.nn.Module):
    """Defined in a file that imports permcheck: it cannot be loaded by reference without permcheck, so the repro
    keeps its weights and asks for the line that builds it."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) + torch.arange(x.shape[0], dtype=x.dtype)[:, None]


def test_a_module_that_does_not_load_alone_leaves_one_marked_line(tmp_path):
    result = permcheck.audit(LeakInTheTestFile(), dim=4, report=tmp_path / "leak")
    assert result.verdict == "violated"
    assert not os.path.exists(os.path.join(result.report, "module.pt"))
    assert os.path.exists(os.path.join(result.report, "layer_state_dict.pt"))
    code, said = run_alone(result.repro, tmp_path)
    assert code == 1 and "fill in the line marked FILL IN" in said, said
    with open(result.repro) as f:
        text = f.read()
    marked = [line for line in text.splitlines() if "FILL IN" in line and line.startswith("layer = None")]
    assert len(marked) == 1, text
    with open(result.repro, "w") as f:
        f.write(text.replace(marked[0], "layer = LeakInTheTestFile()"))
    code, said = run_alone(result.repro, tmp_path)
    assert code == 1 and "L(P x) and P L(x) differ by" in said, said


def test_no_repro_for_a_verdict_that_holds_or_an_error(layers, tmp_path):
    held = permcheck.audit(layers.Readout(False), axes=["nodes=1..5", "edges=0..6"],
                           inputs=["x:nodes,4", "edge_index:2,edges:index=nodes"], outputs=["y:nodes,4"],
                           report=tmp_path / "held")
    assert held.verdict == "holds" and held.repro is None
    assert not os.path.exists(tmp_path / "held" / "repro.py")


@pytest.mark.parametrize("bug, audited, said", [
    ("no causal mask", dict(LM, property="causal"), "L(x[:k]) and L(x)[:k] differ by"),
    ("no block mask", dict(LM, property="packing"), "differ by"),
    ("mask ignored", dict(LM_OWN_POSITIONS, property="padding", padding="left"), "differ by"),
    ("restart", dict(LM_OWN_POSITIONS, property="incremental", cache="past_key_values",
                     cumulative=["attention_mask"]), "differ by"),
    ("cache breaks", dict(LM_OWN_POSITIONS, property="incremental", cache="past_key_values",
                          cumulative=["attention_mask"]), "the layer raised answering the transformed inputs: "
                                                          "the cache holds"),
])
def test_a_decoder_finding_reproduces_and_its_fixed_twin_passes(layers, tmp_path, bug, audited, said):
    """Each decoder property: the truncated, packed, padded or chunked inputs written out (or the chunking), the
    comparison as the property makes it (the prefix, the one sequence, the real positions)."""
    result = permcheck.audit(layers.Decoder(bug), report=tmp_path / "decoder", **audited)
    assert result.verdict == "violated", result.explanation()
    assert result.repro, result.explanation()
    code, out = run_alone(result.repro, tmp_path)
    assert code == 1 and said in out and "the bug is there" in out, out
    swapped(result, layers.Decoder())
    code, out = run_alone(result.repro, tmp_path)
    assert code == 0 and "fixed" in out, out


ADAPTER = textwrap.dedent('''
    import sys

    from permcheck_adapter import serve

    import repro_layers

    bug = sys.argv[1] if len(sys.argv) > 1 else None
    serve(repro_layers.Decoder(bug), output="last_hidden_state", inputs=%r, cache="past_key_values",
          cumulative=["attention_mask"])
''')


@pytest.mark.parametrize("bug, prop, inputs, flags", [
    ("restart", "incremental", LM_OWN_POSITIONS["inputs"], []),
    ("cache breaks", "incremental", LM_OWN_POSITIONS["inputs"], []),
    ("no causal mask", "causal", LM_OWN_POSITIONS["inputs"], []),
    ("no block mask", "packing", LM["inputs"], []),
    ("mask ignored", "padding", LM_OWN_POSITIONS["inputs"], ["--padding", "left"]),
])
def test_an_adapter_programs_finding_reproduces_with_the_standard_library(layers, tmp_path, bug, prop, inputs, flags):
    """--exec: requests.jsonl and a repro.py that sends them to the adapter command; the adapter's helper copied
    beside it, so that an adapter written with serve runs where permcheck is not installed; the fixed twin is the
    same adapter without the bug."""
    code_dir = tmp_path / "code"
    (code_dir / "adapter.py").write_text(ADAPTER % inputs)
    report = tmp_path / "adapter-report"
    signature = ["--axis", "n=1..8", "--output", "h:1,n,8"]
    for text in inputs:
        signature += ["--input", text]
    signature += flags
    env = dict(os.environ, PYTHONPATH=os.path.abspath("python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([os.environ.get("PERMCHECK_BIN", "permcheck"), "audit", "--exec",
                           "python3 adapter.py '%s'" % bug] + signature + ["--property", prop, "--report",
                          str(report)], cwd=code_dir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reproduce without permcheck: python3 %s" % (report / "repro.py") in done.stdout, done.stdout
    for name in ("repro.py", "requests.jsonl", "permcheck_adapter.py"):
        assert (report / name).exists(), name
    with open(report / "requests.jsonl") as f:
        assert len(f.read().splitlines()) == 2
    with open(report / "report.md") as f:
        assert "**Reproduce without permcheck:** `python3 repro.py`" in f.read().split("\n")[2]
    code, out = run_alone(str(report / "repro.py"), tmp_path)
    assert code == 1 and "the bug is there" in out, out
    fixed = subprocess.run(["python3", str(report / "repro.py"), "python3 adapter.py"],
                           env={"PATH": ALONE_PATH, "HOME": "/tmp"}, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert fixed.returncode == 0 and "fixed" in fixed.stdout, fixed.stdout + fixed.stderr


def test_a_batch_dependent_finding_sends_its_batch_again_and_asks_alone(layers, tmp_path):
    """The case's batched request written out whole (every item of it, the case's place among them) and asked as
    the audit's batch was, one forward pass over the stacked items; then the case alone."""
    result = permcheck.audit(layers.BatchCentered(True), axes=["n=1..6"], inputs=["x:1,n,4"], outputs=["y:1,n,4"],
                             report=tmp_path / "batched")
    assert result.verdict == "batch-dependent", result.explanation()
    batches = result.record["counterexample"]["batches"]
    assert batches and all(len(b["items"]) > 1 and 0 <= b["at"] < len(b["items"]) for b in batches), batches
    code, out = run_alone(result.repro, tmp_path)
    assert code == 1 and "answer in the batch (item" in out and "the bug is there" in out, out
    swapped(result, layers.BatchCentered(False))
    code, out = run_alone(result.repro, tmp_path)
    assert code == 0 and "fixed" in out, out


def test_a_history_dependent_finding_asks_x_the_earlier_request_and_x_again(layers, tmp_path):
    result = permcheck.audit(layers.StaleTable(True), dim=4, batch=None, report=tmp_path / "history")
    assert result.verdict == "history-dependent", result.explanation()
    code, out = run_alone(result.repro, tmp_path)
    assert code == 1 and "x asked after the earlier request and x asked first differ by" in out, out
    swapped(result, layers.StaleTable(False))
    assert run_alone(result.repro, tmp_path)[0] == 0


# Any layer of repro_layers served by an adapter program: NAME bug | fixed (the same weights either way).
ANY_ADAPTER = textwrap.dedent('''
    import sys

    import torch
    from permcheck_adapter import serve

    import repro_layers

    name, bug = sys.argv[1], sys.argv[2] == "bug"
    torch.manual_seed(0)
    serve(getattr(repro_layers, name)(bug), batch=None if name == "StaleTable" else 256)
''')
SEQUENCE = ["--axis", "n=1..6", "--input", "x:n,4", "--output", "y:n,4"]


@pytest.mark.parametrize("name, flags, verdict, said", [
    ("Readout", ["--axis", "nodes=1..5", "--axis", "edges=0..6", "--input", "x:nodes,4",
                 "--input", "edge_index:2,edges:index=nodes", "--output", "y:nodes,4"], "violated",
     "L(P x) and P L(x) differ by"),
    ("Absolute", ["--axis", "n=1..6", "--input", "x:n,4", "--input", "pos:n:position", "--output", "y:n,4",
                  "--property", "shift", "--dtype", "float64"], "violated", "L(x_c) and L(x) differ by"),
    ("Pooled", ["--dim", "4", "--output", "pooled"], "violated", "L(P x) and L(x) differ by"),
    ("Ratio", SEQUENCE, "non-finite", "a non-finite entry"),
    ("Jitter", SEQUENCE, "nondeterministic", "ask 2 of x differs from ask 1"),
    ("StaleTable", SEQUENCE, "history-dependent", "x asked after the earlier request and x asked first differ by"),
    ("Scaled", SEQUENCE + ["--property", "agreement", "--reference-exec", "python3 adapter.py Scaled fixed"],
     "violated", "L(x) and R(x) differ by"),
])
def test_every_finding_of_an_adapter_program_reproduces_and_its_fixed_twin_passes(layers, tmp_path, name, flags,
                                                                                 verdict, said):
    """Each property and finding of the in-process tests above, through an adapter program: the requests sent as
    the audit sent them (x asked five times, or x, the earlier request and x again; R(x) of the reference's own
    command), and the same requests to the fixed twin's command."""
    code_dir = tmp_path / "code"
    (code_dir / "adapter.py").write_text(ANY_ADAPTER)
    report = tmp_path / "adapter-report"
    env = dict(os.environ, PYTHONPATH=os.path.abspath("python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([os.environ.get("PERMCHECK_BIN", "permcheck"), "audit", "--exec",
                           "python3 adapter.py %s bug" % name] + flags + ["--report", str(report)],
                          cwd=code_dir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and " %s" % verdict in done.stdout, done.stdout + done.stderr
    code, out = run_alone(str(report / "repro.py"), tmp_path)
    assert code == 1 and said in out and "the bug is there" in out, out
    fixed = subprocess.run(["python3", str(report / "repro.py"), "python3 adapter.py %s fixed" % name],
                           env={"PATH": ALONE_PATH, "HOME": "/tmp"}, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert fixed.returncode == 0 and "fixed" in fixed.stdout, fixed.stdout + fixed.stderr


BATCHED_ADAPTER = textwrap.dedent('''
    import sys

    from permcheck_adapter import serve

    import repro_layers

    serve(repro_layers.BatchCentered(len(sys.argv) > 1))
''')


def test_an_adapter_programs_batch_dependent_finding_sends_its_stacked_batch_again(layers, tmp_path):
    """The batched request as the audit sent it (stacked: base64 inputs), the case's item split from the stacked
    answer with the standard library; then the case alone."""
    code_dir = tmp_path / "code"
    (code_dir / "adapter.py").write_text(BATCHED_ADAPTER)
    report = tmp_path / "adapter-batched"
    env = dict(os.environ, PYTHONPATH=os.path.abspath("python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([os.environ.get("PERMCHECK_BIN", "permcheck"), "audit", "--exec",
                           "python3 adapter.py shared", "--axis", "n=1..6", "--input", "x:1,n,4",
                           "--output", "y:1,n,4", "--report", str(report)],
                          cwd=code_dir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "batch-dependent" in done.stdout, done.stdout + done.stderr
    with open(report / "requests.jsonl") as f:
        lines = [json.loads(line) for line in f.read().splitlines()]
    assert any(line.get("stacked") for line in lines), [sorted(line) for line in lines]
    code, out = run_alone(str(report / "repro.py"), tmp_path)
    assert code == 1 and "answer in the batch (item" in out and "the bug is there" in out, out
    fixed = subprocess.run(["python3", str(report / "repro.py"), "python3 adapter.py"],
                           env={"PATH": ALONE_PATH, "HOME": "/tmp"}, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert fixed.returncode == 0 and "fixed" in fixed.stdout, fixed.stdout + fixed.stderr


class NoEdges(torch.nn.Module):
    """Raises on a graph without edges (an aggregation that takes the max over none), unless `fixed`."""

    def __init__(self, fixed=False):
        super().__init__()
        self.fixed = fixed

    def forward(self, x, edge_index):
        if edge_index.shape[1] == 0 and not self.fixed:
            raise ValueError("no edges to aggregate")
        return x


def test_an_error_is_shrunk_to_its_smallest_erring_case_and_its_repro_raises_until_fixed(layers, tmp_path):
    result = permcheck.audit(layers.TableOfFour(), axes=["n=1..8"], inputs=["x:1,n,2"], outputs=["y:1,n,2"],
                             report=tmp_path / "erred")
    assert result.verdict == "error", result.explanation()
    c = result.record["counterexample"]
    assert c["erred"] and c["lengths"]["n"] == 5, c  # the shortest sequence that raises
    assert c["erred_side"] == "x" and c["erred_type"] == "IndexError" and "in forward" in c["erred_where"], c
    assert "index 4 is out of range" in result.error and "shrunk in" in result.error, result.error
    code, out = run_alone(result.repro, tmp_path)
    assert code == 1 and "index 4 is out of range" in out, out
    swapped(result, layers.TableOfFour(True))
    code, out = run_alone(result.repro, tmp_path)
    assert code == 0 and "fixed" in out, out


def test_an_error_report_names_the_input_it_erred_on_and_its_replay_sends_it_again(tmp_path):
    graph = dict(axes=["nodes=1..4", "edges=0..4"], inputs=["x:nodes,3", "edge_index:2,edges:index=nodes"],
                 outputs=["y:nodes,3"])
    result = permcheck.audit(NoEdges(), report=tmp_path / "erred", **graph)
    assert result.verdict == "error"
    assert "no edges to aggregate" in result.error and "(the case it erred on has no edges" in result.error
    assert result.counterexample is not None and result.counterexample.lengths["edges"] == 0
    assert result.record["counterexample"]["erred"] is True
    assert "socket" not in result.error and "/tmp/permcheck-" not in result.explanation()
    still = permcheck.replay(result.report, NoEdges())
    assert not still and "still errs: the saved case the layer erred on (edges=0" in still.output, still.output
    now = permcheck.replay(result.report, NoEdges(fixed=True))
    assert now and "answered now" in now.output, now.output
