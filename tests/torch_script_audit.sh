#!/usr/bin/env bash
# `permcheck audit-torch FILE.pt` (issue 13, item 1): TorchScript files written here by python3 (the
# interpreter that sees Debian's python3-torch) with torch.jit.script(module).save(path), audited in process
# with no Python at audit time. The two examples of docs/torch.md hold; a learned position embedding is violated with
# n = 2; a file that is not TorchScript, a forward with another number of arguments, an output of the wrong
# shape and one of the wrong dtype are errors (exit 2) that name the problem; --dtype and --train do what they
# say; the built-in decoder-layer holds (and with a causal mask on its targets is violated). In bfloat16
# (--dtype bfloat16, or a module saved in bfloat16) the encoder holds and the position embedding is violated with
# n = 2; float16, which LibTorch 1.13 cannot multiply on CPU, is refused or fails naming why. Over token ids,
# position ids and a keep mask, shift, padding, causal and packing are found holding and violated (the smallest c,
# one pad, two tokens cut after one, two one-token sequences).
# Library modules with no wrapper: nn.MultiheadAttention and torchaudio's Conformer through --argument (forward's
# parameter names, length:AXIS) and --output-index (an element of a tuple, a key of a dict), and their errors.
#   torch_script_audit.sh PERMCHECK
set -uo pipefail
permcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "torch_script_audit.sh: $*" >&2; exit 1; }

python3 -c 'import torch' 2>"$work/import.err" ||
  fail "python3 cannot import torch (install python3-torch: scripts/install-deps --test): $(cat "$work/import.err")"

cat >"$work/make_models.py" <<'EOF'
import sys
from typing import Dict, Tuple

import torch
import torchaudio
from torch import nn

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, batch_first=True, dropout=0.0)

    def forward(self, x):
        return self.layer(x)


class SetPool(nn.Module):  # the mean over unpadded positions after a linear map
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x, pad):
        h = self.lin(x)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        return (h * keep).sum(1) / keep.sum(1)


class PosEmbed(nn.Module):  # a learned position embedding before an equivariant layer
    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(64, 8))
        self.layer = nn.TransformerEncoderLayer(8, 2, batch_first=True, dropout=0.0)

    def forward(self, x):
        return self.layer(x + self.pos[: x.size(1)])


class Dropout(nn.Module):  # equivariant, but random in train mode
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x))


class SumMix(nn.Module):  # x_i + mean of the rows: reductions and elementwise ops only (LibTorch has them in float16)
    def forward(self, x):
        return x + x.mean(1, keepdim=True)


class SumMixLeak(nn.Module):  # the same plus 1/64 of the position index
    def forward(self, x):
        return x + x.mean(1, keepdim=True) + torch.arange(x.size(1)).to(x.dtype)[None, :, None] / 64


class LowOutput(nn.Module):  # a float32 module whose output is bfloat16
    def forward(self, x):
        return x.to(torch.bfloat16)


class Argmax(nn.Module):  # an integer output
    def forward(self, x):
        return x.argmax(-1)


def rotate(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:  # rotary embedding at the position ids, in x's dtype
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=x.dtype) / 8))
    angles = pos.to(x.dtype).unsqueeze(1) * inv_freq.unsqueeze(0)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[:, 0::2], x[:, 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).reshape(x.shape)


class Ids(nn.Module):  # forward(ids, pos, keep): token ids, position ids, attention mask (1 = real), as LMs take them
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.embed = nn.Embedding(50, 8)
        self.table = nn.Embedding(4096, 8)
        self.q = nn.Linear(8, 8, bias=False)
        self.k = nn.Linear(8, 8, bias=False)
        self.v = nn.Linear(8, 8, bias=False)

    def forward(self, ids, pos, keep):
        h = self.embed(ids)
        if self.kind == "learned":
            h = h + self.table(pos)
        q, k = self.q(h), self.k(h)
        if self.kind != "learned":
            q, k = rotate(q, pos), rotate(k, pos)
        s = q @ k.transpose(0, 1) / 8 ** 0.5
        if self.kind == "rope-causal" or self.kind == "rope-packed":  # causal by row index, the keep mask; an empty
            n = ids.shape[0]                                          # row is uniform
            allowed = torch.ones(n, n, dtype=torch.bool).tril() & (keep.unsqueeze(0) != 0)
            if self.kind == "rope-packed":  # within each packed sequence: a sequence starts where its position id is 0
                sequence = (pos == 0).cumsum(0)
                allowed = allowed & (sequence.unsqueeze(1) == sequence.unsqueeze(0))
            s = s.masked_fill(~allowed, -1e9)
        elif self.kind != "rope-nomask":
            s = s.masked_fill(keep.unsqueeze(0) == 0, float("-inf"))
        return s.softmax(-1) @ self.v(h)


