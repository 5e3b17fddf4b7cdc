#!/usr/bin/env bash
# NOTES D10 in one device call: hopper's decode tiles two blocks an SM (schedule bit 32: launch
# bounds of 2, each block's setmaxnreg hand-over in half the register file) against one. First the
# new GPU suite (hopper_two_blocks_correctness: a hang there is its own) and the hopper decode
# tests beside it; then fixed configs timed both ways, alternating twice (the tool's own median,
# ms; the persistent grid is then two blocks an SM, and twice the splits fill it); then decode rows
# through bench/peers.py beside SDPA with the bit in the tool's space (one process, one rule).
# Between the tests and the A/B, Nsight Compute's occupancy of one config with and without the bit.
# The tool's space for the peers' rows adds bit 32 to schedules 1 and 5 (the heuristic's split
# counts, core/config.cpp default_splits, already reach 4 waves of one block an SM). A hang in the
# new suite stops nothing else; *hopper_decode* beside it tells a new hang from the persistent
# 64-split ones of NOTES D8 and D9.
#   carry: .deps   usage: ATTN_BUILD_TARGETS="attn_gpu_tests attn-tune attn_tune" [ROWS=0,8,2,9,16]
#                         [SKIP_TESTS=1] [TEST_S=120] [BUDGET_S=585] bash bench/device/two_blocks_ab.sh
set -uo pipefail
source bench/device/peers_setup.sh
if [ -z "${SKIP_TESTS:-}" ]; then
  for f in '*hopper_two_blocks*' '*hopper_decode*:*hopper_kv_cache*'; do
    (cd build-gpu && ATTN_TUNE_TWO_BLOCKS=1 ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-120} ./attn_gpu_tests \
       --gtest_filter="$f" >> $OUT/gtest.log 2>&1; echo "gtest $f rc=$? $(el)")
  done
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|hung" $OUT/gtest.log | head -16
fi
# Do two blocks share an SM? Nsight Compute's occupancy of the same config with and without the bit
# (its block limits by registers and shared memory, the theoretical and achieved occupancy).
[ $(left) -gt 200 ] && SKIP_BUILD=1 FAMILY=hopper timeout 150 bash bench/device/decode_profile.sh \
  "--shape 1,32,1,128 --kv-heads 8 --kv-len 32768|m64_n64_w8_s2_k1_p32_g1" \
  "--shape 1,32,1,128 --kv-heads 8 --kv-len 32768|m64_n64_w8_s2_k33_p32_g1"
AB_RESERVE_S=90  # the Nsight run and the peers after it need the time
source bench/device/ab_configs.sh
# Each config beside itself with bit 32 (k1 <-> k33, k5 <-> k37).
ab 1x32k "--shape 1,32,1,128 --kv-heads 8 --kv-len 32768" m64_n64_w8_s2_k1_p16_g1 m64_n64_w8_s2_k33_p16_g1 \
   m64_n64_w8_s2_k1_p32_g1 m64_n64_w8_s2_k33_p32_g1 m64_n64_w8_s2_k5_p32_g1 m64_n64_w8_s2_k37_p32_g1
ab 1x128k "--shape 1,28,1,128 --kv-heads 4 --kv-len 131072" m64_n64_w8_s2_k1_p32_g1 m64_n64_w8_s2_k33_p32_g1 \
   m64_n64_w8_s2_k1_p64_g1 m64_n64_w8_s2_k33_p64_g1
ab 8x8k "--shape 8,32,1,128 --kv-heads 8 --kv-len 8192" m64_n64_w8_s2_k5_p2_g1 m64_n64_w8_s2_k37_p2_g1 \
   m64_n64_w8_s2_k1_p4_g1 m64_n64_w8_s2_k33_p4_g1 m64_n64_w8_s2_k5_p4_g1 m64_n64_w8_s2_k37_p4_g1
ab spec8x8k "--shape 8,32,16,128 --kv-heads 8 --kv-len 8192 --causal" m64_n128_w8_s2_k1_g1 m64_n64_w8_s2_k1_g1 \
   m64_n64_w8_s2_k33_g1 m64_n64_w8_s2_k1_p2_g1 m64_n64_w8_s2_k33_p2_g1
[ $(left) -gt 60 ] && run decode $(( $(left) - 10 )) --sweep sweeps/llm-decode.csv --rows "${ROWS:-0,8,2,9,16}" \
  --no-flex --tool-args="--space schedule=1,5,33,37"
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log 2>/dev/null | grep -v UserWarning | head -8
grep '^|' $OUT/decode/peers.md 2>/dev/null | head -12
