#!/usr/bin/env python3
"""Checks attn-tune's memory formula against a materializing attention that allocates for itself
(issue 11, item 15), not against buffers sized by the formula: PyTorch's own math path, its peak
measured with torch.cuda.max_memory_allocated. Run on the GPU machine (needs PyTorch and a CUDA
GPU; ctest runs it as gpu_memory_formula_pytorch, label gpu):

  python3 scripts/check_memory_formula.py [--shape 2,8,2048,64] [--dtype bf16] [--tolerance 0.05]

The formula (docs/measurement.md, "How it measures"): B*H*Nq*Nkv*(4 + element size) bytes beyond Q, K, V, O
(fp32 scores, probabilities in the input type). Here the scores come from PyTorch's matmul in the
input type, widened to fp32 (both exist for a moment: 2 + 4 bytes), are turned into probabilities
in place and narrowed to the input type (4 + 2 bytes): the peak should be the formula. For
comparison it also prints the peak of PyTorch's SDPA math backend (not checked: it keeps the
scores in the input type). Exit 0 when the measured peak is within the tolerance of the formula,
1 otherwise, 77 (skipped) when PyTorch or a CUDA device is missing (a missing device is 1 when
ATTN_TUNE_REQUIRE_GPU=1 asks for a GPU).
"""
import argparse
import os
import sys

SKIPPED = 77  # ctest's SKIP_RETURN_CODE for this script


def skip(why, gpu_missing=False):
    if gpu_missing and os.environ.get("ATTN_TUNE_REQUIRE_GPU") == "1":
        print(f"error: {why}, and ATTN_TUNE_REQUIRE_GPU=1")
        return 1
    print(f"skipped: {why}")
    return SKIPPED


def sdpa_math_peak(q, k, v):
    """Peak extra memory of PyTorch's own math backend, or None where this PyTorch lacks it."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base - out.numel() * out.element_size()
    del out
    return peak


def main():
    global torch
    try:
        import torch
    except ImportError as e:
        return skip(f"PyTorch is not importable ({e})")
    if not torch.cuda.is_available():
        return skip("PyTorch sees no CUDA device", gpu_missing=True)
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
    # cuBLAS takes its workspace (32 MiB on Hopper) from PyTorch's allocator at the first matmul and
    # keeps it: take it before measuring, so the peak is the attention's own.
    torch.matmul(q[:1, :1], k[:1, :1].transpose(-1, -2))
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
    math_peak = sdpa_math_peak(q, k, v)
    if math_peak is not None:
        print(f"for comparison, PyTorch's SDPA math backend: peak {math_peak / 2**20:.1f} MiB beyond Q, K, V, O "
              f"({math_peak / (b * h * n * n):.2f} bytes per score; the formula counts {4 + elem})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
