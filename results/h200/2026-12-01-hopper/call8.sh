#!/usr/bin/env bash
# Device call 8: H4 as schedule bit 16 (half-width last tile), default space, main's kernels vs the
# new ones in one call beside SDPA cuDNN (causal shapes); hopper GPU tests with bit 16 in the space.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=/tmp/c8; mkdir -p $W
(cd build-gpu && timeout 200 ctest -L gpu -R "hopper" -j1 --output-on-failure > $OUT/ctest_hopper.log 2>&1; echo "ctest hopper rc=$? $(el)"; grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest_hopper.log | head)
for s in 32,32,512,64 16,16,1024,64 8,16,2048,128 4,32,4096,128; do
  timeout 40 python3 .peers/peers.py --shape $s --causal --csv $W/peers-$s.csv > $W/peers-$s.log 2>&1
  echo "$s causal cuDNN: $(grep cudnn $W/peers-$s.csv | cut -d, -f7,9 | head -1) $(el)"
  for r in 1 2; do for k in main new; do
    kd=""; [ $k = main ] && kd="--kernels-dir .peers/kernels-main"
    a=$(date +%s.%N)
    build-gpu/attn-tune --shape $s --causal --family hopper $kd --no-db --cache-dir $W/cache-$k --out $W/ab-$s-$k-$r.csv --force > $W/ab-$s-$k-$r.log 2>&1
    b=$(date +%s.%N)
    echo "  $k r$r $(awk "BEGIN{printf \"%.1f\", $b-$a}")s: $(grep -E '^best' $W/ab-$s-$k-$r.log | cut -c1-100)"
  done; done
done
echo "A/B done $(el)"
rm -rf $W/cache-main $W/cache-new; tar czf $OUT/c8.tgz -C /tmp c8; echo "total $(el)"
