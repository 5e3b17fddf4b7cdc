#!/usr/bin/env bash
# One device call for the tool's backward path (issue 22): build this tree, the tuner's backward GPU
# tests, then `attn-tune --pass bwd` on each shape and the variants it chose beside SDPA's backward
# (cuDNN, flash) by one rule in one process (bench/backward_peers.py; the tool's own burst medians
# are never set beside a peer's).
#   usage: SHAPES="4,32,4096,128;4,32,4096,128c" bash bench/device/backward_tune.sh
#   SKIP_TESTS=1: the tuning and the benchmark only; SKIP_BENCH=1: the tests only; GTEST_FILTER: which
#   tests (default backward_tune_gpu*); BENCH_ARGS: more for backward_peers.py (--with-flex)
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
if [ -z "${SKIP_TESTS:-}" ]; then
  ATTN_TUNE_REQUIRE_GPU=1 timeout 300 build-gpu/attn_gpu_tests --gtest_filter="${GTEST_FILTER:-backward_tune_gpu*}" \
    > $OUT/gtest_backward_tune.log 2>&1
  echo "gtest rc=$? $(el)"; grep -E "^\[ *(OK|FAILED|PASSED) |Failure|error|Which" $OUT/gtest_backward_tune.log | head -40
fi
[ -n "${SKIP_BENCH:-}" ] && exit 0
shapes="${SHAPES:-4,32,4096,128;4,32,4096,128c;16,16,1024,64;16,16,1024,64c}"
chosen=""
for shape in ${shapes//;/ }; do
  s=${shape%c}; causal=""; [ "$s" != "$shape" ] && causal="--causal"
  tag=${shape//,/x}
  timeout 150 build-gpu/attn-tune --pass bwd --shape $s $causal --no-db --seed 1 --out $OUT/tune-$tag.csv \
    > $OUT/tune-$tag.log 2>&1
  rc=$?
  best=$(grep -o "best (bwd): [a-z0-9]* [^ ]*" $OUT/tune-$tag.log | awk '{print $4}')
  echo "tune $shape rc=$rc best=${best:-none} $(el)"; grep -E "^best|compiled|error" $OUT/tune-$tag.log | head -4
  [ -n "$best" ] && chosen="${chosen:+$chosen,}$best"
done
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
[ -n "$chosen" ] && [ $left -gt 30 ] && timeout $left python3 bench/backward_peers.py --tool build-gpu/attn-backward-cubins \
  --shapes "$shapes" --configs "$(echo $chosen | tr ',' '\n' | sort -u | paste -sd,)" ${BENCH_ARGS:-} --out $OUT/bwd \
  > $OUT/bwd.log 2>&1
echo "bench rc=$? $(el)"; grep -v "^  " $OUT/bwd.log | tail -16
