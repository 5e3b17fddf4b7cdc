#!/usr/bin/env bash
# Device call 7: H4 (half-width diagonal tile per warpgroup) A/B against main's kernels, in one call,
# beside SDPA cuDNN; hopper GPU tests with the new kernels; a cold tune's phases; ncu's metric names.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=/tmp/c7; mkdir -p $W; export ATTN_TUNE_DB=$W/tuned.sqlite
# cold tune of the headline shape (empty cache, empty database): wall and phases
a=$(date +%s.%N); build-gpu/attn-tune --shape 4,32,4096,128 --cache-dir $W/cold --out $W/cold.csv > $W/cold.log 2>&1; b=$(date +%s.%N)
echo "cold tune 4,32,4096,128 wall $(awk "BEGIN{printf \"%.2f\", $b-$a}") s"; grep -E "^best|compiled|verified|screen|refin|phase" $W/cold.log | head -6
(cd build-gpu && timeout 150 ctest -L gpu -R "hopper|fa2_gpu|reference" -j1 --output-on-failure > $OUT/ctest_hopper.log 2>&1; echo "ctest hopper rc=$? $(el)"; grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest_hopper.log | head)
CFG=m128_n128_w12_s2_k6,m128_n128_w12_s2_k7,m128_n128_w12_s3_k6,m192_n128_w16_s3_k7,m192_n128_w16_s2_k6,m128_n192_w12_s2_k6
for s in 32,32,512,64 16,16,1024,64 8,16,2048,128 4,32,4096,128; do
  timeout 40 python3 .peers/peers.py --shape $s --causal --csv $W/peers-$s.csv > $W/peers-$s.log 2>&1
  echo "$s causal cuDNN: $(grep cudnn $W/peers-$s.csv | cut -d, -f7,9 | head -1)"
  for r in 1 2; do for k in main new; do
    kd=""; [ $k = main ] && kd="--kernels-dir .peers/kernels-main"
    build-gpu/attn-tune --shape $s --causal --family hopper --configs $CFG $kd --search exhaustive --no-db --cache-dir $W/cache-$k --out $W/ab-$s-$k-$r.csv --force > $W/ab-$s-$k-$r.log 2>&1
    echo "  $k r$r: $(grep -E '^best' $W/ab-$s-$k-$r.log | cut -c1-110)"
  done; done
done
echo "A/B done $(el)"
ncu --query-metrics 2>/dev/null | grep -iE "tensor|gmma" | head -20 > $OUT/ncu_metrics.txt; wc -l $OUT/ncu_metrics.txt
tar czf $OUT/c7.tgz -C /tmp c7 --exclude=cache-main --exclude=cache-new --exclude=cold; echo "total $(el)"
