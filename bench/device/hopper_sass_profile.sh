#!/usr/bin/env bash
# Where a hopper kernel's warps wait, per SASS instruction: Nsight Compute's warp-state sampling
# (SourceCounters) of one launch per item, the stall reasons summed over the kernel, and the SASS
# lines with the most samples. $OUT gets rep_N.ncu-rep, sass_N.csv and stalls_N.txt per item.
#   carry: .deps      usage: bash bench/device/hopper_sass_profile.sh "SHAPE_ARGS|CONFIG" ...
set -uo pipefail
[ -x build-gpu/attn-tune ] || bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
i=0
for item in "$@"; do
  args=${item%|*}; config=${item#*|}; i=$((i+1))
  timeout 200 ncu --clock-control none --kernel-name "regex:^attn_hopper$" --launch-skip 3 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight -o $OUT/rep_$i -f \
    build-gpu/attn-tune $args --family hopper --configs $config --no-db -q --out /tmp/p$i.csv --force \
    > $OUT/ncu_$i.log 2>&1
  echo "== $i: $args $config (rc $?)"
  ncu -i $OUT/rep_$i.ncu-rep --page raw --csv 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
if len(rows) < 3: sys.exit()
for name, value in zip(rows[0], rows[2]):
    if "warps_issue_stalled" in name and name.endswith("per_warp_active.pct") or name.startswith("gpu__time_duration.sum"):
        try:
            if float(value.replace(",", "")) >= 1: print(f"  {name}: {value}")
        except ValueError: pass' > $OUT/stalls_$i.txt
  cat $OUT/stalls_$i.txt
  ncu -i $OUT/rep_$i.ncu-rep --page source --csv --print-source sass > $OUT/sass_$i.csv 2>&1
  echo "  sass lines: $(wc -l < $OUT/sass_$i.csv)"
done
