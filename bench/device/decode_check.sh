#!/usr/bin/env bash
# One device call for decode: build this tree, the decode GPU tests, then bench/peers.py on decode
# shapes (ours through the Python package beside FlexAttention and SDPA, one rule, one process).
#   carry: .deps      usage: bash bench/device/decode_check.sh [SHAPES] [--no-flex]
# SHAPES: peers.py's --shapes (default bench/decode.py's four); $OUT/decode/peers.{csv,md}.
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/build-gpu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  ATTN_TUNE_REQUIRE_GPU=1 timeout 300 build-gpu/attn_gpu_tests --gtest_filter='decode*' > $OUT/decode_gpu_tests.log 2>&1
  echo "decode gpu tests rc=$? $(el)"; grep -E '^\[  (PASSED|FAILED) |FAILED|variants ok' $OUT/decode_gpu_tests.log | head -30
fi
timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/decode.py --tool build-gpu/attn-tune --out $OUT/decode ${1:+--shapes "$1"} ${2:-} 2>&1 | tee $OUT/decode.log | tail -20
echo "bench rc=$? $(el)"
