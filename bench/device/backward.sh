#!/usr/bin/env bash
# One device call for the backward pass (issue 22): build this tree, the backward's GPU tests, then ours
# beside SDPA's backward (cuDNN, flash) by one rule in one process (bench/backward_peers.py).
#   usage: SHAPES="4,32,4096,128;4,32,4096,128c" bash bench/device/backward.sh
#   SKIP_TESTS=1: the benchmark only; SKIP_BENCH=1: the tests only; GTEST_FILTER: which tests
#   (default backward_gpu*; the wgmma variants' test alone takes minutes of compiles)
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
if [ -z "${SKIP_TESTS:-}" ]; then
  ATTN_TUNE_REQUIRE_GPU=1 timeout 420 build-gpu/attn_gpu_tests --gtest_filter="${GTEST_FILTER:-backward_gpu*}" > $OUT/gtest_backward.log 2>&1
  echo "gtest rc=$? $(el)"; grep -E "^\[ *(OK|FAILED|PASSED) |Failure|error|Which|passed the check" $OUT/gtest_backward.log | head -40
fi
[ -n "${SKIP_BENCH:-}" ] && exit 0
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
[ $left -gt 30 ] && timeout $left python3 bench/backward_peers.py --tool build-gpu/attn-backward-cubins \
  --shapes "${SHAPES:-4,32,4096,128;4,32,4096,128c;16,16,1024,64;16,16,1024,64c}" ${BENCH_ARGS:-} --out $OUT/bwd > $OUT/bwd.log 2>&1
echo "bench rc=$? $(el)"; grep -v "^  " $OUT/bwd.log | tail -16
