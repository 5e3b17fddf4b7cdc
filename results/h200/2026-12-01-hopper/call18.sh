#!/usr/bin/env bash
# Device call 18: the review's mends on the GPU: the cache test (now also asserting the driver's
# cache answered with the driver cache on) and the database test (export/check/bundle open the
# database read-only now), then the library and DB-related GPU tests.
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 200 ctest -L gpu -R 'driver_has_seen|database_hit|library|bundle|Library' -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Test +#' $OUT/ctest_gpu.log | head -30
