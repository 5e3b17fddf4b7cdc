#!/usr/bin/env bash
# One device call: build this tree, the whole GPU suite (ATTN_TUNE_REQUIRE_GPU=1), --help on the GPU
# machine, and the planted bugs only GPU tests catch (scripts/mutation_check.py --gpu).
#   carry: .deps      usage: bash bench/device/gpu_suite.sh
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
build-gpu/attn-tune --help | grep -A2 -- "--space" | cut -c1-400
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 360 ctest -L gpu -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
 echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout|Total Test' $OUT/ctest_gpu.log | head -20)
left=$(( 560 - ($(date +%s) - t0) ))
[ $left -gt 60 ] && timeout $left python3 scripts/mutation_check.py --build-dir build-gpu --gpu --only 'check_|regression' --no-baseline > $OUT/mutation_gpu.log 2>&1
echo "mutation rc=$? $(el)"; tail -8 $OUT/mutation_gpu.log
