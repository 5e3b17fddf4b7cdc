#!/usr/bin/env bash
# Device call 10 (merged main): every GPU test (a skip is a failure), issue 12's library bar
# (Python and the C++ example against the tool, same config, same call), issue 11's input check.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export ATTN_TUNE_DB=/tmp/c10/tuned.sqlite; mkdir -p /tmp/c10
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 300 ctest -L gpu -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1; echo "ctest -L gpu rc=$? $(el)"; grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|Timeout|Not Run|\*\*\*Skipped" $OUT/ctest_gpu.log | head -20)
grep -E "hopper .*(wide|sink) inputs: naive" $OUT/ctest_gpu.log | head -4
timeout 200 bash scripts/library_bar.sh build-gpu > $OUT/library_bar.txt 2>&1; echo "library_bar rc=$? $(el)"; tail -14 $OUT/library_bar.txt
echo "total $(el)"
