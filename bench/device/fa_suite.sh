#!/usr/bin/env bash
# FlashAttention's forward test grid (tests/flash_attn_grid.hpp; issue 23's correctness bar) on the
# GPU: builds attn_gpu_tests alone, runs the suite (one test per head dim, 1056 cases each) for at
# most SUITE_S seconds (default 420), and prints each head dim's line and any failure. The whole
# grid takes longer than one call: give a few head dims a call (DIMS), e.g. DIMS='d32:d40:d59:d64'.
#   carry: .deps   usage: [SUITE_S=420] [DIMS='d64:d128'] bash bench/device/fa_suite.sh
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
ATTN_BUILD_TARGETS=attn_gpu_tests bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 ||
  { tail -30 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
filter='flash_attn_suite*'
[ -n "${DIMS:-}" ] && filter=$(echo "$DIMS" | sed 's/[^:]*/flash_attn_suite*&/g')
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 ATTN_TUNE_FA_SUITE=1 timeout ${SUITE_S:-420} ./attn_gpu_tests \
   --gtest_filter="$filter" > $OUT/fa_suite.log 2>&1; echo "suite rc=$? $(el)")
grep -E "^head dim|^\[  (PASSED|FAILED) |^\[  FAILED|Failure" $OUT/fa_suite.log | head -40
grep -E "^(B[0-9]|Google Test trace)" -A1 $OUT/fa_suite.log | grep -E "B[0-9]+ H" | sort | uniq -c | head -20
