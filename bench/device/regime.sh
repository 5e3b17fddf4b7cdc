#!/usr/bin/env bash
# One device call for issue 19's measurements on the tool's side: build this tree; the Python
# call's host cost (bench/host_cost.py --breakdown --bar 20); the regime study (each yardstick
# shape tuned cold with --regime burst and with --regime sustained: do the top configs change?
# with joules per call and TFLOPS per watt from NVML); then the CI baseline measured again
# (sweep sweeps/ci-smoke.csv) and `check` against it. At most 8 files under $OUT: build.log,
# host_cost.txt, regime.tar.gz (every tune's CSV), ci-smoke.csv, ci-smoke.best.csv, check.log,
# summary.txt.      carry: .deps      usage: bash bench/device/regime.sh
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/build-gpu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so
bin=build-gpu/attn-tune
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 120 python3 bench/host_cost.py --shape 1,8,128,64 --breakdown --bar 20 > $OUT/host_cost.txt 2>&1
echo "host cost rc=$? $(el)"
tmp=$(mktemp -d)
for spec in "4,32,4096,128|" "16,16,1024,64|--causal" "2,16,4096,256|"; do
  shp=${spec%%|*} flag=${spec#*|}; tag=$(echo "$shp$flag" | tr ',' 'x' | tr -d '-')
  for regime in burst sustained; do
    timeout 150 $bin --shape $shp $flag --regime $regime --no-db --out $tmp/${regime}_$tag.csv --force -q > /dev/null 2> $tmp/${regime}_$tag.err
    echo "$tag $regime rc=$? $(el)"
  done
done
tar -czf $OUT/regime.tar.gz -C $tmp .
timeout 200 $bin sweep sweeps/ci-smoke.csv --no-db --out $OUT/ci-smoke.csv --force > $tmp/sweep.log 2>&1
echo "ci-smoke sweep rc=$? $(el)"
timeout 150 $bin check --baseline $OUT/ci-smoke.csv --tolerance 0.10 > $OUT/check.log 2>&1
echo "check rc=$? $(el)"; tail -12 $OUT/check.log
python3 - "$tmp" > $OUT/summary.txt <<'PY'
import csv, glob, os, sys
def rows(p):
    return [r for r in csv.DictReader(l for l in open(p) if not l.startswith("#")) if r["status"] == "ok"]
for b in sorted(glob.glob(os.path.join(sys.argv[1], "burst_*.csv"))):
    tag = os.path.basename(b)[6:-4]
    print(f"== {tag}: rank config median_ms clock_before/after_MHz power_W mJ/call TF/W")
    for regime, path in (("burst", b), ("sustained", b.replace("burst_", "sustained_"))):
        if not os.path.exists(path):
            print(f"  {regime}: no CSV"); continue
        top = sorted((r for r in rows(path) if r["rank"] and r["measured"] == "full"), key=lambda r: int(r["rank"]))[:5]
        for r in top:
            print(f"  {regime:9} {r['rank']:>2} {r['config']:24} {float(r['median_ms']):.4f} "
                  f"{r['sm_clock_before_mhz']}/{r['sm_clock_after_mhz']} {r['power_w']} "
                  f"{float(r['joules_per_call'] or 0) * 1e3:.3f} {r['tflops_per_watt']}")
PY
cat $OUT/summary.txt; grep '^result:' $OUT/host_cost.txt; sed -n 3,9p $OUT/host_cost.txt
