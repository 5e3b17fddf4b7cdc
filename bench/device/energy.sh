#!/usr/bin/env bash
# One device call: joules per call of each yardstick shape's tuned config (issue 19 item 3), in
# both regimes: attn-tune --configs W --objective energy (each full measurement then lasts at
# least 100 ms, so NVML's energy counter moves by many steps). W: the configs bench/peers.py's
# run of 2026-12-04 tuned. Files under $OUT: build.log, energy.tar.gz (the CSVs), energy.txt.
# T0 (seconds since the epoch, default now) and DEADLINE (default 560): no shape starts after
# DEADLINE s from T0, so it can follow another script in one call; the skipped shapes are named.
#   carry: .deps      usage: [T0=...] [DEADLINE=560] bash bench/device/energy.sh
set -uo pipefail
t0=${T0:-$(date +%s)}; el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
tmp=$(mktemp -d)
while IFS='|' read -r shp flag w; do
  tag=$(echo "$shp$flag" | tr ',' 'x' | tr -d '-')
  [ $(( $(date +%s) - t0 )) -lt ${DEADLINE:-560} ] || { echo "$tag skipped: past the deadline $(el)"; continue; }
  for regime in burst sustained; do
    timeout 60 build-gpu/attn-tune --shape $shp $flag --family hopper --configs $w --objective energy --regime $regime \
      --no-db --out $tmp/${regime}_$tag.csv --force -q > /dev/null 2> $tmp/${regime}_$tag.err
    echo "$tag $regime rc=$? $(el)"
  done
done <<'LIST'
4,32,4096,128||m192_n80_w16_s2_k13
4,32,4096,128|--causal|m128_n128_w12_s2_k3
16,16,1024,64||m192_n128_w16_s3_k7
16,16,1024,64|--causal|m128_n128_w12_s2_k6
8,16,2048,128||m192_n80_w16_s2_k5
8,16,2048,128|--causal|m128_n128_w12_s2_k5
1,32,16384,128||m192_n80_w16_s2_k7
1,32,16384,128|--causal|m128_n128_w12_s2_k3
2,16,4096,256||m128_n64_w12_s2_k7
2,16,4096,256|--causal|m128_n64_w12_s2_k3
32,32,512,64||m192_n128_w16_s3_k7
32,32,512,64|--causal|m128_n128_w12_s2_k22
LIST
tar -czf $OUT/energy.tar.gz -C $tmp .
python3 - "$tmp" > $OUT/energy.txt <<'PY'
import csv, glob, os, sys
print("| shape | config | regime | ms | TFLOPS | W | mJ/call | TFLOPS/W | SM MHz before/after |")
print("|---|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.csv")), key=lambda p: (os.path.basename(p).split("_", 1)[1], p)):
    regime, tag = os.path.basename(path)[:-4].split("_", 1)
    for r in csv.DictReader(l for l in open(path) if not l.startswith("#")):
        if r["status"] != "ok" or r["measured"] != "full":
            continue
        mj = float(r["joules_per_call"] or 0) * 1e3
        print(f"| {tag} | {r['config']} | {regime} | {float(r['median_ms']):.4f} | {float(r['tflops']):.1f} | "
              f"{float(r['power_w'] or 0):.0f} | {mj:.1f} | {float(r['tflops_per_watt'] or 0):.3f} | "
              f"{r['sm_clock_before_mhz']}/{r['sm_clock_after_mhz']} |")
PY
cat $OUT/energy.txt
