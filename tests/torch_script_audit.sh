#!/usr/bin/env bash
# `permcheck audit-torch`, served by the Python torch of the environment (python3 first on PATH: the project's
# venv under ctest). Files written here by that torch 2.x: a TorchScript file (torch.jit.save) and an exported
# program (torch.export.save, .pt2) of the same attention head hold (exit 0); a learned position table is violated
# (exit 1) in both forms. The export's dynamic dim (2..32) narrows --axis n=1..8 to 2..8, said on the verdict line
# and in the report; a static dim fixes n to its length; an --axis that misses it is refused naming the dim and both
# ranges. An AOTInductor package
# (built by hand with the layout torch._inductor.aoti_compile_and_package writes: compiling one takes minutes
# here), a torch.save state dict and a text file are refused with a sentence (exit 2). A Python without torch
# (PERMCHECK_PYTHON: a bare venv) ends `error` naming the interpreter and how to fix it. The built-in torch.nn
# modules give the verdicts the theory expects. repro.py of a file's finding exits 1, and 0 with a fixed twin.
#   torch_script_audit.sh PERMCHECK
set -uo pipefail
permcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "torch_script_audit.sh: $*" >&2; exit 1; }

python3 -c 'import torch' 2>"$work/import.err" ||
  fail "python3 ($(command -v python3)) cannot import torch: $(cat "$work/import.err")"

cat >"$work/make_models.py" <<'EOF'
import sys
import zipfile

import torch
from torch import nn

torch.manual_seed(0)


class Head(nn.Module):  # one attention head: equivariant in n
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / 8 ** 0.5, -1)
        return a @ self.v(x)


class PosHead(nn.Module):  # the same after a learned position table: violated
    def __init__(self):
        super().__init__()
        self.head = Head()
        self.pos = nn.Parameter(torch.randn(64, 8))

    def forward(self, x):
        return self.head(x + self.pos[: x.size(1)])


class Low(nn.Module):  # a float32 module whose output is bfloat16
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).to(torch.bfloat16)


out = sys.argv[1]
x = torch.randn(1, 5, 8)
n = {"x": {1: torch.export.Dim("n", min=2, max=32)}}
for name, cls in (("head", Head), ("pos", PosHead)):
    m = cls().eval()
    torch.jit.save(torch.jit.script(m), "%s/%s.pt" % (out, name))
    torch.export.save(torch.export.export(m, (x,), dynamic_shapes=n), "%s/%s.pt2" % (out, name))
    if name == "pos":  # the fixed twin: the same forward, the table zero
        with torch.no_grad():
            m.pos.zero_()
        torch.export.save(torch.export.export(m, (x,), dynamic_shapes=n), "%s/pos_fixed.pt2" % out)
        torch.jit.save(torch.jit.script(m), "%s/pos_fixed.pt" % out)
# Exported with no dynamic dim: n is static, 5.
torch.export.save(torch.export.export(Head().eval(), (x,)), "%s/static.pt2" % out)
torch.jit.save(torch.jit.script(Low()), "%s/low.pt" % out)
torch.save(Head().state_dict(), "%s/weights.pt" % out)
# An AOTInductor package's layout (what aoti_compile_and_package writes), its compiled library a stand-in.
with zipfile.ZipFile("%s/compiled.pt2" % out, "w") as z:
    z.writestr("compiled/archive_format", "pt2")
    z.writestr("compiled/data/aotinductor/model/abc.wrapper.cpp", "// generated")
    z.writestr("compiled/data/aotinductor/model/abc.wrapper.so", b"\x7fELF")
EOF
python3 "$work/make_models.py" "$work" 2>"$work/make.err" || fail "could not write the models: $(cat "$work/make.err")"
echo "not a model" >"$work/notes.txt"

sig=(--axis n=1..8 --input x:1,n,8 --output y:1,n,8)
# run NAME EXPECTED_EXIT ARGS...: audit-torch, its stdout and stderr in $work/NAME.out and .err.
run() {
  local name=$1 want=$2
  shift 2
  local rc=0
  "$permcheck" audit-torch "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [[ $rc == "$want" ]] || fail "$name: exit $rc, expected $want: $(cat "$work/$name.out" "$work/$name.err")"
}
expect() {  # expect NAME FILE_SUFFIX TEXT: TEXT in $work/NAME.FILE_SUFFIX
  grep -qF -- "$3" "$work/$1.$2" || fail "$1: '$3' not in its $2: $(cat "$work/$1.out" "$work/$1.err")"
}

