#!/usr/bin/env bash
# Device call 17: the cache fix (driver compute cache off for attn-tune; registers from the cubin
# when ptxas's report is missing). The new GPU test, issue 10's four rows again, truly cold (empty
# driver cache too) with the winners side by side, then the whole GPU suite.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 60 ./attn_gpu_tests --gtest_filter='*driver_has_seen*' > $OUT/cache_gpu.log 2>&1; echo "cache gpu test rc=$?"; tail -3 $OUT/cache_gpu.log)
timeout 280 bash scripts/tuning_bar.sh --rows-only $OUT/rows_bar > $OUT/rows_bar.txt 2>&1
echo "rows rc=$? $(el)"; grep -A8 '^bars:' $OUT/rows_bar.txt | cut -c1-250; grep -E 'cold [0-9.]+ s|side by side' $OUT/rows_bar.txt | cut -c1-200
grep -c "compiling it again" $OUT/rows_bar/*/*.txt | tr '\n' ' '; echo
for d in $OUT/rows_bar/*/; do rm -rf "$d/cache" "$d/nvcache"; done; tar czf $OUT/rows_bar.tgz -C $OUT rows_bar && rm -rf $OUT/rows_bar
left=$(( 560 - ($(date +%s) - t0) ))
if [ $left -gt 200 ]; then
  cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout $left ctest -L gpu -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
  echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run' $OUT/ctest_gpu.log | head -20
else echo "no time for ctest -L gpu ($left s left)"; fi