class Lengths(nn.Module):  # refuses a lengths tensor other than [n]; answers a tuple
    def forward(self, src, lengths) -> Tuple[torch.Tensor, torch.Tensor]:
        if lengths.dtype != torch.int64 or lengths.shape != (1,) or int(lengths[0]) != src.shape[1]:
            raise ValueError("lengths is not [n]")
        return lengths, src * 2


class Named(nn.Module):  # answers a dict
    def forward(self, x) -> Dict[str, torch.Tensor]:
        return {"scores": x.sum(-1), "hidden": x * 2}


out = sys.argv[1]
torch.jit.script(nn.MultiheadAttention(8, 2, batch_first=True)).save(f"{out}/mha.pt")
torch.jit.script(torchaudio.models.Conformer(input_dim=8, num_heads=2, ffn_dim=16, num_layers=1,
                                             depthwise_conv_kernel_size=3)).save(f"{out}/conformer.pt")
torch.jit.script(Lengths()).save(f"{out}/lengths.pt")
torch.jit.script(Named()).save(f"{out}/named.pt")
for name, module in [("rope", Ids("rope")), ("learned", Ids("learned")), ("ropenomask", Ids("rope-nomask")),
                     ("ropecausal", Ids("rope-causal")), ("ropepacked", Ids("rope-packed")),
                     ("encoder", Encoder()), ("setpool", SetPool()), ("posembed", PosEmbed()), ("dropout", Dropout()),
                     ("argmax", Argmax()), ("summix", SumMix()), ("summixleak", SumMixLeak()),
                     ("lowoutput", LowOutput())]:
    torch.jit.script(module).save(f"{out}/{name}.pt")
torch.save(Encoder().state_dict(), f"{out}/state_dict.pt")  # a zip archive, but not TorchScript
torch.jit.script(Encoder().to(torch.bfloat16)).save(f"{out}/encoder_bf16.pt")  # parameters in bfloat16
EOF
python3 "$work/make_models.py" "$work" 2>"$work/make.err" || fail "writing the models failed: $(cat "$work/make.err")"

# run EXPECTED_EXIT NAME ARGS...: runs permcheck audit-torch in $work, its stdout and stderr in $work/NAME.{out,err}.
run() {
  local want=$1 name=$2 rc=0
  shift 2
  (cd "$work" && "$permcheck" audit-torch "$@") >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [[ $rc == "$want" ]] || fail "$name: exit $rc, expected $want: $(cat "$work/$name.out" "$work/$name.err")"
}
# says NAME FILE TEXT: FILE (out or err) of NAME holds TEXT.
says() {
  grep -qF -- "$3" "$work/$1.$2" || fail "$1: its std$2 does not say '$3': $(cat "$work/$1.out" "$work/$1.err")"
}

run 0 encoder encoder.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8
says encoder out "audit of encoder.pt (TorchScript): y equivariant along n (float32, n in [1, 8]) holds after 100 cases"
run 0 setpool setpool.pt --axis n=1..8 --input x:1,n,8 --input pad:1,n:mask --output y:1,4
says setpool out "y invariant to n (float32, n in [1, 8]) holds after 100 cases"

# --dtype converts the module and its inputs; eval mode by default, --train keeps dropout on.
run 0 encoder64 encoder.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype float64 --cases 30
says encoder64 out "y equivariant along n (float64, n in [1, 8]) holds after 30 cases"
run 0 eval dropout.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --cases 30
run 1 train dropout.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --cases 30 --train
says train out "nondeterministic"