# TorchScript and exported programs, both from torch 2.x.
run script_holds 0 "$work/head.pt" "${sig[@]}" --cases 30
expect script_holds out "audit of $work/head.pt (TorchScript): "
expect script_holds out "holds"
run script_violated 1 "$work/pos.pt" "${sig[@]}" --cases 30
expect script_violated out "violated"
run export_holds 0 "$work/head.pt2" "${sig[@]}" --cases 30 --report "$work/export_report"
expect export_holds out "audit of $work/head.pt2 (exported program) (n narrowed to 2..8 by the export's dynamic dims): "
python3 - "$work/export_report/report.json" <<'EOF' || fail "the report does not record the narrowing"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["details"]["audit_torch"]
assert d["narrowed"] == ["n narrowed to 2..8 by the export's dynamic dims"], d
assert d["format"] == "export" and d["torch"].startswith("2."), d
assert r["verdict"] == "holds", r["verdict"]
EOF
run export_violated 1 "$work/pos.pt2" "${sig[@]}" --cases 30 --report "$work/pos_report"
expect export_violated out "violated"
# The export allows n in 2..32: --axis n=40..50 does not reach it.
run no_overlap 2 "$work/head.pt2" --axis n=40..50 --input x:1,n,8 --output y:1,n,8
expect no_overlap err "the export's dynamic dim 1 of x (axis n) allows 2..32, which --axis n=40..50 does not reach"

# A static dim fixes its axis; a keyword argument reaches an input exported positionally; --train is refused.
run static 0 "$work/static.pt2" "${sig[@]}" --argument x=x --cases 5
expect static out "(n fixed to 5 by the export's static dims): y equivariant along n (float32, n in [5, 5]) holds"
run static_train 2 "$work/static.pt2" "${sig[@]}" --train
expect static_train err "--train does not apply to an exported program"

# repro.py of the exported program's finding: 1 with the bug, 0 with the fixed twin.
[[ -f "$work/pos_report/repro.py" ]] || fail "no repro.py beside the finding's report: $(cat "$work/export_violated.err")"
grep -q "Written with torch 2\." "$work/pos_report/repro.py" || fail "repro.py does not name the torch it was written with"
rc=0; python3 "$work/pos_report/repro.py" >"$work/repro.out" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "repro.py exited $rc, expected 1: $(cat "$work/repro.out")"
rc=0; python3 "$work/pos_report/repro.py" "$work/pos_fixed.pt2" >"$work/repro_fixed.out" 2>&1 || rc=$?
[[ $rc == 0 ]] || fail "repro.py with the fixed twin exited $rc, expected 0: $(cat "$work/repro_fixed.out")"
# The same for the TorchScript file.
run script_report 1 "$work/pos.pt" "${sig[@]}" --cases 30 --report "$work/script_report"
rc=0; python3 "$work/script_report/repro.py" >"$work/repro_s.out" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "TorchScript repro.py exited $rc, expected 1: $(cat "$work/repro_s.out")"
rc=0; python3 "$work/script_report/repro.py" "$work/pos_fixed.pt" >"$work/repro_sf.out" 2>&1 || rc=$?
[[ $rc == 0 ]] || fail "TorchScript repro.py with the fixed twin exited $rc, expected 0: $(cat "$work/repro_sf.out")"

# An output less precise than the module computes in would be judged with the wrong tolerance: an error.
run low 2 "$work/low.pt" "${sig[@]}" --cases 5
expect low err "an output of $work/low.pt is bfloat16 but the module computes in float32"

# Files refused, by content: an AOTInductor package, a state dict, a text file.
run aoti 2 "$work/compiled.pt2" "${sig[@]}"
expect aoti err "is an AOTInductor package"
run state_dict 2 "$work/weights.pt" "${sig[@]}"
expect state_dict err "was written by torch.save"
run text 2 "$work/notes.txt" "${sig[@]}"
expect text err "is not a saved torch model"

# A Python without torch: a bare venv.
python3 -m venv --without-pip "$work/bare" || fail "could not make a bare venv"
PERMCHECK_PYTHON="$work/bare/bin/python3" run no_torch 2 "$work/head.pt" "${sig[@]}"
expect no_torch err "permcheck audit-torch: $work/bare/bin/python3 (set by PERMCHECK_PYTHON) cannot import torch (ModuleNotFoundError"
expect no_torch err "or set PERMCHECK_PYTHON to a Python that has it"

# The built-in torch.nn modules.
run mha 0 mha --cases 30
expect mha out "audit of torch.nn.MultiheadAttention(dim=8, heads=2, mask=none, eval, float64): equivariance holds"
run mha_causal 1 mha --mask causal --cases 30
run encoder_padding 0 encoder-layer --mask key-padding --cases 30
run encoder_fixed 1 encoder-layer --mask key-padding-fixed --cases 30
run encoder_train 1 encoder-layer --train --dropout 0.5 --cases 30
expect encoder_train out "nondeterministic"
run decoder 0 decoder-layer --cases 20
run decoder_causal 1 decoder-layer --mask causal --cases 20
run bad_heads 2 mha --dim 8 --heads 3
expect bad_heads err "--heads must be at least 1 and divide --dim (8), got 3"
run float16 0 mha --dtype float16 --cases 20
echo "torch_script_audit.sh: all checks passed"
