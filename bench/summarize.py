#!/usr/bin/env python3
"""Prints the best tuned config per results CSV of a directory beside the peers measured in the
same call (peers.csv from peers.py), as a Markdown table. Usage: summarize.py DIR"""
import csv, glob, os, sys

def main(d):
    peers = {}
    if os.path.exists(os.path.join(d, "peers.csv")):
        for row in csv.reader(l for l in open(os.path.join(d, "peers.csv")) if not l.startswith("#")):
            if row[0] == "peer":
                continue
            peers[(row[0], int(row[2]), int(row[3]), int(row[4]), int(row[5]), int(row[6]))] = float(row[8])
    walls = {}
    if os.path.exists(os.path.join(d, "walltimes.txt")):
        for line in open(os.path.join(d, "walltimes.txt")):
            parts = line.split()
            walls[parts[0]] = parts[2].split("=")[1]
    print("| shape (B,H,N,D) | causal | best config | attn-tune TFLOPS | best per family | SDPA flash (FA2) | "
          "SDPA cuDNN | FlexAttention | / cuDNN | / Flex | tune wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(d, "*.csv"))):
        if path.endswith("peers.csv"):
            continue
        rows = list(csv.DictReader(l for l in open(path) if not l.startswith("#")))  # skips the "#end" line
        ok = [r for r in rows if r["status"] == "ok"]
        if not rows:
            continue
        r0 = rows[0]
        key = (int(r0["batch"]), int(r0["heads"]), int(r0["q_len"]), int(r0["head_dim"]), int(r0["causal"]))
        ranked = [r for r in ok if int(r.get("rank", "0") or 0) == 1]
        best = ranked[0] if ranked else (min(ok, key=lambda r: float(r["median_ms"])) if ok else None)
        fa2 = peers.get(("sdpa-flash",) + key)
        cudnn = peers.get(("sdpa-cudnn",) + key)
        flex = peers.get(("flex-autotune",) + key)
        tf = float(best["tflops"]) if best else 0.0
        per_family = {}
        for r in ok:
            f = r.get("family", "fa2")
            per_family[f] = max(per_family.get(f, 0.0), float(r["tflops"]))
        families = " / ".join(f"{f} {v:.1f}" for f, v in sorted(per_family.items()))
        tag = os.path.basename(path)[:-4]
        print(f"| {key[0]},{key[1]},{key[2]},{key[3]} | {'yes' if key[4] else 'no'} | "
              f"{(best.get('family', 'fa2') + ' ' + best['config']) if best else '-'} | {tf:.1f} | {families or '-'} | "
              f"{fa2 if fa2 else '-'} | {cudnn if cudnn else '-'} | {flex if flex else '-'} | "
              f"{f'{tf / cudnn:.2f}' if cudnn else '-'} | {f'{tf / flex:.2f}' if flex else '-'} | {walls.get(tag, '-')} |")

if __name__ == "__main__":
    main(sys.argv[1])
