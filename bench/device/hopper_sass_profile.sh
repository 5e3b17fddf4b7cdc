#!/usr/bin/env bash
# Where a hopper kernel's warps wait, per SASS instruction: Nsight Compute's warp-state sampling
# (SourceCounters) of one launch per item: the stall reasons summed over the kernel ($OUT/stalls.txt)
# and the per-SASS-instruction table of each (sass_N.csv, in $OUT/sass.tgz). Few files, since a
# device call brings back only a few; the reports stay on the machine (/tmp/rep_N.ncu-rep).
#   carry: .deps      usage: bash bench/device/hopper_sass_profile.sh "SHAPE_ARGS|CONFIG" ...
set -uo pipefail
[ -x build-gpu/attn-tune ] || bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
i=0
for item in "$@"; do
  args=${item%|*}; config=${item#*|}; i=$((i+1))
  timeout 200 ncu --clock-control none --kernel-name "regex:^attn_hopper$" --launch-skip 3 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight -o /tmp/rep_$i -f \
    build-gpu/attn-tune $args --family hopper --configs $config --no-db -q --out /tmp/p$i.csv --force \
    > /tmp/ncu_$i.log 2>&1
  echo "== $i: $args $config (rc $?)" | tee -a $OUT/stalls.txt
  ncu -i /tmp/rep_$i.ncu-rep --page raw --csv 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
if len(rows) < 3: sys.exit()
for name, value in zip(rows[0], rows[2]):
    if "issue_stalled" in name or name.startswith("gpu__time_duration.sum"):
        try:
            if float(value.replace(",", "")) >= 0.05: print(f"  {name}: {value}")
        except ValueError: pass' | tee -a $OUT/stalls.txt
  ncu -i /tmp/rep_$i.ncu-rep --page source --csv --print-source sass > /tmp/sass_$i.csv 2>&1
  echo "  sass lines: $(wc -l < /tmp/sass_$i.csv)"
done
tar -czf $OUT/sass.tgz -C /tmp $(cd /tmp && ls sass_*.csv)
