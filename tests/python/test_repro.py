"""repro.py: a report that finds something reproduces it without permcheck (python3 and torch alone), exits 1 while
the bug is there and 0 once the saved module is swapped for its fixed twin.

Run by ctest (PythonReproRunsWithoutPermcheck) with PERMCHECK_BIN and PYTHONPATH=python; each repro.py runs in a
process with neither (PATH=/usr/bin:/bin, no PYTHONPATH, another working directory), where `import permcheck`
fails."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import permcheck

# The layers under test live in a module of their own that does not import permcheck, as a user's model code does:
# the repro loads the pickled module by reference to it.
LAYERS = textwrap.dedent('''
    import torch


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
''')


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
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONDONTWRITEBYTECODE": "1"}
    absent = subprocess.run(["/usr/bin/python3", "-c", "import permcheck"], env=env, cwd=cwd, capture_output=True)
    assert absent.returncode != 0, "permcheck must not be importable where the repro runs"
    done = subprocess.run(["/usr/bin/python3", repro], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
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


@pytest.mark.parametrize("make, audited, verdict, said", [
    ("Jitter", dict(dim=4), "nondeterministic", "ask 2 of x differs from ask 1"),
    ("Absolute", dict(axes=["n=1..6"], inputs=["x:n,4", "pos:n:position"], outputs=["y:n,4"], property="shift",
                      dtype="float64"), "violated", "L(x_c) and L(x) differ by"),
])
def test_a_nondeterministic_or_shift_finding_reproduces(layers, tmp_path, make, audited, verdict, said):
    """A nondeterministic finding asks x several times; a shift finding asks x_c."""
    cls = getattr(layers, make)
    result = permcheck.audit(cls(True), report=tmp_path / make, **audited)
    assert result.verdict == verdict
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