run 1 posembed posembed.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --report "$work/report"
says posembed out "violated"
says posembed out "replay: permcheck audit-torch posembed.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype float32"
n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counterexample"]["lengths"]["n"])' \
    "$work/report/report.json") || fail "posembed: report.json has no counterexample.lengths.n"
[[ $n == 2 ]] || fail "posembed: the shrunk counterexample has n = $n, expected 2"

# Position-aware properties of a TorchScript file with token ids, position ids and a keep mask (int64 tensors):
# RoPE at the ids is relative (shift holds, in float32 at the default offsets) and hides its pads; a learned
# position table is violated at one token shifted by 1; attention over the pads is violated with one pad.
ids=(--axis n=1..8 --input ids:n:token=50 --input pos:n:position --input keep:n:mask=keep --output y:n,8)
run 0 rope_shift rope.pt "${ids[@]}" --property shift --cases 60
says rope_shift out "holds after 60 cases"
run 0 rope_padding rope.pt "${ids[@]}" --property padding --cases 60
run 1 learned_shift learned.pt "${ids[@]}" --property shift --cases 60 --report "$work/shift"
c=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["counterexample"]; print(d["shift"], d["lengths"]["n"])' \
    "$work/shift/report.json") || fail "learned_shift: report.json has no counterexample"
[[ $c == "1 1" ]] || fail "learned_shift: shrunk to c, n = $c, expected 1 1"
says learned_shift out "--property shift"
run 1 nomask_padding ropenomask.pt "${ids[@]}" --property padding --cases 60 --report "$work/pads"
k=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["counterexample"]["pads"]["slots"]))' \
    "$work/pads/report.json") || fail "nomask_padding: report.json has no pads"
[[ $k == 1 ]] || fail "nomask_padding: shrunk to $k pads, expected 1"
# causal: the bidirectional head sees the next token (two tokens, cut after one); the causal one holds.
run 1 rope_causal rope.pt "${ids[@]}" --property causal --cases 60 --report "$work/causal"
c=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["counterexample"]; print(d["lengths"]["n"], d["cuts"]["at"])' \
    "$work/causal/report.json") || fail "rope_causal: report.json has no cut"
[[ $c == "2 [1]" ]] || fail "rope_causal: shrunk to n, k = $c, expected 2 [1]"
run 0 ropecausal_causal ropecausal.pt "${ids[@]}" --property causal --cases 60
says ropecausal_causal out "holds after 60 cases"
# packing: without a block mask the second sequence sees the first (two one-token sequences); with it, apart.
run 1 ropecausal_packing ropecausal.pt "${ids[@]}" --property packing --cases 60 --report "$work/packing"
c=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["counterexample"]; print(d["lengths"]["n"], d["cuts"]["at"], d["cuts"]["piece"])' \
    "$work/packing/report.json") || fail "ropecausal_packing: report.json has no packing"
