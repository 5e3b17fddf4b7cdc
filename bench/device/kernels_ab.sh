#!/usr/bin/env bash
# This tree's kernels/ against another's with one binary (--kernels-dir): a kernel-only change
# timed both ways on fixed configs, alternating rounds (the tool's own median, ms), then Nsight
# Compute of chosen kernels both ways. BASE: the other tree's kernels/ (make it with `git archive
# <commit> kernels | tar -x -C .dev/kernels-base`; .dev is ignored, so carry it). TESTS: gtest
# filters run first, one process each (a hang in one stops nothing else).
# Cases come from a file (CASES), one a line: NAME|FAMILY|SHAPE-OPTIONS|CONFIG; PROFILE likewise
# names cases (NAME|KERNEL-REGEX) to profile both ways.
# TESTS_LAST=1 runs the tests after the cases instead (the cases stop AB_RESERVE_S, default 60,
# before the budget's end), each within what is left.
#   carry: .deps .dev   usage: ATTN_BUILD_TARGETS="attn_gpu_tests attn-tune attn_tune" CASES=bench/device/ab/x.txt
#                              [TESTS="filter1 filter2"] [TESTS_LAST=1] [AB_RESERVE_S=60] [PROFILE="name|regex ..."]
#                              [ROUNDS=3] bash bench/device/kernels_ab.sh
# ONE_TREE=1: this tree's kernels only (no BASE; compare the cases' lines with each other).
set -uo pipefail
source bench/device/peers_setup.sh
BASE=${BASE:-.dev/kernels-base/kernels}
[ -n "${ONE_TREE:-}" ] || [ -f "$BASE/hopper.cuh" ] || { echo "no kernels/ tree at BASE=$BASE (carry .dev)"; exit 1; }
tests() {
  set -f  # the filters' * are gtest's, not the shell's
  for f in ${TESTS:-}; do
    local limit=$(( ${TEST_S:-150} < $(left) - 15 ? ${TEST_S:-150} : $(left) - 15 ))
    [ $limit -lt 20 ] && { echo "gtest $f: out of time $(el)"; continue; }
    (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout $limit ./attn_gpu_tests --gtest_filter="$f" \
       > $OUT/gtest_${f//[^a-z]/}.log 2>&1; echo "gtest $f rc=$? $(el)")
    grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|tests ran" $OUT/gtest_${f//[^a-z]/}.log | head -6
  done
  set +f
}
[ -n "${TESTS_LAST:-}" ] || tests
source bench/device/ab_configs.sh
tool() { config_median 90 $2 "$3" $4 "$1"; }  # KERNELS FAMILY SHAPE CONFIG
echo "name | config | base ms (rounds) | this tree ms (rounds) | this / base (medians)"
while IFS='|' read -r name fam shape cfg; do
  [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  b="" n=""
  for r in $(seq ${ROUNDS:-3}); do
    [ $(left) -lt ${AB_RESERVE_S:-60} ] && { echo "$name: out of time $(el)"; break 2; }
    [ -n "${ONE_TREE:-}" ] || b+=" $(tool $BASE $fam "$shape" $cfg)"
    n+=" $(tool kernels $fam "$shape" $cfg)"
  done
  ratio=$(python3 -c "import statistics as s,sys
b=[float(x) for x in '$b'.split() if x[0].isdigit()]; n=[float(x) for x in '$n'.split() if x[0].isdigit()]
print(f'{s.median(n)/s.median(b):.3f}' if b and n else '-')")
  echo "$name | $cfg |$b |$n | $ratio $(el)"
done < "${CASES:?CASES=file}"
[ -n "${TESTS_LAST:-}" ] && tests
for item in ${PROFILE:-}; do
  name=${item%|*} regex=${item#*|}
  line=$(grep -m1 "^$name|" "$CASES") || continue
  IFS='|' read -r _ fam shape cfg <<< "$line"
  for k in base kernels; do
    [ $(left) -lt 70 ] && { echo "profile: out of time $(el)"; break 2; }
    dir=$([ $k = base ] && echo $BASE || echo kernels)
    timeout 60 ncu --clock-control none --kernel-name "regex:$regex" --launch-skip 6 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      build-gpu/attn-tune --no-db --kernels-dir $dir --family $fam $shape --configs $cfg -q --out /tmp/p.csv --force \
      > $OUT/ncu_${name}_$k.txt 2>&1
    echo "== ncu $name $regex ($k): $(grep -E "^\s+Duration|DRAM Throughput|Compute \(SM\) Throughput" $OUT/ncu_${name}_$k.txt | tr -s ' ' | tr '\n' ';')"
  done
done
echo "done $(el)"
