#!/usr/bin/env bash
# Issue 12's bar on a GPU machine, in one run: for each shape of sweeps/ci-smoke.csv and
# 4,32,4096,128, attn-tune tunes it (--no-db, a fresh --out under a temp dir), then
# attn_tune.forward from Python and the C++ example (examples/cpp) run the tuned config from that
# CSV; one table: shape, config, tool ms, python ms, C++ ms, ratios, accuracy, verdict.
#   bash scripts/device_build.sh build-gpu && bash scripts/library_bar.sh [build-gpu]
# Needs PyTorch with CUDA for the Python column. Exit code 1 when a shape misses the bar.
# TOOL_ARGS: more attn-tune options (default --min-time-ms 40, as the README's first bar run: the
# tool's winner is then measured over up to 300 repetitions, so its median is steadier).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
for f in attn-tune attn_tune_example libattn_tune.so; do
  [ -e "$build/$f" ] || { echo "no $build/$f: run 'bash scripts/device_build.sh $build' first" >&2; exit 2; }
done
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"  # as device_build.sh
export ATTN_TUNE_LIBRARY="$PWD/$build/libattn_tune.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
rc=0
python3 examples/python/library_bar.py --tool "$build/attn-tune" --example "$build/attn_tune_example" \
  --shapes sweeps/ci-smoke.csv --extra 4,32,4096,128 --tool-args "${TOOL_ARGS---min-time-ms 40}" || rc=$?
echo "library_bar: $(($(date +%s) - start)) s"
exit $rc
