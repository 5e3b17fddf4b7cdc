#!/usr/bin/env bash
# Device call 14 (session 2026-12-01 b): issue 10's sweep line. A cold `sweep sweeps/yardstick.csv`
# (empty cache and database) and Triton's cold autotune (peers.py --with-triton) of each of its six
# shapes, in one call: scripts/tuning_bar.sh --sweep-only.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
git log --oneline -1 > $OUT/commit.txt 2>/dev/null || true
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
timeout 530 bash scripts/tuning_bar.sh --sweep-only $OUT/sweep_bar 2>&1 | tee $OUT/sweep_bar.txt | grep -E 'done in|sweep|whole|failed'
echo "rc=${PIPESTATUS[0]} total $(el)"
rm -rf $OUT/sweep_bar/sweep/cache