[[ $c == "2 [1] 1" ]] || fail "ropecausal_packing: shrunk to n, ends, piece = $c, expected 2 [1] 1"
run 0 ropepacked_packing ropepacked.pt "${ids[@]}" --property packing --cases 60
# Each finding's repro.py, beside its report, reproduces it with python3 and torch alone (no permcheck on PATH):
# exit 1; given a fixed twin (another TorchScript file with the same forward), exit 0. A nondeterministic one asks x
# five times in train mode.
run 1 train_report dropout.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --cases 30 --train --report "$work/train"
# repro REPORT_DIR EXPECTED_EXIT [FILE]: runs its repro.py from another directory (with FILE: that module instead).
repro() {
  local rc=0
  (cd / && env -i PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin" python3 "$1/repro.py" ${3:+"$work/$3"}) >"$work/repro.out" 2>&1 || rc=$?
  [[ $rc == "$2" ]] || fail "$1/repro.py${3:+ $3}: exit $rc, expected $2: $(cat "$work/repro.out")"
}
repro "$work/report" 1
grep -qF "L(P x) and P L(x) differ by" "$work/repro.out" || fail "posembed's repro.py: $(cat "$work/repro.out")"
[[ -f $work/report/module.pt ]] || fail "posembed: no module.pt beside its repro.py"
repro "$work/report" 0 encoder.pt
repro "$work/shift" 1
repro "$work/shift" 0 rope.pt
repro "$work/pads" 1
repro "$work/pads" 0 rope.pt
repro "$work/causal" 1
repro "$work/causal" 0 ropecausal.pt
repro "$work/packing" 1
repro "$work/packing" 0 ropepacked.pt
repro "$work/train" 1
grep -qF "ask 2 of x differs from ask 1" "$work/repro.out" || fail "dropout's repro.py: $(cat "$work/repro.out")"
run 0 rope_profile rope.pt "${ids[@]}" --profile --cases 30 --report "$work/profile"
[[ -f $work/profile/profile.json ]] || fail "rope_profile: no profile.json"

# Half precision (issue 13, item 5; proofs-notes/half-precision-tolerance.md): the module and its inputs in
# bfloat16, judged with the bfloat16 tolerance, named in the header, report.json and the replay line.
run 0 encoder_bf16 encoder.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype bfloat16
says encoder_bf16 out "y equivariant along n (bfloat16, n in [1, 8]) holds after 100 cases"
run 0 encoder_bf16_long encoder.pt --axis n=1..64 --input x:1,n,8 --output y:1,n,8 --dtype bfloat16 --cases 40
run 0 saved_bf16 encoder_bf16.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --cases 30
says saved_bf16 out "y equivariant along n (bfloat16, n in [1, 8]) holds after 30 cases"
run 1 posembed_bf16 posembed.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype bfloat16 \
  --report "$work/report_bf16"
says posembed_bf16 out "violated"
says posembed_bf16 out "replay: permcheck audit-torch posembed.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype bfloat16"
read -r n dtype < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["counterexample"]["lengths"]["n"], r["dtype"])' \
    "$work/report_bf16/report.json") || fail "posembed_bf16: report.json has no counterexample.lengths.n or dtype"
[[ $n == 2 && $dtype == bfloat16 ]] || fail "posembed_bf16: report.json says n = $n, dtype $dtype; expected 2, bfloat16"
# The replay line, run as printed, finds the same violation in bfloat16.
replay=$(sed -n 's/^ *replay: permcheck audit-torch //p' "$work/posembed_bf16.out")
read -ra replay_args <<<"$replay"
run 1 posembed_bf16_replay "${replay_args[@]}"
says posembed_bf16_replay out "(bfloat16, n in [1, 8]) violated"
repro "$work/report_bf16" 1
repro "$work/report_bf16" 0 encoder.pt
run 0 mha_bf16 mha --dtype bfloat16
says mha_bf16 out "MultiheadAttention(dim=8, heads=2, mask=none, eval, bfloat16)"
run 1 mha_bf16_causal mha --dtype bfloat16 --mask causal
says mha_bf16_causal out "violated"
run 0 encoder_layer_bf16 encoder-layer --dtype bfloat16 --cases 30
run 2 builtin_fp16 mha --dtype float16
says builtin_fp16 err "LibTorch 1.13 has no float16 matrix kernels on CPU"
run 2 encoder_fp16 encoder.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype float16 --cases 5
says encoder_fp16 err "LibTorch 1.13 has no float16 matrix kernels on CPU"
# float16 works for a module without matrix products: it holds, and a position signal of 1/64 is violated.
run 0 summix_fp16 summix.pt --axis n=1..64 --input x:1,n,8 --output y:1,n,8 --dtype float16
says summix_fp16 out "y equivariant along n (float16, n in [1, 64]) holds after 100 cases"
run 1 summixleak_fp16 summixleak.pt --axis n=1..64 --input x:1,n,8 --output y:1,n,8 --dtype float16
says summixleak_fp16 out "lengths: n = 2"
run 2 low_output lowoutput.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8
says low_output err "output 'y' of lowoutput.pt has dtype BFloat16 but the module computes in float32"
run 2 bad_dtype encoder.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --dtype float8
says bad_dtype err "float8"

run 2 state_dict state_dict.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8
says state_dict err "state_dict.pt is not a TorchScript file"
run 2 python_file make_models.py --axis n=1..8 --input x:1,n,8 --output y:1,n,8
says python_file err "make_models.py is not a TorchScript file"
run 2 missing missing.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8
says missing err "missing.pt is neither a built-in module (mha, encoder-layer, decoder-layer) nor a file"

