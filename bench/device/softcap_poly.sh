#!/usr/bin/env bash
# NOTES V13 in one or two device calls: softcap's tanh as a polynomial on the FMA pipes (hopper's
# schedule bit 64). PHASE=ab (default): build, the hopper window/softcap GPU suite with the bit and
# the planted defects (hopper_softcap_poly_uncapped among them), then fixed configs with and
# without the bit, alternating twice (the tool's own median, ms), a dense control beside them, and
# Nsight Compute's pipes of one softcap config each way. PHASE=peers (the build kept): the softcap
# rows of sweeps/llm-variants.csv through bench/peers.py beside FlexAttention (one process, one
# rule) with the bit in the tool's space, and the dense causal rows they are compared with.
#   carry: .deps   usage: ATTN_BUILD_TARGETS="attn_gpu_tests attn-tune attn_tune" [PHASE=ab|peers]
#                         [SKIP_TESTS=1] [FILTERS="gtest-filter ..."] [TEST_S=150] [BUDGET_S=585]
#                         bash bench/device/softcap_poly.sh
set -uo pipefail
if [ "${PHASE:-ab}" = peers ]; then
  t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
  left() { echo $(( ${BUDGET_S:-585} - ($(date +%s) - t0) )); }
  export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/build-gpu:${LD_LIBRARY_PATH:-}
  export PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so PYTHONUNBUFFERED=1
  run() {  # as bench/device/peers_setup.sh's
    local name=$1 limit=$2; shift 2
    echo "== $name: bench/peers.py $* (at most $limit s) $(el)" | tee -a $OUT/peers.log
    timeout -k 20 $limit python3 bench/peers.py --tool build-gpu/attn-tune --out $OUT/$name "$@" >> $OUT/peers.log 2>&1
    echo "$name rc=$? $(el)"
  }
  [ -x build-gpu/attn-tune ] || { echo "no build-gpu/attn-tune: run PHASE=ab first on this machine"; exit 1; }
  run softcap $(( $(left) * 45 / 100 )) --sweep sweeps/llm-variants.csv --rows "${ROWS:-2,9}" \
    --tool-args="--space schedule=3,5,6,7,13,22,67,69,70,71,77,86"
  run window $(( $(left) * 70 / 100 )) --sweep sweeps/llm-variants.csv --rows "${WROWS:-0,8}" \
    --tool-args="--space schedule=3,5,6,7,13,22,131,133,134,135,141,150,259,261,277,389"
  run dense $(( $(left) - 10 )) --sweep sweeps/yardstick.csv --rows "${DENSE_ROWS:-1,7,9}" --no-flex
  grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
  python3 bench/peers.py --summary $OUT/softcap $OUT/window $OUT/dense
  exit 0
fi
source bench/device/peers_setup.sh
export ATTN_TUNE_REQUIRE_GPU=1
if [ -z "${SKIP_TESTS:-}" ]; then
  set -f  # the filters' * are gtest's, not the shell's
  for f in ${FILTERS:-'*window_softcap_correctness.every_hopper_variant*:gpu_test.planted_defects_come_out_wrong' \
           '*fa2_correctness.every_hopper_variant*causal*:*hopper_persistent*'}; do
    (cd build-gpu && timeout ${TEST_S:-150} ./attn_gpu_tests --gtest_filter="$f" >> $OUT/gtest.log 2>&1
     echo "gtest $f rc=$? $(el)")
  done
  set +f
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure" $OUT/gtest.log | head -16
fi
source bench/device/ab_configs.sh
# Each config beside itself with bit 64 (k3 <-> k67, k5 <-> k69, k7 <-> k71), a dense control, and
# trimmed warpgroups (bit 128) beside the same config without: D=256 causal dense and w1024 (128x64:
# warpgroup 0 skips the diagonal's last tile), D=128 w1024 on tiles that give a warpgroup a tile to
# skip (128x64, 128x80, 192x128), D=64 causal on 192x128; the half-width first tile (bit 256) on
# the w1024 rows, with the half-width last tile (k277) and trimmed (k387). Most telling first (a
# short lease stops early).
ab d128c "--shape 4,32,4096,128 --causal --softcap 50" m128_n128_w12_s2_k5 m128_n128_w12_s2_k69 \
   m128_n128_w12_s2_k7 m128_n128_w12_s2_k71
ab dense128c "--shape 4,32,4096,128 --causal" m128_n128_w12_s2_k5
ab trim256c "--shape 2,16,4096,256 --causal" m128_n64_w12_s2_k3 m128_n64_w12_s2_k131 m128_n80_w12_s2_k5 m128_n80_w12_s2_k133
ab trim128w "--shape 4,32,4096,128 --causal --window 1024,0" m128_n128_w12_s2_k5 m128_n128_w12_s2_k21 \
   m128_n128_w12_s2_k261 m128_n128_w12_s2_k277 m128_n64_w12_s2_k5 m128_n64_w12_s2_k133 m192_n128_w16_s2_k5 \
   m192_n128_w16_s2_k133
ab trim256w "--shape 2,16,4096,256 --causal --window 1024,0" m128_n64_w12_s2_k3 m128_n64_w12_s2_k131 \
   m128_n64_w12_s2_k259 m128_n64_w12_s2_k387
ab d256 "--shape 2,16,4096,256 --softcap 50" m128_n64_w12_s2_k3 m128_n64_w12_s2_k67
ab trim64c "--shape 4,32,4096,64 --causal" m192_n128_w16_s2_k5 m192_n128_w16_s2_k133
ab d128c16k "--shape 1,32,16384,128 --causal --softcap 50" m128_n128_w12_s2_k7 m128_n128_w12_s2_k71
[ $(left) -gt 100 ] && SKIP_BUILD=1 timeout $(( $(left) - 20 )) bash bench/device/hopper_profile.sh \
  "--shape 4,32,4096,128 --causal --softcap 50|m128_n128_w12_s2_k5" \
  "--shape 4,32,4096,128 --causal --softcap 50|m128_n128_w12_s2_k69" 2>&1 | tail -14
echo "done $(el)"
