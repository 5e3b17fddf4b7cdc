#!/usr/bin/env bash
# A short device call after a change to hopper's decode: build; the hopper decode and KV-cache
# GPU tests; then one round of paged against contiguous (the tool's own median, best of the
# default decode space) on 8, 32/8, 1, 8192.
#   carry: .deps   usage: bash bench/device/hopper_decode_check.sh
set -uo pipefail
source bench/device/peers_setup.sh
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-130} ./attn_gpu_tests \
   --gtest_filter='*hopper_decode*:*hopper_kv_cache*' > $OUT/gtest_hopper_decode.log 2>&1; echo "gtest rc=$? $(el)")
grep -E "^\[  (PASSED|FAILED) |Failure|variants ok" $OUT/gtest_hopper_decode.log | head -30
for cs in "contig:" "paged16:--page-size 16" "paged256:--page-size 256"; do
  [ $(left) -lt 20 ] && break
  timeout 60 build-gpu/attn-tune --no-db --family hopper --shape 8,32,1,128 --kv-heads 8 --kv-len 8192 ${cs#*:} \
    --out $OUT/${cs%%:*}.csv > $OUT/${cs%%:*}.log 2>&1
  echo "${cs%%:*} rc=$? $(awk '$1 == "1" {print $2, $3, $4; exit}' $OUT/${cs%%:*}.log) $(el)"
done
