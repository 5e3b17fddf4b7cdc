#!/usr/bin/env python3
"""Charts from attn-tune results CSVs (matplotlib).

  scripts/plot.py lines RESULTS.csv [MORE.csv ...] [--peers peers.csv] --out tflops.png
      TFLOPS against sequence length, one panel per (head dim, causal), one line per top config
      (the configs that won most shapes) and one for the tuned best; peers (peers.py's CSV or a
      vs_pytorch.py CSV) as dashed lines where they have the shape.
  scripts/plot.py heatmap RESULTS.csv [--shape B,H,N,D] [--causal] [--family F] --out heatmap.png
      BLOCK_M x BLOCK_N grid of the best TFLOPS over warps and stages (and families, unless
      --family picks one), for one shape. Configs are named with their family everywhere.
"""
import argparse
import collections
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_results(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    return rows


def label(r):
    """A config with its family: the same tile numbers are different kernels in fa2 and wgmma."""
    return (r.get("family") or "fa2") + " " + r["config"]


def shape_of(r):
    return (int(r["batch"]), int(r["heads"]), int(r["q_len"]), int(r["head_dim"]), int(r["causal"]))


def read_peers(path):
    """peers.py rows (peer,dtype,B,H,N,D,causal,ms,tflops,...) -> {(peer, B,H,N,D,causal): tflops}."""
    out = {}
    if not path:
        return out
    with open(path) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if "peer" in r:
                key = (r["peer"], int(r["B"]), int(r["H"]), int(r["N"]), int(r["D"]), int(r["causal"]))
                out[key] = float(r["tflops"])
    return out


def lines(args):
    rows = [r for r in read_results(args.results) if r["status"] == "ok"]
    if not rows:
        sys.exit("no ok rows in " + ", ".join(args.results))
    by_shape = collections.defaultdict(list)
    for r in rows:
        by_shape[shape_of(r)].append(r)
    best = {s: min(rs, key=lambda r: int(r["rank"]) if int(r.get("rank") or 0) > 0 else 1e9) for s, rs in by_shape.items()}
    wins = collections.Counter(label(b) for b in best.values())
    top = [c for c, _ in wins.most_common(args.top)]
    panels = sorted({(s[3], s[4]) for s in by_shape})
    peers = read_peers(args.peers)
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 4.0 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(panels):]:
        ax.axis("off")
    for ax, (d, causal) in zip(flat, panels):
        shapes = sorted((s for s in by_shape if s[3] == d and s[4] == causal), key=lambda s: (s[2], s[0], s[1]))
        xs = [s[2] for s in shapes]
        labels = [f"{s[0]}x{s[1]}x{s[2]}" for s in shapes]
        ax.plot(range(len(xs)), [float(best[s]["tflops"]) for s in shapes], "o-", lw=2.5, color="black", label="attn-tune best")
        for c in top:
            ys = []
            for s in shapes:
                m = [float(r["tflops"]) for r in by_shape[s] if label(r) == c]
                ys.append(max(m) if m else float("nan"))
            ax.plot(range(len(xs)), ys, ".-", alpha=0.8, label=c)
        for peer in sorted({k[0] for k in peers}):
            ys = [peers.get((peer,) + (s[0], s[1], s[2], s[3], s[4]), float("nan")) for s in shapes]
            if any(y == y for y in ys):
                ax.plot(range(len(xs)), ys, "s--", alpha=0.8, label=peer)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"D={d}, {'causal' if causal else 'non-causal'}")
        ax.set_xlabel("shape B x H x N")
        ax.set_ylabel("TFLOPS")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    handles, names = flat[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 7), fontsize=8, frameon=False)
    device = rows[0]["device"]
    fams = "+".join(sorted({r.get("family") or "fa2" for r in rows}))
    fig.suptitle(f"attn-tune {fams} on {device}, {rows[0]['dtype']}: TFLOPS = 4·B·H·N²·D / t (halved if causal)")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(args.out, dpi=110)
    print("wrote", args.out)


def heatmap(args):
    rows = [r for r in read_results(args.results) if r["status"] == "ok"]
    if args.family:
        rows = [r for r in rows if (r.get("family") or "fa2") == args.family]
    if args.shape:
        b, h, n, d = (int(x) for x in args.shape.split(","))
        rows = [r for r in rows if shape_of(r)[:4] == (b, h, n, d) and int(r["causal"]) == int(args.causal)]
    if not rows:
        sys.exit("no ok rows for that shape")
    s = shape_of(rows[0])
    rows = [r for r in rows if shape_of(r) == s]
    ms = sorted({int(r["block_m"]) for r in rows})
    ns = sorted({int(r["block_n"]) for r in rows})
    grid = [[float("nan")] * len(ns) for _ in ms]
    for r in rows:
        i, j = ms.index(int(r["block_m"])), ns.index(int(r["block_n"]))
        t = float(r["tflops"])
        if not grid[i][j] == grid[i][j] or t > grid[i][j]:
            grid[i][j] = t
    fig, ax = plt.subplots(figsize=(5, 4))
    im = ax.imshow(grid, cmap="viridis", origin="lower")
    for i in range(len(ms)):
        for j in range(len(ns)):
            if grid[i][j] == grid[i][j]:
                ax.text(j, i, f"{grid[i][j]:.0f}", ha="center", va="center", color="white", fontsize=10)
    ax.set_xticks(range(len(ns)))
    ax.set_xticklabels(ns)
    ax.set_yticks(range(len(ms)))
    ax.set_yticklabels(ms)
    ax.set_xlabel("BLOCK_N")
    ax.set_ylabel("BLOCK_M")
    fams = "+".join(sorted({r.get("family") or "fa2" for r in rows}))
    ax.set_title(f"B{s[0]} H{s[1]} N{s[2]} D{s[3]}{' causal' if s[4] else ''}, {fams}: best TFLOPS\nover warps and stages (blank: pruned)", fontsize=10)
    fig.colorbar(im, ax=ax, label="TFLOPS")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print("wrote", args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="kind", required=True)
    a = sub.add_parser("lines")
    a.add_argument("results", nargs="+")
    a.add_argument("--peers")
    a.add_argument("--top", type=int, default=3)
    a.add_argument("--out", required=True)
    h = sub.add_parser("heatmap")
    h.add_argument("results", nargs="+")
    h.add_argument("--shape")
    h.add_argument("--causal", action="store_true")
    h.add_argument("--family", help="only this kernel family's variants (default: all, best per cell)")
    h.add_argument("--out", required=True)
    args = ap.parse_args()
    lines(args) if args.kind == "lines" else heatmap(args)


if __name__ == "__main__":
    main()
