#!/usr/bin/env python3
"""Decode beside the peers, one timing rule, one process: for each decode shape attn-tune tunes it
(--no-db, a fresh CSV), then the tuned config through the Python package (attn_tune.forward with
that CSV as its table), FlexAttention compiled with max-autotune (its decoding path takes N_q < 128)
and SDPA's cuDNN and flash backends (enable_gqa; causal rows with a bottom-right mask) are each
checked against float32 math and timed by triton.testing.do_bench (median, L2 cleared before each
run). The same process measures the device-to-device copy bandwidth (2 GiB); each row says the
bytes decode must move (Q, K, V read, O and LSE written), ours as GB/s and as a fraction of that
bandwidth, and each peer's time and our ratio to the fastest peer.

    python3 bench/decode.py --tool build-gpu/attn-tune [--shapes B,H,HKV,NQ,NKV,D[,causal];...]
                            [--sweep sweeps/llm-decode.csv [--rows 0-5]] [--out DIR]

Writes DIR/decode.csv and DIR/decode.md (DIR must be new or empty), and prints the table.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="decode-triton-"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="decode-inductor-"))
import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import attn_tune

# The two rows, then Llama-3-8B/70B-like decode rows (B, H, H_kv, N_q, N_kv, D, causal).
SHAPES = [(8, 32, 8, 1, 8192, 128, False), (64, 32, 8, 16, 4096, 128, True), (1, 32, 8, 1, 32768, 128, False),
          (32, 64, 8, 1, 4096, 128, False)]


def median_ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def copy_gbs():
    x = torch.empty(2 * 1024**3, device="cuda", dtype=torch.uint8)
    y = torch.empty_like(x)
    return 2 * x.numel() / median_ms(lambda: y.copy_(x)) / 1e6  # bytes read + written, GB/s


def parse_shapes(text):
    out = []
    for item in filter(None, text.split(";")):
        v = item.split(",")
        out.append(tuple(int(x) for x in v[:6]) + ((len(v) > 6 and v[6] in ("1", "causal")),))
    return out


def sweep_shapes(path, rows):
    """The sweep file's rows (bf16, [B,H,N,D] only), those of `rows` ("0-5,9") when given."""
    out = []
    for r in csv.DictReader(line for line in open(path) if not line.startswith("#")):
        h = int(r["H"])
        n = int(r["N"])
        out.append((int(r["B"]), h, int(r["kv_heads"] or h), n, int(r["kv_len"] or n), int(r["D"]), r["causal"] == "1"))
    if not rows:
        return out
    keep = set()
    for part in rows.split(","):
        a, _, b = part.partition("-")
        keep.update(range(int(a), int(b or a) + 1))
    return [s for i, s in enumerate(out) if i in keep]


def tune(tool, s, path):
    b, h, hk, nq, nk, d, causal = s
    argv = [tool, "--shape", f"{b},{h},{nq},{d}", "--kv-heads", str(hk), "--kv-len", str(nk), "--no-db", "-q",
            "--out", path] + (["--causal"] if causal else [])
    t0 = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - t0
    for r in csv.DictReader(line for line in open(path) if not line.startswith("#")):
        if r["rank"] == "1":
            return f"{r['family']} {r['config']}", float(r["median_ms"]), seconds
    raise SystemExit(f"{path}: no ranked variant")