run 2 arguments encoder.pt --axis n=1..8 --input x:1,n,8 --input pad:1,n:mask --output y:1,n,8
says arguments err "forward of encoder.pt takes 1 argument, but 2 inputs are given (x, pad)"
says arguments err "Its schema: forward("
says arguments err "Tensor x) -> Tensor"

run 2 shape encoder.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,4
says shape err "): dim 2, of fixed size 4, has 8 (y:1,n,4)"
run 2 dtype argmax.pt --axis n=1..8 --input x:1,n,8 --output y:1,n
says dtype err "output 'y' of argmax.pt has dtype Long; expected a floating tensor"

# No wrapper: forward's parameters by name, one element of what it returns.
tokens=(--axis n=1..8 --input x:1,n,8 --input pad:1,n:mask --output y:1,n,8)
run 0 mha_file mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=x \
  --argument key_padding_mask=pad --output-index 0
says mha_file out "holds after 100 cases"
run 1 conformer conformer.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --argument input=x \
  --argument lengths=length:n --output-index 0
says conformer out "lengths: n = 2"
says conformer out "replay: permcheck audit-torch conformer.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --argument input=x --argument lengths=length:n --output-index 0"
run 0 lengths lengths.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --argument lengths=length:n \
  --argument src=x --output-index -1
run 0 named named.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --output-index hidden
run 0 named_pooled named.pt --axis n=1..8 --input x:1,n,8 --output y:1,n --output-index scores
run 2 named_key named.pt --axis n=1..8 --input x:1,n,8 --output y:1,n,8 --output-index last
says named_key err "--output-index last: forward of named.pt returned a dict without that key (its keys: "
run 2 mha_tuple mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=x --argument key_padding_mask=pad
says mha_tuple err "returned 2 values, but --output names 1 (y), read in that order (--output-index I answers"
run 2 mha_index mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=x --argument key_padding_mask=pad --output-index 2
says mha_index err "--output-index 2: forward of mha.pt returned 2 values: no index 2"
run 2 mha_missing mha.pt "${tokens[@]}" --argument query=x --argument value=x --argument key_padding_mask=pad --output-index 0
says mha_missing err "forward of mha.pt needs key (it has no default): give --argument key=INPUT"
run 2 mha_unknown mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=x \
  --argument mask=pad --output-index 0
says mha_unknown err "--argument mask: forward of mha.pt has no parameter mask"
run 2 mha_unnamed mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=x --argument key_padding_mask=pad --output-index 0 \
  --input extra:1,n,8
says mha_unnamed err "--input extra (named by no --argument, so passed as extra): forward of mha.pt has no parameter extra"
run 2 mha_source mha.pt "${tokens[@]}" --argument query=q --argument key=x --argument value=x
says mha_source err "--argument query=q: q is neither an input (x, pad) nor length:AXIS"
run 2 mha_axis mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=length:m
says mha_axis err "--argument value=length:m: no input has an axis 'm'"
run 2 mha_bool mha.pt "${tokens[@]}" --argument query=x --argument key=x --argument value=x --argument need_weights=pad
says mha_bool err "takes need_weights as bool, not a tensor"
run 2 mha_twice mha.pt "${tokens[@]}" --argument query=x --argument query=x --argument key=x --argument value=x
says mha_twice err "--argument query is given twice"
run 2 argument_form mha.pt "${tokens[@]}" --argument query
says argument_form err "--argument expects NAME=SOURCE"
run 2 argument_builtin mha --argument query=x
says argument_builtin err "--argument and --output-index apply to a TorchScript file, not to the built-in mha"

run 0 decoder decoder-layer
says decoder out "TransformerDecoderLayer(dim=8, heads=2, mask=none, eval, float64): y equivariant along n, invariant to m"
run 0 decoder_wide decoder-layer --dim 16 --heads 4 --cases 30
says decoder_wide out "y equivariant along n, invariant to m (float64, n in [1, 8], m in [1, 8]) holds after 30 cases"
run 1 decoder_causal decoder-layer --mask causal
says decoder_causal out "the axis at fault: n"

echo "torch_script_audit.sh: the TorchScript audits and their errors are as expected"
