#!/usr/bin/env bash
# One device call: a paged K/V cache against contiguous K/V on the hopper family's decode (issue 18:
# paged within 5%), and hopper's best against fa2's, by the tool's own median (burst rule, L2
# flushed), the default decode space each, two rounds alternating; then the decode, KV-cache and
# library GPU tests (ctest) with the time left.
#   carry: .deps     usage: bash bench/device/hopper_paged.sh
# $OUT: build.log, <round>_<shape>_<case>.{csv,log}, ctest_gpu.log.
set -uo pipefail
source bench/device/peers_setup.sh
T=build-gpu/attn-tune
shapes=("n1:--shape 8,32,1,128 --kv-heads 8 --kv-len 8192" "spec:--shape 64,32,16,128 --kv-heads 8 --kv-len 4096 --causal")
cases=("contig:--family hopper" "paged16:--family hopper --page-size 16" "paged256:--family hopper --page-size 256"
       "fa2:--family fa2" "fa2paged16:--family fa2 --page-size 16")
best() { awk '$1 == "1" {print $2, $3, $4; exit}' "$1"; }
for round in 1 2; do
  for sh in "${shapes[@]}"; do
    for cs in "${cases[@]}"; do
      name=r${round}_${sh%%:*}_${cs%%:*}
      [ $(left) -lt 200 ] && break 3
      timeout 120 $T --no-db ${sh#*:} ${cs#*:} --out $OUT/$name.csv > $OUT/$name.log 2>&1
      echo "$name rc=$? $(best $OUT/$name.log) $(el)"
    done
  done
done
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout $(( $(left) - 15 )) ctest -L gpu \
   -R 'decode|kv|LibraryGraph|Library.*Decode|Library|hopper|varlen' -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
 echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_gpu.log | head -30)
