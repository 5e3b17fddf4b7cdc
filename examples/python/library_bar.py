"""The issue's bar, on a GPU: for each shape, attn-tune tunes it (its CSV records the winner's
median), then attn_tune.forward, given that CSV as its table (so the exact tuned shape: the same
config), is checked against float64 under FlashAttention's rule and timed from Python the way the
tool times (CUDA events around each call, L2 flushed before each, median of >= 20, warm).

    python3 examples/python/library_bar.py --tool build/attn-tune [--shapes sweeps/ci-smoke.csv]

Prints one line per shape: config, tool ms, Python ms, ratio, error and allowed error.
"""
import argparse
import csv
import math
import os
import shlex
import subprocess
import tempfile

import torch

import attn_tune
from attn_tune.tensors import describe, make_problem
from timing import median_ms


def shapes_of(path):
    rows = [r for r in csv.DictReader(line for line in open(path) if not line.startswith("#"))]
    for r in rows:
        h = int(r["H"])
        n = int(r["N"])
        yield dict(b=int(r["B"]), h=h, h_kv=int(r["kv_heads"] or h), n=n, n_kv=int(r["kv_len"] or n), d=int(r["D"]),
                   causal=r["causal"] == "1", dtype=r["dtype"] or "bf16", layout=r["layout"] or "bhsd")


def tool_args(s):
    return ["--shape", f"{s['b']},{s['h']},{s['n']},{s['d']}", "--kv-heads", str(s["h_kv"]), "--kv-len", str(s["n_kv"]),
            "--dtype", s["dtype"], "--layout", s["layout"]] + (["--causal"] if s["causal"] else [])


def winner(path):
    for r in csv.DictReader(open(path)):
        if r["rank"] == "1":
            return f"{r['family']} {r['config']}", float(r["median_ms"])
    raise SystemExit(f"{path}: no ranked variant")


def reference_error(q, k, v, o, causal, dtype):
    """max |O - O_fp64| and FlashAttention's allowed error, a few heads at a time."""
    group = q.shape[1] // k.shape[1]
    error = naive_error = 0.0
    n_q, n_kv = q.shape[2], k.shape[2]
    mask = None
    if causal:
        i = torch.arange(n_q, device=q.device)[:, None]
        mask = torch.arange(n_kv, device=q.device)[None, :] > i + n_kv - n_q
    scale = q.shape[-1] ** -0.5
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            qh, kh, vh = q[b, h], k[b, h // group], v[b, h // group]
            s = (qh.double() @ kh.double().T) * scale
            s_low = ((qh * scale) @ kh.T).float()
            if mask is not None:
                s, s_low = s.masked_fill(mask, -math.inf), s_low.masked_fill(mask, -math.inf)
            exact = torch.nan_to_num(torch.softmax(s, -1)) @ vh.double()
            naive = torch.nan_to_num(torch.softmax(s_low, -1)).to(dtype) @ vh
            error = max(error, (o[b, h].double() - exact).abs().max().item())
            naive_error = max(naive_error, (naive.double() - exact).abs().max().item())
    return error, 2 * naive_error + 1e-4


def python_ms(q, k, v, causal, table, reps=40):
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, dtype=torch.float32,
                        device="cuda")

    def before():
        # Keep the GPU busy while Python enqueues (as the tool's launches are enqueued ahead of the
        # GPU), so the events measure the kernel, not the interpreter: a sleep, then the L2 flush.
        torch.cuda._sleep(1_000_000)
        flush.fill_(1.0)

    return median_ms(lambda: attn_tune.forward(q, k, v, causal=causal, table=table), reps, before=before)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", default="build/attn-tune")
    ap.add_argument("--shapes", default="sweeps/ci-smoke.csv")
    ap.add_argument("--extra", default="4,32,4096,128", help="B,H,N,D shapes beside the file's (';' between)")
    ap.add_argument("--tool-args", default="", help="more attn-tune options, e.g. '--family hopper'")
    args = ap.parse_args()
    shapes = list(shapes_of(args.shapes))
    for text in filter(None, args.extra.split(";")):
        b, h, n, d = (int(x) for x in text.split(","))
        shapes.append(dict(b=b, h=h, h_kv=h, n=n, n_kv=n, d=d, causal=False, dtype="bf16", layout="bhsd"))
    work = tempfile.mkdtemp(prefix="attn-tune-bar-")
    print(f"{'shape':40} {'config':22} {'tool ms':>9} {'python ms':>9} {'ratio':>6} {'error':>9} {'allowed':>9}")
    for i, s in enumerate(shapes):
        out = os.path.join(work, f"shape{i}.csv")
        subprocess.run([args.tool, *tool_args(s), *shlex.split(args.tool_args), "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        config, tool_ms = winner(out)
        dtype = torch.bfloat16 if s["dtype"] == "bf16" else torch.float16

        def make(heads, n):
            if s["layout"] == "bshd":
                return torch.randn(s["b"], n, heads, s["d"], device="cuda", dtype=dtype).transpose(1, 2)
            return torch.randn(s["b"], heads, n, s["d"], device="cuda", dtype=dtype)

        q, k, v = make(s["h"], s["n"]), make(s["h_kv"], s["n_kv"]), make(s["h_kv"], s["n_kv"])
        o = attn_tune.forward(q, k, v, causal=s["causal"], table=out)
        problem = make_problem(describe(q, "q"), describe(k, "k"), describe(v, "v"), s["causal"])
        ran = attn_tune.context(0, out).choose(problem)
        error, allowed = reference_error(q, k, v, o, s["causal"], dtype)
        ms = python_ms(q, k, v, s["causal"], out)
        name = " ".join(tool_args(s)[1::2])
        ok = "ok" if error <= allowed and ms <= 1.03 * tool_ms and ran["source"] == "tuned" else "MISS"
        print(f"{name:40} {config:22} {tool_ms:9.4f} {ms:9.4f} {ms / tool_ms:6.3f} {error:9.2e} {allowed:9.2e} "
              f"{ran['source']} {ok}")


if __name__ == "__main__":
    main()
