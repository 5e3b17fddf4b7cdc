#!/usr/bin/env bash
# NOTES B1, wgmma_bwd v3: the warp-specialized dK/dV kernel (opt-in) in one device call. Its GPU
# test first, then the backward of D 128 shapes with the warp-specialized
# and the 256-thread atomic variants side by side, two rounds alternating (the tool's own median, ms),
# then Nsight Compute of both dK/dV kernels on 4,32,4096,128 causal.
#   carry: .deps   usage: ATTN_BUILD_TARGETS="attn_gpu_tests attn-tune" [BUDGET_S=585] [SKIP_BUILD=1]
#                         [SKIP_TESTS=1] [ROUNDS=2] bash bench/device/bwd_ws.sh
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
left() { echo $(( ${BUDGET_S:-585} - ($(date +%s) - t0) )); }
[ -n "${SKIP_BUILD:-}" ] || bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
echo "build done $(el)"
if [ -z "${SKIP_TESTS:-}" ]; then
  (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-150} ./attn_gpu_tests \
     --gtest_filter='backward_gpu.warp_specialized*' > $OUT/gtest_ws.log 2>&1; echo "gtest ws rc=$? $(el)")
  grep -E "^\[  (PASSED|FAILED) |Failure|Expected|described|tests ran" $OUT/gtest_ws.log | head -12
fi
WS=wg_kv_m64_n128_w12_s2-dq_atomic,wg_kv_m64_n128_w12_s3-dq_atomic,wg_kv_m64_n128_w8_s2-dq_atomic
for r in $(seq ${ROUNDS:-2}); do
  for shape in "4,32,4096,128 --causal" "4,32,4096,128" "8,16,2048,128 --causal"; do
    [ $(left) -lt 120 ] && break 2
    timeout 120 build-gpu/attn-tune --pass bwd --family wgmma --no-db --top 0 --shape $shape --configs $WS \
      > $OUT/bwd_r${r}_${shape//[^0-9a-z]/_}.log 2>&1
    echo "round $r $shape: $(awk '$1 ~ /^[0-9]+$/ && $2 == "wgmma" {printf "%s %s %s TF; ", $3, $4, $7}' \
      $OUT/bwd_r${r}_${shape//[^0-9a-z]/_}.log) $(grep -m1 -iE "error|fail" $OUT/bwd_r${r}_${shape//[^0-9a-z]/_}.log) $(el)"
  done
done
for cfg in wg_kv_m64_n128_w12_s2-dq_atomic wg_kv_m64_n128_w8_s2-dq_atomic; do
  [ $(left) -lt 60 ] && break
  timeout 90 ncu --clock-control none --kernel-name regex:attn_bwd_dkdv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy \
    build-gpu/attn-tune --pass bwd --family wgmma --no-db --shape 4,32,4096,128 --causal --configs $cfg -q \
    > $OUT/ncu_$cfg.txt 2>&1
  echo "== ncu $cfg: $(grep -E "^\s+Duration|Compute \(SM\) Throughput|Registers Per" $OUT/ncu_$cfg.txt | tr -s ' ' | tr '\n' ';')"
done
echo "done $(el)"
