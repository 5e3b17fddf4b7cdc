"""The issue's bar, on a GPU: for each shape, attn-tune tunes it (--no-db, a fresh CSV that records
the winner's median), then attn_tune.forward, given that CSV as its table (so the exact tuned
shape: the same config), is checked against float64 under FlashAttention's rule and timed from
Python the way the tool times (CUDA events around each call, L2 flushed before each, warm), and
the C++ example (examples/cpp, --example) does the same for the same table and shape.

    python3 examples/python/library_bar.py --tool build/attn-tune --example build/attn_tune_example

Prints one table: shape, config, tool ms, Python ms, C++ ms, their ratios to the tool's, each
one's accuracy, and ok when both are within 3% of the tool, accurate, and ran the tuned config
(MISS otherwise; the exit code is 1 when any shape misses). `python3 bench/run.py library-bar` runs it.
"""
import argparse
import csv
import math
import os
import re
import shlex
import subprocess
import sys
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
    for r in csv.DictReader(line for line in open(path) if not line.startswith("#")):
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


def cpp_result(example, table, s):
    """The C++ example's `result:` line for this table and shape, as a dict (or the failure)."""
    shape = ["--shape", f"{s['b']},{s['h']},{s['n']},{s['d']}"] + tool_args(s)[2:]
    run = subprocess.run([example, "--table", table, *shape], capture_output=True, text=True)
    line = next((x for x in run.stdout.splitlines() if x.startswith("result: ")), None)
    if line is None:
        return {"failed": f"exit {run.returncode}: {(run.stderr or run.stdout).strip()[-300:]}"}
    return dict(re.findall(r"(\w+)=(\S+)", line))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", default="build/attn-tune")
    ap.add_argument("--example", default="", help="the C++ example (attn_tune_example); empty: Python only")
    ap.add_argument("--shapes", default="sweeps/ci-smoke.csv")
    ap.add_argument("--extra", default="4,32,4096,128", help="B,H,N,D shapes beside the file's (';' between)")
    ap.add_argument("--tool-args", default="", help="more attn-tune options, e.g. '--family hopper'")
    ap.add_argument("--tolerance", type=float, default=0.03, help="allowed slowdown against the tool's time")
    args = ap.parse_args()
    shapes = list(shapes_of(args.shapes))
    for text in filter(None, args.extra.split(";")):
        b, h, n, d = (int(x) for x in text.split(","))
        shapes.append(dict(b=b, h=h, h_kv=h, n=n, n_kv=n, d=d, causal=False, dtype="bf16", layout="bhsd"))
    work = tempfile.mkdtemp(prefix="attn-tune-bar-")
    print(f"{'shape':44} {'config':28} {'tool ms':>8} {'py ms':>8} {'C++ ms':>8} {'py/tool':>7} {'C++/tool':>8} "
          f"{'py acc':>6} {'C++ acc':>7}  verdict", flush=True)
    misses = 0
    for i, s in enumerate(shapes):
        out = os.path.join(work, f"shape{i}.csv")
        subprocess.run([args.tool, *tool_args(s), *shlex.split(args.tool_args), "--no-db", "-q", "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
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
        del q, k, v, o
        torch.cuda.empty_cache()  # the C++ example allocates its own
        py_ok = error <= allowed and ran["source"] == "tuned" and f"{ran['family']} {ran['config']}" == config
        cpp = cpp_result(args.example, out, s) if args.example else None
        if cpp is None:
            cpp_ms, cpp_acc, cpp_ok = math.nan, "-", True
        elif "failed" in cpp:
            cpp_ms, cpp_acc, cpp_ok = math.nan, "error", False
            print(f"C++ example failed on {describe_shape(s)}: {cpp['failed']}", file=sys.stderr)
        else:
            cpp_ms = float(cpp["median_ms"])
            cpp_acc = cpp["check"]
            cpp_ok = cpp["check"] == "pass" and cpp["source"] == "tuned" and f"{cpp['family']} {cpp['config']}" == config
        limit = 1 + args.tolerance
        ok = py_ok and ms <= limit * tool_ms and cpp_ok and (cpp is None or cpp_ms <= limit * tool_ms)
        misses += not ok
        print(f"{describe_shape(s):44} {config:28} {tool_ms:8.4f} {ms:8.4f} {cpp_ms:8.4f} {ms / tool_ms:7.3f} "
              f"{cpp_ms / tool_ms:8.3f} {'pass' if error <= allowed else 'FAIL':>6} {cpp_acc:>7}  "
              f"{'ok' if ok else 'MISS'}{'' if ran['source'] == 'tuned' else ' (python ran ' + ran['source'] + ')'}",
              flush=True)
    print(f"{len(shapes) - misses} of {len(shapes)} shapes within {100 * args.tolerance:.0f}% of attn-tune, accurate, "
          f"on the tuned config; results in {work}")
    return 1 if misses else 0


def describe_shape(s):
    text = f"{s['b']},{s['h']},{s['n']},{s['d']}"
    if s["h_kv"] != s["h"]:
        text += f" kv_heads {s['h_kv']}"
    if s["n_kv"] != s["n"]:
        text += f" kv_len {s['n_kv']}"
    return text + f" {s['dtype']} {s['layout']}" + (" causal" if s["causal"] else "")


if __name__ == "__main__":
    sys.exit(main())