def reference(q, k, v, causal):
    group = q.shape[1] // k.shape[1]
    kf, vf = k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1)
    s = (q.float() @ kf.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        nq, nk = q.shape[2], k.shape[2]
        i = torch.arange(nq, device=q.device)[:, None]
        s = s.masked_fill(torch.arange(nk, device=q.device)[None, :] > i + nk - nq, -math.inf)
    return torch.softmax(s, -1) @ vf


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", default="build-gpu/attn-tune")
    ap.add_argument("--shapes", default="", help="B,H,HKV,NQ,NKV,D[,causal] separated by ';' (default: the issue's)")
    ap.add_argument("--sweep", default="", help="a sweep file's rows instead (e.g. sweeps/llm-decode.csv)")
    ap.add_argument("--rows", default="", help="with --sweep: only these rows, e.g. 0-5,9")
    ap.add_argument("--out", default="", help="a new or empty folder for decode.csv and decode.md")
    ap.add_argument("--no-flex", action="store_true", help="leave FlexAttention out (its compile takes a minute)")
    args = ap.parse_args()
    shapes = (sweep_shapes(args.sweep, args.rows) if args.sweep else parse_shapes(args.shapes) if args.shapes
              else SHAPES)
    if args.out:
        if os.path.exists(args.out) and os.listdir(args.out):
            raise SystemExit(f"bench/decode.py: '{args.out}' is not empty; give a new folder")
        os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="attn-tune-decode-")
    bandwidth = copy_gbs()
    print(f"copy bandwidth (device to device, 2 GiB, same process): {bandwidth:.0f} GB/s", flush=True)
    rows = []
    for i, s in enumerate(shapes):
        b, h, hk, nq, nk, d, causal = s
        table = os.path.join(work, f"shape{i}.csv")
        config, tool_ms, tune_s = tune(args.tool, s, table)
        q = torch.randn(b, h, nq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hk, nk, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hk, nk, d, device="cuda", dtype=torch.bfloat16)
        want = reference(q, k, v, causal)
        moved = 2 * (q.numel() * 2 + k.numel() + v.numel()) + 4 * b * h * nq  # Q, K, V read, O written (bf16), LSE
        runs = {"attn-tune": lambda: attn_tune.forward(q, k, v, causal=causal, table=table)}
        if not args.no_flex:
            mask = None
            if causal:
                offset = nk - nq
                mask = create_block_mask(lambda bb, hh, qi, ki: qi + offset >= ki, None, None, nq, nk)
            flex = torch.compile(flex_attention, mode="max-autotune-no-cudagraphs", dynamic=False)
            runs["flex"] = lambda: flex(q, k, v, block_mask=mask, enable_gqa=True)
        bias = None
        if causal:
            from torch.nn.attention.bias import causal_lower_right
            bias = causal_lower_right(nq, nk)
        for name, backend in (("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION), ("sdpa-flash", SDPBackend.FLASH_ATTENTION)):
            def sdpa(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)
            runs[name] = sdpa
        times, errors = {}, {}
        for name, fn in runs.items():
            try:
                t0 = time.monotonic()
                got = fn()
                errors[name] = (got.float() - want).abs().max().item()
                times[name] = median_ms(fn)
                if name == "flex":
                    errors[name + "_compile_s"] = time.monotonic() - t0
            except Exception as e:  # a peer that does not take the shape: said, not fatal
                times[name] = math.nan
                errors[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}" if str(e) else type(e).__name__
        peers = [t for n, t in times.items() if n != "attn-tune" and not math.isnan(t)]
        best_peer = min(peers) if peers else math.nan
        ours = times["attn-tune"]
        row = dict(shape=f"{b},{h}/{hk},{nq},{nk},{d}" + (" causal" if causal else ""), config=config,
                   tune_s=round(tune_s, 1), tool_ms=tool_ms, ours_ms=ours, ours_err=errors["attn-tune"],
                   mib_kv=round((k.numel() + v.numel()) * 2 / 2**20, 1), gbs=moved / ours / 1e6,
                   of_copy=moved / ours / 1e6 / bandwidth, best_peer_ms=best_peer, vs_best_peer=best_peer / ours)
        for n in runs:
            if n != "attn-tune":
                row[f"{n}_ms"] = times[n]
                row[f"{n}_err"] = errors[n]
        rows.append(row)
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
        del q, k, v, want
        torch.cuda.empty_cache()
    head = ["shape", "K+V MiB", "config", "ours ms", "GB/s", "of copy", "flex ms", "cudnn ms", "flash ms", "best peer / ours"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([r["shape"], f"{r['mib_kv']:.0f}", r["config"], f"{r['ours_ms']:.4f}",
                                         f"{r['gbs']:.0f}", f"{r['of_copy']:.2f}", f"{r.get('flex_ms', math.nan):.4f}",
                                         f"{r['sdpa-cudnn_ms']:.4f}", f"{r['sdpa-flash_ms']:.4f}",
                                         f"{r['vs_best_peer']:.2f}"]) + " |")
    rule = (f"Timed in one process by triton.testing.do_bench (median, L2 cleared before each run); copy bandwidth "
            f"{bandwidth:.0f} GB/s measured in the same process.")
    print("\n".join(lines) + "\n" + rule)
    if args.out:
        with open(os.path.join(args.out, "decode.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=sorted({k for r in rows for k in r}, key=lambda k: list(rows[0]).index(k)
                                                    if k in rows[0] else 99))
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(args.out, "decode.md"), "w") as f:
            f.write("\n".join(lines) + "\n\n" + rule + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
