#!/usr/bin/env bash
# One device call after a change to hopper's decode (issue 18): build; the hopper decode and
# KV-cache GPU tests; Nsight Compute of two hopper decode winners (the kernel and its combine);
# then rows of sweeps/llm-decode.csv through bench/peers.py (each tuned with the default families,
# ours through the Python package beside SDPA: one rule, one process), FlexAttention only if
# PEERS_ARGS leaves out --no-flex.
#   carry: .deps   usage: [ROWS=1,9] [PEERS_ARGS="--reps 0" (Flex too)] bash bench/device/hopper_decode_sweep.sh
# The default rows are the unpaged ones of each model (paged rows are timed by bench/decode.py: the peers take no page table).
# $OUT: build.log, gtest_hopper_decode.log, ncu_*.txt, peers.log, sweep/peers.{csv,md}.
set -uo pipefail
source bench/device/peers_setup.sh
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-150} ./attn_gpu_tests \
   --gtest_filter='*hopper_decode*:*hopper_kv_cache*' > $OUT/gtest_hopper_decode.log 2>&1; echo "gtest rc=$? $(el)")
grep -E "^\[  (PASSED|FAILED) |Failure" $OUT/gtest_hopper_decode.log | head -20
SKIP_BUILD=1 FAMILY=hopper timeout 150 bash bench/device/decode_profile.sh \
  "--shape 8,32,1,128 --kv-heads 8 --kv-len 8192|m64_n128_w8_s2_k1_g1" \
  "--shape 1,32,1,128 --kv-heads 8 --kv-len 32768|m64_n64_w8_s2_k1_p16_g1"
echo "profile done $(el)"
run sweep $(( $(left) - 10 )) --sweep sweeps/llm-decode.csv --rows "${ROWS:-6,12,18,2,9,17,0,8,16,20,21}" ${PEERS_ARGS:---no-flex}
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
grep '^|' $OUT/sweep/peers.md 2>/dev/null | head -30
