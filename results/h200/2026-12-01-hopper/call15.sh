#!/usr/bin/env bash
# Device call 15: the four rows of issue 10's bar again on the default space of the final commit
# (tuning_bar.sh --rows-only), then the whole GPU test suite on that commit.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 240 bash scripts/tuning_bar.sh --rows-only $OUT/rows_bar > $OUT/rows_bar.txt 2>&1
echo "rows rc=$? $(el)"; grep -A8 '^bars:' $OUT/rows_bar.txt; tail -1 $OUT/rows_bar.txt
for d in $OUT/rows_bar/*/; do rm -rf "$d/cache"; done; tar czf $OUT/rows_bar.tgz -C $OUT rows_bar && rm -rf $OUT/rows_bar
cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 300 ctest -L gpu -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run' $OUT/ctest_gpu.log | head -20
