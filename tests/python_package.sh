#!/usr/bin/env bash
# The Python package permcheck used as its users use it: a pytest file of a few lines that defines its modules
# (a symmetric one holds; a learned position embedding fails with the shrunk counterexample in the assertion
# message), run with the pytest plugin
#   1. from the build tree (PYTHONPATH=python, PERMCHECK_BIN=the built binary), with --permcheck-reports;
#   2. from an installed prefix (cmake --install; PYTHONPATH=PREFIX/share/permcheck/python, the binary found
#      beside the package, nothing on PATH);
#   3. through `pip install .` of the repository into a new venv (scikit-build-core builds the command into the
#      venv's bin/; the plugin loaded by its entry point; no PERMCHECK_BIN, nothing of the build on PATH, not even
#      the venv's bin/), leaving the source tree as it was; and `pip install -e .` into another venv;
# and examples/pytest/ from the build tree. Every form says the same version: `permcheck --version`, the CMake
# package (permcheckConfigVersion.cmake), permcheck.__version__ and pip's metadata, all CMakeLists.txt's
# project(VERSION).
#   python_package.sh PERMCHECK BUILD_DIR SOURCE_DIR
# The venv sees the project venv's packages (torch, pytest, scikit-build-core) through a .pth file naming its
# site-packages: nothing reinstalled, nothing downloaded. pip builds with --no-build-isolation (that pinned
# scikit-build-core, offline) in BUILD_DIR-python-wheel, a sibling of the build tree kept between runs, with the
# build tree's CMake, compiler, generator and ccache cache (CMakeLists.txt): the wheel's build is configured apart
# (tests off, SKBUILD), but its compile commands, relative to their folders, are the build tree's, so they come
# from the cache where the build tree compiled through ccache; only the sources whose definitions differ in a wheel
# compile again (pip install . took 20 s so, against 596 s compiling the command's sources, on a busy two-core
# machine). Without ccache the first run compiles them once more, and a later run what changed.
set -euo pipefail
unset PERMCHECK_BIN
export PYTHONDONTWRITEBYTECODE=1  # nothing written into the source tree
permcheck="$1"; build="$2"; source="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 -c 'import torch, pytest' || fail "python3 cannot import torch and pytest (scripts/install-deps --test makes .venv/)"

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
grep -q "36 passed" "$work/out.txt" || { cat "$work/out.txt"; fail "examples/pytest: not 36 passed"; }
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

# The version, set once in CMakeLists.txt: what every form below must say.
version="$(sed -nE 's/^project\(permcheck[[:space:]]+VERSION[[:space:]]+([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' "$source/CMakeLists.txt")"
[ -n "$version" ] || fail "no project(permcheck VERSION x.y.z) in CMakeLists.txt"
# same_version WHAT GOT
same_version() { [ "$2" = "$version" ] || fail "$1 says '$2', CMakeLists.txt's project(VERSION) is $version"; }
same_version "the build tree's permcheck --version" "$("$permcheck" --version | sed -n 's/^permcheck //p')"
same_version "the source tree's permcheck.__version__" \
  "$(PYTHONPATH="$source/python" python3 -c 'import permcheck; print(permcheck.__version__)')"
same_version "the installed permcheck --version" "$("$work/prefix/bin/permcheck" --version | sed -n 's/^permcheck //p')"
same_version "the installed prefix's permcheck.__version__" \
  "$(PYTHONPATH="$work/prefix/share/permcheck/python" python3 -c 'import permcheck; print(permcheck.__version__)')"
config_version="$(find "$work/prefix" -name permcheckConfigVersion.cmake | head -1)"
[ -n "$config_version" ] || fail "the installed prefix has no permcheckConfigVersion.cmake"
same_version "permcheckConfigVersion.cmake" "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$config_version")"
echo "ok: one version ($version): both commands, the CMake package, the source tree's and the prefix's package"

# 3. pip install . of the repository into a new venv, the core built by scikit-build-core.
before="$(cd "$source" && find . -path ./.git -prune -o -path ./build -prune -o -path ./build-\* -prune \
            -o -path ./.venv -prune -o -path '*/__pycache__' -prune -o -print | LC_ALL=C sort | md5sum)"
# new_venv DIR: a venv without pip that sees the project venv's packages (a .pth file), and no permcheck.
new_venv() {
  python3 -m venv --without-pip "$1" || fail "python3 -m venv failed (python3-venv)"
  local project_site venv_site
  project_site="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  venv_site="$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  echo "$project_site" > "$venv_site/permcheck-test-project-packages.pth"
  "$1/bin/python" -c 'import torch, pytest, scikit_build_core' \
    || fail "the new venv does not see torch, pytest and scikit-build-core through $project_site"
  ! "$1/bin/python" -c 'import permcheck' 2>/dev/null \
    || fail "the project's Python already has a permcheck: pip install it elsewhere"
}
new_venv "$work/venv"
wheel_build="$(cd "$build" && pwd)-python-wheel"
generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")"
cmake_dir="$(dirname "$(sed -n 's/^CMAKE_COMMAND:INTERNAL=//p' "$build/CMakeCache.txt")")"  # the same CMake
compiler="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")"  # and compiler (ccache hashes its name)
ccache_dir="$(sed -n 's/^PERMCHECK_CCACHE_DIR:PATH=//p' "$build/CMakeCache.txt")"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
# pip_install VENV ARGS...: pip install, offline, into VENV, built as said above.
pip_install() {
  local venv="$1"; shift
  PATH="$(dirname "$(command -v python3)"):$cmake_dir:/usr/bin:/bin" CMAKE_GENERATOR="$generator" \
    python3 -m pip --python "$venv/bin/python" install --no-index --no-build-isolation --disable-pip-version-check \
    -q -C build-dir="$wheel_build" -C cmake.define.CMAKE_CXX_COMPILER="$compiler" \
    ${ccache_dir:+-C cmake.define.PERMCHECK_CCACHE_DIR="$ccache_dir"} "$@" > "$work/pip.txt" 2>&1 \
    || { cat "$work/pip.txt"; fail "pip install $* failed"; }
}
start=$SECONDS
pip_install "$work/venv" "$source"
echo "pip install . took $((SECONDS - start)) s (build in $wheel_build, generator $generator, ccache ${ccache_dir:-none})"
after="$(cd "$source" && find . -path ./.git -prune -o -path ./build -prune -o -path ./build-\* -prune \
           -o -path ./.venv -prune -o -path '*/__pycache__' -prune -o -print | LC_ALL=C sort | md5sum)"
