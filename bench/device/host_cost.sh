#!/usr/bin/env bash
# One device call for the Python call's host cost (issue 19 item 4): build this tree, the
# library's GPU tests (CUDA graph capture among them), the Python GPU tests (torch.cuda.graph
# capture and replay among them), then bench/host_cost.py at 1,8,128,64; a short table at the end.
#   carry: .deps      usage: bash bench/device/host_cost.sh [SHAPE] [BAR_US]   (default 1,8,128,64 and 20)
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/build-gpu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so ATTN_TUNE_REQUIRE_GPU=1
# ctest, so that the bundle fixture the library's GPU tests read is made first
(cd build-gpu && timeout 300 ctest -R '^Library' -L gpu -j1 --output-on-failure > $OUT/library_gpu_tests.log 2>&1); lib_rc=$?
echo "library gpu tests rc=$lib_rc $(el)"
grep -E 'LibraryGraph|tests passed|\*\*\*Failed|Not Run' $OUT/library_gpu_tests.log | head -20
timeout 200 python3 -m unittest discover -s tests/python -p 'test_*gpu.py' -v > $OUT/python_gpu_tests.log 2>&1; py_rc=$?
echo "python gpu tests rc=$py_rc $(el)"
grep -E 'CudaGraph|FAIL|ERROR|^Ran|^OK' $OUT/python_gpu_tests.log | head -20
timeout 200 python3 bench/host_cost.py --shape "${1:-1,8,128,64}" --bar "${2:-20}" > $OUT/host_cost.txt 2>&1; bench_rc=$?
cat $OUT/host_cost.txt | tail -12
echo "bench rc=$bench_rc $(el)"
echo
echo "| step | rc | log |"
echo "|---|---|---|"
echo "| ctest -R ^Library -L gpu (LibraryGraph.*: capture/replay) | $lib_rc | library_gpu_tests.log |"
echo "| tests/python/test_*gpu.py (CudaGraph.*: torch.cuda.graph) | $py_rc | python_gpu_tests.log |"
echo "| bench/host_cost.py (1 = attn_tune.forward over the bar) | $bench_rc | host_cost.txt |"
grep '^result:' $OUT/host_cost.txt
