#!/usr/bin/env python3
"""Two builds of attn-tune side by side in one process: a restructuring's before and after.

Each side is a Python package folder and its libattn_tune.so, loaded under its own module name
(attn_tune_a, attn_tune_b), with its own tuned table. For each shape both sides make the problem
once with their own package (describe, make_problem), run the config their table names through
their own C library on the same Q, K, V, and are timed by bench/peers.py's rule (time_ms: a
warm-up, L2 cleared before each run, CUDA events, the median), alternating A, B, A, B for
--rounds rounds, so a clock that drifts moves both. Each side's output is compared with the
other's and with SDPA's first. Prints one table: shape, each side's config (the C library's
choice), each round's median in ms, and B's median of rounds over A's.

    python3 bench/ab_libs.py --a DIR_A/python:LIB_A:TABLE_A --b DIR_B/python:LIB_B:TABLE_B \\
        --shape 4,32,4096,128 [--shape 16,16,1024,64,causal ...] [--rounds 3]

A package's torch custom op (torch.ops.attn_tune.forward) can be registered once per process:
an older package that registers it at import must have its op name edited in the copy it is
loaded from (house_check.sh does that). Only the C call is timed here; the op is not called.
"""
import argparse
import importlib.util
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def load_side(name, spec):
    """The package at DIR/attn_tune loaded as module `name`, its library LIB, a context on TABLE."""
    try:
        folder, lib, table = spec.split(":")
    except ValueError:
        sys.exit(f"ab_libs: {spec!r} is not DIR:LIB:TABLE")
    for path in (os.path.join(folder, "attn_tune", "__init__.py"), lib, table):
        if not os.path.exists(path):
            sys.exit(f"ab_libs: {path} does not exist (from {spec!r})")
    os.environ["ATTN_TUNE_LIBRARY"] = os.path.abspath(lib)  # read when the package loads its library
    init = os.path.join(folder, "attn_tune", "__init__.py")
    module_spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[os.path.dirname(init)])
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    module._capi.library()  # load it now, while ATTN_TUNE_LIBRARY names this side's
    return module, os.path.abspath(table)


def parse_shape(text):
    fields = text.split(",")
    causal = fields[-1] == "causal"
    if causal:
        fields = fields[:-1]
    try:
        b, h, n, d = (int(x) for x in fields)
    except ValueError:
        sys.exit(f"ab_libs: --shape {text!r} is not B,H,N,D[,causal]")
    return b, h, n, d, causal


def side_call(pkg, table, q, k, v, causal, cache_dir):
    """(call, config, O): the C call with the problem, O, LSE and the stream made once."""
    import torch

    qi, ki, vi = (pkg.tensors.describe(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    problem = pkg.tensors.make_problem(qi, ki, vi, causal)
    ctx = pkg.Context(0, table=table, cache_dir=cache_dir)  # each side its own kernel cache
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream().cuda_stream
    choice = ctx.forward(qi.pointer, ki.pointer, vi.pointer, o.data_ptr(), lse.data_ptr(), problem, stream)

    def call():
        ctx.forward(qi.pointer, ki.pointer, vi.pointer, o.data_ptr(), lse.data_ptr(), problem, stream)

    return call, f"{choice['family']} {choice['config']} ({choice['source']})", o


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="DIR:LIB:TABLE of the 'before' side")
    ap.add_argument("--b", required=True, help="DIR:LIB:TABLE of the 'after' side")
    ap.add_argument("--shape", action="append", required=True, help="B,H,N,D[,causal] (repeat)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache-dir", default="/tmp/ab_libs_cache", help="each side's kernel cache: DIR/a, DIR/b")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit(f"ab_libs: --rounds {args.rounds} must be at least 1")
    shapes = [parse_shape(s) for s in args.shape]

    import torch
    import torch.nn.functional as F

    from peers import time_ms

    sides = [load_side("attn_tune_a", args.a), load_side("attn_tune_b", args.b)]
    print(f"# {torch.cuda.get_device_name()}; A {args.a}; B {args.b}; rule: bench/peers.py time_ms, "
          f"{args.rounds} rounds A,B alternating; bf16 [B,H,N,D]")
    print("| shape | config A | config B | " + " | ".join(f"A#{i + 1} | B#{i + 1}" for i in range(args.rounds))
          + " | B/A | max abs A-B | max abs vs SDPA |")
    print("|---" * (5 + 2 * args.rounds) + "|")
    for b, h, n, d, causal in shapes:
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
        calls = [side_call(pkg, table, q, k, v, causal, os.path.join(args.cache_dir, side))
                 for (pkg, table), side in zip(sides, "ab")]
        torch.cuda.synchronize()
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        diff_ab = (calls[0][2].float() - calls[1][2].float()).abs().max().item()
        diff_ref = max((c[2].float() - ref.float()).abs().max().item() for c in calls)
        times = [[], []]
        for _ in range(args.rounds):
            for i, (call, _, _) in enumerate(calls):
                call()
                times[i].append(time_ms(call)[0])
        cells = " | ".join(f"{a:.4f} | {b_:.4f}" for a, b_ in zip(*times))
        ratio = statistics.median(times[1]) / statistics.median(times[0])
        shape = f"{b},{h},{n},{d}" + (" causal" if causal else "")
        print(f"| {shape} | {calls[0][1]} | {calls[1][1]} | {cells} | {ratio:.3f} | {diff_ab:.2e} | {diff_ref:.2e} |",
              flush=True)


if __name__ == "__main__":
    main()