[ "$before" = "$after" ] || fail "pip install . wrote into the source tree"
[ -x "$work/venv/bin/permcheck" ] || fail "pip install . did not put the permcheck command in the venv's bin/"
same_version "the pip-installed permcheck --version" "$("$work/venv/bin/permcheck" --version | sed -n 's/^permcheck //p')"
same_version "the pip-installed permcheck.__version__" \
  "$(cd "$work" && "$work/venv/bin/python" -c 'import permcheck; print(permcheck.__version__)')"
same_version "pip's metadata (importlib.metadata)" \
  "$(cd "$work" && "$work/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("permcheck"))')"
venv_files="$(cd "$work" && "$work/venv/bin/python" -c '
import importlib.metadata as m
print("\n".join(str(f) for f in m.files("permcheck")))')"
for wanted in permcheck/__init__.py permcheck/pytest_plugin.py permcheck/_version.py permcheck_adapter.py; do
  grep -qx "$wanted" <<< "$venv_files" || fail "the wheel does not hold $wanted"
done
grep -qE '(^|/)(include|lib)/|\.a$|\.cmake$|\.h$' <<< "$venv_files" \
  && fail "the wheel holds more than the command and the Python files: $(grep -E '(^|/)(include|lib)/|\.a$|\.cmake$|\.h$' <<< "$venv_files" | head -3)"
(cd "$work" && PATH=/usr/bin:/bin "$work/venv/bin/python" -c "
import permcheck, permcheck_adapter
assert permcheck.__file__.startswith('$work/venv/'), permcheck.__file__
assert permcheck_adapter.__file__.startswith('$work/venv/'), permcheck_adapter.__file__
assert permcheck.find_binary() == '$work/venv/bin/permcheck', permcheck.find_binary()") \
  || fail "the venv does not import its installed permcheck, or does not find its command with nothing on PATH"
# No -p: the entry point loads the plugin. Nothing of the build or the venv on PATH, no PYTHONPATH.
PATH=/usr/bin:/bin PYTHONPATH= pytest_in "$work" "$work/venv/bin/python"
check_run "pip install . in a new venv"
# The wheel's command runs an adapter program written with permcheck_adapter (the venv's Python imports it from
# its site-packages), with nothing on PYTHONPATH.
cat > "$work/identity_adapter.py" <<'PY'
from permcheck_adapter import serve
serve(lambda x: x)
PY
(cd "$work" && PATH="$work/venv/bin:/usr/bin:/bin" PYTHONPATH= permcheck audit --exec "python identity_adapter.py" \
   --dim 4 --cases 20) > "$work/exec.txt" 2>&1 || { cat "$work/exec.txt"; fail "the pip-installed permcheck audit --exec failed"; }
grep -q "holds after 20 cases" "$work/exec.txt" || { cat "$work/exec.txt"; fail "audit --exec through the venv: no holding verdict"; }
echo "ok: the pip-installed permcheck audit --exec serves permcheck_adapter from the venv"

# pip install -e . (scikit-build-core's editable mode) into another venv: the same build, so no compile; the
# command installed all the same, the package imported from the source tree.
new_venv "$work/venv-editable"
pip_install "$work/venv-editable" -e "$source"
same_version "the editable install's permcheck --version" \
  "$("$work/venv-editable/bin/permcheck" --version | sed -n 's/^permcheck //p')"
(cd "$work" && PATH=/usr/bin:/bin "$work/venv-editable/bin/python" -c "
import permcheck, permcheck_adapter
assert permcheck.__file__ == '$source/python/permcheck/__init__.py', permcheck.__file__
assert permcheck_adapter.__file__ == '$source/python/permcheck_adapter.py', permcheck_adapter.__file__
assert permcheck.__version__ == '$version', permcheck.__version__
assert permcheck.find_binary() == '$work/venv-editable/bin/permcheck', permcheck.find_binary()") \
  || fail "the editable install does not import permcheck from the source tree, or does not find its command"
after="$(cd "$source" && find . -path ./.git -prune -o -path ./build -prune -o -path ./build-\* -prune \
           -o -path ./.venv -prune -o -path '*/__pycache__' -prune -o -print | LC_ALL=C sort | md5sum)"
[ "$before" = "$after" ] || fail "pip install -e . wrote into the source tree"
echo "ok: pip install -e . in another venv"
