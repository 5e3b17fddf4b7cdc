#!/usr/bin/env python3
"""The host cost of one attention call from Python (issue 19 item 4): attn_tune.forward (the eager
fast path of the custom op), torch.ops.attn_tune.forward (the op's dispatch), the raw C call
through ctypes (problem, outputs and stream made once), PyTorch's SDPA with the flash and cuDNN
backends, and two torch.empty (what a call must allocate), at one small shape (default
1,8,128,64 bf16: kernels of a few microseconds, so the host is the bottleneck).

Each path: --warmup calls, then --calls calls enqueued back to back, --rounds times, the paths
taking turns (each round times every path once, a tenth of the warm-up before each). host us: the
loop's wall clock / calls, before synchronizing (the median of the rounds); wall us: with the
synchronization; events us: CUDA events around the loop / calls (the GPU's time per call, which
equals the host's when the host is slower). Prints one table, then `result: ...` for scripts;
with --bar US the exit code is 1 when attn_tune.forward's host us exceeds it.

    PYTHONPATH=python ATTN_TUNE_LIBRARY=build-gpu/libattn_tune.so python3 bench/host_cost.py [--shape 1,8,128,64]
"""
import argparse
import ctypes
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import attn_tune
from attn_tune import _capi
from attn_tune.tensors import describe, make_problem


def measure(fn, calls, warmup, rounds):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    host, wall, events = [], [], []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        end.record()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) / calls * 1e6)
        wall.append((t2 - t0) / calls * 1e6)
        events.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(host), statistics.median(wall), statistics.median(events)


def raw_call(q, k, v, causal):
    """The C call alone: the problem, O, LSE and the stream made once, as a C++ caller would."""
    ctx = attn_tune.context(q.device.index or 0, None)
    problem = make_problem(describe(q, "q"), describe(k, "k"), describe(v, "v"), causal)
    o, lse = torch.empty_like(q), torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream().cuda_stream
    fn, handle, ref = ctx._lib.attn_tune_forward, ctx._handle, ctypes.byref(problem)
    args = (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr())

    def call():
        if fn(handle, *args, ref, stream, None) != _capi.OK:
            _capi.check(_capi.INTERNAL)

    return call


def sdpa(q, k, v, causal, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = getattr(SDPBackend, backend)

    def call():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def run(*measure_args):
        with sdpa_kernel([chosen]):
            call()  # raises here when the backend cannot run the shape
            return measure(call, *measure_args)

    return run


def breakdown(q, k, v, causal, args):
    """The pieces of attn_tune.forward's eager path, each alone (host us per call, a loop's)."""
    from attn_tune import _call_cache, tensors

    attn_tune.forward(q, k, v, causal=causal)  # the entry exists
    call = attn_tune._torch_call
    key = _call_cache.call_key(q, k, v, causal, None, None)
    entry = call._entries[key]
    ops = call._ops
    pieces = [
        ("empty loop (subtract from the rest)", lambda: None),
        ("variant_of((-1, -1), 0.0)", lambda: tensors.variant_of((-1, -1), 0.0)),
        ("_is_torch(q)", lambda: attn_tune._is_torch(q)),
        ("_normalized", lambda: attn_tune._normalized(causal, None, None)),
        ("_eager_ok(q, k, v)", lambda: attn_tune._eager_ok(q, k, v)),
        ("call_key", lambda: _call_cache.call_key(q, k, v, causal, None, None)),
        ("call_key + dict lookup", lambda: call._entries.get(_call_cache.call_key(q, k, v, causal, None, None))),
        ("3 x tensor.device", lambda: (q.device, k.device, v.device)),
        ("3 x (shape, stride())", lambda: (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride())),
        ("5 x data_ptr + raw stream", lambda: (q.data_ptr(), k.data_ptr(), v.data_ptr(), q.data_ptr(),
                                               k.data_ptr(), ops.raw_stream(entry.device_index))),
        ("_run of the prepared entry", lambda: call._run(entry, q, k, v, False)),
        ("_torch_call (key, lookup, run)", lambda: call(q, k, v, causal, None, None)),
        ("forward_with_lse", lambda: attn_tune.forward_with_lse(q, k, v, causal)),
    ]
    print(f"{'piece of attn_tune.forward':36} {'host us':>9}")
    for name, fn in pieces:
        host, _, _ = measure(fn, *args)
        print(f"{name:36} {host:9.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="1,8,128,64", help="B,H,N,D (default 1,8,128,64)")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bar", type=float, default=None, help="exit 1 when attn_tune.forward's host us exceeds it")
    ap.add_argument("--breakdown", action="store_true",
                    help="also time the pieces of attn_tune.forward's call alone (host us each)")
    a = ap.parse_args()
    b, h, n, d = (int(x) for x in a.shape.split(","))
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ran = attn_tune.context(0).choose(make_problem(describe(q, "q"), describe(k, "k"), describe(v, "v"), a.causal))
    args = (a.calls, a.warmup, a.rounds)  # the breakdown's
    paths = [
        ("attn_tune.forward", lambda *m: measure(lambda: attn_tune.forward(q, k, v, causal=a.causal), *m)),
        ("torch.ops.attn_tune.forward", lambda *m: measure(
            lambda: torch.ops.attn_tune.forward(q, k, v, a.causal, "", 0.0), *m)),
        ("raw C call (ctypes)", lambda *m: measure(raw_call(q, k, v, a.causal), *m)),
        ("SDPA flash", sdpa(q, k, v, a.causal, "FLASH_ATTENTION")),
        ("SDPA cuDNN", sdpa(q, k, v, a.causal, "CUDNN_ATTENTION")),
        ("2 x torch.empty (allocation only)", lambda *m: measure(
            lambda: (torch.empty_like(q), torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)), *m)),
    ]
    print(f"host cost per call: B{b} H{h} N{n} D{d} bf16{' causal' if a.causal else ''} on "
          f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, attn_tune {ran['family']} {ran['config']} "
          f"({ran['source']}); {a.calls} calls x {a.rounds} rounds, the paths in turn each round, after "
          f"{a.warmup} warm-up calls (then {a.warmup // 10} before each round)")
    print(f"{'path':36} {'host us':>9} {'wall us':>9} {'events us':>10}")
    # The rounds go round the paths (path 1, 2, ..., then again), so that no path is timed at
    # another moment of the process (its first calls, a clock change) than the others.
    rounds, failed = {name: [] for name, _ in paths}, {}
    for r in range(a.rounds):
        for name, run in paths:
            if name in failed:
                continue
            try:
                rounds[name].append(run(a.calls, a.warmup if r == 0 else a.warmup // 10, 1))
            except RuntimeError as e:
                failed[name] = str(e).splitlines()[0][:80]
    results = {}
    for name, _ in paths:
        if name in failed:
            print(f"{name:36} {'n/a':>9}  ({failed[name]})")
            continue
        host, wall, events = (statistics.median(x[i] for x in rounds[name]) for i in range(3))
        results[name] = host
        print(f"{name:36} {host:9.1f} {wall:9.1f} {events:10.1f}")
    if a.breakdown:
        breakdown(q, k, v, a.causal, args)
    ours = results.get("attn_tune.forward")
    verdict = "n/a" if a.bar is None or ours is None else ("ok" if ours <= a.bar else "MISS")
    print("result: " + " ".join(f"{k.split(' (')[0].replace(' ', '_')}={v:.1f}" for k, v in results.items())
          + (f" bar={a.bar} verdict={verdict}" if a.bar is not None else ""))
    return 1 if verdict == "MISS" else 0


if __name__ == "__main__":
    sys.exit(main())
