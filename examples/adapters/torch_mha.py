#!/usr/bin/env python3
"""A permcheck adapter for PyTorch's own torch.nn.MultiheadAttention (any torch 2.x).

Protocol as in attention.py next to this file. By default the layer runs in eval mode without a mask, and is
permutation-equivariant: the audit must say `holds`. --causal adds a causal mask (the audit must say
`violated`); --train leaves dropout on (the audit must say `nondeterministic`, never `violated`).

    permcheck audit --exec "python3 examples/adapters/torch_mha.py" --dim 8 --dtype float32
    permcheck audit --exec "python3 examples/adapters/torch_mha.py --causal" --dim 8 --dtype float32
    permcheck audit --exec "python3 examples/adapters/torch_mha.py --train" --dim 8 --dtype float32
"""
import argparse
import json
import sys
import warnings

warnings.filterwarnings("ignore")  # torch without numpy warns on import; stderr only, but keep logs short
import torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, required=True, help="embedding width: permcheck's --dim")
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--causal", action="store_true", help="causal attention mask")
    parser.add_argument("--train", action="store_true", help="train mode: dropout stays on")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    dtype = torch.float32 if args.dtype == "float32" else torch.float64
    mha = torch.nn.MultiheadAttention(args.dim, args.heads, dropout=args.dropout, batch_first=True).to(dtype)
    mha.train(args.train)

    for line in sys.stdin:
        request = json.loads(line)
        try:
            x = torch.tensor(request["x"], dtype=dtype).unsqueeze(0)  # (1, n, d)
            n = x.shape[1]
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if args.causal else None
            with torch.no_grad():
                y, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
            answer = {"id": request["id"], "y": y[0].double().tolist()}
        except Exception as e:
            answer = {"id": request["id"], "error": repr(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
