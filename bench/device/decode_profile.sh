#!/usr/bin/env bash
# Nsight Compute of decode variants (the fa2 kernel and its combine; FAMILY=hopper: hopper's), one
# report line set each. SKIP_BUILD=1: build-gpu is already this tree's.
#   carry: .deps      usage: [FAMILY=hopper] bash bench/device/decode_profile.sh "SHAPE_ARGS|CONFIG" ...
set -uo pipefail
[ -n "${SKIP_BUILD:-}" ] || bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
F=${FAMILY:-fa2}
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
i=0
for item in "$@"; do
  args=${item%|*}; config=${item#*|}; i=$((i+1))
  for k in "^attn_$F\$" "attn_${F}_combine"; do
    timeout 120 ncu --clock-control none --kernel-name "regex:$k" --launch-skip 6 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
      build-gpu/attn-tune $args --family $F --configs $config --no-db -q --out /tmp/p$i.csv --force > $OUT/ncu_$i${k//[^a-z]/}.txt 2>&1
    echo "== $args $config $k"
    grep -E "DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Registers Per|Block Limit (Shared|Reg)|Waves Per SM|Grid Size|L2 Hit|Stall|Warp Cycles Per Issued|Theoretical Occ" $OUT/ncu_$i${k//[^a-z]/}.txt | head -16
  done
done
