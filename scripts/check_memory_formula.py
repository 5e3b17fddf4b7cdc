#!/usr/bin/env python3
"""Checks attn-tune's memory formula against a materializing attention that allocates for itself
(issue 11, item 15), not against buffers sized by the formula: PyTorch's own math path, its peak
measured with torch.cuda.max_memory_allocated. Run on the GPU machine (needs PyTorch and a CUDA
GPU; not run in CI):

  python3 scripts/check_memory_formula.py [--shape 2,8,2048,64] [--dtype bf16] [--tolerance 0.05]

The formula (README, "How it measures"): B*H*Nq*Nkv*(4 + element size) bytes beyond Q, K, V, O
(fp32 scores, probabilities in the input type). Here the scores come from PyTorch's matmul in the
input type, widened to fp32 (both exist for a moment: 2 + 4 bytes), are turned into probabilities
in place and narrowed to the input type (4 + 2 bytes): the peak should be the formula. Exit 0
when the measured peak is within the tolerance of it, 1 otherwise.
"""
import argparse
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="2,8,2048,64")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--tolerance", type=float, default=0.05)
    a = ap.parse_args()
    b, h, n, d = (int(x) for x in a.shape.split(","))
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    elem = 2
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dt) for _ in range(3))
    out = torch.empty_like(q)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        scores = torch.matmul(q, k.transpose(-1, -2)).float().mul_(d ** -0.5)  # fp32 scores
        scores.sub_(scores.amax(dim=-1, keepdim=True)).exp_()  # softmax in place
        scores.div_(scores.sum(dim=-1, keepdim=True))
        probs = scores.to(dt)  # probabilities in the input type
        del scores
        torch.matmul(probs, v, out=out)
        del probs
    torch.cuda.synchronize()
    measured = torch.cuda.max_memory_allocated() - base
    formula = b * h * n * n * (4 + elem)
    low, high = formula * (1 - a.tolerance), formula * (1 + a.tolerance)
    ok = low <= measured <= high
    print(f"shape {a.shape} {a.dtype}: formula {formula / 2**20:.1f} MiB, PyTorch's peak {measured / 2**20:.1f} MiB "
          f"(allowed {low / 2**20:.1f} to {high / 2**20:.1f}): {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
