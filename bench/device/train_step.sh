#!/usr/bin/env bash
# One device call for training through attn_tune (issue 22, item 4): build this tree, the library's
# backward tests, the Python package's autograd GPU tests, then examples/python/train_step.py (SDPA
# and attn_tune from one seed; loss.csv and loss.png under $OUT/train).
#   usage: STEPS=300 bash bench/device/train_step.sh     SKIP_TESTS=1: the example only
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export ATTN_TUNE_LIBRARY=$(ls $PWD/build-gpu/libattn_tune.so* | head -1) PYTHONPATH=$PWD/python ATTN_TUNE_REQUIRE_GPU=1
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 200 build-gpu/attn_library_gpu_tests --gtest_filter='LibraryBackward*' > $OUT/gtest_library_backward.log 2>&1
  echo "library rc=$? $(el)"; grep -E "^\[ *(OK|FAILED|PASSED) |Failure|Which" $OUT/gtest_library_backward.log | head -20
  timeout 240 python3 -m unittest -v tests/python/test_autograd_gpu.py > $OUT/python_autograd.log 2>&1
  echo "python rc=$? $(el)"; grep -E "ok$|FAIL|ERROR|Error|skipped" $OUT/python_autograd.log | head -30
fi
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
[ $left -gt 60 ] && timeout $left python3 examples/python/train_step.py --steps ${STEPS:-300} --out $OUT/train \
  > $OUT/train.log 2>&1
echo "train rc=$? $(el)"; tail -12 $OUT/train.log
