#!/usr/bin/env bash
# The Python package permcheck used as its users use it: a pytest file of a few lines that defines its modules
# (a symmetric one holds; a learned position embedding fails with the shrunk counterexample in the assertion
# message), run with the pytest plugin
#   1. from the build tree (PYTHONPATH=python, PERMCHECK_BIN=the built binary), with --permcheck-reports;
#   2. from an installed prefix (cmake --install; PYTHONPATH=PREFIX/share/permcheck/python, the binary found
#      beside the package, nothing on PATH);
#   3. through `pip install` of a copy of python/ into a venv that sees Debian's packages (the plugin loaded by
#      its entry point, the binary on PATH), offline, leaving python/ as it was;
# and examples/pytest/ from the build tree.
#   python_package.sh PERMCHECK BUILD_DIR SOURCE_DIR
set -euo pipefail
unset PERMCHECK_BIN
export PYTHONDONTWRITEBYTECODE=1  # nothing written into the source tree
permcheck="$1"; build="$2"; source="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 -c 'import torch, pytest' || fail "python3 cannot import torch and pytest (python3-torch, python3-pytest)"

mkdir "$work/tests"
cat > "$work/tests/test_few_lines.py" <<'EOF'
import torch, permcheck

class Symmetric(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        return self.lin(x) + x.mean(0, keepdim=True)

class LearnedPosition(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(16, 8))
    def forward(self, x):
        return x + self.pos[: x.shape[0]]

def test_symmetric():
    permcheck.assert_equivariant(Symmetric(), dim=8)

def test_learned_position():
    permcheck.assert_equivariant(LearnedPosition(), dim=8)
EOF

# check_run LABEL: the pytest run in $work/out.txt failed the learned test alone, with the shrunk counterexample
# in its message and both audits in the plugin's summary.
check_run() {
  local label="$1" out="$work/out.txt"
  grep -q "1 failed, 1 passed" "$out" || { cat "$out"; fail "$label: not one failed and one passed"; }
  grep -q "FAILED tests/test_few_lines.py::test_learned_position" "$out" || { cat "$out"; fail "$label: the learned test did not fail"; }
  grep -q "AssertionError: audit of LearnedPosition: equivariance (float32" "$out" || { cat "$out"; fail "$label: no assertion message"; }
  grep -qF "permutations n (0 1) (rows: (P x)[i] = x[p[i]]); the axis at fault: n" "$out" && grep -q "lengths: n = 2" "$out" || { cat "$out"; fail "$label: no shrunk counterexample"; }
  grep -q "permcheck audits" "$out" || { cat "$out"; fail "$label: no permcheck summary section"; }
  grep -q "test_symmetric: audit of Symmetric: equivariance (float32.* holds after 100 cases" "$out" \
    || { cat "$out"; fail "$label: no summary line of the holding audit"; }
  grep -q "test_learned_position: audit of LearnedPosition: .* violated after .*\[report: " "$out" \
    || { cat "$out"; fail "$label: no summary line of the violated audit with its report"; }
  echo "ok: $label"
}

# pytest_in DIR PYTHON ARGS...: pytest on the few-lines file, from DIR, exit status 1 expected (one test fails).
pytest_in() {
  local dir="$1" python="$2"; shift 2
  set +e
  (cd "$dir" && "$python" -m pytest -p no:cacheprovider tests/test_few_lines.py "$@") > "$work/out.txt" 2>&1
  local got=$?
  set -e
  [ "$got" = 1 ] || { cat "$work/out.txt"; fail "pytest exited $got, expected 1 (one failing test)"; }
}

# 1. The build tree, reports kept.
PERMCHECK_BIN="$permcheck" PYTHONPATH="$source/python" pytest_in "$work" python3 \
  -p permcheck.pytest_plugin --permcheck-reports "$work/reports"
check_run "build tree"
kept="$work/reports/tests_test_few_lines.py_test_learned_position"
[ -f "$kept/report.json" ] || { ls -R "$work/reports" || true; fail "--permcheck-reports did not keep the failing audit's report"; }
grep -q "report: $kept" "$work/out.txt" || fail "the assertion message does not name the kept report"
[ ! -e "$work/reports/tests_test_few_lines.py_test_symmetric" ] || fail "the holding audit's report was kept"
grep -q '"served_in_process": true' "$kept/report.json" || fail "the report does not say it was served in process"
grep -q "permcheck.replay(" "$kept/report.md" || fail "report.md does not name permcheck.replay"

# 1b. The examples, from the build tree.
(cd "$source/examples/pytest" && PERMCHECK_BIN="$permcheck" PYTHONPATH="$source/python" \
   python3 -m pytest -p no:cacheprovider -p permcheck.pytest_plugin -q .) > "$work/out.txt" 2>&1 \
  || { cat "$work/out.txt"; fail "examples/pytest failed"; }
grep -q "30 passed" "$work/out.txt" || { cat "$work/out.txt"; fail "examples/pytest: not 30 passed"; }
echo "ok: examples/pytest"

# 2. An installed prefix: the binary beside the package, no PERMCHECK_BIN, nothing of ours on PATH.
cmake --install "$build" --prefix "$work/prefix" > "$work/install.txt" 2>&1 || { cat "$work/install.txt"; fail "cmake --install failed"; }
[ -f "$work/prefix/share/permcheck/python/permcheck/__init__.py" ] || fail "the package is not installed in share/permcheck/python"
[ -f "$work/prefix/share/permcheck/python/permcheck/pytest_plugin.py" ] || fail "the plugin is not installed"
[ ! -e "$work/prefix/share/permcheck/python/permcheck/__pycache__" ] || fail "__pycache__ was installed"
PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin" PYTHONPATH="$work/prefix/share/permcheck/python" pytest_in "$work" python3 -p permcheck.pytest_plugin
check_run "installed prefix"
PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin" PYTHONPATH="$work/prefix/share/permcheck/python" python3 -c \
  "import permcheck; assert permcheck.find_binary() == '$work/prefix/bin/permcheck', permcheck.find_binary()" \
  || fail "the installed package does not find the binary beside it"

# 3. pip, offline, into a venv that sees Debian's torch, pytest, setuptools and wheel, from a copy of python/.
before="$(cd "$source/python" && find . -path '*/__pycache__' -prune -o -print | LC_ALL=C sort | md5sum)"
cp -r "$source/python" "$work/python-copy"
rm -rf "$work/python-copy/permcheck/__pycache__"
python3 -m venv --system-site-packages "$work/venv" || fail "python3 -m venv failed (python3-venv)"
"$work/venv/bin/pip" install --no-index --no-build-isolation --disable-pip-version-check -q "$work/python-copy" \
  > "$work/pip.txt" 2>&1 || { cat "$work/pip.txt"; fail "pip install failed (python3-pip, python3-setuptools, python3-wheel)"; }
after="$(cd "$source/python" && find . -path '*/__pycache__' -prune -o -print | LC_ALL=C sort | md5sum)"
[ "$before" = "$after" ] || fail "pip install wrote into python/"
"$work/venv/bin/python" -c "import permcheck, os; assert '$work/venv' in permcheck.__file__, permcheck.__file__" \
  || fail "the venv does not import its installed permcheck"
# No -p: the entry point loads the plugin. The binary from PATH.
PATH="$work/prefix/bin:/usr/bin:/bin" PYTHONPATH= pytest_in "$work" "$work/venv/bin/python"
check_run "pip install in a venv"
