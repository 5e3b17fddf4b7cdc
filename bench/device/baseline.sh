#!/usr/bin/env bash
# One device call (or its first part): the CI performance gate's baseline measured again with the
# current kernels and schema (issue 19 item 5): build this tree, sweep sweeps/ci-smoke.csv cold
# (--no-db), then `check` against the fresh file (it must pass), then the GPU tests of issue 19's
# measurement columns and graph capture. Files under $OUT: build.log, ci-smoke.csv,
# ci-smoke.best.csv, sweep.log, check.log, ctest_measure.log. Copy the two CSVs to results/h200/.
#   carry: .deps      usage: bash bench/device/baseline.sh
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
bin=build-gpu/attn-tune
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
timeout 240 $bin sweep sweeps/ci-smoke.csv --no-db --out $OUT/ci-smoke.csv --force > $OUT/sweep.log 2>&1
echo "ci-smoke sweep rc=$? $(el)"
timeout 150 $bin check --baseline $OUT/ci-smoke.csv --tolerance 0.10 > $OUT/check.log 2>&1
echo "check rc=$? $(el)"; tail -7 $OUT/check.log
if [ "${TESTS:-1}" = 1 ]; then
  (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 150 ctest -L gpu -R 'sustained|energy|LibraryGraph|python_package_gpu' \
     --output-on-failure > $OUT/ctest_measure.log 2>&1
   echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_measure.log | head -20)
fi
