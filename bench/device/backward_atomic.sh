#!/usr/bin/env bash
# One device call for the atomic-dQ backward variants (kernels/wgmma_bwd.cuh's ATOMIC_DQ): build,
# every wgmma variant against float64 gradients (the atomic ones among them), the planted defects,
# the tuner's backward tests, then each shape's atomic variants beside the last best non-atomic ones
# and SDPA's backward by one rule in one process (bench/backward_peers.py).
#   usage: bash bench/device/backward_atomic.sh     SKIP_TESTS=1: the benchmark only; SKIP_BENCH=1: the tests only
#   GTEST_FILTER, ATTN_TUNE_BACKWARD_VARIANTS (a regex: the float64 check's variants), SHAPES,
#   CONFIGS, BUDGET_S; PYTHON_TESTS=1 also runs tests/python/test_autograd_gpu.py
#   The backward's softcap, dv != d and packed batches (2026-12-05, first GPU run), with a few
#   variants of each family so the call fits:
#     GTEST_FILTER='backward_gpu.*:backward_tune_gpu.the_gradient*:backward_tune_gpu.tuning_a_*' \
#     ATTN_TUNE_BACKWARD_VARIANTS='^(kv_m32_n64_w4_s2-q_m64_n64_w4_s2|kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1|wg_kv_m32_n64_w4_s2-q_m64_n64_w4_s2|wg_kv_m32_n64_w4_s2_x2-q_m64_n64_w4_s2|wg_kv_m64_n128_w8_s2-dq_atomic)$' \
#     PYTHON_TESTS=1 bash bench/device/backward_atomic.sh
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
if [ -z "${SKIP_TESTS:-}" ]; then
  ATTN_TUNE_REQUIRE_GPU=1 timeout 300 build-gpu/attn_gpu_tests \
    --gtest_filter="${GTEST_FILTER:-backward_gpu.every_wgmma*:backward_gpu.planted*:backward_tune_gpu*}" \
    > $OUT/gtest_atomic.log 2>&1
  echo "gtest rc=$? $(el)"; grep -E "^\[ *(OK|FAILED|PASSED) |Failure|Which|error" $OUT/gtest_atomic.log | head -30
  ATTN_TUNE_REQUIRE_GPU=1 timeout 120 build-gpu/attn_library_gpu_tests --gtest_filter='LibraryBackward*' \
    > $OUT/gtest_library_backward.log 2>&1
  echo "library rc=$? $(el)"; grep -E "^\[ *(OK|FAILED|PASSED) |Failure|Which" $OUT/gtest_library_backward.log | head -12
  if [ -n "${PYTHON_TESTS:-}" ]; then
    ATTN_TUNE_LIBRARY=$(ls $PWD/build-gpu/libattn_tune.so* | head -1) PYTHONPATH=$PWD/python ATTN_TUNE_REQUIRE_GPU=1 \
      timeout 120 python3 -m unittest -v tests/python/test_autograd_gpu.py > $OUT/python_autograd.log 2>&1
    echo "python rc=$? $(el)"; grep -E "FAIL|ERROR|^Ran|^OK" $OUT/python_autograd.log | head -12
  fi
fi
[ -n "${SKIP_BENCH:-}" ] && exit 0
shapes="${SHAPES:-4,32,4096,128;4,32,4096,128c;16,16,1024,64;16,16,1024,64c}"
configs="${CONFIGS:-wg_kv_m64_n64_w4_s2-dq_atomic,wg_kv_m64_n128_w8_s2-dq_atomic,wg_kv_m64_n64_w4_s2-q_m128_n128_w8_s2,wg_kv_m32_n64_w4_s2-q_m64_n64_w4_s2,wg_kv_m64_n64_w4_s2-q_m64_n64_w4_s2}"
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
timeout $left python3 bench/backward_peers.py --tool build-gpu/attn-backward-cubins --shapes "$shapes" \
  --configs "$configs" ${BENCH_ARGS:-} --out $OUT/bwd > $OUT/bwd.log 2>&1
echo "bench rc=$? $(el)"; grep -E "^  " $OUT/bwd.log | head -24; grep -v "^  \|^{" $OUT/bwd.log | tail -8
